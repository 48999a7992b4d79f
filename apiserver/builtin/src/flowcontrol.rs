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

use super::{age_column, column, name_column, resource, set_default, str_at, strs};
use apimachinery::plugin::{FieldError, PluginError, Validation};
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

const VERBS: [&str; 9] = [
    "get",
    "list",
    "create",
    "update",
    "delete",
    "deletecollection",
    "patch",
    "watch",
    "proxy",
];
const SUBJECT_KINDS: [&str; 3] = ["ServiceAccount", "Group", "User"];
const DISTINGUISHERS: [&str; 2] = ["ByUser", "ByNamespace"];
const LEVEL_TYPES: [&str; 2] = ["Exempt", "Limited"];
const LIMIT_RESPONSES: [&str; 2] = ["Queue", "Reject"];
/// The most bits of entropy a level's shuffle sharding may take: `ceil(log2(queues) × handSize)`.
const MAX_HASH_BITS: f64 = 60.0;

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

fn one_of(value: &str, supported: &[&str], field: String, errors: &mut Vec<FieldError>) {
    if !supported.contains(&value) {
        errors.push(FieldError::not_supported(field, value, supported));
    }
}

fn subdomain(value: &str, field: String, errors: &mut Vec<FieldError>) {
    let problems = apimachinery::validation::is_dns1123_subdomain(value);
    if !problems.is_empty() {
        errors.push(FieldError::invalid(field, value, &problems.join("; ")));
    }
}

/// A list that holds `*` holds nothing else.
fn star_alone(values: &[&str], field: String, what: &str, errors: &mut Vec<FieldError>) {
    if values.len() > 1 && values.contains(&"*") {
        errors.push(FieldError::invalid(
            field,
            &values.join(", "),
            &format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

fn validate_verbs(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let verbs = strs(rule.get("verbs"));
    let field = format!("{at}.verbs");
    if verbs.is_empty() {
        errors.push(FieldError::required(field, "verbs must contain at least one value"));
    } else if verbs.contains(&"*") {
        star_alone(&verbs, field, "verbs", errors);
    } else {
        for v in verbs {
            one_of(v, &VERBS, field.clone(), errors);
        }
    }
}

/// The spec of a mandatory object (kube's `FlowSchemaMandatory...` and `PriorityLevelConfigurationMandatory...`),
/// defaulted.
fn mandatory_spec(resource: &str, name: &str) -> Option<Value> {
    mandatory()
        .into_iter()
        .find(|(r, o)| *r == resource && o["metadata"]["name"] == name)
        .map(|(r, o)| defaulted_spec(r, &o))
}

fn validate_flow_schema(obj: &Value, errors: &mut Vec<FieldError>) {
    let name = str_at(obj, "/metadata/name");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let level = str_at(spec, "/priorityLevelConfiguration/name");
    if level.is_empty() {
        errors.push(FieldError::required(
            "spec.priorityLevelConfiguration.name",
            "must reference a priority level",
        ));
    } else {
        subdomain(level, "spec.priorityLevelConfiguration.name".into(), errors);
    }
    let precedence = spec.get("matchingPrecedence").and_then(Value::as_i64).unwrap_or(0);
    let field = "spec.matchingPrecedence";
    if precedence <= 0 {
        errors.push(FieldError::invalid(
            field,
            &precedence.to_string(),
            "must be a positive value",
        ));
    } else if precedence > MAX_PRECEDENCE {
        errors.push(FieldError::invalid(
            field,
            &precedence.to_string(),
            "must not be greater than 10000",
        ));
    } else if precedence == 1 && name != EXEMPT {
        errors.push(FieldError::invalid(
            field,
            "1",
            "only the schema named 'exempt' may have matchingPrecedence 1",
        ));
    }
    if let Some(method) = spec.get("distinguisherMethod").filter(|m| !m.is_null()) {
        one_of(
            str_at(method, "/type"),
            &DISTINGUISHERS,
            "spec.distinguisherMethod.type".into(),
            errors,
        );
    }
    for (i, rule) in spec
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        validate_policy_rule(rule, &format!("spec.rules[{i}]"), errors);
    }
    if let Some(fixed) = mandatory_spec(FLOW_SCHEMAS, name) {
        if *spec != fixed {
            errors.push(FieldError::invalid(
                "spec",
                name,
                &format!("spec of '{name}' must equal the fixed value"),
            ));
        }
    }
    validate_conditions(obj, errors);
}

fn validate_policy_rule(rule: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let subjects = rule.get("subjects").and_then(Value::as_array);
    if subjects.is_none_or(Vec::is_empty) {
        errors.push(FieldError::required(
            format!("{at}.subjects"),
            "subjects must contain at least one value",
        ));
    }
    for (i, subject) in subjects.into_iter().flatten().enumerate() {
        validate_subject(subject, &format!("{at}.subjects[{i}]"), errors);
    }
    let resource_rules = rule.get("resourceRules").and_then(Value::as_array);
    let non_resource_rules = rule.get("nonResourceRules").and_then(Value::as_array);
    if resource_rules.is_none_or(Vec::is_empty) && non_resource_rules.is_none_or(Vec::is_empty) {
        errors.push(FieldError::required(
            at.to_owned(),
            "at least one of resourceRules and nonResourceRules has to be non-empty",
        ));
    }
    for (i, r) in resource_rules.into_iter().flatten().enumerate() {
        let at = format!("{at}.resourceRules[{i}]");
        validate_verbs(r, &at, errors);
        for (field, what) in [("apiGroups", "api groups"), ("resources", "resources")] {
            let values = strs(r.get(field));
            if values.is_empty() {
                let singular = what.trim_end_matches('s');
                errors.push(FieldError::required(
                    format!("{at}.{field}"),
                    &format!("resource rules must supply at least one {singular}"),
                ));
            }
            star_alone(&values, format!("{at}.{field}"), what, errors);
        }
        let namespaces = strs(r.get("namespaces"));
        let cluster_scope = r.get("clusterScope").and_then(Value::as_bool).unwrap_or(false);
        if namespaces.is_empty() && !cluster_scope {
            errors.push(FieldError::required(
                format!("{at}.namespaces"),
                "resource rules that are not cluster scoped must supply at least one namespace",
            ));
        } else if namespaces.contains(&"*") {
            star_alone(&namespaces, format!("{at}.namespaces"), "namespaces", errors);
        } else {
            for (j, ns) in namespaces.iter().enumerate() {
                let problems = apimachinery::validation::is_dns1123_label(ns);
                if !problems.is_empty() {
                    errors.push(FieldError::invalid(
                        format!("{at}.namespaces[{j}]"),
                        ns,
                        &format!(
                            "each member of this list must be '*' or a DNS-1123 label; {}",
                            problems.join("; ")
                        ),
                    ));
                }
            }
        }
    }
    for (i, r) in non_resource_rules.into_iter().flatten().enumerate() {
        let at = format!("{at}.nonResourceRules[{i}]");
        validate_verbs(r, &at, errors);
        let urls = strs(r.get("nonResourceURLs"));
        let field = format!("{at}.nonResourceURLs");
        if urls.is_empty() {
            errors.push(FieldError::required(
                field,
                "nonResourceURLs must contain at least one value",
            ));
        } else if urls.contains(&"*") {
            star_alone(&urls, field, "non-resource URLs", errors);
        } else {
            for (j, url) in urls.iter().enumerate() {
                if let Some(problem) = non_resource_url_problem(url) {
                    errors.push(FieldError::invalid(format!("{field}[{j}]"), url, problem));
                }
            }
        }
    }
}

/// kube's `ValidateNonResourceURLPath`.
fn non_resource_url_problem(url: &str) -> Option<&'static str> {
    if url.is_empty() {
        return Some("must not be empty");
    }
    if url == "/" {
        return None;
    }
    if !url.starts_with('/') {
        return Some("must start with slash");
    }
    if url.contains(char::is_whitespace) {
        return Some("must not contain white-space");
    }
    if url.contains("//") {
        return Some("must not contain double slash");
    }
    let stars = url.matches('*').count();
    if stars > 1 || (stars == 1 && !url.ends_with("/*")) {
        return Some("wildcard can only do suffix matching");
    }
    None
}

fn validate_subject(subject: &Value, at: &str, errors: &mut Vec<FieldError>) {
    let kind = str_at(subject, "/kind");
    one_of(kind, &SUBJECT_KINDS, format!("{at}.kind"), errors);
    for (field, of_kind) in [
        ("user", "User"),
        ("group", "Group"),
        ("serviceAccount", "ServiceAccount"),
    ] {
        let set = subject.get(field).is_some_and(|v| !v.is_null());
        if set && kind != of_kind {
            errors.push(FieldError::forbidden(
                format!("{at}.{field}"),
                &format!("{field} is forbidden when subject kind is not '{of_kind}'"),
            ));
        } else if !set && kind == of_kind {
            errors.push(FieldError::required(
                format!("{at}.{field}"),
                &format!("{field} is required when subject kind is '{of_kind}'"),
            ));
        }
    }
    match kind {
        "User" | "Group" => {
            let field = if kind == "User" { "user" } else { "group" };
            if subject.get(field).is_some() && str_at(subject, &format!("/{field}/name")).is_empty() {
                errors.push(FieldError::required(format!("{at}.{field}.name"), "name is required"));
            }
        }
        "ServiceAccount" if subject.get("serviceAccount").is_some() => {
            let (namespace, name) = (
                str_at(subject, "/serviceAccount/namespace"),
                str_at(subject, "/serviceAccount/name"),
            );
            if name.is_empty() {
                errors.push(FieldError::required(format!("{at}.serviceAccount.name"), ""));
            } else if name != "*" {
                subdomain(name, format!("{at}.serviceAccount.name"), errors);
            }
            if namespace.is_empty() {
                errors.push(FieldError::required(
                    format!("{at}.serviceAccount.namespace"),
                    "must specify namespace for service account",
                ));
            } else {
                let problems = apimachinery::validation::is_dns1123_label(namespace);
                if !problems.is_empty() {
                    errors.push(FieldError::invalid(
                        format!("{at}.serviceAccount.namespace"),
                        namespace,
                        &problems.join("; "),
                    ));
                }
            }
        }
        _ => {}
    }
}

fn percent(v: Option<&Value>, field: String, errors: &mut Vec<FieldError>) {
    if let Some(p) = v.and_then(Value::as_i64) {
        if !(0..=100).contains(&p) {
            errors.push(FieldError::invalid(
                field,
                &p.to_string(),
                "must be between 0 and 100, inclusive",
            ));
        }
    }
}

fn non_negative(v: Option<&Value>, field: String, errors: &mut Vec<FieldError>) {
    if let Some(n) = v.and_then(Value::as_i64) {
        if n < 0 {
            errors.push(FieldError::invalid(
                field,
                &n.to_string(),
                "must be a non-negative integer",
            ));
        }
    }
}

fn validate_priority_level(obj: &Value, errors: &mut Vec<FieldError>) {
    let name = str_at(obj, "/metadata/name");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let type_ = str_at(spec, "/type");
    one_of(type_, &LEVEL_TYPES, "spec.type".into(), errors);
    if (type_ == "Exempt") != (name == EXEMPT) && LEVEL_TYPES.contains(&type_) {
        errors.push(FieldError::invalid(
            "spec.type",
            type_,
            "type must be 'Exempt' if and only if name is 'exempt'",
        ));
    }
    let limited = spec.get("limited").filter(|l| !l.is_null());
    let exempt = spec.get("exempt").filter(|e| !e.is_null());
    match type_ {
        "Exempt" => {
            if limited.is_some() {
                errors.push(FieldError::forbidden(
                    "spec.limited",
                    "must be nil if the type is not Limited",
                ));
            }
            if let Some(exempt) = exempt {
                non_negative(
                    exempt.get("nominalConcurrencyShares"),
                    "spec.exempt.nominalConcurrencyShares".into(),
                    errors,
                );
                percent(
                    exempt.get("lendablePercent"),
                    "spec.exempt.lendablePercent".into(),
                    errors,
                );
            }
        }
        "Limited" => {
            if exempt.is_some() {
                errors.push(FieldError::forbidden(
                    "spec.exempt",
                    "must be nil if the type is Limited",
                ));
            }
            match limited {
                None => errors.push(FieldError::required(
                    "spec.limited",
                    "must not be empty when type is Limited",
                )),
                Some(limited) => validate_limited(limited, errors),
            }
        }
        _ => {}
    }
    if let Some(mut fixed) = mandatory_spec(PRIORITY_LEVELS, name) {
        let mut spec = spec.clone();
        let (message, field) = if name == EXEMPT {
            // The exempt level's `spec.exempt` is the operator's.
            if let (Some(s), Some(f)) = (spec.as_object_mut(), fixed.as_object_mut()) {
                s.remove("exempt");
                f.remove("exempt");
            }
            (
                "spec of 'exempt' except the 'spec.exempt' field must equal the fixed value".to_owned(),
                "spec",
            )
        } else {
            (format!("spec of '{name}' must equal the fixed value"), "spec")
        };
        if spec != fixed {
            errors.push(FieldError::invalid(field, name, &message));
        }
    }
    validate_conditions(obj, errors);
}

fn validate_limited(limited: &Value, errors: &mut Vec<FieldError>) {
    non_negative(
        limited.get("nominalConcurrencyShares"),
        "spec.limited.nominalConcurrencyShares".into(),
        errors,
    );
    percent(
        limited.get("lendablePercent"),
        "spec.limited.lendablePercent".into(),
        errors,
    );
    non_negative(
        limited.get("borrowingLimitPercent"),
        "spec.limited.borrowingLimitPercent".into(),
        errors,
    );
    let response = limited.get("limitResponse").unwrap_or(&Value::Null);
    let type_ = str_at(response, "/type");
    one_of(
        type_,
        &LIMIT_RESPONSES,
        "spec.limited.limitResponse.type".into(),
        errors,
    );
    let queuing = response.get("queuing").filter(|q| !q.is_null());
    match (type_, queuing) {
        ("Reject", Some(_)) => errors.push(FieldError::forbidden(
            "spec.limited.limitResponse.queuing",
            "must be nil if limited.limitResponse.type is not Limited",
        )),
        ("Queue", None) => errors.push(FieldError::required(
            "spec.limited.limitResponse.queuing",
            "must not be empty if limited.limitResponse.type is Limited",
        )),
        ("Queue", Some(q)) => validate_queuing(q, errors),
        _ => {}
    }
}

fn validate_queuing(q: &Value, errors: &mut Vec<FieldError>) {
    let at = |f: &str| format!("spec.limited.limitResponse.queuing.{f}");
    let get = |f: &str| q.get(f).and_then(Value::as_i64).unwrap_or(0);
    let (queues, hand, length) = (get("queues"), get("handSize"), get("queueLengthLimit"));
    if length <= 0 {
        errors.push(FieldError::invalid(
            at("queueLengthLimit"),
            &length.to_string(),
            "must be positive",
        ));
    }
    if queues <= 0 {
        errors.push(FieldError::invalid(
            at("queues"),
            &queues.to_string(),
            "must be positive",
        ));
    } else if queues > 10_000_000 {
        errors.push(FieldError::invalid(
            at("queues"),
            &queues.to_string(),
            "must not be greater than 10000000",
        ));
    }
    if hand <= 0 {
        errors.push(FieldError::invalid(
            at("handSize"),
            &hand.to_string(),
            "must be positive",
        ));
    } else if queues > 0 && hand > queues {
        errors.push(FieldError::invalid(
            at("handSize"),
            &hand.to_string(),
            &format!("should not be greater than queues ({queues})"),
        ));
    } else if queues > 0 && ((queues as f64).log2() * hand as f64).ceil() > MAX_HASH_BITS {
        errors.push(FieldError::invalid(
            at("handSize"),
            &hand.to_string(),
            &format!("required entropy bits of deckSize {queues} and handSize {hand} should not be greater than 60"),
        ));
    }
}

fn validate_conditions(obj: &Value, errors: &mut Vec<FieldError>) {
    let mut seen = Vec::new();
    for (i, c) in obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let type_ = str_at(c, "/type");
        let field = format!("status.conditions[{i}].type");
        if type_.is_empty() {
            errors.push(FieldError::required(field, "must not be empty"));
        } else if seen.contains(&type_) {
            errors.push(FieldError::duplicate(field, type_));
        }
        seen.push(type_);
    }
}

// The bootstrap configuration: kube's `pkg/apis/flowcontrol/bootstrap`.

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

fn storage_key(resource: &str, name: &str) -> String {
    format!("/registry/{GROUP}/{resource}/{name}")
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
