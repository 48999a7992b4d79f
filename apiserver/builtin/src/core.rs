//! Core `v1` Namespace, served under `/api/v1/namespaces` (kube's `pkg/registry/core/namespace`): phase Active on
//! create, the `kubernetes` finalizer, and a graceful delete that marks the namespace Terminating; the namespace
//! controller (`registry::namespaces`) then empties and removes it.

use serde_json::{json, Value};

use super::{age_column, column, name_column, resource, str_at, strings_schema};
use apimachinery::validation::NameRule;
use plugin_runtime::contract::Exports;
use plugin_runtime::scheme::GroupInfo;
use plugin_runtime::types::PluginError;
use plugin_runtime::types::{Rejection, Validation};
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
                    "phase": {"type": "string", "description": "Phase is the current lifecycle phase of the namespace.", "enum": ["Active", "Terminating"]}
                }
            }
        }
    })
}

/// The core group as a built-in plugin: namespaces.
pub fn plugin() -> Plugin {
    let group = GroupInfo {
        group: String::new(),
        resources: plugin_runtime::scheme::shared(vec![resource(
            "Namespace",
            "namespaces",
            &["ns"],
            false,
            "v1",
            namespace_schema(),
        )]),
        reads: Vec::new(),
    };
    let exports = Exports {
        create: true,
        update: true,
        delete: true,
        lister: true,
        table: true,
        ..Exports::default()
    };
    Plugin::native(
        "builtin:core",
        group,
        exports,
        vec![(
            "namespaces".into(),
            vec![
                name_column(),
                column("Status", "string", "", "The status of the namespace", 0),
                age_column(),
            ],
        )],
        vec![("namespaces".into(), vec!["status.phase".into()])],
        std::sync::Arc::new(CoreStrategy),
    )
}

struct CoreStrategy;

impl Strategy for CoreStrategy {
    fn name_rule(&self, _resource: &str) -> NameRule {
        NameRule::Dns1123Label
    }

    fn prepare_for_create(&self, _resource: &str, obj: &Value) -> Result<Value, PluginError> {
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

    fn prepare_for_update(&self, _resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
        // The status and the finalizers change only through the server (kube: /status and /finalize).
        let mut obj = obj.clone();
        obj["status"] = old.get("status").cloned().unwrap_or(Value::Null);
        obj["spec"] = old.get("spec").cloned().unwrap_or(Value::Null);
        Ok(obj)
    }

    fn validate(&self, _resource: &str, _obj: &Value) -> Result<Validation, PluginError> {
        Ok(Validation::valid())
    }

    fn validate_delete(&self, _resource: &str, obj: &Value) -> Result<(), PluginError> {
        if ["default", "kube-system", "kube-public"].contains(&str_at(obj, "/metadata/name")) {
            return Err(PluginError::Rejected(Rejection::Forbidden(
                "this namespace may not be deleted".into(),
            )));
        }
        Ok(())
    }

    fn get_attrs(&self, _resource: &str, obj: &Value) -> Result<Vec<(String, String)>, PluginError> {
        Ok(vec![("status.phase".into(), str_at(obj, "/status/phase").to_string())])
    }

    fn table_cells(&self, _resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        vec![json!(str_at(obj, "/status/phase")), creation_timestamp(obj)]
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
