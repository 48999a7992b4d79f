//! Whole objects as they cross the boundary: JSON text decoded into typed values and back.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta::ObjectMeta;
use crate::types::Error;

/// A Kubernetes object of the usual shape: `apiVersion`, `kind`, `metadata`, `spec` and `status`.
///
/// `spec` takes its default value when absent. `status` stays absent when it is absent. Top-level fields other than
/// these five are kept in [`Object::extra`] and written back, so decoding and encoding an object loses nothing at the
/// top level; what `Spec` and `Status` keep is up to those types (add a `#[serde(flatten)]` map to keep everything).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(
    rename_all = "camelCase",
    bound(
        serialize = "Spec: Serialize, Status: Serialize",
        deserialize = "Spec: Deserialize<'de> + Default, Status: Deserialize<'de>"
    )
)]
pub struct Object<Spec, Status = Value> {
    /// The API version, `<group>/<version>` (or just `<version>` for the core group).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind, such as `Flunder`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// The metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default)]
    pub spec: Spec,
    /// The observed state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Status>,
    /// Other top-level fields, preserved as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl<Spec, Status> Object<Spec, Status>
where
    Spec: Serialize + DeserializeOwned + Default,
    Status: Serialize + DeserializeOwned,
{
    /// Decodes an object from JSON text; malformed input is a `bad-request` error.
    pub fn from_json(json: &str) -> Result<Self, Error> {
        decode(json)
    }

    /// Encodes the object as JSON text.
    pub fn to_json(&self) -> Result<String, Error> {
        encode(self)
    }
}

impl<Spec, Status> Object<Spec, Status> {
    /// The version part of `apiVersion` (`v1beta1` in `wardle.example.com/v1beta1`).
    pub fn version(&self) -> &str {
        split_api_version(&self.api_version).1
    }

    /// The group part of `apiVersion`, empty for the core group.
    pub fn group(&self) -> &str {
        split_api_version(&self.api_version).0
    }
}

/// Splits an `apiVersion` into its group and version: `("wardle.example.com", "v1beta1")`, or `("", "v1")`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.rsplit_once('/').unwrap_or(("", api_version))
}

/// Joins a group and a version into an `apiVersion`.
pub fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

/// Decodes any value from JSON text; malformed input is a `bad-request` error.
pub fn decode<T: DeserializeOwned>(json: &str) -> Result<T, Error> {
    serde_json::from_str(json).map_err(|e| Error::BadRequest(format!("cannot decode object: {e}")))
}

/// Encodes any value as JSON text; a failure is an `internal` error.
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::Internal(format!("cannot encode object: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    struct Spec {
        #[serde(default)]
        size: u32,
    }

    #[test]
    fn round_trip_preserves_unknown_top_level_fields() {
        let input = json!({
            "apiVersion": "example.com/v1",
            "kind": "Thing",
            "metadata": {"name": "a"},
            "spec": {"size": 3},
            "status": {"phase": "Ready"},
            "data": {"k": "v"}
        });
        let object: Object<Spec> = Object::from_json(&input.to_string()).expect("decode");
        assert_eq!(object.spec.size, 3);
        assert_eq!(object.version(), "v1");
        assert_eq!(object.group(), "example.com");
        assert_eq!(object.extra.get("data"), Some(&json!({"k": "v"})));
        let output: Value = serde_json::from_str(&object.to_json().expect("encode")).expect("json");
        assert_eq!(output, input);
    }

    #[test]
    fn missing_spec_defaults_and_missing_status_stays_absent() {
        let object: Object<Spec> = Object::from_json(r#"{"apiVersion":"v1","kind":"Thing"}"#).expect("decode");
        assert_eq!(object.spec, Spec::default());
        assert_eq!(object.group(), "");
        assert_eq!(object.version(), "v1");
        let output: Value = serde_json::from_str(&object.to_json().expect("encode")).expect("json");
        assert_eq!(
            output,
            json!({"apiVersion": "v1", "kind": "Thing", "metadata": {}, "spec": {"size": 0}})
        );
    }

    #[test]
    fn absent_type_meta_stays_absent() {
        let object: Object<Spec> = Object::from_json("{}").expect("decode");
        let output: Value = serde_json::from_str(&object.to_json().expect("encode")).expect("json");
        assert_eq!(output, json!({"metadata": {}, "spec": {"size": 0}}));
    }

    #[test]
    fn malformed_json_is_a_bad_request() {
        let result = Object::<Spec>::from_json("{");
        assert!(matches!(result, Err(Error::BadRequest(_))));
        let result = Object::<Spec>::from_json(r#"{"spec":{"size":"big"}}"#);
        assert!(matches!(result, Err(Error::BadRequest(_))));
    }

    #[test]
    fn api_versions_split_and_join() {
        assert_eq!(split_api_version("a.b/v2"), ("a.b", "v2"));
        assert_eq!(split_api_version("v1"), ("", "v1"));
        assert_eq!(api_version("a.b", "v2"), "a.b/v2");
        assert_eq!(api_version("", "v1"), "v1");
    }
}
