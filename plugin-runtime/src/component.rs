//! A component loaded for one plugin: linked ([`super::linking`]), its scheme, columns, subresources and admission
//! rules read, and sandboxed instances made of it. Its instances wait in a pool ([`super::pool`]); a call runs in one
//! ([`super::call`]); its typed calls are [`super::calls`].

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, bail};
use wasmtime::component::{Component, Instance};
use wasmtime::{Store, StoreLimitsBuilder, UpdateDeadline};

use super::budget::Budget;
use super::client_message;
pub use super::contract::iface;
use super::contract::{admission_rule_from_wit, scheme_from_wit};
use super::host::{HostState, ReadGrant};
use super::in_context;
use super::linking::{link, LazyComponent};
pub use super::linking::{Guests, Reload, SharedComponent};
use super::pool::{InstancePool, PooledInstance};
use super::runtime::Runtime;
use apimachinery::plugin::AdmissionRules;
use apimachinery::plugin::HostReads;
use apimachinery::scheme::Exports;
use apimachinery::scheme::{Column, GroupInfo, ScalePaths};
use component_base::metrics::{metrics, PluginLabels};

/// A component loaded for one plugin of one tenant: what it exports and the scheme it declared, and the pool of
/// sandboxed instances its calls run in, held to the tenant's budget. [`super::calls`] makes its typed calls.
pub struct PluginComponent {
    pub(super) name: Arc<str>,
    /// The runtime it runs in.
    pub(super) runtime: Arc<Runtime>,
    /// The compiled component, linked, loaded while it is used.
    pub(super) linked: Arc<LazyComponent>,
    /// The exported interfaces.
    pub exports: Exports,
    /// The scheme, with verbs detected from the exports.
    pub group: GroupInfo,
    /// Selectable fields per resource plural, when the plugin exports `lister`.
    pub selectable_fields: Vec<(String, Vec<String>)>,
    /// The mutating admission rules.
    pub mutating_rules: AdmissionRules,
    /// The validating admission rules.
    pub validating_rules: AdmissionRules,
    reads: Arc<ReadGrant>,
    pub(super) pool: Arc<InstancePool>,
    pub(super) labels: PluginLabels,
    /// A moving average of the CPU time of its calls, in nanoseconds: decides whether calls run inline on the async
    /// worker or on a lane.
    pub(super) average_call_nanos: AtomicU64,
    /// Its tenant's plugin budget: instance memory, call deadline, CPU.
    pub(super) budget: Arc<Budget>,
    /// What it shares with the other plugins of its component (kept alive while it is served).
    shared: Option<Arc<SharedComponent>>,
}

impl std::fmt::Debug for PluginComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginComponent")
            .field("name", &self.name)
            .field("group", &self.group.group)
            .finish()
    }
}

impl PluginComponent {
    /// Compiles and loads a component: detects its exports, type-checks them against the contract by instantiating
    /// it once, and reads its scheme.
    pub fn load(runtime: Arc<Runtime>, name: &str, wasm: &[u8]) -> anyhow::Result<PluginComponent> {
        let component = in_context(
            super::runtime::compile_component(&runtime.engine, wasm),
            "compiling the component",
        )?;
        Self::from_component(runtime, name, component)
    }

    /// Loads an already compiled component.
    pub fn from_component(runtime: Arc<Runtime>, name: &str, component: Component) -> anyhow::Result<PluginComponent> {
        let budget = Arc::new(Budget::new(runtime.limits.memory_bytes, runtime.limits.call_timeout));
        Self::from_component_in(runtime, name, component, budget, None)
    }

    /// Loads a plugin from a compiled component, its instances and calls held to a tenant's `budget`. With `reload`,
    /// the component is unloaded when idle and loaded again with it when next used.
    pub fn from_component_in(
        runtime: Arc<Runtime>,
        name: &str,
        component: Component,
        budget: Arc<Budget>,
        reload: Option<Reload>,
    ) -> anyhow::Result<PluginComponent> {
        let (ready, exports) = link(&runtime.linker, &component)?;
        drop(component);
        let empty = GroupInfo {
            group: String::new(),
            resources: Vec::new(),
            reads: Vec::new(),
        };
        let linked = Arc::new(LazyComponent::new(ready, reload));
        let mut plugin = PluginComponent::of_component(name, runtime, linked, exports, empty, budget);
        // Instantiating once type-checks every exported function against the contract; a mismatch names the export.
        plugin
            .prewarm()
            .map_err(|e| anyhow!("instantiating the component: {}", client_message(&e)))?;
        let info = plugin
            .call("scheme.info", |g, s| g.scheme.call_info(s))
            .map_err(|e| anyhow!("{e}"))?;
        plugin.group = scheme_from_wit(info, &exports)?;
        plugin.reads = Arc::new(ReadGrant {
            declared: plugin.group.reads.clone(),
            reader: std::sync::OnceLock::new(),
        });
        plugin.pool.clear();
        for (i, r) in plugin.group.resources.clone().into_iter().enumerate() {
            if exports.table {
                let cols = plugin.call("table-convertor.columns", |g, s| {
                    g.table.as_ref().expect("exported").call_columns(s, &r.plural)
                });
                let cols = cols.map_err(|e| anyhow!("{e}"))?;
                let cols = cols
                    .into_iter()
                    .map(|c| Column {
                        // The host turns a plugin's `Age` column of dates into ages (plugins have no clock).
                        shows_age: c.type_ == "date" && c.name.eq_ignore_ascii_case("age"),
                        name: c.name,
                        type_: c.type_,
                        format: c.format,
                        description: c.description,
                        priority: c.priority,
                    })
                    .collect();
                // A plugin's columns are the same in every version.
                Arc::make_mut(&mut plugin.group.resources[i]).set_columns(cols);
            }
            if exports.lister {
                let fields = plugin.call("lister.selectable-fields", |g, s| {
                    g.lister
                        .as_ref()
                        .expect("exported")
                        .call_selectable_fields(s, &r.plural)
                });
                plugin
                    .selectable_fields
                    .push((r.plural.clone(), fields.map_err(|e| anyhow!("{e}"))?));
            }
        }
        plugin.read_subresources()?;
        if exports.mutating {
            let rules = plugin.call("mutating-admission.rules", |g, s| {
                g.mutating.as_ref().expect("exported").call_rules(s)
            });
            plugin.mutating_rules = AdmissionRules(
                rules
                    .map_err(|e| anyhow!("{e}"))?
                    .into_iter()
                    .map(admission_rule_from_wit)
                    .collect(),
            );
        }
        if exports.validating {
            let rules = plugin.call("validating-admission.rules", |g, s| {
                g.validating.as_ref().expect("exported").call_rules(s)
            });
            plugin.validating_rules = AdmissionRules(
                rules
                    .map_err(|e| anyhow!("{e}"))?
                    .into_iter()
                    .map(admission_rule_from_wit)
                    .collect(),
            );
        }
        // Instances are made on first use: a loaded plugin nobody calls holds none.
        plugin.pool.clear();
        Ok(plugin)
    }

    /// Reads which resources have `/status` (`status-strategy.resources`) and `/scale` (`scaler.scale-paths`) into
    /// the scheme, checking that they name served resources and well-formed paths.
    fn read_subresources(&mut self) -> anyhow::Result<()> {
        if self.exports.status {
            let named = self
                .call("status-strategy.resources", |g, s| {
                    g.status.as_ref().expect("exported").call_resources(s)
                })
                .map_err(|e| anyhow!("{e}"))?;
            for plural in named {
                let r = self
                    .group
                    .resources
                    .iter_mut()
                    .find(|r| r.plural == plural)
                    .ok_or_else(|| anyhow!("status-strategy.resources names {plural:?}, which scheme.info does not"))?;
                // A plugin's subresources are the same in every version.
                for v in &mut Arc::make_mut(r).versions {
                    v.subresources.status = true;
                }
            }
        }
        if self.exports.scaler {
            for i in 0..self.group.resources.len() {
                let plural = self.group.resources[i].plural.clone();
                let paths = self
                    .call("scaler.scale-paths", |g, s| {
                        g.scaler.as_ref().expect("exported").call_scale_paths(s, &plural)
                    })
                    .map_err(|e| anyhow!("{e}"))?;
                let Some(paths) = paths else { continue };
                let paths = ScalePaths {
                    spec_replicas: paths.spec_replicas_path,
                    status_replicas: paths.status_replicas_path,
                    label_selector: paths.label_selector_path,
                };
                if let Some(problem) = paths.problem() {
                    bail!("scaler.scale-paths of {plural}: {problem}");
                }
                for v in &mut Arc::make_mut(&mut self.group.resources[i]).versions {
                    v.subresources.scale = Some(paths.clone());
                }
            }
        }
        Ok(())
    }

    /// Loads a plugin of the component whose content hash is `hash` as [`PluginComponent::from_component_in`], and leaves its
    /// [`SharedComponent`] for the next tenant serving the same component ([`PluginComponent::from_shared_component`]).
    pub fn from_component_shared(
        runtime: Arc<Runtime>,
        name: &str,
        hash: &str,
        component: Component,
        budget: Arc<Budget>,
        reload: Option<Reload>,
    ) -> anyhow::Result<PluginComponent> {
        let mut plugin = PluginComponent::from_component_in(runtime.clone(), name, component, budget, reload)?;
        let shared = Arc::new(SharedComponent {
            linked: plugin.linked.clone(),
            exports: plugin.exports,
            group: plugin.group.clone(),
            selectable_fields: plugin.selectable_fields.clone(),
            mutating_rules: plugin.mutating_rules.clone(),
            validating_rules: plugin.validating_rules.clone(),
        });
        runtime.remember_shared_component(hash, &shared);
        plugin.shared = Some(shared);
        Ok(plugin)
    }

    /// A plugin of an already loaded component, held to a tenant's `budget`: no instance is made.
    pub fn from_shared_component(
        runtime: Arc<Runtime>,
        name: &str,
        shared: Arc<SharedComponent>,
        budget: Arc<Budget>,
    ) -> PluginComponent {
        let linked = shared.linked.clone();
        let mut plugin =
            PluginComponent::of_component(name, runtime, linked, shared.exports, shared.group.clone(), budget);
        plugin.selectable_fields = shared.selectable_fields.clone();
        plugin.mutating_rules = shared.mutating_rules.clone();
        plugin.validating_rules = shared.validating_rules.clone();
        plugin.shared = Some(shared);
        plugin
    }

    /// A plugin of a component with this scheme, no instance, nothing measured and nothing remembered yet.
    fn of_component(
        name: &str,
        runtime: Arc<Runtime>,
        linked: Arc<LazyComponent>,
        exports: Exports,
        group: GroupInfo,
        budget: Arc<Budget>,
    ) -> PluginComponent {
        let pool = Arc::new(InstancePool::default());
        PluginComponent {
            name: name.into(),
            runtime,
            linked,
            exports,
            reads: Arc::new(ReadGrant {
                declared: group.reads.clone(),
                reader: std::sync::OnceLock::new(),
            }),
            group,
            selectable_fields: Vec::new(),
            mutating_rules: AdmissionRules::default(),
            validating_rules: AdmissionRules::default(),
            pool,
            // Unknown until measured: a new plugin's first calls are taken as slow, so that one that loops on its
            // first call (before its average says so) hands its worker over instead of stalling the requests queued
            // on it. Short calls bring the average under the bound within about six calls.
            average_call_nanos: AtomicU64::new(2 * super::fair::INLINE_CALL_NANOS),
            budget,
            labels: PluginLabels {
                plugin: name.to_string(),
            },
            shared: None,
        }
    }

    /// Drops the pooled instances unused for `idle` or longer, and the component itself once no plugin of it (in
    /// any tenant) was called for that long.
    pub fn evict_idle(&self, idle: std::time::Duration) {
        // Sooner while the idle instances of every plugin near their host-wide bound.
        let instance_idle = if self.runtime.pool_budget.under_pressure() {
            idle.min(super::runtime::PoolBudget::PRESSURE_IDLE)
        } else {
            idle
        };
        self.pool.drop_unused_for(instance_idle);
        self.linked.unload_if_idle(idle);
    }

    /// The plugin's name (its file name without `.wasm`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many idle instances its pool holds.
    pub fn idle_instances(&self) -> usize {
        self.pool.len()
    }

    /// The linear memory of each idle instance its pool holds, in bytes.
    pub fn idle_instance_memory(&self) -> Vec<usize> {
        self.pool.memory()
    }

    /// Gives the plugin its host reads (once, when it is registered with a server).
    pub fn grant_reads(&self, reader: Arc<dyn HostReads>) {
        let _ = self.reads.reader.set(reader);
    }

    /// Creates one instance and puts it in the pool, so the next call does not pay for instantiation. Returns how
    /// long instantiating took.
    pub fn prewarm(&self) -> anyhow::Result<std::time::Duration> {
        let started = Instant::now();
        let instance = self.instantiate()?;
        let elapsed = started.elapsed();
        metrics().plugin_instantiations.get_or_create(&self.labels).inc();
        self.pool.keep(instance, &self.runtime.pool_budget);
        Ok(elapsed)
    }

    pub(super) fn instantiate(&self) -> anyhow::Result<PooledInstance> {
        let generation = self.budget.generation();
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.budget.memory_bytes().min(self.runtime.limits.memory_bytes))
            .instances(10_000)
            .trap_on_grow_failure(true)
            .build();
        let limits = super::host::Limiter::new(limits, metrics().plugin_memory.get_or_create(&self.labels).clone());
        let state = HostState {
            plugin: self.name.clone(),
            limits,
            reads: self.reads.clone(),
            call_started: Instant::now(),
            in_imports: std::time::Duration::ZERO,
            // Instantiating runs the component's start functions under the deadline too, on this thread.
            cpu_started: super::budget::thread_cpu_time(),
            cpu_in_imports: std::time::Duration::ZERO,
            timeout: self.budget.call_timeout(),
            import_failure: None,
            last_error_log: None,
            stderr: String::new(),
            stderr_line: String::new(),
            request_user: None,
        };
        // Instantiating runs guest code (start functions).
        let _running = self.runtime.epoch.running();
        let mut store = Store::new(&self.runtime.engine, state);
        store.limiter(|s| &mut s.limits);
        // At every epoch tick, interrupt the call once its own time (host imports excluded) passes the deadline.
        store.epoch_deadline_callback(|ctx| {
            Ok(if ctx.data().deadline_passed() {
                UpdateDeadline::Interrupt
            } else {
                UpdateDeadline::Continue(1)
            })
        });
        store.set_epoch_deadline(1);
        let ready = self.linked.ready(&self.runtime.linker)?;
        let instance: Instance = ready.pre.instantiate(&mut store)?;
        let guests = ready.guests(&mut store, &instance)?;
        metrics().plugin_instances.get_or_create(&self.labels).inc();
        let memory_at_start = store.data().limits.memory_bytes();
        Ok(PooledInstance {
            store,
            guests,
            labels: self.labels.clone(),
            generation,
            last_used: Instant::now(),
            memory_at_start,
            charge: None,
        })
    }
}

#[cfg(test)]
mod tests;
