//! Tenants: the `.wasm` files directly in the plugin directory form the default tenant, served at the
//! root; each subdirectory `DIR/<tenant>/` (a DNS-1123 label) is a tenant served under `/tenants/<tenant>/`, with its
//! own registry on its own key prefix (`/tenants/<tenant>` in storage), its own plugins, namespaces, RBAC objects and
//! authorizer, and its `tenant.yaml` ([`config`]). Identities are host-wide; rights are per tenant (`system:masters`
//! everywhere).
//!
//! One watcher follows the whole plugin directory: a new tenant directory is served without a restart, a removed one
//! stops being served (404) and keeps its data, and plugin and `tenant.yaml` changes inside a tenant take effect as
//! at the root. Requests in flight finish on the tenant they started with.
//!
//! Each tenant's usage is readable as a `Tenant` object ([`object`]): every tenant at the root, its own inside a
//! tenant.

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

mod accounts;
pub mod admins;
pub mod admission;
pub mod api;
pub mod config;
mod controller;
pub mod factory;
pub mod leader;
pub mod limiter;
pub mod mirror;
pub mod object;
pub mod plugins;
pub mod uploads;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock, Weak};
use std::time::Duration;

use anyhow::Context as _;
use notify::{RecursiveMode, Watcher as _};

use apimachinery::status::ApiError;
use authn::{UserInfo, MASTERS_GROUP, SYSTEM_APISERVER};
use authz::Authorizer;
use config::TenantConfig;
use endpoints::context::RequestContext;
use endpoints::Api;
use storage::BoxFuture;

/// One tenant's API and authorizer.
pub struct Tenant {
    /// Its name (`None`: the default tenant).
    pub name: Option<String>,
    /// Its API (registry, plugins, access reviews).
    pub api: Arc<Api>,
    /// What its `tenants` resource shows, bound once it is served ([`Tenants`]'s view of the tenants).
    tenancy: Arc<api::View>,
    /// Its authorizer (system:masters, then its RBAC).
    pub authorizer: Arc<dyn Authorizer>,
    /// Its configuration, from `tenant.yaml`.
    config: RwLock<Arc<TenantConfig>>,
    /// The host's default limits, for those its configuration leaves unset.
    defaults: config::Limits,
    /// Its request limits' counters.
    pub limiter: Arc<limiter::Limiter>,
    /// When it began being served (RFC 3339).
    since: String,
    /// Whether its `tenant.yaml` is applied: why not while it is invalid, and since when (RFC 3339) either way.
    config_state: RwLock<(Option<String>, String)>,
    /// Where it is defined.
    pub source: Source,
    /// For a tenant created through the API: the generation of its object in effect.
    observed_generation: AtomicI64,
    /// This host's state of its Plugin objects.
    pub plugin_objects: plugins::Objects,
    /// Its requests in flight and when it was last used, for dropping it when idle ([`Tenants::enter`]).
    activity: Activity,
}

/// A tenant's use: its requests in flight (a watch until its response ends) and when the last one began.
#[derive(Default)]
struct Activity {
    inflight: AtomicUsize,
    /// When the last request began, in milliseconds since [`epoch`].
    last_used: AtomicU64,
}

/// The instant the host's activity times count from.
fn epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

/// Milliseconds since [`epoch`].
fn now_millis() -> u64 {
    u64::try_from(epoch().elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A request's place among its tenant's requests in flight, given back when dropped (held by the response's body,
/// so a watch keeps its tenant in memory until it ends).
pub struct InUse {
    tenant: Arc<Tenant>,
}

impl Drop for InUse {
    fn drop(&mut self) {
        let activity = &self.tenant.activity;
        activity.last_used.store(now_millis(), Ordering::Relaxed);
        activity.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Tenant {
    /// Counts a request in flight (the caller holds the lock the tenant is dropped under).
    fn in_use(self: &Arc<Self>) -> InUse {
        self.activity.inflight.fetch_add(1, Ordering::AcqRel);
        self.activity.last_used.store(now_millis(), Ordering::Relaxed);
        InUse { tenant: self.clone() }
    }

    /// Whether no request is in flight and none began for `idle`.
    fn idle_for(&self, idle: Duration) -> bool {
        let activity = &self.activity;
        activity.inflight.load(Ordering::Acquire) == 0
            && now_millis().saturating_sub(activity.last_used.load(Ordering::Relaxed))
                >= u64::try_from(idle.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Where a tenant is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// A tenant directory (or the default tenant, the plugin directory itself).
    Directory,
    /// A Tenant object created through the API.
    Api,
}

impl Tenant {
    /// A tenant serving `api`.
    pub fn new(
        name: Option<String>,
        source: Source,
        api: Arc<Api>,
        tenancy: Arc<api::View>,
        authorizer: Arc<dyn Authorizer>,
        config: TenantConfig,
        defaults: config::Limits,
    ) -> Tenant {
        let since = apimachinery::object::now_rfc3339();
        let tenant = Tenant {
            name,
            source,
            observed_generation: AtomicI64::new(0),
            plugin_objects: plugins::Objects::default(),
            activity: Activity {
                inflight: AtomicUsize::new(0),
                last_used: AtomicU64::new(now_millis()),
            },
            api,
            tenancy,
            authorizer,
            config: RwLock::new(Arc::new(config)),
            defaults,
            limiter: Arc::default(),
            config_state: RwLock::new((None, since.clone())),
            since,
        };
        tenant.apply_limits();
        tenant
    }

    /// Its current configuration.
    pub fn config(&self) -> Arc<TenantConfig> {
        self.config.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Its limits: its configuration's, else the host's defaults.
    pub fn limits(&self) -> config::Limits {
        self.config().limits.or(&self.defaults)
    }

    /// For a tenant created through the API, the generation of its object in effect.
    pub fn observed_generation(&self) -> i64 {
        self.observed_generation.load(Ordering::Relaxed)
    }

    /// The name it is shown by (`default` for the default tenant).
    pub fn display_name(&self) -> &str {
        self.name.as_deref().unwrap_or("default")
    }

    /// Admits one of its requests under its own limits (its share of requests in flight, its request rate): a permit
    /// to hold until the response (`None` when exempt or unlimited), or the 429 to answer.
    pub fn admit(&self, ctx: &RequestContext) -> Result<Option<limiter::Permit>, ApiError> {
        self.limiter.admit(self.display_name(), &self.limits(), ctx)
    }

    /// Refuses what a request may not impersonate in this tenant ([`refuse_host_identities`]).
    pub fn refuse_host_identities(&self, requester: &UserInfo, name: &str, groups: &[String]) -> Result<(), ApiError> {
        refuse_host_identities(self.name.as_deref(), requester, name, groups)
    }

    /// Puts its limits into effect where they are enforced (the request limiter reads them on each request).
    fn apply_limits(&self) {
        let limits = self.limits();
        let quota = &self.api.registry.quota;
        quota.set_name(&format!("tenant-{}", self.display_name()));
        quota.set_limits(limits.objects, limits.storage_bytes);
        if let Some(plugins) = &self.api.plugins {
            plugins.budget().set(
                self.display_name(),
                limits.plugin_memory.unwrap_or(usize::MAX),
                limits.plugin_call_timeout.unwrap_or(Duration::MAX),
                limits.plugin_cpu,
            );
            plugins.set_limits(limits.plugins, limits.plugin_bytes);
        }
    }

    /// Why its changed `tenant.yaml` was not applied, while it is invalid.
    pub fn config_problem(&self) -> Option<String> {
        self.config_state().0
    }

    /// Why its changed `tenant.yaml` was not applied (`None`: it is applied), and since when (RFC 3339).
    pub fn config_state(&self) -> (Option<String>, String) {
        self.config_state.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn set_config_problem(&self, problem: Option<String>) {
        let mut state = self.config_state.write().unwrap_or_else(PoisonError::into_inner);
        if state.0.is_some() != problem.is_some() {
            state.1 = apimachinery::object::now_rfc3339();
        }
        state.0 = problem;
    }

    /// Replaces its configuration and puts it into effect.
    fn set_config(&self, config: TenantConfig) {
        *self.config.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(config);
        self.apply_limits();
    }

    /// Stops its background work (watch caches, controllers, the RBAC index): it is no longer served.
    fn close(&self) {
        self.api.registry.close();
        if let Some(plugins) = &self.api.plugins {
            plugins.close();
        }
    }
}

/// The reason of a tenant whose `tenant.yaml` is invalid (not served, or served with its previous configuration).
pub const INVALID_CONFIGURATION: &str = "InvalidConfiguration";
/// The reason of a tenant directory that failed to start.
pub const FAILED_TO_START: &str = "FailedToStart";

/// Builds a tenant's parts: how the server serves a tenant, given to [`Tenants`] so it can serve new ones.
pub trait Factory: Send + Sync + 'static {
    /// Builds the tenant `name` (`None`: the default tenant) with `config`, from its directory (`None`: a tenant
    /// created through the API, which has none): its registry over its key prefix, its plugins (loaded), its
    /// authorizer, default RBAC objects, namespaces and admins.
    fn build<'a>(
        &'a self,
        name: Option<&'a str>,
        dir: Option<&'a Path>,
        config: TenantConfig,
    ) -> BoxFuture<'a, anyhow::Result<Tenant>>;

    /// Brings a tenant's stored admins binding in line with its configuration.
    fn apply_admins<'a>(&'a self, tenant: &'a Tenant) -> BoxFuture<'a, anyhow::Result<()>>;

    /// Starts following a tenant's Plugin objects, once it is served (none by default); done when those stored now
    /// are served (or have failed, or taken too long).
    fn start_plugins<'a>(&'a self, _tenant: &'a Arc<Tenant>) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }

    /// Whether this host leads the controllers that must run once (deleting a deleted tenant's data).
    fn is_leader(&self) -> bool {
        true
    }

    /// After how long without requests a tenant created through the API is dropped from memory, to be built again
    /// on its next request (`None`: kept once built).
    fn idle_after(&self) -> Option<Duration> {
        None
    }
}

/// The served tenants.
pub struct Tenants {
    /// Itself, for the tenants' views of the tenants.
    me: Weak<Tenants>,
    dir: PathBuf,
    factory: Box<dyn Factory>,
    root: Arc<Tenant>,
    named: RwLock<BTreeMap<String, Arc<Tenant>>>,
    /// Tenant directories that are not served: why (a bad `tenant.yaml`, a failure to start), and since when.
    failures: RwLock<BTreeMap<String, Failure>>,
    /// The deleted tenants whose data this host is deleting now.
    finalizing: std::sync::Mutex<BTreeSet<String>>,
    /// The tenants created through the API (their objects as this host last saw them), built in `named` on their
    /// first request and dropped from it when idle. Locked before `named` when both are.
    defined: RwLock<BTreeMap<String, Defined>>,
}

/// A tenant created through the API, as its stored object defines it: what it takes to build it on its first
/// request, and to show it while it is not built (a few hundred bytes, where a built tenant takes hundreds of KiB).
struct Defined {
    /// Its configuration as its spec last said (a valid one).
    config: Arc<TenantConfig>,
    /// The generation of its object that `config` comes from.
    generation: i64,
    /// Why the spec last seen is not in effect (an invalid one), and since when (RFC 3339), if it is not.
    problem: Option<(String, String)>,
    /// When this host began serving it (RFC 3339).
    since: String,
    /// Its objects and bytes stored when it was last dropped from memory, shown until it is built again.
    usage: Option<(i64, i64)>,
    /// Held while it is built, so that its first requests build it once.
    building: Arc<tokio::sync::Mutex<()>>,
}

/// Why a tenant directory is not served.
#[derive(Clone, Debug)]
struct Failure {
    /// What failed, as a condition's reason: [`INVALID_CONFIGURATION`] or [`FAILED_TO_START`].
    cause: &'static str,
    reason: String,
    /// When it was first found failing (RFC 3339).
    since: String,
}

impl Tenants {
    /// Serves the default tenant of `dir` and every tenant directory in it. A tenant that fails to start is
    /// reported and left out; the default tenant failing fails the whole.
    pub async fn start(dir: &Path, factory: Box<dyn Factory>) -> anyhow::Result<Arc<Tenants>> {
        let root = factory.build(None, Some(dir), TenantConfig::default()).await?;
        let tenants = Arc::new_cyclic(|me| Tenants {
            me: me.clone(),
            dir: dir.to_path_buf(),
            factory,
            root: Arc::new(root),
            named: RwLock::default(),
            failures: RwLock::default(),
            finalizing: Default::default(),
            defined: RwLock::default(),
        });
        tenants.show_tenants(&tenants.root);
        tenants.factory.start_plugins(&tenants.root).await;
        // The names of the tenants created through the API are theirs: a directory of the same name is not served.
        let (objects, revision) = tenants.list_api_tenants().await?;
        let taken: BTreeSet<String> = objects.iter().map(|o| object_name(o).to_owned()).collect();
        // Tenants start side by side: each mostly waits (storage, its first lists), and their first writes (default
        // RBAC objects, namespaces) share the store's group commits.
        use futures_util::StreamExt as _;
        futures_util::stream::iter(tenant_dirs(dir))
            .for_each_concurrent(STARTING_TOGETHER, |(name, _)| {
                let (tenants, taken) = (&tenants, &taken);
                async move {
                    if taken.contains(&name) {
                        tracing::error!(tenant = %name, "tenant directory not served: a Tenant object of that name was created through the API");
                        return;
                    }
                    tenants.reconcile_serving(&name).await
                }
            })
            .await;
        tenants.start_api_tenants(objects, revision).await;
        tenants.drop_idle_tenants();
        // The stored Tenant objects are brought in line after start-up, off the way to ready: a thousand tenants are
        // a thousand reads (and, the first time, writes).
        let mirroring = tenants.clone();
        tokio::spawn(async move { mirroring.mirror_all().await });
        Ok(tenants)
    }

    /// The tenant of a request: the root for `None`, else the named one if it is served.
    pub fn get(&self, name: Option<&str>) -> Option<Arc<Tenant>> {
        match name {
            None => Some(self.root.clone()),
            Some(name) => self
                .named
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .get(name)
                .cloned(),
        }
    }

    /// The tenant a request addresses (the root for `None`), built now if it was created through the API and is not
    /// in memory; such a tenant comes with its request's place among its requests in flight, to hold until the
    /// response ends (it is not dropped as idle before). `Ok(None)`: no such tenant is served; `Err`: it failed to
    /// build, and why.
    pub async fn enter(&self, name: Option<&str>) -> Result<Option<(Arc<Tenant>, Option<InUse>)>, String> {
        let Some(name) = name else {
            return Ok(Some((self.root.clone(), None)));
        };
        match self.enter_built(name) {
            Some(entered) => Ok(Some(entered)),
            None => self.build_defined(name).await,
        }
    }

    /// The tenant a request addresses ([`enter`](Tenants::enter)), or the Status to answer: 404 NotFound when no
    /// such tenant is served, 503 (retry after a second) when it failed to build.
    pub async fn enter_request(&self, name: Option<&str>) -> Result<(Arc<Tenant>, Option<InUse>), ApiError> {
        match self.enter(name).await {
            Ok(Some(entered)) => Ok(entered),
            Ok(None) => {
                let name = name.unwrap_or_default();
                let mut e = ApiError::new(404, "NotFound", format!("tenants \"{name}\" not found"));
                e.name = Some(name.to_owned());
                e.kind = Some("tenants".into());
                Err(e)
            }
            Err(problem) => {
                let name = name.unwrap_or_default();
                let mut e = ApiError::new(
                    503,
                    "ServiceUnavailable",
                    format!("tenant \"{name}\" failed to start: {problem}"),
                );
                e.retry_after = Some(1);
                Err(e)
            }
        }
    }

    /// Whether `name` is a tenant created through the API (built or not).
    fn is_defined(&self, name: &str) -> bool {
        self.defined
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(name)
    }

    /// Drops the idle API tenants from memory every so often, while the server runs.
    fn drop_idle_tenants(self: &Arc<Self>) {
        let Some(idle) = self.factory.idle_after() else { return };
        let me = self.me.clone();
        let registry = self.root.api.registry.clone();
        tokio::spawn(async move {
            let every = (idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(5));
            let dropping = async {
                loop {
                    tokio::time::sleep(every).await;
                    let Some(tenants) = me.upgrade() else { return };
                    tenants.drop_idle(idle);
                }
            };
            registry.until_closed(dropping).await;
        });
    }

    /// The default tenant.
    pub fn root(&self) -> &Arc<Tenant> {
        &self.root
    }

    /// The names of the served tenants.
    pub fn names(&self) -> Vec<String> {
        self.named
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }

    /// The tenant directories that are not served, and why.
    pub fn failures(&self) -> BTreeMap<String, String> {
        let failures = self.failures.read().unwrap_or_else(PoisonError::into_inner);
        failures
            .iter()
            .map(|(name, f)| (name.clone(), f.reason.clone()))
            .collect()
    }

    fn set_failure(&self, name: &str, failure: Option<(&'static str, String)>) {
        let mut failures = self.failures.write().unwrap_or_else(PoisonError::into_inner);
        match failure {
            Some((cause, reason)) => {
                let since = failures
                    .remove(name)
                    .map(|f| f.since)
                    .unwrap_or_else(apimachinery::object::now_rfc3339);
                failures.insert(name.to_owned(), Failure { cause, reason, since });
            }
            None => {
                failures.remove(name);
            }
        }
    }

    /// Lets a tenant's API show the tenants: every one at the root, itself inside a tenant.
    fn show_tenants(&self, tenant: &Tenant) {
        let scope = match &tenant.name {
            None => api::Scope::All,
            Some(name) => api::Scope::Only(name.clone()),
        };
        let me: Weak<dyn api::Directory> = self.me.clone();
        let all = scope == api::Scope::All;
        tenant.tenancy.bind(scope, me);
        if all {
            // At the root, tenants are stored objects, written through the API.
            let plugin = api::root_plugin(tenant.tenancy.clone());
            tenant.api.registry.replace_builtin(Arc::new(plugin));
        }
    }

    /// Brings one tenant in line with its directory: serves it when new, reloads its `tenant.yaml` and plugins when
    /// served, stops serving it when its directory is gone.
    pub async fn reconcile_tenant(&self, name: &str) {
        self.reconcile_serving(name).await;
        self.mirror_tenant(name).await;
    }

    /// Brings the stored Tenant object of the tenant directory `name` in line with what is served.
    async fn mirror_tenant(&self, name: &str) {
        // A directory named `default` is not shown at the root, where that name is the default tenant's; a tenant
        // created through the API has its own object.
        if name == api::DEFAULT_TENANT || self.is_defined(name) {
            return;
        }
        let failed = self
            .failures
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(name);
        match self.get(Some(name)) {
            Some(tenant) => self.mirror(name, mirror::spec(Some(&tenant.config()))).await,
            None if failed => self.mirror(name, mirror::spec(None)).await,
            None => self.unmirror(name).await,
        }
    }

    /// Brings every stored Tenant object in line with the tenants served and the directories.
    async fn mirror_all(&self) {
        self.mirror(api::DEFAULT_TENANT, mirror::spec(Some(&self.root.config())))
            .await;
        use futures_util::StreamExt as _;
        futures_util::stream::iter(tenant_dirs(&self.dir))
            .for_each_concurrent(
                STARTING_TOGETHER,
                |(name, _)| async move { self.mirror_tenant(&name).await },
            )
            .await;
        self.unmirror_missing().await;
    }

    /// Serves, reloads or stops serving one tenant as its directory says.
    async fn reconcile_serving(&self, name: &str) {
        let dir = self.dir.join(name);
        let present = dir.is_dir() && tenant_name_problem(name).is_none();
        let served = self.get(Some(name));
        if self.is_defined(name) {
            if present {
                tracing::error!(
                    tenant = name,
                    "tenant directory not served: a Tenant object of that name was created through the API"
                );
            }
            return;
        }
        match (present, served) {
            (false, None) => self.set_failure(name, None),
            (false, Some(tenant)) => {
                self.named.write().unwrap_or_else(PoisonError::into_inner).remove(name);
                tenant.close();
                component_base::metrics::metrics().tenants.dec();
                component_base::metrics::metrics().tenants_in_memory.dec();
                self.set_failure(name, None);
                tracing::info!(
                    tenant = name,
                    "tenant directory removed: no longer served, its data is kept"
                );
            }
            (true, None) => {
                let config = match read_config(&dir).await {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::error!(tenant = name, error = %e, "tenant not served: its tenant.yaml is invalid");
                        self.set_failure(name, Some((INVALID_CONFIGURATION, without_dir(&e, &dir))));
                        return;
                    }
                };
                match self.factory.build(Some(name), Some(&dir), config).await {
                    Ok(tenant) => {
                        let tenant = Arc::new(tenant);
                        self.show_tenants(&tenant);
                        self.factory.start_plugins(&tenant).await;
                        self.named
                            .write()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(name.to_owned(), tenant);
                        component_base::metrics::metrics().tenants.inc();
                        component_base::metrics::metrics().tenants_in_memory.inc();
                        self.set_failure(name, None);
                        tracing::info!(tenant = name, "serving a tenant at /tenants/{name}");
                    }
                    Err(e) => {
                        let e = format!("{e:#}");
                        tracing::error!(tenant = name, error = %e, "tenant not served: it failed to start");
                        self.set_failure(name, Some((FAILED_TO_START, e)));
                    }
                }
            }
            (true, Some(tenant)) => {
                match read_config(&dir).await {
                    Ok(config) if config == *tenant.config() => tenant.set_config_problem(None),
                    Ok(config) => {
                        tenant.set_config(config);
                        tenant.set_config_problem(None);
                        tracing::info!(tenant = name, "tenant.yaml changed: applied");
                        self.set_failure(name, None);
                        if let Err(e) = self.factory.apply_admins(&tenant).await {
                            tracing::error!(
                                tenant = name,
                                error = format!("{e:#}"),
                                "updating the tenant's admins failed"
                            );
                        }
                    }
                    Err(e) => {
                        tracing::error!(tenant = name, error = %e, "tenant.yaml is invalid: the previous configuration stays");
                        tenant.set_config_problem(Some(format!(
                            "the previous configuration stays: {}",
                            without_dir(&e, &dir)
                        )));
                    }
                }
                if let Some(plugins) = tenant.api.plugins.clone() {
                    let reloaded = tokio::task::spawn_blocking(move || plugins.reconcile()).await;
                    if let Ok(Err(e)) = reloaded {
                        tracing::error!(
                            tenant = name,
                            error = format!("{e:#}"),
                            "reloading the tenant's plugins failed"
                        );
                    }
                }
            }
        }
    }

    /// Reloads the default tenant's plugins.
    async fn reconcile_root(&self) {
        if let Some(plugins) = self.root.api.plugins.clone() {
            if let Ok(Err(e)) = tokio::task::spawn_blocking(move || plugins.reconcile()).await {
                tracing::error!(error = format!("{e:#}"), "reloading plugins failed");
            }
        }
    }

    /// Follows the plugin directory (one watcher for every tenant) until the returned watcher is dropped: changes
    /// are gathered until a quiet moment (so a file being copied is read whole), then each changed tenant is
    /// reconciled.
    pub fn watch(self: &Arc<Self>) -> anyhow::Result<notify::RecommendedWatcher> {
        let (tx, rx) = std::sync::mpsc::channel::<Target>();
        let watched = self.dir.canonicalize().unwrap_or_else(|_| self.dir.clone());
        let root = watched.clone();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if !loader::changes_content(&event.kind) {
                return;
            }
            for path in &event.paths {
                if let Some(target) = target_of(&root, path) {
                    let _ = tx.send(target);
                }
            }
        })
        .context("starting the plugin directory watcher")?;
        watcher
            .watch(&watched, RecursiveMode::Recursive)
            .with_context(|| format!("watching {}", self.dir.display()))?;
        let this = Arc::downgrade(self);
        let runtime = tokio::runtime::Handle::current();
        std::thread::Builder::new()
            .name("plugin-dir".into())
            .spawn(move || {
                // Idle, the thread collects its allocator heap every second: a removed tenant's objects made here
                // are freed by other threads, and only this thread can give their pages back.
                while let Some(first) = component_base::memory::recv_collecting(&rx) {
                    let mut targets = BTreeSet::from([first]);
                    while let Ok(t) = rx.recv_timeout(Duration::from_millis(150)) {
                        targets.insert(t);
                    }
                    let Some(this) = this.upgrade() else { return };
                    for target in targets {
                        match target {
                            Target::Root => runtime.block_on(this.reconcile_root()),
                            Target::Tenant(name) => runtime.block_on(this.reconcile_tenant(&name)),
                        }
                    }
                }
            })
            .context("starting the plugin directory thread")?;
        Ok(watcher)
    }
}

/// Reads a tenant's `tenant.yaml` on a blocking thread: a file read must not hold an async worker (a slow disk, or
/// a file that is not a regular one).
async fn read_config(dir: &std::path::Path) -> Result<TenantConfig, String> {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || TenantConfig::read(&dir))
        .await
        .unwrap_or_else(|e| Err(format!("reading the tenant's configuration: {e}")))
}

/// What a change in the plugin directory concerns.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Target {
    /// The default tenant's plugins.
    Root,
    /// A tenant (its directory, `tenant.yaml` or plugins).
    Tenant(String),
}

/// The target of a changed path under `root`: a plugin file (`.wasm`, or a CRD's `.yaml`, `.yml`, `.json`) directly
/// in it is the default tenant's; anything under a subdirectory, or a subdirectory itself, is that tenant's.
fn target_of(root: &Path, path: &Path) -> Option<Target> {
    let relative = path.strip_prefix(root).ok()?;
    let mut components = relative.components();
    let first = components.next()?.as_os_str().to_str()?.to_owned();
    if first.starts_with('.') {
        return None;
    }
    let plugin_file = [".wasm", ".yaml", ".yml", ".json"].iter().any(|x| first.ends_with(x));
    if components.next().is_some() || root.join(&first).is_dir() || !plugin_file {
        // A tenant's file, a tenant directory, or a removed entry that is not a plugin file (a removed tenant).
        return Some(Target::Tenant(first));
    }
    Some(Target::Root)
}

/// A problem with a file of a tenant directory, naming the file without the directory (the host's paths are not
/// the tenant's business).
fn without_dir(problem: &str, dir: &Path) -> String {
    let prefix = format!("{}{}", dir.display(), std::path::MAIN_SEPARATOR);
    problem.replace(&prefix, "")
}

/// The `metadata.name` of an object, or "".
fn object_name(obj: &serde_json::Value) -> &str {
    obj.pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
}

/// Refuses, inside a named tenant, to impersonate an identity the host gives meaning to beyond the tenant (the group
/// `system:masters`, exempt from request and in-flight limits; the user `system:apiserver`, whose writes quota never
/// refuses): there they come from authentication only, unless the requester is in `system:masters` itself
/// (impersonation happens once). At the root (`tenant` `None`, the host's own RBAC) nothing is refused here.
pub fn refuse_host_identities(
    tenant: Option<&str>,
    requester: &UserInfo,
    name: &str,
    groups: &[String],
) -> Result<(), ApiError> {
    let Some(tenant) = tenant else { return Ok(()) };
    if requester.in_group(MASTERS_GROUP) {
        return Ok(());
    }
    let (resource, target) = if groups.iter().any(|g| g == MASTERS_GROUP) {
        ("groups", MASTERS_GROUP)
    } else if name == SYSTEM_APISERVER {
        ("users", SYSTEM_APISERVER)
    } else {
        return Ok(());
    };
    let why = format!(
        "User {:?} cannot impersonate {resource} {target:?} in tenant {tenant:?}: inside a tenant, {target} comes from \
         authentication only",
        requester.name
    );
    Err(ApiError::forbidden("", resource, target, &why))
}

/// The storage key prefix of a tenant's objects, under which its keys are laid out as the root's (a scope of
/// `storage::keys`: two segments).
pub fn storage_prefix(tenant: &str) -> String {
    format!("/tenants/{tenant}")
}

/// How many tenants start at once when the server starts.
const STARTING_TOGETHER: usize = 32;

/// Why a directory name is not a tenant name (a DNS-1123 label), if it is not.
fn tenant_name_problem(name: &str) -> Option<String> {
    let problems = apimachinery::validation::NameRule::Dns1123Label.validate(name, false);
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// The tenant directories under a plugin directory: subdirectories named by a DNS-1123 label, in name order. Other
/// subdirectories are reported and skipped.
pub fn tenant_dirs(plugin_dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(plugin_dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            if name.starts_with('.') {
                return None;
            }
            if let Some(problem) = tenant_name_problem(&name) {
                tracing::warn!(dir = %p.display(), %problem, "not a tenant: skipped");
                return None;
            }
            Some((name, p))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_directories_are_dns_labels() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["t1", "team-b", "Bad_Name", ".hidden"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("wardle.wasm"), b"").unwrap();
        let names: Vec<String> = tenant_dirs(dir.path()).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["t1", "team-b"]);
    }

    #[test]
    fn problems_do_not_show_the_host_s_paths() {
        let dir = Path::new("/srv/plugins/t1");
        assert_eq!(
            without_dir("/srv/plugins/t1/tenant.yaml: unknown field `x`", dir),
            "tenant.yaml: unknown field `x`"
        );
        assert_eq!(
            without_dir("reading tenant.yaml: denied", dir),
            "reading tenant.yaml: denied"
        );
    }

    #[test]
    fn changes_are_routed_to_their_tenant() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("t1")).unwrap();
        assert_eq!(target_of(root, &root.join("wardle.wasm")), Some(Target::Root));
        assert_eq!(target_of(root, &root.join("gadgets.yaml")), Some(Target::Root));
        assert_eq!(target_of(root, &root.join("t1")), Some(Target::Tenant("t1".into())));
        assert_eq!(
            target_of(root, &root.join("t1/books.wasm")),
            Some(Target::Tenant("t1".into()))
        );
        assert_eq!(
            target_of(root, &root.join("t1/tenant.yaml")),
            Some(Target::Tenant("t1".into()))
        );
        // A removed directory is no longer there to look at: a name that is not a plugin file is a tenant.
        assert_eq!(target_of(root, &root.join("gone")), Some(Target::Tenant("gone".into())));
        assert_eq!(target_of(root, &root.join(".tmp")), None);
        assert_eq!(target_of(root, root), None);
    }
}
