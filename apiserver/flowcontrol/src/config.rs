//! The configuration compiled from the FlowSchema and PriorityLevelConfiguration objects (kube's
//! `apf_controller.go` digest of them, and `rule.go`'s matching): the schemas in matching order, each naming its
//! level, and the levels' specs.

use std::collections::BTreeMap;

use serde_json::Value;

use builtin::flowcontrol::{self as fc, CATCH_ALL, EXEMPT, FLOW_SCHEMAS, PRIORITY_LEVELS};
use builtin::{owned_strings, str_at};

/// What a request is matched on.
#[derive(Clone, Copy, Debug, Default)]
pub struct Descriptor<'a> {
    /// The user's name.
    pub user: &'a str,
    /// The user's groups.
    pub groups: &'a [String],
    /// Whether it addresses a resource (else a non-resource URL such as `/healthz`).
    pub resource_request: bool,
    /// The verb (`get`, `list`, `create`...).
    pub verb: &'a str,
    /// The resource's API group (`""`: core).
    pub api_group: &'a str,
    /// The resource (plural).
    pub resource: &'a str,
    /// The subresource (`""`: none).
    pub subresource: &'a str,
    /// The namespace (`""`: cluster-scoped).
    pub namespace: &'a str,
    /// The URL path (of a non-resource request).
    pub path: &'a str,
}

#[derive(Clone, Debug, PartialEq)]
enum Subject {
    User(String),
    Group(String),
    /// A namespace and a name (`*`: every service account of the namespace).
    ServiceAccount(String, String),
}

#[derive(Clone, Debug, PartialEq)]
struct ResourceRule {
    verbs: Vec<String>,
    groups: Vec<String>,
    resources: Vec<String>,
    cluster_scope: bool,
    namespaces: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
struct NonResourceRule {
    verbs: Vec<String>,
    urls: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
struct Rule {
    subjects: Vec<Subject>,
    resources: Vec<ResourceRule>,
    non_resources: Vec<NonResourceRule>,
}

/// How a schema's requests are told into flows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Distinguisher {
    /// One flow for the whole schema.
    None,
    /// A flow per user.
    ByUser,
    /// A flow per namespace (cluster-scoped requests share one).
    ByNamespace,
}

/// A FlowSchema, compiled.
#[derive(Clone, Debug, PartialEq)]
pub struct Schema {
    /// Its name.
    pub name: String,
    /// Its uid (the `X-Kubernetes-PF-FlowSchema-UID` header).
    pub uid: String,
    /// Its `matchingPrecedence`.
    pub precedence: i64,
    /// The priority level it names.
    pub level: String,
    /// How its requests are told into flows.
    pub distinguisher: Distinguisher,
    rules: Vec<Rule>,
}

/// A level's queues (kube's `QueuingConfiguration`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Queuing {
    /// How many queues.
    pub queues: usize,
    /// How many of them each flow is dealt.
    pub hand_size: usize,
    /// The most requests a queue holds.
    pub queue_length_limit: usize,
}

/// A PriorityLevelConfiguration, compiled.
#[derive(Clone, Debug, PartialEq)]
pub struct LevelSpec {
    /// Its name.
    pub name: String,
    /// Its uid (the `X-Kubernetes-PF-PriorityLevel-UID` header).
    pub uid: String,
    /// Whether its requests are never limited.
    pub exempt: bool,
    /// Its `nominalConcurrencyShares`.
    pub shares: u64,
    /// The part of its nominal seats it lends when it needs them not (percent).
    pub lendable_percent: u64,
    /// The most seats it borrows, as a percent of its nominal seats (`None`: no limit).
    pub borrowing_limit_percent: Option<u64>,
    /// Its queues, or `None` when a request that finds no seat free is refused (`limitResponse.type: Reject`).
    pub queuing: Option<Queuing>,
}

/// The configuration: the schemas in matching order and the levels by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Config {
    /// The schemas whose level exists, in matching order (precedence, then name).
    pub schemas: Vec<Schema>,
    /// The levels.
    pub levels: BTreeMap<String, LevelSpec>,
    /// The schemas whose level does not exist (kube's `Dangling` condition).
    pub dangling: Vec<String>,
}

fn subject(s: &Value) -> Option<Subject> {
    match str_at(s, "/kind") {
        "User" => Some(Subject::User(str_at(s, "/user/name").to_owned())),
        "Group" => Some(Subject::Group(str_at(s, "/group/name").to_owned())),
        "ServiceAccount" => Some(Subject::ServiceAccount(
            str_at(s, "/serviceAccount/namespace").to_owned(),
            str_at(s, "/serviceAccount/name").to_owned(),
        )),
        _ => None,
    }
}

/// The items of a JSON list (none when it is not one).
fn items<'v>(v: &'v Value, field: &str) -> impl Iterator<Item = &'v Value> {
    v.get(field).and_then(Value::as_array).into_iter().flatten()
}

fn rule(r: &Value) -> Rule {
    Rule {
        subjects: items(r, "subjects").filter_map(subject).collect(),
        resources: items(r, "resourceRules")
            .map(|r| ResourceRule {
                verbs: owned_strings(r.get("verbs")),
                groups: owned_strings(r.get("apiGroups")),
                resources: owned_strings(r.get("resources")),
                cluster_scope: r.get("clusterScope").and_then(Value::as_bool).unwrap_or(false),
                namespaces: owned_strings(r.get("namespaces")),
            })
            .collect(),
        non_resources: items(r, "nonResourceRules")
            .map(|r| NonResourceRule {
                verbs: owned_strings(r.get("verbs")),
                urls: owned_strings(r.get("nonResourceURLs")),
            })
            .collect(),
    }
}

fn schema(obj: &Value) -> Schema {
    let spec = fc::defaulted_spec(FLOW_SCHEMAS, obj);
    Schema {
        name: str_at(obj, "/metadata/name").to_owned(),
        uid: str_at(obj, "/metadata/uid").to_owned(),
        precedence: spec
            .get("matchingPrecedence")
            .and_then(Value::as_i64)
            .unwrap_or(fc::DEFAULT_PRECEDENCE),
        level: str_at(&spec, "/priorityLevelConfiguration/name").to_owned(),
        distinguisher: match str_at(&spec, "/distinguisherMethod/type") {
            "ByUser" => Distinguisher::ByUser,
            "ByNamespace" => Distinguisher::ByNamespace,
            _ => Distinguisher::None,
        },
        rules: items(&spec, "rules").map(rule).collect(),
    }
}

fn level(obj: &Value) -> LevelSpec {
    let spec = fc::defaulted_spec(PRIORITY_LEVELS, obj);
    let exempt = str_at(&spec, "/type") == "Exempt";
    let number = |p: &str| spec.pointer(p).and_then(Value::as_u64);
    let (shares, lendable) = if exempt {
        (
            number("/exempt/nominalConcurrencyShares").unwrap_or(0),
            number("/exempt/lendablePercent").unwrap_or(0),
        )
    } else {
        (
            number("/limited/nominalConcurrencyShares").unwrap_or(30),
            number("/limited/lendablePercent").unwrap_or(0),
        )
    };
    let queuing = (!exempt && str_at(&spec, "/limited/limitResponse/type") == "Queue").then(|| {
        let q = |f: &str, default: u64| {
            number(&format!("/limited/limitResponse/queuing/{f}"))
                .unwrap_or(default)
                .max(1) as usize
        };
        let queues = q("queues", 64);
        Queuing {
            queues,
            hand_size: q("handSize", 8).min(queues),
            queue_length_limit: q("queueLengthLimit", 50),
        }
    });
    LevelSpec {
        name: str_at(obj, "/metadata/name").to_owned(),
        uid: str_at(obj, "/metadata/uid").to_owned(),
        exempt,
        shares,
        lendable_percent: lendable.min(100),
        borrowing_limit_percent: if exempt {
            Some(0)
        } else {
            number("/limited/borrowingLimitPercent")
        },
        queuing,
    }
}

impl Config {
    /// Compiles the objects (each as stored: defaults may be missing from objects written before them). A
    /// mandatory object missing is taken from the bootstrap configuration (kube's filter does the same), so that
    /// every request is classified.
    pub fn compile(schemas: &[Value], levels: &[Value]) -> Config {
        let mut config = Config::default();
        for obj in levels {
            let l = level(obj);
            config.levels.insert(l.name.clone(), l);
        }
        let mut compiled: Vec<Schema> = schemas.iter().map(schema).collect();
        for (resource, obj) in fc::mandatory() {
            let name = str_at(&obj, "/metadata/name");
            if resource == PRIORITY_LEVELS && !config.levels.contains_key(name) {
                config.levels.insert(name.to_owned(), level(&obj));
            }
            if resource == FLOW_SCHEMAS && !compiled.iter().any(|s| s.name == name) {
                compiled.push(schema(&obj));
            }
        }
        compiled.sort_by(|a, b| (a.precedence, &a.name).cmp(&(b.precedence, &b.name)));
        for s in compiled {
            if config.levels.contains_key(&s.level) {
                config.schemas.push(s);
            } else {
                config.dangling.push(s.name);
            }
        }
        config
    }

    /// The first schema (in matching order) that matches the request; the catch-all when none does.
    pub fn classify(&self, d: &Descriptor<'_>) -> &Schema {
        &self.schemas[self.classify_index(d)]
    }

    /// The index in [`Config::schemas`] of [`Config::classify`]'s schema.
    pub fn classify_index(&self, d: &Descriptor<'_>) -> usize {
        self.schemas
            .iter()
            .position(|s| s.matches(d))
            .or_else(|| self.schemas.iter().position(|s| s.name == CATCH_ALL))
            .unwrap_or(self.schemas.len() - 1)
    }
}

fn any_or(list: &[String], value: &str) -> bool {
    list.iter().any(|v| v == "*" || v == value)
}

impl Subject {
    fn matches(&self, d: &Descriptor<'_>) -> bool {
        match self {
            Subject::User(name) => name == "*" || name == d.user,
            Subject::Group(name) => name == "*" || d.groups.iter().any(|g| g == name),
            Subject::ServiceAccount(namespace, name) => d
                .user
                .strip_prefix("system:serviceaccount:")
                .and_then(|rest| rest.split_once(':'))
                .is_some_and(|(ns, n)| ns == namespace && (name == "*" || name == n)),
        }
    }
}

impl ResourceRule {
    fn matches(&self, d: &Descriptor<'_>) -> bool {
        if !any_or(&self.verbs, d.verb) || !any_or(&self.groups, d.api_group) {
            return false;
        }
        let resource_matches = self.resources.iter().any(|r| {
            r == "*"
                || match r.split_once('/') {
                    Some((res, sub)) => res == d.resource && sub == d.subresource,
                    None => r == d.resource && d.subresource.is_empty(),
                }
        });
        if !resource_matches {
            return false;
        }
        if d.namespace.is_empty() {
            self.cluster_scope
        } else {
            any_or(&self.namespaces, d.namespace)
        }
    }
}

impl NonResourceRule {
    /// kube's `matchPolicyRuleNonResourceURL`: `*`, the path itself, or a prefix: the URL without its trailing
    /// `*`, ending in `/` (so `/healthz` matches `/healthz/etcd`, and `/metrics/*` matches `/metrics/slis` but not
    /// `/metrics`).
    fn matches(&self, d: &Descriptor<'_>) -> bool {
        any_or(&self.verbs, d.verb)
            && self.urls.iter().any(|u| {
                if u == "*" || u == d.path {
                    return true;
                }
                let prefix = u.trim_end_matches('*');
                match prefix.strip_suffix('/') {
                    Some(_) => d.path.starts_with(prefix),
                    None => {
                        d.path.len() > prefix.len()
                            && d.path.starts_with(prefix)
                            && d.path[prefix.len()..].starts_with('/')
                    }
                }
            })
    }
}

impl Schema {
    /// Whether a rule of the schema matches the request.
    pub fn matches(&self, d: &Descriptor<'_>) -> bool {
        self.rules.iter().any(|r| {
            r.subjects.iter().any(|s| s.matches(d))
                && if d.resource_request {
                    r.resources.iter().any(|rr| rr.matches(d))
                } else {
                    r.non_resources.iter().any(|nr| nr.matches(d))
                }
        })
    }

    /// The request's flow distinguisher.
    pub fn distinguisher<'a>(&self, d: &Descriptor<'a>) -> &'a str {
        match self.distinguisher {
            Distinguisher::None => "",
            Distinguisher::ByUser => d.user,
            Distinguisher::ByNamespace => d.namespace,
        }
    }

    /// Whether this is the exempt schema (kube's for `system:masters`).
    pub fn is_exempt_schema(&self) -> bool {
        self.name == EXEMPT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bootstrap() -> Config {
        let (schemas, levels) = crate::controller::bootstrap_objects();
        Config::compile(&schemas, &levels)
    }

    fn groups(g: &[&str]) -> Vec<String> {
        g.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn requests_go_to_kubes_schemas() {
        let config = bootstrap();
        let masters = groups(&["system:masters", "system:authenticated"]);
        let users = groups(&["system:authenticated"]);
        let anonymous = groups(&["system:unauthenticated"]);
        let nodes = groups(&["system:nodes", "system:authenticated"]);
        let sa = groups(&[
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated",
        ]);
        fn get<'a>(
            user: &'a str,
            groups: &'a [String],
            resource_request: bool,
            resource: &'a str,
            namespace: &'a str,
            path: &'a str,
        ) -> Descriptor<'a> {
            Descriptor {
                user,
                groups,
                resource_request,
                verb: "get",
                resource,
                namespace,
                path,
                ..Descriptor::default()
            }
        }
        let none = Vec::new();
        let cases = [
            (get("admin", &masters, true, "flunders", "default", ""), "exempt"),
            (get("bob", &users, true, "flunders", "default", ""), "global-default"),
            (get("system:anonymous", &anonymous, false, "", "", "/healthz"), "probes"),
            (
                get("system:anonymous", &anonymous, false, "", "", "/readyz/etcd"),
                "probes",
            ),
            (
                get("system:anonymous", &anonymous, false, "", "", "/version"),
                "global-default",
            ),
            (get("system:node:n1", &nodes, true, "nodes", "", ""), "system-node-high"),
            (
                get("system:node:n1", &nodes, true, "pods", "default", ""),
                "system-nodes",
            ),
            (
                get(
                    "system:serviceaccount:default:builder",
                    &sa,
                    true,
                    "flunders",
                    "default",
                    "",
                ),
                "service-accounts",
            ),
            (
                get(
                    "system:serviceaccount:kube-system:gc",
                    &sa,
                    true,
                    "flunders",
                    "default",
                    "",
                ),
                "kube-system-service-accounts",
            ),
            (get("nobody", &none, true, "flunders", "default", ""), "catch-all"),
        ];
        for (d, expected) in cases {
            assert_eq!(config.classify(&d).name, expected, "{d:?}");
        }
    }

    #[test]
    fn rules_match_subresources_scopes_and_url_prefixes() {
        let rule = |r: Value| {
            Config::compile(
                &[serde_json::json!({"metadata": {"name": "s"}, "spec": {
                    "priorityLevelConfiguration": {"name": "catch-all"}, "matchingPrecedence": 5,
                    "rules": [r]}})],
                &[],
            )
        };
        let all_users = serde_json::json!([{"kind": "Group", "group": {"name": "*"}}]);
        let c = rule(
            serde_json::json!({"subjects": all_users, "resourceRules": [{"verbs": ["get"], "apiGroups": ["wardle.example.com"],
            "resources": ["flunders/status"], "namespaces": ["team-a"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["/metrics/*"]}]}),
        );
        let d = |resource, subresource, namespace, resource_request, path| Descriptor {
            user: "u",
            verb: "get",
            api_group: "wardle.example.com",
            resource,
            subresource,
            namespace,
            resource_request,
            path,
            ..Descriptor::default()
        };
        assert_eq!(c.classify(&d("flunders", "status", "team-a", true, "")).name, "s");
        assert_eq!(c.classify(&d("flunders", "", "team-a", true, "")).name, "catch-all");
        assert_eq!(
            c.classify(&d("flunders", "status", "team-b", true, "")).name,
            "catch-all"
        );
        assert_eq!(
            c.classify(&d("flunders", "status", "", true, "")).name,
            "catch-all",
            "not cluster-scoped"
        );
        assert_eq!(c.classify(&d("", "", "", false, "/metrics/slis")).name, "s");
        assert_eq!(
            c.classify(&d("", "", "", false, "/metrics")).name,
            "catch-all",
            "as kube's"
        );
        assert_eq!(c.classify(&d("", "", "", false, "/metricsx")).name, "catch-all");
    }

    #[test]
    fn schemas_go_in_precedence_then_name_order_and_dangling_ones_are_left_out() {
        let s = |name: &str, precedence: i64, level: &str| {
            serde_json::json!({"metadata": {"name": name}, "spec": {"priorityLevelConfiguration": {"name": level},
                "matchingPrecedence": precedence, "rules": []}})
        };
        let c = Config::compile(
            &[s("b", 10, "catch-all"), s("a", 10, "catch-all"), s("z", 5, "missing")],
            &[],
        );
        let names: Vec<&str> = c.schemas.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["exempt", "a", "b", "catch-all"]);
        assert_eq!(c.dangling, ["z"]);
        assert!(c.levels["exempt"].exempt && !c.levels["catch-all"].exempt);
        assert_eq!(c.levels["catch-all"].queuing, None, "catch-all rejects");
    }
}
