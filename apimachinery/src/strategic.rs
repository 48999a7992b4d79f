//! Strategic merge patch (`application/strategic-merge-patch+json`, kube's `apimachinery/pkg/util/strategicpatch`)
//! for the built-in types, which kubectl's client-side `apply`, `label`, `annotate` and `edit` send them: a JSON
//! merge patch in which the lists with a merge key are merged item by item by that key, lists of strings with the
//! merge strategy are merged as sets, and the directives `$patch` (`replace`, `delete`, `merge`), `$retainKeys`,
//! `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>` are obeyed.
//!
//! Which lists merge is the types' patch metadata (Go's `patchStrategy` and `patchMergeKey` tags), given by the
//! caller as a function of the field's path (`webhooks`, `webhooks.matchConditions`, `metadata.finalizers`...).

use serde_json::{Map, Value};

/// How a list field is patched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStrategy {
    /// Replaced by the patch's list (no patch strategy; `atomic`).
    Replace,
    /// Items merged by this key (`patchStrategy: merge`, `patchMergeKey`).
    MergeByKey(&'static str),
    /// A list of scalars merged as a set (`patchStrategy: merge` without a key).
    MergeScalars,
}

/// The patch metadata of kube's built-in types served here, by field path (list items' fields follow their
/// list's path, without an index): `ObjectMeta`'s, admissionregistration's webhooks and match conditions, and the
/// conditions of statuses.
pub fn builtin_lists(path: &str) -> ListStrategy {
    match path {
        "metadata.ownerReferences" => ListStrategy::MergeByKey("uid"),
        "metadata.finalizers" => ListStrategy::MergeScalars,
        "status.conditions" => ListStrategy::MergeByKey("type"),
        "webhooks" | "webhooks.matchConditions" | "spec.matchConditions" => ListStrategy::MergeByKey("name"),
        _ => ListStrategy::Replace,
    }
}

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ORDER: &str = "$setElementOrder/";
const DELETE_FROM: &str = "$deleteFromPrimitiveList/";

/// Applies `patch` (a JSON object) to `current` with the list strategies `lists`; the error is kube's wording of
/// a malformed patch.
pub fn apply(current: &Value, patch: &Value, lists: &dyn Fn(&str) -> ListStrategy) -> Result<Value, String> {
    let Value::Object(patch) = patch else {
        return Err("a strategic merge patch must be a JSON object".into());
    };
    let mut doc = match current {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    merge_map(&mut doc, patch, "", lists)?;
    Ok(Value::Object(doc))
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn merge_map(
    doc: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    path: &str,
    lists: &dyn Fn(&str) -> ListStrategy,
) -> Result<(), String> {
    match patch.get(DIRECTIVE).and_then(Value::as_str) {
        Some("replace") => {
            *doc = strip(patch);
            return Ok(());
        }
        Some("delete") => {
            doc.clear();
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(format!("unknown patch type: {other:?}")),
    }
    for (key, value) in patch {
        if key == DIRECTIVE || key == RETAIN_KEYS || key.starts_with(SET_ORDER) {
            continue;
        }
        if let Some(field) = key.strip_prefix(DELETE_FROM) {
            let removed = value.as_array().ok_or("$deleteFromPrimitiveList must be a list")?;
            if let Some(Value::Array(items)) = doc.get_mut(field) {
                items.retain(|i| !removed.contains(i));
            }
            continue;
        }
        let at = child(path, key);
        match (doc.get_mut(key), value) {
            (_, Value::Null) => {
                doc.remove(key);
            }
            (Some(Value::Object(current)), Value::Object(p)) => {
                if p.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                    doc.remove(key);
                } else {
                    merge_map(current, p, &at, lists)?;
                }
            }
            (Some(Value::Array(current)), Value::Array(p)) => {
                let order = patch.get(&format!("{SET_ORDER}{key}")).and_then(Value::as_array);
                merge_list(current, p, order, &at, lists)?;
            }
            (None, Value::Array(p)) => {
                let order = patch.get(&format!("{SET_ORDER}{key}")).and_then(Value::as_array);
                let mut items = Vec::new();
                merge_list(&mut items, p, order, &at, lists)?;
                doc.insert(key.clone(), Value::Array(items));
            }
            (_, v) => {
                doc.insert(key.clone(), strip_value(v));
            }
        }
    }
    if let Some(retain) = patch.get(RETAIN_KEYS) {
        let retain = retain.as_array().ok_or("$retainKeys must be a list")?;
        doc.retain(|k, _| retain.iter().any(|r| r.as_str() == Some(k)));
    }
    Ok(())
}

fn merge_list(
    current: &mut Vec<Value>,
    patch: &[Value],
    order: Option<&Vec<Value>>,
    path: &str,
    lists: &dyn Fn(&str) -> ListStrategy,
) -> Result<(), String> {
    if patch
        .iter()
        .any(|i| i.get(DIRECTIVE).and_then(Value::as_str) == Some("replace"))
    {
        *current = patch
            .iter()
            .filter(|i| i.get(DIRECTIVE).is_none())
            .map(strip_value)
            .collect();
        return Ok(());
    }
    match lists(path) {
        ListStrategy::Replace => *current = patch.iter().map(strip_value).collect(),
        ListStrategy::MergeScalars => {
            for item in patch {
                if !current.contains(item) {
                    current.push(item.clone());
                }
            }
            if let Some(order) = order {
                sort_by_order(current, order, |v| Some(v.clone()));
            }
        }
        ListStrategy::MergeByKey(key) => {
            let key_of = |v: &Value| v.get(key).cloned();
            for item in patch {
                let Some(k) = key_of(item) else {
                    return Err(format!("map: {item} does not contain declared merge key: {key}"));
                };
                let position = current.iter().position(|c| key_of(c).as_ref() == Some(&k));
                match (item.get(DIRECTIVE).and_then(Value::as_str), position) {
                    (Some("delete"), Some(i)) => {
                        current.remove(i);
                    }
                    (Some("delete"), None) => {}
                    (_, Some(i)) => match (&mut current[i], item) {
                        (Value::Object(c), Value::Object(p)) => merge_map(c, p, path, lists)?,
                        (c, p) => *c = strip_value(p),
                    },
                    (_, None) => current.push(strip_value(item)),
                }
            }
            if let Some(order) = order {
                sort_by_order(current, order, |v| v.get(key).cloned());
            }
        }
    }
    Ok(())
}

/// Puts the items named in `order` first, in its order (by `key_of`), the others after them as they were.
fn sort_by_order(items: &mut [Value], order: &[Value], key_of: impl Fn(&Value) -> Option<Value>) {
    let rank = |v: &Value| {
        let k = key_of(v);
        let named = |o: &Value| match (o, &k) {
            (Value::Object(_), Some(k)) => o.as_object().is_some_and(|m| m.values().any(|x| x == k)),
            (o, Some(k)) => o == k,
            _ => false,
        };
        order.iter().position(named).unwrap_or(order.len())
    };
    items.sort_by_key(rank);
}

fn strip(map: &Map<String, Value>) -> Map<String, Value> {
    map.iter()
        .filter(|(k, _)| {
            k.as_str() != DIRECTIVE
                && k.as_str() != RETAIN_KEYS
                && !k.starts_with(SET_ORDER)
                && !k.starts_with(DELETE_FROM)
        })
        .map(|(k, v)| (k.clone(), strip_value(v)))
        .collect()
}

/// A value of the patch as it is stored: without directives.
fn strip_value(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(strip(m)),
        Value::Array(items) => Value::Array(
            items
                .iter()
                .filter(|i| {
                    let directive_only = i.as_object().is_some_and(|m| m.len() == 1 && m.contains_key(DIRECTIVE));
                    i.get(DIRECTIVE).and_then(Value::as_str) != Some("delete") && !directive_only
                })
                .map(strip_value)
                .collect(),
        ),
        v => v.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patched(current: Value, patch: Value) -> Value {
        apply(&current, &patch, &builtin_lists).unwrap()
    }

    #[test]
    fn lists_with_a_merge_key_merge_by_it_and_others_are_replaced() {
        let current = json!({"webhooks": [
            {"name": "a", "failurePolicy": "Fail", "clientConfig": {"url": "https://a"}, "rules": [{"x": 1}, {"x": 2}]},
            {"name": "b", "failurePolicy": "Fail"}
        ]});
        // kubectl's apply of a change to webhook a's failure policy and rules.
        let patch = json!({
            "$setElementOrder/webhooks": [{"name": "a"}, {"name": "b"}],
            "webhooks": [{"name": "a", "failurePolicy": "Ignore", "rules": [{"x": 3}]}]
        });
        let out = patched(current, patch);
        assert_eq!(out["webhooks"][0]["failurePolicy"], "Ignore");
        assert_eq!(out["webhooks"][0]["clientConfig"]["url"], "https://a");
        assert_eq!(out["webhooks"][0]["rules"], json!([{"x": 3}]));
        assert_eq!(out["webhooks"][1], json!({"name": "b", "failurePolicy": "Fail"}));
        assert!(out.get("$setElementOrder/webhooks").is_none());
    }

    #[test]
    fn directives_delete_replace_retain_and_order() {
        let current = json!({
            "metadata": {"finalizers": ["a", "b"], "labels": {"x": "1", "y": "2"}},
            "webhooks": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "spec": {"k": 1, "l": 2}
        });
        let patch = json!({
            "metadata": {"$deleteFromPrimitiveList/finalizers": ["a"], "labels": {"x": null}},
            "webhooks": [{"name": "b", "$patch": "delete"}, {"name": "d"}],
            "$setElementOrder/webhooks": [{"name": "d"}, {"name": "a"}, {"name": "c"}],
            "spec": {"$retainKeys": ["k", "m"], "m": 3}
        });
        let out = patched(current, patch);
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        assert_eq!(out["metadata"]["labels"], json!({"y": "2"}));
        assert_eq!(out["webhooks"], json!([{"name": "d"}, {"name": "a"}, {"name": "c"}]));
        assert_eq!(out["spec"], json!({"k": 1, "m": 3}));
        let replaced = patched(
            json!({"spec": {"a": 1}}),
            json!({"spec": {"$patch": "replace", "b": 2}}),
        );
        assert_eq!(replaced["spec"], json!({"b": 2}));
        let union = patched(
            json!({"metadata": {"finalizers": ["a"]}}),
            json!({"metadata": {"finalizers": ["b", "a"]}}),
        );
        assert_eq!(union["metadata"]["finalizers"], json!(["a", "b"]));
        let err = apply(&json!({}), &json!({"webhooks": [{"nameless": 1}]}), &builtin_lists).unwrap_err();
        assert!(err.contains("does not contain declared merge key: name"), "{err}");
    }
}
