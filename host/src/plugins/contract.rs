//! The contract as the host checks it: the exported interface names, which verbs a set of exports serves, admission
//! rules, and the conversion of a plugin's `scheme.info()` into the host's [`GroupInfo`].

use anyhow::{bail, Context as _};

use super::bindings::exports::wasm_apiserver::plugin as ex;
use super::bindings::wasm_apiserver::plugin::types as wit;
use super::scheme::{GroupInfo, ResourceInfo, VersionInfo};

/// The exported interface names, as found in a component's exports.
pub mod iface {
    /// The package prefix.
    pub const PACKAGE: &str = "wasm-apiserver:plugin";
    /// The contract's version.
    pub const VERSION: &str = "0.1.0";
    /// `scheme` (required).
    pub const SCHEME: &str = "scheme";
    /// `create-strategy`.
    pub const CREATE: &str = "create-strategy";
    /// `update-strategy`.
    pub const UPDATE: &str = "update-strategy";
    /// `delete-strategy`.
    pub const DELETE: &str = "delete-strategy";
    /// `lister`.
    pub const LISTER: &str = "lister";
    /// `table-convertor`.
    pub const TABLE: &str = "table-convertor";
    /// `converter`.
    pub const CONVERTER: &str = "converter";
    /// `defaulter`.
    pub const DEFAULTER: &str = "defaulter";
    /// `mutating-admission`.
    pub const MUTATING: &str = "mutating-admission";
    /// `validating-admission`.
    pub const VALIDATING: &str = "validating-admission";
    /// `status-strategy`.
    pub const STATUS: &str = "status-strategy";
    /// `scaler`.
    pub const SCALER: &str = "scaler";
    /// `create-pipeline`.
    pub const CREATE_PIPELINE: &str = "create-pipeline";

    /// The full export name of an interface, such as `wasm-apiserver:plugin/lister@0.1.0`.
    pub fn name(iface: &str) -> String {
        format!("{PACKAGE}/{iface}@{VERSION}")
    }
}

/// Which optional interfaces a plugin exports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Exports {
    /// `create-strategy`.
    pub create: bool,
    /// `update-strategy`.
    pub update: bool,
    /// `delete-strategy`.
    pub delete: bool,
    /// `lister`.
    pub lister: bool,
    /// `table-convertor`.
    pub table: bool,
    /// `converter`.
    pub converter: bool,
    /// `defaulter`.
    pub defaulter: bool,
    /// `mutating-admission`.
    pub mutating: bool,
    /// `validating-admission`.
    pub validating: bool,
    /// `status-strategy`.
    pub status: bool,
    /// `scaler`.
    pub scaler: bool,
    /// `create-pipeline` (with `create-strategy`): a create in one call.
    pub create_pipeline: bool,
}

impl Exports {
    /// The Kubernetes verbs these exports serve, in discovery's (alphabetical) order. `get` is always served.
    pub fn verbs(&self) -> Vec<&'static str> {
        let mut verbs = Vec::new();
        if self.create {
            verbs.push("create");
        }
        if self.delete {
            verbs.push("delete");
            if self.lister {
                verbs.push("deletecollection");
            }
        }
        verbs.push("get");
        if self.lister {
            verbs.push("list");
        }
        if self.update {
            verbs.push("patch");
        }
        if self.update {
            verbs.push("update");
        }
        if self.lister {
            verbs.push("watch");
        }
        verbs
    }
}

/// Admission rules of a plugin: which (group, resource, operation) it wants to see.
#[derive(Clone, Debug, Default)]
pub struct AdmissionRules(pub Vec<wit::AdmissionRule>);

impl AdmissionRules {
    /// Whether a request matches one of the rules. Resources match as in Kubernetes' admission rules: `flunders`
    /// and `*` match the objects only, `flunders/status`, `flunders/*`, `*/status` and `*/*` match subresources.
    pub fn matches(&self, group: &str, resource: &str, subresource: &str, op: wit::Operation) -> bool {
        self.0.iter().any(|r| {
            (r.group == "*" || r.group == group)
                && r.resources.iter().any(|x| resource_matches(x, resource, subresource))
                && r.operations.contains(&op)
        })
    }
}

/// Whether an admission rule's resource (`flunders`, `*`, `flunders/status`, `*/*`...) matches a request's.
fn resource_matches(rule: &str, resource: &str, subresource: &str) -> bool {
    let (rule_resource, rule_sub) = rule.split_once('/').unwrap_or((rule, ""));
    (rule_resource == "*" || rule_resource == resource) && (rule_sub == "*" || rule_sub == subresource)
}

/// A plugin's `scheme.info()` as the host's [`GroupInfo`], checked: a group, resources with a kind, a plural and
/// exactly one storage version, schemas that are JSON objects of `type: object`.
pub fn scheme_from_wit(info: ex::scheme::PluginInfo, exports: &Exports) -> anyhow::Result<GroupInfo> {
    if info.group.is_empty() {
        bail!("scheme.info: the group is empty");
    }
    if info.resources.is_empty() {
        bail!("scheme.info: the plugin serves no resources");
    }
    let mut resources = Vec::new();
    for r in info.resources {
        if r.plural.is_empty() || r.kind.is_empty() {
            bail!("scheme.info: a resource has an empty kind or plural");
        }
        if r.versions.is_empty() {
            bail!("scheme.info: resource {} has no versions", r.plural);
        }
        let storage = r.versions.iter().filter(|v| v.storage).count();
        if storage != 1 {
            bail!(
                "scheme.info: resource {} must have exactly one storage version, has {storage}",
                r.plural
            );
        }
        if r.versions.len() > 1 && !exports.converter {
            bail!(
                "scheme.info: resource {} has several versions but the plugin does not export converter",
                r.plural
            );
        }
        let mut versions = Vec::new();
        for v in r.versions {
            let schema: serde_json::Value = serde_json::from_str(&v.schema)
                .with_context(|| format!("scheme.info: the schema of {} {} is not JSON", r.plural, v.name))?;
            if schema.get("type").and_then(|t| t.as_str()) != Some("object") {
                bail!(
                    "scheme.info: the schema of {} {} must be of type object",
                    r.plural,
                    v.name
                );
            }
            versions.push(VersionInfo {
                name: v.name,
                served: v.served,
                storage: v.storage,
                deprecated: v.deprecated,
                deprecation_warning: v.deprecation_warning,
                schema: schema.into(),
                subresources: Default::default(),
                columns: None,
            });
        }
        resources.push(std::sync::Arc::new(ResourceInfo {
            kind: r.kind,
            singular: if r.singular.is_empty() {
                r.plural.clone()
            } else {
                r.singular
            },
            plural: r.plural,
            short_names: r.short_names,
            categories: r.categories,
            namespaced: matches!(r.scope, ex::scheme::Scope::Namespaced),
            versions,
            verbs: exports.verbs(),
            defaults: Default::default(),
        }));
    }
    let reads = info.reads.into_iter().map(|gr| (gr.group, gr.resource)).collect();
    Ok(GroupInfo {
        group: info.group,
        resources,
        reads,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_rules_match_subresources_as_kube() {
        let rules = AdmissionRules(vec![wit::AdmissionRule {
            group: "g".into(),
            resources: vec!["flunders".into(), "*/scale".into()],
            operations: vec![wit::Operation::Update],
        }]);
        assert!(rules.matches("g", "flunders", "", wit::Operation::Update));
        assert!(!rules.matches("g", "flunders", "status", wit::Operation::Update));
        assert!(rules.matches("g", "flunders", "scale", wit::Operation::Update));
        assert!(rules.matches("g", "fischers", "scale", wit::Operation::Update));
        assert!(!rules.matches("g", "fischers", "", wit::Operation::Update));
        assert!(!rules.matches("h", "flunders", "", wit::Operation::Update));
        assert!(!rules.matches("g", "flunders", "", wit::Operation::Create));
        assert!(resource_matches("*", "a", ""));
        assert!(!resource_matches("*", "a", "status"));
        assert!(resource_matches("*/*", "a", "status"));
        assert!(resource_matches("a/*", "a", "status"));
        assert!(!resource_matches("a/*", "b", "status"));
    }
}
