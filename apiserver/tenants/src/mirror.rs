//! The stored `Tenant` objects of the tenant directories: at the root, every tenant is a stored object (so that
//! `list` and `watch` have resourceVersions and a watcher sees tenants come and go), which this module keeps in line
//! with the directories: written as the server (`system:apiserver`) when a tenant directory appears or its
//! `tenant.yaml` changes, removed when the directory goes. They carry `status.source: Directory`; their live
//! configuration and usage are filled in on every read ([`crate::api`]'s strategy decorates them).
//!
//! The directories are the single-host form of tenancy: several hosts sharing a store should have the same
//! directories, as they serve the same tenants.

use serde_json::{json, Value};

use super::config::TenantConfig;
use super::Tenants;
use crate::api::{GROUP, KIND, RESOURCE, SOURCE_DIRECTORY, VERSION};
use registry::store::{FieldValidation, WriteOptions};

/// The stored spec of a directory's tenant: its `tenant.yaml` (nothing when it is invalid).
pub fn spec(config: Option<&TenantConfig>) -> Value {
    match config {
        Some(config) => {
            let mut spec = json!({
                "admins": {"users": config.admin_users, "groups": config.admin_groups},
                "limits": super::object::limits(&config.limits),
            });
            if !config.allowed_registries.is_empty() {
                spec["allowedRegistries"] = json!(config.allowed_registries);
            }
            if !config.signature_keys.is_empty() {
                spec["signatureKeys"] = json!(config.signature_keys);
            }
            spec
        }
        None => json!({}),
    }
}

impl Tenants {
    /// Stores the Tenant object `name` (as the root shows it) with `spec`, or brings the stored one in line.
    pub(super) async fn mirror(&self, name: &str, spec: Value) {
        if let Err(e) = self.try_mirror(name, spec).await {
            tracing::warn!(
                tenant = name,
                error = format!("{e:#}"),
                "storing the Tenant object failed"
            );
        }
    }

    async fn try_mirror(&self, name: &str, spec: Value) -> anyhow::Result<()> {
        let registry = &self.root.api.registry;
        let key = storage::keys::object_key(GROUP, RESOURCE, None, name);
        if let Some(kv) = registry.storage.get(&key).await? {
            let mut stored: Value = serde_json::from_slice(&kv.value)?;
            let source = stored.pointer("/status/source").and_then(Value::as_str);
            if source != Some(SOURCE_DIRECTORY) {
                // Created through the API: the name is the object's, and the directory is not served.
                return Ok(());
            }
            if stored.get("spec") == Some(&spec) {
                return Ok(());
            }
            stored["spec"] = spec;
            stored["status"] = json!({"source": SOURCE_DIRECTORY});
            registry.update_around_store(&kv, &stored).await?;
            return Ok(());
        }
        let store = registry
            .system_store(GROUP, RESOURCE)
            .ok_or_else(|| anyhow::anyhow!("tenants are not served"))?;
        let object = json!({
            "apiVersion": format!("{GROUP}/{VERSION}"),
            "kind": KIND,
            "metadata": {"name": name},
            "spec": spec,
            "status": {"source": SOURCE_DIRECTORY},
        });
        let opts = WriteOptions {
            dry_run: false,
            field_validation: FieldValidation::Ignore,
        };
        match store.create(None, object, opts).await {
            Ok(_) => Ok(()),
            // Written meanwhile (by another host of the same directories): in line at the next change.
            Err(e) if e.reason == "AlreadyExists" => Ok(()),
            Err(e) => anyhow::bail!("{}", e.message),
        }
    }

    /// Removes the stored Tenant object `name` of a directory that is gone.
    pub(super) async fn unmirror(&self, name: &str) {
        let registry = &self.root.api.registry;
        let key = storage::keys::object_key(GROUP, RESOURCE, None, name);
        match registry.storage.get(&key).await {
            Ok(Some(kv)) if !from_directory(&kv.value) => {}
            Ok(Some(kv)) => match registry.storage.delete(&key, Some(kv.mod_revision)).await {
                Ok((prev, _)) => registry.quota.record(&key, -1, -(prev.value.len() as i64)),
                Err(e) => tracing::warn!(tenant = name, error = %e, "removing the Tenant object failed"),
            },
            Ok(None) => {}
            Err(e) => tracing::warn!(tenant = name, error = %e, "reading the Tenant object failed"),
        }
    }

    /// Removes the stored Tenant objects of directories that are gone (removed while the server was down).
    pub(super) async fn unmirror_missing(&self) {
        let registry = &self.root.api.registry;
        let prefix = storage::keys::key_prefix(GROUP, RESOURCE, None);
        let stored = match registry.storage.list(&prefix, storage::ListOptions::default()).await {
            Ok(list) => list.items,
            Err(e) => {
                tracing::warn!(error = %e, "listing the Tenant objects failed");
                return;
            }
        };
        let present: std::collections::BTreeSet<String> = super::tenant_dirs(&self.dir)
            .into_iter()
            .map(|(name, _)| name)
            .chain(std::iter::once(crate::api::DEFAULT_TENANT.to_owned()))
            .collect();
        for kv in stored {
            let name = kv.key.rsplit('/').next().unwrap_or_default().to_owned();
            if from_directory(&kv.value) && !present.contains(&name) {
                self.unmirror(&name).await;
            }
        }
    }
}

/// Whether a stored Tenant object is a directory's.
fn from_directory(value: &[u8]) -> bool {
    serde_json::from_slice::<Value>(value)
        .ok()
        .is_some_and(|o| crate::api::source(&o) == SOURCE_DIRECTORY)
}
