//! Core `v1`, served under `/api/v1`:
//!
//! - Namespace (kube's `pkg/registry/core/namespace`): phase Active on create, the `kubernetes` finalizer, and a
//!   graceful delete that marks the namespace Terminating; the namespace controller (`registry::namespaces`) then
//!   empties and removes it.
//! - ConfigMap (kube's `pkg/registry/core/configmap`): `data` and `binaryData` under config keys, and `immutable`.
//! - Secret (kube's `pkg/registry/core/secret`): `data` (base64) with `stringData` merged into it on writes, a
//!   `type` checked for the keys it needs (`kubernetes.io/dockerconfigjson`, `kubernetes.io/basic-auth`...), and
//!   `immutable`. Plugins' registry credentials are Secrets (`kubectl create secret docker-registry`).
//! - ResourceQuota (kube's `pkg/registry/core/resourcequota`): object counts by namespace; see [`quota`].
//! - Event (kube's `pkg/registry/core/event`): what controllers record about objects; see [`event`].
//! - ServiceAccount (kube's `pkg/registry/core/serviceaccount`): a workload's identity; the host's service account
//!   controller keeps a `default` one in every namespace, and its `token` subresource mints tokens for it.

pub mod configmap;
pub mod event;
pub mod quota;
pub mod secret;

use serde_json::{json, Value};

use super::{age_column, column, name_column, resource, str_at, strings_schema};
use apimachinery::field_error::FieldError;
use apimachinery::plugin::PluginError;
use apimachinery::plugin::{Rejection, Validation};
use apimachinery::scheme::Exports;
use apimachinery::scheme::GroupInfo;
use apimachinery::validation::{is_qualified_name, NameRule};
use rest::plugin::Plugin;
use rest::strategy::{creation_timestamp, Strategy};

/// The namespaces every server has from its first start.
pub const INITIAL_NAMESPACES: [&str; 4] = ["default", "kube-system", "kube-public", "kube-node-lease"];

/// The finalizer the namespace controller removes once the namespace is empty.
pub const FINALIZER: &str = "kubernetes";

fn namespace_schema() -> Value {
    json!({
        "type": "object",
        "description": "Namespace provides a scope for Names. Use of multiple namespaces is optional.",
        "properties": {
            "spec": {
                "type": "object",
                "description": "Spec defines the behavior of the Namespace.",
                "properties": {
                    "finalizers": strings_schema("Finalizers is an opaque list of values that must be empty to permanently remove object from storage.")
                }
            },
            "status": {
                "type": "object",
                "description": "Status describes the current status of a Namespace.",
                "properties": {
                    "phase": {"type": "string", "description": "Phase is the current lifecycle phase of the namespace.", "enum": ["Active", "Terminating"]},
                    "conditions": {
                        "type": "array",
                        "description": "Represents the latest available observations of a namespace's current state.",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["type"],
                        "items": {
                            "type": "object",
                            "description": "NamespaceCondition contains details about state of namespace.",
                            "required": ["type", "status"],
                            "properties": {
                                "type": {"type": "string", "description": "Type of namespace controller condition."},
                                "status": {"type": "string", "description": "Status of the condition, one of True, False, Unknown."},
                                "lastTransitionTime": {"type": "string", "format": "date-time", "description": "Last time the condition transitioned from one status to another."},
                                "reason": {"type": "string", "description": "Unique, one-word, CamelCase reason for the condition's last transition."},
                                "message": {"type": "string", "description": "Human-readable message indicating details about last transition."}
                            }
                        }
                    }
                }
            }
        }
    })
}

fn config_map_schema() -> Value {
    json!({
        "type": "object",
        "description": "ConfigMap holds configuration data for pods to consume.",
        "properties": {
            "immutable": {"type": "boolean", "description": "Immutable, if set to true, ensures that data stored in the ConfigMap cannot be updated (only object metadata can be modified)."},
            "data": {
                "type": "object",
                "description": "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field.",
                "additionalProperties": {"type": "string"}
            },
            "binaryData": {
                "type": "object",
                "description": "BinaryData contains the binary data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Keys stored in BinaryData must not overlap with the ones in the Data field.",
                "additionalProperties": {"type": "string", "format": "byte"}
            }
        }
    })
}

fn secret_schema() -> Value {
    json!({
        "type": "object",
        "description": "Secret holds secret data of a certain type. The total bytes of the values in the Data field must be less than MaxSecretSize bytes.",
        "properties": {
            "type": {"type": "string", "description": "Used to facilitate programmatic handling of secret data."},
            "immutable": {"type": "boolean", "description": "Immutable, if set to true, ensures that data stored in the Secret cannot be updated (only object metadata can be modified)."},
            "data": {
                "type": "object",
                "description": "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string.",
                "additionalProperties": {"type": "string", "format": "byte"}
            },
            "stringData": {
                "type": "object",
                "description": "stringData allows specifying non-binary secret data in string form. It is provided as a write-only input field for convenience. All keys and values are merged into the data field on write, overwriting any existing values.",
                "additionalProperties": {"type": "string"}
            }
        }
    })
}

fn service_account_schema() -> Value {
    let reference = json!({
        "type": "object",
        "description": "ObjectReference contains enough information to let you inspect or modify the referred object.",
        "properties": {
            "kind": {"type": "string", "description": "Kind of the referent."},
            "namespace": {"type": "string", "description": "Namespace of the referent."},
            "name": {"type": "string", "description": "Name of the referent."},
            "uid": {"type": "string", "description": "UID of the referent."},
            "apiVersion": {"type": "string", "description": "API version of the referent."},
            "resourceVersion": {"type": "string", "description": "Specific resourceVersion to which this reference is made, if any."},
            "fieldPath": {"type": "string", "description": "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement."}
        },
        "x-kubernetes-map-type": "atomic"
    });
    json!({
        "type": "object",
        "description": "ServiceAccount binds together: * a name, understood by users, and perhaps by peripheral systems, for an identity * a principal that can be authenticated and authorized * a set of secrets",
        "properties": {
            "secrets": {
                "type": "array",
                "description": "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
                "items": reference,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"]
            },
            "imagePullSecrets": {
                "type": "array",
                "description": "ImagePullSecrets is a list of references to secrets in the same namespace to use for pulling any images in pods that reference this ServiceAccount.",
                "items": {
                    "type": "object",
                    "description": "LocalObjectReference contains enough information to let you locate the referenced object inside the same namespace.",
                    "properties": {"name": {"type": "string", "description": "Name of the referent."}},
                    "x-kubernetes-map-type": "atomic"
                },
                "x-kubernetes-list-type": "atomic"
            },
            "automountServiceAccountToken": {"type": "boolean", "description": "AutomountServiceAccountToken indicates whether pods running as this service account should have an API token automatically mounted."}
        }
    })
}

/// The core group as a built-in plugin: namespaces (with their `status` and `finalize` subresources), ConfigMaps,
/// secrets and service accounts.
pub fn plugin() -> Plugin {
    let mut namespaces = resource("Namespace", "namespaces", &["ns"], false, "v1", namespace_schema());
    namespaces.versions[0].subresources.status = true;
    namespaces.versions[0].subresources.finalize = true;
    let mut service_accounts = resource(
        "ServiceAccount",
        "serviceaccounts",
        &["sa"],
        true,
        "v1",
        service_account_schema(),
    );
    service_accounts.versions[0].subresources.token = true;
    let mut quotas = resource(
        "ResourceQuota",
        "resourcequotas",
        &["quota"],
        true,
        "v1",
        quota::schema(),
    );
    quotas.versions[0].subresources.status = true;
    let group = GroupInfo {
        group: String::new(),
        resources: apimachinery::scheme::shared(vec![
            namespaces,
            resource("ConfigMap", "configmaps", &["cm"], true, "v1", config_map_schema()),
            resource("Secret", "secrets", &[], true, "v1", secret_schema()),
            service_accounts,
            resource("Event", "events", &["ev"], true, "v1", event::schema()),
            quotas,
        ]),
        reads: Vec::new(),
    };
    let exports = Exports {
        table: true,
        ..super::writable()
    };
    Plugin::native(
        "builtin:core",
        group,
        exports,
        vec![
            (
                "namespaces".into(),
                vec![
                    name_column(),
                    column("Status", "string", "", "The status of the namespace", 0),
                    age_column(),
                ],
            ),
            (
                "configmaps".into(),
                vec![
                    name_column(),
                    column(
                        "Data",
                        "string",
                        "",
                        "The number of entries in the data and binary data",
                        0,
                    ),
                    age_column(),
                ],
            ),
            (
                "secrets".into(),
                vec![
                    name_column(),
                    column("Type", "string", "", "The type of the secret", 0),
                    column("Data", "string", "", "The number of entries in the data", 0),
                    age_column(),
                ],
            ),
            ("serviceaccounts".into(), vec![name_column(), age_column()]),
            ("events".into(), event::columns()),
            ("resourcequotas".into(), quota::columns()),
        ],
        vec![
            ("namespaces".into(), vec!["status.phase".into()]),
            ("secrets".into(), vec!["type".into()]),
            (
                "events".into(),
                event::attrs(&Value::Null).into_iter().map(|(field, _)| field).collect(),
            ),
        ],
        std::sync::Arc::new(CoreStrategy),
    )
}

/// kube's ValidateNamespaceFinalizeUpdate, for a write to a namespace's `/finalize`: each of `spec.finalizers` a
/// qualified name, and one without a `/` a standard finalizer (`kubernetes`, `orphan`, `foregroundDeletion`).
pub fn validate_finalize(obj: &Value) -> Vec<FieldError> {
    validate_finalizer_names(obj, true)
}

/// The problems of a namespace's `spec.finalizers`, each named by its index (`indexed`, as `/finalize` names them) or
/// all as `spec.finalizers` (as kube's ValidateNamespace names them on create).
fn validate_finalizer_names(obj: &Value, indexed: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (i, finalizer) in super::strs(obj.pointer("/spec/finalizers")).into_iter().enumerate() {
        let field = if indexed {
            format!("spec.finalizers[{i}]")
        } else {
            "spec.finalizers".to_owned()
        };
        for problem in is_qualified_name(finalizer) {
            errors.push(FieldError::invalid(&field, finalizer, &problem));
        }
        if !finalizer.contains('/') && ![FINALIZER, "orphan", "foregroundDeletion"].contains(&finalizer) {
            errors.push(FieldError::invalid(
                &field,
                finalizer,
                "name is neither a standard finalizer name nor is it fully qualified",
            ));
        }
    }
    errors
}

struct CoreStrategy;

impl Strategy for CoreStrategy {
    fn name_rule(&self, resource: &str) -> NameRule {
        match resource {
            "namespaces" => NameRule::Dns1123Label,
            // kube validates an event's metadata only as any object's (a path segment).
            "events" => NameRule::PathSegment,
            _ => NameRule::Dns1123Subdomain,
        }
    }

    fn prepare_for_create(&self, resource: &str, obj: &Value) -> Result<Value, PluginError> {
        match resource {
            "secrets" => return Ok(secret::prepare(obj)),
            "events" => return Ok(event::prepare(obj)),
            "resourcequotas" => return Ok(quota::prepare_for_create(obj)),
            "configmaps" | "serviceaccounts" => return Ok(obj.clone()),
            _ => {}
        }
        let mut obj = obj.clone();
        obj["status"] = json!({"phase": "Active"});
        let finalizers = obj
            .pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !finalizers.iter().any(|f| f == FINALIZER) {
            let mut all = finalizers;
            all.push(json!(FINALIZER));
            if !obj.get("spec").is_some_and(Value::is_object) {
                obj["spec"] = json!({});
            }
            obj["spec"]["finalizers"] = json!(all);
        }
        Ok(obj)
    }

    fn prepare_for_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
        match resource {
            "secrets" => return Ok(secret::prepare(obj)),
            "events" => return Ok(event::prepare(obj)),
            "resourcequotas" => return Ok(quota::prepare_for_update(obj, old)),
            "configmaps" | "serviceaccounts" => return Ok(obj.clone()),
            _ => {}
        }
        // The status and the finalizers change only through the server (kube: /status and /finalize).
        let mut obj = obj.clone();
        obj["status"] = old.get("status").cloned().unwrap_or(Value::Null);
        obj["spec"] = old.get("spec").cloned().unwrap_or(Value::Null);
        Ok(obj)
    }

    fn validate(&self, resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        match resource {
            "secrets" => Ok(Validation::of_errors(secret::validate(obj))),
            "configmaps" => Ok(Validation::of_errors(configmap::validate(obj))),
            "serviceaccounts" => Ok(Validation::valid()),
            "events" => Ok(Validation::of_errors(event::validate(obj))),
            "resourcequotas" => Ok(Validation::of_errors(quota::validate(obj))),
            _ => Ok(Validation::of_errors(validate_finalizer_names(obj, false))),
        }
    }

    fn validate_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
        match resource {
            "secrets" => Ok(Validation::of_errors(secret::validate_update(obj, old))),
            "configmaps" => Ok(Validation::of_errors(configmap::validate_update(obj, old))),
            "events" => Ok(Validation::of_errors(event::validate(obj))),
            "resourcequotas" => Ok(Validation::of_errors(quota::validate_update(obj, old))),
            _ => Ok(Validation::valid()),
        }
    }

    fn prepare_for_status_update(&self, resource: &str, obj: &Value, _old: &Value) -> Result<Value, PluginError> {
        Ok(match resource {
            "resourcequotas" => quota::prepare_status(obj),
            _ => obj.clone(),
        })
    }

    /// kube's ValidateNamespaceStatusUpdate: Active while the namespace is not being deleted, Terminating once it is;
    /// a quota's names and quantities.
    fn validate_status_update(&self, resource: &str, obj: &Value, _old: &Value) -> Result<Validation, PluginError> {
        if resource == "resourcequotas" {
            return Ok(Validation::of_errors(quota::validate(obj)));
        }
        let phase = str_at(obj, "/status/phase");
        let deleting = obj.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
        let error = match (deleting, phase) {
            (false, "Active") | (true, "Terminating") => None,
            (false, _) => Some("may only be 'Active' if `deletionTimestamp` is empty"),
            (true, _) => Some("may only be 'Terminating' if `deletionTimestamp` is not empty"),
        };
        Ok(Validation::of_errors(
            error
                .map(|message| FieldError::invalid("status.Phase", phase, message))
                .into_iter()
                .collect(),
        ))
    }

    fn validate_delete(&self, resource: &str, obj: &Value) -> Result<(), PluginError> {
        if resource == "namespaces"
            && ["default", "kube-system", "kube-public"].contains(&str_at(obj, "/metadata/name"))
        {
            return Err(PluginError::Rejected(Rejection::Forbidden(
                "this namespace may not be deleted".into(),
            )));
        }
        Ok(())
    }

    fn get_attrs(&self, resource: &str, obj: &Value) -> Result<Vec<(String, String)>, PluginError> {
        Ok(match resource {
            "secrets" => vec![("type".into(), secret::type_of(obj).to_string())],
            "configmaps" | "serviceaccounts" | "resourcequotas" => Vec::new(),
            "events" => event::attrs(obj),
            _ => vec![("status.phase".into(), str_at(obj, "/status/phase").to_string())],
        })
    }

    fn table_cells(&self, resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        match resource {
            "secrets" => {
                let entries = obj.get("data").and_then(Value::as_object).map_or(0, |d| d.len());
                vec![
                    json!(secret::type_of(obj)),
                    json!(entries.to_string()),
                    creation_timestamp(obj),
                ]
            }
            "configmaps" => vec![json!(configmap::entries(obj).to_string()), creation_timestamp(obj)],
            "serviceaccounts" => vec![creation_timestamp(obj)],
            "resourcequotas" => quota::cells(obj),
            _ => vec![json!(str_at(obj, "/status/phase")), creation_timestamp(obj)],
        }
    }

    /// An event's row has kube's columns, its name last.
    fn table_row(&self, resource: &str, version: &str, obj: &Value) -> Result<Vec<Value>, PluginError> {
        if resource == "events" {
            return Ok(event::cells(obj));
        }
        let name = obj.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
        Ok(std::iter::once(name)
            .chain(self.table_cells(resource, version, obj))
            .collect())
    }

    /// kube's event strategy: an update of a missing event creates it.
    fn allow_create_on_update(&self, resource: &str) -> Result<bool, PluginError> {
        Ok(resource == "events")
    }

    fn finalizes_itself(&self, resource: &str) -> bool {
        resource == "namespaces"
    }

    fn graceful_delete(&self, _resource: &str, obj: &Value, now: &str) -> Option<Value> {
        let mut obj = obj.clone();
        if obj.pointer("/metadata/deletionTimestamp").is_none() {
            obj["metadata"]["deletionTimestamp"] = json!(now);
            obj["metadata"]["deletionGracePeriodSeconds"] = json!(0);
        }
        obj["status"] = json!({"phase": "Terminating"});
        Some(obj)
    }
}

/// A new namespace object, as the server creates the initial ones.
pub fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}
