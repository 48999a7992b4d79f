//! The wasmtime engine shared by every plugin: configuration, the sandbox's limits, and the epoch ticker that enforces
//! per-call CPU deadlines.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, Weak};
use std::thread;
use std::time::Duration;

use anyhow::Context as _;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy};

use super::bindings::HostView;
use super::host::HostState;
use super::in_context;

/// The default bound of [`PoolBudget`]: 1 GiB of linear memory, about 45 tenants' worth of the example plugins
/// (wardle 1.1 MiB, books 12.6 MiB, tasks 9.1 MiB an instance).
pub const DEFAULT_POOL_MEMORY: u64 = 1 << 30;

/// How often the epoch advances; a call's deadline is counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Advances the engine's epoch every [`EPOCH_TICK`] while guest code runs (a call's deadline is checked at each tick),
/// and sleeps while none does: an idle server is not woken 100 times a second for nothing (the ticker was most of an
/// idle server's CPU time). Guest code runs only inside [`EpochTicker::running`].
pub struct EpochTicker {
    shared: Arc<TickerShared>,
    thread: thread::Thread,
}

#[derive(Default)]
struct TickerShared {
    /// Calls (and instantiations) running guest code.
    running: AtomicUsize,
    /// Ticks so far.
    ticks: AtomicU64,
    /// Set when the runtime goes: the thread ends.
    stopped: AtomicBool,
}

/// Guest code runs while this lives ([`EpochTicker::running`]).
pub struct Running<'a>(&'a EpochTicker);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.0.shared.running.fetch_sub(1, Ordering::AcqRel);
    }
}

impl EpochTicker {
    fn start(engine: wasmtime::EngineWeak) -> std::io::Result<EpochTicker> {
        let shared = Arc::new(TickerShared::default());
        let ticker = shared.clone();
        let thread = thread::Builder::new().name("wasm-epoch".into()).spawn(move || loop {
            if ticker.stopped.load(Ordering::Acquire) {
                return;
            }
            if ticker.running.load(Ordering::Acquire) == 0 {
                // An entry after the check unparks this thread, before or during the park.
                thread::park();
                continue;
            }
            let Some(engine) = engine.upgrade() else {
                return;
            };
            engine.increment_epoch();
            drop(engine);
            ticker.ticks.fetch_add(1, Ordering::Relaxed);
            thread::sleep(EPOCH_TICK);
        })?;
        Ok(EpochTicker {
            shared,
            thread: thread.thread().clone(),
        })
    }

    /// Marks guest code as running on this thread until the guard drops: the epoch advances meanwhile.
    pub fn running(&self) -> Running<'_> {
        if self.shared.running.fetch_add(1, Ordering::AcqRel) == 0 {
            self.thread.unpark();
        }
        Running(self)
    }

    /// How many times the epoch advanced.
    pub fn ticks(&self) -> u64 {
        self.shared.ticks.load(Ordering::Relaxed)
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::Release);
        self.thread.unpark();
    }
}

/// The bound on the linear memory of idle plugin instances, host-wide. Each plugin keeps the instances its calls
/// returned in a pool of its own until they are idle for the registry's idle time (2 minutes by default); a burst of
/// calls across many tenants would otherwise keep an instance of each of their plugins for that long (300 tenants
/// with the example plugins: ~3 GB resident after 10 creates in each). To keep an instance past the bound, the least
/// recently used idle instances of every plugin are dropped first; one that does not fit even then is dropped itself.
/// And the registries' idle eviction drops instances idle for [`PoolBudget::PRESSURE_IDLE`] once the pooled memory
/// is over three quarters of the bound.
///
/// The search for the least recently used instance looks only at the pools listed as holding idle instances: a pool
/// is listed when an instance is kept in it and unlisted when a search finds it empty. Under pressure those are a
/// few dozen (as many as the bound holds), where every plugin of every tenant is thousands, and the search runs for
/// each instance kept past the bound.
pub struct PoolBudget {
    /// The bound, in bytes of linear memory; `u64::MAX`: none.
    limit: u64,
    /// The linear memory of the pooled instances.
    used: AtomicU64,
    /// The pools that may hold idle instances.
    listed: std::sync::Mutex<Listed>,
}

/// The pools listed in a [`PoolBudget`].
#[derive(Default)]
struct Listed {
    /// The pools, by address.
    pools: HashMap<usize, Weak<dyn IdlePool>>,
    /// The number of pools at which those of dropped plugins are let go of next.
    prune_at: usize,
}

/// A plugin's pool of idle instances, as the host-wide [`PoolBudget`] sees it.
pub trait IdlePool: Send + Sync {
    /// When its least recently used idle instance was returned, if it has one; when it has none, it is marked
    /// unlisted ([`Listing::unmark`]) under the lock that guards its instances.
    fn least_recently_used(&self) -> Option<std::time::Instant>;
    /// Drops its least recently used idle instance; false when it had none.
    fn drop_least_recently_used(&self) -> bool;
    /// Its [`Listing`].
    fn listing(&self) -> &Listing;
}

/// Whether an [`IdlePool`] is listed in its [`PoolBudget`]. The pool marks and unmarks it under the lock that guards
/// its instances, so that an instance kept while a search finds the pool empty lists it again.
#[derive(Debug, Default)]
pub struct Listing(AtomicBool);

impl Listing {
    /// Marks the pool listed, after an instance was kept in it; true when it was not, and the caller then lists it
    /// ([`PoolBudget::list`], after letting go of the pool's lock).
    pub fn mark(&self) -> bool {
        !self.0.swap(true, Ordering::AcqRel)
    }

    /// Marks the pool unlisted: it holds no idle instance.
    pub fn unmark(&self) {
        self.0.store(false, Ordering::Release);
    }

    /// Whether the pool is marked listed.
    pub fn is_marked(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// The memory of one pooled instance, counted in its [`PoolBudget`] until dropped.
pub struct PoolCharge {
    budget: Arc<PoolBudget>,
    bytes: u64,
}

impl Drop for PoolCharge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
        component_base::metrics::metrics()
            .plugin_pooled_memory
            .dec_by(i64::try_from(self.bytes).unwrap_or(i64::MAX));
    }
}

impl PoolBudget {
    /// How long an instance may stay idle while the pooled memory is over three quarters of the bound.
    pub const PRESSURE_IDLE: Duration = Duration::from_secs(1);

    /// A budget of `limit` bytes (0: unbounded).
    pub fn new(limit: u64) -> Arc<PoolBudget> {
        Arc::new(PoolBudget {
            limit: if limit == 0 { u64::MAX } else { limit },
            used: AtomicU64::new(0),
            listed: Default::default(),
        })
    }

    /// Lists a pool that an instance was kept in ([`Listing::mark`]): its idle instances may be dropped to make
    /// room for another's.
    pub fn list(&self, pool: Weak<dyn IdlePool>) {
        if self.limit == u64::MAX {
            return;
        }
        let mut listed = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
        listed.pools.insert(address(&pool), pool);
        if listed.pools.len() >= listed.prune_at {
            listed.pools.retain(|_, p| p.strong_count() > 0);
            listed.prune_at = (2 * listed.pools.len()).max(64);
        }
    }

    /// Counts `bytes` more of pooled memory, dropping the least recently used idle instances of every plugin to make
    /// room when that would pass the bound; `None` when they are not enough.
    pub fn charge(self: &Arc<Self>, bytes: u64) -> Option<PoolCharge> {
        if bytes > self.limit {
            return None;
        }
        loop {
            if let Some(charge) = self.try_charge(bytes) {
                return Some(charge);
            }
            if !self.drop_least_recently_used() {
                return None;
            }
        }
    }

    /// Drops the one idle instance, among those of every listed pool, that was used least recently; false when no
    /// pool has one. The pools found empty are unlisted, unless an instance was kept in one since.
    fn drop_least_recently_used(&self) -> bool {
        let pools: Vec<(usize, Arc<dyn IdlePool>)> = {
            let mut guard = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
            guard.pools.retain(|_, p| p.strong_count() > 0);
            guard
                .pools
                .iter()
                .filter_map(|(a, p)| Some((*a, p.upgrade()?)))
                .collect()
        };
        let mut oldest: Option<(std::time::Instant, &Arc<dyn IdlePool>)> = None;
        let mut empty = Vec::new();
        for (address, pool) in &pools {
            match pool.least_recently_used() {
                Some(at) if oldest.is_none_or(|(first, _)| at < first) => oldest = Some((at, pool)),
                Some(_) => {}
                None => empty.push(*address),
            }
        }
        if !empty.is_empty() {
            let mut guard = self.listed.lock().unwrap_or_else(PoisonError::into_inner);
            for address in empty {
                let unmarked = guard
                    .pools
                    .get(&address)
                    .and_then(Weak::upgrade)
                    .is_none_or(|p| !p.listing().is_marked());
                if unmarked {
                    guard.pools.remove(&address);
                }
            }
        }
        oldest.is_some_and(|(_, pool)| pool.drop_least_recently_used())
    }

    /// How many pools are listed as holding idle instances.
    pub fn listed(&self) -> usize {
        self.listed.lock().unwrap_or_else(PoisonError::into_inner).pools.len()
    }

    /// Counts `bytes` more of pooled memory, unless that would pass the bound.
    fn try_charge(self: &Arc<Self>, bytes: u64) -> Option<PoolCharge> {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit)
            })
            .ok()?;
        component_base::metrics::metrics()
            .plugin_pooled_memory
            .inc_by(i64::try_from(bytes).unwrap_or(i64::MAX));
        Some(PoolCharge {
            budget: self.clone(),
            bytes,
        })
    }

    /// The linear memory of the pooled instances, in bytes.
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Acquire)
    }

    /// Whether the pooled memory is over three quarters of the bound: idle instances then go after
    /// [`PoolBudget::PRESSURE_IDLE`].
    pub fn under_pressure(&self) -> bool {
        self.limit != u64::MAX && self.used() > self.limit / 4 * 3
    }
}

/// The address of a pool, which identifies it while it is listed (the listing's `Weak` keeps its allocation).
fn address(pool: &Weak<dyn IdlePool>) -> usize {
    pool.as_ptr().cast::<()>() as usize
}

/// Limits applied to every plugin instance.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The most linear memory one instance may use, in bytes.
    pub memory_bytes: usize,
    /// The longest a single call may run.
    pub call_timeout: Duration,
    /// How many slow calls (of every tenant) run at once, shared fairly ([`super::fair`]); 0 runs each where it is
    /// made, unqueued.
    pub lanes: usize,
    /// The most linear memory the idle instances of every plugin may hold together, in bytes ([`PoolBudget`]);
    /// 0: unbounded.
    pub pool_memory_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            call_timeout: Duration::from_millis(100),
            lanes: super::fair::default_lanes(),
            pool_memory_bytes: DEFAULT_POOL_MEMORY,
        }
    }
}

/// The engine, the linker with the host imports, and the limits: built once, shared by all plugins.
pub struct Runtime {
    /// The wasmtime engine.
    pub engine: Engine,
    /// The linker holding the host's imports (`wasm-apiserver:plugin/host`).
    pub linker: Linker<HostState>,
    /// Limits for each instance.
    pub limits: Limits,
    /// The part of the compile cache's key that depends on the engine: the same for a runtime whose engine compiles
    /// and for one that only loads what child processes compiled ([`compatibility_fingerprint`]).
    pub fingerprint: u64,
    /// The lanes slow plugin calls of every tenant share fairly (with the baseline tier's runtime too).
    pub fair: Arc<super::fair::FairShare>,
    /// Advances the engine's epoch while guest code runs.
    pub epoch: EpochTicker,
    /// The bound on the idle instances' memory, host-wide.
    pub pool_budget: Arc<PoolBudget>,
    /// What the loaded components share, by content hash, while a plugin of theirs is served.
    shared_components:
        std::sync::Mutex<std::collections::HashMap<String, std::sync::Weak<super::linking::SharedComponent>>>,
    /// One lock per content hash being loaded: tenants loading the same component at once wait for the first, then
    /// share what it loaded, instead of each loading (and holding) a copy.
    loading: std::sync::Mutex<std::collections::HashMap<String, Arc<std::sync::Mutex<()>>>>,
    /// Which compiler made the code this runtime runs.
    pub tier: Tier,
    /// The runtime of the baseline tier ([`Runtime::baseline_tier`]), made on its first use.
    baseline: std::sync::OnceLock<Option<Arc<Runtime>>>,
}

/// Which of wasmtime's compilers made a component's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tier {
    /// Cranelift, the optimizing compiler: what every component is served from in the end.
    Optimized,
    /// Winch, the baseline compiler: 4-6 times faster to compile, its code 1.2-1.75 times slower to run. A component
    /// not compiled yet is served from it first, while Cranelift compiles it.
    Baseline,
}

impl Runtime {
    /// Builds the engine (component model, instances allocated on demand, epoch interruption) and starts the epoch
    /// ticker. The engine compiles components in this process.
    pub fn new(limits: Limits) -> anyhow::Result<Arc<Runtime>> {
        Self::build(limits, true)
    }

    /// As [`Runtime::new`], with an engine that cannot compile: it loads components that child processes compiled
    /// into a [`super::cache::CompileCache`] (the server's way, [`super::cache::Compiler`]). Cranelift is then never
    /// set up in this process, and the code that would do it is never paged in (1.5 MiB of an idle server's RSS).
    pub fn without_compiler(limits: Limits) -> anyhow::Result<Arc<Runtime>> {
        Self::build(limits, false)
    }

    /// As [`Runtime::new`], with wasmtime's baseline compiler (Winch) instead of Cranelift: it compiles a component
    /// many times faster into code that runs slower.
    #[cfg(feature = "compiler")]
    pub fn baseline(limits: Limits) -> anyhow::Result<Arc<Runtime>> {
        Self::with_config(limits, Tier::Baseline, true, None)
    }

    /// The runtime that serves components from the baseline compiler (Winch) while Cranelift compiles them: made
    /// on its first use, sharing this runtime's limits, fair share and pool budget, with its own engine (the two
    /// compilers' code is not interchangeable: a component must be loaded by an engine of its compiler). Its engine
    /// has a compiler (an engine without one cannot load Winch's code), which compiles only when no child process
    /// does. `None` in a build without the compiler, or if it cannot be made (logged).
    pub fn baseline_tier(&self) -> Option<Arc<Runtime>> {
        if self.tier == Tier::Baseline {
            return None;
        }
        self.baseline
            .get_or_init(|| {
                #[cfg(feature = "compiler")]
                {
                    let shared = (self.fair.clone(), self.pool_budget.clone());
                    match Self::with_config(self.limits.clone(), Tier::Baseline, true, Some(shared)) {
                        Ok(runtime) => Some(runtime),
                        Err(e) => {
                            tracing::warn!(error = format!("{e:#}"), "cannot make the baseline compiler's runtime");
                            None
                        }
                    }
                }
                #[cfg(not(feature = "compiler"))]
                None
            })
            .clone()
    }

    fn build(limits: Limits, compiles: bool) -> anyhow::Result<Arc<Runtime>> {
        Self::with_config(limits, Tier::Optimized, compiles, None)
    }

    /// A runtime of the `tier`'s engine; `shared`: the fair share and pool budget of the runtime whose baseline
    /// tier it is.
    fn with_config(
        limits: Limits,
        tier: Tier,
        compiles: bool,
        shared: Option<(Arc<super::fair::FairShare>, Arc<PoolBudget>)>,
    ) -> anyhow::Result<Arc<Runtime>> {
        #[cfg(feature = "compiler")]
        let config = {
            let mut config = match tier {
                Tier::Optimized => engine_config(),
                Tier::Baseline => baseline_config(),
            };
            config.enable_compiler(compiles);
            config
        };
        #[cfg(not(feature = "compiler"))]
        let config = {
            let _ = compiles;
            engine_config()
        };
        let engine = in_context(Engine::new(&config), "configuring the wasmtime engine")?;
        // An engine without a compiler hashes as the key asks; one with a compiler needs a throwaway one that has none.
        // Winch's code is loaded only by an engine with Winch as its compiler, whose hash has the compiler's settings.
        let fingerprint = match (compiles, tier) {
            (true, Tier::Optimized) => compatibility_fingerprint()?,
            _ => fingerprint(&engine),
        };

        let mut linker = Linker::new(&engine);
        in_context(
            HostView::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state),
            "adding the host imports to the linker",
        )?;

        let epoch = EpochTicker::start(engine.weak()).context("starting the epoch ticker")?;
        let (fair, pool_budget) = shared.unwrap_or_else(|| {
            (
                Arc::new(super::fair::FairShare::new(limits.lanes)),
                PoolBudget::new(limits.pool_memory_bytes),
            )
        });
        Ok(Arc::new(Runtime {
            epoch,
            pool_budget,
            engine,
            linker,
            fair,
            limits,
            fingerprint,
            shared_components: Default::default(),
            loading: Default::default(),
            tier,
            baseline: std::sync::OnceLock::new(),
        }))
    }

    /// What the plugins of the component with this content hash share, while a plugin of it is served.
    pub fn shared_component(&self, hash: &str) -> Option<Arc<super::linking::SharedComponent>> {
        let shared = self
            .shared_components
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        shared.get(hash).and_then(std::sync::Weak::upgrade)
    }

    /// Runs `load` for the component with this content hash while no other load of it runs.
    pub fn loading<T>(&self, hash: &str, load: impl FnOnce() -> T) -> T {
        let lock = {
            let mut loading = self.loading.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            loading.retain(|_, l| Arc::strong_count(l) > 1);
            loading.entry(hash.to_owned()).or_default().clone()
        };
        let _held = lock.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        load()
    }

    /// Remembers what the plugins of a component share (and forgets those no plugin serves any more).
    pub fn remember_shared_component(&self, hash: &str, shared: &Arc<super::linking::SharedComponent>) {
        let mut known = self
            .shared_components
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        known.retain(|_, s| s.strong_count() > 0);
        known.insert(hash.to_owned(), Arc::downgrade(shared));
    }
}

/// The engine's configuration (the same for every limit: a plugin's limits are its store's).
fn engine_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true);
    config.epoch_interruption(true);
    #[cfg(feature = "compiler")]
    config.parallel_compilation(true);
    // Instances on demand, not from wasmtime's pooling allocator: its per-slot state for the 10,000 instances,
    // memories and tables it had room for was most of an idle host's heap (2.2 of 3.0 MiB), its warm slots kept a
    // used instance's memory resident after the instance went (a host with one idle tenant: 42.7 MiB against 23.0),
    // and instances are made rarely (kept per plugin, made again only after they idle or outgrow): wardle's
    // instantiation took 27.5 against 26.1 µs, the Python guest's 985 against 1,031 µs (plugin-bench). An instance's
    // memory limit is its store's limiter's (`Plugin::instantiate`).
    config.allocation_strategy(InstanceAllocationStrategy::OnDemand);
    config
}

/// The configuration of the baseline tier's engine: the runtime's, compiled by Winch.
#[cfg(feature = "compiler")]
fn baseline_config() -> Config {
    let mut config = engine_config();
    config.strategy(wasmtime::Strategy::Winch);
    config
}

/// An engine that compiles components for a [`Runtime`] of the `tier` (in the compile child process,
/// [`super::cache::Compiler`]), several functions at once or one at a time: what it compiles has the runtime
/// engine's compatibility fingerprint either way.
pub fn compiling_engine(parallel: bool, tier: Tier) -> anyhow::Result<Engine> {
    #[cfg(feature = "compiler")]
    let mut config = match tier {
        Tier::Optimized => engine_config(),
        Tier::Baseline => baseline_config(),
    };
    #[cfg(not(feature = "compiler"))]
    let (mut config, _) = (engine_config(), tier);
    #[cfg(feature = "compiler")]
    config.parallel_compilation(parallel);
    #[cfg(not(feature = "compiler"))]
    let _ = (&mut config, parallel);
    in_context(Engine::new(&config), "configuring the wasmtime engine")
}

/// What a component compiled for a runtime must be loaded by: a hash of the engine's configuration
/// as wasmtime's `precompile_compatibility_hash` sees it when the engine has no compiler. An engine that compiles adds
/// its compiler's settings (target, flags, the CPU's features), which an engine that only loads cannot know; wasmtime
/// checks those itself when it loads a compiled component, and the cache compiles again what it refuses.
pub fn compatibility_fingerprint() -> anyhow::Result<u64> {
    #[cfg(feature = "compiler")]
    let config = {
        let mut config = engine_config();
        config.enable_compiler(false);
        config
    };
    #[cfg(not(feature = "compiler"))]
    let config = engine_config();
    let engine = in_context(Engine::new(&config), "configuring the wasmtime engine")?;
    Ok(fingerprint(&engine))
}

#[cfg(feature = "compiler")]
fn fingerprint(engine: &Engine) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    engine.precompile_compatibility_hash().hash(&mut hasher);
    hasher.finish()
}

/// A build without the compiler (the fuzz targets') has no compile cache to key.
#[cfg(not(feature = "compiler"))]
fn fingerprint(_: &Engine) -> u64 {
    0
}

/// Compiles a component (from its binary) for `engine`.
#[cfg(feature = "compiler")]
pub fn compile_component(engine: &Engine, wasm: &[u8]) -> wasmtime::Result<wasmtime::component::Component> {
    wasmtime::component::Component::new(engine, wasm)
}

/// Compiles a component: not in a build without the `compiler` feature.
#[cfg(not(feature = "compiler"))]
pub fn compile_component(_: &Engine, _: &[u8]) -> wasmtime::Result<wasmtime::component::Component> {
    Err(no_compiler())
}

/// The error of a build without the `compiler` feature (the fuzz targets') asked to compile a component.
#[cfg(not(feature = "compiler"))]
pub(crate) fn no_compiler() -> wasmtime::Error {
    wasmtime::format_err!("this build of the server cannot compile components (built without the compiler feature)")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_budget_counts_what_is_pooled_and_refuses_past_its_bound() {
        let budget = PoolBudget::new(100);
        let a = budget.charge(60).expect("within the bound");
        assert!(!budget.under_pressure());
        assert!(budget.charge(41).is_none(), "past the bound");
        let b = budget.charge(20).expect("within the bound");
        assert_eq!(budget.used(), 80);
        assert!(budget.under_pressure(), "over three quarters");
        drop(a);
        assert_eq!(budget.used(), 20);
        assert!(!budget.under_pressure());
        drop(b);
        assert_eq!(budget.used(), 0);
        let unbounded = PoolBudget::new(0);
        let big = unbounded.charge(u64::MAX / 2).expect("no bound");
        assert!(!unbounded.under_pressure());
        drop(big);
    }

    /// A pool of charges standing for idle instances, each with the time it was returned.
    #[derive(Default)]
    struct Charges(std::sync::Mutex<Vec<(std::time::Instant, PoolCharge)>>, Listing);

    impl Charges {
        /// Keeps a charge returned `at`, listing the pool as the plugins' pools do.
        fn keep(self: &Arc<Self>, budget: &PoolBudget, at: std::time::Instant, charge: PoolCharge) {
            let newly = {
                let mut pool = self.0.lock().unwrap();
                pool.push((at, charge));
                self.1.mark()
            };
            if newly {
                budget.list(Arc::downgrade(self) as Weak<dyn IdlePool>);
            }
        }

        fn len(&self) -> usize {
            self.0.lock().unwrap().len()
        }
    }

    impl IdlePool for Charges {
        fn least_recently_used(&self) -> Option<std::time::Instant> {
            let pool = self.0.lock().unwrap();
            if pool.is_empty() {
                self.1.unmark();
            }
            pool.first().map(|(at, _)| *at)
        }

        fn drop_least_recently_used(&self) -> bool {
            let mut pool = self.0.lock().unwrap();
            !pool.is_empty() && {
                pool.remove(0);
                true
            }
        }

        fn listing(&self) -> &Listing {
            &self.1
        }
    }

    #[test]
    fn the_pool_budget_makes_room_by_dropping_the_least_recently_used_idle_instances() {
        let budget = PoolBudget::new(100);
        let (a, b) = (Arc::new(Charges::default()), Arc::new(Charges::default()));
        let start = std::time::Instant::now();
        a.keep(&budget, start, budget.charge(40).unwrap());
        b.keep(&budget, start + Duration::from_secs(1), budget.charge(40).unwrap());
        // 50 more: a's instance, the older, goes.
        let taken = budget.charge(50).expect("room made");
        assert_eq!(budget.used(), 90);
        assert_eq!((a.len(), b.len()), (0, 1));
        // 60 more cannot fit even with every idle instance gone (the 50 are in a call): refused, and b's went.
        assert!(budget.charge(60).is_none());
        assert_eq!(b.len(), 0);
        assert_eq!(budget.used(), 50);
        // More than the bound is refused at once.
        assert!(budget.charge(101).is_none());
        drop(taken);
        assert_eq!(budget.used(), 0);
    }

    /// The search for the least recently used instance looks at the pools that hold idle instances, not at every
    /// plugin's: a pool found empty is unlisted, and listed again when an instance is kept in it.
    #[test]
    fn the_pool_budget_searches_only_the_pools_that_hold_idle_instances() {
        let budget = PoolBudget::new(100);
        let start = std::time::Instant::now();
        let pools: Vec<Arc<Charges>> = (0..100).map(|_| Arc::new(Charges::default())).collect();
        for (i, pool) in pools.iter().enumerate() {
            pool.keep(
                &budget,
                start + Duration::from_millis(i as u64),
                budget.charge(1).unwrap(),
            );
        }
        assert_eq!(budget.listed(), 100);
        // Each instance taken for a call leaves its pool empty but listed, until a search finds it so.
        let taken: Vec<PoolCharge> = pools[..98]
            .iter()
            .map(|p| p.0.lock().unwrap().pop().unwrap().1)
            .collect();
        drop(taken);
        assert_eq!(budget.listed(), 100);
        let big = budget.charge(99).expect("room made");
        assert_eq!(
            (pools[98].len(), pools[99].len()),
            (0, 1),
            "the older of the two idle instances went"
        );
        assert_eq!(
            budget.listed(),
            2,
            "only the pools that held idle instances stay listed (the one emptied until the next search)"
        );
        // An instance kept again lists its pool again; a dropped plugin's pool is let go of.
        drop(big);
        pools[0].keep(&budget, start + Duration::from_secs(1), budget.charge(1).unwrap());
        assert_eq!(budget.listed(), 3);
        drop(pools);
        let _full = budget.charge(100).expect("the dropped pools' instances went with them");
        assert!(budget.charge(1).is_none());
        assert_eq!(budget.listed(), 0, "the search let go of the dropped pools");
    }

    #[test]
    fn the_epoch_advances_only_while_guest_code_runs() {
        let runtime = Runtime::without_compiler(Limits::default()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let wait_for = |done: &dyn Fn(u64) -> bool| {
            while !done(runtime.epoch.ticks()) {
                assert!(std::time::Instant::now() < deadline, "ticks: {}", runtime.epoch.ticks());
                thread::sleep(EPOCH_TICK / 2);
            }
        };
        let running = runtime.epoch.running();
        wait_for(&|ticks| ticks >= 2);
        drop(running);
        // The ticker ends the tick it sleeps through, then parks: wait until three ticks' time passes without one.
        let mut settled = runtime.epoch.ticks();
        loop {
            thread::sleep(EPOCH_TICK * 3);
            let now = runtime.epoch.ticks();
            if now == settled {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the ticker did not stop");
            settled = now;
        }
        thread::sleep(EPOCH_TICK * 10);
        assert_eq!(
            runtime.epoch.ticks(),
            settled,
            "the epoch advanced while no guest code ran"
        );
        let _running = runtime.epoch.running();
        wait_for(&|ticks| ticks > settled);
    }

    #[test]
    fn the_compiling_engine_makes_what_the_runtime_loads() {
        let runtime = Engine::new(&engine_config()).unwrap();
        for parallel in [false, true] {
            let compiling = compiling_engine(parallel, Tier::Optimized).unwrap();
            assert_eq!(fingerprint(&compiling), fingerprint(&runtime), "parallel: {parallel}");
        }
    }

    #[test]
    fn a_runtime_without_compiler_loads_what_a_compiling_engine_made_under_the_same_fingerprint() {
        let limits = Limits {
            lanes: 0,
            ..Limits::default()
        };
        let wasm = empty_component();
        let (compiled, compiler_hash) = {
            let compiling = compiling_engine(false, Tier::Optimized).unwrap();
            (compiling.precompile_component(&wasm).unwrap(), fingerprint(&compiling))
        };
        let loading = Runtime::without_compiler(limits.clone()).unwrap();
        // The key is the same whether it is the loading engine's own hash or a throwaway engine's without a
        // compiler (as a compiling runtime makes it), and not the compiling engine's, which adds the compiler's
        // settings.
        assert_eq!(loading.fingerprint, compatibility_fingerprint().unwrap());
        assert_ne!(loading.fingerprint, compiler_hash);

        #[allow(unsafe_code)]
        // SAFETY: the bytes were made by wasmtime's precompile_component just above, for this configuration.
        let loaded = unsafe { wasmtime::component::Component::deserialize(&loading.engine, &compiled) };
        loaded.unwrap();
        let refused = compile_component(&loading.engine, &wasm).map(|_| ()).unwrap_err();
        assert!(format!("{refused:#}").contains("compiler"), "{refused:#}");
    }

    #[test]
    fn the_baseline_tier_loads_what_a_baseline_compiling_engine_made_and_only_it_does() {
        let limits = Limits {
            lanes: 0,
            ..Limits::default()
        };
        let runtime = Runtime::without_compiler(limits).unwrap();
        let baseline = runtime
            .baseline_tier()
            .expect("a build with the compiler has a baseline tier");
        assert_eq!(baseline.tier, Tier::Baseline);
        assert!(Arc::ptr_eq(&baseline, &runtime.baseline_tier().unwrap()), "made once");
        assert!(baseline.baseline_tier().is_none(), "no tier below the baseline");
        assert!(
            Arc::ptr_eq(&baseline.fair, &runtime.fair),
            "one fair share for both tiers"
        );
        assert_ne!(
            baseline.fingerprint, runtime.fingerprint,
            "each tier's cache entries are its own"
        );

        let wasm = empty_component();
        for parallel in [false, true] {
            let compiling = compiling_engine(parallel, Tier::Baseline).unwrap();
            assert_eq!(fingerprint(&compiling), baseline.fingerprint, "parallel: {parallel}");
            let compiled = compiling.precompile_component(&wasm).unwrap();
            #[allow(unsafe_code)]
            // SAFETY: the bytes were made by wasmtime's precompile_component just above; wasmtime checks that they
            // fit the engine before using them.
            let (theirs, other) = unsafe {
                (
                    wasmtime::component::Component::deserialize(&baseline.engine, &compiled),
                    wasmtime::component::Component::deserialize(&runtime.engine, &compiled),
                )
            };
            theirs.unwrap();
            assert!(
                other.is_err(),
                "Winch's code is not loaded by the optimized tier's engine"
            );
        }
    }

    /// The smallest component: its header alone (no imports, no exports).
    fn empty_component() -> Vec<u8> {
        b"\0asm\x0d\0\x01\0".to_vec()
    }
}
