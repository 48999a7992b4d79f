//! Kubernetes object metadata (`metadata`), as plugins see it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The `metadata` of an object, like Kubernetes' `metav1.ObjectMeta`.
///
/// The host owns metadata: it sets `uid`, `resourceVersion`, `creationTimestamp` and `generation`, validates names, and
/// ignores a plugin's changes to any field other than `labels` and `annotations`. Every field is optional so that an
/// absent field stays absent; fields this type does not know are kept in [`ObjectMeta::extra`] and written back.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// The name, unique within a namespace (or the cluster for cluster-scoped resources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A prefix the server completes with random characters when `name` is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generate_name: Option<String>,
    /// The namespace; absent for cluster-scoped objects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// A deprecated, read-only link to the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
    /// The unique id the server gives the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The version of the object in storage, for optimistic concurrency.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// A sequence number for changes to the desired state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the object was created, in RFC 3339 form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// When the object will be (or started to be) deleted, in RFC 3339 form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
    /// The grace period of a pending deletion, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Labels: identifying key/value pairs that selectors match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Annotations: non-identifying key/value pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// The objects this object depends on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner_references: Option<Vec<OwnerReference>>,
    /// The finalizers that must be removed before the object is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finalizers: Option<Vec<String>>,
    /// Server-side apply field ownership, kept as JSON.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_fields: Option<Vec<Value>>,
    /// Fields this type does not know, preserved as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ObjectMeta {
    /// The name, or the empty string when it is not set.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or_default()
    }

    /// The namespace, or the empty string when it is not set.
    pub fn namespace(&self) -> &str {
        self.namespace.as_deref().unwrap_or_default()
    }

    /// The value of a label, if set.
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref()?.get(key).map(String::as_str)
    }

    /// The value of an annotation, if set.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }
}

/// A reference from an object to its owner, like Kubernetes' `metav1.OwnerReference`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// The owner's API version.
    #[serde(default)]
    pub api_version: String,
    /// The owner's kind.
    #[serde(default)]
    pub kind: String,
    /// The owner's name.
    #[serde(default)]
    pub name: String,
    /// The owner's uid.
    #[serde(default)]
    pub uid: String,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether the owner cannot be deleted before this object (foreground deletion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
    /// Fields this type does not know, preserved as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn round_trip_keeps_known_and_unknown_fields() {
        let input = json!({
            "name": "a",
            "namespace": "ns",
            "uid": "u-1",
            "resourceVersion": "7",
            "generation": 2,
            "creationTimestamp": "2024-01-02T03:04:05Z",
            "labels": {"app": "x"},
            "annotations": {},
            "ownerReferences": [{"apiVersion": "v1", "kind": "K", "name": "o", "uid": "u-2", "controller": true}],
            "finalizers": ["f"],
            "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
            "futureField": {"x": 1}
        });
        let meta: ObjectMeta = serde_json::from_value(input.clone()).expect("decode");
        assert_eq!(meta.name(), "a");
        assert_eq!(meta.label("app"), Some("x"));
        assert_eq!(meta.annotation("none"), None);
        assert_eq!(meta.extra.get("futureField"), Some(&json!({"x": 1})));
        assert_eq!(serde_json::to_value(&meta).expect("encode"), input);
    }

    #[test]
    fn absent_fields_stay_absent() {
        let meta: ObjectMeta = serde_json::from_value(json!({})).expect("decode");
        assert_eq!(meta.name(), "");
        assert_eq!(serde_json::to_value(&meta).expect("encode"), json!({}));
    }
}
