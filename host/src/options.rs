//! Command-line options → configuration → a running server (like kube-apiserver's options → Config → Complete →
//! New → Run).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use tokio::net::TcpListener;

use plugin_runtime::cache::CompileCache;
use plugin_runtime::runtime::{Limits, Runtime};
use registry::WatchCacheConfig;
use storage::cacher::CacherOptions;
use storage::embedded::EmbeddedStorage;
use storage::etcd::{EtcdOptions, EtcdStorage};
use storage::metered::Metered;
use storage::Storage;
use tenants::factory::TenantFactory;

/// Options of `wasm-apiserver serve`. Flag names mirror kube-apiserver's where one exists.
#[derive(Args, Debug, Clone)]
pub struct ServeOptions {
    /// The directory of plugins: every `*.wasm` file in it is served.
    #[arg(long, value_name = "DIR")]
    pub plugin_dir: PathBuf,
    /// The directory for the embedded store's data (and, later, compiled plugins).
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
    /// The address the secure port listens on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// The port for HTTPS with authentication and authorization (0: none).
    #[arg(long, default_value_t = 6443)]
    pub secure_port: u16,
    /// A port for plain HTTP on 127.0.0.1 where every request is `system:admin` in `system:masters`: for local
    /// development and tests only. Off unless given.
    #[arg(long, value_name = "PORT")]
    pub insecure_port: Option<u16>,
    #[command(flatten)]
    pub security: server::security::SecurityOptions,
    /// Encrypt resources at rest as this kube EncryptionConfiguration says (apiserver.config.k8s.io/v1; providers
    /// aesgcm, secretbox and identity), in the embedded store and in etcd alike.
    #[arg(long, value_name = "FILE")]
    pub encryption_provider_config: Option<PathBuf>,
    /// The most memory one plugin instance may use, in MiB.
    #[arg(long, default_value_t = 64, value_name = "MIB")]
    pub plugin_memory_limit: usize,
    /// The CPU time a single plugin call may use, in milliseconds (host reads excluded; at most 20 times as long
    /// in wall time).
    #[arg(long, default_value_t = 100, value_name = "MS")]
    pub plugin_call_timeout: u64,
    /// The most linear memory the idle instances of every plugin may hold together, host-wide, such as 512Mi or 2Gi
    /// (0: unbounded). A plugin keeps the instances its calls used for the next calls until they are idle for
    /// `--evict-idle-after`; to keep one past this bound, the least recently used idle instances of every plugin are
    /// dropped (one that cannot fit is dropped after its call), and instances idle for a second are dropped once
    /// three quarters of it are held. Default 1Gi.
    #[arg(long, default_value = "1Gi", value_name = "QUANTITY", value_parser = parse_bytes)]
    pub plugin_pool_memory: u64,
    /// How many slow plugin calls (over 250 µs of CPU on average) run at once, of every tenant: they wait for one of these
    /// lanes fairly, per tenant and per plugin, and run at a lower priority than requests (default: one per two cores;
    /// 0: slow calls run at once, unqueued).
    #[arg(long, value_name = "N")]
    pub plugin_lanes: Option<usize>,
    /// etcd endpoints (comma-separated URLs). When set, objects are stored in etcd instead of the embedded store.
    #[arg(long, value_name = "URLS", value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// A prefix for every etcd key (keys are `<prefix>/registry/<group>/<resource>/...`).
    #[arg(long, default_value = "", value_name = "PREFIX")]
    pub etcd_prefix: String,
    /// The CA bundle to verify etcd's certificate (https endpoints).
    #[arg(long, value_name = "FILE")]
    pub etcd_cafile: Option<PathBuf>,
    /// The client certificate for etcd.
    #[arg(long, value_name = "FILE")]
    pub etcd_certfile: Option<PathBuf>,
    /// The client key for etcd.
    #[arg(long, value_name = "FILE")]
    pub etcd_keyfile: Option<PathBuf>,
    /// The embedded store's page cache, in MiB: pages it read or wrote lately, kept in the server's memory (the OS's
    /// page cache keeps the file's pages anyway). Used only without `--etcd-servers`.
    #[arg(long, default_value_t = storage::embedded::DEFAULT_CACHE_BYTES >> 20, value_name = "MIB")]
    pub embedded_store_cache_size: usize,
    /// How often old storage history is compacted, on both backends (`0` disables it).
    #[arg(long, default_value = "5m", value_name = "DURATION", value_parser = storage::compactor::parse_duration)]
    pub etcd_compaction_interval: Duration,
    /// Run a create's plugin steps (defaulting, the plugin's own mutating admission, preparation, validation) in one
    /// call when the plugin exports `create-pipeline`; `false` makes the separate calls (for comparison).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub create_pipeline: bool,
    /// Serve watches, and reads that need not be the latest, from an in-memory cache of each resource.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub watch_cache: bool,
    /// How many recent events each resource's watch cache keeps for watches that start in the past (older ones
    /// get 410 Expired).
    #[arg(long, default_value_t = 10_000, value_name = "EVENTS")]
    pub default_watch_cache_size: usize,
    /// Event window sizes of particular resources' watch caches, as `<resource>.<group>#<size>` (comma-separated;
    /// `<resource>#<size>` for the core group); a size of 0 serves the resource without a watch cache. Events
    /// (`events`) have none unless given here, as in kube-apiserver.
    #[arg(long, value_name = "RESOURCE#SIZE", value_delimiter = ',', value_parser = parse_watch_cache_size)]
    pub watch_cache_sizes: Vec<(String, usize)>,
    /// How long a watch that allows bookmarks may see no event before it gets a BOOKMARK.
    #[arg(long, default_value = "1m", value_name = "DURATION", value_parser = storage::compactor::parse_duration)]
    pub watch_bookmark_interval: Duration,
    /// Watch caches, plugin instances and plugin components unused this long are dropped (a cache no watch is served
    /// from; made or loaded again on the next use), so an idle tenant costs little memory (`0`: never).
    #[arg(long, default_value = "2m", value_name = "DURATION", value_parser = storage::compactor::parse_duration)]
    pub evict_idle_after: Duration,
    /// A tenant created through the API is built in memory on its first request; after this long without requests
    /// (none in flight, watches included) it is dropped from memory, to be built again on its next request, so memory
    /// follows the active tenants, not the defined ones (`0`: kept once built).
    #[arg(long, default_value = "5m", value_name = "DURATION", value_parser = storage::compactor::parse_duration)]
    pub tenant_idle_after: Duration,
    /// How long an event is kept after it was last seen (kube-apiserver's `--event-ttl`).
    #[arg(long, default_value = "1h", value_name = "DURATION", value_parser = storage::compactor::parse_duration)]
    pub event_ttl: Duration,
    /// Every tenant's default `objects` limit: how many objects it may store (tenant.yaml's `limits.objects`
    /// overrides it). Unlimited unless given.
    #[arg(long, value_name = "N")]
    pub tenant_objects: Option<u64>,
    /// Every tenant's default `storageBytes` limit, such as 100Mi. Unlimited unless given.
    #[arg(long, value_name = "QUANTITY", value_parser = parse_bytes)]
    pub tenant_storage_bytes: Option<u64>,
    /// Every tenant's default `plugins` limit: how many plugin components (`.wasm`) it may serve. Unlimited unless
    /// given.
    #[arg(long, value_name = "N")]
    pub tenant_plugins: Option<u64>,
    /// Every tenant's default `pluginBytes` limit: the size of its plugin components together, such as 64Mi.
    /// Unlimited unless given.
    #[arg(long, value_name = "QUANTITY", value_parser = parse_bytes)]
    pub tenant_plugin_bytes: Option<u64>,
    /// Every tenant's default `maxInflight` limit: its requests served at once (watches excepted). Unlimited
    /// unless given.
    #[arg(long, value_name = "N")]
    pub tenant_max_requests_inflight: Option<usize>,
    /// Every tenant's default `requestsPerSecond` limit. Unlimited unless given.
    #[arg(long, value_name = "RATE")]
    pub tenant_requests_per_second: Option<f64>,
    /// Every tenant's default `pluginCpu` limit: CPU seconds per second across its plugin calls, such as 500m.
    /// Unlimited unless given.
    #[arg(long, value_name = "QUANTITY", value_parser = parse_cpu)]
    pub tenant_plugin_cpu: Option<f64>,
    /// Where compiled plugins are cached (default: `<data-dir>/plugin-cache`).
    #[arg(long, value_name = "DIR")]
    pub plugin_cache_dir: Option<PathBuf>,
    /// The size the compiled-plugin cache is pruned down to after each reload, in MiB: entries of plugins not being
    /// served are removed least recently used first (entries of served plugins are always kept).
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    pub plugin_cache_limit: u64,
    /// Serve a plugin not compiled before from wasmtime's baseline compiler (Winch) at once, 4-6 times faster to
    /// compile than the optimizing compiler (Cranelift) into code 1.2-1.75 times slower, and swap in Cranelift's build
    /// when it is ready (compiled in the background, cached): a new Python or JavaScript plugin answers in about
    /// 1.5 s instead of 6-12 s. `false`: wait for Cranelift.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub plugin_baseline_tier: bool,
    /// The OCI registries (`host` or `host:port`, comma-separated) Plugin objects may be pulled from. None unless
    /// given: a Plugin naming another registry fails with RegistryNotAllowed.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',')]
    pub plugin_registries: Vec<String>,
    /// A PEM file of CA certificates to trust for plugin registries, besides the public roots (repeatable).
    #[arg(long, value_name = "FILE")]
    pub plugin_registry_ca_file: Vec<PathBuf>,
    /// Traces: a TracingConfiguration file (`apiserver.config.k8s.io/v1`, as kube-apiserver's): the OTLP gRPC
    /// endpoint of a collector and the sampling rate per million; requests with a W3C `traceparent` follow their
    /// caller's sampling decision.
    #[arg(long, value_name = "FILE")]
    pub tracing_config_file: Option<PathBuf>,
    /// The kubeconfig of the cluster this server serves beside (kube-apiserver's "core" server, as an aggregated
    /// server's `--kubeconfig`): its admission webhooks and ValidatingAdmissionPolicies
    /// (`admissionregistration.k8s.io/v1`) apply to the writes of every tenant, with the tenant's own.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// How long the lease of the controllers that must run once (deleting a deleted tenant's data) holds without a
    /// renewal: when its holder stops, another host sharing the store takes over after this long.
    #[arg(long, default_value = "15s", value_name = "DURATION", value_parser = storage::compactor::parse_duration)]
    pub leader_elect_lease_duration: Duration,
    /// This host's identity in that lease (default: its host name and a random suffix).
    #[arg(long, value_name = "NAME")]
    pub leader_elect_identity: Option<String>,
    /// A cosign public key (`cosign.pub`, ECDSA P-256) trusted for Plugin objects' artifacts (repeatable): with any,
    /// only artifacts with a valid cosign signature by one of these (or of the tenant's `signatureKeys`) are served.
    #[arg(long, value_name = "FILE")]
    pub plugin_signature_keys: Vec<PathBuf>,
    /// The largest plugin component accepted, pulled from a registry or uploaded to a Plugin's `content`, such as
    /// 64Mi.
    #[arg(long, value_name = "QUANTITY", value_parser = parse_bytes, default_value = "64Mi")]
    pub plugin_max_upload_bytes: u64,
}

/// Parses a quantity of bytes (`1048576`, `512Ki`, `100Mi`).
fn parse_bytes(s: &str) -> Result<u64, String> {
    let n = apimachinery::quantity::parse(s)?;
    if n < 0.0 || n.fract() != 0.0 {
        return Err(format!("{s:?} is not a whole number of bytes"));
    }
    Ok(n as u64)
}

/// Parses a CPU quantity (`500m`, `1.5`), more than 0.
fn parse_cpu(s: &str) -> Result<f64, String> {
    match apimachinery::quantity::parse(s)? {
        n if n > 0.0 => Ok(n),
        _ => Err(format!("{s:?} must be more than 0")),
    }
}

/// Parses one `--watch-cache-sizes` entry, `<resource>.<group>#<size>`.
fn parse_watch_cache_size(s: &str) -> Result<(String, usize), String> {
    let (resource, size) = s
        .split_once('#')
        .ok_or_else(|| format!("{s:?} is not <resource>.<group>#<size>"))?;
    // A core resource is named alone, as kube-apiserver names it, or with the group it is stored under (`core`).
    let (plural, group) = resource.split_once('.').unwrap_or((resource, "core"));
    if plural.is_empty() || group.is_empty() {
        return Err(format!("{resource:?} is not <resource>.<group>"));
    }
    let resource = format!("{plural}.{group}");
    let size = size
        .parse()
        .map_err(|_| format!("the size in {s:?} is not a number of events"))?;
    Ok((resource, size))
}

/// The ports a server listens on, bound before anything is loaded.
pub struct Bound {
    /// The bound listeners.
    pub listeners: Vec<server::Listener>,
}

impl Bound {
    /// Whether the secure port is among them.
    pub fn secure(&self) -> bool {
        self.listeners.iter().any(|l| l.tls.is_some())
    }
}

/// A server ready to serve: storage open, tenants and plugins loaded.
pub struct Server {
    /// The handler chain (holding the tenants).
    pub chain: Arc<server::filters::Chain>,
    /// The plugin directory's watcher: tenants and plugins are followed until it is dropped.
    pub watcher: notify::RecommendedWatcher,
    /// This host's part in the leader election, released on a clean shutdown.
    pub leader: Arc<tenants::leader::Leader>,
}

impl ServeOptions {
    /// Every tenant's default limits, from the flags.
    pub fn tenant_limits(&self) -> tenants::config::Limits {
        tenants::config::Limits {
            objects: self.tenant_objects,
            storage_bytes: self.tenant_storage_bytes,
            max_inflight: self.tenant_max_requests_inflight,
            requests_per_second: self.tenant_requests_per_second,
            plugin_memory: Some(self.plugin_memory_limit.saturating_mul(1 << 20)),
            plugin_call_timeout: Some(Duration::from_millis(self.plugin_call_timeout)),
            plugin_cpu: self.tenant_plugin_cpu,
            plugins: self.tenant_plugins,
            plugin_bytes: self.tenant_plugin_bytes,
        }
    }

    /// The storage backend: etcd when `--etcd-servers` is set, else the embedded store under `--data-dir` (also
    /// returned as itself, for its snapshots).
    async fn storage(&self) -> anyhow::Result<(Arc<dyn Storage>, Option<Arc<EmbeddedStorage>>)> {
        if self.etcd_servers.is_empty() {
            let dir = self.data_dir.join("store");
            let storage =
                EmbeddedStorage::open_with_cache(&dir, self.embedded_store_cache_size.saturating_mul(1 << 20))
                    .with_context(|| format!("opening the embedded store in {}", self.data_dir.display()))?;
            tracing::info!(dir = %dir.display(), "storing objects in the embedded store");
            let storage = Arc::new(storage);
            return Ok((storage.clone(), Some(storage)));
        }
        let options = EtcdOptions {
            endpoints: self.etcd_servers.clone(),
            prefix: self.etcd_prefix.clone(),
            ca_file: self.etcd_cafile.clone(),
            cert_file: self.etcd_certfile.clone(),
            key_file: self.etcd_keyfile.clone(),
            ..EtcdOptions::default()
        };
        let storage = EtcdStorage::connect(options)
            .await
            .with_context(|| format!("connecting to etcd at {}", self.etcd_servers.join(",")))?;
        tracing::info!(servers = %self.etcd_servers.join(","), prefix = %self.etcd_prefix, "storing objects in etcd");
        Ok((Arc::new(storage), None))
    }

    /// Binds the ports (and makes the data directory, where the secure port's certificates are kept) before
    /// anything is loaded, so that the server answers at once: "starting" until [`ServeOptions::complete`] is done
    /// (see [`server::starting`]). Fails when a port cannot be bound or none is asked for.
    pub async fn bind(&self) -> anyhow::Result<Bound> {
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("creating the data directory {}", self.data_dir.display()))?;
        let mut listeners = Vec::new();
        if self.secure_port != 0 {
            let port = self.security.secure_port(&self.data_dir)?;
            let addr = SocketAddr::new(self.bind_address, self.secure_port);
            let tcp = TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            tracing::info!(address = %tcp.local_addr()?, "serving securely over HTTPS");
            listeners.push(server::Listener {
                tcp,
                tls: Some(port),
                header_read_timeout: self.security.header_read_timeout,
            });
        }
        if let Some(port) = self.insecure_port {
            let addr = SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), port);
            let tcp = TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding {addr}"))?;
            tracing::warn!(
                address = %tcp.local_addr()?,
                "serving INSECURELY over plain HTTP: every request on this port is system:admin in system:masters; \
                 for local development only"
            );
            listeners.push(server::Listener {
                tcp,
                tls: None,
                header_read_timeout: self.security.header_read_timeout,
            });
        }
        if listeners.is_empty() {
            anyhow::bail!("nothing to serve on: --secure-port is 0 and no --insecure-port is given");
        }
        Ok(Bound { listeners })
    }

    /// Opens the storage and loads the tenants and their plugins: the handler chain of a server whose ports
    /// [`ServeOptions::bind`] bound (`secure`: with the secure port).
    pub async fn complete(self, secure: bool) -> anyhow::Result<Server> {
        let limits = Limits {
            memory_bytes: self.plugin_memory_limit.saturating_mul(1 << 20),
            call_timeout: Duration::from_millis(self.plugin_call_timeout),
            lanes: self.plugin_lanes.unwrap_or_else(plugin_runtime::fair::default_lanes),
            pool_memory_bytes: self.plugin_pool_memory,
        };
        // When plugins compile in child processes, the server's own engine need not compile at all.
        let runtime = match plugin_runtime::cache::Compiler::configured() {
            Some(_) => Runtime::without_compiler(limits)?,
            None => Runtime::new(limits)?,
        };
        // Every watch of every tenant shares one watch of the backend: the number of etcd watches does not grow
        // with the number of tenants.
        let (store, embedded) = self.storage().await?;
        let mut backend: Arc<dyn Storage> = Arc::new(storage::shared_watch::SharedWatch::new(store));
        if let Some(file) = &self.encryption_provider_config {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading --encryption-provider-config {}", file.display()))?;
            let config = storage::encryption::EncryptionConfig::parse(&text)
                .with_context(|| format!("in --encryption-provider-config {}", file.display()))?;
            backend = Arc::new(storage::encryption::Encrypted::new(backend, config));
            tracing::info!(config = %file.display(), "encrypting resources at rest");
        }
        let storage: Arc<dyn Storage> = Arc::new(Metered::new(backend));
        storage::compactor::start(storage.clone(), self.etcd_compaction_interval);
        let watch_cache = self.watch_cache.then(|| WatchCacheConfig {
            options: CacherOptions {
                history: self.default_watch_cache_size.max(1),
                bookmark_interval: self.watch_bookmark_interval,
                ..CacherOptions::default()
            },
            sizes: {
                let mut sizes: std::collections::BTreeMap<String, usize> =
                    self.watch_cache_sizes.iter().cloned().collect();
                // kube-apiserver's default: events are written often and read seldom.
                sizes.entry("events.core".to_owned()).or_insert(0);
                sizes
            },
        });
        let cache_dir = self
            .plugin_cache_dir
            .clone()
            .unwrap_or_else(|| self.data_dir.join("plugin-cache"));
        let cache = CompileCache::new(
            &cache_dir,
            runtime.fingerprint,
            self.plugin_cache_limit.saturating_mul(1 << 20),
        )?
        .with_compiler(plugin_runtime::cache::Compiler::configured())
        .with_baseline_tier(self.plugin_baseline_tier);
        let mut ca_pem = Vec::new();
        for file in &self.plugin_registry_ca_file {
            ca_pem.push(
                std::fs::read(file).with_context(|| format!("reading --plugin-registry-ca-file {}", file.display()))?,
            );
        }
        let mut signature_keys = Vec::new();
        for file in &self.plugin_signature_keys {
            let pem = std::fs::read_to_string(file)
                .with_context(|| format!("reading --plugin-signature-keys {}", file.display()))?;
            let key = oci::signature::PublicKey::from_pem(&pem)
                .map_err(|e| anyhow::anyhow!("--plugin-signature-keys {}: {e}", file.display()))?;
            signature_keys.push(key);
        }
        let sources = tenants::plugins::Sources {
            pulls: Default::default(),
            signature_keys,
            registries: self.plugin_registries.clone(),
            ca_pem,
            max_bytes: self.plugin_max_upload_bytes,
            artifacts: self.data_dir.join("plugin-artifacts"),
        };
        let security = self.security.clone();
        let identity = self
            .leader_elect_identity
            .clone()
            .unwrap_or_else(tenants::leader::identity);
        let leader = tenants::leader::Leader::start(storage.clone(), identity, self.leader_elect_lease_duration);
        let cluster_admission = match &self.kubeconfig {
            None => None,
            Some(file) => {
                // The client's timeout outlasts the watches (five minutes each).
                let client = authn::kubeconfig::KubeClient::from_kubeconfig(file, Duration::from_secs(360))
                    .with_context(|| format!("--kubeconfig {}", file.display()))?;
                let remote = admission::remote::Remote::start(Arc::new(client));
                // Not waited for: writes wait for it (and are refused while it is not listed), reads do not.
                let (waiting, file) = (remote.clone(), file.clone());
                tokio::spawn(async move {
                    if !waiting.ready(Duration::from_secs(30)).await {
                        tracing::warn!(kubeconfig = %file.display(), "the cluster's admission configuration is not listed yet: writes are refused until it is");
                    }
                });
                Some(remote)
            }
        };
        let root_ca = if secure {
            Some(Arc::from(self.security.root_ca(&self.data_dir)?))
        } else {
            None
        };
        let service_accounts = self.security.service_account_tokens(storage.as_ref()).await?;
        let authenticator = self.security.authenticator(service_accounts.clone(), secure)?;
        let factory = TenantFactory {
            root_ca,
            service_accounts,
            authenticator: authenticator.clone(),
            cluster_admission,
            snapshots: embedded.map(tenants::factory::embedded_snapshots),
            leader: leader.clone(),
            sources: Arc::new(sources),
            storage,
            runtime,
            cache,
            watch_cache,
            evict_idle_after: self.evict_idle_after,
            tenant_idle_after: self.tenant_idle_after,
            event_ttl: self.event_ttl,
            create_pipeline: self.create_pipeline,
            default_limits: self.tenant_limits(),
            authorizers: Arc::new(move |registry| {
                let security = security.clone();
                Box::pin(async move { security.authorizer(&registry).await })
            }),
        };
        let tenants = tenants::Tenants::start(&self.plugin_dir, Box::new(factory)).await?;
        let watcher = tenants.watch()?;
        let chain = self.security.chain(tenants, authenticator)?;
        Ok(Server {
            chain: Arc::new(chain),
            watcher,
            leader,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_watch_cache_size;

    #[test]
    fn watch_cache_sizes_parse_like_kube_apiserver_flags() {
        assert_eq!(
            parse_watch_cache_size("flunders.wardle.example.com#100"),
            Ok(("flunders.wardle.example.com".to_owned(), 100))
        );
        assert_eq!(
            parse_watch_cache_size("fischers.wardle.example.com#0"),
            Ok(("fischers.wardle.example.com".to_owned(), 0))
        );
        // A core resource, named alone as kube-apiserver names it.
        assert_eq!(parse_watch_cache_size("events#50"), Ok(("events.core".to_owned(), 50)));
        for bad in ["flunders", "#1", ".g#1", "r.#1", "r.g#", "r.g#-1", "r.g#x"] {
            assert!(parse_watch_cache_size(bad).is_err(), "{bad}");
        }
    }
}
