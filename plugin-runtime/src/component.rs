//! A component loaded for one plugin: linking it with the host's imports (its other imports trap), detecting the
//! interfaces it exports (and so the verbs it serves), reading its scheme, and making sandboxed instances of it.
//! Its instances wait in a pool ([`super::pool`]); a call runs in one ([`super::call`]); its typed calls are
//! [`super::calls`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Instance, InstancePre, Linker, LinkerInstance, ResourceType};
use wasmtime::{Store, StoreLimitsBuilder, UpdateDeadline};

use super::bindings::exports::wasm_apiserver::plugin as ex;
use super::budget::Budget;
use super::call::{client_message, INLINE_CALL_NANOS};
use super::contract::{admission_rule_from_wit, scheme_from_wit};
pub use super::contract::{iface, Exports};
use super::host::{HostReads, HostState, ReadGrant};
use super::pool::{InstancePool, PooledInstance};
use super::runtime::{in_context, Runtime};
use super::scheme::{Column, GroupInfo, ScalePaths};
pub use super::types::AdmissionRules;
pub use super::types::PluginError;
use component_base::metrics::{metrics, PluginLabels};

/// Export indices of the optional interfaces a component exports.
#[derive(Clone, Default)]
struct Indices {
    scheme: Option<ex::scheme::GuestIndices>,
    create: Option<ex::create_strategy::GuestIndices>,
    update: Option<ex::update_strategy::GuestIndices>,
    delete: Option<ex::delete_strategy::GuestIndices>,
    lister: Option<ex::lister::GuestIndices>,
    table: Option<ex::table_convertor::GuestIndices>,
    converter: Option<ex::converter::GuestIndices>,
    defaulter: Option<ex::defaulter::GuestIndices>,
    mutating: Option<ex::mutating_admission::GuestIndices>,
    validating: Option<ex::validating_admission::GuestIndices>,
    status: Option<ex::status_strategy::GuestIndices>,
    scaler: Option<ex::scaler::GuestIndices>,
    create_pipeline: Option<ex::create_pipeline::GuestIndices>,
}

/// The loaded functions of one instance, per exported interface.
pub struct Guests {
    /// `scheme`.
    pub scheme: ex::scheme::Guest,
    /// `create-strategy`, when exported.
    pub create: Option<ex::create_strategy::Guest>,
    /// `update-strategy`, when exported.
    pub update: Option<ex::update_strategy::Guest>,
    /// `delete-strategy`, when exported.
    pub delete: Option<ex::delete_strategy::Guest>,
    /// `lister`, when exported.
    pub lister: Option<ex::lister::Guest>,
    /// `table-convertor`, when exported.
    pub table: Option<ex::table_convertor::Guest>,
    /// `converter`, when exported.
    pub converter: Option<ex::converter::Guest>,
    /// `defaulter`, when exported.
    pub defaulter: Option<ex::defaulter::Guest>,
    /// `mutating-admission`, when exported.
    pub mutating: Option<ex::mutating_admission::Guest>,
    /// `validating-admission`, when exported.
    pub validating: Option<ex::validating_admission::Guest>,
    /// `status-strategy`, when exported.
    pub status: Option<ex::status_strategy::Guest>,
    /// `scaler`, when exported.
    pub scaler: Option<ex::scaler::Guest>,
    /// `create-pipeline`, when exported.
    pub create_pipeline: Option<ex::create_pipeline::Guest>,
}

/// A component loaded for one plugin of one tenant: what it exports and the scheme it declared, and the pool of
/// sandboxed instances its calls run in, held to the tenant's budget. [`super::calls`] makes its typed calls.
pub struct PluginComponent {
    pub(super) name: Arc<str>,
    /// The compiled component, linked, and the runtime it runs in.
    pub(super) wasm: Wasm,
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

/// What a plugin loaded from a component runs: the compiled component, linked, loaded while it is used.
#[derive(Clone)]
pub(super) struct Wasm {
    pub(super) runtime: Arc<Runtime>,
    pub(super) linked: Arc<LazyComponent>,
}

/// Loads a component again (from the compile cache) after it was unloaded.
pub type Reload = Box<dyn Fn() -> anyhow::Result<Component> + Send + Sync>;

/// A component linked with the host's imports, and its export indices.
struct LinkedComponent {
    pre: InstancePre<HostState>,
    indices: Indices,
}

/// The linked component of every plugin of one component, loaded while used: an idle one is dropped with its
/// instances ([`PluginComponent::evict_idle`]), and with it its code, whose pages (tens of MB for the Python and JavaScript
/// guests, all run at least once) would otherwise stay resident, and is loaded again from the compile cache (a
/// memory map, ~3 ms for the Python guest) on the next call.
pub(super) struct LazyComponent {
    /// Loads the component again; `None` keeps it loaded (no compile cache to load it from).
    reload: Option<Reload>,
    /// The component, while loaded.
    current: Mutex<Option<Arc<LinkedComponent>>>,
    /// When a plugin of it was last called or instantiated, in milliseconds since `epoch`.
    last_used: AtomicU64,
    epoch: Instant,
}

impl LazyComponent {
    fn new(ready: LinkedComponent, reload: Option<Reload>) -> LazyComponent {
        metrics().plugin_components_loaded.inc();
        LazyComponent {
            reload,
            current: Mutex::new(Some(Arc::new(ready))),
            last_used: AtomicU64::new(0),
            epoch: Instant::now(),
        }
    }

    /// Notes a use (a call through an instance of it).
    pub(super) fn touch(&self) {
        let now = self.epoch.elapsed().as_millis() as u64;
        self.last_used.store(now, Ordering::Relaxed);
    }

    /// The linked component, loaded again if it was unloaded.
    fn ready(&self, runtime: &Runtime) -> anyhow::Result<Arc<LinkedComponent>> {
        self.touch();
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(ready) = &*current {
            return Ok(ready.clone());
        }
        let reload = self
            .reload
            .as_ref()
            .ok_or_else(|| anyhow!("the component is not loaded"))?;
        let started = Instant::now();
        let (ready, _) = link(runtime, &reload()?)?;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "component loaded again");
        metrics().plugin_components_loaded.inc();
        let ready = Arc::new(ready);
        *current = Some(ready.clone());
        Ok(ready)
    }

    /// Unloads the component if it can be loaded again and was not used for `idle`.
    fn unload_if_idle(&self, idle: std::time::Duration) {
        if self.reload.is_none() {
            return;
        }
        let now = self.epoch.elapsed().as_millis() as u64;
        if now.saturating_sub(self.last_used.load(Ordering::Relaxed)) < idle.as_millis() as u64 {
            return;
        }
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.take().is_some() {
            metrics().plugin_components_loaded.dec();
        }
    }
}

impl Drop for LazyComponent {
    fn drop(&mut self) {
        let current = self
            .current
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if current.take().is_some() {
            metrics().plugin_components_loaded.dec();
        }
    }
}

/// Links a component with the host's imports (its other imports trap) and finds its exports.
fn link(runtime: &Runtime, component: &Component) -> anyhow::Result<(LinkedComponent, Exports)> {
    let mut linker = runtime.linker.clone();
    in_context(
        stub_foreign_imports(&mut linker, component),
        "stubbing the component's other imports",
    )?;
    let pre = in_context(linker.instantiate_pre(component), "linking the component's imports")?;
    let c = component;
    let p = &pre;
    let indices = Indices {
        scheme: optional(c, iface::SCHEME, || ex::scheme::GuestIndices::new(p))?,
        create: optional(c, iface::CREATE, || ex::create_strategy::GuestIndices::new(p))?,
        update: optional(c, iface::UPDATE, || ex::update_strategy::GuestIndices::new(p))?,
        delete: optional(c, iface::DELETE, || ex::delete_strategy::GuestIndices::new(p))?,
        lister: optional(c, iface::LISTER, || ex::lister::GuestIndices::new(p))?,
        table: optional(c, iface::TABLE, || ex::table_convertor::GuestIndices::new(p))?,
        converter: optional(c, iface::CONVERTER, || ex::converter::GuestIndices::new(p))?,
        defaulter: optional(c, iface::DEFAULTER, || ex::defaulter::GuestIndices::new(p))?,
        mutating: optional(c, iface::MUTATING, || ex::mutating_admission::GuestIndices::new(p))?,
        validating: optional(c, iface::VALIDATING, || ex::validating_admission::GuestIndices::new(p))?,
        status: optional(c, iface::STATUS, || ex::status_strategy::GuestIndices::new(p))?,
        scaler: optional(c, iface::SCALER, || ex::scaler::GuestIndices::new(p))?,
        create_pipeline: optional(c, iface::CREATE_PIPELINE, || ex::create_pipeline::GuestIndices::new(p))?,
    };
    if indices.scheme.is_none() {
        bail!(
            "the component does not export {}, which every plugin must",
            iface::name(iface::SCHEME)
        );
    }
    let exports = Exports {
        create: indices.create.is_some(),
        update: indices.update.is_some(),
        delete: indices.delete.is_some(),
        lister: indices.lister.is_some(),
        table: indices.table.is_some(),
        converter: indices.converter.is_some(),
        defaulter: indices.defaulter.is_some(),
        mutating: indices.mutating.is_some(),
        validating: indices.validating.is_some(),
        status: indices.status.is_some(),
        scaler: indices.scaler.is_some(),
        // Used only with the create strategy it stands for.
        create_pipeline: indices.create_pipeline.is_some() && indices.create.is_some(),
    };
    Ok((LinkedComponent { pre, indices }, exports))
}

/// Defines every import of `component` outside the contract's package (WASI's, which the sandbox does not provide)
/// as functions that trap when called. The contract's own imports are left to the linker, which matches them by
/// semver: a plugin built for 0.1.0 imports `host@0.1.0`, which the host's `host@0.1.1` serves. (wasmtime's
/// `define_unknown_imports_as_traps` looks instance names up exactly, so it would shadow that match with traps.) An
/// import of the package that the host does not serve fails the link, naming it.
fn stub_foreign_imports(linker: &mut Linker<HostState>, component: &Component) -> wasmtime::Result<()> {
    let engine = linker.engine().clone();
    let package = format!("{}/", iface::PACKAGE);
    for (name, item) in component.component_type().imports(&engine) {
        if !name.starts_with(&package) {
            stub_import(&mut linker.root(), &engine, None, name, item.ty)?;
        }
    }
    Ok(())
}

/// Defines one import (`parent`'s, for an instance's) as traps: a function that fails when called, every function
/// of an instance, a resource with no behaviour.
fn stub_import(
    linker: &mut LinkerInstance<'_, HostState>,
    engine: &wasmtime::Engine,
    parent: Option<&str>,
    name: &str,
    item: ComponentItem,
) -> wasmtime::Result<()> {
    match item {
        ComponentItem::ComponentFunc(_) => {
            let qualified = match parent {
                Some(parent) => format!("{parent}#{name}"),
                None => name.to_string(),
            };
            // The message `call::client_message` recognises and tells the client plainly.
            linker.func_new(name, move |_, _, _, _| {
                Err(wasmtime::format_err!(
                    "unknown import: `{qualified}` has not been defined"
                ))
            })?;
        }
        ComponentItem::ComponentInstance(instance) => {
            let mut inner = linker.instance(name)?;
            for (export, item) in instance.exports(engine) {
                stub_import(&mut inner, engine, Some(name), export, item.ty)?;
            }
        }
        ComponentItem::Resource(_) => linker.resource(name, ResourceType::host::<()>(), |_, _| Ok(()))?,
        ComponentItem::Module(_) | ComponentItem::Component(_) | ComponentItem::CoreFunc(_) => {
            return Err(wasmtime::format_err!(
                "the import {name} is a {}, which the sandbox cannot provide",
                item_kind(&item)
            ));
        }
        ComponentItem::Type(_) => {}
    }
    Ok(())
}

fn item_kind(item: &ComponentItem) -> &'static str {
    match item {
        ComponentItem::Module(_) => "core module",
        ComponentItem::Component(_) => "component",
        ComponentItem::CoreFunc(_) => "core function",
        _ => "definition",
    }
}

/// What every plugin loaded from the same component shares, whatever its tenant: the linked component and what
/// its load read from it (scheme, columns, selectable fields, admission rules). A tenant serving a component another
/// tenant already serves loads it from here without instantiating it: one load for a thousand copies.
pub struct SharedComponent {
    wasm: Wasm,
    exports: Exports,
    group: GroupInfo,
    selectable_fields: Vec<(String, Vec<String>)>,
    mutating_rules: AdmissionRules,
    validating_rules: AdmissionRules,
}

impl std::fmt::Debug for PluginComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginComponent")
            .field("name", &self.name)
            .field("group", &self.group.group)
            .finish()
    }
}

fn optional<T>(
    component: &Component,
    iface_name: &str,
    new: impl FnOnce() -> wasmtime::Result<T>,
) -> anyhow::Result<Option<T>> {
    let full = iface::name(iface_name);
    if component.get_export_index(None, &full).is_none() {
        return Ok(None);
    }
    new().map(Some).map_err(|e| mismatch(iface_name, e))
}

/// Loads the functions of an optional export from an instance, naming the export when its types do not match.
fn load<I, G>(
    indices: &Option<I>,
    iface_name: &str,
    f: impl FnOnce(&I) -> wasmtime::Result<G>,
) -> anyhow::Result<Option<G>> {
    indices
        .as_ref()
        .map(|x| f(x).map_err(|e| mismatch(iface_name, e)))
        .transpose()
}

/// The error for an export whose name is the contract's but whose types are not, as one message without a source
/// (so that [`client_message`], which keeps the root cause, keeps the name of the export too).
fn mismatch(iface_name: &str, e: impl Into<anyhow::Error>) -> anyhow::Error {
    let e: anyhow::Error = e.into();
    anyhow!("export {} does not match the contract: {e:#}", iface::name(iface_name))
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
        let (ready, exports) = link(&runtime, &component)?;
        drop(component);
        let empty = GroupInfo {
            group: String::new(),
            resources: Vec::new(),
            reads: Vec::new(),
        };
        let mut plugin = PluginComponent::of_component(
            name,
            Wasm {
                runtime,
                linked: Arc::new(LazyComponent::new(ready, reload)),
            },
            exports,
            empty,
            budget,
        );
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
        let wasm = plugin.wasm.clone();
        let shared = Arc::new(SharedComponent {
            wasm,
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
    pub fn from_shared_component(name: &str, shared: Arc<SharedComponent>, budget: Arc<Budget>) -> PluginComponent {
        let mut plugin =
            PluginComponent::of_component(name, shared.wasm.clone(), shared.exports, shared.group.clone(), budget);
        plugin.selectable_fields = shared.selectable_fields.clone();
        plugin.mutating_rules = shared.mutating_rules.clone();
        plugin.validating_rules = shared.validating_rules.clone();
        plugin.shared = Some(shared);
        plugin
    }

    /// A plugin of a component with this scheme, no instance, nothing measured and nothing remembered yet.
    fn of_component(
        name: &str,
        wasm: Wasm,
        exports: Exports,
        group: GroupInfo,
        budget: Arc<Budget>,
    ) -> PluginComponent {
        let pool = Arc::new(InstancePool::default());
        PluginComponent {
            name: name.into(),
            wasm,
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
            average_call_nanos: AtomicU64::new(2 * INLINE_CALL_NANOS),
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
        let instance_idle = if self.wasm.runtime.pool_budget.under_pressure() {
            idle.min(super::runtime::PoolBudget::PRESSURE_IDLE)
        } else {
            idle
        };
        self.pool.drop_unused_for(instance_idle);
        self.wasm.linked.unload_if_idle(idle);
    }

    /// The plugin's name (its file name without `.wasm`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How many idle instances its pool holds.
    pub fn idle_instances(&self) -> usize {
        self.pool.len()
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
        self.pool.keep(instance, &self.wasm.runtime.pool_budget);
        Ok(elapsed)
    }

    pub(super) fn instantiate(&self) -> anyhow::Result<PooledInstance> {
        let wasm = &self.wasm;
        let generation = self.budget.generation();
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.budget.memory_bytes().min(wasm.runtime.limits.memory_bytes))
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
            request_user: None,
        };
        // Instantiating runs guest code (start functions).
        let _running = wasm.runtime.epoch.running();
        let mut store = Store::new(&wasm.runtime.engine, state);
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
        let ready = wasm.linked.ready(&wasm.runtime)?;
        let instance: Instance = ready.pre.instantiate(&mut store)?;
        let i = &ready.indices;
        let mut s = &mut store;
        let guests = Guests {
            scheme: i
                .scheme
                .as_ref()
                .ok_or_else(|| anyhow!("no scheme"))?
                .load(&mut s, &instance)
                .map_err(|e| mismatch(iface::SCHEME, e))?,
            create: load(&i.create, iface::CREATE, |x| x.load(&mut s, &instance))?,
            update: load(&i.update, iface::UPDATE, |x| x.load(&mut s, &instance))?,
            delete: load(&i.delete, iface::DELETE, |x| x.load(&mut s, &instance))?,
            lister: load(&i.lister, iface::LISTER, |x| x.load(&mut s, &instance))?,
            table: load(&i.table, iface::TABLE, |x| x.load(&mut s, &instance))?,
            converter: load(&i.converter, iface::CONVERTER, |x| x.load(&mut s, &instance))?,
            defaulter: load(&i.defaulter, iface::DEFAULTER, |x| x.load(&mut s, &instance))?,
            mutating: load(&i.mutating, iface::MUTATING, |x| x.load(&mut s, &instance))?,
            validating: load(&i.validating, iface::VALIDATING, |x| x.load(&mut s, &instance))?,
            status: load(&i.status, iface::STATUS, |x| x.load(&mut s, &instance))?,
            scaler: load(&i.scaler, iface::SCALER, |x| x.load(&mut s, &instance))?,
            create_pipeline: load(&i.create_pipeline, iface::CREATE_PIPELINE, |x| {
                x.load(&mut s, &instance)
            })?,
        };
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
