//! Built-in resource types: served by the host itself through the same registry as plugin types, with a native
//! strategy in place of a component's exports (kube's compiled-in types). Discovery, OpenAPI, watch, tables and
//! storage treat them as any plugin's: each group is a [`Plugin`] whose `native` strategy
//! ([`Strategy`](rest::strategy::Strategy)) answers the strategy calls.
//!
//! - [`rbac`]: Role, ClusterRole, RoleBinding, ClusterRoleBinding (`rbac.authorization.k8s.io/v1`);
//! - [`core`]: Namespace, ConfigMap and Secret (core `v1`, served under `/api/v1`);
//! - [`coordination`]: Lease (`coordination.k8s.io/v1`), for leader election;
//! - [`reviews`]: the access reviews (`authorization.k8s.io/v1`, `authentication.k8s.io/v1`), created and answered,
//!   never stored;
//! - [`crd`]: the resource of a CustomResourceDefinition file in the plugin directory;
//! - [`admissionregistration`]: the cluster's admission webhooks and ValidatingAdmissionPolicies
//!   (`admissionregistration.k8s.io/v1`);
//! - [`flowcontrol`]: API Priority and Fairness's FlowSchemas and PriorityLevelConfigurations
//!   (`flowcontrol.apiserver.k8s.io/v1`), served by the root tenant;
//! - [`storage_versions`]: StorageVersionMigration (`storagemigration.k8s.io/v1beta1`) and the StorageVersion of
//!   each plugin resource (`internal.apiserver.k8s.io/v1alpha1`, read-only).

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

use std::sync::{Arc, OnceLock};

use serde_json::{json, Value};

use apimachinery::scheme::{Column, ResourceInfo, VersionInfo};
use apimachinery::status::ApiError;
use rest::plugin::Plugin;

pub mod admissionregistration;
pub mod coordination;
pub mod core;
pub mod crd;
pub mod flowcontrol;
pub mod rbac;
pub mod reviews;
pub mod storage_versions;

/// A table column.
pub fn column(name: &str, type_: &str, format: &str, description: &str, priority: i32) -> Column {
    Column {
        name: name.into(),
        type_: type_.into(),
        format: format.into(),
        description: description.into(),
        priority,
        shows_age: type_ == "date" && name.eq_ignore_ascii_case("age"),
    }
}

/// The name column every table starts with.
pub fn name_column() -> Column {
    column(
        "Name",
        "string",
        "name",
        "Name must be unique within a namespace. Cannot be updated. More info: \
         https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        0,
    )
}

/// The "Age" column of kube's default table.
pub fn age_column() -> Column {
    column(
        "Age",
        "date",
        "",
        "CreationTimestamp is a timestamp representing the server time when this object was created.",
        0,
    )
}

/// A resource served in one version, with its schema.
pub fn resource(
    kind: &str,
    plural: &str,
    short_names: &[&str],
    namespaced: bool,
    version: &str,
    schema: Value,
) -> ResourceInfo {
    ResourceInfo {
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: Vec::new(),
        namespaced,
        versions: vec![VersionInfo {
            name: version.into(),
            served: true,
            storage: true,
            deprecated: false,
            deprecation_warning: None,
            schema: schema.into(),
            subresources: Default::default(),
            columns: None,
        }],
        verbs: Vec::new(),
        defaults: Default::default(),
    }
}

/// A schema of a string.
pub fn string_schema(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// A schema of a list of strings.
pub fn strings_schema(description: &str) -> Value {
    json!({"type": "array", "items": {"type": "string"}, "description": description})
}

/// A source of computed objects for the resources it serves (such as a tenant's view of itself, `tenants::api`):
/// resources whose `get` and `list` the endpoints answer from it (`endpoints::computed`) instead of from storage.
pub trait Computed: Send + Sync {
    /// Whether it computes this resource's objects.
    fn serves(&self, group: &str, resource: &str) -> bool;

    /// Every object (cluster-scoped) in the storage version.
    fn list(&self) -> Vec<Value>;

    /// One object by name, or 404 NotFound.
    fn get(&self, name: &str) -> Result<Value, ApiError>;
}

/// The built-in groups, as plugins with native strategies: served whatever the plugin directory holds. (The host's
/// own groups that need more than a registry, such as the tenants', are added by whoever builds the registry.)
pub fn plugins() -> Vec<Arc<Plugin>> {
    static CORE: Shared = OnceLock::new();
    static RBAC: Shared = OnceLock::new();
    static AUTHORIZATION: Shared = OnceLock::new();
    static AUTHENTICATION: Shared = OnceLock::new();
    static MIGRATION: Shared = OnceLock::new();
    static STORAGE_VERSION: Shared = OnceLock::new();
    static ADMISSION: Shared = OnceLock::new();
    static COORDINATION: Shared = OnceLock::new();
    vec![
        Arc::new(share(core::plugin(), &CORE)),
        Arc::new(share(rbac::plugin(), &RBAC)),
        Arc::new(share(reviews::authorization_plugin(), &AUTHORIZATION)),
        Arc::new(share(reviews::authentication_plugin(), &AUTHENTICATION)),
        Arc::new(share(storage_versions::migration_plugin(), &MIGRATION)),
        Arc::new(share(storage_versions::storage_version_plugin(), &STORAGE_VERSION)),
        Arc::new(share(admissionregistration::plugin(), &ADMISSION)),
        Arc::new(share(coordination::plugin(), &COORDINATION)),
    ]
}

/// The resources of a built-in group (their schemas, columns and verbs), made once and shared by every registry.
pub type Shared = OnceLock<Vec<Arc<ResourceInfo>>>;

/// `plugin` with the resources `shared` holds (its own the first time): each registry builds its built-in groups
/// (their strategies and memos are its own), and without this each held a copy of the same schemas, tens of KiB a
/// tenant.
pub fn share(mut plugin: Plugin, shared: &'static Shared) -> Plugin {
    plugin.group.resources = shared.get_or_init(|| plugin.group.resources.clone()).clone();
    plugin
}

/// The exports of a stored, writable built-in resource: create, update, delete, list (and watch).
pub fn writable() -> apimachinery::scheme::Exports {
    apimachinery::scheme::Exports {
        create: true,
        update: true,
        delete: true,
        lister: true,
        ..Default::default()
    }
}

/// Sets `field` of `obj` to `value` where it is missing or null (a default).
pub(crate) fn set_default(obj: &mut Value, field: &str, value: Value) {
    if obj.get(field).is_none_or(Value::is_null) {
        obj[field] = value;
    }
}

/// The strings of a JSON list (its other items left out; none when it is not a list).
pub fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// [`strs`], owned.
pub fn owned_strings(v: Option<&Value>) -> Vec<String> {
    strs(v).into_iter().map(str::to_owned).collect()
}

/// The string at a JSON pointer, or "".
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}
