//! The scheme of a served group of types, as `k8s.io/apiserver`'s `APIGroupInfo` and `metav1.APIResource` describe
//! it: its resources, their versions, schemas, subresources and table columns, and the verbs the contract's
//! interfaces it implements ([`Exports`]) serve. A plugin's come from its WIT `scheme` interface (converted in the
//! plugin runtime), a built-in type's from the host; discovery, OpenAPI and routing are built from these.

use std::sync::Arc;

use serde_json::Value;

/// Resources for a [`GroupInfo`]: each is shared, by every request that serves it, not copied.
pub fn shared(resources: Vec<ResourceInfo>) -> Vec<Arc<ResourceInfo>> {
    resources.into_iter().map(Arc::new).collect()
}

/// An API group served by one plugin.
#[derive(Clone, Debug)]
pub struct GroupInfo {
    /// The group name, such as `wardle.example.com`.
    pub group: String,
    /// The resources of the group.
    pub resources: Vec<Arc<ResourceInfo>>,
    /// The resources the plugin may read through the host imports: (group, plural).
    pub reads: Vec<(String, String)>,
}

/// A column of a resource's table (`kubectl get`).
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    /// The header, such as `Name`.
    pub name: String,
    /// The OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// The OpenAPI format, such as `name`.
    pub format: String,
    /// A description.
    pub description: String,
    /// 0: always shown; more: `-o wide` only.
    pub priority: i32,
    /// Whether its cells are RFC 3339 timestamps that a table shows as ages (`5m`), computed when the table is
    /// served: every `date` column of a CRD, and a plugin's `date` column named `Age`.
    pub shows_age: bool,
}

/// One resource type of a group.
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// The kind, such as `Flunder`.
    pub kind: String,
    /// The plural resource name, such as `flunders`.
    pub plural: String,
    /// The singular name, such as `flunder`.
    pub singular: String,
    /// Short names, such as `fl`.
    pub short_names: Vec<String>,
    /// Categories, such as `all`.
    pub categories: Vec<String>,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// The versions, most preferred first.
    pub versions: Vec<VersionInfo>,
    /// The Kubernetes verbs served, in Kubernetes' order: a subset of
    /// `create, delete, deletecollection, get, list, patch, update, watch`.
    pub verbs: Vec<&'static str>,
    /// Whether a version's schema has a `default` anywhere: found on first use ([`ResourceInfo::has_defaults`]),
    /// as the schemas do not change once the resource is built. `Default::default()` when building one.
    pub defaults: std::sync::OnceLock<bool>,
}

/// The subresources of a resource in one version, as a CRD version's `subresources` declares them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subresources {
    /// `/status` (get, update, patch): the plugin exports `status-strategy` and names the resource there.
    pub status: bool,
    /// `/scale` (get, update, patch, as autoscaling/v1 Scale): the plugin exports `scaler` and gives the paths.
    pub scale: Option<ScalePaths>,
    /// `/finalize` (update only): the object's `spec.finalizers` written, its status kept (core v1 Namespace's, as
    /// kube serves it; no plugin declares one).
    pub finalize: bool,
    /// `/token` (create only, answered with an `authentication.k8s.io/v1` TokenRequest): a ServiceAccount's
    /// tokens, as kube serves them (no plugin declares one).
    pub token: bool,
}

/// Where an object keeps its replica counts, as a CRD's `subresources.scale` (JSON paths such as `.spec.replicas`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    /// The desired replicas, under `.spec`.
    pub spec_replicas: String,
    /// The observed replicas, under `.status`.
    pub status_replicas: String,
    /// The label selector in its string form, under `.status` or `.spec`, if any.
    pub label_selector: Option<String>,
}

impl ScalePaths {
    /// What is wrong with the paths, checked as kube's CRD validation checks them: `.spec.<field>...` for the desired
    /// replicas, `.status.<field>...` for the observed ones, either for the selector; no array indices.
    pub fn problem(&self) -> Option<String> {
        let checks = [
            ("specReplicasPath", Some(&self.spec_replicas), &["spec"][..]),
            ("statusReplicasPath", Some(&self.status_replicas), &["status"][..]),
            (
                "labelSelectorPath",
                self.label_selector.as_ref(),
                &["spec", "status"][..],
            ),
        ];
        for (name, path, roots) in checks {
            let Some(path) = path else { continue };
            let fields = json_path_fields(path);
            let ok = fields.as_ref().is_some_and(|f| f.len() >= 2 && roots.contains(&f[0]));
            if !ok {
                let roots: Vec<String> = roots.iter().map(|r| format!(".{r}")).collect();
                return Some(format!(
                    "{name} {path:?} must be a JSON path under {} such as {}.replicas",
                    roots.join(" or "),
                    roots[0]
                ));
            }
        }
        None
    }
}

/// The field names of a simple JSON path (`.spec.replicas` → `["spec", "replicas"]`), or none when it is not one.
pub fn json_path_fields(path: &str) -> Option<Vec<&str>> {
    let rest = path.strip_prefix('.')?;
    let fields: Vec<&str> = rest.split('.').collect();
    let simple = |f: &&str| !f.is_empty() && !f.contains(['[', ']', '*', '@', '(', ')', ' ']);
    fields.iter().all(simple).then_some(fields)
}

/// The verbs of `/status` and `/scale`, as kube-apiserver lists them for a CRD.
pub const SUBRESOURCE_VERBS: [&str; 3] = ["get", "patch", "update"];

/// One version of a resource.
#[derive(Clone, Debug)]
pub struct VersionInfo {
    /// The version name, such as `v1alpha1`.
    pub name: String,
    /// Whether it is served.
    pub served: bool,
    /// Whether it is the storage version.
    pub storage: bool,
    /// Whether it is deprecated.
    pub deprecated: bool,
    /// The warning for a deprecated version.
    pub deprecation_warning: Option<String>,
    /// The plugin's OpenAPI v3 schema of the object (`type: object` with `spec`, `status`...), without `apiVersion`,
    /// `kind` and `metadata`. Shared: every tenant serving the plugin holds the same one.
    pub schema: std::sync::Arc<Value>,
    /// The subresources served in this version besides the objects themselves (a CRD declares them per version; a
    /// plugin per resource, for all its versions).
    pub subresources: Subresources,
    /// The table columns of this version (`kubectl get`), Name first; none for the default Name and Age. A CRD
    /// declares them per version; a plugin's `table-convertor` per resource, for all its versions.
    pub columns: Option<std::sync::Arc<[Column]>>,
}

/// Whether a schema has a `default` anywhere.
fn has_default(schema: &Value) -> bool {
    match schema {
        Value::Object(m) => m.contains_key("default") || m.values().any(has_default),
        Value::Array(a) => a.iter().any(has_default),
        _ => false,
    }
}

/// What a version that is not served has: no subresources.
static NO_SUBRESOURCES: Subresources = Subresources {
    status: false,
    scale: None,
    finalize: false,
    token: false,
};

impl ResourceInfo {
    /// Whether any version's schema has defaults (applied to every object read from storage); walked once.
    pub fn has_defaults(&self) -> bool {
        *self
            .defaults
            .get_or_init(|| self.versions.iter().any(|v| has_default(&v.schema)))
    }

    /// The storage version's name.
    pub fn storage_version(&self) -> &str {
        self.versions
            .iter()
            .find(|v| v.storage)
            .map(|v| v.name.as_str())
            .unwrap_or(self.versions[0].name.as_str())
    }

    /// A served version by name.
    pub fn served_version(&self, name: &str) -> Option<&VersionInfo> {
        self.versions.iter().find(|v| v.served && v.name == name)
    }

    /// The subresources served in a version (none for a version the resource does not have).
    pub fn subresources(&self, version: &str) -> &Subresources {
        self.versions
            .iter()
            .find(|v| v.name == version)
            .map_or(&NO_SUBRESOURCES, |v| &v.subresources)
    }

    /// Gives every version the same subresources (a plugin declares them per resource).
    pub fn set_subresources(&mut self, subresources: &Subresources) {
        for v in &mut self.versions {
            v.subresources = subresources.clone();
        }
    }

    /// The table columns of a version, when it has its own.
    pub fn columns(&self, version: &str) -> Option<&[Column]> {
        self.versions.iter().find(|v| v.name == version)?.columns.as_deref()
    }

    /// Gives every version the same table columns (a plugin declares them per resource).
    pub fn set_columns(&mut self, columns: Vec<Column>) {
        let columns: std::sync::Arc<[Column]> = columns.into();
        for v in &mut self.versions {
            v.columns = Some(columns.clone());
        }
    }

    /// Whether the resource serves a verb.
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }
}

/// A group version as `apiVersion` spells it: `<group>/<version>`, or just `<version>` for the core group.
pub fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

impl GroupInfo {
    /// The group's served versions, most preferred first: versions in the order the resources list them, without
    /// repeats. The first is the preferred version. When every resource lists its versions in Kubernetes' priority
    /// order (as a CustomResourceDefinition's are), the group's follow it too, as kube-apiserver sorts a custom
    /// resource group's versions across its resources.
    pub fn versions(&self) -> Vec<String> {
        use crate::version_priority::by_priority;
        let mut out: Vec<String> = Vec::new();
        let mut in_priority_order = true;
        for r in &self.resources {
            let served: Vec<&VersionInfo> = r.versions.iter().filter(|v| v.served).collect();
            in_priority_order &= served
                .windows(2)
                .all(|w| by_priority(&w[0].name, &w[1].name) != std::cmp::Ordering::Greater);
            for v in served {
                if !out.contains(&v.name) {
                    out.push(v.name.clone());
                }
            }
        }
        if in_priority_order {
            out.sort_by(|a, b| by_priority(a, b));
        }
        out
    }

    /// The resources served in a version.
    pub fn resources_in<'a>(
        &'a self,
        version: &'a str,
    ) -> impl Iterator<Item = (&'a ResourceInfo, &'a VersionInfo)> + 'a {
        self.resources
            .iter()
            .filter_map(move |r| r.served_version(version).map(|v| (&**r, v)))
    }
}

/// Which optional interfaces of the contract a type implements: a component's exports, or the ones a built-in type
/// behaves as exporting; they decide its verbs.
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

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(spec: &str, status: &str, selector: Option<&str>) -> ScalePaths {
        ScalePaths {
            spec_replicas: spec.into(),
            status_replicas: status.into(),
            label_selector: selector.map(Into::into),
        }
    }

    #[test]
    fn scale_paths_are_checked_as_a_crd_checks_them() {
        assert_eq!(paths(".spec.replicas", ".status.replicas", None).problem(), None);
        assert_eq!(paths(".spec.a.b", ".status.c", Some(".spec.selector")).problem(), None);
        for (spec, status, selector) in [
            ("spec.replicas", ".status.replicas", None),
            (".status.replicas", ".status.replicas", None),
            (".spec", ".status.replicas", None),
            (".spec.replicas", ".spec.replicas", None),
            (".spec.items[0]", ".status.replicas", None),
            (".spec..replicas", ".status.replicas", None),
            (".spec.replicas", ".status.replicas", Some(".metadata.labels")),
        ] {
            let problem = paths(spec, status, selector).problem();
            assert!(problem.is_some(), "{spec} {status} {selector:?} accepted");
        }
        let problem = paths(".spec.replicas", "status", None).problem().unwrap_or_default();
        assert!(problem.contains("statusReplicasPath \"status\""), "{problem}");
        assert_eq!(json_path_fields(".spec.replicas"), Some(vec!["spec", "replicas"]));
    }
}
