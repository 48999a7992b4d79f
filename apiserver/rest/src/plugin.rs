//! A served group of resource types: its scheme (as `k8s.io/apiserver`'s `APIGroupInfo`), the [`Strategy`] of its
//! types, and what the registry remembers of its objects (conversions, encoded watch events). A plugin is a
//! WebAssembly component ([`Plugin::of_component`], given a [`Component`]: the loader adapts the plugin runtime's
//! components, so that this crate knows no sandbox) or a type the host serves itself ([`Plugin::native`]: a built-in
//! group, a CustomResourceDefinition file).

use std::sync::Arc;
use std::time::Duration;

use crate::conversions::ConversionMemo;
use crate::strategy::Strategy;
use crate::watch_encodings::{WatchEncodings, WATCH_ENCODINGS_BYTES};
use apimachinery::plugin::{AdmissionRules, HostReads, PluginError};
use apimachinery::scheme::{group_version, Column, Exports, GroupInfo, ResourceInfo};
use serde_json::Value;

/// The JSON text [`Plugin::conversions`] may hold: about 30,000 objects of 400 bytes with their conversion, storage
/// form and table cells.
pub const CONVERSION_MEMO_BYTES: usize = 32 << 20;

/// A plugin's code in the sandbox: a WebAssembly component, as the loader adapts it. Its [`Strategy`] calls cross into
/// the sandbox; the rest is what it declared of itself and the upkeep the registry asks of it.
pub trait Component: Strategy {
    /// What the component declared: its name, scheme, exports, selectable fields and admission rules.
    fn declared(&self) -> Declared;

    /// Gives the component its host reads (once, when it is registered with a server).
    fn grant_reads(&self, reader: Arc<dyn HostReads>);

    /// Creates one instance and pools it, so the next call does not pay for instantiation; returns how long
    /// instantiating took.
    fn prewarm(&self) -> anyhow::Result<Duration>;

    /// The linear memory of each idle instance, in bytes.
    fn idle_instance_memory(&self) -> Vec<usize>;

    /// Drops what the component holds that has been idle for `idle` (instances, compiled code it can load again).
    fn evict_idle(&self, idle: Duration);
}

/// What a [`Component`] declares of itself.
pub struct Declared {
    /// Its name (the file name without `.wasm`).
    pub name: String,
    /// The interfaces it exports, and so its verbs.
    pub exports: Exports,
    /// Its scheme.
    pub group: GroupInfo,
    /// Selectable fields per resource plural, when it exports `lister`.
    pub selectable_fields: Vec<(String, Vec<String>)>,
    /// The mutating admission rules of its own admission.
    pub mutating_rules: AdmissionRules,
    /// The validating admission rules of its own admission.
    pub validating_rules: AdmissionRules,
}

/// A served group of resource types.
pub struct Plugin {
    name: Arc<str>,
    /// The strategy of its types.
    pub strategy: Arc<dyn Strategy>,
    /// The component, for a plugin loaded from a `.wasm` file.
    component: Option<Arc<dyn Component>>,
    /// The interfaces it exports (a native type: behaves as exporting), and so its verbs.
    pub exports: Exports,
    /// The scheme.
    pub group: GroupInfo,
    /// Selectable fields per resource plural, when it exports `lister`.
    pub selectable_fields: Vec<(String, Vec<String>)>,
    /// The mutating admission rules of its own admission.
    pub mutating_rules: AdmissionRules,
    /// The validating admission rules of its own admission.
    pub validating_rules: AdmissionRules,
    /// Conversions of stored objects already made.
    pub conversions: ConversionMemo,
    /// Watch events of stored objects already encoded, shared by the watchers.
    pub watch_encodings: WatchEncodings,
}

impl std::fmt::Debug for Plugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugin")
            .field("name", &self.name)
            .field("group", &self.group.group)
            .finish()
    }
}

impl Plugin {
    /// A plugin of a loaded component: its strategy is the component's, and its scheme and admission rules are what
    /// the component declared.
    pub fn of_component(component: Arc<dyn Component>) -> Plugin {
        let Declared {
            name,
            exports,
            group,
            selectable_fields,
            mutating_rules,
            validating_rules,
        } = component.declared();
        Plugin {
            name: name.into(),
            strategy: component.clone(),
            exports,
            group,
            selectable_fields,
            mutating_rules,
            validating_rules,
            conversions: ConversionMemo::new(CONVERSION_MEMO_BYTES),
            watch_encodings: WatchEncodings::new(WATCH_ENCODINGS_BYTES),
            component: Some(component),
        }
    }

    /// A built-in type group, served by the host with a native strategy: its scheme, the exports it behaves as
    /// having (and so its verbs), its table columns (given to every version of the resource; a version may carry
    /// its own in the scheme instead) and selectable fields per resource.
    pub fn native(
        name: &str,
        mut group: GroupInfo,
        exports: Exports,
        columns: Vec<(String, Vec<Column>)>,
        selectable_fields: Vec<(String, Vec<String>)>,
        strategy: Arc<dyn Strategy>,
    ) -> Plugin {
        for r in &mut group.resources {
            let r = Arc::make_mut(r);
            if r.verbs.is_empty() {
                r.verbs = exports.verbs();
            }
            if let Some((_, cols)) = columns.iter().find(|(plural, _)| *plural == r.plural) {
                r.set_columns(cols.clone());
            }
        }
        Plugin {
            name: name.into(),
            strategy,
            component: None,
            exports,
            group,
            selectable_fields,
            mutating_rules: AdmissionRules::default(),
            validating_rules: AdmissionRules::default(),
            conversions: ConversionMemo::new(CONVERSION_MEMO_BYTES / 8),
            watch_encodings: WatchEncodings::new(WATCH_ENCODINGS_BYTES),
        }
    }

    /// The plugin's name (its file name without `.wasm`; `builtin:...` for a built-in group).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the plugin is built into the host (named `builtin:...`): not a file of the plugin directory, as a
    /// component or a CustomResourceDefinition (which has a native strategy too) is.
    pub fn is_builtin(&self) -> bool {
        self.component.is_none() && self.name.starts_with("builtin:")
    }

    /// Converts an object of `resource` to `version` of the plugin's group; a no-op when the object is already in it.
    pub fn convert(&self, resource: &str, obj: Value, version: &str) -> Result<Value, PluginError> {
        let target = group_version(&self.group.group, version);
        if obj.get("apiVersion").and_then(Value::as_str) == Some(target.as_str()) {
            return Ok(obj);
        }
        self.strategy.convert(resource, obj, version)
    }

    /// A resource of the plugin by plural name.
    pub fn resource(&self, plural: &str) -> Option<&Arc<ResourceInfo>> {
        self.group.resources.iter().find(|r| r.plural == plural)
    }

    /// Gives the plugin's component its host reads (once, when it is registered with a server).
    pub fn grant_reads(&self, reader: Arc<dyn HostReads>) {
        if let Some(c) = &self.component {
            c.grant_reads(reader);
        }
    }

    /// Creates one instance of the plugin's component and pools it, so the next call does not pay for
    /// instantiation; returns how long instantiating took (nothing for a native plugin).
    pub fn prewarm(&self) -> anyhow::Result<Duration> {
        match &self.component {
            Some(c) => c.prewarm(),
            None => Ok(Duration::ZERO),
        }
    }

    /// The linear memory of each idle instance of its component, in bytes (none for a native plugin).
    pub fn idle_instance_memory(&self) -> Vec<usize> {
        self.component
            .as_ref()
            .map(|c| c.idle_instance_memory())
            .unwrap_or_default()
    }

    /// Forgets the conversions and encoded events once none was used for `idle`, and drops what its component holds
    /// that long idle ([`Component::evict_idle`]).
    pub fn evict_idle(&self, idle: Duration) {
        self.conversions.forget_if_unused(idle);
        self.watch_encodings.forget_if_unused(idle);
        if let Some(c) = &self.component {
            c.evict_idle(idle);
        }
    }
}
