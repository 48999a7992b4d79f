//! Built-in resource types: served by the host itself through the same registry as plugin types, with a native
//! strategy in place of a component's exports (kube's compiled-in types). Discovery, OpenAPI, watch, tables and
//! storage treat them as any plugin's: each group is a [`Plugin`] whose `native` strategy answers the strategy calls.
//!
//! - [`rbac`]: Role, ClusterRole, RoleBinding, ClusterRoleBinding (`rbac.authorization.k8s.io/v1`);
//! - [`core`]: Namespace (core `v1`, served under `/api/v1`);
//! - [`reviews`]: the access reviews (`authorization.k8s.io/v1`, `authentication.k8s.io/v1`), created and answered,
//!   never stored;
//! - [`tenancy`]: Tenant (`tenancy.wasm-apiserver.io/v1alpha1`), the tenants and their usage, computed on each read
//!   and never stored;
//! - [`crd`]: the resource of a CustomResourceDefinition file in the plugin directory.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::apimachinery::validation::NameRule;
use crate::plugins::bindings::wasm_apiserver::plugin::types as wit;
use crate::plugins::plugin::{Plugin, PluginError};
use crate::plugins::scheme::{Column, ResourceInfo, VersionInfo};

pub mod core;
pub mod crd;
pub mod rbac;
pub mod reviews;
pub mod tenancy;

/// The strategy of a built-in type: the calls a plugin's strategy exports answer, made natively. Defaults are
/// those of a type with nothing to add (no defaults, any object valid, updates and deletes allowed).
pub trait NativeStrategy: Send + Sync {
    /// Whether objects of a resource are stored (and so watched and cached); `false` for those the host computes
    /// on each read, which need no watch cache.
    fn stored(&self, _resource: &str) -> bool {
        true
    }

    /// The rule for object names (`metadata.name`) of a resource.
    fn name_rule(&self, _resource: &str) -> NameRule {
        NameRule::Dns1123Subdomain
    }

    /// Sets defaults on a decoded object.
    fn default(&self, _resource: &str, obj: Value) -> Result<Value, PluginError> {
        Ok(obj)
    }

    /// Clears what a client may not set on create (such as status).
    fn prepare_for_create(&self, _resource: &str, obj: &Value) -> Result<Value, PluginError> {
        Ok(obj.clone())
    }

    /// Validates a new object.
    fn validate(&self, _resource: &str, _obj: &Value) -> Result<wit::Validation, PluginError> {
        Ok(valid())
    }

    /// Keeps what a client may not change on update.
    fn prepare_for_update(&self, _resource: &str, obj: &Value, _old: &Value) -> Result<Value, PluginError> {
        Ok(obj.clone())
    }

    /// Validates an update.
    fn validate_update(&self, resource: &str, obj: &Value, _old: &Value) -> Result<wit::Validation, PluginError> {
        self.validate(resource, obj)
    }

    /// Whether a PUT of a missing object creates it.
    fn allow_create_on_update(&self, _resource: &str) -> bool {
        false
    }

    /// Whether a PUT without a resourceVersion is accepted.
    fn allow_unconditional_update(&self, _resource: &str) -> bool {
        true
    }

    /// Whether an object may be deleted.
    fn validate_delete(&self, _resource: &str, _obj: &Value) -> Result<(), PluginError> {
        Ok(())
    }

    /// A graceful delete: the object to store in place of deleting it (marked for deletion, such as a namespace
    /// that turns Terminating until its controller empties it), or `None` to delete it at once. `now` is the
    /// RFC 3339 time of the request.
    fn graceful_delete(&self, _resource: &str, _obj: &Value, _now: &str) -> Option<Value> {
        None
    }

    /// Whether objects of `resource` are deleted by a controller of their own (as namespaces are, once their
    /// `spec.finalizers` are done) rather than by the store when their last `metadata.finalizers` entry goes.
    /// [`Self::graceful_delete`] marks them.
    fn finalizes_itself(&self, _resource: &str) -> bool {
        false
    }

    /// The selectable field values of an object, beyond `metadata.name` and `metadata.namespace`.
    fn get_attrs(&self, _resource: &str, _obj: &Value) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Converts an object to `version` of its group (only called for resources with several versions).
    fn convert(&self, resource: &str, _obj: Value, version: &str) -> Result<Value, PluginError> {
        Err(PluginError::Failed {
            plugin: "builtin".into(),
            call: "convert",
            message: format!("{resource} cannot be converted to {version}"),
        })
    }

    /// The table cells of an object (in the storage version) after its name, one per column after the name column,
    /// for a table in `version`.
    fn table_row(&self, _resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        vec![creation_timestamp(obj)]
    }
}

/// A validation with no errors or warnings.
pub fn valid() -> wit::Validation {
    wit::Validation {
        errors: Vec::new(),
        warnings: Vec::new(),
    }
}

/// A field error.
pub fn field_error(kind: wit::FieldErrorKind, field: impl Into<String>, detail: impl Into<String>) -> wit::FieldError {
    wit::FieldError {
        kind,
        field: field.into(),
        detail: detail.into(),
    }
}

/// The `metadata.creationTimestamp` of an object, as a table cell.
pub fn creation_timestamp(obj: &Value) -> Value {
    obj.pointer("/metadata/creationTimestamp")
        .cloned()
        .unwrap_or(Value::Null)
}

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

/// The built-in groups, as plugins with native strategies: served whatever the plugin directory holds.
pub fn plugins() -> Vec<Arc<Plugin>> {
    vec![
        Arc::new(core::plugin()),
        Arc::new(rbac::plugin()),
        Arc::new(reviews::authorization_plugin()),
        Arc::new(reviews::authentication_plugin()),
        Arc::new(tenancy::plugin()),
    ]
}

/// The string at a JSON pointer, or "".
pub fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}
