//! The checks kube runs beside the schema validator, on the structural schema: uniqueness in lists of
//! `x-kubernetes-list-type: set` and `map` (apiextensions-apiserver `pkg/apiserver/schema/listtype`), and the type
//! fields of embedded resources (`pkg/apiserver/schema/objectmeta/validation.go`).
//!
//! Their paths are `field.Path`s: `.name` for a property, `[key]` for a key under `additionalProperties`, `[i]` for
//! a list item (kube-openapi's own errors write map keys as `.key`).

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::openapi::HOST_FIELDS;
use super::with_value;
use apimachinery::gofmt::{self, Num};
use apimachinery::objectmeta::validate_object_meta;
use apimachinery::validation::{is_dns1035_label, NameRule};
use apimachinery::{FieldError, FieldErrorReason};

fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn key(path: &str, key: &str) -> String {
    format!("{path}[{key}]")
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

fn object_schema<'a>(s: &'a Value, name: &str) -> Option<&'a Value> {
    s.get(name).filter(|v| v.is_object())
}

/// The object's fields to walk: all of them, less the host's at the root.
fn fields(map: &Map<String, Value>, root: bool) -> impl Iterator<Item = (&String, &Value)> {
    map.iter()
        .filter(move |(k, _)| !(root && HOST_FIELDS.contains(&k.as_str())))
}

/// `ValidateListSetsAndMaps`: duplicates in `set` and `map` lists anywhere in the object.
pub(super) fn validate_lists(s: &Value, obj: &Map<String, Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    lists_in_map("", s, obj, true, &mut errs);
    errs
}

fn lists_in_map(path: &str, s: &Value, obj: &Map<String, Value>, root: bool, errs: &mut Vec<FieldError>) {
    if let Some(additional) = object_schema(s, "additionalProperties") {
        for (k, v) in fields(obj, root) {
            lists_in_value(&key(path, k), additional, v, errs);
        }
    }
    if let Some(properties) = s.get("properties").and_then(Value::as_object) {
        for (k, v) in fields(obj, root) {
            if let Some(sub) = properties.get(k) {
                lists_in_value(&child(path, k), sub, v, errs);
            }
        }
    }
}

fn lists_in_value(path: &str, s: &Value, value: &Value, errs: &mut Vec<FieldError>) {
    match value {
        Value::Array(items) => lists_in_array(path, s, items, errs),
        Value::Object(map) => lists_in_map(path, s, map, false, errs),
        _ => {}
    }
}

fn lists_in_array(path: &str, s: &Value, items: &[Value], errs: &mut Vec<FieldError>) {
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for i in repeated(items.iter().map(SetKey::of)) {
                errs.push(with_value(FieldErrorReason::Duplicate, index(path, i), &items[i], ""));
            }
        }
        Some("map") => errs.extend(validate_list_map(path, s, items)),
        _ => {}
    }
    if let Some(item_schema) = object_schema(s, "items") {
        for (i, item) in items.iter().enumerate() {
            lists_in_value(&index(path, i), item_schema, item, errs);
        }
    }
}

/// A list element as Go compares it in `validateListSet`: scalars by value and type (`1` and `1.0` differ),
/// objects and lists by their JSON text (where `1` and `1.0` are both `1`).
#[derive(PartialEq, Eq, Hash)]
enum SetKey {
    /// A map-list item without its key.
    Unspecified,
    Null,
    Bool(bool),
    Int(i64),
    /// A float by its bits (with -0 as 0).
    Float(u64),
    String(String),
    Compound(String),
}

impl SetKey {
    fn of(value: &Value) -> SetKey {
        match value {
            Value::Null => SetKey::Null,
            Value::Bool(b) => SetKey::Bool(*b),
            Value::Number(_) => match Num::of(value) {
                Some(Num::Int(i)) => SetKey::Int(i),
                Some(Num::Float(f)) => SetKey::Float(if f == 0.0 { 0 } else { f.to_bits() }),
                None => SetKey::Null,
            },
            Value::String(s) => SetKey::String(s.clone()),
            Value::Array(_) | Value::Object(_) => SetKey::Compound(gofmt::json(value)),
        }
    }
}

/// The indices of the second occurrence of each repeated key (`validateListSet`).
fn repeated(keys: impl Iterator<Item = SetKey>) -> Vec<usize> {
    let keys: Vec<SetKey> = keys.collect();
    if keys.len() <= 1 {
        return Vec::new();
    }
    let mut seen: HashMap<&SetKey, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let times = seen.entry(k).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// `validateListMap`: items must be objects (or null), unique by their `x-kubernetes-list-map-keys`.
fn validate_list_map(path: &str, s: &Value, items: &[Value]) -> Vec<FieldError> {
    if let Some((i, item)) = items.iter().enumerate().find(|(_, x)| !x.is_null() && !x.is_object()) {
        return vec![with_value(
            FieldErrorReason::Invalid,
            index(path, i),
            item,
            "must be an object for an array of list-type map",
        )];
    }
    if items.len() <= 1 {
        return Vec::new();
    }
    let key_fields: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let duplicate = |i: usize, shown: Value| with_value(FieldErrorReason::Duplicate, index(path, i), &shown, "");
    if let [field] = key_fields.as_slice() {
        let keys: Vec<Option<&Value>> = items.iter().map(|x| x.get(*field)).collect();
        let set_keys = keys.iter().map(|k| k.map_or(SetKey::Unspecified, SetKey::of));
        return repeated(set_keys)
            .into_iter()
            .map(|i| {
                let mut shown = Map::new();
                if let Some(k) = keys[i] {
                    shown.insert(field.to_string(), k.clone());
                }
                duplicate(i, Value::Object(shown))
            })
            .collect();
    }
    let keys: Vec<Value> = items
        .iter()
        .map(|x| {
            let mut key = Map::new();
            for field in &key_fields {
                if let Some(v) = x.get(*field) {
                    key.insert(field.to_string(), v.clone());
                }
            }
            Value::Object(key)
        })
        .collect();
    repeated(keys.iter().map(SetKey::of))
        .into_iter()
        .map(|i| duplicate(i, keys[i].clone()))
        .collect()
}

/// `objectmeta.Validate` (not at a resource root): `apiVersion` and `kind` of every value whose schema says
/// `x-kubernetes-embedded-resource`, and their `metadata`.
pub(super) fn validate_embedded(s: &Value, obj: &Map<String, Value>) -> Vec<FieldError> {
    let mut errs = Vec::new();
    embedded_in_map("", s, obj, true, &mut errs);
    errs
}

fn embedded_in_map(path: &str, s: &Value, obj: &Map<String, Value>, root: bool, errs: &mut Vec<FieldError>) {
    if s.get("x-kubernetes-embedded-resource") == Some(&Value::Bool(true)) {
        check_embedded(path, obj, errs);
    }
    let properties = s.get("properties").and_then(Value::as_object);
    for (k, v) in fields(obj, root) {
        match properties.and_then(|p| p.get(k)) {
            Some(sub) => embedded_in_value(&child(path, k), sub, v, errs),
            None => {
                if let Some(additional) = object_schema(s, "additionalProperties") {
                    embedded_in_value(&key(path, k), additional, v, errs);
                }
            }
        }
    }
}

fn embedded_in_value(path: &str, s: &Value, value: &Value, errs: &mut Vec<FieldError>) {
    match value {
        Value::Object(map) => embedded_in_map(path, s, map, false, errs),
        Value::Array(items) => {
            if let Some(item_schema) = object_schema(s, "items") {
                for (i, item) in items.iter().enumerate() {
                    embedded_in_value(&index(path, i), item_schema, item, errs);
                }
            }
        }
        _ => {}
    }
}

/// `validateEmbeddedResource`, for `apiVersion` and `kind`.
fn check_embedded(path: &str, obj: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    for name in ["apiVersion", "kind"] {
        if !obj.contains_key(name) {
            errs.push(FieldError::required(child(path, name), ""));
        }
    }
    let invalid = |name: &str, value: &Value, detail: &str| {
        with_value(FieldErrorReason::Invalid, child(path, name), value, detail)
    };
    if let Some(value) = obj.get("apiVersion") {
        match value.as_str() {
            None => errs.push(invalid("apiVersion", value, "must be a string")),
            Some("") => errs.push(invalid("apiVersion", value, "must not be empty")),
            Some(v) if v != "/" && v.matches('/').count() > 1 => {
                errs.push(invalid(
                    "apiVersion",
                    value,
                    &format!("unexpected GroupVersion string: {v}"),
                ));
            }
            Some(_) => {}
        }
    }
    if let Some(value) = obj.get("kind") {
        match value.as_str() {
            None => errs.push(invalid("kind", value, "must be a string")),
            Some("") => errs.push(invalid("kind", value, "must not be empty")),
            Some(kind) => {
                let problems = is_dns1035_label(&kind.to_lowercase());
                if !problems.is_empty() {
                    let detail = format!(
                        "may have mixed case, but should otherwise match: {}",
                        problems.join(",")
                    );
                    errs.push(invalid("kind", value, &detail));
                }
            }
        }
    }
    if let Some(meta) = obj.get("metadata") {
        errs.extend(embedded_metadata(path, meta));
    }
}

/// `validateEmbeddedResource` for `metadata`: ObjectMeta's own validation, with names that are path segments, a
/// namespace only when one is set, and a stand-in name when there is none (kube's `fakename`).
fn embedded_metadata(path: &str, meta: &Value) -> Vec<FieldError> {
    let mut meta = meta.clone();
    if let Value::Object(map) = &mut meta {
        if map.get("name").and_then(Value::as_str).is_none_or(str::is_empty) {
            map.insert("name".into(), Value::String("fakename".into()));
        }
    }
    let namespaced = meta
        .get("namespace")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    validate_object_meta(&meta, namespaced, NameRule::PathSegment)
        .into_iter()
        .map(|mut e| {
            e.field = child(path, &e.field);
            e
        })
        .collect()
}
