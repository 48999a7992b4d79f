//! Structural defaulting and the pruning of nulls that comes before it, as apiextensions-apiserver does them
//! (`pkg/apiserver/schema/defaulting/algorithm.go` and `prunenulls.go`).

use serde_json::{Map, Value};

use super::openapi::{nullable, HOST_FIELDS};

/// A schema's `default`, if it has one (kube reads `default: null` as none).
fn default_of(s: &Value) -> Option<&Value> {
    s.get("default").filter(|d| !d.is_null())
}

/// `isNonNullableNull`: a null the schema does not allow.
fn non_nullable_null(value: &Value, s: Option<&Value>) -> bool {
    value.is_null() && s.is_some_and(|s| !nullable(s))
}

fn additional_schema(s: &Value) -> Option<&Value> {
    s.get("additionalProperties").filter(|a| a.is_object())
}

fn skipped(root: bool, key: &str) -> bool {
    root && HOST_FIELDS.contains(&key)
}

/// `defaulting.Default`.
pub(super) fn default_value(x: &mut Value, s: &Value, root: bool) {
    match x {
        Value::Object(map) => default_map(map, s, root),
        Value::Array(items) => {
            let Some(item_schema) = s.get("items").filter(|i| i.is_object()) else {
                return;
            };
            for item in items.iter_mut() {
                if non_nullable_null(item, Some(item_schema)) {
                    *item = default_of(item_schema).cloned().unwrap_or(Value::Null);
                }
                default_value(item, item_schema, false);
            }
        }
        _ => {}
    }
}

fn default_map(map: &mut Map<String, Value>, s: &Value, root: bool) {
    let properties = s.get("properties").and_then(Value::as_object);
    if let Some(properties) = properties {
        for (k, prop) in properties {
            let Some(default) = default_of(prop) else {
                continue;
            };
            if skipped(root, k) {
                continue;
            }
            let missing = match map.get(k) {
                None => true,
                Some(v) => non_nullable_null(v, Some(prop)),
            };
            if missing {
                map.insert(k.clone(), default.clone());
            }
        }
    }
    let additional = additional_schema(s);
    for (k, v) in map.iter_mut() {
        if skipped(root, k) {
            continue;
        }
        if let Some(prop) = properties.and_then(|p| p.get(k)) {
            default_value(v, prop, false);
        } else if let Some(additional) = additional {
            if non_nullable_null(v, Some(additional)) {
                *v = default_of(additional).cloned().unwrap_or(Value::Null);
            }
            default_value(v, additional, false);
        }
    }
}

/// `PruneNonNullableNullsWithoutDefaults`: drops the object fields that are null where the schema allows no null and
/// has no default (nulls in lists stay, to fail validation).
pub(super) fn prune_nulls(x: &mut Value, s: Option<&Value>, root: bool) {
    match x {
        Value::Object(map) => {
            let field_schema = |k: &str| {
                s.and_then(|s| {
                    s.get("properties")
                        .and_then(|p| p.get(k))
                        .or_else(|| additional_schema(s))
                })
            };
            map.retain(|k, v| {
                skipped(root, k) || {
                    let schema = field_schema(k);
                    !(non_nullable_null(v, schema) && schema.and_then(default_of).is_none())
                }
            });
            for (k, v) in map.iter_mut() {
                if !skipped(root, k) {
                    prune_nulls(v, field_schema(k), false);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.get("items")).filter(|i| i.is_object());
            for item in items {
                prune_nulls(item, item_schema, false);
            }
        }
        _ => {}
    }
}
