//! `metadata` validation on create and update, as `k8s.io/apimachinery/pkg/api/validation/objectmeta.go`
//! (`ValidateObjectMetaAccessor` and `ValidateObjectMetaAccessorUpdate`).
//!
//! The functions take an object's `metadata` as JSON (pass `&object["metadata"]`, which is `Null` when absent) and
//! return field errors with paths under `metadata`. A field of the wrong JSON type (which Kubernetes would refuse
//! while decoding) is reported as `FieldValueTypeInvalid`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::field_error::{go_json, go_quote, is_go_printable, FieldError};
use super::validation::{is_dns1123_label, is_qualified_name, is_valid_label_value, NameRule};

/// The largest total size of an object's annotations (keys plus values), in bytes.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_BYTES: usize = 256 * 1024;

/// The detail of an error for a field that may not change.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";

/// The longest `managedFields[].manager`.
const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// The longest `managedFields[].subresource`.
const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;

/// Validates an object's metadata on create. Name generation must already have happened: an empty `name` is
/// reported as `Required value: name or generateName is required`.
///
/// Checks, in Kubernetes' order: `generateName` and `name` against `name_rule`; `namespace` required and a DNS
/// label for namespaced resources, forbidden for cluster-scoped ones; `generation` not negative; label keys and
/// values; annotation keys and total size; owner references; finalizers; managed fields.
pub fn validate_object_meta(meta: &Value, namespaced: bool, name_rule: NameRule) -> Vec<FieldError> {
    let mut m = match MetaView::new(meta) {
        Ok(view) => view,
        Err(err) => return vec![err],
    };
    let mut errs = Vec::new();
    let generate_name = m.string("generateName");
    if !generate_name.is_empty() {
        for msg in name_rule.validate(generate_name, true) {
            errs.push(FieldError::invalid("metadata.generateName", generate_name, &msg));
        }
    }
    let name = m.string("name");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for msg in name_rule.validate(name, false) {
            errs.push(FieldError::invalid("metadata.name", name, &msg));
        }
    }
    let namespace = m.string("namespace");
    if namespaced {
        if namespace.is_empty() {
            errs.push(FieldError::required("metadata.namespace", ""));
        } else {
            for msg in is_dns1123_label(namespace) {
                errs.push(FieldError::invalid("metadata.namespace", namespace, &msg));
            }
        }
    } else if !namespace.is_empty() {
        errs.push(FieldError::forbidden("metadata.namespace", "not allowed on this type"));
    }
    errs.extend(validate_generation(m.int("generation")));
    errs.extend(m.common_checks());
    errs.extend(validate_finalizers(&m.strings("finalizers")));
    errs.extend(m.errors);
    errs
}

/// Validates an object's metadata on update against the stored object's.
///
/// Checks, in Kubernetes' order: no new finalizers once the old object is being deleted; `resourceVersion` set;
/// `generation` not negative and not decremented; `name`, `namespace`, `uid`, `creationTimestamp`,
/// `deletionTimestamp` and `deletionGracePeriodSeconds` unchanged (`Invalid value: ...: field is immutable`); label
/// keys and values; annotations; owner references; managed fields.
pub fn validate_object_meta_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut m = match MetaView::new(new) {
        Ok(view) => view,
        Err(err) => return vec![err],
    };
    // The stored object was valid when written; its type errors are not the client's to fix.
    let mut old = MetaView::new(old).unwrap_or_else(|_| MetaView::empty());
    let mut errs = Vec::new();

    if !old.raw("deletionTimestamp").is_null() {
        let old_finalizers: BTreeSet<&str> = old.strings("finalizers").into_iter().collect();
        let extra: BTreeSet<&str> = m
            .strings("finalizers")
            .into_iter()
            .filter(|f| !old_finalizers.contains(f))
            .collect();
        if !extra.is_empty() {
            let quoted: Vec<String> = extra.iter().map(|f| go_quote(f)).collect();
            errs.push(FieldError::forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    quoted.join(", ")
                ),
            ));
        }
    }
    if m.string("resourceVersion").is_empty() {
        errs.push(FieldError::invalid(
            "metadata.resourceVersion",
            "",
            "must be specified for an update",
        ));
    }
    let generation = m.int("generation");
    errs.extend(validate_generation(generation));
    if generation < old.int("generation") {
        errs.push(FieldError::invalid_json(
            "metadata.generation",
            &Value::from(generation),
            "must not be decremented",
        ));
    }
    for key in ["name", "namespace"] {
        let value = m.string(key);
        if value != old.string(key) {
            errs.push(FieldError::invalid(
                format!("metadata.{key}"),
                value,
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    // Kubernetes renders these (a UID, times, a pointer) as JSON, so an absent value shows as null.
    for key in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        let value = m.raw(key);
        if value != old.raw(key) {
            errs.push(FieldError::invalid_json(
                format!("metadata.{key}"),
                value,
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    errs.extend(m.common_checks());
    errs.extend(m.errors);
    errs
}

/// Validates a label map: keys are qualified names, values label values. Errors name `field` itself, as
/// Kubernetes' `ValidateLabels` does.
pub fn validate_labels(labels: &Map<String, Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, value) in labels {
        errs.extend(
            is_qualified_name(key)
                .iter()
                .map(|msg| FieldError::invalid(field, key, msg)),
        );
        match value.as_str() {
            Some(value) => errs.extend(
                is_valid_label_value(value)
                    .iter()
                    .map(|msg| FieldError::invalid(field, value, msg)),
            ),
            None => errs.push(type_error(&format!("{field}[{key}]"), value, "string")),
        }
    }
    errs
}

/// Validates an annotation map: keys are qualified names (compared in lower case), and keys plus values add up to
/// at most [`TOTAL_ANNOTATION_SIZE_LIMIT_BYTES`].
pub fn validate_annotations(annotations: &Map<String, Value>, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0usize;
    for (key, value) in annotations {
        errs.extend(
            is_qualified_name(&go_to_lower(key))
                .iter()
                .map(|msg| FieldError::invalid(field, key, msg)),
        );
        match value.as_str() {
            Some(value) => total += key.len() + value.len(),
            None => errs.push(type_error(&format!("{field}[{key}]"), value, "string")),
        }
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_BYTES {
        errs.push(FieldError::too_long(field, TOTAL_ANNOTATION_SIZE_LIMIT_BYTES));
    }
    errs
}

/// Go's `strings.ToLower`: each character mapped on its own (no final-sigma rule; `İ` becomes `i`).
fn go_to_lower(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c == '\u{130}' {
                'i'
            } else {
                c.to_lowercase().next().unwrap_or(c)
            }
        })
        .collect()
}

fn validate_generation(generation: i64) -> Option<FieldError> {
    (generation < 0).then(|| {
        FieldError::invalid_json(
            "metadata.generation",
            &Value::from(generation),
            "must be greater than or equal to 0",
        )
    })
}

fn validate_finalizers(finalizers: &[&str]) -> Vec<FieldError> {
    let field = "metadata.finalizers";
    let mut errs: Vec<FieldError> = finalizers
        .iter()
        .flat_map(|f| {
            is_qualified_name(f)
                .into_iter()
                .map(move |msg| FieldError::invalid(field, f, &msg))
        })
        .collect();
    if finalizers.contains(&"orphan") && finalizers.contains(&"foregroundDeletion") {
        errs.push(FieldError::invalid_json(
            field,
            &Value::from(finalizers.to_vec()),
            "finalizer orphan and foregroundDeletion cannot be both set",
        ));
    }
    errs
}

fn type_error(field: &str, value: &Value, expected: &str) -> FieldError {
    FieldError::type_invalid(field, value, &format!("must be of type {expected}"))
}

/// Typed access to a metadata object; wrong types are collected as errors and read as empty.
struct MetaView<'a> {
    fields: Option<&'a Map<String, Value>>,
    errors: Vec<FieldError>,
}

const NULL: Value = Value::Null;

impl<'a> MetaView<'a> {
    fn new(meta: &'a Value) -> Result<Self, FieldError> {
        match meta {
            Value::Null => Ok(Self::empty()),
            Value::Object(fields) => Ok(MetaView {
                fields: Some(fields),
                errors: Vec::new(),
            }),
            other => Err(type_error("metadata", other, "object")),
        }
    }

    fn empty() -> Self {
        MetaView {
            fields: None,
            errors: Vec::new(),
        }
    }

    /// The value of a field, `Null` when absent.
    fn raw(&self, key: &str) -> &'a Value {
        self.fields.and_then(|f| f.get(key)).unwrap_or(&NULL)
    }

    fn typed<T>(&mut self, key: &str, expected: &str, get: impl Fn(&'a Value) -> Option<T>) -> Option<T> {
        let value = self.raw(key);
        if value.is_null() {
            return None;
        }
        let typed = get(value);
        if typed.is_none() {
            self.errors
                .push(type_error(&format!("metadata.{key}"), value, expected));
        }
        typed
    }

    fn string(&mut self, key: &str) -> &'a str {
        self.typed(key, "string", Value::as_str).unwrap_or("")
    }

    fn int(&mut self, key: &str) -> i64 {
        self.typed(key, "integer", Value::as_i64).unwrap_or(0)
    }

    fn object(&mut self, key: &str) -> Option<&'a Map<String, Value>> {
        self.typed(key, "object", Value::as_object)
    }

    fn array(&mut self, key: &str) -> &'a [Value] {
        self.typed(key, "array", |v| v.as_array().map(Vec::as_slice))
            .unwrap_or(&[])
    }

    /// A list of strings; items of another type are reported and skipped.
    fn strings(&mut self, key: &str) -> Vec<&'a str> {
        let mut out = Vec::new();
        for (i, item) in self.array(key).iter().enumerate() {
            match item.as_str() {
                Some(s) => out.push(s),
                None => self
                    .errors
                    .push(type_error(&format!("metadata.{key}[{i}]"), item, "string")),
            }
        }
        out
    }

    /// The checks create and update share: labels, annotations, owner references, managed fields.
    fn common_checks(&mut self) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(labels) = self.object("labels") {
            errs.extend(validate_labels(labels, "metadata.labels"));
        }
        if let Some(annotations) = self.object("annotations") {
            errs.extend(validate_annotations(annotations, "metadata.annotations"));
        }
        errs.extend(validate_owner_references(self.array("ownerReferences")));
        errs.extend(validate_managed_fields(self.array("managedFields")));
        errs
    }
}

/// The string field of an item of a metadata list; other types read as empty, with an error.
fn item_string<'a>(item: &'a Map<String, Value>, key: &str, path: &str, errs: &mut Vec<FieldError>) -> &'a str {
    match item.get(key) {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s,
        Some(other) => {
            errs.push(type_error(&format!("{path}.{key}"), other, "string"));
            ""
        }
    }
}

/// An owner reference as Go's `json.Marshal` writes the struct: fields in declaration order, unset flags omitted.
fn owner_reference_json(item: &Map<String, Value>) -> String {
    let text = |key: &str| go_json(&Value::from(item.get(key).and_then(Value::as_str).unwrap_or("")));
    let mut out = format!(
        "{{\"apiVersion\":{},\"kind\":{},\"name\":{},\"uid\":{}",
        text("apiVersion"),
        text("kind"),
        text("name"),
        text("uid")
    );
    for key in ["controller", "blockOwnerDeletion"] {
        if let Some(flag) = item.get(key).and_then(Value::as_bool) {
            out.push_str(",\"");
            out.push_str(key);
            out.push_str("\":");
            out.push_str(if flag { "true" } else { "false" });
        }
    }
    out.push('}');
    out
}

fn validate_owner_references(references: &[Value]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut first_controller: Option<String> = None;
    for (i, reference) in references.iter().enumerate() {
        let path = format!("metadata.ownerReferences[{i}]");
        let Some(item) = reference.as_object() else {
            errs.push(type_error(&path, reference, "object"));
            continue;
        };
        let api_version = item_string(item, "apiVersion", &path, &mut errs);
        let kind = item_string(item, "kind", &path, &mut errs);
        let name = item_string(item, "name", &path, &mut errs);
        let uid = item_string(item, "uid", &path, &mut errs);
        // Kubernetes' ParseGroupVersion: "v1", "group/v1"; more than one slash is an error.
        let (group, version) = match api_version.split_once('/') {
            None => ("", api_version),
            Some((_, rest)) if rest.contains('/') => ("", ""),
            Some((group, version)) => (group, version),
        };
        if api_version.is_empty() {
            errs.push(FieldError::required(format!("{path}.apiVersion"), "must not be empty"));
        } else if version.is_empty() {
            let detail = "must be <group>/<version> or <version>";
            errs.push(FieldError::invalid(format!("{path}.apiVersion"), api_version, detail));
        }
        for (key, value) in [("kind", kind), ("name", name), ("uid", uid)] {
            if value.is_empty() {
                errs.push(FieldError::required(format!("{path}.{key}"), "must not be empty"));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            let detail = "/v1, Kind=Event is disallowed from being an owner";
            errs.push(FieldError::invalid_rendered(
                path.clone(),
                owner_reference_json(item),
                detail,
            ));
        }
        if item.get("controller").and_then(Value::as_bool) == Some(true) {
            let current = format!("{kind}/{name}");
            match &first_controller {
                Some(first) => {
                    let all: Vec<String> = references
                        .iter()
                        .filter_map(Value::as_object)
                        .map(owner_reference_json)
                        .collect();
                    let detail = format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} \
                         and {current}"
                    );
                    let rendered = format!("[{}]", all.join(","));
                    errs.push(FieldError::invalid_rendered(
                        "metadata.ownerReferences",
                        rendered,
                        &detail,
                    ));
                }
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

fn validate_managed_fields(entries: &[Value]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let path = format!("metadata.managedFields[{i}]");
        let Some(item) = entry.as_object() else {
            errs.push(type_error(&path, entry, "object"));
            continue;
        };
        let operation = item_string(item, "operation", &path, &mut errs);
        match operation {
            "" => errs.push(FieldError::required(format!("{path}.operation"), "must not be empty")),
            "Apply" | "Update" => {}
            other => errs.push(FieldError::not_supported(
                format!("{path}.operation"),
                other,
                &["Apply", "Update"],
            )),
        }
        let fields_type = item_string(item, "fieldsType", &path, &mut errs);
        if !fields_type.is_empty() && fields_type != "FieldsV1" {
            errs.push(FieldError::invalid(
                format!("{path}.fieldsType"),
                fields_type,
                "must be `FieldsV1`",
            ));
        }
        let manager = item_string(item, "manager", &path, &mut errs);
        if manager.len() > FIELD_MANAGER_MAX_LENGTH {
            errs.push(FieldError::too_long(
                format!("{path}.manager"),
                FIELD_MANAGER_MAX_LENGTH,
            ));
        }
        for (position, c) in manager.char_indices().filter(|(_, c)| !is_go_printable(*c)) {
            let detail = format!("invalid character U+{:04X} (at position {position})", u32::from(c));
            errs.push(FieldError::invalid(format!("{path}.manager"), manager, &detail));
        }
        if item_string(item, "subresource", &path, &mut errs).len() > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(FieldError::too_long(
                format!("{path}.subresource"),
                MAX_SUBRESOURCE_NAME_LENGTH,
            ));
        }
    }
    errs
}

#[cfg(test)]
mod tests;
