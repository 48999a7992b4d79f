//! The ResourceQuota type (core `v1`, kube's `pkg/registry/core/resourcequota`): `spec.hard` limits by resource name,
//! `status.hard` and `status.used` kept by the server (the quota admission check counts a create in, the quota
//! controller counts again). Object counts are what this server has to count: `count/<resource>.<group>`
//! (`count/<resource>` for the core group) and kube's older names of core counts (`configmaps`, `secrets`,
//! `resourcequotas`...). Compute resources (`cpu`, `requests.memory`...) are accepted and stay at zero: no pod uses
//! them here.

use serde_json::{json, Map, Value};

use super::super::{column, name_column, str_at, strs};
use apimachinery::field_error::FieldError;
use apimachinery::scheme::Column;
use apimachinery::validation::is_qualified_name;

/// kube's `standardQuotaResources`: the names without a `/` a quota may limit.
const STANDARD: [&str; 19] = [
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

/// kube's `integerResources`: the names measured in whole numbers.
const INTEGER: [&str; 9] = [
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

/// kube's older names of core object counts, and the resource each counts.
const LEGACY_COUNTS: [&str; 7] = [
    "configmaps",
    "secrets",
    "resourcequotas",
    "pods",
    "services",
    "replicationcontrollers",
    "persistentvolumeclaims",
];

/// The quota's scopes kube defines.
const SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// The schema of a ResourceQuota.
pub fn schema() -> Value {
    let quantities = |d: &str| json!({"type": "object", "description": d, "additionalProperties": {"x-kubernetes-int-or-string": true}});
    json!({
        "type": "object",
        "description": "ResourceQuota sets aggregate quota restrictions enforced per namespace",
        "properties": {
            "spec": {
                "type": "object",
                "description": "Spec defines the desired quota.",
                "properties": {
                    "hard": quantities("hard is the set of desired hard limits for each named resource."),
                    "scopes": {"type": "array", "items": {"type": "string"}, "description": "A collection of filters that must match each object tracked by a quota.", "x-kubernetes-list-type": "atomic"},
                    "scopeSelector": {
                        "type": "object",
                        "description": "scopeSelector is also a collection of filters like scopes that must match each object tracked by a quota but expressed using ScopeSelectorOperator in combination with possible values.",
                        "properties": {
                            "matchExpressions": {
                                "type": "array",
                                "x-kubernetes-list-type": "atomic",
                                "items": {
                                    "type": "object",
                                    "required": ["scopeName", "operator"],
                                    "properties": {
                                        "scopeName": {"type": "string"},
                                        "operator": {"type": "string"},
                                        "values": {"type": "array", "items": {"type": "string"}}
                                    }
                                }
                            }
                        }
                    }
                }
            },
            "status": {
                "type": "object",
                "description": "Status defines the actual enforced quota and its current usage.",
                "properties": {
                    "hard": quantities("Hard is the set of enforced hard limits for each named resource."),
                    "used": quantities("Used is the current observed total usage of the resource in the namespace.")
                }
            }
        }
    })
}

/// kube's columns: the name, the limits other than `limits.*` (used/hard) as REQUEST, the `limits.*` as LIMIT, the
/// age.
pub fn columns() -> Vec<Column> {
    vec![
        name_column(),
        column("Request", "string", "", "Request represents a minimum amount of cpu/memory that a container may consume.", 0),
        column("Limit", "string", "", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", 0),
        super::super::age_column(),
    ]
}

/// The cells after the name (kube's `printResourceQuota`).
pub fn cells(quota: &Value) -> Vec<Value> {
    let empty = Map::new();
    let hard = quota
        .pointer("/status/hard")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let used = quota
        .pointer("/status/used")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    // Sorted by name (the map is).
    for (name, limit_value) in hard {
        let text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => "0".to_owned(),
        };
        let entry = format!("{name}: {}/{}", text(used.get(name)), text(Some(limit_value)));
        if name.split('.').count() > 1 && name.starts_with("limits.") {
            limit.push(entry);
        } else {
            request.push(entry);
        }
    }
    vec![
        json!(request.join(", ")),
        json!(limit.join(", ")),
        rest::strategy::creation_timestamp(quota),
    ]
}

/// The problems of a map of quantities by resource name (`spec.hard`, `status.hard`, `status.used`).
fn validate_quantities(quota: &Value, pointer: &str, field: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(map) = quota.pointer(pointer).and_then(Value::as_object) else {
        return errors;
    };
    for (name, value) in map {
        let path = format!("{field}[{name}]");
        let problems = is_qualified_name(name);
        for problem in &problems {
            errors.push(FieldError::invalid(&path, name, problem));
        }
        if problems.is_empty()
            && !name.contains('/')
            && !STANDARD.contains(&name.as_str())
            && !name.starts_with("hugepages-")
            && !name.starts_with("requests.hugepages-")
        {
            errors.push(FieldError::invalid(
                &path,
                name,
                "must be a standard resource type or fully qualified",
            ));
            errors.push(FieldError::invalid(
                &path,
                name,
                "must be a standard resource for quota",
            ));
        }
        match apimachinery::quantity::of_json(value) {
            Err(e) => errors.push(FieldError::invalid_json(&path, value, &e)),
            Ok(n) if n < 0.0 => {
                errors.push(FieldError::invalid_json(
                    &path,
                    value,
                    "must be greater than or equal to 0",
                ));
            }
            Ok(n) if n.fract() != 0.0 && (INTEGER.contains(&name.as_str()) || name.starts_with("count/")) => {
                errors.push(FieldError::invalid_json(&path, value, "must be an integer"));
            }
            Ok(_) => {}
        }
    }
    errors
}

/// kube's `ValidateResourceQuota`: the names and quantities of the limits and usage, and the scopes.
pub fn validate(quota: &Value) -> Vec<FieldError> {
    let mut errors = validate_quantities(quota, "/spec/hard", "spec.hard");
    errors.extend(validate_quantities(quota, "/status/hard", "status.hard"));
    errors.extend(validate_quantities(quota, "/status/used", "status.used"));
    if strs(quota.pointer("/spec/scopes"))
        .iter()
        .any(|scope| !SCOPES.contains(scope))
    {
        let scopes = quota.pointer("/spec/scopes").unwrap_or(&Value::Null);
        errors.push(FieldError::invalid_json("spec.scopes", scopes, "unsupported scope"));
    }
    errors
}

/// kube's update rule besides [`validate`]: the scopes may not change.
pub fn validate_update(quota: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = validate(quota);
    fn scopes(q: &Value) -> Vec<&str> {
        let mut s = strs(q.pointer("/spec/scopes"));
        s.sort_unstable();
        s
    }
    if scopes(quota) != scopes(old) {
        errors.push(FieldError::invalid_json(
            "spec.scopes",
            quota.pointer("/spec/scopes").unwrap_or(&Value::Null),
            "field is immutable",
        ));
    }
    errors
}

/// Quantities written as numbers are kept as strings, as kube writes them.
fn quantities_as_strings(quota: &mut Value, pointer: &str) {
    if let Some(map) = quota.pointer_mut(pointer).and_then(Value::as_object_mut) {
        for value in map.values_mut() {
            if let Value::Number(n) = value {
                *value = json!(n.to_string());
            }
        }
    }
}

/// A new quota: its status is the server's (kube's strategy clears it).
pub fn prepare_for_create(quota: &Value) -> Value {
    let mut quota = quota.clone();
    if let Some(o) = quota.as_object_mut() {
        o.remove("status");
    }
    quantities_as_strings(&mut quota, "/spec/hard");
    quota
}

/// An update of the spec: the status stays (it changes through `/status` only).
pub fn prepare_for_update(quota: &Value, old: &Value) -> Value {
    let mut quota = prepare_for_create(quota);
    if let Some(status) = old.get("status") {
        quota["status"] = status.clone();
    }
    quota
}

/// A `/status` write: only the status changes.
pub fn prepare_status(quota: &Value) -> Value {
    let mut quota = quota.clone();
    quantities_as_strings(&mut quota, "/status/hard");
    quantities_as_strings(&mut quota, "/status/used");
    quota
}

/// The quota names a create of `plural` in `group` counts under: `count/<plural>.<group>` (`count/<plural>` for the
/// core group), and kube's older name of a core count.
pub fn counted_by(group: &str, plural: &str) -> Vec<String> {
    let mut names = vec![if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }];
    if group.is_empty() && LEGACY_COUNTS.contains(&plural) {
        names.push(plural.to_owned());
    }
    names
}

/// The group and resource whose objects a quota name counts, if it is an object count.
pub fn counted_resource(name: &str) -> Option<(String, String)> {
    if let Some(resource) = name.strip_prefix("count/") {
        return Some(match resource.split_once('.') {
            Some((plural, group)) => (group.to_owned(), plural.to_owned()),
            None => (String::new(), resource.to_owned()),
        });
    }
    LEGACY_COUNTS.contains(&name).then(|| (String::new(), name.to_owned()))
}

/// The limit of a quota name, from `spec.hard`.
pub fn hard(quota: &Value, name: &str) -> Option<f64> {
    quota
        .pointer("/spec/hard")
        .and_then(|h| h.get(name))
        .and_then(|v| apimachinery::quantity::of_json(v).ok())
}

/// The usage of a quota name, from `status.used` (`None`: not counted yet).
pub fn used(quota: &Value, name: &str) -> Option<f64> {
    quota
        .pointer("/status/used")
        .and_then(|h| h.get(name))
        .and_then(|v| apimachinery::quantity::of_json(v).ok())
}

/// The quota's name.
pub fn name(quota: &Value) -> &str {
    str_at(quota, "/metadata/name")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_are_validated_as_kube_validates_them() {
        let ok = json!({"spec": {"hard": {"count/flunders.wardle.example.com": "2", "configmaps": 10, "cpu": "500m",
            "limits.memory": "1Gi"}, "scopes": ["NotTerminating"]}});
        assert!(validate(&ok).is_empty(), "{:?}", validate(&ok));
        let bad = json!({"spec": {"hard": {"widgets": "1", "count/flunders.wardle.example.com": "1.5", "secrets": "-1"},
            "scopes": ["Sometimes"]}});
        let fields: Vec<String> = validate(&bad).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                "spec.hard[count/flunders.wardle.example.com]",
                "spec.hard[secrets]",
                "spec.hard[widgets]",
                "spec.hard[widgets]",
                "spec.scopes"
            ]
        );
        let moved = json!({"spec": {"scopes": ["Terminating"]}});
        assert_eq!(validate_update(&moved, &json!({"spec": {}})).len(), 1);
    }

    #[test]
    fn quotas_count_objects_by_name_and_show_kube_cells() {
        assert_eq!(
            counted_by("wardle.example.com", "flunders"),
            ["count/flunders.wardle.example.com"]
        );
        assert_eq!(counted_by("", "configmaps"), ["count/configmaps", "configmaps"]);
        assert_eq!(counted_by("", "events"), ["count/events"]);
        assert_eq!(
            counted_resource("count/flunders.wardle.example.com"),
            Some(("wardle.example.com".into(), "flunders".into()))
        );
        assert_eq!(counted_resource("secrets"), Some((String::new(), "secrets".into())));
        assert_eq!(counted_resource("cpu"), None);
        let quota = json!({"metadata": {"creationTimestamp": "2026-12-07T10:00:00Z"},
            "spec": {"hard": {"count/flunders.wardle.example.com": 2}},
            "status": {"hard": {"count/flunders.wardle.example.com": "2", "limits.cpu": "1"},
                "used": {"count/flunders.wardle.example.com": "1"}}});
        assert_eq!(
            cells(&quota),
            [
                json!("count/flunders.wardle.example.com: 1/2"),
                json!("limits.cpu: 0/1"),
                json!("2026-12-07T10:00:00Z")
            ]
        );
        assert_eq!(
            prepare_for_create(&quota)["spec"]["hard"]["count/flunders.wardle.example.com"],
            "2"
        );
        assert!(prepare_for_create(&quota).get("status").is_none());
        assert_eq!(hard(&quota, "count/flunders.wardle.example.com"), Some(2.0));
        assert_eq!(used(&quota, "count/flunders.wardle.example.com"), Some(1.0));
    }
}
