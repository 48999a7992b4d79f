//! The generic store of one resource: every verb's logic between the REST handlers and storage, calling the plugin's
//! strategy at the same points as `k8s.io/apiserver`'s `genericregistry.Store`.
//!
//! Objects arrive and leave in the request's version; they are stored in the resource's storage version, without
//! `metadata.resourceVersion` (it is the storage revision, set on the way out).

use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use super::object::{self, meta_mut, meta_str};
use super::read::{ReadAt, WatchFrom};
use super::{key_prefix, object_key, schema, strategy, Apis};
use crate::apimachinery::fields::FieldSelector;
use crate::apimachinery::labels::LabelSelector;
use crate::apimachinery::objectmeta as metav;
use crate::apimachinery::validation::NameRule;
use crate::endpoints::status::{causes_from, ApiError, Cause};
use crate::plugins::bindings::wasm_apiserver::plugin::types as wit;
use crate::plugins::plugin::{Plugin, PluginError};
use crate::plugins::scheme::ResourceInfo;
use crate::storage::cacher::Cacher;
use crate::storage::{KeyValue, ListOptions, ListResult, Revision, Storage, StorageError, WatchEvent, WatchStream};

/// How unknown fields are treated (`?fieldValidation=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them and warn (the default).
    Warn,
    /// Fail the request.
    Strict,
}

/// Options common to writes.
#[derive(Clone, Copy, Debug)]
pub struct WriteOptions {
    /// `dryRun=All`: do everything but store.
    pub dry_run: bool,
    /// Unknown-field handling.
    pub field_validation: FieldValidation,
}

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

/// The store of one resource, for one request.
pub struct ResourceStore {
    /// The plugin serving the resource.
    pub plugin: Arc<Plugin>,
    /// The resource.
    pub resource: ResourceInfo,
    /// The request's version.
    pub version: String,
    /// The storage.
    pub storage: Arc<dyn Storage>,
    /// The resource's watch cache, if any: watches and reads that need not be the latest are served from it.
    pub cache: Option<Arc<Cacher>>,
    /// All served plugins (for admission).
    pub apis: Arc<Apis>,
    /// Who makes the request.
    pub user: crate::authn::UserInfo,
    /// The host's admission checks, run after the plugins'.
    pub admission: Arc<Vec<Arc<dyn super::admission::HostAdmission>>>,
    /// The tenant's storage quota.
    pub quota: Arc<super::quota::Quota>,
}

/// An object with finalizers that is not yet being deleted, marked for deletion as kube's BeforeDelete marks it: a
/// deletion timestamp, a grace period of 0 (what a custom resource gets), and the generation bumped. `None` when the
/// object can go at once (no finalizers) or is already marked.
fn mark_for_deletion(stored: &Value) -> Option<Value> {
    if object::finalizers(stored).is_empty() || meta_str(stored, "deletionTimestamp").is_some() {
        return None;
    }
    let mut marked = stored.clone();
    let m = meta_mut(&mut marked);
    m.insert("deletionTimestamp".into(), json!(object::now_rfc3339()));
    m.insert("deletionGracePeriodSeconds".into(), json!(0));
    if let Some(g) = m.get("generation").and_then(Value::as_i64) {
        m.insert("generation".into(), json!(g + 1));
    }
    Some(marked)
}

/// How long before a watch's deadline its last BOOKMARK is sent (kube's cacher: 2 s).
const PRE_TIMEOUT_BOOKMARK: std::time::Duration = std::time::Duration::from_secs(2);

/// The host's part of kube's BeforeUpdate, on an update's object after mutating admission: the generation is the
/// stored one (the host bumps it when the spec changes), a missing uid or resourceVersion is the stored one, the
/// creation timestamp cannot be changed (silently, as kube), nor can a deletion timestamp or grace period once set.
/// Other changes to immutable fields (a different uid, a deletion timestamp the stored object lacks) are left for
/// the metadata validation to refuse.
fn before_update(obj: &mut Value, old: &Value, revision: Revision) {
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let m = meta_mut(obj);
    match old_meta.get("generation") {
        Some(g) => m.insert("generation".into(), g.clone()),
        None => m.remove("generation"),
    };
    if m.get("uid").and_then(Value::as_str).is_none_or(str::is_empty) {
        if let Some(uid) = old_meta.get("uid") {
            m.insert("uid".into(), uid.clone());
        }
    }
    if m.get("resourceVersion")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        m.insert("resourceVersion".into(), json!(revision.to_string()));
    }
    for field in ["creationTimestamp", "deletionTimestamp"] {
        if let Some(v) = old_meta.get(field).filter(|v| !v.is_null()) {
            m.insert(field.into(), v.clone());
        }
    }
    if let Some(v) = old_meta.get("deletionGracePeriodSeconds").filter(|v| !v.is_null()) {
        if m.get("deletionGracePeriodSeconds").is_none_or(Value::is_null) {
            m.insert("deletionGracePeriodSeconds".into(), v.clone());
        }
    }
    m.remove("selfLink");
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

fn pe(e: PluginError, s: &ResourceStore, name: &str) -> ApiError {
    ApiError::from_plugin(e, &s.plugin.group.group, &s.resource.plural, &s.resource.kind, name)
}

impl ResourceStore {
    fn group(&self) -> &str {
        &self.plugin.group.group
    }

    fn plural(&self) -> &str {
        &self.resource.plural
    }

    /// `group/version` of the request.
    pub fn api_version(&self) -> String {
        crate::plugins::scheme::group_version(self.group(), &self.version)
    }

    /// Takes room in the tenant's quota for a write of `name` (the host's own writes are never refused).
    fn reserve(&self, name: &str, objects: i64, bytes: i64) -> Result<super::quota::Reservation<'_>, ApiError> {
        let exempt = self.user.name == crate::authz::bootstrap::SYSTEM_APISERVER;
        self.quota
            .reserve(self.group(), self.plural(), name, objects, bytes, exempt)
    }

    fn storage_err(&self, e: StorageError, name: &str) -> ApiError {
        ApiError::from_storage(e, self.group(), self.plural(), name)
    }

    /// Parses a stored value into the request's version, with its resourceVersion.
    fn parse_stored(&self, kv: &KeyValue) -> Result<Value, ApiError> {
        let mut obj: Value = serde_json::from_slice(&kv.value)
            .map_err(|e| ApiError::internal(format!("stored object {} is not JSON: {e}", kv.key)))?;
        object::set_resource_version(&mut obj, kv.mod_revision);
        Ok(obj)
    }

    /// `obj`, read from storage under `key` with its resourceVersion set to `revision`, in the request's version.
    /// Conversions of stored objects are remembered by the plugin (a stored revision never changes), so lists and
    /// watches in another version than the storage version convert each object once, not once per request; the
    /// stored form is remembered too, for [`ResourceStore::stored_form`].
    fn stored_to_request_version(&self, key: &str, revision: Revision, obj: Value) -> Result<Value, ApiError> {
        if obj.get("apiVersion").and_then(Value::as_str) == Some(self.api_version().as_str()) {
            return Ok(obj);
        }
        let memo = &self.plugin.conversions;
        memo.get_or_insert_with(key, revision, &self.version, || {
            memo.insert(key, revision, self.resource.storage_version(), &obj);
            self.to_request_version(obj)
        })
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
            strategy::convert(&self.plugin, self.plural(), obj.clone(), storage_version)
                .map_err(|e| pe(e, self, object::name(obj)))
        };
        match stored_identity(self.group(), &self.resource, obj) {
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
        strategy::convert(&self.plugin, self.plural(), obj, &self.version).map_err(|e| pe(e, self, &name))
    }

    fn to_storage_version(&self, obj: Value) -> Result<Value, ApiError> {
        let name = object::name(&obj).to_string();
        strategy::convert(&self.plugin, self.plural(), obj, self.resource.storage_version())
            .map_err(|e| pe(e, self, &name))
    }

    fn schema(&self) -> &Value {
        &self
            .resource
            .served_version(&self.version)
            .unwrap_or(&self.resource.versions[0])
            .schema
    }

    /// Checks apiVersion/kind, unknown fields and the namespace of a decoded body, and applies defaults.
    fn admit_body(
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
        let unknown = schema::prune(&mut obj, self.schema());
        if !unknown.is_empty() {
            match opts.field_validation {
                FieldValidation::Strict => return Err(ApiError::bad_request(schema::strict_error(&unknown))),
                FieldValidation::Warn => warnings.extend(unknown.iter().map(|f| format!("unknown field \"{f}\""))),
                FieldValidation::Ignore => {}
            }
        }
        if self.resource.namespaced {
            let ns = namespace.unwrap_or("");
            match meta_str(&obj, "namespace") {
                Some(n) if !n.is_empty() && n != ns => {
                    return Err(ApiError::bad_request(
                        "the namespace of the provided object does not match the namespace sent on the request",
                    ))
                }
                _ => {
                    meta_mut(&mut obj).insert("namespace".into(), json!(ns));
                }
            }
        } else {
            meta_mut(&mut obj).remove("namespace");
        }
        strategy::default(&self.plugin, self.plural(), obj).map_err(|e| pe(e, self, ""))
    }

    /// Validates ObjectMeta. Names follow the DNS-1123 subdomain rule, as for CRDs (sample-apiserver itself only
    /// checks path segments; a stricter default is what kubectl users expect of any resource).
    fn validate_meta(&self, obj: &Value) -> Result<(), ApiError> {
        self.invalid_meta(obj, self.meta_errors(obj))
    }

    /// The errors of an object's metadata on its own.
    fn meta_errors(&self, obj: &Value) -> Vec<crate::apimachinery::FieldError> {
        metav::validate_object_meta(
            obj.get("metadata").unwrap_or(&Value::Null),
            self.resource.namespaced,
            self.plugin
                .native
                .as_ref()
                .map_or(NameRule::Dns1123Subdomain, |n| n.name_rule(self.plural())),
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
        self.invalid_meta(obj, errs)
    }

    /// A 422 with one cause per metadata error, unless there are none.
    fn invalid_meta(&self, obj: &Value, errs: Vec<crate::apimachinery::FieldError>) -> Result<(), ApiError> {
        if errs.is_empty() {
            return Ok(());
        }
        let causes = errs
            .into_iter()
            .map(|e| Cause {
                reason: e.reason.as_str().to_string(),
                message: e.message,
                field: e.field,
            })
            .collect();
        Err(ApiError::invalid(
            self.group(),
            &self.resource.kind,
            object::name(obj),
            causes,
        ))
    }

    fn check_validation(&self, v: wit::Validation, name: &str, warnings: &mut Vec<String>) -> Result<(), ApiError> {
        warnings.extend(v.warnings);
        if v.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                self.group(),
                &self.resource.kind,
                name,
                causes_from(&v.errors),
            ))
        }
    }

    fn admission_request(
        &self,
        op: wit::Operation,
        namespace: Option<&str>,
        name: &str,
        obj: Option<&Value>,
        old: Option<&Value>,
        dry_run: bool,
    ) -> wit::AdmissionRequest {
        wit::AdmissionRequest {
            operation: op,
            group: self.group().to_string(),
            version: self.version.clone(),
            resource: self.plural().to_string(),
            subresource: String::new(),
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
            object: obj.map(Value::to_string),
            old_object: old.map(Value::to_string),
            dry_run,
            user: wit::UserInfo {
                name: "system:anonymous".into(),
                groups: vec!["system:unauthenticated".into()],
            },
        }
    }

    /// Runs the host's admission checks on a write.
    async fn host_admission(
        &self,
        operation: super::admission::Operation,
        namespace: Option<&str>,
        name: &str,
        object: &Value,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        if self.admission.is_empty() {
            return Ok(());
        }
        let request = super::admission::Request {
            operation,
            group: self.group(),
            resource: self.plural(),
            namespace,
            name,
            object,
            old,
            user: &self.user,
        };
        for check in self.admission.iter() {
            check.admit(&request).await?;
        }
        Ok(())
    }

    /// Runs the mutating admission of every plugin whose rules match.
    fn mutate(
        &self,
        op: wit::Operation,
        namespace: Option<&str>,
        mut obj: Value,
        old: Option<&Value>,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        for p in self.apis.plugins() {
            if !p.exports.mutating || !p.mutating_rules.matches(self.group(), self.plural(), op) {
                continue;
            }
            let name = object::name(&obj).to_string();
            let req = self.admission_request(op, namespace, &name, Some(&obj), old, dry_run);
            if let Some(mutated) = strategy::admit(p, &req).map_err(|e| pe(e, self, &name))? {
                obj = Self::keep_host_metadata(&obj, mutated);
            }
        }
        Ok(obj)
    }

    /// Runs the validating admission of every plugin whose rules match.
    #[allow(clippy::too_many_arguments)]
    fn validate_admission(
        &self,
        op: wit::Operation,
        namespace: Option<&str>,
        name: &str,
        obj: Option<&Value>,
        old: Option<&Value>,
        dry_run: bool,
        warnings: &mut Vec<String>,
    ) -> Result<(), ApiError> {
        for p in self.apis.plugins() {
            if !p.exports.validating || !p.validating_rules.matches(self.group(), self.plural(), op) {
                continue;
            }
            let req = self.admission_request(op, namespace, name, obj, old, dry_run);
            warnings.extend(strategy::validate_admission(p, &req).map_err(|e| pe(e, self, name))?);
        }
        Ok(())
    }

    /// Reads one object in the request's version, at least as fresh as `at` asks (the latest state comes from
    /// storage, older ones from the watch cache).
    pub async fn get(&self, namespace: Option<&str>, name: &str, at: ReadAt) -> Result<Value, ApiError> {
        let key = object_key(self.group(), self.plural(), namespace, name);
        let kv = match (&self.cache, at) {
            (Some(cache), ReadAt::Any) => cache.get(&key, 0).await,
            (Some(cache), ReadAt::NotOlderThan(n) | ReadAt::Exact(n)) => cache.get(&key, n).await,
            (None, ReadAt::NotOlderThan(n) | ReadAt::Exact(n)) => self.storage_get_not_older_than(&key, n).await,
            _ => self.storage.get(&key).await,
        }
        .map_err(|e| self.storage_err(e, name))?;
        let kv = kv.ok_or_else(|| ApiError::not_found(self.group(), self.plural(), name))?;
        let obj = self.parse_stored(&kv)?;
        self.stored_to_request_version(&kv.key, kv.mod_revision, obj)
    }

    /// Reads `key` from storage, failing when storage has not reached revision `n` yet.
    async fn storage_get_not_older_than(&self, key: &str, n: Revision) -> Result<Option<KeyValue>, StorageError> {
        let current = self.storage.current_revision().await?;
        if current < n {
            return Err(StorageError::TooLargeRevision { requested: n, current });
        }
        self.storage.get(key).await
    }

    /// Tells the watch cache of a write, so that this host's later reads through it see the write.
    fn note_write(&self, revision: Revision) {
        if let Some(cache) = &self.cache {
            cache.note_write(revision);
        }
    }

    /// Creates an object from a decoded body.
    pub async fn create(&self, namespace: Option<&str>, body: Value, opts: WriteOptions) -> Result<Written, ApiError> {
        let mut warnings = Vec::new();
        let mut obj = self.admit_body(body, namespace, opts, &mut warnings)?;
        if meta_str(&obj, "resourceVersion").is_some_and(|rv| !rv.is_empty()) {
            return Err(ApiError::bad_request(
                "resourceVersion should not be set on objects to be created",
            ));
        }
        let generate = object::name(&obj).is_empty() && meta_str(&obj, "generateName").is_some_and(|g| !g.is_empty());
        if generate {
            let base = meta_str(&obj, "generateName").unwrap_or("").to_string();
            meta_mut(&mut obj).insert("name".into(), json!(crate::apimachinery::generate_name(&base)));
        }
        {
            let m = meta_mut(&mut obj);
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(object::now_rfc3339()));
            m.insert("generation".into(), json!(1));
            m.remove("deletionTimestamp");
            m.remove("deletionGracePeriodSeconds");
            m.remove("selfLink");
        }
        let obj = self.mutate(wit::Operation::Create, namespace, obj, None, opts.dry_run)?;
        let name = object::name(&obj).to_string();
        let prepared =
            strategy::prepare_for_create(&self.plugin, self.plural(), &obj).map_err(|e| pe(e, self, &name))?;
        let obj = Self::keep_host_metadata(&obj, prepared);
        // As kube's BeforeCreate: metadata is validated after mutating admission and the strategy's preparation.
        self.validate_meta(&obj)?;
        let validation = strategy::validate(&self.plugin, self.plural(), &obj).map_err(|e| pe(e, self, &name))?;
        self.check_validation(validation, &name, &mut warnings)?;
        self.validate_admission(
            wit::Operation::Create,
            namespace,
            &name,
            Some(&obj),
            None,
            opts.dry_run,
            &mut warnings,
        )?;
        self.host_admission(super::admission::Operation::Create, namespace, &name, &obj, None)
            .await?;
        let mut stored = self.to_storage_version(obj)?;
        object::strip_resource_version(&mut stored);
        if opts.dry_run {
            return Ok(Written {
                object: self.to_request_version(stored)?,
                warnings,
                created: true,
            });
        }
        let key = object_key(self.group(), self.plural(), namespace, &name);
        let value = stored.to_string().into_bytes();
        let room = self.reserve(&name, 1, value.len() as i64)?;
        let kv = self
            .storage
            .create(&key, value)
            .await
            .map_err(|e| self.storage_err(e, &name))?;
        room.commit();
        self.note_write(kv.mod_revision);
        let out = self.parse_stored(&kv)?;
        Ok(Written {
            object: self.to_request_version(out)?,
            warnings,
            created: true,
        })
    }

    /// Plugins may change only labels and annotations of metadata: the rest of `after`'s metadata is restored from
    /// `before`, the object the plugin was given.
    fn keep_host_metadata(before: &Value, mut after: Value) -> Value {
        let mut meta = before
            .get("metadata")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for field in ["labels", "annotations"] {
            match after.get("metadata").and_then(|m| m.get(field)) {
                Some(v) if !v.is_null() => meta.insert(field.to_string(), v.clone()),
                _ => meta.remove(field),
            };
        }
        after["metadata"] = Value::Object(meta);
        for field in ["apiVersion", "kind"] {
            if let Some(v) = before.get(field) {
                after[field] = v.clone();
            }
        }
        after
    }

    /// Replaces an object (PUT), or creates it when the plugin allows create-on-update.
    pub async fn update(
        &self,
        namespace: Option<&str>,
        name: &str,
        body: Value,
        opts: WriteOptions,
    ) -> Result<Written, ApiError> {
        let mut warnings = Vec::new();
        let obj = self.admit_body(body, namespace, opts, &mut warnings)?;
        if object::name(&obj) != name {
            let causes = vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!(
                    "Invalid value: \"{}\": must match the name in the URL ({name})",
                    object::name(&obj)
                ),
                field: "metadata.name".into(),
            }];
            return Err(ApiError::invalid(self.group(), &self.resource.kind, name, causes));
        }
        let rv = meta_str(&obj, "resourceVersion")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let key = object_key(self.group(), self.plural(), namespace, name);
        let current = self.storage.get(&key).await.map_err(|e| self.storage_err(e, name))?;
        let Some(current) = current else {
            let allowed =
                strategy::allow_create_on_update(&self.plugin, self.plural()).map_err(|e| pe(e, self, name))?;
            if !allowed {
                return Err(ApiError::not_found(self.group(), self.plural(), name));
            }
            let mut obj = obj;
            meta_mut(&mut obj).remove("resourceVersion");
            let mut w = self.create(namespace, obj, opts).await?;
            w.warnings.splice(0..0, warnings);
            return Ok(w);
        };
        let expected = match rv {
            Some(rv) => rv
                .parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
            None => {
                let allowed =
                    strategy::allow_unconditional_update(&self.plugin, self.plural()).map_err(|e| pe(e, self, name))?;
                if !allowed {
                    let causes = vec![Cause {
                        reason: "FieldValueInvalid".into(),
                        message: "Invalid value: 0: must be specified for an update".into(),
                        field: "metadata.resourceVersion".into(),
                    }];
                    return Err(ApiError::invalid(self.group(), &self.resource.kind, name, causes));
                }
                current.mod_revision
            }
        };
        if expected != current.mod_revision {
            return Err(ApiError::modified(self.group(), self.plural(), name));
        }
        let old = self.to_request_version(self.parse_stored(&current)?)?;
        self.finish_update(namespace, name, obj, old, &current, opts, warnings)
            .await
    }

    /// The shared tail of update and patch: host metadata, plugin strategy, admission, storage CAS.
    #[allow(clippy::too_many_arguments)]
    async fn finish_update(
        &self,
        namespace: Option<&str>,
        name: &str,
        obj: Value,
        old: Value,
        current: &KeyValue,
        opts: WriteOptions,
        mut warnings: Vec<String>,
    ) -> Result<Written, ApiError> {
        let expected = current.mod_revision;
        let mut obj = self.mutate(wit::Operation::Update, namespace, obj, Some(&old), opts.dry_run)?;
        before_update(&mut obj, &old, expected);
        let prepared =
            strategy::prepare_for_update(&self.plugin, self.plural(), &obj, &old).map_err(|e| pe(e, self, name))?;
        let mut obj = Self::keep_host_metadata(&obj, prepared);
        self.validate_meta_update(&obj, &old)?;
        let validation =
            strategy::validate_update(&self.plugin, self.plural(), &obj, &old).map_err(|e| pe(e, self, name))?;
        self.check_validation(validation, name, &mut warnings)?;
        self.validate_admission(
            wit::Operation::Update,
            namespace,
            name,
            Some(&obj),
            Some(&old),
            opts.dry_run,
            &mut warnings,
        )?;
        self.host_admission(super::admission::Operation::Update, namespace, name, &obj, Some(&old))
            .await?;
        if object::spec_part(&obj) != object::spec_part(&old) {
            let generation = old
                .get("metadata")
                .and_then(|m| m.get("generation"))
                .and_then(Value::as_i64)
                .unwrap_or(1);
            meta_mut(&mut obj).insert("generation".into(), json!(generation + 1));
        }
        let mut stored = self.to_storage_version(obj)?;
        object::strip_resource_version(&mut stored);
        if opts.dry_run {
            let mut out = self.to_request_version(stored)?;
            object::set_resource_version(&mut out, expected);
            return Ok(Written {
                object: out,
                warnings,
                created: false,
            });
        }
        let key = object_key(self.group(), self.plural(), namespace, name);
        let value = stored.to_string().into_bytes();
        if value == current.value {
            // Nothing changed: nothing is written, and the resourceVersion stays (as kube's GuaranteedUpdate).
            let out = self.parse_stored(current)?;
            return Ok(Written {
                object: self.to_request_version(out)?,
                warnings,
                created: false,
            });
        }
        let room = self.reserve(name, 0, value.len() as i64 - current.value.len() as i64)?;
        let kv = self
            .storage
            .update(&key, value, expected)
            .await
            .map_err(|e| self.storage_err(e, name))?;
        room.commit();
        self.note_write(kv.mod_revision);
        let out = self.parse_stored(&kv)?;
        if self.finalized(&out) {
            // The last finalizer of an object being deleted is gone: the object goes (watchers see MODIFIED, then
            // DELETED), as kube's Store.Update does. A write in between (a finalizer added back) keeps it.
            match self.storage.delete(&key, Some(kv.mod_revision)).await {
                Ok((_, revision)) => {
                    self.quota.record(-1, -(kv.value.len() as i64));
                    self.note_write(revision);
                }
                Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {}
                Err(e) => return Err(self.storage_err(e, name)),
            }
        }
        Ok(Written {
            object: self.to_request_version(out)?,
            warnings,
            created: false,
        })
    }

    /// Whether a stored object is being deleted and waits for no finalizer: it is then removed. Namespaces wait for
    /// their controller instead (their `spec.finalizers`), which removes them itself.
    fn finalized(&self, stored: &Value) -> bool {
        let meta = stored.get("metadata");
        let deleting = meta
            .and_then(|m| m.get("deletionTimestamp"))
            .is_some_and(|t| !t.is_null());
        deleting
            && object::finalizers(stored).is_empty()
            && !self
                .plugin
                .native
                .as_ref()
                .is_some_and(|n| n.finalizes_itself(self.plural()))
    }

    /// Applies a patch to the current object and updates it, retrying on conflicts unless the patch names a
    /// resourceVersion.
    pub async fn patch(
        &self,
        namespace: Option<&str>,
        name: &str,
        apply: impl Fn(&Value) -> Result<Value, ApiError>,
        opts: WriteOptions,
    ) -> Result<Written, ApiError> {
        let key = object_key(self.group(), self.plural(), namespace, name);
        let mut attempts = 0;
        loop {
            attempts += 1;
            let current = self.storage.get(&key).await.map_err(|e| self.storage_err(e, name))?;
            let current = current.ok_or_else(|| ApiError::not_found(self.group(), self.plural(), name))?;
            let old = self.to_request_version(self.parse_stored(&current)?)?;
            let patched = apply(&old)?;
            if !patched.is_object() {
                return Err(ApiError::bad_request("the patched object is not an object"));
            }
            let mut warnings = Vec::new();
            let obj = self.admit_body(patched, namespace, opts, &mut warnings)?;
            if object::name(&obj) != name {
                return Err(ApiError::bad_request("the patch may not change metadata.name"));
            }
            let pinned =
                meta_str(&obj, "resourceVersion").filter(|s| !s.is_empty()) != meta_str(&old, "resourceVersion");
            let expected = match meta_str(&obj, "resourceVersion").filter(|s| !s.is_empty()) {
                Some(rv) if pinned => rv
                    .parse::<i64>()
                    .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
                _ => current.mod_revision,
            };
            if expected != current.mod_revision {
                return Err(ApiError::modified(self.group(), self.plural(), name));
            }
            match self
                .finish_update(namespace, name, obj, old, &current, opts, warnings)
                .await
            {
                Err(e) if e.reason == "Conflict" && !pinned && attempts < 5 => continue,
                other => return other,
            }
        }
    }

    /// Deletes an object, if its uid and resourceVersion match the preconditions given. Returns the deleted object.
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        precondition_uid: Option<&str>,
        precondition_rv: Option<&str>,
        dry_run: bool,
    ) -> Result<Value, ApiError> {
        let key = object_key(self.group(), self.plural(), namespace, name);
        let current = self.storage.get(&key).await.map_err(|e| self.storage_err(e, name))?;
        let current = current.ok_or_else(|| ApiError::not_found(self.group(), self.plural(), name))?;
        let stored = self.parse_stored(&current)?;
        if let Some(uid) = precondition_uid {
            if meta_str(&stored, "uid") != Some(uid) {
                return Err(ApiError::conflict(
                    self.group(),
                    self.plural(),
                    name,
                    &format!(
                        "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                        meta_str(&stored, "uid").unwrap_or("")
                    ),
                ));
            }
        }
        if let Some(rv) = precondition_rv {
            if rv != current.mod_revision.to_string() {
                return Err(ApiError::conflict(
                    self.group(),
                    self.plural(),
                    name,
                    &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    current.mod_revision
                ),
                ));
            }
        }
        strategy::validate_delete(&self.plugin, self.plural(), &stored).map_err(|e| pe(e, self, name))?;
        // A built-in type may mark the object for deletion instead (a namespace turning Terminating).
        let marked = match self.plugin.native.as_ref() {
            Some(n) if n.finalizes_itself(self.plural()) => {
                n.graceful_delete(self.plural(), &stored, &object::now_rfc3339())
            }
            _ => mark_for_deletion(&stored),
        };
        if marked.is_none()
            && meta_str(&stored, "deletionTimestamp").is_some()
            && !object::finalizers(&stored).is_empty()
        {
            // Already being deleted, waiting for its finalizers: kube answers with the object as it is.
            return self.to_request_version(stored);
        }
        let old = self.to_request_version(stored)?;
        let mut warnings = Vec::new();
        self.validate_admission(
            wit::Operation::Delete,
            namespace,
            name,
            None,
            Some(&old),
            dry_run,
            &mut warnings,
        )?;
        if let Some(mut marked) = marked {
            // The object stays until its controller removes it.
            object::strip_resource_version(&mut marked);
            if dry_run {
                return self.to_request_version(marked);
            }
            let value = marked.to_string().into_bytes();
            let grown = value.len() as i64 - current.value.len() as i64;
            let kv = self
                .storage
                .update(&key, value, current.mod_revision)
                .await
                .map_err(|e| self.storage_err(e, name))?;
            self.quota.record(0, grown);
            self.note_write(kv.mod_revision);
            let out = self.parse_stored(&kv)?;
            return self.to_request_version(out);
        }
        if dry_run {
            return Ok(old);
        }
        let (_, revision) = self
            .storage
            .delete(&key, Some(current.mod_revision))
            .await
            .map_err(|e| self.storage_err(e, name))?;
        self.quota.record(-1, -(current.value.len() as i64));
        self.note_write(revision);
        Ok(old)
    }

    /// Checks a field selector's fields against the resource's selectable fields.
    pub fn check_field_selector(&self, fs: &FieldSelector) -> Result<(), ApiError> {
        let extra = self
            .plugin
            .selectable_fields
            .iter()
            .find(|(r, _)| r == self.plural())
            .map(|(_, f)| f.as_slice())
            .unwrap_or(&[]);
        for field in fs.requirements().iter().map(|r| r.field.as_str()) {
            if field != "metadata.name" && field != "metadata.namespace" && !extra.iter().any(|f| f == field) {
                return Err(ApiError::bad_request(format!(
                    "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"{}",
                    extra.iter().map(|f| format!(", \"{f}\"")).collect::<String>()
                )));
            }
        }
        Ok(())
    }

    /// Whether a stored object (storage version) matches the selectors.
    fn matches(&self, obj: &Value, params: &ListParams) -> Result<bool, ApiError> {
        if let Some(ls) = &params.labels {
            if !ls.matches(&object::labels(obj)) {
                return Ok(false);
            }
        }
        if let Some(fs) = &params.fields {
            let needs_plugin = fs
                .requirements()
                .iter()
                .any(|r| r.field != "metadata.name" && r.field != "metadata.namespace");
            let attrs = if needs_plugin {
                strategy::get_attrs(&self.plugin, self.plural(), obj).map_err(|e| pe(e, self, object::name(obj)))?
            } else {
                Vec::new()
            };
            let ok = fs.matches(|field| match field {
                "metadata.name" => Some(object::name(obj).to_string()),
                "metadata.namespace" => Some(meta_str(obj, "namespace").unwrap_or("").to_string()),
                other => attrs.iter().find(|(k, _)| k == other).map(|(_, v)| v.clone()),
            });
            return Ok(ok);
        }
        Ok(true)
    }

    /// Lists objects, as fresh as the parameters ask: consistent lists, lists at "0" or not older than a
    /// revision, and the pages of a paginated list come from the watch cache when there is one.
    pub async fn list(&self, namespace: Option<&str>, params: &ListParams) -> Result<ListOut, ApiError> {
        let prefix = key_prefix(self.group(), self.plural(), namespace);
        let mut options = ListOptions {
            limit: params.limit,
            ..Default::default()
        };
        let rv = params.resource_version.as_deref();
        let rv_match = params.resource_version_match.as_deref();
        let (at, continued) = match &params.continue_token {
            Some(token) => {
                ReadAt::check_continue(rv, rv_match)?;
                let (revision, start) = decode_continue(token)?;
                if !start.starts_with(&prefix) {
                    return Err(ApiError::bad_request("the continue token does not belong to this list"));
                }
                options.start_after = Some(start);
                // A token from an expired one continues at the latest revision, as in Kubernetes.
                let at = if revision == -1 {
                    ReadAt::Latest
                } else {
                    ReadAt::Exact(revision)
                };
                (at, true)
            }
            None => (ReadAt::for_list(rv, rv_match, params.limit)?, false),
        };
        let result = self.read_list(&prefix, options.clone(), at).await.map_err(|e| match e {
            StorageError::Compacted { .. } if continued => {
                let mut expired = ApiError::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                );
                expired.continue_token = options.start_after.as_deref().map(|start| encode_continue(-1, start));
                expired
            }
            other => self.storage_err(other, ""),
        })?;
        let selective = params.labels.as_ref().is_some_and(|l| !l.is_empty())
            || params.fields.as_ref().is_some_and(|f| !f.is_empty());
        if params.limit == 0 || !selective {
            let items = self.selected(&result.items, params)?;
            let (continue_token, remaining) = match (params.limit, result.remaining, result.items.last()) {
                (limit, rem, Some(last)) if limit > 0 && rem > 0 => {
                    (Some(encode_continue(result.revision, &last.key)), Some(rem))
                }
                _ => (None, None),
            };
            return Ok(ListOut {
                items,
                resource_version: result.revision,
                continue_token,
                remaining,
            });
        }
        // With a selector, pages are read at the same revision until `limit` objects match, as kube fills them; the
        // count of what remains is unknown then, and is left out.
        let revision = result.revision;
        let mut items = Vec::new();
        let mut page = result;
        loop {
            let mut last_key = None;
            let mut unread = page.remaining > 0;
            for (i, kv) in page.items.iter().enumerate() {
                let obj = self.parse_stored(kv)?;
                if self.matches(&obj, params)? {
                    items.push(self.stored_to_request_version(&kv.key, kv.mod_revision, obj)?);
                }
                last_key = Some(kv.key.clone());
                if items.len() == params.limit {
                    unread |= i + 1 < page.items.len();
                    break;
                }
            }
            let Some(last_key) = last_key.filter(|_| unread) else {
                return Ok(ListOut {
                    items,
                    resource_version: revision,
                    continue_token: None,
                    remaining: None,
                });
            };
            if items.len() == params.limit {
                return Ok(ListOut {
                    items,
                    resource_version: revision,
                    continue_token: Some(encode_continue(revision, &last_key)),
                    remaining: None,
                });
            }
            let next = ListOptions {
                limit: params.limit,
                start_after: Some(last_key),
                ..Default::default()
            };
            page = self
                .read_list(&prefix, next, ReadAt::Exact(revision))
                .await
                .map_err(|e| self.storage_err(e, ""))?;
        }
    }

    /// The stored objects that match the selectors, in the request's version.
    fn selected(&self, kvs: &[KeyValue], params: &ListParams) -> Result<Vec<Value>, ApiError> {
        let mut items = Vec::with_capacity(kvs.len());
        for kv in kvs {
            let obj = self.parse_stored(kv)?;
            if self.matches(&obj, params)? {
                items.push(self.stored_to_request_version(&kv.key, kv.mod_revision, obj)?);
            }
        }
        Ok(items)
    }

    /// Reads the keys under `prefix` as fresh as `at` asks, from the watch cache when there is one.
    async fn read_list(&self, prefix: &str, options: ListOptions, at: ReadAt) -> Result<ListResult, StorageError> {
        let Some(cache) = &self.cache else {
            return match at {
                ReadAt::Exact(revision) => self.storage.list(prefix, ListOptions { revision, ..options }).await,
                ReadAt::NotOlderThan(n) => {
                    let result = self.storage.list(prefix, options).await?;
                    if result.revision < n {
                        return Err(StorageError::TooLargeRevision {
                            requested: n,
                            current: result.revision,
                        });
                    }
                    Ok(result)
                }
                ReadAt::Latest | ReadAt::Any => self.storage.list(prefix, options).await,
            };
        };
        match at {
            ReadAt::Latest => cache.consistent_list(prefix, options).await,
            ReadAt::Any => cache.list(prefix, options, 0).await,
            ReadAt::NotOlderThan(n) => cache.list(prefix, options, n).await,
            ReadAt::Exact(revision) => cache.list(prefix, ListOptions { revision, ..options }, 0).await,
        }
    }

    /// Watches objects from where the parameters say (see [`WatchFrom`]): with the watch cache, all of it is
    /// served from memory. Progress notifications become BOOKMARK events when the client allows them.
    pub async fn watch(
        self: Arc<Self>,
        namespace: Option<String>,
        params: ListParams,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<mpsc::Receiver<WatchOut>, ApiError> {
        let prefix = key_prefix(self.group(), self.plural(), namespace.as_deref());
        let from = WatchFrom::parse(
            params.resource_version.as_deref(),
            params.resource_version_match.as_deref(),
            params.send_initial_events,
            params.allow_bookmarks,
        )?;
        let mut initial = Vec::new();
        let mut initial_events_end = None;
        let after = match from {
            WatchFrom::Initial {
                at,
                initial_events_end: end,
            } => {
                let list = self
                    .read_list(&prefix, ListOptions::default(), at)
                    .await
                    .map_err(|e| self.storage_err(e, ""))?;
                initial = self.selected(&list.items, &params)?;
                if end {
                    initial_events_end = Some(list.revision);
                }
                list.revision
            }
            WatchFrom::Now => self
                .storage
                .current_revision()
                .await
                .map_err(|e| self.storage_err(e, ""))?,
            WatchFrom::After(revision) => revision,
        };
        let upstream = match &self.cache {
            Some(cache) => cache.watch(&prefix, after).await,
            None => self.storage.watch(&prefix, after).await,
        };
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(async move {
            let events = initial
                .into_iter()
                .map(|object| WatchOut { kind: "ADDED", object })
                .chain(initial_events_end.map(|revision| self.bookmark(revision, true)));
            for event in events {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
            match upstream {
                Ok(upstream) => self.forward(upstream, &params, after, deadline, &tx).await,
                Err(e) => {
                    let err = watch_error(e);
                    let _ = tx
                        .send(WatchOut {
                            kind: "ERROR",
                            object: err.to_status(),
                        })
                        .await;
                }
            }
        });
        Ok(rx)
    }

    /// Forwards storage events to the client until either side ends; an error is the last event. When bookmarks
    /// are allowed and the watch has a deadline, a BOOKMARK goes out 2 s before it (as kube's cacher sends one), at
    /// the revision of the last event received, so that the client resumes from there.
    async fn forward(
        &self,
        mut upstream: WatchStream,
        params: &ListParams,
        after: Revision,
        deadline: Option<tokio::time::Instant>,
        tx: &mpsc::Sender<WatchOut>,
    ) {
        let mut last = after;
        let pre_timeout = deadline
            .and_then(|d| d.checked_sub(PRE_TIMEOUT_BOOKMARK))
            .filter(|_| params.allow_bookmarks);
        let mut bookmark_due = pre_timeout.is_some();
        let sleep = tokio::time::sleep_until(pre_timeout.unwrap_or_else(tokio::time::Instant::now));
        tokio::pin!(sleep);
        loop {
            let event = tokio::select! {
                event = upstream.recv() => match event {
                    Some(event) => event,
                    None => return,
                },
                () = &mut sleep, if bookmark_due => {
                    bookmark_due = false;
                    if upstream.is_empty() && tx.send(self.bookmark(last, false)).await.is_err() {
                        return;
                    }
                    continue;
                }
            };
            if let Ok(ev) = &event {
                last = last.max(ev.revision());
            }
            let out = match event {
                Ok(WatchEvent::Progress { revision }) if params.allow_bookmarks => {
                    Ok(Some(self.bookmark(revision, false)))
                }
                Ok(ev) => self.translate(ev, params),
                Err(e) => Err(watch_error(e)),
            };
            match out {
                Ok(Some(o)) => {
                    if tx.send(o).await.is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = tx
                        .send(WatchOut {
                            kind: "ERROR",
                            object: e.to_status(),
                        })
                        .await;
                    return;
                }
            }
        }
    }

    /// A BOOKMARK event at `revision`: an object of the resource's kind with only its resourceVersion (and the
    /// `k8s.io/initial-events-end` annotation after the initial events).
    fn bookmark(&self, revision: Revision, initial_events_end: bool) -> WatchOut {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        WatchOut {
            kind: "BOOKMARK",
            object: json!({"kind": self.resource.kind, "apiVersion": self.api_version(), "metadata": metadata}),
        }
    }

    /// Turns a storage event into a client event, applying the selectors as Kubernetes does: an object leaving
    /// the selection is DELETED, one entering it is ADDED.
    fn translate(&self, ev: WatchEvent, params: &ListParams) -> Result<Option<WatchOut>, ApiError> {
        // The event's object is the stored one under `key`, with `revision` as its resourceVersion.
        let (kind, obj, key, revision) = match ev {
            WatchEvent::Put { kv, prev } => {
                let obj = self.parse_stored(&kv)?;
                let now = self.matches(&obj, params)?;
                let before = match &prev {
                    Some(p) => self.matches(&self.parse_stored(p)?, params)?,
                    None => false,
                };
                let kind = match (prev.is_some(), before, now) {
                    (false, _, true) => "ADDED",
                    (true, true, true) => "MODIFIED",
                    (true, false, true) => "ADDED",
                    (true, true, false) => "DELETED",
                    _ => return Ok(None),
                };
                (kind, obj, kv.key, kv.mod_revision)
            }
            WatchEvent::Delete { prev, revision } => {
                let mut obj = self.parse_stored(&prev)?;
                if !self.matches(&obj, params)? {
                    return Ok(None);
                }
                object::set_resource_version(&mut obj, revision);
                ("DELETED", obj, prev.key, revision)
            }
            WatchEvent::Progress { .. } => return Ok(None),
        };
        Ok(Some(WatchOut {
            kind,
            object: self.stored_to_request_version(&key, revision, obj)?,
        }))
    }
}

fn watch_error(e: StorageError) -> ApiError {
    match e {
        StorageError::Compacted { requested, compacted } => {
            ApiError::expired(format!("too old resource version: {requested} ({compacted})"))
        }
        other => ApiError::from_storage(other, "", "", ""),
    }
}

/// Encodes a continue token: the list's revision and the last key returned.
pub fn encode_continue(revision: i64, last_key: &str) -> String {
    use base64::Engine as _;
    let token = json!({"v": "meta.k8s.io/v1", "rv": revision, "start": last_key});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token.to_string())
}

/// Decodes a continue token.
pub fn decode_continue(token: &str) -> Result<(i64, String), ApiError> {
    use base64::Engine as _;
    let bad = || ApiError::bad_request("continue key is not valid: the token is malformed");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| bad())?;
    // -1: continue at the latest revision (a token handed out with an expiry); 0 and other negatives are invalid.
    let rv = v
        .get("rv")
        .and_then(Value::as_i64)
        .filter(|rv| *rv > 0 || *rv == -1)
        .ok_or_else(bad)?;
    let start = v.get("start").and_then(Value::as_str).ok_or_else(bad)?;
    Ok((rv, start.to_string()))
}
