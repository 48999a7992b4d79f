//! The strategy of a resource type: what the generic store asks of a type on each write and read, as
//! k8s.io/apiserver's `rest.RESTCreateStrategy`, `RESTUpdateStrategy`, `RESTDeleteStrategy`, `TableConvertor` and
//! the selectable fields of `storage.AttrFunc` together. One trait over the host's types
//! ([`apimachinery::plugin`]): the built-in types (`builtin`) implement it directly, and a component through the
//! loader's adapter (a [`Component`](crate::plugin::Component)), whose calls cross into the sandbox.
//!
//! The defaults are those of a type with nothing to add: no defaults, any object valid, updates and deletes allowed,
//! a table of name and age, and no admission of its own.

use serde_json::Value;

use apimachinery::plugin::{AdmissionRequest, CreateStepError, PluginError, Validation};
use apimachinery::validation::NameRule;

/// The strategy of a resource type. `resource` is the plural of the resource a call is for (a plugin may serve
/// several); objects are in the storage version unless said otherwise.
pub trait Strategy: Send + Sync {
    /// Whether objects of a resource are stored (and so watched and cached); `false` for those the host computes
    /// on each read, which need no watch cache.
    fn stored(&self, _resource: &str) -> bool {
        true
    }

    /// Whether [`Strategy::decorate`] fills in fields of a resource's objects on every read; such objects are then
    /// always parsed, never written from their stored bytes or a remembered encoding.
    fn decorates(&self, _resource: &str) -> bool {
        false
    }

    /// Fills in computed fields (such as live usage in `status`) of an object about to be returned, in the request's
    /// version, as `genericregistry.Store.Decorator` does: on every object a get, list or watch returns, and on the
    /// object a write returns. Called only when [`Strategy::decorates`] says so.
    fn decorate(&self, _resource: &str, _obj: &mut Value) {}

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

    /// The finalizers a new object of a resource gets (after [`Self::prepare_for_create`], which may change only
    /// labels and annotations of the metadata), as a controller would add its own: the host's built-in types whose
    /// deletion waits for work of the host.
    fn initial_finalizers(&self, _resource: &str, _obj: &Value) -> Vec<&'static str> {
        Vec::new()
    }

    /// Validates a new object.
    fn validate(&self, _resource: &str, _obj: &Value) -> Result<Validation, PluginError> {
        Ok(Validation::valid())
    }

    /// Keeps what a client may not change on update.
    fn prepare_for_update(&self, _resource: &str, obj: &Value, _old: &Value) -> Result<Value, PluginError> {
        Ok(obj.clone())
    }

    /// Validates an update.
    fn validate_update(&self, resource: &str, obj: &Value, _old: &Value) -> Result<Validation, PluginError> {
        self.validate(resource, obj)
    }

    /// Keeps what a client may not change through `/status` (everything but the status).
    fn prepare_for_status_update(&self, _resource: &str, obj: &Value, _old: &Value) -> Result<Value, PluginError> {
        Ok(obj.clone())
    }

    /// Validates an update through `/status`.
    fn validate_status_update(&self, _resource: &str, _obj: &Value, _old: &Value) -> Result<Validation, PluginError> {
        Ok(Validation::valid())
    }

    /// Whether a PUT of a missing object creates it.
    fn allow_create_on_update(&self, _resource: &str) -> Result<bool, PluginError> {
        Ok(false)
    }

    /// Whether a PUT without a resourceVersion is accepted.
    fn allow_unconditional_update(&self, _resource: &str) -> Result<bool, PluginError> {
        Ok(true)
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
    fn get_attrs(&self, _resource: &str, _obj: &Value) -> Result<Vec<(String, String)>, PluginError> {
        Ok(Vec::new())
    }

    /// Converts an object to `version` of its group; called only for an object in another version (see
    /// [`Plugin::convert`](crate::plugin::Plugin::convert)).
    fn convert(&self, resource: &str, _obj: Value, version: &str) -> Result<Value, PluginError> {
        Err(PluginError::Failed {
            plugin: "builtin".into(),
            call: "convert",
            message: format!("{resource} cannot be converted to {version}"),
        })
    }

    /// The cells of an object's table row (in the storage version), the name's first, for a table in `version`.
    fn table_row(&self, resource: &str, version: &str, obj: &Value) -> Result<Vec<Value>, PluginError> {
        let name = obj.pointer("/metadata/name").cloned().unwrap_or(Value::Null);
        Ok(std::iter::once(name)
            .chain(self.table_cells(resource, version, obj))
            .collect())
    }

    /// The cells of a row after the name, one per column after the name column, for the default
    /// [`Self::table_row`].
    fn table_cells(&self, _resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        vec![creation_timestamp(obj)]
    }

    /// The type's own mutating admission of a write its rules match: the mutated object, if any.
    fn admit(&self, _request: &AdmissionRequest<'_>) -> Result<Option<Value>, PluginError> {
        Ok(None)
    }

    /// The type's own validating admission of a write its rules match: warnings.
    fn validate_admission(&self, _request: &AdmissionRequest<'_>) -> Result<Vec<String>, PluginError> {
        Ok(Vec::new())
    }

    /// The defaulting, the type's own mutating admission (`admission`, when given), the preparation and the
    /// validation of a create in one call, for a type whose exports say it can (`create_pipeline`). Returns the
    /// prepared object and its validation.
    fn create_in_one_call(
        &self,
        _resource: &str,
        _obj: &Value,
        _metadata: &Value,
        _clear_status: bool,
        _admission: Option<AdmissionRequest<'_>>,
    ) -> Result<(Value, Validation), CreateStepError> {
        Err(CreateStepError {
            error: PluginError::Failed {
                plugin: "builtin".into(),
                call: "create-pipeline.create",
                message: "the type does not create in one call".into(),
            },
            in_default: false,
        })
    }
}

/// The `metadata.creationTimestamp` of an object, as a table cell.
pub fn creation_timestamp(obj: &Value) -> Value {
    obj.pointer("/metadata/creationTimestamp")
        .cloned()
        .unwrap_or(Value::Null)
}
