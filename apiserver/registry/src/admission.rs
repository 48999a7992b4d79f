//! Admission: what every write passes between decoding and storage, as `k8s.io/apiserver/pkg/admission` runs its
//! chain, described once by [`Attributes`] (kube's `admission.Attributes`). The generic store runs it in this order:
//!
//! 1. **mutating admission of the plugins** whose rules match the write ([`mutate`]), in group order; of the
//!    metadata a plugin returns only labels and annotations are kept;
//! 2. the host's mutating steps, which belong to the store: managed fields, generated names, the strategy's
//!    preparation and validation;
//! 3. **validating admission of the plugins** whose rules match ([`validate`]); their warnings reach the client;
//! 4. **the host's validating admission** ([`HostAdmission`], [`validate_host`]), in the order they were added to
//!    the registry: namespace lifecycle ([`crate::namespaces`]: no new content in a terminating or
//!    missing namespace), then RBAC's privilege-escalation prevention (`authz::escalation`);
//! 5. the tenant's storage quota, reserved by the store as the object is written ([`crate::quota`]).
//!
//! Deletes run the plugins' validating admission only, as kube runs no mutating admission on a DELETE's object.

use serde_json::Value;

use crate::Apis;
use apimachinery::status::ApiError;
use authn::UserInfo;
use plugin_runtime::types::AdmissionRequest;
pub use plugin_runtime::types::Operation;
use plugin_runtime::types::PluginError;
use storage::BoxFuture;

/// One write, as every step of admission sees it.
#[derive(Clone, Copy)]
pub struct Attributes<'a> {
    /// What the write does.
    pub operation: Operation,
    /// The API group.
    pub group: &'a str,
    /// The version the request was made in (objects are in it).
    pub version: &'a str,
    /// The plural resource.
    pub resource: &'a str,
    /// The kind, for error messages.
    pub kind: &'a str,
    /// The subresource (`status`, `scale`), empty for the object itself.
    pub subresource: &'a str,
    /// The namespace of a namespaced object.
    pub namespace: Option<&'a str>,
    /// The object's name.
    pub name: &'a str,
    /// The object to be stored (`None` for a delete).
    pub object: Option<&'a Value>,
    /// The stored object, for updates and deletes.
    pub old: Option<&'a Value>,
    /// `dryRun=All`: admission must have no side effects.
    pub dry_run: bool,
    /// Who writes (the impersonated user, when impersonating).
    pub user: &'a UserInfo,
}

impl<'a> Attributes<'a> {
    /// The same write with another object and name (after a plugin's mutation).
    pub fn with_object(self, name: &'a str, object: &'a Value) -> Attributes<'a> {
        Attributes {
            name,
            object: Some(object),
            ..self
        }
    }

    /// What a plugin's admission is told: the write and the requesting user.
    pub fn plugin_request(&self) -> AdmissionRequest<'a> {
        AdmissionRequest {
            operation: self.operation,
            group: self.group,
            version: self.version,
            resource: self.resource,
            subresource: self.subresource,
            namespace: self.namespace,
            name: self.name,
            object: self.object,
            old: self.old,
            dry_run: self.dry_run,
            user: &self.user.name,
            groups: &self.user.groups,
        }
    }

    /// A plugin's failure in admission of this write, as the error to answer.
    fn failure(&self, e: PluginError, name: &str) -> ApiError {
        crate::errors::from_plugin(e, self.group, self.resource, self.kind, name)
    }
}

/// Runs the mutating admission of every plugin whose rules match the write on `object`, and returns the object
/// they made. Of a plugin's changes to metadata, only labels and annotations are kept.
pub fn mutate(plugins: &Apis, attributes: Attributes<'_>, mut object: Value) -> Result<Value, ApiError> {
    let operation = attributes.operation;
    for p in plugins.plugins() {
        if !p.exports.mutating
            || !p
                .mutating_rules
                .matches(attributes.group, attributes.resource, attributes.subresource, operation)
        {
            continue;
        }
        let name = apimachinery::object::name(&object).to_owned();
        let request = attributes.with_object(&name, &object).plugin_request();
        if let Some(mutated) = p.strategy.admit(&request).map_err(|e| attributes.failure(e, &name))? {
            object = apimachinery::object::keep_host_metadata(&object, mutated);
        }
    }
    Ok(object)
}

/// Runs the validating admission of every plugin whose rules match the write; their warnings are added to
/// `warnings`.
pub fn validate(plugins: &Apis, attributes: Attributes<'_>, warnings: &mut Vec<String>) -> Result<(), ApiError> {
    let operation = attributes.operation;
    for p in plugins.plugins() {
        if !p.exports.validating
            || !p
                .validating_rules
                .matches(attributes.group, attributes.resource, attributes.subresource, operation)
        {
            continue;
        }
        let request = attributes.plugin_request();
        warnings.extend(
            p.strategy
                .validate_admission(&request)
                .map_err(|e| attributes.failure(e, attributes.name))?,
        );
    }
    Ok(())
}

/// Runs the host's validating admission on a create or update, in order; the first refusal is the answer.
pub async fn validate_host(
    checks: &[std::sync::Arc<dyn HostAdmission>],
    attributes: Attributes<'_>,
) -> Result<(), ApiError> {
    for check in checks {
        check.admit(&attributes).await?;
    }
    Ok(())
}

/// One of the host's own validating admission checks (kube's compiled-in admission plugins).
pub trait HostAdmission: Send + Sync {
    /// Allows the write or refuses it with the error to answer.
    fn admit<'a>(&'a self, attributes: &'a Attributes<'a>) -> BoxFuture<'a, Result<(), ApiError>>;
}
