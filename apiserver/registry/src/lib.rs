//! The registry: the served API groups (one plugin each) and the generic store that serves a resource through its
//! plugin's strategy and the storage (like `k8s.io/apiserver`'s `genericregistry.Store`).

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use apimachinery::object;
use apimachinery::plugin::{HostReads, ReadError};
use apimachinery::status::ApiError;
use rest::plugin::Plugin;
use storage::cacher::{Cacher, CacherOptions};
use storage::keys::{key_prefix, object_key, resource_of_key};
use storage::{ListOptions, Storage, StorageError};

pub mod controllers;
pub mod errors;
pub mod event_ttl;
pub mod gc;
pub mod migration;
pub mod namespaces;
pub mod quota;
pub mod read;
pub mod resource_quotas;
pub mod service_accounts;
pub mod store;
pub mod write_options;

/// The set of served plugins, by API group. Replaced as a whole when plugins change, so a request sees one
/// consistent set from start to end.
#[derive(Default)]
pub struct Apis {
    /// Plugins by group name.
    groups: BTreeMap<String, Arc<Plugin>>,
    /// The same plugins in group order, as admission is given them.
    served: Vec<Arc<Plugin>>,
    /// The store of each served resource, by group and plural, built with this set ([`Registry::install`]).
    stores: HashMap<String, HashMap<String, Arc<store::ResourceStorage>>>,
    /// The OpenAPI v3 root document, built on first use (it hashes every group-version document).
    openapi_v3_root: std::sync::OnceLock<serde_json::Value>,
}

impl Apis {
    /// The set of `groups`, without stores (those of [`Registry::install`]).
    pub fn of_groups(groups: BTreeMap<String, Arc<Plugin>>) -> Apis {
        Apis {
            served: groups.values().cloned().collect(),
            groups,
            stores: HashMap::new(),
            openapi_v3_root: Default::default(),
        }
    }

    /// The schemes of the served groups, in group order.
    pub fn group_infos(&self) -> Vec<apimachinery::scheme::GroupInfo> {
        self.groups.values().map(|p| p.group.clone()).collect()
    }

    /// The OpenAPI v3 root for this set of plugins, built by `build` from the groups' schemes on first use (the
    /// endpoints own the document's layout), then kept as long as this set is served.
    pub fn openapi_v3_root(
        &self,
        build: impl FnOnce(&[apimachinery::scheme::GroupInfo]) -> serde_json::Value,
    ) -> &serde_json::Value {
        self.openapi_v3_root.get_or_init(|| build(&self.group_infos()))
    }

    /// The plugin serving a group.
    pub fn group(&self, group: &str) -> Option<&Arc<Plugin>> {
        self.groups.get(group)
    }

    /// The plugins in group order.
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.served.iter()
    }

    /// The plugins in group order, as a slice (what admission is given).
    pub fn served(&self) -> &[Arc<Plugin>] {
        &self.served
    }

    /// The store of a served resource.
    pub fn store(&self, group: &str, resource: &str) -> Option<&Arc<store::ResourceStorage>> {
        self.stores.get(group)?.get(resource)
    }
}

/// The registry: storage, its watch caches, and the current set of plugins.
pub struct Registry {
    /// The storage backend.
    pub storage: Arc<dyn Storage>,
    /// The watch caches of the served resources.
    caches: Arc<Caches>,
    apis: RwLock<Arc<Apis>>,
    /// The built-in groups, served whatever the plugins are.
    builtins: RwLock<Vec<Arc<Plugin>>>,
    /// The admission chain its writes pass.
    admission: RwLock<Arc<admission::Chain>>,
    /// The storage quota of its tenant.
    pub quota: Arc<quota::Quota>,
    /// Whether it was closed (its tenant is no longer served): background work on it stops.
    closed: tokio::sync::watch::Sender<bool>,
    /// After how long unused a watch cache or a plugin instance is dropped, in milliseconds (0: never).
    idle_after_millis: std::sync::atomic::AtomicU64,
    /// Whether creates use `create-pipeline` when a plugin exports it (`--create-pipeline`; on by default).
    create_pipeline: std::sync::atomic::AtomicBool,
    /// The garbage collector of its objects.
    pub gc: Arc<gc::GarbageCollector>,
    /// The namespaces whose ResourceQuotas are to be counted again (objects were deleted there).
    pub quota_replenish: Arc<resource_quotas::Replenish>,
    /// The namespaces that have ResourceQuotas, kept by the quota controller.
    pub quota_namespaces: Arc<resource_quotas::QuotaNamespaces>,
}

impl Drop for Registry {
    fn drop(&mut self) {
        component_base::metrics::metrics().registries.dec();
    }
}

/// The default of [`Registry::set_idle_after`].
pub const DEFAULT_IDLE_AFTER: std::time::Duration = std::time::Duration::from_secs(120);

/// Evicts a registry's idle caches and instances every so often, until it is closed or dropped.
async fn evict_idle_until_closed(registry: std::sync::Weak<Registry>) {
    loop {
        let period = match registry.upgrade() {
            // At most a few seconds: the first period is computed before the server sets the registry's idle time
            // (with the default's 30 s, a 5 s idle time was first applied half a minute after the start).
            Some(r) if !r.is_closed() => r.idle_after().map_or(Duration::from_secs(5), |idle| {
                (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5))
            }),
            _ => return,
        };
        tokio::time::sleep(period).await;
        match registry.upgrade() {
            Some(r) if !r.is_closed() => {
                r.evict_idle();
            }
            _ => return,
        }
    }
}

impl Registry {
    /// A registry over a storage backend, with no plugins yet, and a watch cache with default settings for each
    /// resource that will be served.
    pub fn new(storage: Arc<dyn Storage>) -> Arc<Registry> {
        Registry::with_watch_cache(storage, Some(WatchCacheConfig::default()))
    }

    /// A registry whose served resources get watch caches as `config` says, or none. Call it within a tokio
    /// runtime, which the caches' tasks will run on.
    pub fn with_watch_cache(storage: Arc<dyn Storage>, config: Option<WatchCacheConfig>) -> Arc<Registry> {
        Registry::with_builtins(storage, config, Vec::new())
    }

    /// A registry as [`with_watch_cache`](Registry::with_watch_cache) makes, serving the built-in groups of `extra`
    /// besides kube's (the host's own, such as the tenants' group).
    pub fn with_builtins(
        storage: Arc<dyn Storage>,
        config: Option<WatchCacheConfig>,
        extra: Vec<Arc<Plugin>>,
    ) -> Arc<Registry> {
        let mut builtins = builtin::plugins();
        builtins.extend(extra);
        let registry = Arc::new_cyclic(|weak| Registry {
            gc: Arc::new(gc::GarbageCollector::new(weak.clone())),
            caches: Arc::new(Caches::new(storage.clone(), config)),
            idle_after_millis: std::sync::atomic::AtomicU64::new(DEFAULT_IDLE_AFTER.as_millis() as u64),
            create_pipeline: std::sync::atomic::AtomicBool::new(true),
            storage,
            apis: RwLock::new(Arc::new(Apis::default())),
            builtins: RwLock::new(builtins),
            admission: RwLock::default(),
            closed: tokio::sync::watch::Sender::new(false),
            quota: Arc::default(),
            quota_replenish: Arc::default(),
            quota_namespaces: Arc::default(),
        });
        registry.set_plugins(Vec::new());
        component_base::metrics::metrics().registries.inc();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(evict_idle_until_closed(Arc::downgrade(&registry)));
        }
        registry
    }

    /// Turns the one-call create on or off (`--create-pipeline`): off, creates make the separate calls, for
    /// comparing the two.
    pub fn set_create_pipeline(&self, on: bool) {
        self.create_pipeline.store(on, std::sync::atomic::Ordering::Relaxed);
        self.reinstall();
    }

    /// Whether creates use `create-pipeline` when a plugin exports it.
    pub fn create_pipeline(&self) -> bool {
        self.create_pipeline.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Drops what has not been used for `idle` (0: never): watch caches no watch is served from, and pooled plugin
    /// instances.
    pub fn set_idle_after(&self, idle: std::time::Duration) {
        let millis = u64::try_from(idle.as_millis()).unwrap_or(u64::MAX);
        self.idle_after_millis
            .store(millis, std::sync::atomic::Ordering::Relaxed);
    }

    fn idle_after(&self) -> Option<std::time::Duration> {
        match self.idle_after_millis.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            millis => Some(std::time::Duration::from_millis(millis)),
        }
    }

    /// Drops the watch caches and plugin instances unused for the idle time.
    pub fn evict_idle(&self) {
        if let Some(idle) = self.idle_after() {
            self.caches.evict_idle(idle);
            for plugin in self.apis().plugins() {
                plugin.evict_idle(idle);
            }
        }
    }

    /// Closes the registry: its watch caches stop (their watches end) and the background work that follows it
    /// (controllers, the RBAC index) stops. Its tenant is no longer served.
    pub fn close(&self) {
        self.closed.send_replace(true);
        // Admission checks may hold the registry (RBAC's escalation check holds the RBAC index, which holds it):
        // dropping them (back to the plugins' admission alone) breaks the cycle, so a removed tenant's memory comes
        // back.
        if let Ok(mut admission) = self.admission.write() {
            *admission = Arc::default();
        }
        // The stores hold the checks too.
        self.reinstall();
        self.caches
            .served
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        self.caches
            .by_prefix
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Whether it was closed.
    pub fn is_closed(&self) -> bool {
        *self.closed.borrow()
    }

    /// Resolves when the registry is closed.
    pub async fn closed(&self) {
        let mut rx = self.closed.subscribe();
        let _ = rx.wait_for(|c| *c).await;
    }

    /// Runs `work` until the registry is closed.
    pub async fn until_closed<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        tokio::select! {
            out = work => Some(out),
            () = self.closed() => None,
        }
    }

    /// Sets the admission chain every later write passes (the plugins' admission alone until it is set).
    pub fn set_admission(&self, chain: admission::Chain) {
        if let Ok(mut slot) = self.admission.write() {
            *slot = Arc::new(chain);
        }
        self.reinstall();
    }

    /// Reads of its stored objects, for admission checks: from the watch caches when allowed, else from storage.
    pub fn admission_reader(&self) -> Arc<dyn admission::Reader> {
        Arc::new(AdmissionReads {
            storage: self.storage.clone(),
            caches: self.caches.clone(),
        })
    }

    /// What the ResourceQuota admission check writes and counts through.
    pub fn admission_quota_store(&self) -> Arc<dyn admission::resource_quota::QuotaStore> {
        Arc::new(resource_quotas::QuotaStore {
            storage: self.storage.clone(),
            caches: self.caches.clone(),
            replenish: self.quota_replenish.clone(),
            namespaces: self.quota_namespaces.clone(),
        })
    }

    /// The set of `groups` with a store for each of their resources, built with the registry's admission chain and
    /// settings as they are now.
    fn install(&self, groups: BTreeMap<String, Arc<Plugin>>) -> Apis {
        let admission = self.admission();
        let create_pipeline = self.create_pipeline();
        let stores = groups
            .iter()
            .map(|(group, plugin)| {
                let resources = plugin
                    .group
                    .resources
                    .iter()
                    .map(|resource| {
                        let installed = store::ResourceStorage {
                            plugin: plugin.clone(),
                            resource: resource.clone(),
                            storage: self.storage.clone(),
                            admission: admission.clone(),
                            quota: self.quota.clone(),
                            create_pipeline,
                            gc: Some(self.gc.clone()),
                            replenish: Some(self.quota_replenish.clone()),
                            stored_version: Default::default(),
                        };
                        (resource.plural.clone(), Arc::new(installed))
                    })
                    .collect();
                (group.clone(), resources)
            })
            .collect();
        Apis {
            stores,
            ..Apis::of_groups(groups)
        }
    }

    /// Builds the stores of the served set again, after a change of the admission checks or settings they hold.
    fn reinstall(&self) {
        if let Ok(mut slot) = self.apis.write() {
            let apis = self.install(slot.groups.clone());
            *slot = Arc::new(apis);
        }
    }

    /// The admission chain.
    pub fn admission(&self) -> Arc<admission::Chain> {
        self.admission.read().map(|a| a.clone()).unwrap_or_default()
    }

    /// Whether a group is built into the host (no plugin may serve it).
    pub fn is_builtin_group(&self, group: &str) -> bool {
        self.builtins().iter().any(|p| p.group.group == group)
    }

    fn builtins(&self) -> Vec<Arc<Plugin>> {
        self.builtins.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Serves `plugin` in place of the built-in group of the same name (such as the root's stored, writable
    /// tenants in place of a tenant's view of itself), with the plugins served now.
    pub fn replace_builtin(self: &Arc<Self>, plugin: Arc<Plugin>) {
        {
            let mut builtins = self.builtins.write().unwrap_or_else(PoisonError::into_inner);
            builtins.retain(|p| p.group.group != plugin.group.group);
            builtins.push(plugin);
        }
        let plugins: Vec<Arc<Plugin>> = self
            .apis()
            .plugins()
            .filter(|p| !self.is_builtin_group(&p.group.group))
            .cloned()
            .collect();
        self.set_plugins(plugins);
    }

    /// Replaces the stored object `previous` (its key and revision) with `obj`, written around the store by the host
    /// (no strategy, no admission), its change of size counted in the quota as the store would count it.
    pub async fn update_around_store(
        &self,
        previous: &storage::KeyValue,
        obj: &serde_json::Value,
    ) -> storage::Result<storage::KeyValue> {
        let value = obj.to_string().into_bytes();
        let grown = value.len() as i64 - previous.value.len() as i64;
        let stored = self.storage.update(&previous.key, value, previous.mod_revision).await?;
        self.quota.record(&previous.key, 0, grown);
        Ok(stored)
    }

    /// The store of a served resource in its storage version, for the server's own writes (as `system:apiserver`,
    /// in `system:masters`).
    pub fn system_store(&self, group: &str, resource: &str) -> Option<store::ResourceStore> {
        self.store_as_server(group, resource, self.cache(group, resource))
    }

    /// Like [`Registry::system_store`], for background work such as the garbage collector's: the resource's watch
    /// cache is told of the writes if it runs, and is not started.
    pub fn background_store(&self, group: &str, resource: &str) -> Option<store::ResourceStore> {
        self.store_as_server(group, resource, self.caches.running(group, resource))
    }

    fn store_as_server(&self, group: &str, resource: &str, cache: Option<Arc<Cacher>>) -> Option<store::ResourceStore> {
        let apis = self.apis();
        let installed = apis.store(group, resource)?.clone();
        Some(store::ResourceStore {
            version: installed.resource.storage_version().to_owned(),
            installed,
            apis,
            cache,
            user: authn::UserInfo::new(authn::SYSTEM_APISERVER, [authn::MASTERS_GROUP]).authenticated(),
            subresource: store::Subresource::None,
            field_manager: "wasm-apiserver".into(),
        })
    }

    /// The current set of plugins.
    pub fn apis(&self) -> Arc<Apis> {
        self.apis.read().map(|a| a.clone()).unwrap_or_default()
    }

    /// Whether a plugin serves this resource (or its `status` or `scale` subresource) in this version.
    pub fn serves(&self, group: &str, version: &str, resource: &str, subresource: Option<&str>) -> bool {
        let apis = self.apis();
        apis.group(group)
            .and_then(|plugin| plugin.resource(resource))
            .and_then(|r| r.served_version(version))
            .is_some_and(|v| match subresource {
                None => true,
                Some("status") => v.subresources.status,
                Some("scale") => v.subresources.scale.is_some(),
                Some("finalize") => v.subresources.finalize,
                Some("token") => v.subresources.token,
                Some(_) => false,
            })
    }

    /// Deletes a stored object of `resource` as the server does in the background (no admission, no finalizers)
    /// if it is still at `revision`: `false` when it has changed or is gone. Its quota and its resource's watch
    /// cache are told.
    pub async fn delete_stored(
        &self,
        group: &str,
        resource: &str,
        key: &str,
        revision: storage::Revision,
    ) -> anyhow::Result<bool> {
        match self.storage.delete(key, Some(revision)).await {
            Ok((prev, deleted_at)) => {
                self.quota.record(key, -1, -(prev.value.len() as i64));
                if let Some(cache) = self.cache(group, resource) {
                    cache.note_write(deleted_at);
                }
                // A namespaced object's namespace: its ResourceQuotas are counted again.
                let rest = key
                    .strip_prefix(key_prefix(group, resource, None).as_str())
                    .unwrap_or_default();
                if let Some((namespace, _)) = rest.split_once('/') {
                    self.quota_replenish.note(namespace);
                }
                Ok(true)
            }
            Err(storage::StorageError::NotFound { .. } | storage::StorageError::Conflict { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// The watch cache of a served resource (none when watch caches are disabled).
    pub fn cache(&self, group: &str, resource: &str) -> Option<Arc<Cacher>> {
        self.caches.get(group, resource)
    }

    /// The watch cache of a served resource if it is running (none is started).
    pub fn running_cache(&self, group: &str, resource: &str) -> Option<Arc<Cacher>> {
        self.caches.running(group, resource)
    }

    /// Sets the watch cache gauges of the metrics from the caches' current state.
    pub fn record_cache_metrics(&self) {
        let metrics = component_base::metrics::metrics();
        let gauges = [
            &metrics.watch_cache_objects,
            &metrics.watch_cache_bytes,
            &metrics.watch_cache_watchers,
            &metrics.watch_cache_upstream_reads,
        ];
        for gauge in gauges {
            gauge.clear();
        }
        let caches = self.caches.by_prefix.lock().unwrap_or_else(PoisonError::into_inner);
        for (prefix, cache) in caches.iter() {
            let mut parts = prefix.trim_matches('/').split('/').skip(1);
            let labels = component_base::metrics::ResourceLabels {
                group: parts.next().unwrap_or_default().to_owned(),
                resource: parts.next().unwrap_or_default().to_owned(),
            };
            let stats = cache.stats();
            let values = [
                stats.objects,
                stats.bytes,
                stats.watchers,
                stats.upstream_reads as usize,
            ];
            for (gauge, value) in gauges.iter().zip(values) {
                gauge
                    .get_or_create(&labels)
                    .set(i64::try_from(value).unwrap_or(i64::MAX));
            }
        }
    }

    /// Replaces the set of plugins atomically, granting each its reads. Every served resource gets a watch cache
    /// (kept across plugin reloads: the stored objects do not change); the caches of resources no longer served
    /// are dropped.
    pub fn set_plugins(self: &Arc<Self>, plugins: Vec<Arc<Plugin>>) {
        let reader: Arc<dyn HostReads> = Arc::new(StorageReads {
            storage: self.storage.clone(),
            caches: self.caches.clone(),
        });
        let mut groups = BTreeMap::new();
        for p in self.builtins() {
            groups.insert(p.group.group.clone(), p.clone());
        }
        for p in plugins {
            if self.is_builtin_group(&p.group.group) {
                tracing::error!(plugin = p.name(), group = %p.group.group, "not served: the group is built into the server");
                continue;
            }
            p.grant_reads(reader.clone());
            groups.insert(p.group.group.clone(), p);
        }
        let prefixes = groups
            .values()
            .flat_map(|p| {
                // Resources that cannot be read back (the access reviews) or are not stored (computed on each
                // read) need no cache.
                p.group
                    .resources
                    .iter()
                    .filter(|r| r.has_verb("get") || r.has_verb("list"))
                    .filter(|r| p.strategy.stored(&r.plural))
                    .map(|r| key_prefix(&p.group.group, &r.plural, None))
            })
            .collect();
        if !self.is_closed() {
            self.caches.serve(prefixes);
        }
        // Installed under the lock, so that an admission chain set meanwhile is in the stores.
        if let Ok(mut slot) = self.apis.write() {
            *slot = Arc::new(self.install(groups));
        }
        self.gc.resources_changed();
    }
}

/// The watch caches, one per served resource, by resource key prefix.
/// The settings of the watch caches.
#[derive(Clone, Debug, Default)]
pub struct WatchCacheConfig {
    /// The settings of every resource's cache.
    pub options: CacherOptions,
    /// Event history sizes of particular resources, by `<resource>.<group>`, instead of `options.history`; 0 serves
    /// the resource without a cache (as kube-apiserver's `--watch-cache-sizes`).
    pub sizes: BTreeMap<String, usize>,
}

struct Caches {
    /// The storage the caches follow.
    storage: Arc<dyn Storage>,
    /// Their settings; `None` disables watch caches.
    config: Option<WatchCacheConfig>,
    /// The runtime their tasks run on (plugins may be reloaded from a thread outside it).
    runtime: Option<tokio::runtime::Handle>,
    /// The started caches.
    by_prefix: Mutex<BTreeMap<String, Arc<Cacher>>>,
    /// The served resources' prefixes with their history sizes, and when each cache was last used: a cache starts on
    /// first use and stops when unused for a while ([`Caches::evict_idle`]).
    served: Mutex<BTreeMap<String, Served>>,
}

struct Served {
    history: usize,
    last_used: std::time::Instant,
}

impl Caches {
    fn new(storage: Arc<dyn Storage>, config: Option<WatchCacheConfig>) -> Caches {
        Caches {
            storage,
            config,
            runtime: tokio::runtime::Handle::try_current().ok(),
            by_prefix: Mutex::default(),
            served: Mutex::default(),
        }
    }

    /// The cache of a resource, if it is served and caches are enabled: started on first use.
    fn get(&self, group: &str, resource: &str) -> Option<Arc<Cacher>> {
        let prefix = key_prefix(group, resource, None);
        let history = {
            let mut served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
            let entry = served.get_mut(&prefix)?;
            entry.last_used = std::time::Instant::now();
            entry.history
        };
        let mut caches = self.by_prefix.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(cache) = caches.get(&prefix) {
            return Some(cache.clone());
        }
        let config = self.config.as_ref()?;
        let runtime = self
            .runtime
            .clone()
            .or_else(|| tokio::runtime::Handle::try_current().ok())?;
        let _entered = runtime.enter();
        let options = CacherOptions {
            history,
            ..config.options.clone()
        };
        let cache = Cacher::start(self.storage.clone(), prefix.clone(), options);
        caches.insert(prefix, cache.clone());
        Some(cache)
    }

    /// The cache of a resource if it is running (none is started).
    fn running(&self, group: &str, resource: &str) -> Option<Arc<Cacher>> {
        let prefix = key_prefix(group, resource, None);
        self.by_prefix
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&prefix)
            .cloned()
    }

    /// Serves exactly these resource prefixes: their caches start on first use; the caches of others stop (their
    /// watches end).
    fn serve(&self, prefixes: std::collections::BTreeSet<String>) {
        let Some(config) = &self.config else {
            return;
        };
        if self.runtime.is_none() && tokio::runtime::Handle::try_current().is_err() {
            tracing::warn!("no async runtime: resources are served without watch caches");
            return;
        }
        let mut served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        let mut caches = self.by_prefix.lock().unwrap_or_else(PoisonError::into_inner);
        served.retain(|prefix, _| prefixes.contains(prefix));
        for prefix in prefixes {
            let history = match config.sizes.get(&resource_of_key(&prefix)) {
                Some(0) => {
                    served.remove(&prefix);
                    continue;
                }
                Some(&size) => size,
                None => config.options.history,
            };
            if served.get(&prefix).is_some_and(|s| s.history != history) {
                caches.remove(&prefix);
            }
            served
                .entry(prefix)
                .and_modify(|s| s.history = history)
                .or_insert(Served {
                    history,
                    last_used: std::time::Instant::now(),
                });
        }
        caches.retain(|prefix, _| served.contains_key(prefix));
    }

    /// Stops the caches unused for `idle` that no watch is served from.
    fn evict_idle(&self, idle: std::time::Duration) {
        let served = self.served.lock().unwrap_or_else(PoisonError::into_inner);
        let mut caches = self.by_prefix.lock().unwrap_or_else(PoisonError::into_inner);
        caches.retain(|prefix, cache| {
            served.get(prefix).is_some_and(|s| s.last_used.elapsed() < idle) || cache.stats().watchers > 0
        });
    }
}

/// The host imports' reads. Served from the watch cache when there is one, at a revision no older than the
/// resource's latest write through this host (plugins read their own writes, as an admission plugin reading an
/// informer would, a little fresher); from storage otherwise.
struct StorageReads {
    storage: Arc<dyn Storage>,
    caches: Arc<Caches>,
}

impl HostReads for StorageReads {
    fn get(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        let key = object_key(group, resource, namespace, name);
        let kv = match self.caches.get(group, resource) {
            Some(cache) => block_on(cache.get(&key, cache.last_write())),
            None => block_on(self.storage.get(&key)),
        }
        .map_err(|e| read_error(e, group, resource, name))?;
        Ok(kv.map(|kv| stored_text(&kv)))
    }

    fn list(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<String>, ReadError> {
        let selector =
            apimachinery::labels::LabelSelector::parse(selector).map_err(|e| ReadError::Invalid(e.to_string()))?;
        let prefix = key_prefix(group, resource, namespace);
        let list = match self.caches.get(group, resource) {
            Some(cache) => block_on(cache.list(&prefix, ListOptions::default(), cache.last_write())),
            None => block_on(self.storage.list(&prefix, ListOptions::default())),
        }
        .map_err(|e| read_error(e, group, resource, ""))?;
        let mut out = Vec::new();
        for kv in list.items {
            match serde_json::from_slice::<serde_json::Value>(&kv.value) {
                Ok(mut obj) => {
                    if selector.matches(&object::labels(&obj)) {
                        object::set_resource_version(&mut obj, kv.mod_revision);
                        out.push(obj.to_string());
                    }
                }
                // Not JSON (nothing the host stores): passed on as it is when nothing is selected by label.
                Err(_) if selector.is_empty() => out.push(String::from_utf8_lossy(&kv.value).into_owned()),
                Err(_) => {}
            }
        }
        Ok(out)
    }
}

/// A host read's storage failure, as the plugin call that made it fails with it.
fn read_error(e: StorageError, group: &str, resource: &str, name: &str) -> ReadError {
    ReadError::Storage(Box::new(errors::from_storage(e, group, resource, name)))
}

/// Admission's reads of the stored objects.
struct AdmissionReads {
    storage: Arc<dyn Storage>,
    caches: Arc<Caches>,
}

impl AdmissionReads {
    /// The watch cache a read of this freshness may be served from.
    fn cache(&self, group: &str, resource: &str, freshness: admission::Freshness) -> Option<Arc<Cacher>> {
        match freshness {
            admission::Freshness::Cached => self.caches.get(group, resource),
            admission::Freshness::Latest => None,
        }
    }
}

impl admission::Reader for AdmissionReads {
    fn cached(&self, group: &str, resource: &str) -> bool {
        self.caches.get(group, resource).is_some()
    }

    fn list<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
        freshness: admission::Freshness,
    ) -> storage::BoxFuture<'a, Result<Vec<Arc<storage::KeyValue>>, ApiError>> {
        Box::pin(async move {
            let prefix = key_prefix(group, resource, namespace);
            match self.cache(group, resource, freshness) {
                Some(cache) => cache
                    .list_shared(&prefix, ListOptions::default(), 0)
                    .await
                    .map(|l| l.items.into_iter().map(|o| o.kv).collect()),
                None => self
                    .storage
                    .list(&prefix, ListOptions::default())
                    .await
                    .map(|l| l.items.into_iter().map(Arc::new).collect()),
            }
            .map_err(|e| errors::from_storage(e, group, resource, ""))
        })
    }

    fn get<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
        name: &'a str,
        freshness: admission::Freshness,
    ) -> storage::BoxFuture<'a, Result<Option<storage::KeyValue>, ApiError>> {
        Box::pin(async move {
            let key = object_key(group, resource, namespace, name);
            // An object just written may not have reached the cache yet: one the cache has not is read from
            // storage.
            if let Some(cache) = self.cache(group, resource, freshness) {
                if let Ok(Some(kv)) = cache.get(&key, 0).await {
                    return Ok(Some(kv));
                }
            }
            self.storage
                .get(&key)
                .await
                .map_err(|e| errors::from_storage(e, group, resource, name))
        })
    }
}

/// Waits for a storage future from the blocking context a plugin call runs in.
fn block_on<T>(f: impl std::future::Future<Output = Result<T, StorageError>>) -> Result<T, StorageError> {
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|e| StorageError::Internal(format!("no runtime for a host read: {e}")))?;
    let mut f = std::pin::pin!(f);
    if let Some(result) = futures_util::FutureExt::now_or_never(f.as_mut()) {
        return result;
    }
    let wait = || handle.block_on(f);
    match handle.runtime_flavor() {
        tokio::runtime::RuntimeFlavor::MultiThread => tokio::task::block_in_place(wait),
        _ => wait(),
    }
}

/// A stored value as JSON text with its resourceVersion set.
fn stored_text(kv: &storage::KeyValue) -> String {
    match serde_json::from_slice::<serde_json::Value>(&kv.value) {
        Ok(mut obj) => {
            object::set_resource_version(&mut obj, kv.mod_revision);
            obj.to_string()
        }
        Err(_) => String::from_utf8_lossy(&kv.value).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::embedded::EmbeddedStorage;

    struct AllowAll;

    impl admission::Check for AllowAll {
        fn name(&self) -> &'static str {
            "AllowAll"
        }

        fn validate<'a>(
            &'a self,
            _: &'a admission::Attributes<'a>,
        ) -> storage::BoxFuture<'a, Result<Vec<String>, apimachinery::status::ApiError>> {
            Box::pin(async { Ok(Vec::new()) })
        }
    }

    /// Each served resource's store is built once with its set of plugins, and again when the plugins or the
    /// admission checks it holds change: requests share it.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stores_are_built_when_the_plugins_or_admission_change_and_shared_between() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let registry = Registry::with_watch_cache(storage, None);
        let first = registry
            .apis()
            .store("", "namespaces")
            .cloned()
            .expect("a built-in resource");
        let again = registry.apis().store("", "namespaces").cloned().unwrap();
        assert!(Arc::ptr_eq(&first, &again), "two requests share one store");
        assert_eq!(
            first.admission.names(),
            ["PluginAdmission"],
            "the plugins' admission alone"
        );
        assert_eq!(
            (first.resource.plural.as_str(), first.plugin.group.group.as_str()),
            ("namespaces", "")
        );
        registry.set_admission(admission::Chain::new(vec![
            Arc::new(AllowAll),
            Arc::new(admission::plugins::PluginAdmission),
        ]));
        let with_check = registry.apis().store("", "namespaces").cloned().unwrap();
        assert!(!Arc::ptr_eq(&first, &with_check));
        assert_eq!(
            with_check.admission.names(),
            ["AllowAll", "PluginAdmission"],
            "the new chain is in the store"
        );
        registry.set_create_pipeline(false);
        assert!(!registry.apis().store("", "namespaces").unwrap().create_pipeline);
        registry.set_plugins(Vec::new());
        let reloaded = registry.apis().store("", "namespaces").cloned().unwrap();
        assert!(!Arc::ptr_eq(&with_check, &reloaded), "a reload builds the stores again");
        assert_eq!(reloaded.admission.names().len(), 2);
        assert!(registry
            .system_store("", "namespaces")
            .is_some_and(|s| Arc::ptr_eq(&s.installed, &reloaded)));
        registry.close();
        assert!(
            registry.apis().store("", "namespaces").unwrap().admission.names() == ["PluginAdmission"],
            "a closed registry's stores hold no check of the server's (they may hold the registry)"
        );
    }

    /// Host reads of three fischers, two labelled `team=a`, from the store directly and through a watch cache.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn host_lists_select_by_label_and_carry_resource_versions() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let mut revisions = BTreeMap::new();
        for (name, team) in [("f1", "a"), ("f2", "b"), ("f3", "a")] {
            let obj = serde_json::json!({"kind": "Fischer", "metadata": {"name": name, "labels": {"team": team}}});
            let key = object_key("wardle.example.com", "fischers", None, name);
            let kv = storage.create(&key, obj.to_string().into_bytes()).await.unwrap();
            revisions.insert(name.to_owned(), kv.mod_revision.to_string());
        }
        for options in [None, Some(CacherOptions::default())] {
            let caches = Arc::new(Caches::new(
                storage.clone(),
                options.map(|options| WatchCacheConfig {
                    options,
                    sizes: BTreeMap::new(),
                }),
            ));
            caches.serve([key_prefix("wardle.example.com", "fischers", None)].into());
            let reads = StorageReads {
                storage: storage.clone(),
                caches,
            };
            let list = |selector: &str| {
                let mut got: Vec<(String, String)> = reads
                    .list("wardle.example.com", "fischers", None, selector)
                    .unwrap()
                    .iter()
                    .map(|text| {
                        let obj: serde_json::Value = serde_json::from_str(text).unwrap();
                        let meta = &obj["metadata"];
                        (
                            meta["name"].as_str().unwrap().to_owned(),
                            meta["resourceVersion"].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect();
                got.sort();
                got
            };
            let expect = |names: &[&str]| -> Vec<(String, String)> {
                names.iter().map(|n| (n.to_string(), revisions[*n].clone())).collect()
            };
            assert_eq!(list(""), expect(&["f1", "f2", "f3"]));
            assert_eq!(list("team=a"), expect(&["f1", "f3"]));
            assert_eq!(list("team!=a"), expect(&["f2"]));
            assert_eq!(list("team in (c)"), expect(&[]));
            assert!(matches!(
                reads.list("wardle.example.com", "fischers", None, "team in a"),
                Err(ReadError::Invalid(_))
            ));
        }
    }

    use serde_json::Value;

    /// Counts the reads it decorates: `status.reads` is filled in on every object returned, never stored.
    #[derive(Default)]
    struct Decorating {
        reads: std::sync::atomic::AtomicU64,
    }

    impl rest::strategy::Strategy for Decorating {
        fn decorates(&self, _resource: &str) -> bool {
            true
        }

        fn decorate(&self, _resource: &str, obj: &mut Value) {
            let n = self.reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            obj["status"] = serde_json::json!({"reads": n});
        }
    }

    /// A decorating strategy's objects are decorated on every get, list (with a selector and without), watch event
    /// and write answer, never remembered decorated, and never stored with their decorations.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_decorating_strategy_fills_in_every_object_returned_and_nothing_stored() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let registry = Registry::with_watch_cache(storage.clone(), Some(WatchCacheConfig::default()));
        let group = apimachinery::scheme::GroupInfo {
            group: "test.example.com".into(),
            resources: apimachinery::scheme::shared(vec![builtin::resource(
                "Gauge",
                "gauges",
                &[],
                false,
                "v1",
                serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
            )]),
            reads: Vec::new(),
        };
        let exports = apimachinery::scheme::Exports {
            create: true,
            update: true,
            delete: true,
            lister: true,
            ..Default::default()
        };
        let strategy = Arc::new(Decorating::default());
        let plugin = rest::plugin::Plugin::native("gauges", group, exports, Vec::new(), Vec::new(), strategy);
        registry.set_plugins(vec![Arc::new(plugin)]);
        let store = Arc::new(registry.system_store("test.example.com", "gauges").expect("served"));
        let opts = store::WriteOptions {
            dry_run: false,
            field_validation: store::FieldValidation::Strict,
        };
        let body = serde_json::json!({"apiVersion": "test.example.com/v1", "kind": "Gauge", "metadata": {"name": "g"}});
        let reads = |obj: &Value| {
            obj["status"]["reads"]
                .as_u64()
                .unwrap_or_else(|| panic!("undecorated: {obj}"))
        };

        let created = store.create(None, body, opts).await.unwrap();
        let first = reads(&created.object);
        let got = store.get(None, "g", read::ReadAt::Latest).await.unwrap();
        let again = store.get(None, "g", read::ReadAt::Latest).await.unwrap();
        assert!(
            first < reads(&got) && reads(&got) < reads(&again),
            "decorated on every read"
        );
        assert!(
            store.get_wire(None, "g", read::ReadAt::Latest).await.unwrap().is_none(),
            "never from the bytes"
        );
        let list = store.list(None, &store::ListParams::default()).await.unwrap();
        assert!(reads(&list.items[0]) > reads(&again));
        assert!(store
            .list_shared(None, &store::ListParams::default())
            .await
            .unwrap()
            .is_none());
        let stored = storage
            .get(&object_key("test.example.com", "gauges", None, "g"))
            .await
            .unwrap()
            .unwrap();
        let stored: Value = serde_json::from_slice(&stored.value).unwrap();
        assert_eq!(stored.get("status"), None, "decorations are never stored: {stored}");

        // A watch's events carry decorated objects too.
        let params = store::ListParams {
            resource_version: Some(list.resource_version.to_string()),
            ..Default::default()
        };
        let mut events = store.clone().watch(None, params, None, true).await.unwrap();
        let patched = store
            .patch(
                None,
                "g",
                |old| {
                    let mut new = old.clone();
                    new["metadata"]["labels"] = serde_json::json!({"a": "b"});
                    Ok(new)
                },
                opts,
            )
            .await
            .unwrap();
        let after_patch = reads(&patched.object);
        let event = loop {
            match tokio::time::timeout(std::time::Duration::from_secs(10), events.next()).await {
                Ok(Some(store::WatchItem::Stored(ev))) => break ev.object(&store).unwrap(),
                Ok(Some(_)) => continue,
                other => panic!("no event: {}", other.is_ok()),
            }
        };
        assert!(reads(&event) > after_patch, "{event}");
        let deleted = store.delete(None, "g", None, None, false, None).await.unwrap();
        assert!(reads(&deleted) > reads(&event));
    }
}
