//! Delete: preconditions, the plugin's delete strategy and admission; objects with finalizers are marked, not
//! removed.

use super::{plugin_failure, ResourceStore};
use crate::gc::{self, Propagation};
use apimachinery::object::{self, meta_mut, meta_str};
use apimachinery::plugin::Operation;
use apimachinery::status::ApiError;
use serde_json::{json, Value};
use storage::keys::object_key;

/// An object with finalizers, marked for deletion as kube's BeforeDelete marks it: a deletion timestamp, a grace
/// period of 0 (what a custom resource gets), and the generation bumped. `None` when the object can go at once (no
/// finalizers).
fn mark_for_deletion(stored: &Value) -> Option<Value> {
    if object::finalizers(stored).is_empty() {
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

impl ResourceStore {
    /// Deletes an object, if its uid and resourceVersion match the preconditions given, propagating the deletion
    /// to its dependents as `propagation` says (none: as its own finalizers say, else in the background). Returns
    /// the deleted object, or the object marked for deletion when finalizers hold it.
    pub async fn delete(
        &self,
        namespace: Option<&str>,
        name: &str,
        precondition_uid: Option<&str>,
        precondition_rv: Option<&str>,
        dry_run: bool,
        propagation: Option<Propagation>,
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
        self.plugin
            .strategy
            .validate_delete(self.plural(), &stored)
            .map_err(|e| plugin_failure(e, self, name))?;
        // The garbage collection finalizers the policy asks for (`orphan`, `foregroundDeletion`), as kube's
        // deletionFinalizersForGarbageCollection sets them, even on an object already being deleted.
        let gc_finalizers = gc::refs::finalizers_for_delete(&object::finalizers(&stored), propagation);
        let mut with_gc_finalizers = stored.clone();
        if let Some(finalizers) = &gc_finalizers {
            let m = meta_mut(&mut with_gc_finalizers);
            if finalizers.is_empty() {
                m.remove("finalizers");
            } else {
                m.insert("finalizers".into(), json!(finalizers));
            }
        }
        // A built-in type may mark the object for deletion its own way (a namespace turning Terminating).
        let strategy = &self.plugin.strategy;
        let marked = match () {
            _ if strategy.finalizes_itself(self.plural()) => {
                strategy.graceful_delete(self.plural(), &stored, &object::now_rfc3339())
            }
            _ if meta_str(&stored, "deletionTimestamp").is_some() && !object::finalizers(&stored).is_empty() => {
                match gc_finalizers {
                    // Already being deleted, waiting for its finalizers: kube answers with the object as it is.
                    // The collector looks at it again (it may be an owner left waiting by a stopped process).
                    None => {
                        if !dry_run {
                            self.observe(None, Some(&stored));
                        }
                        return self.answer(stored);
                    }
                    // Its garbage collection finalizers change; it goes if none is left.
                    Some(f) if f.is_empty() => None,
                    Some(_) => Some(with_gc_finalizers),
                }
            }
            _ => mark_for_deletion(&with_gc_finalizers),
        };
        let old = self.to_request_version(stored)?;
        let mut warnings = Vec::new();
        let attributes = self.attributes(Operation::Delete, namespace, name, None, Some(&old), dry_run);
        self.admission.validate(attributes, &mut warnings).await?;
        if let Some(mut marked) = marked {
            // The object stays until its controller removes it.
            object::strip_resource_version(&mut marked);
            if dry_run {
                return self.answer(marked);
            }
            let value = marked.to_string().into_bytes();
            let grown = value.len() as i64 - current.value.len() as i64;
            let kv = self
                .storage
                .update(&key, value, current.mod_revision)
                .await
                .map_err(|e| self.storage_err(e, name))?;
            self.quota.record(&key, 0, grown);
            self.note_write(kv.mod_revision);
            self.observe(Some(&old), Some(&marked));
            let out = self.parse_stored(&kv)?;
            return self.answer(out);
        }
        if dry_run {
            return Ok(self.decorated(old));
        }
        let (_, revision) = self
            .storage
            .delete(&key, Some(current.mod_revision))
            .await
            .map_err(|e| self.storage_err(e, name))?;
        self.quota.record(&key, -1, -(current.value.len() as i64));
        self.note_write(revision);
        self.observe(Some(&old), None);
        Ok(self.decorated(old))
    }
}
