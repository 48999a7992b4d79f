//! What the plugin runtime's unit tests share: the test plugins built by `scripts/build-plugins.sh` (into
//! `target/plugins/`), compiled once per test process, and loaded as components of one runtime.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{json, Value};
use wasmtime::component::Component;

use super::budget::Budget;
use super::component::PluginComponent;
use super::runtime::{Limits, Runtime};

/// The runtime the tests load components in: the default limits, without lanes (a slow call runs where it is made).
pub fn runtime() -> Arc<Runtime> {
    static RUNTIME: OnceLock<Arc<Runtime>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| {
            Runtime::new(Limits {
                lanes: 0,
                ..Limits::default()
            })
            .expect("a runtime")
        })
        .clone()
}

/// The test plugin `name` (`wardle`, `hostile`, ...), compiled.
pub fn compiled(name: &str) -> Component {
    static COMPILED: OnceLock<Mutex<HashMap<String, Component>>> = OnceLock::new();
    let mut compiled = COMPILED.get_or_init(Default::default).lock().unwrap();
    compiled
        .entry(name.to_string())
        .or_insert_with(|| {
            let bytes = std::fs::read(wasm_path(name)).unwrap_or_else(|e| {
                panic!("reading the test plugin {name} ({e}): build it with scripts/build-plugins.sh")
            });
            Component::new(&runtime().engine, bytes).expect("compiling the test plugin")
        })
        .clone()
}

/// Where `scripts/build-plugins.sh` writes the test plugin `name`.
pub fn wasm_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../target/plugins/{name}.wasm"))
}

/// The test plugin `name` loaded, its calls held to `budget`.
pub fn load_in(name: &str, budget: Arc<Budget>) -> anyhow::Result<PluginComponent> {
    PluginComponent::from_component_in(runtime(), name, compiled(name), budget, None)
}

/// The test plugin `name` loaded with the runtime's default budget.
pub fn load(name: &str) -> PluginComponent {
    load_in(name, Arc::new(Budget::new(64 << 20, Duration::from_millis(100)))).expect("loading the test plugin")
}

/// A trial of the hostile plugin that misbehaves as `mode` in `stage` (`prepare-for-create` or `validate`).
pub fn trial(mode: &str, stage: &str) -> Value {
    json!({
        "apiVersion": "hostile.example.com/v1",
        "kind": "Trial",
        "metadata": {"name": "t", "namespace": "default"},
        "spec": {"mode": mode, "stage": stage},
    })
}

/// The state of a store of no plugin in particular (`test`), granted no reads, for tests of host functions.
pub fn host_state() -> super::host::HostState {
    use std::time::Instant;
    super::host::HostState {
        plugin: Arc::from("test"),
        limits: super::host::Limiter::new(
            wasmtime::StoreLimitsBuilder::new().build(),
            prometheus_client::metrics::gauge::Gauge::default(),
        ),
        reads: Arc::new(super::host::ReadGrant {
            declared: Vec::new(),
            reader: OnceLock::new(),
        }),
        call_started: Instant::now(),
        in_imports: Duration::ZERO,
        cpu_started: Duration::ZERO,
        cpu_in_imports: Duration::ZERO,
        timeout: Duration::from_millis(100),
        import_failure: None,
        last_error_log: None,
        stderr: String::new(),
        stderr_line: String::new(),
        request_user: None,
    }
}
