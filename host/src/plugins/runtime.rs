//! The wasmtime engine shared by every plugin: configuration, the sandbox's limits, and the epoch ticker that enforces
//! per-call CPU deadlines.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use anyhow::Context as _;
use wasmtime::component::{HasSelf, Linker};
use wasmtime::{Config, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::bindings::FullPlugin;
use super::host::HostState;

/// How often the epoch advances; a call's deadline is counted in these ticks.
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Limits applied to every plugin instance.
#[derive(Clone, Debug)]
pub struct Limits {
    /// The most linear memory one instance may use, in bytes.
    pub memory_bytes: usize,
    /// The longest a single call may run.
    pub call_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory_bytes: 64 << 20,
            call_timeout: Duration::from_millis(100),
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
}

impl Runtime {
    /// Builds the engine (component model, pooling allocator, epoch interruption) and starts the epoch ticker.
    pub fn new(limits: Limits) -> anyhow::Result<Arc<Runtime>> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        config.parallel_compilation(true);
        let mut pool = PoolingAllocationConfig::default();
        pool.max_memory_size(limits.memory_bytes);
        pool.total_memories(1000);
        pool.total_core_instances(1000);
        pool.total_component_instances(1000);
        pool.total_tables(1000);
        config.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = wt(Engine::new(&config), "configuring the wasmtime engine")?;

        let mut linker = Linker::new(&engine);
        wt(
            FullPlugin::add_to_linker::<HostState, HasSelf<HostState>>(&mut linker, |state| state),
            "adding the host imports to the linker",
        )?;

        let weak = engine.weak();
        thread::Builder::new()
            .name("wasm-epoch".into())
            .spawn(move || {
                while let Some(engine) = weak.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    thread::sleep(EPOCH_TICK);
                }
            })
            .context("starting the epoch ticker")?;
        Ok(Arc::new(Runtime { engine, linker, limits }))
    }
}

/// Converts a wasmtime result into an anyhow one, with context.
pub(crate) fn wt<T>(r: wasmtime::Result<T>, context: &'static str) -> anyhow::Result<T> {
    r.map_err(|e| anyhow::Error::from(e).context(context))
}
