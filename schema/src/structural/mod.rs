//! A plugin's OpenAPI v3 schema enforced as kube-apiserver enforces a CRD's structural schema: validation with the
//! same field paths, error types and messages, and structural defaulting.
//!
//! The schema is a resource version's root schema (`type: object` with `spec`, `status`, ...); the host's own fields
//! at the root (`apiVersion`, `kind`, `metadata`) are left out of everything here.
//!
//! Where kube does what, for a custom resource (apiextensions-apiserver 1.37):
//! - on decode (a request body, and every read from storage): unknown fields are pruned ([`crate::prune`]),
//!   then [`prune_nulls`], then [`default`];
//! - on create and update: [`validate`], whose causes go into one 422 `Invalid` Status.
//!
//! [`validate`] is kube's `ValidateCustomResource` (kube-openapi's schema validator, ported in [`openapi`]), followed
//! by the embedded-resource checks and the `x-kubernetes-list-type` uniqueness checks ([`listtype`]), in kube's
//! order. Formats follow kube's supported list ([`formats`]); patterns use Go's RE2 syntax ([`pattern`]).
//!
//! [`validate`] expects an object already pruned, null-pruned and defaulted, as kube validates the decoded object.
//! Some of kube's causes look odd but are kube's: a failed `allOf`/`anyOf`/`oneOf`/`not`, and a value or limit outside
//! the range of the schema's numeric type and format, are reported on the field `<nil>` with `Invalid value: ""`; a
//! limit is truncated to an integer when the value is one (`maximum: 2.5` reads as 2 for `3`); `maxLength` counts
//! characters but says `bytes`.
//!
//! Deliberate differences from kube:
//! - kube-openapi walks properties in Go's random map order; causes here follow the schema's property order.
//! - At the root, `minProperties`/`maxProperties` count only the plugin's fields.
//! - For an invalid `pattern`, the reason after `error parsing regexp:` is the `regex` crate's, not Go's.
//! - Not covered: `patternProperties`, `dependencies`, `additionalItems` and `$ref` (none is allowed in a CRD's
//!   structural schema).
//! - Ratcheting ([`validate_update`]) correlates old values by property name and map key only, not through the
//!   items of `x-kubernetes-list-type: map` lists as kube does; CEL rules are not ratcheted.
//!
//! tests/tests/schema_verdicts.rs compares all of this with a live kube-apiserver.

mod defaulting;
mod formats;
mod listtype;
mod openapi;
mod pattern;
#[cfg(test)]
mod tests;

use serde_json::Value;

use apimachinery::field_error::go_quote;
use apimachinery::gofmt;
use apimachinery::{FieldError, FieldErrorReason};
use openapi::{Code, OpenApiError};

/// Validates an object's fields (all but `apiVersion`, `kind` and `metadata`) against its version's schema, as
/// kube-apiserver validates a custom resource: one error a field, in kube's wording.
pub fn validate(schema: &Value, obj: &Value) -> Vec<FieldError> {
    validate_update(schema, obj, None)
}

/// [`validate`], on an update (`old` the stored object) with kube's ratcheting: an error of a value the update
/// does not change is not reported, and the list-type checks run only if the stored object passes them.
pub fn validate_update(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> = openapi::validate_ratcheting(schema, obj, old, "", true)
        .errors
        .into_iter()
        .map(field_error)
        .collect();
    if let Value::Object(map) = obj {
        errs.extend(listtype::validate_embedded(schema, map));
        let old_lists_pass = match old {
            Some(Value::Object(old)) => listtype::validate_lists(schema, old).is_empty(),
            _ => true,
        };
        if old_lists_pass {
            errs.extend(listtype::validate_lists(schema, map));
        }
    }
    errs
}

/// Applies the schema's `default`s as kube's structural defaulting does: a property missing from an object that
/// exists (or null where the schema does not allow null) gets its default, recursively, in list items and in
/// `additionalProperties` values too. Objects that do not exist are not created (unless a default creates them).
pub fn default(schema: &Value, obj: &mut Value) {
    defaulting::default_value(obj, schema, true);
}

/// Removes the object fields that are null where the schema neither allows null nor has a default, as kube does on
/// decode before defaulting (a null in a list stays, and fails validation).
pub fn prune_nulls(schema: &Value, obj: &mut Value) {
    defaulting::prune_nulls(obj, Some(schema), true);
}

/// Writes numbers as Go's JSON encoder writes kube's decoded float64s: a float with an integral value (within
/// the range of an integer) becomes that integer, so `2.0` is stored and answered as `2` and `-0.0` as `0`. Done
/// after validation, as kube validates the decoded values (where `2.0` is still a float: `[1, 1.0]` is a set
/// without duplicates) and encodes them when it stores them.
pub fn canonical_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            if let Some(f) = n.as_f64().filter(|f| f.fract() == 0.0) {
                // 2^63 and 2^64: the first floats past i64 and u64.
                if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
                    *value = Value::from(f as i64);
                } else if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                    *value = Value::from(f as u64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(canonical_numbers),
        Value::Object(map) => map.values_mut().for_each(canonical_numbers),
        _ => {}
    }
}

/// An error whose body shows a bad value as `field.Error.ErrorBody` renders it: `<description>: <value>[: detail]`.
fn with_value(reason: FieldErrorReason, field: String, value: &Value, detail: &str) -> FieldError {
    let mut message = format!("{}: {}", reason.description(), gofmt::bad_value(value));
    if !detail.is_empty() {
        message.push_str(": ");
        message.push_str(detail);
    }
    FieldError { reason, field, message }
}

/// A kube-openapi error as kube reports it (`kubeOpenAPIResultToFieldErrors`, with no parent path).
fn field_error(e: OpenApiError) -> FieldError {
    let field = match e.code {
        Code::Composite => "<nil>".to_string(),
        _ if e.name.is_empty() || e.name == "." => "<nil>".to_string(),
        _ => e.name.strip_prefix('.').unwrap_or(&e.name).to_string(),
    };
    // Go's nil value is shown as "" by every case but NotSupported.
    let shown = || match &e.value {
        Some(v) if !v.is_null() => v.clone(),
        _ => Value::String(String::new()),
    };
    match e.code {
        Code::Required => FieldError::required(field, ""),
        Code::Enum(allowed) => {
            let quoted: Vec<String> = allowed
                .iter()
                .map(|a| match a {
                    Value::String(s) => go_quote(s),
                    other => go_quote(&gofmt::json(other)),
                })
                .collect();
            let value = e.value.unwrap_or(Value::Null);
            with_value(
                FieldErrorReason::NotSupported,
                field,
                &value,
                &format!("supported values: {}", quoted.join(", ")),
            )
        }
        Code::TooLong(max) => match usize::try_from(max) {
            Ok(max) => FieldError::too_long(field, max),
            Err(_) => FieldError::with_detail(FieldErrorReason::TooLong, field, "value is too long"),
        },
        Code::TooMany { actual, max } => match usize::try_from(max) {
            Ok(max) => FieldError::too_many(field, usize::try_from(actual).ok(), max),
            Err(_) => with_value(
                FieldErrorReason::TooMany,
                field,
                &Value::from(actual),
                "has too many items",
            ),
        },
        Code::InvalidType => with_value(FieldErrorReason::TypeInvalid, field, &shown(), &e.message),
        Code::Invalid | Code::Composite => with_value(FieldErrorReason::Invalid, field, &shown(), &e.message),
    }
}
