//! The generic store of one resource: every verb's logic between the REST handlers and storage, calling the plugin's
//! strategy at the same points as `k8s.io/apiserver`'s `genericregistry.Store`.
//!
//! Objects arrive and leave in the request's version; they are stored in the resource's storage version, without
//! `metadata.resourceVersion` (it is the storage revision, set on the way out).
//!
//! This module holds what the verbs share (conversion, admission, metadata validation); each verb is in its own
//! file, as k8s.io/apiserver splits its registry and handlers: [`create`], [`update`] (update and patch),
//! [`delete`] (and finalizers), [`list`] (get, list, pages) and [`watch`].

use std::sync::Arc;

use serde_json::{json, Value};

use super::Apis;
use admission::Attributes;
use apimachinery::fields::FieldSelector;
use apimachinery::labels::LabelSelector;
use apimachinery::object::{self, meta_mut, meta_str};
use apimachinery::objectmeta as metav;
use apimachinery::plugin::Operation;
use apimachinery::plugin::PluginError;
use apimachinery::plugin::{AdmissionRequest, Validation};
use apimachinery::scheme::ResourceInfo;
use apimachinery::status::{ApiError, Cause};
use rest::plugin::Plugin;
use schema::{cel, fieldmanager, structural};
use storage::cacher::Cacher;
use storage::keys::object_key;
use storage::{KeyValue, Revision, Storage, StorageError};

mod apply;
mod create;
mod delete;
mod list;
mod scale;
mod update;
mod watch;

pub use list::{decode_continue, encode_continue, SharedPage, WireItem, WireList};
pub use watch::{StoredEvent, WatchEvents, WatchItem};

/// The part of an object a request addresses: the object itself or one of its subresources.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Subresource {
    /// The object (`<plural>/<name>`).
    #[default]
    None,
    /// `<plural>/<name>/status`: only `status` is written.
    Status,
    /// `<plural>/<name>/scale`: the replicas, as an `autoscaling/v1` `Scale`.
    Scale,
    /// `<plural>/<name>/finalize` (a namespace's): the object with its `spec.finalizers`, its status kept.
    Finalize,
    /// `<plural>/<name>/token` (a service account's): a TokenRequest, answered with a token; nothing is stored.
    Token,
}

impl Subresource {
    /// The subresource's name in a path, admission request or RBAC rule; empty for the object itself.
    pub fn as_str(self) -> &'static str {
        match self {
            Subresource::None => "",
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Token => "token",
        }
    }
}

pub use crate::write_options::{FieldValidation, WriteOptions};

/// Options of a list or watch.
#[derive(Default)]
pub struct ListParams {
    /// The label selector.
    pub labels: Option<LabelSelector>,
    /// The field selector.
    pub fields: Option<FieldSelector>,
    /// Page size (0: all).
    pub limit: usize,
    /// The continue token of the previous page.
    pub continue_token: Option<String>,
    /// The `resourceVersion` parameter.
    pub resource_version: Option<String>,
    /// The `resourceVersionMatch` parameter.
    pub resource_version_match: Option<String>,
    /// The `sendInitialEvents` parameter (watch).
    pub send_initial_events: Option<bool>,
    /// The `allowWatchBookmarks` parameter (watch).
    pub allow_bookmarks: bool,
}

/// A list result.
pub struct ListOut {
    /// The items in the request's version.
    pub items: Vec<Value>,
    /// The list's resourceVersion.
    pub resource_version: i64,
    /// The continue token for the next page.
    pub continue_token: Option<String>,
    /// How many items remain after this page (when paginating).
    pub remaining: Option<u64>,
}

/// A watch event for the client.
pub struct WatchOut {
    /// ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.
    pub kind: &'static str,
    /// The object (in the request's version) or a Status.
    pub object: Value,
}

/// A write's result: the object and the warnings for the client.
pub struct Written {
    /// The object as stored, in the request's version.
    pub object: Value,
    /// Warnings (unknown fields, plugin warnings, deprecation).
    pub warnings: Vec<String>,
    /// For update: whether the object was created.
    pub created: bool,
}

/// The store of one served resource, built once when its plugin is (re)loaded, as kube's `APIInstaller` builds one
/// registry `Store` per resource: what every request to the resource shares ([`crate::Apis::store`]).
pub struct ResourceStorage {
    /// The plugin serving the resource.
    pub plugin: Arc<Plugin>,
    /// The resource.
    pub resource: Arc<ResourceInfo>,
    /// The storage.
    pub storage: Arc<dyn Storage>,
    /// The admission chain its writes pass.
    pub admission: Arc<admission::Chain>,
    /// The tenant's storage quota.
    pub quota: Arc<crate::quota::Quota>,
    /// Whether a create is made in one call when the plugin exports `create-pipeline` (`--create-pipeline`).
    pub create_pipeline: bool,
    /// The garbage collector told of the writes (none: writes are not followed by garbage collection).
    pub gc: Option<Arc<crate::gc::GarbageCollector>>,
    /// The ResourceQuota controller told of deletions (none: not told).
    pub replenish: Option<Arc<crate::resource_quotas::Replenish>>,
    /// Whether the storage version is among the resource's recorded stored versions (checked before the first
    /// write: `crate::migration`).
    pub stored_version: crate::migration::StoredVersion,
}

/// A served resource's store as one request uses it: the [`ResourceStorage`] (its fields read through this) and the
/// request's scope: its version, user, subresource and field manager, with the set of plugins (for admission) and
/// the resource's watch cache as they are when the request starts.
pub struct ResourceStore {
    /// The resource's store.
    pub installed: Arc<ResourceStorage>,
    /// All served plugins (for admission), the set `installed` belongs to.
    pub apis: Arc<Apis>,
    /// The resource's watch cache, if any: watches and reads that need not be the latest are served from it.
    pub cache: Option<Arc<Cacher>>,
    /// The request's version.
    pub version: String,
    /// Who makes the request.
    pub user: authn::UserInfo,
    /// The subresource the request addresses.
    pub subresource: Subresource,
    /// The field manager the request's writes are recorded for in `managedFields`.
    pub field_manager: String,
}

impl std::ops::Deref for ResourceStore {
    type Target = ResourceStorage;

    fn deref(&self) -> &ResourceStorage {
        &self.installed
    }
}

/// The storage key and revision of an object of `resource` read from storage, from its metadata (name, namespace,
/// resourceVersion): what the plugin's memo of conversions and table rows is keyed by.
pub fn stored_identity(group: &str, resource: &ResourceInfo, obj: &Value) -> Option<(String, Revision)> {
    let meta = obj.get("metadata")?;
    let name = meta.get("name")?.as_str()?;
    let namespace = meta
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|_| resource.namespaced);
    let revision = meta.get("resourceVersion")?.as_str()?.parse().ok()?;
    Some((object_key(group, &resource.plural, namespace, name), revision))
}

fn plugin_failure(e: PluginError, s: &ResourceStore, name: &str) -> ApiError {
    e.into_api_error(&s.plugin.group.group, &s.resource.plural, &s.resource.kind, name)
}

/// The resource's versions, for the field manager: fields recorded in one version are compared in it.
impl fieldmanager::Versions for ResourceStore {
    fn schema(&self, api_version: &str) -> Option<&Value> {
        self.version_of(api_version).map(|v| &*v.schema)
    }

    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, String> {
        let version = self.version_of(api_version).ok_or("the version is not served")?;
        self.plugin
            .convert(self.plural(), obj.clone(), &version.name)
            .map_err(|e| e.to_string())
    }
}

/// The error for a write whose fields could not be recorded: conflicts of an apply (409 with a
/// `FieldManagerConflict` cause per field), or malformed `managedFields` (400).
fn field_manager_error(e: fieldmanager::Error) -> ApiError {
    match e {
        fieldmanager::Error::Invalid(why) => ApiError::bad_request(why),
        fieldmanager::Error::Conversion(why) => ApiError::internal(format!("failed to track managed fields: {why}")),
        fieldmanager::Error::Conflicts(conflicts) => {
            let mut err = ApiError::new(409, "Conflict", fieldmanager::Conflict::message(&conflicts));
            err.causes = conflicts
                .into_iter()
                .map(|c| Cause {
                    reason: "FieldManagerConflict".into(),
                    message: format!("conflict with {}", c.manager),
                    field: c.field,
                })
                .collect();
            err
        }
    }
}

impl ResourceStore {
    /// Which fields this request's writes may own.
    fn ownership_scope(&self) -> fieldmanager::Scope {
        match self.subresource {
            Subresource::Status => fieldmanager::Scope::StatusOnly,
            _ if self.resource.subresources(&self.version).status => fieldmanager::Scope::AllButStatus,
            _ => fieldmanager::Scope::All,
        }
    }

    /// Records this request's write of `obj` (over `old`; none for a create) in its `managedFields`.
    fn track_fields(&self, old: Option<&Value>, obj: &mut Value) -> Result<(), ApiError> {
        let api_version = self.api_version();
        let time = object::now_rfc3339();
        let manager = fieldmanager::Manager {
            name: &self.field_manager,
            api_version: &api_version,
            subresource: self.subresource.as_str(),
            time: &time,
        };
        fieldmanager::update(self, old, obj, &manager, self.ownership_scope()).map_err(field_manager_error)
    }

    /// The served version of an `apiVersion` of this resource's group.
    fn version_of(&self, api_version: &str) -> Option<&apimachinery::scheme::VersionInfo> {
        let version = match self.group() {
            "" => api_version,
            group => api_version.strip_prefix(group)?.strip_prefix('/')?,
        };
        self.resource.served_version(version)
    }

    fn group(&self) -> &str {
        &self.plugin.group.group
    }

    fn plural(&self) -> &str {
        &self.resource.plural
    }

    /// `group/version` of the request.
    pub fn api_version(&self) -> String {
        apimachinery::scheme::group_version(self.group(), &self.version)
    }

    /// Takes room in the tenant's quota for a write of `name` (the host's own writes are never refused).
    fn reserve(
        &self,
        key: &str,
        name: &str,
        objects: i64,
        bytes: i64,
    ) -> Result<crate::quota::Reservation<'_>, ApiError> {
        let exempt = self.user.name == authn::SYSTEM_APISERVER;
        self.quota
            .reserve(key, self.group(), self.plural(), name, objects, bytes, exempt)
    }

    fn storage_err(&self, e: StorageError, name: &str) -> ApiError {
        crate::errors::from_storage(e, self.group(), self.plural(), name)
    }

    /// Parses a stored value into the request's version, with its resourceVersion.
    fn parse_stored(&self, kv: &KeyValue) -> Result<Value, ApiError> {
        let obj: Value = serde_json::from_slice(&kv.value)
            .map_err(|e| ApiError::internal(format!("stored object {} is not JSON: {e}", kv.key)))?;
        Ok(self.as_read(obj, kv.mod_revision))
    }

    /// A stored object as a read gives it: with its resourceVersion and the schema's defaults.
    fn as_read(&self, mut obj: Value, revision: storage::Revision) -> Value {
        object::set_resource_version(&mut obj, revision);
        self.schema_defaults(&mut obj);
        obj
    }

    /// `obj`, read from storage under `key` with its resourceVersion set to `revision`, in the request's version.
    /// Conversions of stored objects are remembered by the plugin (a stored revision never changes), so lists and
    /// watches in another version than the storage version convert each object once, not once per request; the
    /// stored form is remembered too, for [`ResourceStore::stored_form`].
    /// The object is decorated ([`ResourceStore::decorated`]) after the conversion, which is remembered undecorated.
    fn stored_to_request_version(&self, key: &str, revision: Revision, obj: Value) -> Result<Value, ApiError> {
        if obj.get("apiVersion").and_then(Value::as_str) == Some(self.api_version().as_str()) {
            return Ok(self.decorated(obj));
        }
        let memo = &self.plugin.conversions;
        memo.get_or_insert_with(key, revision, &self.version, || {
            memo.insert(key, revision, self.resource.storage_version(), &obj);
            self.to_request_version(obj)
        })
        .map(|obj| self.decorated(obj))
    }

    /// Whether the strategy fills in fields of this resource's objects on every read ([`rest::strategy::Strategy::decorate`]).
    pub fn decorates(&self) -> bool {
        self.plugin.strategy.decorates(self.plural())
    }

    /// An object about to be returned (in the request's version), with the fields the strategy computes filled in.
    pub fn decorated(&self, mut obj: Value) -> Value {
        if self.decorates() {
            self.plugin.strategy.decorate(self.plural(), &mut obj);
        }
        obj
    }

    /// A write's answer: its object (in the request's version) decorated, as a read would give it. Every write
    /// makes its answer here, once, so that a verb built on another (an apply that creates, an update that creates)
    /// answers as that one does.
    pub(super) fn written(&self, object: Value, warnings: Vec<String>, created: bool) -> Written {
        Written {
            object: self.decorated(object),
            warnings,
            created,
        }
    }

    /// A stored object (in the storage version) as a delete answers with it: in the request's version, decorated.
    pub(super) fn answer(&self, stored: Value) -> Result<Value, ApiError> {
        self.to_request_version(stored).map(|obj| self.decorated(obj))
    }

    /// Whether reads may write objects from their stored bytes (or a remembered encoding) without parsing them: not
    /// when schema defaults apply on read, nor when the strategy decorates them.
    pub(super) fn reads_from_bytes(&self) -> bool {
        !self.defaults_on_read() && !self.decorates()
    }

    /// An object read from storage (a get, list or watch result in the request's version) in the storage version,
    /// as table rows are made from: remembered, as its conversion to the request's version is.
    pub fn stored_form(&self, obj: &Value) -> Result<Value, ApiError> {
        let storage_version = self.resource.storage_version();
        let stored_api_version = format!("{}/{storage_version}", self.group());
        if obj.get("apiVersion").and_then(Value::as_str) == Some(stored_api_version.as_str()) {
            return Ok(obj.clone());
        }
        let convert = || {
            self.plugin
                .convert(self.plural(), obj.clone(), storage_version)
                .map_err(|e| plugin_failure(e, self, object::name(obj)))
        };
        // A decorated object is not remembered: its decorations change without a new revision.
        match stored_identity(self.group(), &self.resource, obj).filter(|_| !self.decorates()) {
            Some((key, revision)) => {
                self.plugin
                    .conversions
                    .get_or_insert_with(&key, revision, storage_version, convert)
            }
            None => convert(),
        }
    }

    fn to_request_version(&self, obj: Value) -> Result<Value, ApiError> {
        let name = object::name(&obj).to_string();
        self.plugin
            .convert(self.plural(), obj, &self.version)
            .map_err(|e| plugin_failure(e, self, &name))
    }

    fn to_storage_version(&self, obj: Value) -> Result<Value, ApiError> {
        let name = object::name(&obj).to_string();
        let mut stored = self
            .plugin
            .convert(self.plural(), obj, self.resource.storage_version())
            .map_err(|e| plugin_failure(e, self, &name))?;
        structural::canonical_numbers(&mut stored);
        Ok(stored)
    }

    fn schema(&self) -> &Value {
        &self
            .resource
            .served_version(&self.version)
            .unwrap_or(&self.resource.versions[0])
            .schema
    }

    /// Checks apiVersion/kind, unknown fields and the namespace of a decoded body, and applies the schema's defaults
    /// (not yet the plugin's defaulter).
    fn decode_body(
        &self,
        mut obj: Value,
        namespace: Option<&str>,
        opts: WriteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let expected = self.api_version();
        match obj.get("apiVersion").and_then(Value::as_str) {
            Some(v) if v == expected => {}
            None => obj["apiVersion"] = json!(expected),
            Some(v) => {
                return Err(ApiError::bad_request(format!(
                    "the API version in the data ({v}) does not match the expected API version ({expected})"
                )))
            }
        }
        match obj.get("kind").and_then(Value::as_str) {
            Some(k) if k == self.resource.kind => {}
            None => obj["kind"] = json!(self.resource.kind),
            Some(k) => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the data ({k}) does not match the expected kind ({})",
                    self.resource.kind
                )))
            }
        }
        self.prune_unknown(&mut obj, opts, warnings)?;
        if let Some(e) = schema::embedded_type_error(&obj, self.schema()) {
            let kind = &self.resource.kind;
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{}\" cannot be handled as a {kind}: {e}",
                self.version
            )));
        }
        self.set_namespace(&mut obj, namespace)?;
        // The schema's defaults first (as kube's decoding of a custom resource), then the plugin's defaulter.
        self.schema_defaults(&mut obj);
        Ok(obj)
    }

    /// Checks apiVersion/kind, unknown fields and the namespace of a decoded body, and applies defaults.
    fn admit_body(
        &self,
        obj: Value,
        namespace: Option<&str>,
        opts: WriteOptions,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let obj = self.decode_body(obj, namespace, opts, warnings)?;
        self.plugin
            .strategy
            .default(self.plural(), obj)
            .map_err(|e| plugin_failure(e, self, ""))
    }

    /// Drops the fields the schema does not know, refusing or reporting them as `fieldValidation` asks.
    fn prune_unknown(&self, obj: &mut Value, opts: WriteOptions, warnings: &mut Vec<String>) -> Result<(), ApiError> {
        let unknown = schema::prune(obj, self.schema());
        if !unknown.is_empty() {
            match opts.field_validation {
                FieldValidation::Strict => return Err(ApiError::bad_request(schema::strict_error(&unknown))),
                FieldValidation::Warn => warnings.extend(unknown.iter().map(|f| format!("unknown field \"{f}\""))),
                FieldValidation::Ignore => {}
            }
        }
        Ok(())
    }

    /// Sets the request's namespace on a namespaced object (a different one is refused), removes it from a
    /// cluster-scoped one.
    fn set_namespace(&self, obj: &mut Value, namespace: Option<&str>) -> Result<(), ApiError> {
        if self.resource.namespaced {
            let ns = namespace.unwrap_or("");
            match meta_str(obj, "namespace") {
                Some(n) if !n.is_empty() && n != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => {
                    meta_mut(obj).insert("namespace".into(), json!(ns));
                }
            }
        } else {
            meta_mut(obj).remove("namespace");
        }
        Ok(())
    }

    /// Applies the schema's `default`s (and drops the nulls it does not allow), when it has any: on decode and on
    /// every read from storage, as kube defaults custom resources.
    fn schema_defaults(&self, obj: &mut Value) {
        if !self.defaults_on_read() {
            return;
        }
        // The schema of the object's own version (a stored object is in the storage version).
        let version = obj
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.rsplit('/').next())
            .and_then(|v| self.resource.versions.iter().find(|x| x.name == v));
        let schema: &Value = version.map_or_else(|| self.schema(), |v| v.schema.as_ref());
        structural::prune_nulls(schema, obj);
        structural::default(schema, obj);
    }

    /// Whether any version's schema has defaults, applied to every object read from storage.
    fn defaults_on_read(&self) -> bool {
        self.resource.has_defaults()
    }

    /// The errors of an object against its schema: its structure (types, bounds, formats, enums, list types...) and
    /// its CEL rules (`x-kubernetes-validations`, transition rules against `old`), as kube validates a custom
    /// resource before anything else. `errs` holds the metadata errors and receives these.
    fn schema_errors(&self, obj: &Value, old: Option<&Value>, errs: &mut Vec<apimachinery::FieldError>) {
        let schema = self.schema();
        errs.extend(structural::validate_update(schema, obj, old));
        let rules = cel::validate_after(schema, obj, old, errs);
        errs.extend(rules);
    }

    /// Validates ObjectMeta. Names follow the DNS-1123 subdomain rule, as for CRDs (sample-apiserver itself only
    /// checks path segments; a stricter default is what kubectl users expect of any resource).
    fn validate_meta(&self, obj: &Value) -> Result<(), ApiError> {
        let mut errs = self.meta_errors(obj);
        self.schema_errors(obj, None, &mut errs);
        self.invalid_meta(obj, errs)
    }

    /// The errors of an object's metadata on its own.
    fn meta_errors(&self, obj: &Value) -> Vec<apimachinery::FieldError> {
        metav::validate_object_meta(
            obj.get("metadata").unwrap_or(&Value::Null),
            self.resource.namespaced,
            self.plugin.strategy.name_rule(self.plural()),
        )
    }

    /// Validates an update's metadata as kube's validateCommonFields does: the new object's alone, then against the
    /// stored one (immutable fields, no new finalizers while the object is being deleted), in one 422.
    fn validate_meta_update(&self, obj: &Value, old: &Value) -> Result<(), ApiError> {
        let mut errs = self.meta_errors(obj);
        let (new_meta, old_meta) = (
            obj.get("metadata").unwrap_or(&Value::Null),
            old.get("metadata").unwrap_or(&Value::Null),
        );
        for e in metav::validate_object_meta_update(new_meta, old_meta) {
            // Both check labels and annotations: one cause each.
            if !errs.iter().any(|x| x.field == e.field && x.message == e.message) {
                errs.push(e);
            }
        }
        self.schema_errors(obj, Some(old), &mut errs);
        self.invalid_meta(obj, errs)
    }

    /// A 422 with one cause per metadata error, unless there are none.
    fn invalid_meta(&self, obj: &Value, errs: Vec<apimachinery::FieldError>) -> Result<(), ApiError> {
        if errs.is_empty() {
            return Ok(());
        }
        let causes = errs.into_iter().map(Cause::from).collect();
        Err(ApiError::invalid(
            self.group(),
            &self.resource.kind,
            object::name(obj),
            causes,
        ))
    }

    fn check_validation(&self, v: Validation, name: &str, warnings: &mut Vec<String>) -> Result<(), ApiError> {
        warnings.extend(v.warnings);
        if v.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                self.group(),
                &self.resource.kind,
                name,
                v.errors.into_iter().map(Into::into).collect(),
            ))
        }
    }

    /// The admission attributes of a write of this resource by this request's user.
    fn attributes<'a>(
        &'a self,
        operation: Operation,
        namespace: Option<&'a str>,
        name: &'a str,
        object: Option<&'a Value>,
        old: Option<&'a Value>,
        dry_run: bool,
    ) -> Attributes<'a> {
        let write = AdmissionRequest {
            operation,
            group: self.group(),
            version: &self.version,
            resource: self.plural(),
            subresource: self.subresource.as_str(),
            namespace,
            name,
            object,
            old,
            dry_run,
            user: &self.user,
        };
        Attributes::new(write, &self.user, &self.resource, &self.plugin, self.apis.served())
    }

    /// Admits the create of a subresource whose object is not the resource's and is not stored (a service account's
    /// TokenRequest), as kube's `TokenREST.Create` runs admission: the mutating checks, then the validating ones, on
    /// that object; the object as admission left it.
    pub async fn admit_subresource_create(
        &self,
        namespace: Option<&str>,
        name: &str,
        object: Value,
        dry_run: bool,
        warnings: &mut Vec<String>,
    ) -> Result<Value, ApiError> {
        let attributes = self.attributes(Operation::Create, namespace, name, Some(&object), None, dry_run);
        let object = self.admission.mutate(attributes, object.clone(), warnings).await?;
        let attributes = self.attributes(Operation::Create, namespace, name, Some(&object), None, dry_run);
        self.admission.validate(attributes, warnings).await?;
        Ok(object)
    }

    /// Tells the garbage collector of a write: the object before (`None`: created) and after (`None`: removed); and
    /// the quota controller of a removal.
    fn observe(&self, old: Option<&Value>, new: Option<&Value>) {
        if let (Some(replenish), Some(old), None) = (&self.replenish, old, new) {
            if let Some(namespace) = meta_str(old, "namespace").filter(|ns| !ns.is_empty()) {
                replenish.note(namespace);
            }
        }
        if let Some(gc) = &self.gc {
            gc.enqueue(crate::gc::refs::work_for_write(
                &self.apis,
                self.group(),
                self.plural(),
                old,
                new,
            ));
        }
    }

    /// Records the storage version among the resource's stored versions before the first write in it (a plugin's
    /// resources; the built-in types have one version).
    async fn record_storage_version(&self) -> Result<(), ApiError> {
        if self.plugin.is_builtin() {
            return Ok(());
        }
        let version = self.resource.storage_version();
        self.installed
            .stored_version
            .ensure(self.storage.as_ref(), self.group(), self.plural(), version)
            .await
            .map_err(|e| self.storage_err(e, ""))
    }

    /// Tells the watch cache of a write, so that this host's later reads through it see the write.
    fn note_write(&self, revision: Revision) {
        if let Some(cache) = &self.cache {
            cache.note_write(revision);
        }
    }
}
