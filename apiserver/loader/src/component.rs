//! A component as the registry serves it: the plugin runtime's [`PluginComponent`] adapted to the registry's
//! [`Strategy`] and [`Component`] (the registry's crates know no sandbox; this is where the two meet). Each strategy
//! call is the component's export of the same name, made in its sandbox ([`plugin_runtime::calls`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use apimachinery::plugin::{AdmissionRequest, CreateStepError, HostReads, PluginError, Validation};
use apimachinery::scheme::group_version;
use plugin_runtime::component::PluginComponent;
use plugin_runtime::runtime::Runtime;
use rest::plugin::{Component, Declared, Plugin};
use rest::Strategy;

/// The plugin of a loaded component: its strategy is the component's calls, its scheme and admission rules what the
/// component declared.
pub fn plugin(component: PluginComponent) -> Plugin {
    Plugin::of_component(Arc::new(ComponentStrategy(component)))
}

/// Compiles and loads a component (see [`PluginComponent::load`]) as a plugin.
pub fn load(runtime: Arc<Runtime>, name: &str, wasm: &[u8]) -> anyhow::Result<Plugin> {
    PluginComponent::load(runtime, name, wasm).map(plugin)
}

/// The strategy of a type a WebAssembly component defines.
pub struct ComponentStrategy(pub PluginComponent);

impl Component for ComponentStrategy {
    fn declared(&self) -> Declared {
        let c = &self.0;
        Declared {
            name: c.name().to_owned(),
            exports: c.exports,
            group: c.group.clone(),
            selectable_fields: c.selectable_fields.clone(),
            mutating_rules: c.mutating_rules.clone(),
            validating_rules: c.validating_rules.clone(),
        }
    }

    fn grant_reads(&self, reader: Arc<dyn HostReads>) {
        self.0.grant_reads(reader);
    }

    fn prewarm(&self) -> anyhow::Result<Duration> {
        self.0.prewarm()
    }

    fn idle_instance_memory(&self) -> Vec<usize> {
        self.0.idle_instance_memory()
    }

    fn evict_idle(&self, idle: Duration) {
        self.0.evict_idle(idle);
    }
}

/// Writes strategy calls that are the component's typed call of the same name with the same arguments
/// ([`plugin_runtime::calls`]), one line each.
macro_rules! same_calls {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)+) => {
        $(fn $name(&self, $($arg: $ty),*) -> $ret {
            self.0.$name($($arg),*)
        })+
    };
}

impl Strategy for ComponentStrategy {
    same_calls! {
        default(resource: &str, obj: Value) -> Result<Value, PluginError>;
        prepare_for_create(resource: &str, obj: &Value) -> Result<Value, PluginError>;
        validate(resource: &str, obj: &Value) -> Result<Validation, PluginError>;
        prepare_for_update(resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError>;
        validate_update(resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError>;
        prepare_for_status_update(resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError>;
        validate_status_update(resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError>;
        allow_create_on_update(resource: &str) -> Result<bool, PluginError>;
        allow_unconditional_update(resource: &str) -> Result<bool, PluginError>;
        validate_delete(resource: &str, obj: &Value) -> Result<(), PluginError>;
        get_attrs(resource: &str, obj: &Value) -> Result<Vec<(String, String)>, PluginError>;
        admit(request: &AdmissionRequest<'_>) -> Result<Option<Value>, PluginError>;
        validate_admission(request: &AdmissionRequest<'_>) -> Result<Vec<String>, PluginError>;
        create_in_one_call(
            resource: &str,
            obj: &Value,
            metadata: &Value,
            clear_status: bool,
            admission: Option<AdmissionRequest<'_>>
        ) -> Result<(Value, Validation), CreateStepError>;
    }

    fn convert(&self, resource: &str, obj: Value, version: &str) -> Result<Value, PluginError> {
        let target = group_version(&self.0.group.group, version);
        self.0.convert(resource, &obj, version, &target)
    }

    /// A component's columns are the same in every version.
    fn table_row(&self, resource: &str, _version: &str, obj: &Value) -> Result<Vec<Value>, PluginError> {
        self.0.table_row(resource, obj)
    }
}
