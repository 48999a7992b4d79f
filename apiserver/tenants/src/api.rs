//! `tenancy.wasm-apiserver.io/v1alpha1` Tenant: the tenants of the host, cluster-scoped, with their configuration
//! and usage (plugins, objects, bytes, plugin CPU, requests in flight and refused). RBAC decides who reads and
//! writes them (`cluster-admin` and `system:masters` at the root; the `view`, `edit` and `admin` roles cover plugin
//! groups only).
//!
//! What a tenant's API shows is its [`View`]. At the root, every tenant is a stored object: those created through
//! the API (`status.source: API`: create, update, patch, apply and delete, served by every host that watches them),
//! and the default tenant (named `default`) and tenant directories, which the host keeps in line with its
//! directories (`status.source: Directory`, read-only to users). `get`, `list` and `watch` are the generic store's,
//! with resourceVersions, and the strategy decorates each object returned with the tenant's live state and usage
//! on the host that answers. Inside a tenant, only itself, computed on each read (`get` and `list`).

pub mod plugins;

use std::sync::{Arc, OnceLock, Weak};

use serde_json::{json, Value};

use apimachinery::field_error::FieldError;
use apimachinery::plugin::{PluginError, Validation};
use apimachinery::scheme::Exports;
use apimachinery::scheme::GroupInfo;
use apimachinery::status::ApiError;
use builtin::Computed;
use builtin::{age_column, column, name_column, resource, strings_schema};
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

    /// The problems of a Tenant object's `spec` (`None`: absent), as field errors under `spec.`.
    fn validate_spec(&self, spec: Option<&Value>) -> Vec<FieldError>;

    /// Told that the Tenant object `name` is marked for deletion (a DELETE answered, or a read that shows it): a
    /// tenant created through the API stops being served at once, before its data goes.
    fn deleting(&self, name: &str);

    /// The live `status` of the Plugin object `name` of a tenant (`None`: the default tenant) on this host: phase,
    /// conditions, digest and what it serves; `None` when this host knows nothing of it yet.
    fn plugin(&self, tenant: Option<&str>, name: &str) -> Option<Value>;
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

    /// Whether it is bound to the server's tenants.
    fn is_bound(&self) -> bool {
        self.bound.get().is_some()
    }

    /// The tenant whose API shows it (`None`: the default tenant), and the server's tenants.
    fn own(&self) -> Option<(Option<&str>, Arc<dyn Directory>)> {
        let (scope, directory) = self.directory()?;
        let tenant = match scope {
            Scope::All => None,
            Scope::Only(name) => Some(name.as_str()),
        };
        Some((tenant, directory))
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
/// The source of the tenants created through the API.
pub const SOURCE_API: &str = "API";

/// The finalizer of a tenant created through the API: its data is deleted (or kept, with `deletionPolicy: Retain`)
/// before the object goes.
pub const FINALIZER: &str = "tenancy.wasm-apiserver.io/data";

/// The phase of a tenant created through the API that this host does not serve yet.
pub const PENDING: &str = "Pending";
/// The phase of a tenant whose object is marked for deletion: no longer served, its data being deleted.
pub const TERMINATING: &str = "Terminating";

/// Where a stored Tenant object comes from: [`SOURCE_DIRECTORY`] or [`SOURCE_API`].
pub fn source(obj: &Value) -> &str {
    obj.pointer("/status/source")
        .and_then(Value::as_str)
        .unwrap_or(SOURCE_API)
}

struct TenantStrategy {
    view: Arc<View>,
}

impl Strategy for TenantStrategy {
    fn name_rule(&self, _resource: &str) -> apimachinery::validation::NameRule {
        // A tenant's name is a path segment and a key prefix (as a namespace's); a plugin's names its metrics and
        // its compiled component.
        apimachinery::validation::NameRule::Dns1123Label
    }

    /// At the root, where tenants are stored: their live state and usage are filled in on every read; plugins'
    /// state, in every tenant.
    fn decorates(&self, resource: &str) -> bool {
        match resource {
            plugins::RESOURCE => self.view.is_bound(),
            _ => self.view.shows_all(),
        }
    }

    fn decorate(&self, resource: &str, obj: &mut Value) {
        if resource == plugins::RESOURCE {
            let Some((tenant, directory)) = self.view.own() else {
                return;
            };
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let stored = obj.get("status").cloned().unwrap_or_else(|| json!({}));
            let mut status = directory
                .plugin(tenant, name)
                .unwrap_or_else(|| json!({"phase": plugins::PENDING}));
            if let Some(resolved) = stored.get("resolved") {
                status["resolved"] = resolved.clone();
            }
            obj["status"] = status;
            return;
        }
        let Some((Scope::All, directory)) = self.view.directory() else {
            return;
        };
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let from_api = source(obj) == SOURCE_API;
        let deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
        if from_api && deleting {
            directory.deleting(&name);
        }
        let stored = obj.get("status").cloned().unwrap_or_else(|| json!({}));
        let live = directory.tenant(&name);
        // A directory's configuration is its tenant.yaml; an API tenant's is the object's own spec.
        if let (false, Some(spec)) = (from_api, live.as_ref().and_then(|l| l.get("spec"))) {
            obj["spec"] = spec.clone();
        }
        let mut status = match live.as_ref().and_then(|l| l.get("status")) {
            Some(status) => status.clone(),
            None if from_api => json!({"phase": PENDING}),
            None => stored.clone(),
        };
        if let Some(source) = stored.get("source") {
            status["source"] = source.clone();
        }
        if from_api && deleting {
            status["phase"] = json!(TERMINATING);
        }
        obj["status"] = status;
    }

    fn prepare_for_create(&self, resource: &str, obj: &Value) -> Result<Value, PluginError> {
        let mut obj = obj.clone();
        if resource == plugins::RESOURCE {
            // The status is the host's.
            obj["status"] = json!({});
            return Ok(obj);
        }
        // Users create API tenants; the host stores its directories' with their source (admission keeps users
        // from claiming it).
        let source = match obj.pointer("/status/source").and_then(Value::as_str) {
            Some(SOURCE_DIRECTORY) => SOURCE_DIRECTORY,
            _ => SOURCE_API,
        };
        obj["status"] = json!({"source": source});
        Ok(obj)
    }

    fn initial_finalizers(&self, resource: &str, obj: &Value) -> Vec<&'static str> {
        match source(obj) {
            SOURCE_API if resource == RESOURCE => vec![FINALIZER],
            _ => Vec::new(),
        }
    }

    fn prepare_for_update(&self, _resource: &str, obj: &Value, old: &Value) -> Result<Value, PluginError> {
        // The status is the host's.
        let mut obj = obj.clone();
        obj["status"] = old.get("status").cloned().unwrap_or_else(|| json!({}));
        Ok(obj)
    }

    fn validate(&self, resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        if resource == plugins::RESOURCE {
            return Ok(Validation::of_errors(plugins::validate(obj)));
        }
        if source(obj) == SOURCE_DIRECTORY {
            return Ok(Validation::valid());
        }
        let Some((_, directory)) = self.view.directory() else {
            return Ok(Validation::valid());
        };
        Ok(Validation::of_errors(directory.validate_spec(obj.get("spec"))))
    }

    fn table_cells(&self, resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        if resource == plugins::RESOURCE {
            return plugins::cells(obj);
        }
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
            status.get("inMemory").cloned().unwrap_or(Value::Null),
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
        "description": "Tenant is a tenant of the server, served under /tenants/<name>/ with its own objects, RBAC, plugins and limits: created through the API, or defined by a tenant directory (and the default tenant at the root), which are read-only here. Its state and usage are filled in on every read by the host that answers.",
        "properties": {
            "spec": {
                "type": "object",
                "description": "The tenant's configuration (a tenant directory's is its tenant.yaml).",
                "properties": {
                    "admins": {
                        "type": "object",
                        "description": "Users and groups bound to cluster-admin inside the tenant.",
                        "properties": {
                            "users": strings_schema("User names."),
                            "groups": strings_schema("Group names.")
                        }
                    },
                    "limits": limits_schema("The tenant's limits; those left out take the host's defaults."),
                    "allowedRegistries": strings_schema("The OCI registries (host or host:port) the tenant's plugins may be pulled from, within those the host allows."),
                    "signatureKeys": strings_schema("cosign public keys (PEM): with the host's, only plugins with a valid cosign signature by one of them are served."),
                    "deletionPolicy": {"type": "string", "enum": ["Delete", "Retain"], "description": "What deleting the Tenant does to its data: Delete (the default) deletes it, Retain keeps it for a Tenant of the same name."}
                }
            },
            "status": {
                "type": "object",
                "description": "The tenant's state and usage, on the host that answers.",
                "properties": {
                    "phase": {"type": "string", "enum": [PENDING, SERVING, FAILED, TERMINATING], "description": "Pending (not served yet), Serving, Failed (not served: see reason), or Terminating (deleted, its data going)."},
                    "source": {"type": "string", "enum": [SOURCE_API, SOURCE_DIRECTORY], "description": "Where the tenant is defined: API (a Tenant object), or Directory (a tenant directory, or the default tenant)."},
                    "path": {"type": "string", "description": "The path the tenant is served under."},
                    "effectiveLimits": limits_schema("The limits in effect: the tenant's, else the host's defaults. An absent limit is unlimited."),
                    "observedGeneration": count_schema("The generation of the Tenant object this host serves."),
                    "reason": {"type": "string", "description": "Why a Failed tenant is not served, or why its changed configuration was not applied."},
                    "conditions": {
                        "type": "array",
                        "description": "Ready (served or not, and why) and ConfigurationValid (whether its configuration is the one in effect).",
                        "items": plugins::condition_schema()
                    },
                    "plugins": {
                        "type": "array",
                        "description": "The tenant's plugins: those served and those that failed to load.",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string", "description": "The plugin's name (a file's name without .wasm)."},
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

/// The group as a built-in plugin showing `view`: tenants, read-only (a tenant's view of itself). At the root,
/// where tenants are stored, [`root_plugin`] serves them.
pub fn plugin(view: Arc<View>) -> Plugin {
    static TENANT: builtin::Shared = OnceLock::new();
    builtin::share(build(view, vec!["get", "list"]), &TENANT)
}

/// The group at the root: the stored tenants, created, changed and deleted through the API.
pub fn root_plugin(view: Arc<View>) -> Plugin {
    static ROOT: builtin::Shared = OnceLock::new();
    builtin::share(build(view, Vec::new()), &ROOT)
}

/// The group with `tenant_verbs` for tenants (empty: every verb) and every verb for plugins.
fn build(view: Arc<View>, tenant_verbs: Vec<&'static str>) -> Plugin {
    let exports = Exports {
        table: true,
        ..builtin::writable()
    };
    let mut tenants = resource(KIND, RESOURCE, &[], false, VERSION, tenant_schema());
    tenants.verbs = tenant_verbs;
    let plugin_objects = resource(plugins::KIND, plugins::RESOURCE, &[], false, VERSION, plugins::schema());
    let group = GroupInfo {
        group: GROUP.into(),
        resources: apimachinery::scheme::shared(vec![tenants, plugin_objects]),
        reads: Vec::new(),
    };
    let col = |name, type_, description, priority| column(name, type_, "", description, priority);
    let columns = vec![
        name_column(),
        col(
            "Phase",
            "string",
            "Pending, Serving, Failed (not served) or Terminating.",
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
        col(
            "In Memory",
            "boolean",
            "Whether the answering host holds the tenant built now (else it is built on its next request).",
            1,
        ),
    ];
    Plugin::native(
        "builtin:tenancy",
        group,
        exports,
        vec![
            (RESOURCE.into(), columns),
            (plugins::RESOURCE.into(), plugins::columns()),
        ],
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

        fn validate_spec(&self, spec: Option<&Value>) -> Vec<FieldError> {
            match spec.and_then(|s| s.get("limits")) {
                Some(Value::String(_)) => vec![FieldError::invalid("spec.limits", "x", "must be an object")],
                _ => Vec::new(),
            }
        }

        fn deleting(&self, _name: &str) {}

        fn plugin(&self, _tenant: Option<&str>, _name: &str) -> Option<Value> {
            None
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
                "objects": 12, "storageBytes": 3456, "pluginCpuSeconds": 0.0126, "inflight": 1, "inMemory": true,
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
                json!(6),
                json!(true)
            ]
        );
        assert_eq!(p.group.resources[0].verbs, ["get", "list"]);
        let root = root_plugin(Arc::default());
        assert_eq!(
            root.group.resources[0].verbs,
            [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch"
            ]
        );
    }

    #[test]
    fn tenants_created_through_the_api_are_finalized_and_their_status_is_the_host_s() {
        let directory: Arc<dyn Directory> = Arc::new(Two);
        let view = Arc::new(View::default());
        view.bind(Scope::All, Arc::downgrade(&directory));
        let p = root_plugin(view);
        let s = &p.strategy;
        let created = s
            .prepare_for_create(
                RESOURCE,
                &json!({"metadata": {"name": "t2", "finalizers": ["x"]}, "status": {"phase": "Serving", "source": "API"}}),
            )
            .unwrap();
        assert_eq!(created["status"], json!({"source": "API"}));
        assert_eq!(s.initial_finalizers(RESOURCE, &created), [FINALIZER]);
        // The host's own directory tenants keep their source, and no finalizer.
        let mirrored = s
            .prepare_for_create(
                RESOURCE,
                &json!({"metadata": {"name": "t1"}, "status": {"source": "Directory"}}),
            )
            .unwrap();
        assert_eq!(mirrored["status"], json!({"source": "Directory"}));
        assert!(s.initial_finalizers(RESOURCE, &mirrored).is_empty());
        let updated = s
            .prepare_for_update(
                RESOURCE,
                &json!({"metadata": {"name": "t2"}, "spec": {}, "status": {"source": "Directory"}}),
                &created,
            )
            .unwrap();
        assert_eq!(updated["status"], json!({"source": "API"}));
        let invalid = s
            .validate(RESOURCE, &json!({"metadata": {"name": "t2"}, "spec": {"limits": "x"}}))
            .unwrap();
        assert_eq!(invalid.errors.len(), 1);
        assert_eq!(invalid.errors[0].field, "spec.limits");
        // Read back, a tenant this host does not serve yet is Pending; one marked for deletion, Terminating.
        let mut pending = json!({"metadata": {"name": "t2"}, "spec": {"admins": {}}, "status": {"source": "API"}});
        s.decorate(RESOURCE, &mut pending);
        assert_eq!(pending["status"], json!({"phase": "Pending", "source": "API"}));
        assert_eq!(pending["spec"], json!({"admins": {}}));
        let mut deleting = json!({"metadata": {"name": "t1", "deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"source": "API"}});
        s.decorate(RESOURCE, &mut deleting);
        assert_eq!(deleting["status"]["phase"], "Terminating");
        assert_eq!(deleting["status"]["source"], "API");
    }

    #[test]
    fn cpu_times_are_short() {
        assert_eq!(cpu_time(0.0), "0s");
        assert_eq!(cpu_time(0.000449), "449us");
        assert_eq!(cpu_time(0.0126), "12.6ms");
        assert_eq!(cpu_time(3.254), "3.25s");
    }
}
