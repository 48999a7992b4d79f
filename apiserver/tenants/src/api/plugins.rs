//! `tenancy.wasm-apiserver.io/v1alpha1` Plugin: a plugin installed through the API, in each tenant (cluster-scoped;
//! at the root for the default tenant). Its `spec.source` names where the component comes from: `oci`, a reference
//! pulled from a registry the host and the tenant allow (a tag is resolved once, to the digest recorded in
//! `status.resolved`), or `upload`, the bytes PUT to its `content` subresource (their digest recorded there too). Every host serving the tenant pulls, compiles and serves it; its `status` is filled in on every
//! read with the answering host's state: the phase, the conditions `Pulled`, `Verified`, `Compiled` and `Ready`, the
//! digest, and the group, resources and verbs served.

use serde_json::{json, Value};

use apimachinery::field_error::FieldError;
use apimachinery::scheme::Column;
use builtin::{age_column, column, name_column, strings_schema};

/// The resource.
pub const RESOURCE: &str = "plugins";
/// The kind.
pub const KIND: &str = "Plugin";

/// The phase of a plugin waiting to be pulled.
pub const PENDING: &str = "Pending";
/// The phase of a plugin being pulled.
pub const PULLING: &str = "Pulling";
/// The phase of a plugin being compiled and checked.
pub const COMPILING: &str = "Compiling";
/// The phase of a plugin served.
pub const SERVING: &str = "Serving";
/// The phase of a plugin that failed (a previous version may still serve: see `status.served`).
pub const FAILED: &str = "Failed";

/// The plugin's source reference, when it is an OCI one.
pub fn oci_reference(obj: &Value) -> Option<&str> {
    obj.pointer("/spec/source/oci/reference").and_then(Value::as_str)
}

/// The schema of a condition in a status (`metav1.Condition`'s fields that the host sets).
pub fn condition_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "status": {"type": "string"},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "lastTransitionTime": {"type": "string", "format": "date-time"}
        }
    })
}

/// The schema of a Plugin.
pub fn schema() -> Value {
    let condition = condition_schema();
    let served = json!({
        "type": "object",
        "description": "What a version of the plugin serves.",
        "properties": {
            "digest": {"type": "string", "description": "The manifest digest of the artifact."},
            "group": {"type": "string", "description": "The API group it serves."},
            "resources": strings_schema("The resources it serves."),
            "verbs": strings_schema("The verbs it serves.")
        }
    });
    json!({
        "type": "object",
        "description": "Plugin is a plugin of the tenant installed through the API: a WebAssembly component pulled from an OCI registry, compiled, checked and served by every host serving the tenant.",
        "properties": {
            "spec": {
                "type": "object",
                "description": "Where the plugin comes from.",
                "properties": {
                    "source": {
                        "type": "object",
                        "description": "The component's source: exactly one of oci and upload.",
                        "properties": {
                            "oci": {
                                "type": "object",
                                "description": "An artifact in the WebAssembly layout (config application/vnd.wasm.config.v0+json, one application/wasm layer), as wkg oci push and oras push write it.",
                                "properties": {
                                    "reference": {"type": "string", "description": "host[:port]/repository:tag or host[:port]/repository@sha256:... A tag is resolved once, to the digest recorded in status.resolved; a moved tag changes nothing until the reference changes."},
                                    "pullSecretRef": {
                                        "type": "object",
                                        "description": "A Secret of the tenant with the registry's credentials: kubernetes.io/dockerconfigjson (kubectl create secret docker-registry) or kubernetes.io/basic-auth.",
                                        "properties": {
                                            "namespace": {"type": "string", "description": "Its namespace (default: default)."},
                                            "name": {"type": "string", "description": "Its name."}
                                        },
                                        "required": ["name"]
                                    }
                                },
                                "required": ["reference"]
                            },
                            "upload": {
                                "type": "object",
                                "description": "A component PUT to the plugins/<name>/content subresource (Content-Type: application/wasm), for a host without a registry; stored by content hash, in chunks every host reads."
                            }
                        }
                    }
                },
                "required": ["source"]
            },
            "status": {
                "type": "object",
                "description": "The plugin's state on the host that answers.",
                "properties": {
                    "phase": {"type": "string", "enum": [PENDING, PULLING, COMPILING, SERVING, FAILED], "description": "Pending, Pulling, Compiling, Serving, or Failed (see the conditions; a previous version may still serve)."},
                    "observedGeneration": {"type": "integer", "format": "int64", "description": "The generation of the Plugin this host acted on last."},
                    "digest": {"type": "string", "description": "The manifest digest of the artifact the spec names."},
                    "resolved": {
                        "type": "object",
                        "description": "The spec's reference and the digest it was resolved to, once, by the first host to pull it.",
                        "properties": {
                            "reference": {"type": "string"},
                            "digest": {"type": "string"}
                        }
                    },
                    "served": served,
                    "conditions": {"type": "array", "items": condition, "description": "Pulled, Verified, Compiled and Ready."}
                }
            }
        }
    })
}

/// The table's columns: NAME, PHASE, DIGEST (short), RESOURCES, AGE.
pub fn columns() -> Vec<Column> {
    vec![
        name_column(),
        column(
            "Phase",
            "string",
            "",
            "Pending, Pulling, Compiling, Serving or Failed.",
            0,
        ),
        column("Digest", "string", "", "The artifact's digest, short.", 0),
        column("Resources", "string", "", "The resources it serves.", 0),
        age_column(),
    ]
}

/// The cells of a row after the name.
pub fn cells(obj: &Value) -> Vec<Value> {
    let status = obj.get("status").unwrap_or(&Value::Null);
    let digest = status.get("digest").and_then(Value::as_str).map(short_digest);
    let resources = status
        .pointer("/served/resources")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","));
    vec![
        status.get("phase").cloned().unwrap_or(Value::Null),
        json!(digest),
        json!(resources),
        rest::strategy::creation_timestamp(obj),
    ]
}

/// `sha256:0123456789ab` of a digest: its algorithm and 12 hexadecimal digits, as `docker images` shortens IDs.
pub fn short_digest(digest: &str) -> String {
    match digest.split_once(':') {
        Some((algorithm, hex)) => format!("{algorithm}:{}", &hex[..hex.len().min(12)]),
        None => digest.chars().take(12).collect(),
    }
}

/// The problems of a Plugin's spec the schema does not catch: exactly one source.
pub fn validate(obj: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let source = obj.pointer("/spec/source").and_then(Value::as_object);
    let given: Vec<&String> = source.map(|s| s.keys().collect()).unwrap_or_default();
    match given.as_slice() {
        [] => errors.push(FieldError::required("spec.source", "exactly one of oci and upload")),
        [one] if one.as_str() == "oci" => {
            if oci_reference(obj).is_none_or(str::is_empty) {
                errors.push(FieldError::required("spec.source.oci.reference", ""));
            }
        }
        [one] if one.as_str() == "upload" => {}
        [one] => errors.push(FieldError::not_supported(
            format!("spec.source.{one}"),
            one,
            &["oci", "upload"],
        )),
        _ => errors.push(FieldError::forbidden(
            "spec.source",
            "exactly one of oci and upload may be set",
        )),
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_has_exactly_one_source() {
        let fields = |spec: Value| {
            validate(&json!({"spec": spec}))
                .into_iter()
                .map(|e| e.field)
                .collect::<Vec<_>>()
        };
        assert!(fields(json!({"source": {"oci": {"reference": "r.example.com/p:v1"}}})).is_empty());
        assert_eq!(fields(json!({})), ["spec.source"]);
        assert_eq!(fields(json!({"source": {"oci": {}}})), ["spec.source.oci.reference"]);
        assert_eq!(fields(json!({"source": {"git": {}}})), ["spec.source.git"]);
        assert!(fields(json!({"source": {"upload": {}}})).is_empty());
        assert_eq!(
            fields(json!({"source": {"upload": {}, "oci": {"reference": "r/p:v1"}}})),
            ["spec.source"]
        );
    }

    #[test]
    fn rows_show_the_short_digest_and_the_resources() {
        let obj = json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}, "status": {
            "phase": "Serving", "digest": "sha256:0123456789abcdef0123",
            "served": {"resources": ["flunders", "fischers"]}}});
        assert_eq!(
            cells(&obj),
            [
                json!("Serving"),
                json!("sha256:0123456789ab"),
                json!("flunders,fischers"),
                json!("2026-01-01T00:00:00Z")
            ]
        );
        assert_eq!(columns().len(), cells(&obj).len() + 1);
    }
}
