//! Storage versions and their migration:
//!
//! - `storagemigration.k8s.io/v1beta1` StorageVersionMigration (kube's `pkg/registry/storagemigration`,
//!   cluster-scoped, with `/status`): a request to rewrite every stored object of a resource (`spec.resource`, a
//!   group and a resource, immutable) in the resource's storage version. The host's migration controller
//!   (`registry::migration`) does it and reports in `status.conditions` (Running, then Succeeded or Failed) and
//!   `status.resourceVersion` (the revision the migration started at).
//! - `internal.apiserver.k8s.io/v1alpha1` StorageVersion, read-only: one per resource a plugin serves, named
//!   `<group>.<resource>`, written by the host. `status.commonEncodingVersion` is the version objects are written in
//!   now, and `status.storedVersions` every version objects may still be stored in, as a CRD's
//!   `status.storedVersions`: the host adds the storage version before its first write in it, and a migration that
//!   succeeded leaves the storage version alone.

use serde_json::{json, Value};

use super::{resource, str_at, string_schema, strings_schema};
use apimachinery::plugin::{FieldError, PluginError, Validation};
use apimachinery::scheme::Exports;
use apimachinery::scheme::GroupInfo;
use rest::plugin::Plugin;
use rest::strategy::Strategy;

/// The migrations' group.
pub const MIGRATION_GROUP: &str = "storagemigration.k8s.io";
/// Its version.
pub const MIGRATION_VERSION: &str = "v1beta1";
/// The migrations' resource.
pub const MIGRATIONS: &str = "storageversionmigrations";

/// The storage versions' group.
pub const VERSION_GROUP: &str = "internal.apiserver.k8s.io";
/// Its version.
pub const VERSION_VERSION: &str = "v1alpha1";
/// The storage versions' resource.
pub const STORAGE_VERSIONS: &str = "storageversions";

/// The condition of a migration under way.
pub const RUNNING: &str = "Running";
/// The condition of a migration done.
pub const SUCCEEDED: &str = "Succeeded";
/// The condition of a migration given up.
pub const FAILED: &str = "Failed";

/// The name of the StorageVersion of a resource: `<group>.<resource>` (`core.<resource>` in the core group).
pub fn storage_version_name(group: &str, resource: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    format!("{group}.{resource}")
}

/// The group and resource a migration names.
pub fn migrated_resource(svm: &Value) -> (&str, &str) {
    (
        str_at(svm, "/spec/resource/group"),
        str_at(svm, "/spec/resource/resource"),
    )
}

/// Whether a migration is over: its Succeeded or Failed condition is True.
pub fn finished(svm: &Value) -> bool {
    [SUCCEEDED, FAILED].iter().any(|t| condition_true(svm, t))
}

/// Whether the condition `type_` of an object is True.
pub fn condition_true(obj: &Value, type_: &str) -> bool {
    obj.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|c| c.iter().any(|c| c["type"] == type_ && c["status"] == "True"))
}

/// Sets condition `type_` of `obj`'s status (metav1.Condition), keeping its lastTransitionTime when the status
/// does not change.
pub fn set_condition(obj: &mut Value, type_: &str, status: bool, reason: &str, message: &str, now: &str) {
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    let generation = obj.pointer("/metadata/generation").cloned().unwrap_or(json!(1));
    let status_text = if status { "True" } else { "False" };
    let conditions = obj["status"]
        .as_object_mut()
        .expect("status is an object")
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let all = conditions.as_array_mut().expect("conditions is an array");
    let since = all
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == status_text)
        .and_then(|c| c.get("lastTransitionTime").cloned())
        .unwrap_or_else(|| json!(now));
    all.retain(|c| c["type"] != type_);
    all.push(json!({
        "type": type_,
        "status": status_text,
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
        "observedGeneration": generation,
    }));
}

fn condition_schema() -> Value {
    json!({
        "type": "object",
        "description": "Condition contains details for one aspect of the current state of this API Resource.",
        "required": ["type", "status"],
        "properties": {
            "type": string_schema("type of condition in CamelCase."),
            "status": string_schema("status of the condition, one of True, False, Unknown."),
            "reason": string_schema("reason contains a programmatic identifier indicating the reason for the condition's last transition."),
            "message": string_schema("message is a human readable message indicating details about the transition."),
            "lastTransitionTime": {"type": "string", "format": "date-time", "description": "lastTransitionTime is the last time the condition transitioned from one status to another."},
            "observedGeneration": {"type": "integer", "format": "int64", "description": "observedGeneration represents the .metadata.generation that the condition was set based upon."}
        }
    })
}

fn migration_schema() -> Value {
    json!({
        "type": "object",
        "description": "StorageVersionMigration represents a migration of stored data to the latest storage version.",
        "properties": {
            "spec": {
                "type": "object",
                "description": "Specification of the migration.",
                "required": ["resource"],
                "properties": {
                    "resource": {
                        "type": "object",
                        "description": "The resource that is being migrated. Immutable.",
                        "required": ["resource"],
                        "properties": {
                            "group": string_schema("The group of the resource (empty for the core group)."),
                            "resource": string_schema("The plural name of the resource.")
                        }
                    }
                }
            },
            "status": {
                "type": "object",
                "description": "Status of the migration.",
                "properties": {
                    "conditions": {"type": "array", "items": condition_schema(), "description": "The latest available observations of the migration's current state: Running, Succeeded, Failed."},
                    "resourceVersion": string_schema("The resourceVersion of the resource when the migration started.")
                }
            }
        }
    })
}

fn storage_version_schema() -> Value {
    json!({
        "type": "object",
        "description": "StorageVersion of a specific resource: the version its objects are written in, and every version they may be stored in.",
        "properties": {
            "spec": {"type": "object", "description": "Spec is an empty spec. It is here to comply with Kubernetes API style."},
            "status": {
                "type": "object",
                "description": "The reported versions of the resource.",
                "properties": {
                    "commonEncodingVersion": string_schema("The group/version every object of the resource is written in now."),
                    "storedVersions": strings_schema("The versions objects of the resource may be stored in (this server's addition, as a CustomResourceDefinition's status.storedVersions): the storage version is added before the first write in it, and a successful StorageVersionMigration leaves the storage version alone."),
                    "conditions": {"type": "array", "items": condition_schema(), "description": "The latest available observations of the storageVersion's state."}
                }
            }
        }
    })
}

/// `storagemigration.k8s.io` as a built-in plugin: StorageVersionMigrations.
pub fn migration_plugin() -> Plugin {
    let mut migrations = resource(
        "StorageVersionMigration",
        MIGRATIONS,
        &[],
        false,
        MIGRATION_VERSION,
        migration_schema(),
    );
    migrations.versions[0].subresources.status = true;
    let group = GroupInfo {
        group: MIGRATION_GROUP.into(),
        resources: apimachinery::scheme::shared(vec![migrations]),
        reads: Vec::new(),
    };
    let exports = Exports {
        status: true,
        ..super::writable()
    };
    Plugin::native(
        "builtin:storagemigration",
        group,
        exports,
        Vec::new(),
        Vec::new(),
        std::sync::Arc::new(MigrationStrategy),
    )
}

/// `internal.apiserver.k8s.io` as a built-in plugin: StorageVersions, read-only (the host writes them).
pub fn storage_version_plugin() -> Plugin {
    let group = GroupInfo {
        group: VERSION_GROUP.into(),
        resources: apimachinery::scheme::shared(vec![resource(
            "StorageVersion",
            STORAGE_VERSIONS,
            &[],
            false,
            VERSION_VERSION,
            storage_version_schema(),
        )]),
        reads: Vec::new(),
    };
    let exports = Exports {
        lister: true,
        ..Exports::default()
    };
    Plugin::native(
        "builtin:storageversions",
        group,
        exports,
        Vec::new(),
        Vec::new(),
        std::sync::Arc::new(StorageVersionStrategy),
    )
}

struct MigrationStrategy;

impl Strategy for MigrationStrategy {
    fn validate(&self, _resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        let mut errors = Vec::new();
        if str_at(obj, "/spec/resource/resource").is_empty() {
            errors.push(FieldError::required("spec.resource.resource", ""));
        }
        Ok(Validation::of_errors(errors))
    }

    fn validate_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
        let mut validation = self.validate(resource, obj)?;
        let (new, old) = (obj.pointer("/spec/resource"), old.pointer("/spec/resource"));
        if new != old {
            let value = new.cloned().unwrap_or(Value::Null);
            validation
                .errors
                .push(FieldError::invalid_json("spec.resource", &value, "field is immutable"));
        }
        Ok(validation)
    }

    /// As kube's status strategy: a migration is not both Succeeded and Failed, and the resourceVersion it started
    /// at does not change once set.
    fn validate_status_update(&self, _resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
        let mut errors = Vec::new();
        if condition_true(obj, SUCCEEDED) && condition_true(obj, FAILED) {
            errors.push(FieldError::invalid(
                "status.conditions",
                "Succeeded and Failed",
                "a migration cannot both succeed and fail",
            ));
        }
        let (new, old) = (
            str_at(obj, "/status/resourceVersion"),
            str_at(old, "/status/resourceVersion"),
        );
        if !old.is_empty() && new != old {
            errors.push(FieldError::invalid(
                "status.resourceVersion",
                new,
                "field is immutable once set",
            ));
        }
        Ok(Validation::of_errors(errors))
    }
}

struct StorageVersionStrategy;

impl Strategy for StorageVersionStrategy {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_keeps_its_transition_time_until_its_status_changes() {
        let mut svm = json!({"metadata": {"name": "m", "generation": 2}});
        set_condition(&mut svm, RUNNING, true, "Migrating", "", "t1");
        set_condition(&mut svm, RUNNING, true, "Migrating", "half", "t2");
        assert_eq!(svm["status"]["conditions"][0]["lastTransitionTime"], "t1");
        assert_eq!(svm["status"]["conditions"][0]["message"], "half");
        assert_eq!(svm["status"]["conditions"][0]["observedGeneration"], 2);
        assert!(condition_true(&svm, RUNNING) && !finished(&svm));
        set_condition(&mut svm, RUNNING, false, "Done", "", "t3");
        set_condition(&mut svm, SUCCEEDED, true, "Done", "", "t3");
        assert_eq!(svm["status"]["conditions"][0]["lastTransitionTime"], "t3");
        assert_eq!(svm["status"]["conditions"].as_array().unwrap().len(), 2);
        assert!(finished(&svm));
    }

    #[test]
    fn the_migrated_resource_is_required_and_immutable() {
        let strategy = MigrationStrategy;
        let empty = json!({"spec": {"resource": {"group": "g"}}});
        let errors = strategy.validate(MIGRATIONS, &empty).unwrap().errors;
        assert_eq!(errors[0].field, "spec.resource.resource");
        let old = json!({"spec": {"resource": {"group": "g", "resource": "r"}}});
        let moved = json!({"spec": {"resource": {"group": "g", "resource": "s"}}});
        let errors = strategy.validate_update(MIGRATIONS, &moved, &old).unwrap().errors;
        assert_eq!(errors.len(), 1);
        assert!(
            errors[0].message.contains("field is immutable"),
            "{}",
            errors[0].message
        );
        assert!(strategy
            .validate_update(MIGRATIONS, &old, &old)
            .unwrap()
            .errors
            .is_empty());
    }

    #[test]
    fn a_status_neither_both_succeeds_and_fails_nor_moves_its_resource_version() {
        let strategy = MigrationStrategy;
        let old = json!({"status": {"resourceVersion": "5"}});
        let mut both = old.clone();
        set_condition(&mut both, SUCCEEDED, true, "x", "", "t");
        set_condition(&mut both, FAILED, true, "x", "", "t");
        let errors = strategy.validate_status_update(MIGRATIONS, &both, &old).unwrap().errors;
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "status.conditions");
        let moved = json!({"status": {"resourceVersion": "6"}});
        let errors = strategy
            .validate_status_update(MIGRATIONS, &moved, &old)
            .unwrap()
            .errors;
        assert_eq!(errors[0].field, "status.resourceVersion");
        let first = json!({"status": {}});
        assert!(strategy
            .validate_status_update(MIGRATIONS, &old, &first)
            .unwrap()
            .errors
            .is_empty());
    }

    #[test]
    fn storage_version_names() {
        assert_eq!(
            storage_version_name("wardle.example.com", "flunders"),
            "wardle.example.com.flunders"
        );
        assert_eq!(storage_version_name("", "pods"), "core.pods");
    }
}
