//! What the plugin serves: the group, its resources and versions, and their OpenAPI v3 schemas.

use serde_json::{json, Value};

use crate::exports::wasm_apiserver::plugin::scheme::{GroupResource, PluginInfo, Resource, Scope, Version};
use crate::types::{v1alpha1, v1beta1};
use crate::{FISCHERS, FLUNDERS, GROUP};

/// Whether flunders are stored in v1beta1 (the `storage-v1beta1` build, plugins/wardle-next) rather than v1alpha1.
pub const STORED_IN_V1BETA1: bool = cfg!(feature = "storage-v1beta1");

/// The plugin's description for the host.
pub fn plugin_info() -> PluginInfo {
    let categories = vec!["wardle".to_owned()];
    PluginInfo {
        group: GROUP.to_owned(),
        resources: vec![
            Resource {
                kind: "Flunder".to_owned(),
                plural: FLUNDERS.to_owned(),
                singular: "flunder".to_owned(),
                short_names: vec!["fl".to_owned()],
                categories: categories.clone(),
                scope: Scope::Namespaced,
                versions: vec![
                    version(
                        v1beta1::VERSION,
                        STORED_IN_V1BETA1,
                        with_example(
                            flunder_schema(v1beta1_spec_properties()),
                            json!({"spec": {"fischerReference": "a-fischer", "referenceType": "Fischer"}, "status": {}}),
                        ),
                    ),
                    version(
                        v1alpha1::VERSION,
                        !STORED_IN_V1BETA1,
                        with_example(
                            flunder_schema(v1alpha1_spec_properties()),
                            json!({"spec": {"reference": "another-flunder", "referenceType": "Flunder"}, "status": {}}),
                        ),
                    ),
                ],
            },
            Resource {
                kind: "Fischer".to_owned(),
                plural: FISCHERS.to_owned(),
                singular: "fischer".to_owned(),
                short_names: vec!["fi".to_owned()],
                categories,
                scope: Scope::Cluster,
                versions: vec![version(v1alpha1::VERSION, true, fischer_schema())],
            },
        ],
        // BanFlunder lists the fischers.
        reads: vec![GroupResource {
            group: GROUP.to_owned(),
            resource: FISCHERS.to_owned(),
        }],
    }
}

fn version(name: &str, storage: bool, schema: Value) -> Version {
    Version {
        name: name.to_owned(),
        served: true,
        storage,
        deprecated: false,
        deprecation_warning: None,
        schema: schema.to_string(),
    }
}

/// A schema with an example object (OpenAPI `example`), which `wasm-apiserver plugin check` validates and converts
/// through every other version and back.
fn with_example(mut schema: Value, example: Value) -> Value {
    schema["example"] = example;
    schema
}

/// The schema of a Flunder whose spec has these properties.
pub fn flunder_schema(spec_properties: Value) -> Value {
    json!({
        "type": "object",
        "description": "Flunder is an example type with a spec and a status.",
        "properties": {
            "spec": {
                "type": "object",
                "description": "FlunderSpec is the specification of a Flunder.",
                "properties": spec_properties
            },
            "status": {
                "type": "object",
                "description": "FlunderStatus is the status of a Flunder, written through its /status subresource.",
                "properties": {
                    "replicas": {
                        "type": "integer",
                        "format": "int64",
                        "description": "The number of replicas observed."
                    },
                    "observedGeneration": {
                        "type": "integer",
                        "format": "int64",
                        "description": "The metadata.generation the status was observed at."
                    },
                    "selector": {
                        "type": "string",
                        "description": "The label selector of the replicas, for /scale."
                    }
                }
            }
        }
    })
}

fn v1alpha1_spec_properties() -> Value {
    json!({
        "reference": {
            "type": "string",
            "description": "A name of another flunder or fischer, depending on the reference type."
        },
        "referenceType": {
            "type": "string",
            "description": "The reference type, defaults to \"Flunder\" if reference is set."
        },
        "replicas": {
            "type": "integer",
            "format": "int64",
            "description": "The desired number of replicas, as /scale reads and writes it."
        }
    })
}

fn v1beta1_spec_properties() -> Value {
    json!({
        "flunderReference": {
            "type": "string",
            "description": "A name of another flunder, mutually exclusive to the FischerReference."
        },
        "fischerReference": {
            "type": "string",
            "description": "A name of a fischer, mutually exclusive to the FlunderReference."
        },
        "referenceType": {
            "type": "string",
            "description": "The reference type."
        },
        "replicas": {
            "type": "integer",
            "format": "int64",
            "description": "The desired number of replicas, as /scale reads and writes it."
        }
    })
}

/// The schema of a Fischer.
pub fn fischer_schema() -> Value {
    json!({
        "type": "object",
        "description": "Fischer is an example type holding the names of flunders that may not be used.",
        "properties": {
            "disallowedFlunders": {
                "type": "array",
                "description": "DisallowedFlunders holds a list of Flunder.Names that are disallowed.",
                "items": {"type": "string", "default": ""},
                "x-kubernetes-list-type": "atomic"
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flunders_prefer_v1beta1_and_store_v1alpha1() {
        let info = plugin_info();
        assert_eq!(info.group, GROUP);
        let flunders = &info.resources[0];
        assert_eq!(
            (flunders.plural.as_str(), flunders.scope),
            (FLUNDERS, Scope::Namespaced)
        );
        let versions: Vec<(&str, bool, bool)> = flunders
            .versions
            .iter()
            .map(|v| (v.name.as_str(), v.served, v.storage))
            .collect();
        assert_eq!(versions, [("v1beta1", true, false), ("v1alpha1", true, true)]);

        let fischers = &info.resources[1];
        assert_eq!((fischers.plural.as_str(), fischers.scope), (FISCHERS, Scope::Cluster));
        assert_eq!(fischers.versions.len(), 1);
        assert!(fischers.versions[0].storage);
        assert_eq!(info.reads.len(), 1);
        assert_eq!(
            (info.reads[0].group.as_str(), info.reads[0].resource.as_str()),
            (GROUP, FISCHERS)
        );
    }

    #[test]
    fn schemas_are_structural_json_objects() {
        for resource in plugin_info().resources {
            for version in resource.versions {
                let schema: Value = serde_json::from_str(&version.schema).expect("schema is JSON");
                assert_eq!(schema["type"], "object", "{} {}", resource.plural, version.name);
                assert!(schema["properties"].is_object());
            }
        }
        let fischer = fischer_schema();
        assert_eq!(
            fischer["properties"]["disallowedFlunders"]["x-kubernetes-list-type"],
            "atomic"
        );
        let spec = &flunder_schema(v1beta1_spec_properties())["properties"]["spec"];
        assert!(spec["properties"]["fischerReference"]["description"].is_string());
    }
}
