//! Small accessors for the metadata of JSON objects.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// `metadata`, created if missing.
#[inline]
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").map(Value::is_object).unwrap_or(false) {
        obj["metadata"] = json!({});
    }
    obj["metadata"]
        .as_object_mut()
        .expect("metadata was just made an object")
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// `metadata.name`, or the empty string.
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

/// `metadata.labels` as a map (non-string values are ignored).
pub fn labels(obj: &Value) -> BTreeMap<String, String> {
    obj.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// Sets `metadata.resourceVersion`.
pub fn set_resource_version(obj: &mut Value, rv: i64) {
    meta_mut(obj).insert("resourceVersion".into(), json!(rv.to_string()));
}

/// The object without `metadata.resourceVersion`, as it is stored.
pub fn strip_resource_version(obj: &mut Value) {
    meta_mut(obj).remove("resourceVersion");
}

#[cfg(feature = "rules")]
/// The current time in Kubernetes' RFC 3339 form (seconds precision, `Z`).
pub fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(feature = "rules")]
/// The current time as a meta/v1 `MicroTime` (`2006-01-02T15:04:05.000000Z`: Go's clients parse exactly six digits).
pub fn now_micro_time() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

#[cfg(feature = "rules")]
/// An RFC 3339 time in the `MicroTime` form (UTC, to the microsecond); `None` when `text` is no RFC 3339 time.
pub fn to_micro_time(text: &str) -> Option<String> {
    let t = chrono::DateTime::parse_from_rfc3339(text).ok()?;
    Some(
        t.with_timezone(&chrono::Utc)
            .format("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string(),
    )
}

/// Everything but `metadata` and `status`: what a generation bump looks at.
pub fn spec_part(obj: &Value) -> Value {
    let mut copy = obj.clone();
    if let Some(m) = copy.as_object_mut() {
        m.remove("metadata");
        m.remove("status");
        m.remove("apiVersion");
        m.remove("kind");
    }
    copy
}

/// `metadata.finalizers`: the strings of it, empty when absent.
pub fn finalizers(obj: &Value) -> Vec<&str> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Sets `status` to `status`, or removes it when `None`.
pub fn set_status(obj: &mut Value, status: Option<&Value>) {
    if let Some(m) = obj.as_object_mut() {
        match status {
            Some(s) => m.insert("status".into(), s.clone()),
            None => m.remove("status"),
        };
    }
}

/// The value at a simple JSON path (`.spec.replicas`), if every field on the way is there.
pub fn at_path<'a>(obj: &'a Value, fields: &[&str]) -> Option<&'a Value> {
    fields.iter().try_fold(obj, |v, f| v.get(f))
}

/// Sets the value at a simple JSON path, making the objects on the way (a non-object on the way is replaced).
pub fn set_at_path(obj: &mut Value, fields: &[&str], value: Value) {
    let Some((last, parents)) = fields.split_last() else {
        return;
    };
    let mut at = obj;
    for f in parents {
        if !at.get(f).is_some_and(Value::is_object) {
            at[*f] = json!({});
        }
        at = &mut at[*f];
    }
    if !at.is_object() {
        *at = json!({});
    }
    at[*last] = value;
}

/// The host's rule for what a plugin returns: of its metadata only labels and annotations are kept; the rest of the
/// metadata, and `apiVersion` and `kind`, are restored from `before`, the object the plugin was given. The server
/// applies it to every object a plugin's call returns, and the Rust plugin SDK to each step of a create in one call.
#[inline]
pub fn keep_host_metadata(before: &Value, mut after: Value) -> Value {
    let mut meta = before
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for field in ["labels", "annotations"] {
        match after.get("metadata").and_then(|m| m.get(field)) {
            Some(v) if !v.is_null() => meta.insert(field.to_owned(), v.clone()),
            _ => meta.remove(field),
        };
    }
    after["metadata"] = Value::Object(meta);
    for field in ["apiVersion", "kind"] {
        if let Some(v) = before.get(field) {
            after[field] = v.clone();
        }
    }
    after
}
