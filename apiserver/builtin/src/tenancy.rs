//! `tenancy.wasm-apiserver.io/v1alpha1` Tenant: a read-only, cluster-scoped view of the tenants and their usage
//! (plugins, objects, bytes, plugin CPU, requests in flight and refused), for the host's operators and each tenant's
//! admins. RBAC decides who reads them (`cluster-admin` and `system:masters`; the `view`, `edit` and `admin` roles
//! cover plugin groups only).
//!
//! What a tenant's API shows is its [`View`]. At the root, every tenant (the default tenant, named `default`, the
//! served tenants and the tenant directories that failed to load) is a stored object, which the host keeps in line
//! with its directories (`status.source: Directory`): `get`, `list` and `watch` are the generic store's, with
//! resourceVersions, and the strategy decorates each object returned with the tenant's live configuration and usage.
//! Inside a tenant, only itself, computed on each read (`get` and `list`).

use std::sync::{Arc, OnceLock, Weak};

use serde_json::{json, Value};

use super::Computed;
use super::{age_column, column, name_column, resource, strings_schema};
use apimachinery::status::ApiError;
use plugin_runtime::contract::Exports;
use plugin_runtime::scheme::GroupInfo;
use rest::plugin::Plugin;
use rest::strategy::{creation_timestamp, Strategy};

/// The group.
pub const GROUP: &str = "tenancy.wasm-apiserver.io";
/// The version.
pub const VERSION: &str = "v1alpha1";
/// The resource.
pub const RESOURCE: &str = "tenants";
/// The kind.
pub const KIND: &str = "Tenant";
/// The name the default tenant (served at the root) is shown by.
pub const DEFAULT_TENANT: &str = "default";

/// The phase of a tenant that is served.
pub const SERVING: &str = "Serving";
/// The phase of a tenant directory that is not served (its `tenant.yaml` is invalid, or it failed to start).
pub const FAILED: &str = "Failed";

/// Where tenant objects come from: the server's tenants.
pub trait Directory: Send + Sync {
    /// Every tenant as a `Tenant` object (the default tenant first, then by name).
    fn tenants(&self) -> Vec<Value>;

    /// One tenant as a `Tenant` object, by the name it is shown by at the root (`default`: the default tenant).
    fn tenant(&self, name: &str) -> Option<Value>;

    /// A tenant directory's tenant as a `Tenant` object: what the tenant sees of itself (a directory named
    /// `default` is that tenant, not the default tenant).
    fn named(&self, name: &str) -> Option<Value>;
}

/// What one tenant's API shows of the tenants: all of them at the root, only itself inside a tenant. Bound to the
/// server's tenants once the tenant is served; until then (and after the server is gone) there are none.
#[derive(Default)]
pub struct View {
    bound: OnceLock<(Scope, Weak<dyn Directory>)>,
}

/// Which tenants a view shows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every tenant (the root's view).
    All,
    /// Only this one (a tenant's view of itself).
    Only(String),
}

impl View {
    /// Binds the view to the server's tenants, once (later calls are ignored).
    pub fn bind(&self, scope: Scope, directory: Weak<dyn Directory>) {
        let _ = self.bound.set((scope, directory));
    }

    fn directory(&self) -> Option<(&Scope, Arc<dyn Directory>)> {
        let (scope, directory) = self.bound.get()?;
        Some((scope, directory.upgrade()?))
    }

    /// Whether it is the root's view of every tenant, whose objects are stored.
    pub fn shows_all(&self) -> bool {
        matches!(self.bound.get(), Some((Scope::All, _)))
    }
}

impl Computed for View {
    /// A tenant's view of itself is computed; the root's tenants are stored.
    fn serves(&self, group: &str, resource: &str) -> bool {
        group == GROUP && resource == RESOURCE && !self.shows_all()
    }

    fn list(&self) -> Vec<Value> {
        match self.directory() {
            Some((Scope::All, d)) => d.tenants(),
            Some((Scope::Only(own), d)) => d.named(own).into_iter().collect(),
            None => Vec::new(),
        }
    }

    fn get(&self, name: &str) -> Result<Value, ApiError> {
        let found = match self.directory() {
            Some((Scope::All, d)) => d.tenant(name),
            Some((Scope::Only(own), d)) if own == name => d.named(name),
            _ => None,
        };
        found.ok_or_else(|| ApiError::not_found(GROUP, RESOURCE, name))
    }
}

/// The source of the stored tenants the host keeps in line with its tenant directories.
pub const SOURCE_DIRECTORY: &str = "Directory";

struct TenantStrategy {
    view: Arc<View>,
}

impl Strategy for TenantStrategy {
    /// At the root, where tenants are stored: their live configuration and usage are filled in on every read.
    fn decorates(&self, _resource: &str) -> bool {
        self.view.shows_all()
    }

    fn decorate(&self, _resource: &str, obj: &mut Value) {
        let Some((Scope::All, directory)) = self.view.directory() else {
            return;
        };
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(live) = directory.tenant(name) else {
            return;
        };
        let source = obj.pointer("/status/source").cloned();
        if let Some(spec) = live.get("spec") {
            obj["spec"] = spec.clone();
        }
        if let Some(status) = live.get("status") {
            obj["status"] = status.clone();
            if let Some(source) = source {
                obj["status"]["source"] = source;
            }
        }
    }

    fn table_cells(&self, _resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        let status = obj.get("status").unwrap_or(&Value::Null);
        let plugins = status
            .get("plugins")
            .and_then(Value::as_array)
            .map(|p| p.iter().filter(|p| p["phase"] == PLUGIN_LOADED).count());
        let cpu = status
            .get("pluginCpuSeconds")
            .and_then(Value::as_f64)
            .map(|s| json!(cpu_time(s)));
        let rejections = status
            .get("rejections")
            .and_then(Value::as_object)
            .map(|r| r.values().filter_map(Value::as_u64).sum::<u64>());
        vec![
            status.get("phase").cloned().unwrap_or(Value::Null),
            json!(plugins),
            status.get("objects").cloned().unwrap_or(Value::Null),
            status.get("storageBytes").cloned().unwrap_or(Value::Null),
            cpu.unwrap_or(Value::Null),
            creation_timestamp(obj),
            status.get("inflight").cloned().unwrap_or(Value::Null),
            json!(rejections),
        ]
    }
}

/// CPU seconds in a short form: `0s`, `449us`, `12.6ms`, `3.25s`.
fn cpu_time(secs: f64) -> String {
    match secs {
        s if s <= 0.0 => "0s".to_owned(),
        s if s < 1e-3 => format!("{:.0}us", s * 1e6),
        s if s < 1.0 => format!("{:.1}ms", s * 1e3),
        s => format!("{s:.2}s"),
    }
}

/// The phase of a plugin that is served.
pub const PLUGIN_LOADED: &str = "Loaded";
/// The phase of a plugin file that failed to load.
pub const PLUGIN_FAILED: &str = "Failed";

fn count_schema(description: &str) -> Value {
    json!({"type": "integer", "format": "int64", "description": description})
}

fn limits_schema(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "properties": {
            "objects": count_schema("How many objects the tenant may store."),
            "storageBytes": count_schema("How many bytes of objects the tenant may store."),
            "maxInflight": count_schema("How many of the tenant's requests may be served at once."),
            "requestsPerSecond": {"type": "number", "description": "How many requests per second the tenant may make, sustained."},
            "pluginMemory": count_schema("The memory of one plugin instance, in bytes."),
            "pluginCallTimeout": {"type": "string", "description": "The longest one plugin call may run (a duration such as 50ms)."},
            "pluginCpu": {"type": "number", "description": "CPU seconds per second of wall time across the tenant's plugin calls."},
            "plugins": count_schema("How many plugin components (.wasm) the tenant may serve."),
            "pluginBytes": count_schema("How many bytes of plugin components the tenant may serve, together.")
        }
    })
}

fn tenant_schema() -> Value {
    json!({
        "type": "object",
        "description": "Tenant is a tenant of the server (a subdirectory of the plugin directory, or the default tenant at the root) and its usage. Read-only: the server stores it from its directories and fills in the configuration and usage on every read.",
        "properties": {
            "spec": {
                "type": "object",
                "description": "The tenant's configuration, from its tenant.yaml.",
                "properties": {
                    "path": {"type": "string", "description": "The path the tenant is served under."},
                    "admins": {
                        "type": "object",
                        "description": "Users and groups bound to cluster-admin inside the tenant.",
                        "properties": {
                            "users": strings_schema("User names."),
                            "groups": strings_schema("Group names.")
                        }
                    },
                    "limits": limits_schema("The limits its tenant.yaml sets."),
                    "effectiveLimits": limits_schema("The limits in effect: its tenant.yaml's, else the host's defaults. An absent limit is unlimited.")
                }
            },
            "status": {
                "type": "object",
                "description": "The tenant's state and usage.",
                "properties": {
                    "phase": {"type": "string", "enum": [SERVING, FAILED], "description": "Serving, or Failed when the tenant directory is not served."},
                    "source": {"type": "string", "enum": [SOURCE_DIRECTORY], "description": "Where the tenant is defined: Directory (a tenant directory, or the default tenant)."},
                    "reason": {"type": "string", "description": "Why a Failed tenant is not served, or why its changed tenant.yaml was not applied."},
                    "plugins": {
                        "type": "array",
                        "description": "The tenant's plugins: those served and the files that failed to load.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "description": "The plugin's file name without .wasm."},
                                "phase": {"type": "string", "enum": [PLUGIN_LOADED, PLUGIN_FAILED], "description": "Loaded, or Failed."},
                                "group": {"type": "string", "description": "The API group it serves."},
                                "resources": strings_schema("The resources it serves."),
                                "reason": {"type": "string", "description": "Why it failed to load."}
                            }
                        }
                    },
                    "objects": count_schema("How many objects the tenant stores."),
                    "storageBytes": count_schema("How many bytes of objects the tenant stores."),
                    "pluginCpuSeconds": {"type": "number", "description": "The CPU time its plugin calls have used since it was served, in seconds."},
                    "inflight": count_schema("How many of its requests are being served now (counted while maxInflight is set)."),
                    "rejections": {
                        "type": "object",
                        "description": "How many requests or plugin calls each limit refused since the tenant was served.",
                        "properties": {
                            "objects": count_schema("Writes refused by the objects quota."),
                            "storageBytes": count_schema("Writes refused by the storageBytes quota."),
                            "maxInflight": count_schema("Requests refused by maxInflight."),
                            "requestsPerSecond": count_schema("Requests refused by requestsPerSecond."),
                            "pluginCpu": count_schema("Plugin calls refused by pluginCpu.")
                        }
                    }
                }
            }
        }
    })
}

/// The group as a built-in plugin showing `view`: tenants, read-only (`watch` at the root only).
pub fn plugin(view: Arc<View>) -> Plugin {
    let mut tenants = resource(KIND, RESOURCE, &[], false, VERSION, tenant_schema());
    tenants.verbs = vec!["get", "list", "watch"];
    let group = GroupInfo {
        group: GROUP.into(),
        resources: plugin_runtime::scheme::shared(vec![tenants]),
        reads: Vec::new(),
    };
    let exports = Exports {
        lister: true,
        table: true,
        ..Exports::default()
    };
    let col = |name, type_, description, priority| column(name, type_, "", description, priority);
    let columns = vec![
        name_column(),
        col(
            "Phase",
            "string",
            "Serving, or Failed when the tenant directory is not served.",
            0,
        ),
        col("Plugins", "integer", "How many plugins are served.", 0),
        col("Objects", "integer", "How many objects the tenant stores.", 0),
        col(
            "Storage Bytes",
            "integer",
            "How many bytes of objects the tenant stores.",
            0,
        ),
        col("Plugin CPU", "string", "The CPU time its plugin calls have used.", 0),
        age_column(),
        col(
            "In-flight",
            "integer",
            "How many of its requests are being served now.",
            1,
        ),
        col(
            "Rejections",
            "integer",
            "How many requests and plugin calls its limits refused.",
            1,
        ),
    ];
    Plugin::native(
        "builtin:tenancy",
        group,
        exports,
        vec![(RESOURCE.into(), columns)],
        Vec::new(),
        Arc::new(TenantStrategy { view }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Two;

    impl Directory for Two {
        fn tenants(&self) -> Vec<Value> {
            vec![
                json!({"metadata": {"name": "default"}}),
                json!({"metadata": {"name": "t1"}}),
            ]
        }

        fn tenant(&self, name: &str) -> Option<Value> {
            self.tenants().into_iter().find(|t| t["metadata"]["name"] == name)
        }

        fn named(&self, name: &str) -> Option<Value> {
            self.tenant(name).filter(|_| name != "default")
        }
    }

    fn names(objects: Vec<Value>) -> Vec<String> {
        objects
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn the_root_sees_every_tenant_and_a_tenant_only_itself() {
        let directory: Arc<dyn Directory> = Arc::new(Two);
        let root = View::default();
        root.bind(Scope::All, Arc::downgrade(&directory));
        assert_eq!(names(root.list()), ["default", "t1"]);
        assert_eq!(root.get("t1").unwrap()["metadata"]["name"], "t1");
        let e = root.get("t2").unwrap_err();
        assert_eq!((e.code, e.reason), (404, "NotFound"));
        assert_eq!(e.message, "tenants.tenancy.wasm-apiserver.io \"t2\" not found");

        let t1 = View::default();
        t1.bind(Scope::Only("t1".into()), Arc::downgrade(&directory));
        assert_eq!(names(t1.list()), ["t1"]);
        assert!(t1.get("t1").is_ok());
        assert_eq!(t1.get("default").unwrap_err().code, 404);

        // A tenant directory named `default` sees itself, never the default tenant.
        let named_default = View::default();
        named_default.bind(Scope::Only("default".into()), Arc::downgrade(&directory));
        assert!(named_default.list().is_empty());
        assert_eq!(named_default.get("default").unwrap_err().code, 404);

        // Unbound, or once the server's tenants are gone: none.
        let unbound = View::default();
        assert!(unbound.list().is_empty());
        drop(directory);
        assert!(root.list().is_empty());
        assert_eq!(root.get("t1").unwrap_err().code, 404);
    }

    #[test]
    fn rows_have_a_cell_per_column() {
        let p = plugin(Arc::default());
        let obj = json!({
            "metadata": {"name": "t1", "creationTimestamp": "2025-01-01T00:00:00Z"},
            "status": {
                "phase": "Serving",
                "plugins": [{"name": "wardle", "phase": "Loaded"}, {"name": "bad", "phase": "Failed"}],
                "objects": 12, "storageBytes": 3456, "pluginCpuSeconds": 0.0126, "inflight": 1,
                "rejections": {"objects": 1, "storageBytes": 0, "maxInflight": 2, "requestsPerSecond": 0, "pluginCpu": 3}
            }
        });
        let version = p.group.resources[0].storage_version();
        // The cells after the name's, which the registry puts first (rest::strategy::table_row).
        let cells = p.strategy.table_cells(RESOURCE, version, &obj);
        assert_eq!(
            cells.len() + 1,
            p.group.resources[0].columns(version).map_or(0, <[_]>::len)
        );
        assert_eq!(
            cells,
            [
                json!("Serving"),
                json!(1),
                json!(12),
                json!(3456),
                json!("12.6ms"),
                json!("2025-01-01T00:00:00Z"),
                json!(1),
                json!(6)
            ]
        );
        assert_eq!(p.group.resources[0].verbs, ["get", "list", "watch"]);
    }

    #[test]
    fn cpu_times_are_short() {
        assert_eq!(cpu_time(0.0), "0s");
        assert_eq!(cpu_time(0.000449), "449us");
        assert_eq!(cpu_time(0.0126), "12.6ms");
        assert_eq!(cpu_time(3.254), "3.25s");
    }
}
