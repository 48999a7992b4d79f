//! The bootstrap configuration: kube's `pkg/apis/flowcontrol/bootstrap`, its mandatory and suggested objects.

use serde_json::{json, Value};

use super::{AUTO_UPDATE, CATCH_ALL, EXEMPT, FLOW_SCHEMAS, GROUP, MAX_PRECEDENCE, PRIORITY_LEVELS, VERSION};
use crate::str_at;

const MASTERS: &str = "system:masters";
const NODES: &str = "system:nodes";
const AUTHENTICATED: &str = "system:authenticated";
const UNAUTHENTICATED: &str = "system:unauthenticated";
const CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
const SCHEDULER: &str = "system:kube-scheduler";
const SERVICE_ACCOUNTS: &str = "system:serviceaccounts";

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": format!("{GROUP}/{VERSION}"),
        "kind": kind,
        "metadata": {"name": name, "annotations": {AUTO_UPDATE: "true"}},
        "spec": spec,
    })
}

fn limited(shares: i64, lendable: i64, queuing: Option<(i64, i64, i64)>) -> Value {
    let response = match queuing {
        Some((queues, hand, length)) => json!({
            "type": "Queue",
            "queuing": {"queues": queues, "handSize": hand, "queueLengthLimit": length},
        }),
        None => json!({"type": "Reject"}),
    };
    json!({
        "type": "Limited",
        "limited": {"nominalConcurrencyShares": shares, "lendablePercent": lendable, "limitResponse": response},
    })
}

fn level(name: &str, spec: Value) -> (&'static str, Value) {
    (PRIORITY_LEVELS, object("PriorityLevelConfiguration", name, spec))
}

fn group(name: &str) -> Value {
    json!({"kind": "Group", "group": {"name": name}})
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "user": {"name": name}})
}

fn service_account(namespace: &str, name: &str) -> Value {
    json!({"kind": "ServiceAccount", "serviceAccount": {"namespace": namespace, "name": name}})
}

/// Every resource and non-resource URL.
fn all(subjects: Vec<Value>) -> Value {
    json!({
        "subjects": subjects,
        "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
        "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    })
}

fn schema(name: &str, level: &str, precedence: i64, distinguisher: Option<&str>, rule: Value) -> (&'static str, Value) {
    let mut spec = json!({
        "priorityLevelConfiguration": {"name": level},
        "matchingPrecedence": precedence,
        "rules": [rule],
    });
    if let Some(d) = distinguisher {
        spec["distinguisherMethod"] = json!({"type": d});
    }
    (FLOW_SCHEMAS, object("FlowSchema", name, spec))
}

/// kube's mandatory objects, which the server keeps as they are: the `exempt` level and schema (`system:masters`),
/// and the `catch-all` ones (every request no other schema matches), as (resource, object).
pub fn mandatory() -> Vec<(&'static str, Value)> {
    vec![
        level(
            EXEMPT,
            json!({"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0, "lendablePercent": 0}}),
        ),
        level(CATCH_ALL, limited(5, 0, None)),
        schema(EXEMPT, EXEMPT, 1, None, all(vec![group(MASTERS)])),
        schema(
            CATCH_ALL,
            CATCH_ALL,
            MAX_PRECEDENCE,
            Some("ByUser"),
            all(vec![group(UNAUTHENTICATED), group(AUTHENTICATED)]),
        ),
    ]
}

/// kube's suggested objects, made when missing and kept up to date while their `apf.kubernetes.io/autoupdate-spec`
/// annotation says so, as (resource, object).
pub fn suggested() -> Vec<(&'static str, Value)> {
    let everyone = || vec![group(UNAUTHENTICATED), group(AUTHENTICATED)];
    vec![
        level("system", limited(30, 33, Some((64, 6, 50)))),
        level("node-high", limited(40, 25, Some((64, 6, 50)))),
        level("leader-election", limited(10, 0, Some((16, 4, 50)))),
        level("workload-high", limited(40, 50, Some((128, 6, 50)))),
        level("workload-low", limited(100, 90, Some((128, 6, 50)))),
        level("global-default", limited(20, 50, Some((128, 6, 50)))),
        schema(
            "probes",
            EXEMPT,
            2,
            None,
            json!({
                "subjects": everyone(),
                "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}],
            }),
        ),
        schema(
            "system-leader-election",
            "leader-election",
            100,
            Some("ByUser"),
            json!({
                "subjects": [user(CONTROLLER_MANAGER), user(SCHEDULER), service_account("kube-system", "*")],
                "resourceRules": [{"verbs": ["get", "create", "update"], "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"], "namespaces": ["*"], "clusterScope": false}],
            }),
        ),
        schema(
            "system-node-high",
            "node-high",
            400,
            Some("ByUser"),
            json!({
                "subjects": [group(NODES)],
                "resourceRules": [
                    {"verbs": ["*"], "apiGroups": [""], "resources": ["nodes", "nodes/status"],
                        "namespaces": ["*"], "clusterScope": true},
                    {"verbs": ["*"], "apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                        "namespaces": ["*"], "clusterScope": false},
                ],
            }),
        ),
        schema("system-nodes", "system", 500, Some("ByUser"), all(vec![group(NODES)])),
        schema(
            "kube-controller-manager",
            "workload-high",
            800,
            Some("ByNamespace"),
            all(vec![user(CONTROLLER_MANAGER)]),
        ),
        schema(
            "kube-scheduler",
            "workload-high",
            800,
            Some("ByNamespace"),
            all(vec![user(SCHEDULER)]),
        ),
        schema(
            "kube-system-service-accounts",
            "workload-high",
            900,
            Some("ByNamespace"),
            all(vec![service_account("kube-system", "*")]),
        ),
        schema(
            "service-accounts",
            "workload-low",
            9000,
            Some("ByUser"),
            all(vec![group(SERVICE_ACCOUNTS)]),
        ),
        schema(
            "global-default",
            "global-default",
            9900,
            Some("ByUser"),
            all(everyone()),
        ),
    ]
}

/// The storage keys of the bootstrap objects (the host's: they take no room under the root tenant's objects limit).
pub fn bootstrap_keys() -> Vec<String> {
    mandatory()
        .into_iter()
        .chain(suggested())
        .map(|(resource, obj)| storage_key(resource, str_at(&obj, "/metadata/name")))
        .collect()
}

pub(super) fn storage_key(resource: &str, name: &str) -> String {
    format!("/registry/{GROUP}/{resource}/{name}")
}
