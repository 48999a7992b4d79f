//! The strategy of a type the host serves natively (a built-in group, a CustomResourceDefinition file): the calls
//! a plugin's strategy exports, answered by host code. A plugin made with
//! [`Plugin::native`](super::plugin::Plugin::native) calls it where a component's exports would be called. The
//! built-in types ([`crate::builtin`]) implement it; it sits here, with the plugin it backs, so that the plugin
//! layer does not import them.

use serde_json::Value;

use super::plugin::PluginError;
use super::types::Validation;
use apimachinery::validation::NameRule;

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
    fn validate(&self, _resource: &str, _obj: &Value) -> Result<Validation, PluginError> {
        Ok(valid())
    }

    /// Keeps what a client may not change on update.
    fn prepare_for_update(&self, _resource: &str, obj: &Value, _old: &Value) -> Result<Value, PluginError> {
        Ok(obj.clone())
    }

    /// Validates an update.
    fn validate_update(&self, resource: &str, obj: &Value, _old: &Value) -> Result<Validation, PluginError> {
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
pub fn valid() -> Validation {
    Validation::valid()
}

/// The `metadata.creationTimestamp` of an object, as a table cell.
pub fn creation_timestamp(obj: &Value) -> Value {
    obj.pointer("/metadata/creationTimestamp")
        .cloned()
        .unwrap_or(Value::Null)
}
