//! Schemas of resources, as kube-apiserver applies them to custom resources: the structural schema
//! ([`structural`]: validation, defaulting, list types, formats), CEL validation rules ([`cel`]), the field manager
//! behind server-side apply ([`fieldmanager`]), and, at the root, unknown-field detection and pruning.
//!
//! Unknown-field detection and pruning against a plugin's structural schema, as kube-apiserver does for CRDs:
//! with `fieldValidation=Strict` unknown fields fail the request, with `Warn` (the default) they are reported as
//! warnings, and in every case they are dropped before the object is stored.

pub mod cel;
pub mod fieldmanager;
pub mod structural;

use serde_json::{Map, Value};

use apimachinery::FieldError;

/// The fields of `metadata` (ObjectMeta) a client may send.
const OBJECT_META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Removes the fields the schema does not know from `object` (a whole object: apiVersion, kind, metadata and the
/// plugin's fields) and returns their paths, such as `spec.bogus`.
pub fn prune(object: &mut Value, schema: &Value) -> Vec<String> {
    let mut unknown = Vec::new();
    let Some(map) = object.as_object_mut() else {
        return unknown;
    };
    let mut drop = Vec::new();
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => prune_metadata(value, &mut unknown),
            _ => match field_schema(schema, key) {
                Some(Some(sub)) => prune_value(value, Some(sub), key, &mut unknown),
                Some(None) => {}
                None if preserves_unknown(schema) => {}
                None => drop.push(key.clone()),
            },
        }
    }
    for key in drop {
        map.remove(&key);
        unknown.push(key);
    }
    unknown.sort();
    unknown
}

fn prune_metadata(meta: &mut Value, unknown: &mut Vec<String>) {
    if let Some(map) = meta.as_object_mut() {
        let drop: Vec<String> = map
            .keys()
            .filter(|k| !OBJECT_META_FIELDS.contains(&k.as_str()))
            .cloned()
            .collect();
        for key in drop {
            map.remove(&key);
            unknown.push(format!("metadata.{key}"));
        }
    }
}

/// An embedded resource's `metadata` as kube's decoding leaves it (`objectmeta.Coerce`: read into an ObjectMeta and
/// written back): unknown fields dropped (and reported), and the empty fields Go omits (`omitempty`) gone, with a
/// null `creationTimestamp`. Metadata that is not an object is left for validation.
fn coerce_embedded_metadata(meta: &mut Value, path: &str, unknown: &mut Vec<String>) {
    let Some(map) = meta.as_object_mut() else {
        return;
    };
    map.retain(|key, value| {
        if !OBJECT_META_FIELDS.contains(&key.as_str()) {
            unknown.push(format!("{path}.{key}"));
            return false;
        }
        let empty = match value {
            Value::Null => true,
            Value::String(s) => s.is_empty(),
            Value::Object(m) => m.is_empty(),
            Value::Array(a) => a.is_empty(),
            Value::Number(n) => key == "generation" && n.as_i64() == Some(0),
            Value::Bool(_) => false,
        };
        !empty
    });
}

fn flag(schema: &Value, name: &str) -> bool {
    schema.get(name).and_then(Value::as_bool) == Some(true)
}

fn preserves_unknown(schema: &Value) -> bool {
    flag(schema, "x-kubernetes-preserve-unknown-fields")
}

/// The fields of an embedded resource (and of the root) that pruning leaves alone.
const META_FIELDS: &[&str] = &["apiVersion", "kind", "metadata"];

/// Where a value of an object goes: its property's schema, else the `additionalProperties` schema; `Some(None)` for
/// a key kept but not walked (`additionalProperties: true`), `None` for an unknown key.
fn field_schema<'s>(schema: &'s Value, key: &str) -> Option<Option<&'s Value>> {
    if let Some(sub) = schema.get("properties").and_then(|p| p.get(key)) {
        return Some(Some(sub));
    }
    match schema.get("additionalProperties") {
        Some(additional) if additional.is_object() => Some(Some(additional)),
        Some(Value::Bool(true)) => Some(None),
        _ => None,
    }
}

/// kube's pruning (`pruning.prune`): an object drops the keys its schema does not know (all of them when it has
/// no schema, as the items of a list without `items`); under `x-kubernetes-preserve-unknown-fields` (kube's
/// `skipPrune`) unknown keys stay, in list items too, but the values of declared properties are pruned; an embedded
/// resource keeps `apiVersion`, `kind` and `metadata`.
fn prune_value(value: &mut Value, schema: Option<&Value>, path: &str, unknown: &mut Vec<String>) {
    let preserve = schema.is_some_and(preserves_unknown);
    walk(value, schema, preserve, path, unknown);
}

/// [`prune_value`] once the schema is known to preserve unknown fields (`skip`) or not.
fn walk(value: &mut Value, schema: Option<&Value>, skip: bool, path: &str, unknown: &mut Vec<String>) {
    match value {
        Value::Object(map) => match schema {
            Some(schema) => prune_map(map, schema, skip, path, unknown),
            None if skip => {}
            None => {
                for (key, _) in std::mem::take(map) {
                    unknown.push(format!("{path}.{key}"));
                }
            }
        },
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items")).filter(|s| s.is_object());
            for (i, item) in items.iter_mut().enumerate() {
                let path = format!("{path}[{i}]");
                if skip {
                    if item_schema.is_some() {
                        walk(item, item_schema, true, &path, unknown);
                    }
                } else {
                    prune_value(item, item_schema, &path, unknown);
                }
            }
        }
        _ => {}
    }
}

fn prune_map(map: &mut Map<String, Value>, schema: &Value, skip: bool, path: &str, unknown: &mut Vec<String>) {
    let embedded = flag(schema, "x-kubernetes-embedded-resource");
    let mut drop = Vec::new();
    for (key, value) in map.iter_mut() {
        if embedded && META_FIELDS.contains(&key.as_str()) {
            if key == "metadata" {
                coerce_embedded_metadata(value, &format!("{path}.metadata"), unknown);
            }
            continue;
        }
        match field_schema(schema, key) {
            Some(Some(sub)) => prune_value(value, Some(sub), &format!("{path}.{key}"), unknown),
            Some(None) => {}
            None if skip => {}
            None => drop.push(key.clone()),
        }
    }
    for key in drop {
        map.remove(&key);
        unknown.push(format!("{path}.{key}"));
    }
}

/// The error kube's decoder (`objectmeta.Coerce`) gives for a body whose embedded resource has an `apiVersion` or
/// `kind` that is not a string, such as `spec.template.kind: Invalid value: 1: must be a string`; the request is
/// then refused as a bad request before validation. `None` when there is no such field.
pub fn embedded_type_error(object: &Value, schema: &Value) -> Option<String> {
    let map = object.as_object()?;
    let props = schema.get("properties");
    map.iter()
        .filter(|(k, _)| !META_FIELDS.contains(&k.as_str()))
        .find_map(|(k, v)| embedded_error_in(v, props.and_then(|p| p.get(k))?, k))
}

fn embedded_error_in(value: &Value, schema: &Value, path: &str) -> Option<String> {
    match value {
        Value::Object(map) => {
            if flag(schema, "x-kubernetes-embedded-resource") {
                for key in ["apiVersion", "kind"] {
                    match map.get(key) {
                        Some(v) if !v.is_string() => {
                            let field = format!("{path}.{key}");
                            return Some(FieldError::invalid_json(field, v, "must be a string").to_string());
                        }
                        _ => {}
                    }
                }
            }
            map.iter().find_map(|(k, v)| match field_schema(schema, k) {
                Some(Some(sub)) => embedded_error_in(v, sub, &format!("{path}.{k}")),
                _ => None,
            })
        }
        Value::Array(items) => {
            let item_schema = schema.get("items").filter(|s| s.is_object())?;
            items
                .iter()
                .enumerate()
                .find_map(|(i, v)| embedded_error_in(v, item_schema, &format!("{path}[{i}]")))
        }
        _ => None,
    }
}

/// The message of a strict decoding error, as kube-apiserver words it.
pub fn strict_error(unknown: &[String]) -> String {
    let fields: Vec<String> = unknown.iter().map(|f| format!("unknown field \"{f}\"")).collect();
    format!("strict decoding error: {}", fields.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "reference": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }},
            "status": {"type": "object"}
        }})
    }

    #[test]
    fn unknown_fields_are_found_and_dropped() {
        let mut obj = json!({
            "apiVersion": "g/v1", "kind": "K",
            "metadata": {"name": "a", "bogusMeta": 1},
            "spec": {"reference": "x", "bogus": 1, "items": [{"a": "1", "b": 2}], "labels": {"k": "v"},
                     "free": {"anything": {"goes": true}}},
            "status": {"nope": 1},
            "top": true
        });
        let unknown = prune(&mut obj, &schema());
        assert_eq!(
            unknown,
            vec![
                "metadata.bogusMeta",
                "spec.bogus",
                "spec.items[0].b",
                "status.nope",
                "top"
            ]
        );
        assert_eq!(obj["spec"]["reference"], "x");
        assert_eq!(obj["spec"]["labels"]["k"], "v");
        assert_eq!(obj["spec"]["free"]["anything"]["goes"], true);
        assert!(obj.get("top").is_none());
        assert!(obj["spec"].get("bogus").is_none());
    }

    #[test]
    fn pruning_follows_kube_below_preserved_fields_embedded_resources_and_untyped_items() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "preserve": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                "inner": {"type": "object", "properties": {"b": {"type": "string"}}},
                "list": {"type": "array", "items": {"type": "object", "properties": {"c": {"type": "string"}}}}}},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"x": {"type": "integer"}}}}},
            "untyped": {"type": "array"}
        }}}});
        let mut obj = json!({"spec": {
            "preserve": {"kept": 1, "inner": {"b": "y", "c": 3}, "list": [{"c": "z", "d": 4}]},
            "embedded": {"apiVersion": "v1", "kind": "K", "metadata": {"name": "n", "bogus": 1, "labels": {},
                "namespace": "", "creationTimestamp": null}, "spec": {"x": 1, "y": 2}, "z": 3},
            "untyped": [{"a": 1}, 2]
        }});
        let unknown = prune(&mut obj, &schema);
        // kube's skipPrune: unknown keys stay under preserve-unknown-fields, but declared properties are pruned.
        assert_eq!(
            obj["spec"]["preserve"],
            json!({"kept": 1, "inner": {"b": "y"}, "list": [{"c": "z"}]})
        );
        assert_eq!(
            obj["spec"]["embedded"],
            json!({"apiVersion": "v1", "kind": "K", "metadata": {"name": "n"}, "spec": {"x": 1}})
        );
        assert_eq!(obj["spec"]["untyped"], json!([{}, 2]));
        assert_eq!(
            unknown,
            vec![
                "spec.embedded.metadata.bogus",
                "spec.embedded.spec.y",
                "spec.embedded.z",
                "spec.preserve.inner.c",
                "spec.preserve.list[0].d",
                "spec.untyped[0].a"
            ]
        );
    }

    #[test]
    fn an_embedded_resource_with_a_kind_that_is_not_a_string_is_a_decoding_error() {
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "templates": {"type": "array", "items": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true}}}}}});
        let ok = json!({"spec": {"templates": [{"apiVersion": "v1", "kind": "Pod"}]}});
        assert_eq!(embedded_type_error(&ok, &schema), None);
        let bad =
            json!({"spec": {"templates": [{"apiVersion": "v1", "kind": "Pod"}, {"apiVersion": "v1", "kind": 1}]}});
        assert_eq!(
            embedded_type_error(&bad, &schema).as_deref(),
            Some("spec.templates[1].kind: Invalid value: 1: must be a string")
        );
    }

    #[test]
    fn strict_message_lists_every_field() {
        assert_eq!(
            strict_error(&["spec.a".into(), "spec.b".into()]),
            "strict decoding error: unknown field \"spec.a\", unknown field \"spec.b\""
        );
    }
}
