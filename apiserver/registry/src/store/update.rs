//! Update (PUT) and patch (PATCH): kube's BeforeUpdate for the host's metadata, the plugin's update strategy,
//! validation, storage; an update that removes the last finalizer of an object being deleted removes the object.

use super::{plugin_failure, ResourceStore, Subresource, Written};
use crate::write_options::WriteOptions;
use apimachinery::object::{self, meta_mut, meta_str};
use apimachinery::plugin::Operation;
use apimachinery::status::{ApiError, Cause};
use serde_json::{json, Value};
use storage::keys::object_key;
use storage::{KeyValue, Revision};

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

impl ResourceStore {
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
            if self.subresource != Subresource::None {
                return Err(ApiError::not_found(self.group(), self.plural(), name));
            }
            let allowed = self
                .plugin
                .strategy
                .allow_create_on_update(self.plural())
                .map_err(|e| plugin_failure(e, self, name))?;
            if !allowed {
                return Err(ApiError::not_found(self.group(), self.plural(), name));
            }
            let mut obj = obj;
            meta_mut(&mut obj).remove("resourceVersion");
            let mut w = self.create_tracked(namespace, obj, opts, false).await?;
            w.warnings.splice(0..0, warnings);
            return Ok(w);
        };
        let expected = match rv {
            Some(rv) => rv
                .parse::<i64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
            None => {
                // A plugin without an update strategy serves only `/status` updates: as kube's status strategies,
                // they need a resourceVersion.
                let allowed = self.plugin.exports.update
                    && self
                        .plugin
                        .strategy
                        .allow_unconditional_update(self.plural())
                        .map_err(|e| plugin_failure(e, self, name))?;
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
        self.finish_update(namespace, name, obj, old, &current, opts, warnings, false)
            .await
    }

    /// The shared tail of update and patch: host metadata, plugin strategy, admission, storage CAS.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn finish_update(
        &self,
        namespace: Option<&str>,
        name: &str,
        obj: Value,
        old: Value,
        current: &KeyValue,
        opts: WriteOptions,
        mut warnings: Vec<String>,
        tracked: bool,
    ) -> Result<Written, ApiError> {
        let expected = current.mod_revision;
        let attributes = self.attributes(Operation::Update, namespace, name, None, Some(&old), opts.dry_run);
        let mut obj = self.admission.mutate(attributes, obj, &mut warnings).await?;
        before_update(&mut obj, &old, expected);
        let mut obj = if self.subresource == Subresource::Status {
            // `/status` writes status alone: the stored object with the request's status, whatever else the request
            // or the plugin changed (kube's status strategies for custom resources).
            let mut next = old.clone();
            object::set_status(&mut next, obj.get("status"));
            if tracked {
                // An apply of the status recorded its fields on the object it was given.
                if let Some(managed) = obj.pointer("/metadata/managedFields") {
                    meta_mut(&mut next).insert("managedFields".into(), managed.clone());
                }
            }
            let prepared = self
                .plugin
                .strategy
                .prepare_for_status_update(self.plural(), &next, &old)
                .map_err(|e| plugin_failure(e, self, name))?;
            object::set_status(&mut next, prepared.get("status"));
            next
        } else if self.subresource == Subresource::Finalize {
            // `/finalize` (a namespace's) writes the object as sent, its status kept (kube's namespace finalize
            // strategy): the way to change `spec.finalizers`, which the object's own updates keep.
            let mut next = obj;
            object::set_status(&mut next, old.get("status"));
            next
        } else {
            // With a `/status`, the object's own updates keep the stored status, before and after the plugin.
            let own_status = self.resource.subresources(&self.version).status;
            if own_status {
                object::set_status(&mut obj, old.get("status"));
            }
            let prepared = self
                .plugin
                .strategy
                .prepare_for_update(self.plural(), &obj, &old)
                .map_err(|e| plugin_failure(e, self, name))?;
            let mut obj = apimachinery::object::keep_host_metadata(&obj, prepared);
            if own_status {
                object::set_status(&mut obj, old.get("status"));
            }
            obj
        };
        if !tracked {
            self.track_fields(Some(&old), &mut obj)?;
        }
        self.validate_meta_update(&obj, &old)?;
        let validation = if self.subresource == Subresource::Status {
            self.plugin.strategy.validate_status_update(self.plural(), &obj, &old)
        } else if self.subresource == Subresource::Finalize {
            Ok(apimachinery::plugin::Validation::of_errors(
                builtin::core::validate_finalize(&obj),
            ))
        } else {
            self.plugin.strategy.validate_update(self.plural(), &obj, &old)
        };
        let validation = validation.map_err(|e| plugin_failure(e, self, name))?;
        self.check_validation(validation, name, &mut warnings)?;
        let attributes = self.attributes(Operation::Update, namespace, name, Some(&obj), Some(&old), opts.dry_run);
        self.admission.validate(attributes, &mut warnings).await?;
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
            return Ok(self.written(out, warnings, false));
        }
        let key = object_key(self.group(), self.plural(), namespace, name);
        let value = stored.to_string().into_bytes();
        if value == current.value {
            // Nothing changed: nothing is written, and the resourceVersion stays (as kube's GuaranteedUpdate); the
            // answer is the stored object, which `old` already is in the request's version.
            return Ok(self.written(old, warnings, false));
        }
        if self.finalized(&stored) {
            // The last finalizer of an object being deleted is gone: the object goes instead of being written, as
            // kube's Store.Update deletes it (watchers see DELETED with the last stored state; the answer is the
            // object as the update made it). A write in between (a finalizer added back) is a conflict.
            let (_, revision) = self
                .storage
                .delete(&key, Some(expected))
                .await
                .map_err(|e| self.storage_err(e, name))?;
            self.quota.record(&key, -1, -(current.value.len() as i64));
            self.note_write(revision);
            self.observe(Some(&old), None);
            let mut out = self.to_request_version(stored)?;
            object::set_resource_version(&mut out, revision);
            return Ok(self.written(out, warnings, false));
        }
        self.record_storage_version().await?;
        let room = self.reserve(&key, name, 0, value.len() as i64 - current.value.len() as i64)?;
        let kv = self
            .storage
            .update(&key, value, expected)
            .await
            .map_err(|e| self.storage_err(e, name))?;
        room.commit();
        self.note_write(kv.mod_revision);
        self.observe(Some(&old), Some(&stored));
        let out = self.parse_stored(&kv)?;
        Ok(self.written(self.to_request_version(out)?, warnings, false))
    }

    /// Whether a stored object is being deleted and waits for no finalizer: it is then removed. Namespaces wait for
    /// their controller instead (their `spec.finalizers`), which removes them itself.
    pub(super) fn finalized(&self, stored: &Value) -> bool {
        meta_str(stored, "deletionTimestamp").is_some()
            && object::finalizers(stored).is_empty()
            && !self.plugin.strategy.finalizes_itself(self.plural())
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
                .finish_update(namespace, name, obj, old, &current, opts, warnings, false)
                .await
            {
                Err(e) if e.reason == "Conflict" && !pinned && attempts < 5 => continue,
                other => return other,
            }
        }
    }
}
