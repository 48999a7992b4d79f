//! Admission: what every write passes between decoding and storage, as `k8s.io/apiserver/pkg/admission` runs its
//! chain, described once by [`Attributes`] (kube's `admission.Attributes`). The generic store runs it in this order:
//!
//! 1. **mutating admission of the plugins** whose rules match the write ([`mutate`]), in group order; of the
//!    metadata a plugin returns only labels and annotations are kept;
//! 2. **the host's mutating admission** ([`HostAdmission::mutate`], [`mutate_host`]): the cluster's mutating
//!    admission webhooks, when any applies after the namespace lifecycle check (kube's first mutating plugin);
//! 3. the host's mutating steps, which belong to the store: managed fields, generated names, the strategy's
//!    preparation and validation;
//! 4. **validating admission of the plugins** whose rules match ([`validate`]); their warnings reach the client;
//! 5. **the host's validating admission** ([`HostAdmission`], [`validate_host`]), in the order they were added to
//!    the registry: namespace lifecycle ([`crate::namespaces`]: no new content in a terminating or
//!    missing namespace), RBAC's privilege-escalation prevention (`authz::escalation`), then the cluster's
//!    ValidatingAdmissionPolicies and validating admission webhooks (the `admission` crate); their warnings reach
//!    the client;
//! 6. the tenant's storage quota, reserved by the store as the object is written ([`crate::quota`]).
//!
//! Deletes run the plugins' validating admission only, as kube runs no mutating admission on a DELETE's object.

use serde_json::Value;

use crate::Apis;
use apimachinery::plugin::AdmissionRequest;
pub use apimachinery::plugin::Operation;
use apimachinery::plugin::PluginError;
use apimachinery::scheme::ResourceInfo;
use apimachinery::status::ApiError;
use authn::UserInfo;
use rest::plugin::Plugin;
use storage::BoxFuture;

/// One write, as every step of admission sees it (kube's `admission.Attributes`): the write as a plugin's admission
/// is told it ([`AdmissionRequest`], whose fields read through this), with the kind and the whole user (uid and
/// extra too) for the host's own steps.
#[derive(Clone, Copy)]
pub struct Attributes<'a> {
    /// The write: operation, group, version (objects are in it), resource, subresource, namespace, name, the object
    /// to be stored (`None` for a delete), the stored one (updates and deletes), dry run, and the user's name and
    /// groups.
    pub write: AdmissionRequest<'a>,
    /// The kind, for error messages.
    pub kind: &'a str,
    /// Who writes (the impersonated user, when impersonating).
    pub user: &'a UserInfo,
    /// The resource written: its versions, scope and schema.
    pub info: &'a ResourceInfo,
    /// The plugin serving it, which converts its objects between versions.
    pub plugin: &'a Plugin,
}

impl<'a> std::ops::Deref for Attributes<'a> {
    type Target = AdmissionRequest<'a>;

    fn deref(&self) -> &AdmissionRequest<'a> {
        &self.write
    }
}

impl<'a> Attributes<'a> {
    /// The write of `user`, of an object of resource `info` served by `plugin`.
    pub fn new(
        write: AdmissionRequest<'a>,
        user: &'a UserInfo,
        info: &'a ResourceInfo,
        plugin: &'a Plugin,
    ) -> Attributes<'a> {
        Attributes {
            write,
            kind: &info.kind,
            user,
            info,
            plugin,
        }
    }

    /// The same write with another object and name (after a plugin's mutation).
    pub fn with_object(self, name: &'a str, object: &'a Value) -> Attributes<'a> {
        Attributes {
            write: AdmissionRequest {
                name,
                object: Some(object),
                ..self.write
            },
            ..self
        }
    }

    /// What a plugin's admission is told.
    pub fn plugin_request(&self) -> AdmissionRequest<'a> {
        self.write
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

/// Runs the host's validating admission on a write, in order; the first refusal is the answer. Their warnings are
/// added to `warnings`.
pub async fn validate_host(
    checks: &[std::sync::Arc<dyn HostAdmission>],
    attributes: Attributes<'_>,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    for check in checks {
        warnings.extend(check.admit(&attributes).await?);
    }
    Ok(())
}

/// The validating admission of a write: the plugins' ([`validate`]), then the host's ([`validate_host`]), in the
/// span of its trace.
pub async fn validate_all(
    plugins: &Apis,
    checks: &[std::sync::Arc<dyn HostAdmission>],
    attributes: Attributes<'_>,
    warnings: &mut Vec<String>,
) -> Result<(), ApiError> {
    let span = tracing::info_span!(target: component_base::trace::TARGET, "admission", phase = "validating");
    let checked = async {
        validate(plugins, attributes, warnings)?;
        validate_host(checks, attributes, warnings).await
    };
    tracing::Instrument::instrument(checked, span).await
}

/// Whether one of the host's checks may mutate the write (then the plugin's one-call create does not apply: the
/// mutation must see the defaulted object before its preparation).
pub async fn host_mutates(checks: &[std::sync::Arc<dyn HostAdmission>], attributes: Attributes<'_>) -> bool {
    for check in checks {
        if check.mutates(&attributes).await {
            return true;
        }
    }
    false
}

/// Runs the host's mutating admission on `object`, in order, and returns the object they made; their warnings are
/// added to `warnings`. Of their changes, the object's identity (apiVersion, kind, name, namespace) and the host's
/// own metadata (uid, resourceVersion, timestamps, generation, managed fields) are not kept.
pub async fn mutate_host(
    checks: &[std::sync::Arc<dyn HostAdmission>],
    attributes: Attributes<'_>,
    mut object: Value,
    warnings: &mut Vec<String>,
) -> Result<Value, ApiError> {
    let mut preceded = false;
    for check in checks {
        if !check.mutates(&attributes).await {
            continue;
        }
        let name = apimachinery::object::name(&object).to_owned();
        let current = attributes.with_object(&name, &object);
        if !std::mem::replace(&mut preceded, true) {
            // Their warnings are given once, by the validating phase.
            for first in checks.iter().filter(|c| c.precedes_mutation()) {
                first.admit(&current).await?;
            }
        }
        let mutated = check.mutate(&current, object.clone()).await?;
        warnings.extend(mutated.warnings);
        object = keep_identity(&object, mutated.object);
    }
    Ok(object)
}

/// `after` with the identity and the host's metadata of `before`.
fn keep_identity(before: &Value, mut after: Value) -> Value {
    const HOSTS: [&str; 9] = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "managedFields",
    ];
    if !after.is_object() {
        return after;
    }
    if !after.get("metadata").is_some_and(Value::is_object) {
        after["metadata"] = serde_json::json!({});
    }
    let empty = serde_json::Map::new();
    let old = before.get("metadata").and_then(Value::as_object).unwrap_or(&empty);
    if let Some(meta) = after["metadata"].as_object_mut() {
        for field in HOSTS {
            match old.get(field) {
                Some(v) => meta.insert(field.to_owned(), v.clone()),
                None => meta.remove(field),
            };
        }
    }
    for field in ["apiVersion", "kind"] {
        if let Some(v) = before.get(field) {
            after[field] = v.clone();
        }
    }
    after
}

/// The object a mutating check made, and its warnings.
pub struct Mutated {
    /// The object after the mutation.
    pub object: Value,
    /// Warnings for the client.
    pub warnings: Vec<String>,
}

/// One of the host's own admission checks (kube's compiled-in admission plugins): validating, and optionally
/// mutating (kube's `MutationInterface`).
pub trait HostAdmission: Send + Sync {
    /// Allows the write, with warnings for the client, or refuses it with the error to answer.
    fn admit<'a>(&'a self, attributes: &'a Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>>;

    /// Whether [`HostAdmission::admit`] also runs before the host's mutating admission, when any of it applies (as
    /// kube's NamespaceLifecycle, a validating and mutating plugin, runs first of the mutating ones); no by default.
    fn precedes_mutation(&self) -> bool {
        false
    }

    /// Whether [`HostAdmission::mutate`] may change this write (kube's `Handles`); none by default.
    fn mutates<'a>(&'a self, _attributes: &'a Attributes<'a>) -> BoxFuture<'a, bool> {
        Box::pin(async { false })
    }

    /// The write's object after this check's mutation (`attributes.object` is `object`).
    fn mutate<'a>(
        &'a self,
        _attributes: &'a Attributes<'a>,
        object: Value,
    ) -> BoxFuture<'a, Result<Mutated, ApiError>> {
        Box::pin(async move {
            Ok(Mutated {
                object,
                warnings: Vec::new(),
            })
        })
    }
}
