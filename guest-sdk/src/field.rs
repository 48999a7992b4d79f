//! Field errors, mirroring `k8s.io/apimachinery/pkg/util/validation/field`.
//!
//! Build a [`FieldPath`] and turn it into a [`FieldError`] with the constructor of the matching kind:
//!
//! ```
//! use wasm_apiserver_guest::field::{self, FieldPath};
//!
//! let spec = FieldPath::new("spec");
//! let errors = vec![
//!     field::required(&spec.child("text"), ""),
//!     field::not_supported(&spec.child("mode"), "Fast", &["Slow", "Steady"]),
//! ];
//! assert_eq!(errors[1].field, "spec.mode");
//! assert_eq!(errors[1].detail, r#""Fast": supported values: "Slow", "Steady""#);
//! ```
//!
//! The host renders a field error as Kubernetes does: `<field>: <kind>: <detail>` (for example
//! `spec.mode: Unsupported value: "Fast": supported values: "Slow", "Steady"`), and WIT field errors carry no value of
//! their own. So, as Go's `ErrorBody` does, the constructors that take a value put it, quoted, at the front of the
//! detail.

use std::fmt;

use serde::Serialize;
use serde_json::Value;

pub use crate::types::{FieldError, FieldErrorKind};

/// A list of field errors, like Go's `field.ErrorList`.
pub type ErrorList = Vec<FieldError>;

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// A named field: `.name`.
    Child(String),
    /// A position in a list: `[3]`.
    Index(usize),
    /// A key of a map: `[key]`.
    Key(String),
}

/// The path of a field, like Go's `*field.Path`: `spec.containers[0].env[HOME]`.
///
/// Paths are values: [`FieldPath::child`], [`FieldPath::index`] and [`FieldPath::key`] return a longer path and leave
/// the receiver as it is, so one parent path serves many children.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath {
    segments: Vec<Segment>,
}

impl FieldPath {
    /// A path starting at the named top-level field, like `field.NewPath("spec")`.
    pub fn new(name: impl Into<String>) -> Self {
        Self::default().child(name)
    }

    /// The path of a named field inside this one: `spec` → `spec.name`.
    pub fn child(&self, name: impl Into<String>) -> Self {
        self.with(Segment::Child(name.into()))
    }

    /// The path of an item of the list at this path: `spec.items` → `spec.items[0]`.
    pub fn index(&self, index: usize) -> Self {
        self.with(Segment::Index(index))
    }

    /// The path of a value of the map at this path: `metadata.labels` → `metadata.labels[app]`.
    pub fn key(&self, key: impl Into<String>) -> Self {
        self.with(Segment::Key(key.into()))
    }

    fn with(&self, segment: Segment) -> Self {
        let mut segments = self.segments.clone();
        segments.push(segment);
        Self { segments }
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Child(name) if i == 0 => f.write_str(name)?,
                Segment::Child(name) => write!(f, ".{name}")?,
                Segment::Index(index) => write!(f, "[{index}]")?,
                Segment::Key(key) => write!(f, "[{key}]")?,
            }
        }
        Ok(())
    }
}

/// A field error of any kind with a ready detail.
pub fn error(kind: FieldErrorKind, path: &FieldPath, detail: impl Into<String>) -> FieldError {
    FieldError {
        kind,
        field: path.to_string(),
        detail: detail.into(),
    }
}

/// A required field is empty (`FieldValueRequired`), like `field.Required`.
pub fn required(path: &FieldPath, detail: impl Into<String>) -> FieldError {
    error(FieldErrorKind::Required, path, detail)
}

/// A value is malformed or out of range (`FieldValueInvalid`), like `field.Invalid`.
pub fn invalid(path: &FieldPath, value: impl Serialize, detail: &str) -> FieldError {
    error(FieldErrorKind::Invalid, path, with_value(&value, detail))
}

/// A value is not one of the supported values (`FieldValueNotSupported`), like `field.NotSupported`.
pub fn not_supported<S: AsRef<str>>(path: &FieldPath, value: impl Serialize, valid: &[S]) -> FieldError {
    let detail = if valid.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = valid.iter().map(|v| quote(v.as_ref())).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    error(FieldErrorKind::NotSupported, path, with_value(&value, &detail))
}

/// A value repeats one that must be unique (`FieldValueDuplicate`), like `field.Duplicate`.
pub fn duplicate(path: &FieldPath, value: impl Serialize) -> FieldError {
    error(FieldErrorKind::Duplicate, path, with_value(&value, ""))
}

/// A field may not be set or changed (`FieldValueForbidden`), like `field.Forbidden`.
pub fn forbidden(path: &FieldPath, detail: impl Into<String>) -> FieldError {
    error(FieldErrorKind::Forbidden, path, detail)
}

/// A value is longer than `max_length` bytes (`FieldValueTooLong`), like `field.TooLong`.
pub fn too_long(path: &FieldPath, max_length: usize) -> FieldError {
    let unit = if max_length == 1 { "byte" } else { "bytes" };
    error(
        FieldErrorKind::TooLong,
        path,
        format!("may not be more than {max_length} {unit}"),
    )
}

/// A list has `actual` items, more than `max` (`FieldValueTooMany`), like `field.TooMany`.
pub fn too_many(path: &FieldPath, actual: usize, max: usize) -> FieldError {
    let unit = if max == 1 { "item" } else { "items" };
    error(
        FieldErrorKind::TooMany,
        path,
        format!("{actual}: must have at most {max} {unit}"),
    )
}

/// Something went wrong inside the validator (`InternalError`), like `field.InternalError`.
pub fn internal(path: &FieldPath, detail: impl Into<String>) -> FieldError {
    error(FieldErrorKind::Internal, path, detail)
}

/// `<value>: <detail>`, or just `<value>` without a detail; strings are quoted, other values are JSON.
fn with_value(value: &impl Serialize, detail: &str) -> String {
    let value = match serde_json::to_value(value) {
        Ok(Value::String(s)) => quote(&s),
        Ok(other) => other.to_string(),
        Err(_) => "<unprintable value>".to_owned(),
    };
    if detail.is_empty() {
        value
    } else {
        format!("{value}: {detail}")
    }
}

/// A string in double quotes with JSON escapes, close to Go's `%q`.
fn quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_like_kubernetes() {
        let spec = FieldPath::new("spec");
        assert_eq!(spec.to_string(), "spec");
        assert_eq!(
            spec.child("containers").index(0).child("name").to_string(),
            "spec.containers[0].name"
        );
        assert_eq!(
            FieldPath::new("metadata").child("labels").key("app").to_string(),
            "metadata.labels[app]"
        );
        assert_eq!(
            spec.child("a").index(0).key("b").index(2).to_string(),
            "spec.a[0][b][2]"
        );
        assert_eq!(FieldPath::default().to_string(), "");
    }

    #[test]
    fn constructors_set_kind_field_and_detail() {
        let path = FieldPath::new("spec").child("x");
        let e = required(&path, "");
        assert_eq!(
            (e.kind, e.field.as_str(), e.detail.as_str()),
            (FieldErrorKind::Required, "spec.x", "")
        );

        let e = invalid(&path, "a\"b", "must be short");
        assert_eq!(e.kind, FieldErrorKind::Invalid);
        assert_eq!(e.detail, r#""a\"b": must be short"#);
        assert_eq!(invalid(&path, 5, "too big").detail, "5: too big");
        assert_eq!(invalid(&path, "", "").detail, r#""""#);

        let e = not_supported(&path, "Foo", &["Flunder", "Fischer"]);
        assert_eq!(e.kind, FieldErrorKind::NotSupported);
        assert_eq!(e.detail, r#""Foo": supported values: "Flunder", "Fischer""#);
        assert_eq!(not_supported::<&str>(&path, "Foo", &[]).detail, r#""Foo""#);

        let e = forbidden(&path, "may not be set");
        assert_eq!(
            (e.kind, e.detail.as_str()),
            (FieldErrorKind::Forbidden, "may not be set")
        );
        assert_eq!(duplicate(&path, "x").detail, r#""x""#);
        assert_eq!(too_long(&path, 100).detail, "may not be more than 100 bytes");
        assert_eq!(too_long(&path, 1).detail, "may not be more than 1 byte");
        assert_eq!(too_many(&path, 5, 3).detail, "5: must have at most 3 items");
        assert_eq!(internal(&path, "boom").kind, FieldErrorKind::Internal);
    }
}
