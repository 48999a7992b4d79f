//! A tenant as a `tenancy.wasm-apiserver.io/v1alpha1` Tenant object ([`crate::api`]): its
//! configuration as `spec` (admins, the limits its `tenant.yaml` sets and those in effect), its state and usage as
//! `status` (plugins served and failed, objects and bytes stored, plugin CPU used, requests in flight, and what each
//! limit refused) with two conditions: `Ready` (served or not, and why) and `ConfigurationValid` (whether its
//! `tenant.yaml` is the one in effect, and why not). A tenant directory that is not served is a Tenant in phase
//! Failed, with the reason.

use std::sync::atomic::Ordering;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::config::Limits;
use super::{Defined, Failure, Source, Tenant, Tenants, INVALID_CONFIGURATION};
use crate::api::{self, Directory};

impl Directory for Tenants {
    fn tenants(&self) -> Vec<Value> {
        let served: Vec<_> = self
            .named
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .cloned()
            .collect();
        let failed = self
            .failures
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let not_built: Vec<(String, Value)> = {
            let defined = self.defined.read().unwrap_or_else(std::sync::PoisonError::into_inner);
            defined
                .iter()
                .filter(|(name, _)| !served.iter().any(|t| t.display_name() == name.as_str()))
                .map(|(name, d)| (name.clone(), not_built(name, d, &self.root.defaults)))
                .collect()
        };
        let mut named: Vec<(String, Value)> = served
            .iter()
            .map(|t| (t.display_name().to_owned(), serving(t)))
            .chain(not_built)
            .chain(failed.iter().map(|(name, f)| (name.clone(), failing(name, f))))
            .collect();
        named.sort_by(|a, b| a.0.cmp(&b.0));
        std::iter::once(serving(&self.root))
            .chain(named.into_iter().map(|(_, obj)| obj))
            .collect()
    }

    fn tenant(&self, name: &str) -> Option<Value> {
        if name == api::DEFAULT_TENANT {
            return Some(serving(&self.root));
        }
        self.named(name)
    }

    fn named(&self, name: &str) -> Option<Value> {
        if let Some(tenant) = self.get(Some(name)) {
            return Some(serving(&tenant));
        }
        let failures = self.failures.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(failure) = failures.get(name) {
            return Some(failing(name, failure));
        }
        drop(failures);
        let defined = self.defined.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        defined.get(name).map(|d| not_built(name, d, &self.root.defaults))
    }

    fn validate_spec(&self, spec: Option<&Value>) -> Vec<apimachinery::field_error::FieldError> {
        crate::config::TenantConfig::from_spec(spec).err().unwrap_or_default()
    }

    fn deleting(&self, name: &str) {
        self.stop_api_tenant(name);
    }

    fn plugin(&self, tenant: Option<&str>, name: &str) -> Option<Value> {
        let tenant = self.get(tenant)?;
        let plugins = tenant.api.plugins.as_ref()?;
        tenant.plugin_objects.status(name, plugins)
    }
}

fn object(name: &str, since: &str, spec: Value, status: Value) -> Value {
    json!({
        "apiVersion": format!("{}/{}", api::GROUP, api::VERSION),
        "kind": api::KIND,
        "metadata": {"name": name, "creationTimestamp": since},
        "spec": spec,
        "status": status,
    })
}

fn path(tenant: Option<&str>) -> String {
    match tenant {
        None => "/".to_owned(),
        Some(name) => format!("/tenants/{name}"),
    }
}

/// A served tenant: its configuration as `spec` (as a directory's is shown; an API tenant's object keeps its own),
/// its state and usage as `status`.
pub fn serving(tenant: &Tenant) -> Value {
    let config = tenant.config();
    let mut spec = json!({
        "admins": {"users": config.admin_users, "groups": config.admin_groups},
        "limits": limits(&config.limits),
    });
    if !config.allowed_registries.is_empty() {
        spec["allowedRegistries"] = json!(config.allowed_registries);
    }
    if !config.signature_keys.is_empty() {
        spec["signatureKeys"] = json!(config.signature_keys);
    }
    let registry = &tenant.api.registry;
    let quota = &registry.quota;
    let (objects, bytes) = quota.usage();
    let budget = tenant.api.plugins.as_ref().map(|p| p.budget().clone());
    let (cpu_nanos, cpu_rejected) = budget.as_ref().map_or((0, 0), |b| {
        (
            b.cpu_used_nanos.load(Ordering::Relaxed),
            b.rejected.load(Ordering::Relaxed),
        )
    });
    let mut plugins: Vec<Value> = registry
        .apis()
        .plugins()
        .filter(|p| !p.is_builtin())
        .map(|p| {
            json!({
                "name": p.name(),
                "phase": api::PLUGIN_LOADED,
                "group": p.group.group,
                "resources": p.group.resources.iter().map(|r| r.plural.as_str()).collect::<Vec<_>>(),
            })
        })
        .collect();
    for failure in tenant.api.plugins.as_ref().map(|p| p.failures()).unwrap_or_default() {
        let name = [".wasm", ".yaml", ".yml", ".json"]
            .iter()
            .find_map(|x| failure.file.strip_suffix(x))
            .unwrap_or(&failure.file);
        plugins.push(json!({"name": name, "phase": api::PLUGIN_FAILED, "reason": failure.reason}));
    }
    plugins.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let mut status = json!({
        "phase": api::SERVING,
        "inMemory": true,
        "path": path(tenant.name.as_deref()),
        "effectiveLimits": limits(&tenant.limits()),
        "plugins": plugins,
        "objects": objects.max(0),
        "storageBytes": bytes.max(0),
        "pluginCpuSeconds": cpu_nanos as f64 / 1e9,
        "inflight": tenant.limiter.inflight(),
        "rejections": {
            "objects": quota.rejected_objects.load(Ordering::Relaxed),
            "storageBytes": quota.rejected_storage_bytes.load(Ordering::Relaxed),
            "maxInflight": tenant.limiter.rejected_inflight.load(Ordering::Relaxed),
            "requestsPerSecond": tenant.limiter.rejected_rate.load(Ordering::Relaxed),
            "pluginCpu": cpu_rejected,
        },
    });
    if tenant.source == Source::Api {
        status["observedGeneration"] = json!(tenant.observed_generation());
    }
    let (problem, config_since) = tenant.config_state();
    let in_effect = match tenant.source {
        Source::Directory => "tenant.yaml is in effect",
        Source::Api => "the spec is in effect",
    };
    let config_valid = match &problem {
        None => condition(CONFIGURATION_VALID, true, "Applied", in_effect, &config_since),
        Some(problem) => condition(
            CONFIGURATION_VALID,
            false,
            INVALID_CONFIGURATION,
            problem,
            &config_since,
        ),
    };
    let served = format!("served at {}", path(tenant.name.as_deref()));
    status["conditions"] = json!([
        condition(READY, true, api::SERVING, &served, &tenant.since),
        config_valid
    ]);
    if let Some(problem) = problem {
        status["reason"] = json!(problem);
    }
    object(tenant.display_name(), &tenant.since, spec, status)
}

/// A tenant created through the API that is not in memory on this host: served, built on its next request. Its
/// usage is what it was when it was last dropped (none before its first request).
fn not_built(name: &str, defined: &Defined, defaults: &Limits) -> Value {
    let config = &defined.config;
    let mut status = json!({
        "phase": api::SERVING,
        "path": path(Some(name)),
        "effectiveLimits": limits(&config.limits.or(defaults)),
        "inMemory": false,
        "observedGeneration": defined.generation,
    });
    if let Some((objects, bytes)) = defined.usage {
        status["objects"] = json!(objects.max(0));
        status["storageBytes"] = json!(bytes.max(0));
    }
    let served = format!("served at {}; built in memory on its next request", path(Some(name)));
    let config_valid = match &defined.problem {
        None => condition(
            CONFIGURATION_VALID,
            true,
            "Applied",
            "the spec is in effect",
            &defined.since,
        ),
        Some((problem, since)) => {
            status["reason"] = json!(problem);
            condition(CONFIGURATION_VALID, false, INVALID_CONFIGURATION, problem, since)
        }
    };
    status["conditions"] = json!([
        condition(READY, true, api::SERVING, &served, &defined.since),
        config_valid
    ]);
    object(name, &defined.since, json!({}), status)
}

/// The condition saying whether a tenant is served.
const READY: &str = "Ready";
/// The condition saying whether a tenant's `tenant.yaml` is in effect.
const CONFIGURATION_VALID: &str = "ConfigurationValid";

/// A condition as `metav1.Condition` has it.
fn condition(kind: &str, holds: bool, reason: &str, message: &str, since: &str) -> Value {
    json!({
        "type": kind,
        "status": if holds { "True" } else { "False" },
        "reason": reason,
        "message": message,
        "lastTransitionTime": since,
    })
}

/// A tenant directory that is not served.
fn failing(name: &str, failure: &Failure) -> Value {
    object(
        name,
        &failure.since,
        json!({}),
        json!({
            "phase": api::FAILED,
            "path": path(Some(name)),
            "reason": failure.reason,
            "conditions": [condition(READY, false, failure.cause, &failure.reason, &failure.since)],
        }),
    )
}

/// Limits as `tenant.yaml` spells them; unset ones are left out.
pub(crate) fn limits(l: &Limits) -> Value {
    let mut out = Map::new();
    let mut put = |key: &str, value: Option<Value>| {
        if let Some(v) = value {
            out.insert(key.to_owned(), v);
        }
    };
    put("objects", l.objects.map(|n| json!(n)));
    put("storageBytes", l.storage_bytes.map(|n| json!(n)));
    put("maxInflight", l.max_inflight.map(|n| json!(n)));
    put("requestsPerSecond", l.requests_per_second.map(|n| json!(n)));
    put("pluginMemory", l.plugin_memory.map(|n| json!(n)));
    put("pluginCallTimeout", l.plugin_call_timeout.map(|d| json!(duration(d))));
    put("pluginCpu", l.plugin_cpu.map(|n| json!(n)));
    put("plugins", l.plugins.map(|n| json!(n)));
    put("pluginBytes", l.plugin_bytes.map(|n| json!(n)));
    Value::Object(out)
}

/// A duration as `tenant.yaml` takes it: whole seconds, milliseconds, microseconds or nanoseconds.
fn duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    match nanos {
        n if n % 1_000_000_000 == 0 => format!("{}s", n / 1_000_000_000),
        n if n % 1_000_000 == 0 => format!("{}ms", n / 1_000_000),
        n if n % 1_000 == 0 => format!("{}us", n / 1_000),
        n => format!("{n}ns"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_spelled_as_in_tenant_yaml() {
        let config = crate::config::TenantConfig::parse(
            "limits: {objects: 10, storageBytes: 1Mi, maxInflight: 2, requestsPerSecond: 2.5, pluginMemory: 32Mi, pluginCallTimeout: 50ms, pluginCpu: 500m, plugins: 2, pluginBytes: 8Mi}",
        )
        .unwrap();
        assert_eq!(
            limits(&config.limits),
            json!({"objects": 10, "storageBytes": 1048576, "maxInflight": 2, "requestsPerSecond": 2.5,
                   "pluginMemory": 33554432, "pluginCallTimeout": "50ms", "pluginCpu": 0.5, "plugins": 2,
                   "pluginBytes": 8388608})
        );
        assert_eq!(limits(&Limits::default()), json!({}));
        // What is written back parses to the same limits.
        let text = format!("limits: {}", limits(&config.limits));
        assert_eq!(crate::config::TenantConfig::parse(&text).unwrap(), config);
    }

    #[test]
    fn durations() {
        assert_eq!(duration(Duration::from_secs(2)), "2s");
        assert_eq!(duration(Duration::from_millis(1500)), "1500ms");
        assert_eq!(duration(Duration::from_micros(7)), "7us");
        assert_eq!(duration(Duration::from_nanos(3)), "3ns");
    }

    #[test]
    fn a_failed_tenant_names_its_reason() {
        let failure = Failure {
            cause: INVALID_CONFIGURATION,
            reason: "tenant.yaml: unknown field `admin`".into(),
            since: "2025-01-01T00:00:00Z".into(),
        };
        let obj = failing("t8", &failure);
        assert_eq!(
            obj["metadata"],
            json!({"name": "t8", "creationTimestamp": "2025-01-01T00:00:00Z"})
        );
        assert_eq!(
            obj["status"],
            json!({"phase": "Failed", "path": "/tenants/t8", "reason": "tenant.yaml: unknown field `admin`", "conditions": [{
                "type": "Ready", "status": "False", "reason": "InvalidConfiguration",
                "message": "tenant.yaml: unknown field `admin`", "lastTransitionTime": "2025-01-01T00:00:00Z",
            }]})
        );
        assert_eq!(obj["apiVersion"], "tenancy.wasm-apiserver.io/v1alpha1");
    }
}
