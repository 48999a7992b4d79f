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

impl Strategy for ComponentStrategy {
    fn default(&self, resource: &str, obj: Value) -> Result<Value, PluginError> {
        self.0.default(resource, obj)
    }

    fn prepare_for_create(&self, resource: &str, obj: &Value) -> Result<Value, PluginError> {
        self.0.prepare_for_create(resource, obj)
    }

    fn validate(&self, resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        self.0.validate(resource, obj)
    }

    fn prepare_for_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
        self.0.prepare_for_update(resource, obj, old)
    }

    fn validate_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
        self.0.validate_update(resource, obj, old)
    }

    fn prepare_for_status_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
        self.0.prepare_for_status_update(resource, obj, old)
    }

    fn validate_status_update(&self, resource: &str, obj: &Value, old: &Value) -> Result<Validation, PluginError> {
        self.0.validate_status_update(resource, obj, old)
    }

    fn allow_create_on_update(&self, resource: &str) -> Result<bool, PluginError> {
        self.0.allow_create_on_update(resource)
    }

    fn allow_unconditional_update(&self, resource: &str) -> Result<bool, PluginError> {
        self.0.allow_unconditional_update(resource)
    }

    fn validate_delete(&self, resource: &str, obj: &Value) -> Result<(), PluginError> {
        self.0.validate_delete(resource, obj)
    }

    fn get_attrs(&self, resource: &str, obj: &Value) -> Result<Vec<(String, String)>, PluginError> {
        self.0.get_attrs(resource, obj)
    }

    fn convert(&self, resource: &str, obj: Value, version: &str) -> Result<Value, PluginError> {
        let target = group_version(&self.0.group.group, version);
        self.0.convert(resource, &obj, version, &target)
    }

    /// A component's columns are the same in every version.
    fn table_row(&self, resource: &str, _version: &str, obj: &Value) -> Result<Vec<Value>, PluginError> {
        self.0.table_row(resource, obj)
    }

    fn admit(&self, request: &AdmissionRequest<'_>) -> Result<Option<Value>, PluginError> {
        self.0.admit(request)
    }

    fn validate_admission(&self, request: &AdmissionRequest<'_>) -> Result<Vec<String>, PluginError> {
        self.0.validate_admission(request)
    }

    fn create_in_one_call(
        &self,
        resource: &str,
        obj: &Value,
        metadata: &Value,
        clear_status: bool,
        admission: Option<AdmissionRequest<'_>>,
    ) -> Result<(Value, Validation), CreateStepError> {
        self.0
            .create_in_one_call(resource, obj, metadata, clear_status, admission)
    }
}
