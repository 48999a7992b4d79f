//! Assembling a tenant: its registry over its key prefix, its plugins (loaded), its limits, its authorizer, the
//! default RBAC objects and namespaces, admission (namespace lifecycle, RBAC escalation, the cluster's webhooks and
//! policies) and its storage quota.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use storage::{BoxFuture, Storage};

use super::config::{Limits, TenantConfig};
use super::Tenant;
use authz::rbac::Rbac;
use authz::Authorizer;
use endpoints::Api;
use loader::PluginDir;
use plugin_runtime::cache::CompileCache;
use plugin_runtime::runtime::Runtime;
use registry::{Registry, WatchCacheConfig};

/// What builds the tenants: the parts every tenant shares (storage, the plugin runtime and the compiled-plugin
/// cache) and the server's settings for each.
pub struct TenantFactory {
    /// The server's storage; a tenant's is it under the tenant's key prefix.
    pub storage: Arc<dyn Storage>,
    /// The plugin runtime every tenant's plugins run in.
    pub runtime: Arc<Runtime>,
    /// The compiled-plugin cache.
    pub cache: CompileCache,
    /// The watch caches' settings (`None`: no watch cache).
    pub watch_cache: Option<WatchCacheConfig>,
    /// After how long unused a watch cache or plugin instance is dropped (`--evict-idle-after`).
    pub evict_idle_after: Duration,
    /// After how long without requests a tenant created through the API is dropped from memory, built again on its
    /// next request (`--tenant-idle-after`; zero: kept once built).
    pub tenant_idle_after: Duration,
    /// Every tenant's limits where its `tenant.yaml` sets none (the `--tenant-*` flags).
    pub default_limits: Limits,
    /// Whether creates use `create-pipeline` when a plugin exports it (`--create-pipeline`).
    pub create_pipeline: bool,
    /// Builds a tenant's authorizer (`--authorization-mode`).
    pub authorizers: AuthorizerFactory,
    /// Where Plugin objects may be pulled from, and the cache of pulled artifacts.
    pub sources: Arc<super::plugins::Sources>,
    /// This host's part in the election of the host that runs the controllers that must run once.
    pub leader: Arc<super::leader::Leader>,
    /// Snapshots of the server's store, served at the root (`GET /snapshot`); none with etcd.
    pub snapshots: Option<Arc<dyn endpoints::Snapshots>>,
    /// The admission configuration of the cluster behind the server (`--kubeconfig`), applied in every tenant.
    pub cluster_admission: Option<Arc<admission::remote::Remote>>,
    /// The CA bundle that verifies the server, published in every namespace (`kube-root-ca.crt`); none without the
    /// secure port.
    pub root_ca: Option<Arc<str>>,
    /// The issuer of service account tokens (`serviceaccounts/<name>/token`).
    pub service_accounts: Arc<authn::service_accounts::ServiceAccountTokens>,
    /// The server's authenticator, which TokenReviews ask.
    pub authenticator: Arc<authn::authenticator::Authenticator>,
    /// How long an event lives after it was last seen (`--event-ttl`).
    pub event_ttl: Duration,
}

/// Builds the authorizer of a tenant over its registry, and with RBAC its rules (loaded from the registry's storage
/// and followed).
pub type AuthorizerFactory = Arc<
    dyn Fn(Arc<Registry>) -> BoxFuture<'static, anyhow::Result<(Arc<dyn Authorizer>, Option<Arc<Rbac>>)>> + Send + Sync,
>;

impl super::Factory for TenantFactory {
    fn build<'a>(
        &'a self,
        name: Option<&'a str>,
        dir: Option<&'a std::path::Path>,
        config: TenantConfig,
    ) -> BoxFuture<'a, anyhow::Result<Tenant>> {
        Box::pin(async move {
            let storage = match name {
                None => self.storage.clone(),
                Some(name) => Arc::new(storage::prefixed::Prefixed::new(
                    self.storage.clone(),
                    crate::storage_prefix(name),
                )) as Arc<dyn Storage>,
            };
            self.tenant(name, dir, storage, config).await
        })
    }

    fn is_leader(&self) -> bool {
        self.leader.is_leader()
    }

    fn start_plugins<'a>(&'a self, tenant: &'a Arc<Tenant>) -> BoxFuture<'a, ()> {
        Box::pin(super::plugins::start(tenant, self.sources.clone()))
    }

    fn idle_after(&self) -> Option<Duration> {
        (!self.tenant_idle_after.is_zero()).then_some(self.tenant_idle_after)
    }

    fn apply_admins<'a>(&'a self, tenant: &'a Tenant) -> BoxFuture<'a, anyhow::Result<()>> {
        Box::pin(async move { bind_admins(&tenant.api.registry, &tenant.config()).await })
    }
}

impl TenantFactory {
    /// One tenant (`None`: the default tenant at the root) over `storage`: its registry, the plugins of `dir` (none
    /// for a tenant created through the API), its authorizer, default RBAC objects, namespaces and admission.
    async fn tenant(
        &self,
        name: Option<&str>,
        dir: Option<&std::path::Path>,
        storage: Arc<dyn Storage>,
        config: TenantConfig,
    ) -> anyhow::Result<Tenant> {
        // What the tenant's `tenants` resource shows (bound once it is served: `Tenants::show_tenants`).
        let tenancy = Arc::new(crate::api::View::default());
        let registry = Registry::with_builtins(
            storage,
            self.watch_cache.clone(),
            vec![Arc::new(crate::api::plugin(tenancy.clone()))],
        );
        registry.set_idle_after(self.evict_idle_after);
        registry.set_create_pipeline(self.create_pipeline);
        let (runtime, cache) = (self.runtime.clone(), Some(self.cache.clone()));
        let plugins = match name {
            None => PluginDir::new(runtime, dir, cache, registry.clone()),
            Some(name) => PluginDir::for_tenant(runtime, name, dir, cache, registry.clone()),
        };
        // The tenant's plugin limits hold from its first instance on.
        let limits = config.limits.or(&self.default_limits);
        plugins.budget().set(
            name.unwrap_or("default"),
            limits.plugin_memory.unwrap_or(usize::MAX),
            limits.plugin_call_timeout.unwrap_or(Duration::MAX),
            limits.plugin_cpu,
        );
        plugins.set_limits(limits.plugins, limits.plugin_bytes);
        let initial = plugins.clone();
        tokio::task::spawn_blocking(move || initial.reconcile()).await??;
        if let (Some(dir), true) = (dir, registry.apis().plugins().all(|p| p.is_builtin())) {
            tracing::warn!(dir = %dir.display(), tenant = name.unwrap_or(""), failed = plugins.failures().len(), "no plugin is served");
        }
        // The objects made here take no room under the tenant's objects limit.
        registry.quota.set_host_owned(
            authz::bootstrap::default_keys()
                .into_iter()
                .chain([super::admins::binding_key()])
                .chain(registry::namespaces::initial_keys())
                // At the root, API Priority and Fairness's bootstrap configuration.
                .chain(builtin::flowcontrol::bootstrap_keys())
                // At the root, the hosts' leader election lease.
                .chain([super::leader::LEASE_KEY.to_owned()]),
        );
        // At the root, the Tenant objects the server keeps for the tenant directories (tenants/src/mirror.rs).
        // Uploaded plugin components' chunks take no room under `objects` either (their bytes count).
        registry.quota.set_host_owned_prefixes([
            storage::keys::key_prefix(crate::api::GROUP, crate::api::RESOURCE, None),
            super::uploads::contents_prefix(),
            // The StorageVersions the host writes.
            registry::migration::storage_versions_prefix(),
        ]);
        // Each namespace's default service account and root CA ConfigMap.
        registry
            .quota
            .set_host_owned_names(registry::service_accounts::owned_names());
        let (roles, namespaces) = tokio::join!(
            authz::bootstrap::ensure(&registry),
            registry::namespaces::ensure_initial(&registry)
        );
        roles.context("creating the default RBAC roles")?;
        namespaces.context("creating the initial namespaces")?;
        bind_admins(&registry, &config).await?;
        // The authorizer last, so that the rules it starts from hold the roles and bindings just made: the request
        // that builds a tenant (its admin's, say) is authorized by them.
        let (authorizer, rbac) = (self.authorizers)(registry.clone()).await?;
        registry::namespaces::start_controller(&registry);
        let leader = self.leader.clone();
        registry::service_accounts::start_controller(
            &registry,
            self.root_ca.clone(),
            Arc::new(move || leader.is_leader()),
        );
        registry::event_ttl::start_controller(&registry, self.event_ttl);
        let leader = self.leader.clone();
        registry::resource_quotas::start_controller(&registry, Arc::new(move || leader.is_leader()));
        let leader = self.leader.clone();
        registry::migration::start_controller(&registry, Arc::new(move || leader.is_leader()));
        registry.set_admission(admission_chain(
            &registry,
            if name.is_none() { dir } else { None },
            authorizer.clone(),
            rbac.clone(),
            self.cluster_admission.clone(),
        ));
        let api = Arc::new(Api {
            uploads: Some(super::uploads::for_registry(&registry, self.sources.max_bytes)),
            // At the root only: a snapshot holds every tenant's objects.
            snapshots: if name.is_none() { self.snapshots.clone() } else { None },
            computed: Some(tenancy.clone()),
            service_accounts: Some(endpoints::TenantTokens {
                tokens: self.service_accounts.clone(),
                tenant: name.map(str::to_owned),
            }),
            authenticator: Some(self.authenticator.clone()),
            registry,
            plugins: Some(plugins),
            access: Some(authz::reviews::Access {
                authorizer: authorizer.clone(),
                rbac,
            }),
        });
        let registry = api.registry.clone();
        registry
            .quota
            .recount(registry.storage.as_ref())
            .await
            .context("counting the tenant's objects")?;
        tokio::spawn(async move {
            // Usage is counted again every minute while a quota is set (a full read of the tenant's objects): writes
            // by other hosts, and the host's own around the registry.
            let recount = async {
                loop {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    if registry.quota.limits() == (None, None) {
                        continue;
                    }
                    if let Err(e) = registry.quota.recount(registry.storage.as_ref()).await {
                        tracing::warn!(error = %e, "counting a tenant's objects failed");
                    }
                }
            };
            registry.until_closed(recount).await;
        });
        let source = match dir {
            Some(_) => super::Source::Directory,
            None => super::Source::Api,
        };
        Ok(Tenant::new(
            name.map(str::to_owned),
            source,
            api,
            tenancy,
            authorizer,
            config,
            self.default_limits.clone(),
        ))
    }
}

/// The admission chain of a tenant's writes: every check the server runs, registered here and nowhere else, in
/// kube's order (the `admission` crate's documentation): the built-in checks (namespace lifecycle; at the root, with
/// a plugin directory, the directories' tenants; with RBAC, its escalation prevention), then the plugins' own
/// admission, then the admission webhooks and policies (the tenant's, and with `remote` the cluster's).
pub fn admission_chain(
    registry: &Registry,
    tenant_dirs: Option<&std::path::Path>,
    authorizer: Arc<dyn Authorizer>,
    rbac: Option<Arc<Rbac>>,
    remote: Option<Arc<admission::remote::Remote>>,
) -> admission::Chain {
    let objects = registry.admission_reader();
    let mut checks: Vec<Arc<dyn admission::Check>> =
        vec![Arc::new(admission::namespace::NamespaceLifecycle::new(objects.clone()))];
    if let Some(dir) = tenant_dirs {
        checks.push(Arc::new(super::admission::DirectoryTenants { dir: dir.to_path_buf() }));
    }
    if let Some(rbac) = rbac {
        checks.push(Arc::new(authz::escalation::Escalation { authorizer, rbac }));
    }
    checks.push(Arc::new(admission::plugins::PluginAdmission));
    checks.push(Arc::new(admission::ClusterAdmission::new(objects.clone(), remote)));
    checks.push(Arc::new(admission::resource_quota::ResourceQuota::new(
        objects,
        registry.admission_quota_store(),
    )));
    admission::Chain::new(checks)
}

/// Brings the tenant's stored admins binding in line with `config`.
async fn bind_admins(registry: &Registry, config: &TenantConfig) -> anyhow::Result<()> {
    super::admins::ensure(registry, &config.admin_users, &config.admin_groups)
        .await
        .context("binding the tenant's admins")
}

/// The embedded store's snapshots, served at the root as `GET /snapshot`.
struct EmbeddedSnapshots(Arc<storage::embedded::EmbeddedStorage>);

impl endpoints::Snapshots for EmbeddedSnapshots {
    fn save(&self, out: &mut dyn std::io::Write) -> Result<(), String> {
        let status = self.0.snapshot(out).map_err(|e| e.to_string())?;
        tracing::info!(revision = status.revision, keys = status.keys, bytes = status.bytes, hash = %status.hash,
            "snapshot of the embedded store taken for GET /snapshot");
        Ok(())
    }
}

/// Snapshots of an embedded store, for [`TenantFactory::snapshots`].
pub fn embedded_snapshots(store: Arc<storage::embedded::EmbeddedStorage>) -> Arc<dyn endpoints::Snapshots> {
    Arc::new(EmbeddedSnapshots(store))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names in backquotes of docs/architecture.md's line that gives the admission chain's order.
    fn documented_chain() -> Vec<String> {
        let docs = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/architecture.md");
        let text = std::fs::read_to_string(&docs).expect("read docs/architecture.md");
        let line = text
            .lines()
            .find(|l| l.contains("The admission chain, in order:"))
            .expect("docs/architecture.md gives the admission chain's order");
        let listed = line.split("in order:").nth(1).unwrap_or_default();
        listed.split('`').skip(1).step_by(2).map(str::to_owned).collect()
    }

    /// The chain a tenant's writes pass, at the root with a plugin directory and RBAC (every check), is the one
    /// docs/architecture.md and the `admission` crate describe, in kube's order.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_admission_chain_is_in_the_documented_order() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> =
            Arc::new(storage::embedded::EmbeddedStorage::open(&dir.path().join("store")).unwrap());
        let registry = Registry::with_watch_cache(storage, None);
        let rbac = Rbac::new(registry.clone());
        let chain = admission_chain(
            &registry,
            Some(dir.path()),
            Arc::new(authz::AlwaysAllow),
            Some(rbac),
            None,
        );
        assert_eq!(chain.names(), documented_chain());
        let without = admission_chain(&registry, None, Arc::new(authz::AlwaysAllow), None, None);
        assert_eq!(
            without.names(),
            [
                "NamespaceLifecycle",
                "PluginAdmission",
                "ClusterAdmission",
                "ResourceQuota"
            ],
            "a tenant without a directory of tenants nor RBAC"
        );
        registry.close();
    }
}
