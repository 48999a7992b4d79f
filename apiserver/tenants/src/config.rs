//! A tenant's optional `tenant.yaml`: its admins (users and groups bound to cluster-admin inside it) and its limits.
//!
//! ```yaml
//! apiVersion: tenancy.wasm-apiserver.io/v1alpha1
//! kind: TenantConfig
//! admins:
//!   users: [alice]
//!   groups: [team-a]
//! limits:
//!   objects: 1000            # stored objects its users made (the initial namespaces and RBAC objects left out)
//!   storageBytes: 10Mi       # bytes of stored objects
//!   maxInflight: 20          # requests served at once
//!   requestsPerSecond: 50    # sustained rate (bursts up to one second's worth)
//!   pluginMemory: 32Mi       # per plugin instance
//!   pluginCallTimeout: 50ms  # per plugin call
//!   pluginCpu: 500m          # CPU seconds per second of wall time across the tenant's plugin calls
//!   plugins: 10              # plugin components (`.wasm`) served
//!   pluginBytes: 64Mi        # their size, together
//! allowedRegistries: [registry.example.com, localhost:5000]   # where its Plugin objects may be pulled from
//! ```
//!
//! A Tenant object's `spec` ([`TenantConfig::from_spec`]) is the same configuration, with `deletionPolicy`.
//!
//! Unknown fields and malformed values are refused with the field's path, so a typo is not silently ignored.

use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use apimachinery::field_error::FieldError;

/// The file name of a tenant's configuration in its directory.
pub const FILE: &str = loader::TENANT_CONFIG;

/// The API version `tenant.yaml` declares: the group of the served `Tenant` resource.
pub const API_VERSION: &str = "tenancy.wasm-apiserver.io/v1alpha1";

/// The API version `tenant.yaml` files declared before the group was the `Tenant` resource's; still read.
pub const OLD_API_VERSION: &str = "tenancy.wasm-apiserver.dev/v1alpha1";

/// A tenant's configuration, validated.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TenantConfig {
    /// Users bound to cluster-admin inside the tenant.
    pub admin_users: Vec<String>,
    /// Groups bound to cluster-admin inside the tenant.
    pub admin_groups: Vec<String>,
    /// Its limits (unset ones take the host's defaults).
    pub limits: Limits,
    /// The OCI registries (`host[:port]`) its Plugin objects may be pulled from, within the host's (empty: the
    /// host's).
    pub allowed_registries: Vec<String>,
    /// What deleting its Tenant object does to its data (a tenant directory's data is always kept).
    pub deletion_policy: DeletionPolicy,
    /// cosign public keys (PEM): with the host's, only plugins signed by one of them are served.
    pub signature_keys: Vec<String>,
}

/// What deleting a Tenant object does to the tenant's data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeletionPolicy {
    /// Its data is deleted, then the object goes (`Delete`, the default).
    #[default]
    Delete,
    /// Its data is kept (`Retain`): a Tenant of the same name created later serves it again.
    Retain,
}

impl DeletionPolicy {
    /// The spelling in `spec.deletionPolicy`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeletionPolicy::Delete => "Delete",
            DeletionPolicy::Retain => "Retain",
        }
    }
}

/// A tenant's limits; `None` leaves the host's default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Limits {
    /// How many objects it may store.
    pub objects: Option<u64>,
    /// How many bytes of objects it may store.
    pub storage_bytes: Option<u64>,
    /// How many of its requests may be served at once.
    pub max_inflight: Option<usize>,
    /// How many requests per second it may make, sustained.
    pub requests_per_second: Option<f64>,
    /// The memory of one of its plugin instances, in bytes.
    pub plugin_memory: Option<usize>,
    /// The longest one of its plugin calls may run.
    pub plugin_call_timeout: Option<Duration>,
    /// CPU seconds per second of wall time across its plugin calls.
    pub plugin_cpu: Option<f64>,
    /// How many plugin components (`.wasm`) it may serve.
    pub plugins: Option<u64>,
    /// How many bytes of plugin components it may serve, together.
    pub plugin_bytes: Option<u64>,
}

impl Limits {
    /// These limits, with `defaults` where these are unset.
    pub fn or(&self, defaults: &Limits) -> Limits {
        Limits {
            objects: self.objects.or(defaults.objects),
            storage_bytes: self.storage_bytes.or(defaults.storage_bytes),
            max_inflight: self.max_inflight.or(defaults.max_inflight),
            requests_per_second: self.requests_per_second.or(defaults.requests_per_second),
            plugin_memory: self.plugin_memory.or(defaults.plugin_memory),
            plugin_call_timeout: self.plugin_call_timeout.or(defaults.plugin_call_timeout),
            plugin_cpu: self.plugin_cpu.or(defaults.plugin_cpu),
            plugins: self.plugins.or(defaults.plugins),
            plugin_bytes: self.plugin_bytes.or(defaults.plugin_bytes),
        }
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct File {
    api_version: Option<String>,
    kind: Option<String>,
    #[serde(default)]
    admins: AdminsFile,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    allowed_registries: Vec<String>,
    #[serde(default)]
    signature_keys: Vec<String>,
}

/// A Tenant object's `spec`: `tenant.yaml` without `apiVersion` and `kind`, with `deletionPolicy`.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SpecFile {
    #[serde(default)]
    admins: AdminsFile,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    allowed_registries: Vec<String>,
    #[serde(default)]
    signature_keys: Vec<String>,
    deletion_policy: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct AdminsFile {
    #[serde(default)]
    users: Vec<String>,
    #[serde(default)]
    groups: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct LimitsFile {
    objects: Option<yaml_serde::Value>,
    storage_bytes: Option<yaml_serde::Value>,
    max_inflight: Option<yaml_serde::Value>,
    requests_per_second: Option<yaml_serde::Value>,
    plugin_memory: Option<yaml_serde::Value>,
    plugin_call_timeout: Option<yaml_serde::Value>,
    plugin_cpu: Option<yaml_serde::Value>,
    plugins: Option<yaml_serde::Value>,
    plugin_bytes: Option<yaml_serde::Value>,
}

impl TenantConfig {
    /// Parses and validates a `tenant.yaml`. An empty file is the default configuration. Every problem is named
    /// with its field path, all of them at once.
    pub fn parse(text: &str) -> Result<TenantConfig, String> {
        let file: File = if text.trim().is_empty() {
            File::default()
        } else {
            yaml_serde::from_str(text).map_err(|e| e.to_string())?
        };
        let mut problems = Vec::new();
        if let Some(v) = &file.api_version {
            if v != API_VERSION && v != OLD_API_VERSION {
                problems.push(FieldError::not_supported("apiVersion", v, &[API_VERSION]));
            }
        }
        if let Some(k) = &file.kind {
            if k != "TenantConfig" {
                problems.push(FieldError::not_supported("kind", k, &["TenantConfig"]));
            }
        }
        let config = validate(
            &mut problems,
            "",
            file.admins,
            &file.limits,
            file.allowed_registries,
            file.signature_keys,
        );
        if !problems.is_empty() {
            let rendered: Vec<String> = problems.iter().map(|p| format!("{}: {}", p.field, p.message)).collect();
            return Err(rendered.join("; "));
        }
        Ok(config)
    }

    /// Parses and validates a Tenant object's `spec` (absent: the default configuration). Every problem is a field
    /// error under `spec.`, all of them at once.
    pub fn from_spec(spec: Option<&Value>) -> Result<TenantConfig, Vec<FieldError>> {
        let spec: SpecFile = match spec {
            None | Some(Value::Null) => SpecFile::default(),
            Some(spec) => serde_json::from_value(spec.clone())
                .map_err(|e| vec![FieldError::invalid_json("spec", spec, &e.to_string())])?,
        };
        let mut problems = Vec::new();
        let mut config = validate(
            &mut problems,
            "spec.",
            spec.admins,
            &spec.limits,
            spec.allowed_registries,
            spec.signature_keys,
        );
        config.deletion_policy = match spec.deletion_policy.as_deref() {
            None | Some("Delete") => DeletionPolicy::Delete,
            Some("Retain") => DeletionPolicy::Retain,
            Some(other) => {
                problems.push(FieldError::not_supported(
                    "spec.deletionPolicy",
                    other,
                    &["Delete", "Retain"],
                ));
                DeletionPolicy::Delete
            }
        };
        if problems.is_empty() {
            Ok(config)
        } else {
            Err(problems)
        }
    }

    /// Reads a tenant directory's `tenant.yaml`; a missing file is the default configuration.
    pub fn read(dir: &std::path::Path) -> Result<TenantConfig, String> {
        let path = dir.join(FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => TenantConfig::parse(&text).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(TenantConfig::default()),
            Err(e) => Err(format!("reading {}: {e}", path.display())),
        }
    }
}

/// The admins, limits and registries of a configuration, validated; each problem is recorded with its field's path
/// after `prefix`.
fn validate(
    problems: &mut Vec<FieldError>,
    prefix: &str,
    admins: AdminsFile,
    l: &LimitsFile,
    allowed_registries: Vec<String>,
    signature_keys: Vec<String>,
) -> TenantConfig {
    for (i, pem) in signature_keys.iter().enumerate() {
        if let Err(problem) = oci::signature::PublicKey::from_pem(pem) {
            problems.push(FieldError::invalid(
                format!("{prefix}signatureKeys[{i}]"),
                "<a public key>",
                &problem,
            ));
        }
    }
    for (field, names) in [("admins.users", &admins.users), ("admins.groups", &admins.groups)] {
        for (i, name) in names.iter().enumerate() {
            if name.trim().is_empty() {
                problems.push(FieldError::required(
                    format!("{prefix}{field}[{i}]"),
                    "a name must not be empty",
                ));
            }
        }
    }
    for (i, registry) in allowed_registries.iter().enumerate() {
        if let Some(problem) = registry_problem(registry) {
            problems.push(FieldError::invalid(
                format!("{prefix}allowedRegistries[{i}]"),
                registry,
                problem,
            ));
        }
    }
    let p = &mut *problems;
    let limits = Limits {
        objects: check(p, prefix, "objects", &l.objects, whole),
        storage_bytes: check(p, prefix, "storageBytes", &l.storage_bytes, bytes),
        max_inflight: check(p, prefix, "maxInflight", &l.max_inflight, |v| match whole(v)? {
            0 => Err("must be at least 1".into()),
            n => Ok(n as usize),
        }),
        requests_per_second: check(p, prefix, "requestsPerSecond", &l.requests_per_second, positive),
        plugin_memory: check(p, prefix, "pluginMemory", &l.plugin_memory, |v| match bytes(v)? {
            n if n < 1 << 20 => Err("must be at least 1Mi".into()),
            n => Ok(n as usize),
        }),
        plugin_call_timeout: check(p, prefix, "pluginCallTimeout", &l.plugin_call_timeout, |v| {
            let s = v.as_str().ok_or("must be a duration such as 100ms or 2s")?;
            match storage::compactor::parse_duration(s)? {
                d if d.is_zero() => Err("must be more than 0".into()),
                d => Ok(d),
            }
        }),
        plugin_cpu: check(p, prefix, "pluginCpu", &l.plugin_cpu, positive),
        plugins: check(p, prefix, "plugins", &l.plugins, whole),
        plugin_bytes: check(p, prefix, "pluginBytes", &l.plugin_bytes, bytes),
    };
    TenantConfig {
        admin_users: admins.users,
        admin_groups: admins.groups,
        limits,
        allowed_registries,
        deletion_policy: DeletionPolicy::Delete,
        signature_keys,
    }
}

/// Why an entry of `allowedRegistries` is not a registry host (`host` or `host:port`), if it is not.
fn registry_problem(registry: &str) -> Option<&'static str> {
    if registry.is_empty() {
        return Some("must not be empty");
    }
    if registry.contains("://") {
        return Some("must be a host or host:port, without a scheme");
    }
    if registry.contains('/') || registry.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("must be a host or host:port, without a path or spaces");
    }
    None
}

/// One limit's value, parsed; a problem is recorded with the field's path.
fn check<T>(
    problems: &mut Vec<FieldError>,
    prefix: &str,
    name: &str,
    value: &Option<yaml_serde::Value>,
    parse: impl Fn(&yaml_serde::Value) -> Result<T, String>,
) -> Option<T> {
    let v = value.as_ref()?;
    match parse(v) {
        Ok(t) => Some(t),
        Err(e) => {
            problems.push(FieldError::invalid_rendered(
                format!("{prefix}limits.{name}"),
                render(v),
                &e,
            ));
            None
        }
    }
}

/// A number more than 0 (or a quantity such as 500m).
fn positive(v: &yaml_serde::Value) -> Result<f64, String> {
    match quantity(v)? {
        n if n > 0.0 => Ok(n),
        _ => Err("must be more than 0".into()),
    }
}

fn render(v: &yaml_serde::Value) -> String {
    match v {
        yaml_serde::Value::String(s) => format!("{s:?}"),
        other => yaml_serde::to_string(other).unwrap_or_default().trim().to_owned(),
    }
}

/// A non-negative whole number (a YAML integer, or a quantity without a fraction such as `10k`).
fn whole(v: &yaml_serde::Value) -> Result<u64, String> {
    let n = quantity(v)?;
    if n < 0.0 || n.fract() != 0.0 || n > u64::MAX as f64 {
        return Err("must be a whole number, 0 or more".into());
    }
    Ok(n as u64)
}

/// A number of bytes: an integer or a quantity (`10Mi`, `1G`).
fn bytes(v: &yaml_serde::Value) -> Result<u64, String> {
    whole(v).map_err(|_| "must be a whole number of bytes such as 1048576, 512Ki or 10Mi".into())
}

/// A number or a Kubernetes quantity string (`500m`, `1.5`, `10Ki`, `2M`, `1Gi`).
fn quantity(v: &yaml_serde::Value) -> Result<f64, String> {
    match v {
        yaml_serde::Value::Number(n) => n.as_f64().ok_or_else(|| "not a number".into()),
        yaml_serde::Value::String(s) => apimachinery::quantity::parse(s),
        _ => Err("must be a number or a quantity such as 500m or 10Mi".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_file_parses() {
        let c = TenantConfig::parse(
            "apiVersion: tenancy.wasm-apiserver.io/v1alpha1\nkind: TenantConfig\nadmins: {users: [alice], groups: [team-a]}\nlimits:\n  objects: 100\n  storageBytes: 1Mi\n  maxInflight: 4\n  requestsPerSecond: 2.5\n  pluginMemory: 32Mi\n  pluginCallTimeout: 50ms\n  pluginCpu: 500m\n  plugins: 3\n  pluginBytes: 64Mi\n",
        )
        .expect("valid");
        assert_eq!(c.admin_users, ["alice"]);
        assert_eq!(c.admin_groups, ["team-a"]);
        assert_eq!(
            c.limits,
            Limits {
                objects: Some(100),
                storage_bytes: Some(1 << 20),
                max_inflight: Some(4),
                requests_per_second: Some(2.5),
                plugin_memory: Some(32 << 20),
                plugin_call_timeout: Some(Duration::from_millis(50)),
                plugin_cpu: Some(0.5),
                plugins: Some(3),
                plugin_bytes: Some(64 << 20),
            }
        );
    }

    #[test]
    fn the_api_version_is_the_tenant_resources_and_the_old_one_is_still_read() {
        let old =
            TenantConfig::parse("apiVersion: tenancy.wasm-apiserver.dev/v1alpha1\nadmins: {users: [bob]}").unwrap();
        assert_eq!(old.admin_users, ["bob"]);
        let e = TenantConfig::parse("apiVersion: tenancy.example.com/v1").unwrap_err();
        assert_eq!(
            e,
            "apiVersion: Unsupported value: \"tenancy.example.com/v1\": supported values: \
             \"tenancy.wasm-apiserver.io/v1alpha1\""
        );
    }

    #[test]
    fn empty_and_missing_are_defaults() {
        assert_eq!(TenantConfig::parse("").unwrap(), TenantConfig::default());
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(TenantConfig::read(dir.path()).unwrap(), TenantConfig::default());
    }

    #[test]
    fn problems_name_their_fields() {
        let e =
            TenantConfig::parse("limits: {objects: -1, storageBytes: 10Qi, maxInflight: 0, pluginCallTimeout: soon}")
                .unwrap_err();
        assert!(e.contains("limits.objects: Invalid value: -1"), "{e}");
        assert!(e.contains("limits.storageBytes: Invalid value: \"10Qi\""), "{e}");
        assert!(
            e.contains("limits.maxInflight: Invalid value: 0: must be at least 1"),
            "{e}"
        );
        assert!(e.contains("limits.pluginCallTimeout: Invalid value: \"soon\""), "{e}");
        let e = TenantConfig::parse("limits: {object: 3}").unwrap_err();
        assert!(e.contains("unknown field `object`"), "{e}");
        let e = TenantConfig::parse("kind: Tenant").unwrap_err();
        assert!(e.contains("kind: Unsupported value: \"Tenant\""), "{e}");
        let e = TenantConfig::parse("admins: [alice]").unwrap_err();
        assert!(e.contains("admins"), "{e}");
    }

    #[test]
    fn a_tenant_object_s_spec_is_the_same_configuration() {
        let spec = serde_json::json!({
            "admins": {"users": ["alice"]},
            "limits": {"objects": 100, "storageBytes": "1Mi", "pluginCallTimeout": "50ms"},
            "allowedRegistries": ["registry.example.com", "localhost:5000"],
            "deletionPolicy": "Retain",
        });
        let c = TenantConfig::from_spec(Some(&spec)).unwrap();
        assert_eq!(c.admin_users, ["alice"]);
        assert_eq!(c.limits.objects, Some(100));
        assert_eq!(c.limits.storage_bytes, Some(1 << 20));
        assert_eq!(c.limits.plugin_call_timeout, Some(Duration::from_millis(50)));
        assert_eq!(c.allowed_registries, ["registry.example.com", "localhost:5000"]);
        assert_eq!(c.deletion_policy, DeletionPolicy::Retain);
        assert_eq!(TenantConfig::from_spec(None).unwrap(), TenantConfig::default());

        let bad = serde_json::json!({
            "admins": {"users": [""]},
            "limits": {"objects": -1, "maxInflight": 0},
            "allowedRegistries": ["https://r.example.com", "r.example.com/team"],
            "deletionPolicy": "Keep",
        });
        let problems = TenantConfig::from_spec(Some(&bad)).unwrap_err();
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.admins.users[0]",
                "spec.allowedRegistries[0]",
                "spec.allowedRegistries[1]",
                "spec.limits.objects",
                "spec.limits.maxInflight",
                "spec.deletionPolicy"
            ]
        );
        assert_eq!(
            problems[5].message,
            "Unsupported value: \"Keep\": supported values: \"Delete\", \"Retain\""
        );
        assert_eq!(problems[4].message, "Invalid value: 0: must be at least 1");
        let unknown = TenantConfig::from_spec(Some(&serde_json::json!({"limit": {}}))).unwrap_err();
        assert_eq!(unknown[0].field, "spec");
        assert!(unknown[0].message.contains("unknown field `limit`"), "{:?}", unknown[0]);
    }

    #[test]
    fn quantities() {
        assert_eq!(apimachinery::quantity::parse("500m").unwrap(), 0.5);
        assert_eq!(apimachinery::quantity::parse("2k").unwrap(), 2000.0);
        assert_eq!(
            apimachinery::quantity::parse("1.5Gi").unwrap(),
            1.5 * (1u64 << 30) as f64
        );
        assert!(apimachinery::quantity::parse("").is_err());
        assert!(apimachinery::quantity::parse("1x").is_err());
    }
}
