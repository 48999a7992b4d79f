//! `flowcontrol.apiserver.k8s.io/v1`: API Priority and Fairness's configuration, cluster-scoped, as kube's
//! `pkg/registry/flowcontrol`:
//!
//! - FlowSchema (with `/status`): which requests (by user, group or service account, and by verb and resource or
//!   non-resource URL) go to which priority level, in order of `matchingPrecedence`, and how they are told into
//!   flows (`distinguisherMethod`);
//! - PriorityLevelConfiguration (with `/status`): a level's share of the server's seats (`nominalConcurrencyShares`,
//!   lending and borrowing), and what happens to a request that finds none free (queued, or refused).
//!
//! The host defaults and validates them as kube does (`k8s.io/api/flowcontrol/v1`'s defaults, the checks of
//! `pkg/apis/flowcontrol/validation`), and makes kube's mandatory and suggested objects ([`mandatory`],
//! [`suggested`]); the `flowcontrol` crate dispatches requests by them.

use serde_json::{json, Value};

mod bootstrap;
mod validation;

pub use bootstrap::{bootstrap_keys, mandatory, suggested};
use validation::{validate_conditions, validate_flow_schema, validate_priority_level};

use super::{age_column, column, name_column, resource, set_default, str_at};
use apimachinery::plugin::{PluginError, Validation};
use apimachinery::scheme::Exports;
use apimachinery::scheme::GroupInfo;
use rest::plugin::Plugin;
use rest::strategy::Strategy;

/// The group.
pub const GROUP: &str = "flowcontrol.apiserver.k8s.io";
/// Its version.
pub const VERSION: &str = "v1";
/// FlowSchemas.
pub const FLOW_SCHEMAS: &str = "flowschemas";
/// PriorityLevelConfigurations.
pub const PRIORITY_LEVELS: &str = "prioritylevelconfigurations";

/// The annotation of the objects the server keeps up to date (kube's `apf.kubernetes.io/autoupdate-spec`).
pub const AUTO_UPDATE: &str = "apf.kubernetes.io/autoupdate-spec";
/// The FlowSchema condition of a schema whose priority level does not exist.
pub const DANGLING: &str = "Dangling";

/// The exempt FlowSchema and priority level (`system:masters`).
pub const EXEMPT: &str = "exempt";
/// The catch-all FlowSchema and priority level, for requests no other schema matches.
pub const CATCH_ALL: &str = "catch-all";

/// The highest `matchingPrecedence`.
pub const MAX_PRECEDENCE: i64 = 10000;
/// A FlowSchema's `matchingPrecedence` when it sets none.
pub const DEFAULT_PRECEDENCE: i64 = 1000;

fn preserved(description: &str) -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": description})
}

fn flow_schema_schema() -> Value {
    json!({
        "type": "object",
        "description": "FlowSchema defines the schema of a group of flows. Note that a flow is made up of a set of inbound API requests with similar attributes and is identified by a pair of strings: the name of the FlowSchema and a \"flow distinguisher\".",
        "properties": {
            "spec": preserved("spec is the specification of the desired behavior of a FlowSchema: priorityLevelConfiguration, matchingPrecedence, distinguisherMethod, rules."),
            "status": preserved("status is the current status of a FlowSchema: conditions.")
        }
    })
}

fn priority_level_schema() -> Value {
    json!({
        "type": "object",
        "description": "PriorityLevelConfiguration represents the configuration of a priority level.",
        "properties": {
            "spec": preserved("spec is the specification of the desired behavior of a \"request-priority\": type, limited (nominalConcurrencyShares, limitResponse, lendablePercent, borrowingLimitPercent), exempt."),
            "status": preserved("status is the current status of a \"request-priority\": conditions.")
        }
    })
}

/// `flowcontrol.apiserver.k8s.io` as a built-in plugin.
pub fn plugin() -> Plugin {
    let mut schemas = resource("FlowSchema", FLOW_SCHEMAS, &[], false, VERSION, flow_schema_schema());
    schemas.versions[0].subresources.status = true;
    let mut levels = resource(
        "PriorityLevelConfiguration",
        PRIORITY_LEVELS,
        &[],
        false,
        VERSION,
        priority_level_schema(),
    );
    levels.versions[0].subresources.status = true;
    let group = GroupInfo {
        group: GROUP.into(),
        resources: apimachinery::scheme::shared(vec![schemas, levels]),
        reads: Vec::new(),
    };
    let exports = Exports {
        status: true,
        ..super::writable()
    };
    let col = |name, type_, description, priority| column(name, type_, "", description, priority);
    let schema_columns = vec![
        name_column(),
        col(
            "PriorityLevel",
            "string",
            "The priority level of the requests the schema matches.",
            0,
        ),
        col(
            "MatchingPrecedence",
            "integer",
            "The schema's place in the order of matching (lowest first).",
            0,
        ),
        col(
            "DistinguisherMethod",
            "string",
            "How the schema's requests are told into flows.",
            0,
        ),
        age_column(),
        col(
            "MissingPL",
            "string",
            "Whether the priority level the schema names is missing.",
            0,
        ),
    ];
    let level_columns = vec![
        name_column(),
        col("Type", "string", "Exempt or Limited.", 0),
        col(
            "NominalConcurrencyShares",
            "string",
            "The level's shares of the server's seats.",
            0,
        ),
        col("Queues", "string", "The level's queues.", 0),
        col("HandSize", "string", "The queues of its hand each flow is dealt.", 0),
        col("QueueLengthLimit", "string", "The most requests a queue holds.", 0),
        age_column(),
    ];
    Plugin::native(
        "builtin:flowcontrol",
        group,
        exports,
        vec![
            (FLOW_SCHEMAS.into(), schema_columns),
            (PRIORITY_LEVELS.into(), level_columns),
        ],
        Vec::new(),
        std::sync::Arc::new(FlowControlStrategy),
    )
}

struct FlowControlStrategy;

impl Strategy for FlowControlStrategy {
    fn default(&self, resource: &str, mut obj: Value) -> Result<Value, PluginError> {
        if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
            default_spec(resource, spec);
        }
        Ok(obj)
    }

    fn validate(&self, resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        let mut errors = Vec::new();
        match resource {
            FLOW_SCHEMAS => validate_flow_schema(obj, &mut errors),
            PRIORITY_LEVELS => validate_priority_level(obj, &mut errors),
            _ => {}
        }
        Ok(Validation::of_errors(errors))
    }

    fn validate_status_update(&self, _resource: &str, obj: &Value, _old: &Value) -> Result<Validation, PluginError> {
        let mut errors = Vec::new();
        validate_conditions(obj, &mut errors);
        Ok(Validation::of_errors(errors))
    }

    fn table_cells(&self, resource: &str, _version: &str, obj: &Value) -> Vec<Value> {
        let or_none = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned().unwrap_or(json!("<none>"));
        let at = |p: &str| or_none(obj.pointer(p));
        match resource {
            FLOW_SCHEMAS => {
                let missing = obj
                    .pointer("/status/conditions")
                    .and_then(Value::as_array)
                    .and_then(|c| c.iter().find(|c| c["type"] == DANGLING))
                    .and_then(|c| c.get("status"));
                vec![
                    at("/spec/priorityLevelConfiguration/name"),
                    at("/spec/matchingPrecedence"),
                    at("/spec/distinguisherMethod/type"),
                    rest::strategy::creation_timestamp(obj),
                    or_none(missing),
                ]
            }
            _ => {
                let shares = match str_at(obj, "/spec/type") {
                    "Exempt" => at("/spec/exempt/nominalConcurrencyShares"),
                    _ => at("/spec/limited/nominalConcurrencyShares"),
                };
                let queuing = |f: &str| at(&format!("/spec/limited/limitResponse/queuing/{f}"));
                vec![
                    at("/spec/type"),
                    shares,
                    queuing("queues"),
                    queuing("handSize"),
                    queuing("queueLengthLimit"),
                    rest::strategy::creation_timestamp(obj),
                ]
            }
        }
    }
}

/// kube's `SetDefaults_FlowSchemaSpec`: a precedence of 0 (or none) is 1000.
fn default_flow_schema(spec: &mut Value) {
    if spec.get("matchingPrecedence").and_then(Value::as_i64).unwrap_or(0) == 0 {
        spec["matchingPrecedence"] = json!(DEFAULT_PRECEDENCE);
    }
}

/// kube's defaults of a priority level: shares 30 (Limited) or 0 (Exempt), nothing lendable, 64 queues, hands of
/// 8, queues of 50.
fn default_priority_level(spec: &mut Value) {
    if let Some(exempt) = spec.get_mut("exempt").filter(|e| e.is_object()) {
        set_default(exempt, "nominalConcurrencyShares", json!(0));
        set_default(exempt, "lendablePercent", json!(0));
    }
    if let Some(limited) = spec.get_mut("limited").filter(|l| l.is_object()) {
        set_default(limited, "nominalConcurrencyShares", json!(30));
        set_default(limited, "lendablePercent", json!(0));
        if let Some(queuing) = limited.pointer_mut("/limitResponse/queuing").filter(|q| q.is_object()) {
            for (field, value) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                if queuing.get(field).and_then(Value::as_i64).unwrap_or(0) == 0 {
                    queuing[field] = json!(value);
                }
            }
        }
    }
}

/// A bootstrap object's spec, defaulted as the store defaults it (to compare with a stored one).
pub fn defaulted_spec(resource: &str, obj: &Value) -> Value {
    let mut spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if spec.is_object() {
        default_spec(resource, &mut spec);
    }
    spec
}

/// The defaults of a spec (an object) of `resource`.
fn default_spec(resource: &str, spec: &mut Value) {
    match resource {
        FLOW_SCHEMAS => default_flow_schema(spec),
        PRIORITY_LEVELS => default_priority_level(spec),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::plugin::FieldError;

    fn errors(resource: &str, obj: Value) -> Vec<FieldError> {
        let obj = FlowControlStrategy.default(resource, obj).unwrap();
        FlowControlStrategy.validate(resource, &obj).unwrap().errors
    }

    #[test]
    fn the_bootstrap_objects_are_valid_as_defaulted() {
        for (resource, obj) in mandatory().into_iter().chain(suggested()) {
            assert_eq!(errors(resource, obj.clone()), [], "{obj}");
        }
    }

    #[test]
    fn mandatory_objects_keep_their_fixed_spec() {
        let (_, mut catch_all) = mandatory()
            .into_iter()
            .find(|(r, o)| *r == FLOW_SCHEMAS && o["metadata"]["name"] == CATCH_ALL)
            .unwrap();
        catch_all["spec"]["matchingPrecedence"] = json!(9000);
        let e = errors(FLOW_SCHEMAS, catch_all);
        assert!(
            e.iter().any(|e| e.message.contains("must equal the fixed value")),
            "{e:?}"
        );
        // The exempt level's `spec.exempt` is the operator's.
        let (_, mut exempt) = mandatory()
            .into_iter()
            .find(|(r, o)| *r == PRIORITY_LEVELS && o["metadata"]["name"] == EXEMPT)
            .unwrap();
        exempt["spec"]["exempt"]["nominalConcurrencyShares"] = json!(10);
        assert_eq!(errors(PRIORITY_LEVELS, exempt), []);
    }

    #[test]
    fn bootstrap_keys_are_the_stores() {
        let keys = bootstrap_keys();
        assert_eq!(keys.len(), 19);
        assert!(keys.contains(&"/registry/flowcontrol.apiserver.k8s.io/flowschemas/global-default".to_owned()));
    }

    #[test]
    fn defaults_are_kubes() {
        let level = FlowControlStrategy
            .default(
                PRIORITY_LEVELS,
                json!({"spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}}),
            )
            .unwrap();
        assert_eq!(level["spec"]["limited"]["nominalConcurrencyShares"], 30);
        assert_eq!(level["spec"]["limited"]["lendablePercent"], 0);
        assert_eq!(
            level["spec"]["limited"]["limitResponse"]["queuing"],
            json!({"handSize": 8, "queues": 64, "queueLengthLimit": 50})
        );
        let schema = FlowControlStrategy.default(FLOW_SCHEMAS, json!({"spec": {}})).unwrap();
        assert_eq!(schema["spec"]["matchingPrecedence"], DEFAULT_PRECEDENCE);
    }

    #[test]
    fn bad_configurations_are_refused_with_kubes_messages() {
        let level = |spec: Value| json!({"metadata": {"name": "low"}, "spec": spec});
        let cases = [
            (
                level(json!({"type": "Exempt", "exempt": {}})),
                "spec.type",
                "type must be 'Exempt' if and only if name is 'exempt'",
            ),
            (
                level(json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue",
                    "queuing": {"queues": 128, "handSize": 10}}}})),
                "spec.limited.limitResponse.queuing.handSize",
                "required entropy bits of deckSize 128 and handSize 10 should not be greater than 60",
            ),
            (
                level(
                    json!({"type": "Limited", "limited": {"lendablePercent": 101, "limitResponse": {"type": "Reject"}}}),
                ),
                "spec.limited.lendablePercent",
                "must be between 0 and 100, inclusive",
            ),
            (
                level(json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue"}}})),
                "spec.limited.limitResponse.queuing",
                "must not be empty if limited.limitResponse.type is Limited",
            ),
        ];
        for (obj, field, detail) in cases {
            let e = errors(PRIORITY_LEVELS, obj);
            assert!(
                e.iter().any(|e| e.field == field && e.message.ends_with(detail)),
                "{field}: {e:?}"
            );
        }
        let schema = |rule: Value| {
            json!({"metadata": {"name": "s"}, "spec": {"priorityLevelConfiguration": {"name": "low"},
                "matchingPrecedence": 1, "rules": [rule]}})
        };
        let e = errors(
            FLOW_SCHEMAS,
            schema(json!({"subjects": [{"kind": "User", "group": {"name": "x"}}],
                "nonResourceRules": [{"verbs": ["get", "*"], "nonResourceURLs": ["/a*", "healthz"]}]})),
        );
        let has = |e: &[FieldError], detail: &str| e.iter().any(|e| e.message.ends_with(detail));
        for expected in [
            "only the schema named 'exempt' may have matchingPrecedence 1",
            "group is forbidden when subject kind is not 'Group'",
            "user is required when subject kind is 'User'",
            "if '*' is present, must not specify other verbs",
            "wildcard can only do suffix matching",
            "must start with slash",
        ] {
            assert!(has(&e, expected), "{expected}: {e:?}");
        }
        let e = errors(FLOW_SCHEMAS, schema(json!({"subjects": []})));
        assert!(has(&e, "subjects must contain at least one value"), "{e:?}");
        assert!(
            has(
                &e,
                "at least one of resourceRules and nonResourceRules has to be non-empty"
            ),
            "{e:?}"
        );
    }
}
