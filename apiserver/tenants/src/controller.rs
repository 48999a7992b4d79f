//! The tenants created through the API: every host lists the stored Tenant objects at the root when it starts (and
//! serves those of `status.source: API` before it is ready), then watches them, so that a tenant created, changed
//! or deleted through any host sharing the store is served, reconfigured or dropped by all of them.
//!
//! A Tenant object is created with the finalizer [`FINALIZER`]. A DELETE marks it (`deletionTimestamp`): every host
//! stops serving the tenant when it sees the mark (the host answering the DELETE at once, through the strategy's
//! [`Directory::deleting`](crate::api::Directory::deleting)), then its data (the keys under
//! `/tenants/<name>/`) is deleted, unless `spec.deletionPolicy: Retain`, and the finalizer removed, which deletes
//! the object. That last part runs on the elected leader ([`super::leader`]); the others wait until the object is
//! gone, in case they lead first.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::config::{DeletionPolicy, TenantConfig};
use super::{object_name, Defined, Source, Tenant, Tenants, FAILED_TO_START, INVALID_CONFIGURATION, STARTING_TOGETHER};
use crate::api::{self, FINALIZER, GROUP, RESOURCE, SOURCE_API};
use registry::store::{FieldValidation, WriteOptions};
use storage::{ListOptions, Revision, WatchEvent};

impl Tenants {
    /// The stored Tenant objects created through the API, and the revision they were read at.
    pub(super) async fn list_api_tenants(&self) -> anyhow::Result<(Vec<Value>, Revision)> {
        let registry = &self.root.api.registry;
        let prefix = storage::keys::key_prefix(GROUP, RESOURCE, None);
        let list = registry.storage.list(&prefix, ListOptions::default()).await?;
        let objects = list
            .items
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .filter(|o| api::source(o) == SOURCE_API)
            .collect();
        Ok((objects, list.revision))
    }

    /// Serves the tenants of `objects` (listed at `revision`), then follows the stored Tenant objects from there.
    pub(super) async fn start_api_tenants(&self, objects: Vec<Value>, revision: Revision) {
        use futures_util::StreamExt as _;
        futures_util::stream::iter(objects)
            .for_each_concurrent(
                STARTING_TOGETHER,
                |obj| async move { self.reconcile_object(&obj).await },
            )
            .await;
        let me = self.me.clone();
        tokio::spawn(async move {
            let mut after = revision;
            loop {
                let Some(tenants) = me.upgrade() else { return };
                let registry = tenants.root.api.registry.clone();
                let followed = registry.until_closed(tenants.follow(after)).await;
                match followed {
                    None => return,
                    Some(Err(e)) => tracing::warn!(error = format!("{e:#}"), "tenant controller: restarting"),
                    Some(Ok(())) => {}
                }
                drop(tenants);
                tokio::time::sleep(Duration::from_secs(1)).await;
                let Some(tenants) = me.upgrade() else { return };
                // Listed again: what changed while the watch was down (or was compacted away) is brought in line.
                match tenants.list_api_tenants().await {
                    Ok((objects, revision)) => {
                        tenants.resync(objects).await;
                        after = revision;
                    }
                    Err(e) => tracing::warn!(error = %e, "tenant controller: listing the tenants failed"),
                }
            }
        });
    }

    /// Follows the stored Tenant objects after `after` until the watch ends or fails.
    async fn follow(&self, after: Revision) -> anyhow::Result<()> {
        let registry = &self.root.api.registry;
        let prefix = storage::keys::key_prefix(GROUP, RESOURCE, None);
        let mut watch = registry.storage.watch(&prefix, after).await?;
        while let Some(event) = watch.recv().await {
            match event? {
                WatchEvent::Put { kv, .. } => {
                    if let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) {
                        if api::source(&obj) == SOURCE_API {
                            self.reconcile_object(&obj).await;
                        }
                    }
                }
                WatchEvent::Delete { prev, .. } => {
                    let name = prev.key.rsplit('/').next().unwrap_or_default();
                    self.stop_api_tenant(name);
                }
                WatchEvent::Progress { .. } => {}
            }
        }
        anyhow::bail!("the tenant watch ended")
    }

    /// Brings the served API tenants in line with a fresh list of their objects.
    async fn resync(&self, objects: Vec<Value>) {
        let listed: std::collections::BTreeSet<&str> = objects.iter().map(object_name).collect();
        let gone: Vec<String> = self
            .defined
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .filter(|name| !listed.contains(name.as_str()))
            .cloned()
            .collect();
        for name in gone {
            self.stop_api_tenant(&name);
        }
        for obj in &objects {
            self.reconcile_object(obj).await;
        }
    }

    /// Brings one tenant in line with its Tenant object: defines it (it is built on its first request), applies its
    /// changed spec, or, once it is marked for deletion, stops serving it and finalizes it.
    async fn reconcile_object(&self, obj: &Value) {
        let name = object_name(obj).to_owned();
        if name.is_empty() || name == api::DEFAULT_TENANT {
            return;
        }
        let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
        if obj.pointer("/metadata/deletionTimestamp").is_some() {
            self.stop_api_tenant(&name);
            self.set_failure(&name, None);
            let holds = obj
                .pointer("/metadata/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|f| f == FINALIZER));
            if holds {
                let policy = TenantConfig::from_spec(obj.get("spec"))
                    .map(|c| c.deletion_policy)
                    .unwrap_or_default();
                if let Some(me) = self.me.upgrade() {
                    tokio::spawn(async move { me.finalize(name, policy).await });
                }
            }
            return;
        }
        if self.get(Some(&name)).is_some_and(|t| t.source == Source::Directory) {
            tracing::error!(tenant = %name, "Tenant object not served: a tenant directory of that name is served");
            return;
        }
        let config = match TenantConfig::from_spec(obj.get("spec")) {
            Ok(config) => config,
            Err(problems) => {
                // Refused at the API; written around it (or by an older host), it is reported, not served anew.
                let reason: Vec<String> = problems.iter().map(|p| format!("{}: {}", p.field, p.message)).collect();
                let reason = reason.join("; ");
                tracing::error!(tenant = %name, %reason, "tenant's spec is invalid");
                let problem = format!("the previous configuration stays: {reason}");
                let defined = self.set_defined_problem(&name, problem.clone());
                match self.get(Some(&name)) {
                    Some(t) => t.set_config_problem(Some(problem)),
                    None if !defined => self.set_failure(&name, Some((INVALID_CONFIGURATION, reason))),
                    None => {}
                }
                return;
            }
        };
        let config = Arc::new(config);
        let new = {
            let mut defined = self.defined.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            match defined.get_mut(&name) {
                Some(d) => {
                    if d.generation <= generation {
                        d.config = config.clone();
                        d.generation = generation;
                    }
                    d.problem = None;
                    false
                }
                None => {
                    defined.insert(
                        name.clone(),
                        Defined {
                            config: config.clone(),
                            generation,
                            problem: None,
                            since: apimachinery::object::now_rfc3339(),
                            usage: None,
                            building: Arc::default(),
                        },
                    );
                    true
                }
            }
        };
        if new {
            component_base::metrics::metrics().tenants.inc();
            self.set_failure(&name, None);
            tracing::info!(tenant = %name, "serving a tenant created through the API at /tenants/{name} (built on its first request)");
        }
        if let Some(tenant) = self.get(Some(&name)) {
            self.apply_defined(&tenant, &config, generation).await;
        }
    }

    /// Puts a built API tenant's configuration from its object into effect.
    async fn apply_defined(&self, tenant: &Tenant, config: &TenantConfig, generation: i64) {
        tenant.set_config_problem(None);
        if *config != *tenant.config() {
            tenant.set_config(config.clone());
            tracing::info!(
                tenant = tenant.display_name(),
                generation,
                "tenant's spec changed: applied"
            );
            if let Err(e) = self.factory.apply_admins(tenant).await {
                tracing::error!(
                    tenant = tenant.display_name(),
                    error = format!("{e:#}"),
                    "updating the tenant's admins failed"
                );
            }
        }
        tenant
            .observed_generation
            .fetch_max(generation, std::sync::atomic::Ordering::Relaxed);
    }

    /// Records why the spec of the API tenant `name` is not in effect (since the first time, while it stays so).
    /// Whether it is defined.
    fn set_defined_problem(&self, name: &str, problem: String) -> bool {
        let mut defined = self.defined.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(d) = defined.get_mut(name) else {
            return false;
        };
        let since = d
            .problem
            .take()
            .map_or_else(apimachinery::object::now_rfc3339, |(_, since)| since);
        d.problem = Some((problem, since));
        true
    }

    /// The API tenant `name`, built now if it is not in memory (once, however many requests ask at once), and
    /// counted in use. `Ok(None)`: it is not defined; `Err`: it failed to build.
    pub(super) async fn build_defined(
        &self,
        name: &str,
    ) -> Result<Option<(Arc<Tenant>, Option<super::InUse>)>, String> {
        let building = {
            let defined = self.defined.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            match defined.get(name) {
                Some(d) => d.building.clone(),
                None => return Ok(None),
            }
        };
        let _turn = building.lock().await;
        if let Some(entered) = self.enter_built(name) {
            return Ok(Some(entered));
        }
        let (config, generation, since) = {
            let defined = self.defined.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            match defined.get(name) {
                Some(d) => (d.config.clone(), d.generation, d.since.clone()),
                None => return Ok(None),
            }
        };
        let mut tenant = match self.factory.build(Some(name), None, (*config).clone()).await {
            Ok(tenant) => tenant,
            Err(e) => {
                let e = format!("{e:#}");
                tracing::error!(tenant = %name, error = %e, "tenant failed to start");
                self.set_failure(name, Some((FAILED_TO_START, e.clone())));
                return Err(e);
            }
        };
        tenant.since = since;
        tenant
            .observed_generation
            .store(generation, std::sync::atomic::Ordering::Relaxed);
        let tenant = Arc::new(tenant);
        self.show_tenants(&tenant);
        self.factory.start_plugins(&tenant).await;
        // Served only while still defined: a deletion seen meanwhile removed it from `defined` first.
        let served = {
            let defined = self.defined.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            defined.contains_key(name).then(|| {
                let mut named = self.named.write().unwrap_or_else(std::sync::PoisonError::into_inner);
                named.insert(name.to_owned(), tenant.clone());
                component_base::metrics::metrics().tenants_in_memory.inc();
                tenant.in_use()
            })
        };
        let Some(in_use) = served else {
            tenant.close();
            return Ok(None);
        };
        self.set_failure(name, None);
        tracing::debug!(tenant = %name, "tenant built");
        // A spec changed while it was built (seen when it was not yet in `named`) is applied now.
        let latest = {
            let defined = self.defined.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            defined.get(name).map(|d| (d.config.clone(), d.generation))
        };
        if let Some((config, generation)) = latest {
            self.apply_defined(&tenant, &config, generation).await;
        }
        Ok(Some((tenant, Some(in_use))))
    }

    /// The built tenant `name`; one created through the API counted in use (under the lock idle tenants are
    /// dropped under), as only those are dropped.
    pub(super) fn enter_built(&self, name: &str) -> Option<(Arc<Tenant>, Option<super::InUse>)> {
        let named = self.named.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let tenant = named.get(name)?;
        let in_use = (tenant.source == Source::Api).then(|| tenant.in_use());
        Some((tenant.clone(), in_use))
    }

    /// Drops from memory the API tenants idle for `idle` (no request in flight, none begun since): they are built
    /// again on their next request.
    pub(super) fn drop_idle(&self, idle: Duration) {
        let dropped: Vec<Arc<Tenant>> = {
            let mut named = self.named.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            let idle: Vec<String> = named
                .iter()
                .filter(|(_, t)| t.source == Source::Api && t.idle_for(idle))
                .map(|(name, _)| name.clone())
                .collect();
            idle.iter().filter_map(|name| named.remove(name)).collect()
        };
        for tenant in &dropped {
            let usage = tenant.api.registry.quota.usage();
            if let Some(d) = self
                .defined
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get_mut(tenant.display_name())
            {
                d.usage = Some(usage);
            }
            tenant.close();
            component_base::metrics::metrics().tenants_in_memory.dec();
            tracing::debug!(tenant = tenant.display_name(), "idle tenant dropped from memory");
        }
    }

    /// Stops serving the tenant `name` if it was created through the API (its data is kept).
    pub(super) fn stop_api_tenant(&self, name: &str) {
        let was_defined = self
            .defined
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(name)
            .is_some();
        let removed = {
            let mut named = self.named.write().unwrap_or_else(std::sync::PoisonError::into_inner);
            match named.get(name) {
                Some(t) if t.source == Source::Api => named.remove(name),
                _ => None,
            }
        };
        if let Some(tenant) = removed {
            tenant.close();
            component_base::metrics::metrics().tenants_in_memory.dec();
        }
        if was_defined {
            component_base::metrics::metrics().tenants.dec();
            tracing::info!(tenant = name, "tenant deleted: no longer served");
        }
    }

    /// Deletes the data of the deleted tenant `name` (unless `policy` keeps it), then removes its finalizer, which
    /// deletes its object. Retried with a growing delay until done.
    async fn finalize(self: Arc<Self>, name: String, policy: DeletionPolicy) {
        let finalizing = |on: bool| {
            let mut set = self
                .finalizing
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if on {
                set.insert(name.clone())
            } else {
                set.remove(&name)
            }
        };
        if !finalizing(true) {
            // Already under way here (another event of the same deletion).
            return;
        }
        let mut delay = Duration::from_millis(100);
        loop {
            if !self.factory.is_leader() {
                // The leader deletes the data; this host waits in case it becomes the leader first, until the object
                // is gone.
                let key = storage::keys::object_key(GROUP, RESOURCE, None, &name);
                match self.root.api.registry.storage.get(&key).await {
                    Ok(None) => break,
                    Ok(Some(_)) | Err(_) => {
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                }
            }
            match self.try_finalize(&name, policy).await {
                Ok(()) => break,
                Err(e) => {
                    tracing::warn!(tenant = %name, error = format!("{e:#}"), "finalizing a deleted tenant failed; retrying")
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
        }
        finalizing(false);
    }

    async fn try_finalize(&self, name: &str, policy: DeletionPolicy) -> anyhow::Result<()> {
        let registry = &self.root.api.registry;
        if policy == DeletionPolicy::Delete {
            let deleted =
                delete_prefix(registry.storage.as_ref(), &format!("{}/", crate::storage_prefix(name))).await?;
            tracing::info!(tenant = name, keys = deleted, "deleted tenant's data deleted");
        } else {
            tracing::info!(tenant = name, "deleted tenant's data kept (deletionPolicy: Retain)");
        }
        let store = registry
            .system_store(GROUP, RESOURCE)
            .ok_or_else(|| anyhow::anyhow!("tenants are not served"))?;
        let opts = WriteOptions {
            dry_run: false,
            field_validation: FieldValidation::Ignore,
        };
        let removed = store
            .patch(
                None,
                name,
                |current| {
                    let mut obj = current.clone();
                    if let Some(finalizers) = obj.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
                        finalizers.retain(|f| f != FINALIZER);
                    }
                    Ok(obj)
                },
                opts,
            )
            .await;
        match removed {
            Ok(_) => Ok(()),
            // Finalized meanwhile (by another host).
            Err(e) if e.code == 404 => Ok(()),
            Err(e) => anyhow::bail!("removing the finalizer: {}", e.message),
        }
    }
}

/// Deletes every key under `prefix`, a page at a time, until none is left (writes that were in flight when the
/// tenant stopped being served are deleted too). Returns how many keys were deleted.
async fn delete_prefix(storage: &dyn storage::Storage, prefix: &str) -> anyhow::Result<u64> {
    let mut deleted = 0;
    loop {
        let page = storage
            .list(
                prefix,
                ListOptions {
                    limit: 500,
                    ..ListOptions::default()
                },
            )
            .await?;
        if page.items.is_empty() {
            return Ok(deleted);
        }
        for kv in page.items {
            match storage.delete(&kv.key, None).await {
                Ok(_) => deleted += 1,
                Err(storage::StorageError::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
}
