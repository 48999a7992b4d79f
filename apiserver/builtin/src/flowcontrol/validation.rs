//! The checks of kube's `pkg/apis/flowcontrol/validation` for FlowSchemas and PriorityLevelConfigurations, with its
//! messages.

use serde_json::Value;

use super::bootstrap::mandatory;
use super::{defaulted_spec, EXEMPT, FLOW_SCHEMAS, MAX_PRECEDENCE, PRIORITY_LEVELS};
use crate::{str_at, strs};
use apimachinery::plugin::FieldError;

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

pub(super) fn validate_flow_schema(obj: &Value, errors: &mut Vec<FieldError>) {
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

pub(super) fn validate_priority_level(obj: &Value, errors: &mut Vec<FieldError>) {
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

pub(super) fn validate_conditions(obj: &Value, errors: &mut Vec<FieldError>) {
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
