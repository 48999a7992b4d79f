//! JSON values as the CEL values a rule sees, typed by their schema as kube's `UnstructuredToVal` types them
//! (`k8s.io/apiserver/pkg/cel/common/valuesunstructured.go`):
//!
//! * an object with `properties` (or an embedded resource) is an object whose fields are its declared properties,
//!   named as kube escapes them (`foo-bar` is `foo__dash__bar`, `namespace` is `__namespace__`); an embedded
//!   resource, and the resource root, also have `apiVersion`, `kind` and `metadata` with `name` and `generateName`;
//! * an object with `additionalProperties` is a map from its keys;
//! * an array is a list;
//! * `integer` is `int`, `number` is `double`, `boolean` is `bool`;
//! * `string` is `string`, or with `format` `duration`, `date`/`date-time` and `byte` a `duration`, a `timestamp`
//!   and `bytes`;
//! * `x-kubernetes-int-or-string` is an `int` or a `string`.
//!
//! A value that does not match its schema, or one whose schema gives no type (`x-kubernetes-preserve-unknown-fields`
//! without properties), is converted by its JSON type; kube would refuse such a value before running rules, or not
//! let a rule reach it.

use std::collections::HashMap;
use std::sync::Arc;

use ::cel::objects::{Key, Map};
use ::cel::Value;
use base64::Engine as _;
use serde_json::Value as Json;

/// CEL's reserved words, which kube escapes as `__word__` in field names.
const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The CEL value of `value` under `schema`; `resource_root` adds `apiVersion`, `kind` and `metadata` as for the
/// root of a custom resource.
pub(super) fn to_cel(value: &Json, schema: &Json, resource_root: bool) -> Value {
    if value.is_null() {
        return Value::Null;
    }
    if flag(schema, "x-kubernetes-int-or-string") {
        return untyped(value);
    }
    match schema.get("type").and_then(Json::as_str) {
        Some("object") => object(value, schema, resource_root),
        Some("array") => match (value.as_array(), schema.get("items")) {
            (Some(items), Some(item_schema)) => Value::List(Arc::new(
                items
                    .iter()
                    .map(|v| to_cel(v, item_schema, is_embedded(item_schema)))
                    .collect(),
            )),
            _ => untyped(value),
        },
        Some("string") => value.as_str().map_or_else(|| untyped(value), |s| string(s, schema)),
        Some("number") => value.as_f64().map_or_else(|| untyped(value), Value::Float),
        Some("integer") => value.as_i64().map_or_else(|| untyped(value), Value::Int),
        Some("boolean") => value.as_bool().map_or_else(|| untyped(value), Value::Bool),
        _ => untyped(value),
    }
}

/// Whether the schema is an `x-kubernetes-embedded-resource`.
pub(super) fn is_embedded(schema: &Json) -> bool {
    flag(schema, "x-kubernetes-embedded-resource")
}

fn flag(schema: &Json, name: &str) -> bool {
    schema.get(name).and_then(Json::as_bool) == Some(true)
}

fn object(value: &Json, schema: &Json, resource_root: bool) -> Value {
    let Some(fields) = value.as_object() else {
        return untyped(value);
    };
    let embedded = resource_root || is_embedded(schema);
    let properties = schema.get("properties").and_then(Json::as_object);
    if embedded || properties.is_some() {
        let mut out: HashMap<Key, Value> = HashMap::new();
        for (name, field) in fields {
            let Some(field_schema) = properties.and_then(|p| p.get(name)) else {
                continue;
            };
            if let Some(escaped) = escape(name) {
                out.insert(
                    Key::from(escaped),
                    to_cel(field, field_schema, is_embedded(field_schema)),
                );
            }
        }
        if embedded {
            for name in ["apiVersion", "kind"] {
                if let Some(s) = fields.get(name).and_then(Json::as_str) {
                    out.insert(Key::from(name.to_owned()), Value::String(Arc::new(s.to_owned())));
                }
            }
            if let Some(meta) = fields.get("metadata").and_then(Json::as_object) {
                let mut m: HashMap<Key, Value> = HashMap::new();
                for name in ["name", "generateName"] {
                    if let Some(s) = meta.get(name).and_then(Json::as_str) {
                        m.insert(Key::from(name.to_owned()), Value::String(Arc::new(s.to_owned())));
                    }
                }
                out.insert(Key::from("metadata".to_owned()), Value::Map(Map { map: Arc::new(m) }));
            }
        }
        return Value::Map(Map { map: Arc::new(out) });
    }
    match schema.get("additionalProperties").filter(|s| s.is_object()) {
        Some(values) => {
            let out: HashMap<Key, Value> = fields
                .iter()
                .map(|(k, v)| (Key::from(k.clone()), to_cel(v, values, is_embedded(values))))
                .collect();
            Value::Map(Map { map: Arc::new(out) })
        }
        None => untyped(value),
    }
}

fn string(s: &str, schema: &Json) -> Value {
    let text = || Value::String(Arc::new(s.to_owned()));
    match schema.get("format").and_then(Json::as_str) {
        Some("duration") => apimachinery::duration::parse_duration(s)
            .ok()
            .and_then(|d| chrono::Duration::from_std(d).ok())
            .map_or_else(text, Value::Duration),
        Some("date-time") => chrono::DateTime::parse_from_rfc3339(s).map_or_else(|_| text(), Value::Timestamp),
        Some("date") => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| Value::Timestamp(t.and_utc().fixed_offset()))
            .unwrap_or_else(text),
        Some("byte") => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_or_else(|_| text(), |b| Value::Bytes(Arc::new(b))),
        _ => text(),
    }
}

/// A value by its JSON type: integers as `int` (`uint` past `int`'s range), other numbers as `double`.
pub(super) fn untyped(value: &Json) -> Value {
    match value {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => Value::Int(i),
            (None, Some(u)) => Value::UInt(u),
            _ => Value::Float(n.as_f64().unwrap_or_default()),
        },
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(items) => Value::List(Arc::new(items.iter().map(untyped).collect())),
        Json::Object(fields) => {
            let out: HashMap<Key, Value> = fields.iter().map(|(k, v)| (Key::from(k.clone()), untyped(v))).collect();
            Value::Map(Map { map: Arc::new(out) })
        }
    }
}

/// kube's `cel.Escape`: the name a property has in CEL, or `None` if it has none (it starts with a digit or holds a
/// character other than letters, digits, `_`, `-`, `.` and `/`).
pub(super) fn escape(name: &str) -> Option<String> {
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'))
    {
        return None;
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(c) = rest.chars().next() {
        if rest.starts_with("__") {
            out.push_str("__underscores__");
            rest = &rest[2..];
            continue;
        }
        match c {
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c => out.push(c),
        }
        rest = &rest[c.len_utf8()..];
    }
    Some(out)
}

/// A function argument that must be a string.
pub(super) fn string_arg<'a>(v: &'a ::cel::common::value::CowVal<'_, '_>) -> Result<&'a str, ::cel::ExecutionError> {
    use ::cel::common::types::CelString;
    v.downcast_ref::<CelString>()
        .map(CelString::inner)
        .ok_or_else(|| ::cel::ExecutionError::UnexpectedType {
            got: v.get_type().name().to_owned(),
            want: "string".to_owned(),
        })
}
