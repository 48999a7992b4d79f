//! Linking a component with the host's imports: its other imports trap, its exports are found and type-checked
//! against the contract (an export of the contract's name with other types is refused, naming it), and an instance's
//! exported functions are loaded. A linked component is loaded while it is used ([`LazyComponent`]), and what a
//! component's load read is shared by every plugin of it ([`SharedComponent`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{anyhow, bail};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Instance, InstancePre, Linker, LinkerInstance, ResourceType};
use wasmtime::AsContextMut as _;
use wasmtime::Store;

use super::bindings::exports::wasm_apiserver::plugin as ex;
use super::contract::iface;
use super::host::HostState;
use super::in_context;
use apimachinery::plugin::AdmissionRules;
use apimachinery::scheme::Exports;
use apimachinery::scheme::GroupInfo;
use component_base::metrics::metrics;

/// Export indices of the optional interfaces a component exports.
#[derive(Clone, Default)]
pub(super) struct Indices {
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

/// Loads a component again (from the compile cache) after it was unloaded.
pub type Reload = Box<dyn Fn() -> anyhow::Result<Component> + Send + Sync>;

/// A component linked with the host's imports, and its export indices.
pub(super) struct LinkedComponent {
    pub(super) pre: InstancePre<HostState>,
    indices: Indices,
}
impl LinkedComponent {
    /// The functions of every export of `instance` (an instance of this component), each export type-checked: a
    /// mismatch names the export.
    pub(super) fn guests(&self, store: &mut Store<HostState>, instance: &Instance) -> anyhow::Result<Guests> {
        let i = &self.indices;
        let mut s = store;
        Ok(Guests {
            scheme: i
                .scheme
                .as_ref()
                .ok_or_else(|| anyhow!("no scheme"))?
                .load(&mut s, instance)
                .map_err(|e| mismatch(iface::SCHEME, e))?,
            create: load(&i.create, iface::CREATE, |x| x.load(&mut s, instance))?,
            update: load(&i.update, iface::UPDATE, |x| x.load(&mut s, instance))?,
            delete: load(&i.delete, iface::DELETE, |x| x.load(&mut s, instance))?,
            lister: load(&i.lister, iface::LISTER, |x| x.load(&mut s, instance))?,
            table: load(&i.table, iface::TABLE, |x| x.load(&mut s, instance))?,
            converter: load(&i.converter, iface::CONVERTER, |x| x.load(&mut s, instance))?,
            defaulter: load(&i.defaulter, iface::DEFAULTER, |x| x.load(&mut s, instance))?,
            mutating: load(&i.mutating, iface::MUTATING, |x| x.load(&mut s, instance))?,
            validating: load(&i.validating, iface::VALIDATING, |x| x.load(&mut s, instance))?,
            status: load(&i.status, iface::STATUS, |x| x.load(&mut s, instance))?,
            scaler: load(&i.scaler, iface::SCALER, |x| x.load(&mut s, instance))?,
            create_pipeline: load(&i.create_pipeline, iface::CREATE_PIPELINE, |x| x.load(&mut s, instance))?,
        })
    }
}

/// The linked component of every plugin of one component, loaded while used: an idle one is dropped with its
/// instances ([`crate::component::PluginComponent::evict_idle`]), and with it its code, whose pages (tens of MB for the Python and JavaScript
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
    pub(super) fn new(ready: LinkedComponent, reload: Option<Reload>) -> LazyComponent {
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

    /// The linked component, loaded again (and linked by `linker`) if it was unloaded.
    pub(super) fn ready(&self, linker: &Linker<HostState>) -> anyhow::Result<Arc<LinkedComponent>> {
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
        let (ready, _) = link(linker, &reload()?)?;
        tracing::debug!(ms = started.elapsed().as_millis() as u64, "component loaded again");
        metrics().plugin_components_loaded.inc();
        let ready = Arc::new(ready);
        *current = Some(ready.clone());
        Ok(ready)
    }

    /// Unloads the component if it can be loaded again and was not used for `idle`.
    pub(super) fn unload_if_idle(&self, idle: std::time::Duration) {
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

/// Links a component with the host's imports in `linker` (its other imports trap) and finds its exports.
pub(super) fn link(linker: &Linker<HostState>, component: &Component) -> anyhow::Result<(LinkedComponent, Exports)> {
    let mut linker = linker.clone();
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
/// as functions that trap when called, but for the few WASI functions it answers ([`super::wasi`]). The contract's own imports are left to the linker, which matches them by
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
            // The few WASI functions the sandbox answers (clocks, random bytes, an empty environment).
            let function = parent.map(|p| super::wasi::unversioned(p, name));
            if let Some((function, answer)) =
                function.and_then(|f| Some((super::wasi::answer(&f)?, f)).map(|(a, f)| (f, a)))
            {
                let ends_its_borrows = super::wasi::ends_its_borrows(&function);
                linker.func_new(name, move |mut store, _, params, results| {
                    let answered = answer(store.as_context_mut(), params, results);
                    if !ends_its_borrows {
                        super::wasi::end_borrows(store, params)?;
                    }
                    answered
                })?;
                return Ok(());
            }
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
    pub(super) linked: Arc<LazyComponent>,
    pub(super) exports: Exports,
    pub(super) group: GroupInfo,
    pub(super) selectable_fields: Vec<(String, Vec<String>)>,
    pub(super) mutating_rules: AdmissionRules,
    pub(super) validating_rules: AdmissionRules,
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
/// (so that [`crate::client_message`], which keeps the root cause, keeps the name of the export too).
fn mismatch(iface_name: &str, e: impl Into<anyhow::Error>) -> anyhow::Error {
    let e: anyhow::Error = e.into();
    anyhow!("export {} does not match the contract: {e:#}", iface::name(iface_name))
}
