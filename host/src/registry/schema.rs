//! Unknown-field detection and pruning against a plugin's structural schema, as kube-apiserver does for CRDs:
//! with `fieldValidation=Strict` unknown fields fail the request, with `Warn` (the default) they are reported as
//! warnings, and in every case they are dropped before the object is stored.

use serde_json::{Map, Value};

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
    let props = schema.get("properties").and_then(Value::as_object);
    let mut drop = Vec::new();
    for (key, value) in map.iter_mut() {
        match key.as_str() {
            "apiVersion" | "kind" => {}
            "metadata" => prune_metadata(value, &mut unknown),
            _ => match props.and_then(|p| p.get(key)) {
                Some(sub) => prune_value(value, sub, key, &mut unknown),
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

fn preserves_unknown(schema: &Value) -> bool {
    schema
        .get("x-kubernetes-preserve-unknown-fields")
        .and_then(Value::as_bool)
        == Some(true)
}

fn prune_value(value: &mut Value, schema: &Value, path: &str, unknown: &mut Vec<String>) {
    if preserves_unknown(schema) {
        return;
    }
    match value {
        Value::Object(map) => prune_map(map, schema, path, unknown),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    prune_value(item, item_schema, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

fn prune_map(map: &mut Map<String, Value>, schema: &Value, path: &str, unknown: &mut Vec<String>) {
    if let Some(additional) = schema.get("additionalProperties") {
        if additional.is_object() {
            for (key, value) in map.iter_mut() {
                prune_value(value, additional, &format!("{path}.{key}"), unknown);
            }
        }
        // `additionalProperties: true` (or a schema) accepts any key.
        if additional.as_bool() != Some(false) {
            return;
        }
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        // An object without properties is free-form only if it says so; an empty object schema accepts nothing.
        if schema.get("type").and_then(Value::as_str) == Some("object") {
            let keys: Vec<String> = map.keys().cloned().collect();
            for key in keys {
                map.remove(&key);
                unknown.push(format!("{path}.{key}"));
            }
        }
        return;
    };
    let mut drop = Vec::new();
    for (key, value) in map.iter_mut() {
        match props.get(key) {
            Some(sub) => prune_value(value, sub, &format!("{path}.{key}"), unknown),
            None => drop.push(key.clone()),
        }
    }
    for key in drop {
        map.remove(&key);
        unknown.push(format!("{path}.{key}"));
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
    fn strict_message_lists_every_field() {
        assert_eq!(
            strict_error(&["spec.a".into(), "spec.b".into()]),
            "strict decoding error: unknown field \"spec.a\", unknown field \"spec.b\""
        );
    }
}
