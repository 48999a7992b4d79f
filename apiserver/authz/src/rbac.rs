//! RBAC (kube's `plugin/pkg/auth/authorizer/rbac`): Roles, ClusterRoles and their bindings, read from storage into
//! an in-memory index that a background task keeps current (as kube's informers do), and the rule semantics
//! (verbs, apiGroups, resources with subresources, resourceNames, nonResourceURLs, `*`).
//!
//! The default `admin`, `edit` and `view` ClusterRoles aggregate the ClusterRoles labelled
//! `rbac.authorization.k8s.io/aggregate-to-<role>: "true"` (kube's aggregation controller), and also cover every
//! group a plugin serves, as kube's do for the built-in types: a plugin's types need no ClusterRole of their own to be
//! usable by a namespace's admins, editors and viewers.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::Value;

use super::{Attributes, Authorizer, Decision};
use apimachinery::labels::LabelSelector;
use authn::UserInfo;
use builtin::owned_strings as strings;
use registry::Registry;
use storage::{ListOptions, Storage, WatchEvent};

/// The storage prefix of every RBAC object.
pub const PREFIX: &str = "/registry/rbac.authorization.k8s.io/";

/// One policy rule. The strings are kept as given; `*` matches anything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    /// Verbs.
    pub verbs: Vec<String>,
    /// API groups (`""` is the core group).
    pub api_groups: Vec<String>,
    /// Resources, `resource/subresource`, `*/subresource` or `*`.
    pub resources: Vec<String>,
    /// Object names; empty means any.
    pub resource_names: Vec<String>,
    /// Non-resource URLs, exact or ending in `*`.
    pub non_resource_urls: Vec<String>,
    /// Whether the rule also covers every group a plugin serves (the default admin/edit/view roles' rules for
    /// plugin types).
    pub plugin_groups: bool,
}

fn has(list: &[String], want: &str) -> bool {
    list.iter().any(|x| x == "*" || x == want)
}

impl Rule {
    /// A rule from its JSON (`PolicyRule`).
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
            plugin_groups: false,
        }
    }

    /// The rule as JSON (`PolicyRule`), as SelfSubjectRulesReview shows it.
    pub fn to_json(&self, plugin_groups: &[String]) -> Value {
        let mut out = serde_json::Map::new();
        out.insert("verbs".into(), self.verbs.clone().into());
        if !self.non_resource_urls.is_empty() {
            out.insert("nonResourceURLs".into(), self.non_resource_urls.clone().into());
            return out.into();
        }
        let mut groups = self.api_groups.clone();
        if self.plugin_groups {
            groups.extend(plugin_groups.iter().cloned());
        }
        out.insert("apiGroups".into(), groups.into());
        out.insert("resources".into(), self.resources.clone().into());
        if !self.resource_names.is_empty() {
            out.insert("resourceNames".into(), self.resource_names.clone().into());
        }
        out.into()
    }

    fn group_matches(&self, group: &str, is_plugin_group: &dyn Fn(&str) -> bool) -> bool {
        has(&self.api_groups, group) || (self.plugin_groups && is_plugin_group(group))
    }

    /// kube's `ResourceMatches`: `resource`, `resource/subresource`, `*/subresource` or `*`.
    fn resource_matches(&self, resource: &str, subresource: &str) -> bool {
        let combined;
        let requested = if subresource.is_empty() {
            resource
        } else {
            combined = format!("{resource}/{subresource}");
            &combined
        };
        self.resources.iter().any(|r| {
            r == "*" || r == requested || (!subresource.is_empty() && r.strip_prefix("*/") == Some(subresource))
        })
    }

    /// kube's `NonResourceURLMatches`.
    fn url_matches(&self, path: &str) -> bool {
        self.non_resource_urls
            .iter()
            .any(|u| u == "*" || u == path || u.strip_suffix('*').is_some_and(|prefix| path.starts_with(prefix)))
    }

    /// kube's `RuleAllows`.
    pub fn allows(&self, a: &Attributes, is_plugin_group: &dyn Fn(&str) -> bool) -> bool {
        if !has(&self.verbs, &a.verb) {
            return false;
        }
        if !a.resource_request {
            return self.url_matches(&a.path);
        }
        self.group_matches(&a.api_group, is_plugin_group)
            && self.resource_matches(&a.resource, &a.subresource)
            && (self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == &a.name))
    }
}

/// A subject of a binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    pub kind: String,
    /// Its name.
    pub name: String,
    /// A service account's namespace.
    pub namespace: String,
}

impl Subject {
    /// Whether the subject is the user (kube's `appliesToUser`).
    pub fn applies_to(&self, user: &UserInfo, binding_namespace: &str) -> bool {
        match self.kind.as_str() {
            "User" => user.name == self.name,
            "Group" => user.in_group(&self.name),
            "ServiceAccount" => {
                let ns = if self.namespace.is_empty() {
                    binding_namespace
                } else {
                    &self.namespace
                };
                user.name == format!("system:serviceaccount:{ns}:{}", self.name)
            }
            _ => false,
        }
    }

    fn describe(&self) -> String {
        match self.kind.as_str() {
            "ServiceAccount" => format!("ServiceAccount \"{}/{}\"", self.namespace, self.name),
            kind => format!("{kind} \"{}\"", self.name),
        }
    }
}

/// A RoleBinding or ClusterRoleBinding.
#[derive(Clone, Debug)]
struct Binding {
    name: String,
    namespace: String,
    role_kind: String,
    role_name: String,
    subjects: Vec<Subject>,
}

impl Binding {
    fn from_json(v: &Value) -> Binding {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or("").to_owned();
        Binding {
            name: s("/metadata/name"),
            namespace: s("/metadata/namespace"),
            role_kind: s("/roleRef/kind"),
            role_name: s("/roleRef/name"),
            subjects: v
                .get("subjects")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|x| Subject {
                    kind: x.get("kind").and_then(Value::as_str).unwrap_or("").to_owned(),
                    name: x.get("name").and_then(Value::as_str).unwrap_or("").to_owned(),
                    namespace: x.get("namespace").and_then(Value::as_str).unwrap_or("").to_owned(),
                })
                .collect(),
        }
    }

    fn describe(&self) -> String {
        if self.namespace.is_empty() {
            format!(
                "ClusterRoleBinding \"{}\" of {} \"{}\"",
                self.name, self.role_kind, self.role_name
            )
        } else {
            format!(
                "RoleBinding \"{}/{}\" of {} \"{}\"",
                self.namespace, self.name, self.role_kind, self.role_name
            )
        }
    }
}

/// The RBAC objects, parsed: what the authorizer reads.
#[derive(Default, Debug)]
pub struct Index {
    cluster_roles: HashMap<String, Arc<Vec<Rule>>>,
    /// Roles by namespace, then name.
    roles: HashMap<String, HashMap<String, Arc<Vec<Rule>>>>,
    cluster_bindings: Vec<Binding>,
    bindings: HashMap<String, Vec<Binding>>,
}

/// The default roles whose rules also cover plugin groups, with the verbs they get there.
pub const PLUGIN_ROLES: [(&str, &[&str]); 3] = [
    (
        "admin",
        &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
    ),
    (
        "edit",
        &[
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
    ),
    ("view", &["get", "list", "watch"]),
];

/// Whether `rule` is the plugin-group rule [`PLUGIN_ROLES`] gives the role `name` itself (not one aggregated from
/// another role).
fn own_plugin_rule(name: &str, rule: &Rule) -> bool {
    PLUGIN_ROLES
        .iter()
        .any(|(role, verbs)| *role == name && rule.verbs.iter().map(String::as_str).eq(verbs.iter().copied()))
}

impl Index {
    /// Builds the index from the stored objects (by storage key), resolving aggregated ClusterRoles.
    pub fn build(objects: &BTreeMap<String, Value>) -> Index {
        let mut index = Index::default();
        let mut aggregated: Vec<(String, Vec<LabelSelector>)> = Vec::new();
        let mut cluster_role_objects: Vec<&Value> = Vec::new();
        for (key, obj) in objects {
            let rest = key.strip_prefix(PREFIX).unwrap_or("");
            let resource = rest.split('/').next().unwrap_or("");
            let name = obj
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let rules = || {
                obj.get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(Rule::from_json)
                    .collect::<Vec<_>>()
            };
            match resource {
                "clusterroles" => {
                    let mut rules = rules();
                    if let Some((_, verbs)) = PLUGIN_ROLES.iter().find(|(n, _)| *n == name) {
                        rules.push(Rule {
                            verbs: verbs.iter().map(|v| v.to_string()).collect(),
                            resources: vec!["*".into()],
                            plugin_groups: true,
                            ..Rule::default()
                        });
                    }
                    if let Some(selectors) = obj
                        .pointer("/aggregationRule/clusterRoleSelectors")
                        .and_then(Value::as_array)
                    {
                        let selectors = selectors
                            .iter()
                            .filter_map(|s| LabelSelector::from_json(s).ok())
                            .collect();
                        aggregated.push((name.clone(), selectors));
                    }
                    cluster_role_objects.push(obj);
                    index.cluster_roles.insert(name, Arc::new(rules));
                }
                "roles" => {
                    let ns = obj
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    index.roles.entry(ns).or_default().insert(name, Arc::new(rules()));
                }
                "clusterrolebindings" => index.cluster_bindings.push(Binding::from_json(obj)),
                "rolebindings" => {
                    let b = Binding::from_json(obj);
                    index.bindings.entry(b.namespace.clone()).or_default().push(b);
                }
                _ => {}
            }
        }
        // Aggregation: a role with an aggregationRule has the rules of every ClusterRole its selectors match,
        // aggregated ones included (admin aggregates edit, which aggregates view): repeated until nothing changes.
        for _ in 0..8 {
            let before: usize = index.cluster_roles.values().map(|r| r.len()).sum();
            index.aggregate(&aggregated, &cluster_role_objects);
            if index.cluster_roles.values().map(|r| r.len()).sum::<usize>() == before {
                break;
            }
        }
        index
    }

    fn aggregate(&mut self, aggregated: &[(String, Vec<LabelSelector>)], cluster_role_objects: &[&Value]) {
        let index = self;
        for (name, selectors) in aggregated {
            let name = name.clone();
            // From the sources alone (as kube's controller): rules written into the role earlier do not count, so a
            // rule removed from a source leaves it. Only the plugin-group rules of admin, edit and view are its own.
            let mut rules: Vec<Rule> = index
                .cluster_roles
                .get(&name)
                .into_iter()
                .flat_map(|r| r.iter())
                .filter(|r| r.plugin_groups && own_plugin_rule(&name, r))
                .cloned()
                .collect();
            for obj in cluster_role_objects {
                let other = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
                let empty = serde_json::Map::new();
                let labels = obj
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty);
                if other == name || !selectors.iter().any(|s| s.matches(labels)) {
                    continue;
                }
                for rule in index.cluster_roles.get(other).into_iter().flat_map(|r| r.iter()) {
                    if !rules.contains(rule) {
                        rules.push(rule.clone());
                    }
                }
            }
            index.cluster_roles.insert(name, Arc::new(rules));
        }
    }

    fn role_rules(&self, b: &Binding) -> Option<&Arc<Vec<Rule>>> {
        match b.role_kind.as_str() {
            "ClusterRole" => self.cluster_roles.get(&b.role_name),
            "Role" => self.roles.get(&b.namespace).and_then(|r| r.get(&b.role_name)),
            _ => None,
        }
    }

    /// The bindings that apply to a request in `namespace` ("" for cluster-wide): the ClusterRoleBindings, then
    /// the namespace's RoleBindings.
    fn applicable<'a>(&'a self, namespace: &str) -> impl Iterator<Item = &'a Binding> + 'a {
        let ns = if namespace.is_empty() {
            None
        } else {
            self.bindings.get(namespace)
        };
        self.cluster_bindings.iter().chain(ns.into_iter().flatten())
    }

    /// The decision for a request (kube's `RBACAuthorizer.Authorize`): allowed with the binding that allows it,
    /// or no opinion.
    pub fn authorize(&self, a: &Attributes, is_plugin_group: &dyn Fn(&str) -> bool) -> Decision {
        for b in self.applicable(&a.namespace) {
            let Some(subject) = b.subjects.iter().find(|s| s.applies_to(&a.user, &b.namespace)) else {
                continue;
            };
            let Some(rules) = self.role_rules(b) else {
                continue;
            };
            if rules.iter().any(|r| r.allows(a, is_plugin_group)) {
                return Decision::Allow(format!("RBAC: allowed by {} to {}", b.describe(), subject.describe()));
            }
        }
        Decision::NoOpinion(String::new())
    }

    /// Every rule that applies to the user in `namespace` ("" for cluster-wide rules only), as kube's
    /// `RulesFor`.
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<Rule> {
        let mut out: Vec<Rule> = Vec::new();
        for b in self.applicable(namespace) {
            if !b.subjects.iter().any(|s| s.applies_to(user, &b.namespace)) {
                continue;
            }
            for rule in self.role_rules(b).into_iter().flat_map(|r| r.iter()) {
                if !out.contains(rule) {
                    out.push(rule.clone());
                }
            }
        }
        out
    }

    /// The rules of a role a binding refers to, for the escalation check: `None` when it does not exist.
    pub fn role(&self, kind: &str, namespace: &str, name: &str) -> Option<Vec<Rule>> {
        match kind {
            "ClusterRole" => self.cluster_roles.get(name).map(|r| r.to_vec()),
            "Role" => self.roles.get(namespace).and_then(|r| r.get(name)).map(|r| r.to_vec()),
            _ => None,
        }
    }
}

/// Whether `owner`'s rules cover every permission `servant` grants (kube's `validation.Covers`): each verb, group,
/// resource and name (or URL) of each servant rule is allowed by some owner rule, `*` covered only by `*`.
pub fn covers(owner: &[Rule], servant: &[Rule], plugin_groups: &[String]) -> Result<(), Vec<Rule>> {
    let mut missing = Vec::new();
    let is_plugin = |g: &str| plugin_groups.iter().any(|p| p == g);
    for rule in servant {
        let mut groups = rule.api_groups.clone();
        if rule.plugin_groups {
            groups.extend(plugin_groups.iter().cloned());
        }
        for verb in &rule.verbs {
            if !rule.non_resource_urls.is_empty() {
                for url in &rule.non_resource_urls {
                    let covered = owner.iter().any(|o| {
                        has(&o.verbs, verb)
                            && o.non_resource_urls.iter().any(|u| {
                                u == "*" || u == url || u.strip_suffix('*').is_some_and(|p| url.starts_with(p))
                            })
                    });
                    if !covered {
                        missing.push(Rule {
                            verbs: vec![verb.clone()],
                            non_resource_urls: vec![url.clone()],
                            ..Rule::default()
                        });
                    }
                }
                continue;
            }
            for group in &groups {
                for resource in &rule.resources {
                    let names: Vec<&str> = if rule.resource_names.is_empty() {
                        vec![""]
                    } else {
                        rule.resource_names.iter().map(String::as_str).collect()
                    };
                    for name in names {
                        let covered = owner.iter().any(|o| {
                            has(&o.verbs, verb)
                                && (has(&o.api_groups, group) || (o.plugin_groups && is_plugin(group)))
                                && (has(&o.resources, resource)
                                    || resource.split_once('/').is_some_and(|(_, sub)| {
                                        o.resources.iter().any(|r| r.strip_prefix("*/") == Some(sub))
                                    }))
                                && (o.resource_names.is_empty()
                                    || (!name.is_empty() && o.resource_names.iter().any(|n| n == name)))
                        });
                        if !covered {
                            missing.push(Rule {
                                verbs: vec![verb.clone()],
                                api_groups: vec![group.clone()],
                                resources: vec![resource.clone()],
                                resource_names: if name.is_empty() { vec![] } else { vec![name.to_owned()] },
                                ..Rule::default()
                            });
                        }
                    }
                }
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing)
    }
}

/// The RBAC authorizer: an index kept current from storage.
pub struct Rbac {
    index: RwLock<Arc<Index>>,
    registry: Arc<Registry>,
}

impl Rbac {
    /// An authorizer over the registry's storage. Call [`Rbac::start`] to load and follow the objects.
    pub fn new(registry: Arc<Registry>) -> Arc<Rbac> {
        Arc::new(Rbac {
            index: RwLock::new(Arc::new(Index::default())),
            registry,
        })
    }

    /// The current index.
    pub fn index(&self) -> Arc<Index> {
        self.index.read().map(|i| i.clone()).unwrap_or_default()
    }

    /// The groups plugins serve (not the built-in ones).
    pub fn plugin_groups(&self) -> Vec<String> {
        self.registry
            .apis()
            .plugins()
            .filter(|p| !p.is_builtin())
            .map(|p| p.group.group.clone())
            .collect()
    }

    fn is_plugin_group(&self, group: &str) -> bool {
        self.registry.apis().group(group).is_some_and(|p| !p.is_builtin())
    }

    /// Loads the RBAC objects, then follows their changes in the background: relists after a watch failure.
    /// Returns once the first load is done (or failed: the task keeps trying).
    pub async fn start(self: &Arc<Self>) {
        let (loaded_tx, loaded_rx) = tokio::sync::oneshot::channel();
        let this = self.clone();
        tokio::spawn(async move {
            let registry = this.registry.clone();
            let mut loaded = Some(loaded_tx);
            // Until the registry is closed (its tenant no longer served).
            registry
                .until_closed(async {
                    loop {
                        if let Err(e) = this.follow(&mut loaded).await {
                            tracing::warn!(error = %e, "RBAC: reading roles and bindings failed; retrying");
                        }
                        if let Some(tx) = loaded.take() {
                            let _ = tx.send(());
                        }
                        tokio::time::sleep(Duration::from_secs(1)).await;
                    }
                })
                .await;
        });
        let _ = loaded_rx.await;
    }

    async fn follow(&self, loaded: &mut Option<tokio::sync::oneshot::Sender<()>>) -> anyhow::Result<()> {
        let storage: &Arc<dyn Storage> = &self.registry.storage;
        let list = storage.list(PREFIX, ListOptions::default()).await?;
        // The objects and their revisions, by key.
        let mut objects: BTreeMap<String, (Value, i64)> = BTreeMap::new();
        for kv in list.items {
            if let Ok(v) = serde_json::from_slice::<Value>(&kv.value) {
                objects.insert(kv.key, (v, kv.mod_revision));
            }
        }
        self.publish(&objects).await;
        if let Some(tx) = loaded.take() {
            let _ = tx.send(());
        }
        let mut watch = storage.watch(PREFIX, list.revision).await?;
        while let Some(event) = watch.recv().await {
            // Whether an object changed (a progress notification changes nothing: no rebuild).
            let mut changed = false;
            let mut apply = |event: WatchEvent| match event {
                WatchEvent::Put { kv, .. } => {
                    if let Ok(v) = serde_json::from_slice::<Value>(&kv.value) {
                        objects.insert(kv.key, (v, kv.mod_revision));
                        changed = true;
                    }
                }
                WatchEvent::Delete { prev, .. } => {
                    objects.remove(&prev.key);
                    changed = true;
                }
                WatchEvent::Progress { .. } => {}
            };
            apply(event?);
            // Take every event already queued before rebuilding the index once.
            while let Ok(event) = watch.try_recv() {
                apply(event?);
            }
            if changed {
                self.publish(&objects).await;
            }
        }
        anyhow::bail!("the watch ended")
    }

    /// Rebuilds the index from the objects, then writes the rules of aggregated ClusterRoles into them where they
    /// changed (kube's ClusterRole aggregation controller), so `kubectl get clusterrole edit -o yaml` shows them.
    /// The rules admin, edit and view have for plugin groups are not written: they follow the plugins served.
    async fn publish(&self, objects: &BTreeMap<String, (Value, i64)>) {
        let values: BTreeMap<String, Value> = objects.iter().map(|(k, (v, _))| (k.clone(), v.clone())).collect();
        let index = Arc::new(Index::build(&values));
        if let Ok(mut slot) = self.index.write() {
            *slot = index.clone();
        }
        for (key, (obj, revision)) in objects {
            if !key.starts_with(&format!("{PREFIX}clusterroles/"))
                || obj.get("aggregationRule").is_none_or(Value::is_null)
            {
                continue;
            }
            let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
            let Some(rules) = index.cluster_roles.get(name) else {
                continue;
            };
            let rules: Vec<Value> = rules
                .iter()
                .filter(|r| !r.plugin_groups)
                .map(|r| r.to_json(&[]))
                .collect();
            if obj
                .get("rules")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or(&[])
                == rules.as_slice()
            {
                continue;
            }
            let mut updated = obj.clone();
            updated["rules"] = Value::Array(rules);
            // A conflict (another host writing the same) is settled by the event that follows.
            if let Err(e) = self
                .registry
                .storage
                .update(key, updated.to_string().into_bytes(), *revision)
                .await
            {
                tracing::debug!(role = name, error = %e, "writing an aggregated ClusterRole's rules");
            }
        }
    }

    /// The rules that apply to a user in a namespace (cluster-wide ones included).
    pub fn rules_for(&self, user: &UserInfo, namespace: &str) -> Vec<Rule> {
        self.index().rules_for(user, namespace)
    }
}

impl Authorizer for Rbac {
    fn authorize(&self, attributes: &Attributes) -> Decision {
        self.index().authorize(attributes, &|g: &str| self.is_plugin_group(g))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn objects(list: &[(&str, Value)]) -> BTreeMap<String, Value> {
        list.iter().map(|(k, v)| (format!("{PREFIX}{k}"), v.clone())).collect()
    }

    fn attrs(user: &str, verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        Attributes {
            user: UserInfo::new(user, ["system:authenticated"]),
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            namespace: ns.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }

    fn allowed(index: &Index, a: &Attributes) -> bool {
        matches!(index.authorize(a, &|g| g == "wardle.example.com"), Decision::Allow(_))
    }

    #[test]
    fn role_bindings_grant_only_in_their_namespace() {
        let index = Index::build(&objects(&[
            (
                "roles/a/reader",
                json!({"metadata": {"name": "reader", "namespace": "a"},
                    "rules": [{"verbs": ["get", "list"], "apiGroups": ["wardle.example.com"], "resources": ["flunders"]}]}),
            ),
            (
                "rolebindings/a/bob-reads",
                json!({"metadata": {"name": "bob-reads", "namespace": "a"},
                    "roleRef": {"kind": "Role", "name": "reader"},
                    "subjects": [{"kind": "User", "name": "bob"}]}),
            ),
        ]));
        assert!(allowed(
            &index,
            &attrs("bob", "list", "wardle.example.com", "flunders", "a", "")
        ));
        assert!(!allowed(
            &index,
            &attrs("bob", "list", "wardle.example.com", "flunders", "b", "")
        ));
        assert!(!allowed(
            &index,
            &attrs("bob", "list", "wardle.example.com", "flunders", "", "")
        ));
        assert!(!allowed(
            &index,
            &attrs("bob", "delete", "wardle.example.com", "flunders", "a", "x")
        ));
        assert!(!allowed(
            &index,
            &attrs("eve", "list", "wardle.example.com", "flunders", "a", "")
        ));
    }

    #[test]
    fn rules_match_subresources_names_and_urls_as_kube() {
        let rule = Rule::from_json(&json!({"verbs": ["get"], "apiGroups": ["g"],
            "resources": ["things", "*/status"], "resourceNames": ["one"]}));
        let no = |_: &str| false;
        let mut a = attrs("u", "get", "g", "things", "", "one");
        assert!(rule.allows(&a, &no));
        a.name = "two".into();
        assert!(!rule.allows(&a, &no));
        a.name = "one".into();
        a.resource = "others".into();
        a.subresource = "status".into();
        assert!(rule.allows(&a, &no));
        a.subresource = "scale".into();
        assert!(!rule.allows(&a, &no));
        let urls = Rule::from_json(&json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}));
        let mut a = Attributes {
            verb: "get".into(),
            path: "/apis/g/v1".into(),
            ..Attributes::default()
        };
        assert!(urls.allows(&a, &no));
        a.path = "/healthz/etcd".into();
        assert!(!urls.allows(&a, &no));
        a.path = "/healthz".into();
        assert!(urls.allows(&a, &no));
    }

    #[test]
    fn aggregated_and_default_roles_cover_plugin_groups() {
        let index = Index::build(&objects(&[
            (
                "clusterroles/view",
                json!({"metadata": {"name": "view"},
                    "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}}]}}),
            ),
            (
                "clusterroles/ns-view",
                json!({"metadata": {"name": "ns-view", "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
                    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["namespaces"]}]}),
            ),
            (
                "clusterrolebindings/viewers",
                json!({"metadata": {"name": "viewers"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
                    "subjects": [{"kind": "Group", "name": "viewers"}]}),
            ),
        ]));
        let mut a = attrs("v", "get", "", "namespaces", "", "a");
        a.user.groups.push("viewers".into());
        assert!(allowed(&index, &a));
        a.api_group = "wardle.example.com".into();
        a.resource = "flunders".into();
        assert!(allowed(&index, &a));
        a.verb = "delete".into();
        assert!(!allowed(&index, &a));
        a.verb = "get".into();
        a.api_group = "rbac.authorization.k8s.io".into();
        assert!(!allowed(&index, &a));
    }

    #[test]
    fn aggregated_roles_follow_their_sources_not_their_written_rules() {
        // view once aggregated a rule its source no longer has: the rule written into view does not count.
        let index = Index::build(&objects(&[
            (
                "clusterroles/view",
                json!({"metadata": {"name": "view"},
                    "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"agg": "view"}}]},
                    "rules": [{"verbs": ["delete"], "apiGroups": [""], "resources": ["namespaces"]}]}),
            ),
            (
                "clusterroles/source",
                json!({"metadata": {"name": "source", "labels": {"agg": "view"}},
                    "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["namespaces"]}]}),
            ),
        ]));
        let rules: Vec<&Rule> = index.cluster_roles["view"]
            .iter()
            .filter(|r| !r.plugin_groups)
            .collect();
        assert_eq!(rules.len(), 1);
        assert_eq!(rules[0].verbs, ["get"]);
    }

    #[test]
    fn covers_requires_every_permission() {
        let owner = vec![Rule::from_json(
            &json!({"verbs": ["get", "list"], "apiGroups": ["g"], "resources": ["things"]}),
        )];
        let fewer = vec![Rule::from_json(
            &json!({"verbs": ["get"], "apiGroups": ["g"], "resources": ["things"], "resourceNames": ["x"]}),
        )];
        assert!(covers(&owner, &fewer, &[]).is_ok());
        let more = vec![Rule::from_json(
            &json!({"verbs": ["get", "delete"], "apiGroups": ["g"], "resources": ["things"]}),
        )];
        let missing = covers(&owner, &more, &[]).unwrap_err();
        assert_eq!(missing.len(), 1);
        assert_eq!(missing[0].verbs, ["delete"]);
        let star = vec![Rule::from_json(
            &json!({"verbs": ["*"], "apiGroups": ["g"], "resources": ["things"]}),
        )];
        assert!(covers(&owner, &star, &[]).is_err());
    }
}
