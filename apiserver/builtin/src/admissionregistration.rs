//! `admissionregistration.k8s.io/v1`: the cluster's admission configuration, cluster-scoped, as kube's
//! `pkg/registry/admissionregistration`:
//!
//! - MutatingWebhookConfiguration and ValidatingWebhookConfiguration: webhooks called on the writes their rules
//!   match;
//! - ValidatingAdmissionPolicy (with `/status`) and ValidatingAdmissionPolicyBinding: CEL validations of the
//!   writes a binding's policy matches.
//!
//! The host defaults and validates them as kube does (the defaults of `k8s.io/api/admissionregistration/v1`, the
//! checks of `pkg/apis/admissionregistration/validation` that matter to a dispatcher: names, client
//! configurations, rules, enumerations, timeouts, selectors, CEL expressions that compile); the `admission` crate
//! runs them.

use serde_json::{json, Value};

use super::{resource, set_default, str_at, strs};
use apimachinery::labels::LabelSelector;
use apimachinery::plugin::{FieldError, PluginError, Validation};
use apimachinery::scheme::Exports;
use apimachinery::scheme::GroupInfo;
use rest::plugin::Plugin;
use rest::strategy::Strategy;
use schema::cel::Expression;

/// The group.
pub const GROUP: &str = "admissionregistration.k8s.io";
/// Its version.
pub const VERSION: &str = "v1";
/// MutatingWebhookConfigurations.
pub const MUTATING_WEBHOOKS: &str = "mutatingwebhookconfigurations";
/// ValidatingWebhookConfigurations.
pub const VALIDATING_WEBHOOKS: &str = "validatingwebhookconfigurations";
/// ValidatingAdmissionPolicies.
pub const POLICIES: &str = "validatingadmissionpolicies";
/// ValidatingAdmissionPolicyBindings.
pub const BINDINGS: &str = "validatingadmissionpolicybindings";

/// The variables a webhook's `matchConditions` see (kube's `authorizer` is not offered: an expression naming it is
/// refused when written, rather than failing every write).
pub const WEBHOOK_VARIABLES: &[&str] = &["object", "oldObject", "request"];
/// The variables a policy's expressions see (without kube's `authorizer`, as for webhooks).
pub const POLICY_VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];

const OPERATIONS: [&str; 5] = ["*", "CREATE", "UPDATE", "DELETE", "CONNECT"];
const SCOPES: [&str; 3] = ["*", "Cluster", "Namespaced"];
const FAILURE_POLICIES: [&str; 2] = ["Fail", "Ignore"];
const MATCH_POLICIES: [&str; 2] = ["Exact", "Equivalent"];
const REINVOCATION_POLICIES: [&str; 2] = ["Never", "IfNeeded"];
const SIDE_EFFECTS: [&str; 2] = ["None", "NoneOnDryRun"];
const REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];
const VALIDATION_ACTIONS: [&str; 3] = ["Deny", "Warn", "Audit"];
const REASONS: [&str; 4] = ["Unauthorized", "Forbidden", "Invalid", "RequestEntityTooLarge"];

fn preserved(description: &str) -> Value {
    json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "description": description})
}

fn webhook_configuration_schema(kind: &str) -> Value {
    json!({
        "type": "object",
        "description": format!("{kind} describes the configuration of an admission webhook that accepts or rejects (and, if mutating, may change) an object."),
        "properties": {
            "webhooks": {
                "type": "array",
                "description": "Webhooks is a list of webhooks and the affected resources and operations.",
                "items": preserved("A webhook: name, clientConfig, rules, failurePolicy, matchPolicy, namespaceSelector, objectSelector, sideEffects, timeoutSeconds, admissionReviewVersions, reinvocationPolicy (mutating), matchConditions."),
            }
        }
    })
}

fn policy_schema() -> Value {
    json!({
        "type": "object",
        "description": "ValidatingAdmissionPolicy describes the definition of an admission validation policy that accepts or rejects an object without changing it.",
        "properties": {
            "spec": preserved("Specification of the desired behavior of the ValidatingAdmissionPolicy: paramKind, matchConstraints, validations, failurePolicy, auditAnnotations, matchConditions, variables."),
            "status": preserved("The status of the ValidatingAdmissionPolicy: observedGeneration, typeChecking, conditions.")
        }
    })
}

fn binding_schema() -> Value {
    json!({
        "type": "object",
        "description": "ValidatingAdmissionPolicyBinding binds the ValidatingAdmissionPolicy with paramerized resources.",
        "properties": {
            "spec": preserved("Specification of the desired behavior of the ValidatingAdmissionPolicyBinding: policyName, paramRef, matchResources, validationActions.")
        }
    })
}

/// `admissionregistration.k8s.io` as a built-in plugin.
pub fn plugin() -> Plugin {
    let api_extensions = |mut r: apimachinery::scheme::ResourceInfo| {
        r.categories = vec!["api-extensions".into()];
        r
    };
    let mut policies = api_extensions(resource(
        "ValidatingAdmissionPolicy",
        POLICIES,
        &[],
        false,
        VERSION,
        policy_schema(),
    ));
    policies.versions[0].subresources.status = true;
    let resources = vec![
        api_extensions(resource(
            "MutatingWebhookConfiguration",
            MUTATING_WEBHOOKS,
            &[],
            false,
            VERSION,
            webhook_configuration_schema("MutatingWebhookConfiguration"),
        )),
        api_extensions(resource(
            "ValidatingWebhookConfiguration",
            VALIDATING_WEBHOOKS,
            &[],
            false,
            VERSION,
            webhook_configuration_schema("ValidatingWebhookConfiguration"),
        )),
        policies,
        api_extensions(resource(
            "ValidatingAdmissionPolicyBinding",
            BINDINGS,
            &[],
            false,
            VERSION,
            binding_schema(),
        )),
    ];
    let group = GroupInfo {
        group: GROUP.into(),
        resources: apimachinery::scheme::shared(resources),
        reads: Vec::new(),
    };
    let exports = Exports {
        status: true,
        ..super::writable()
    };
    Plugin::native(
        "builtin:admissionregistration",
        group,
        exports,
        Vec::new(),
        Vec::new(),
        std::sync::Arc::new(AdmissionStrategy),
    )
}

struct AdmissionStrategy;

impl Strategy for AdmissionStrategy {
    fn default(&self, resource: &str, mut obj: Value) -> Result<Value, PluginError> {
        match resource {
            MUTATING_WEBHOOKS | VALIDATING_WEBHOOKS => {
                let mutating = resource == MUTATING_WEBHOOKS;
                if let Some(webhooks) = obj.get_mut("webhooks").and_then(Value::as_array_mut) {
                    for w in webhooks.iter_mut().filter(|w| w.is_object()) {
                        default_webhook(w, mutating);
                    }
                }
            }
            POLICIES => {
                if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
                    set_default(spec, "failurePolicy", json!("Fail"));
                    if let Some(m) = spec.get_mut("matchConstraints").filter(|m| m.is_object()) {
                        default_match_resources(m);
                    }
                }
            }
            BINDINGS => {
                if let Some(m) = obj.pointer_mut("/spec/matchResources").filter(|m| m.is_object()) {
                    default_match_resources(m);
                }
            }
            _ => {}
        }
        Ok(obj)
    }

    fn validate(&self, resource: &str, obj: &Value) -> Result<Validation, PluginError> {
        let mut errors = Vec::new();
        match resource {
            MUTATING_WEBHOOKS | VALIDATING_WEBHOOKS => {
                validate_webhooks(obj, resource == MUTATING_WEBHOOKS, &mut errors)
            }
            POLICIES => validate_policy(obj, &mut errors),
            BINDINGS => validate_binding(obj, &mut errors),
            _ => {}
        }
        Ok(Validation::of_errors(errors))
    }
}

/// kube's `SetDefaults_ValidatingWebhook` and `SetDefaults_MutatingWebhook`.
fn default_webhook(w: &mut Value, mutating: bool) {
    set_default(w, "failurePolicy", json!("Fail"));
    set_default(w, "matchPolicy", json!("Equivalent"));
    set_default(w, "namespaceSelector", json!({}));
    set_default(w, "objectSelector", json!({}));
    set_default(w, "timeoutSeconds", json!(10));
    if mutating {
        set_default(w, "reinvocationPolicy", json!("Never"));
    }
    if let Some(rules) = w.get_mut("rules").and_then(Value::as_array_mut) {
        for r in rules.iter_mut().filter(|r| r.is_object()) {
            set_default(r, "scope", json!("*"));
        }
    }
    if let Some(service) = w.pointer_mut("/clientConfig/service").filter(|s| s.is_object()) {
        set_default(service, "port", json!(443));
    }
}

/// kube's `SetDefaults_MatchResources`.
fn default_match_resources(m: &mut Value) {
    set_default(m, "matchPolicy", json!("Equivalent"));
    set_default(m, "namespaceSelector", json!({}));
    set_default(m, "objectSelector", json!({}));
    for rules in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = m.get_mut(rules).and_then(Value::as_array_mut) {
            for r in rules.iter_mut().filter(|r| r.is_object()) {
                set_default(r, "scope", json!("*"));
            }
        }
    }
}

fn one_of(value: &str, supported: &[&str], field: String, errors: &mut Vec<FieldError>) {
    if !supported.contains(&value) {
        errors.push(FieldError::not_supported(field, value, supported));
    }
}

fn validate_webhooks(obj: &Value, mutating: bool, errors: &mut Vec<FieldError>) {
    let webhooks = obj
        .get("webhooks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut names = Vec::new();
    for (i, w) in webhooks.iter().enumerate() {
        let at = |f: &str| format!("webhooks[{i}].{f}");
        let name = str_at(w, "/name");
        if name.is_empty() {
            errors.push(FieldError::required(at("name"), ""));
        } else if name.split('.').count() < 3 || !apimachinery::validation::is_dns1123_subdomain(name).is_empty() {
            errors.push(FieldError::invalid(
                at("name"),
                name,
                "should be a domain with at least three segments separated by dots",
            ));
        } else if names.contains(&name) {
            errors.push(FieldError::duplicate(at("name"), name));
        }
        names.push(name);
        validate_client_config(w.get("clientConfig"), &at("clientConfig"), errors);
        for (j, rule) in w
            .get("rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            validate_rule(rule, &at(&format!("rules[{j}]")), true, errors);
        }
        one_of(
            str_at(w, "/failurePolicy"),
            &FAILURE_POLICIES,
            at("failurePolicy"),
            errors,
        );
        one_of(str_at(w, "/matchPolicy"), &MATCH_POLICIES, at("matchPolicy"), errors);
        match w.get("sideEffects").and_then(Value::as_str) {
            None => errors.push(FieldError::required(at("sideEffects"), "")),
            Some(s) => one_of(s, &SIDE_EFFECTS, at("sideEffects"), errors),
        }
        if mutating {
            one_of(
                str_at(w, "/reinvocationPolicy"),
                &REINVOCATION_POLICIES,
                at("reinvocationPolicy"),
                errors,
            );
        }
        match w.get("timeoutSeconds").and_then(Value::as_i64) {
            Some(t) if (1..=30).contains(&t) => {}
            t => errors.push(FieldError::invalid(
                at("timeoutSeconds"),
                &t.map(|t| t.to_string()).unwrap_or_default(),
                "the timeout value must be between 1 and 30 seconds",
            )),
        }
        let versions = strs(w.get("admissionReviewVersions"));
        if versions.is_empty() {
            errors.push(FieldError::required(
                at("admissionReviewVersions"),
                "must specify one of v1, v1beta1",
            ));
        } else if !versions.iter().any(|v| REVIEW_VERSIONS.contains(v)) {
            errors.push(FieldError::invalid(
                at("admissionReviewVersions"),
                &versions.join(", "),
                "must include at least one of v1, v1beta1",
            ));
        }
        for selector in ["namespaceSelector", "objectSelector"] {
            if let Some(s) = w.get(selector) {
                if let Err(e) = LabelSelector::from_json(s) {
                    errors.push(FieldError::invalid(at(selector), "", &e.to_string()));
                }
            }
        }
        validate_named_expressions(
            w.get("matchConditions"),
            &at("matchConditions"),
            WEBHOOK_VARIABLES,
            errors,
        );
    }
}

fn validate_client_config(config: Option<&Value>, at: &str, errors: &mut Vec<FieldError>) {
    let config = config.cloned().unwrap_or(Value::Null);
    match (config.get("url").and_then(Value::as_str), config.get("service")) {
        (Some(_), Some(_)) | (None, None) => errors.push(FieldError::required(
            at.to_string(),
            "exactly one of url or service is required",
        )),
        (Some(url), None) => {
            if let Err(why) = check_url(url) {
                errors.push(FieldError::invalid(format!("{at}.url"), url, why));
            }
        }
        (None, Some(service)) => {
            for field in ["namespace", "name"] {
                if str_at(service, &format!("/{field}")).is_empty() {
                    errors.push(FieldError::required(format!("{at}.service.{field}"), ""));
                }
            }
            let path = str_at(service, "/path");
            if !path.is_empty() && !path.starts_with('/') {
                errors.push(FieldError::invalid(
                    format!("{at}.service.path"),
                    path,
                    "must start with a '/'",
                ));
            }
            if let Some(port) = service.get("port").and_then(Value::as_i64) {
                if !(1..=65535).contains(&port) {
                    errors.push(FieldError::invalid(
                        format!("{at}.service.port"),
                        &port.to_string(),
                        "port is not valid: must be between 1 and 65535, inclusive",
                    ));
                }
            }
        }
    }
}

/// kube's checks of a webhook URL: https, a host, no user, query or fragment.
fn check_url(url: &str) -> Result<(), &'static str> {
    let Some(rest) = url.strip_prefix("https://") else {
        return Err("'https' is the only allowed URL scheme");
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    if host.is_empty() {
        return Err("host must be specified");
    }
    if host.contains('@') {
        return Err("user information is not permitted in the URL");
    }
    if url.contains('#') {
        return Err("fragments are not permitted in the URL");
    }
    if url.contains('?') {
        return Err("query parameters are not permitted in the URL");
    }
    Ok(())
}

/// A rule with operations (`operations` required when `with_operations`).
fn validate_rule(rule: &Value, at: &str, with_operations: bool, errors: &mut Vec<FieldError>) {
    for field in ["apiGroups", "apiVersions", "resources"] {
        if strs(rule.get(field)).is_empty() {
            errors.push(FieldError::required(format!("{at}.{field}"), ""));
        }
    }
    let operations = strs(rule.get("operations"));
    if with_operations && operations.is_empty() {
        errors.push(FieldError::required(format!("{at}.operations"), ""));
    }
    for (k, op) in operations.iter().enumerate() {
        one_of(op, &OPERATIONS, format!("{at}.operations[{k}]"), errors);
    }
    if let Some(scope) = rule.get("scope").and_then(Value::as_str) {
        one_of(scope, &SCOPES, format!("{at}.scope"), errors);
    }
    for (k, r) in strs(rule.get("resources")).iter().enumerate() {
        if r.is_empty() || r.split('/').count() > 2 {
            errors.push(FieldError::invalid(
                format!("{at}.resources[{k}]"),
                r,
                "resource and subresource must be non-empty",
            ));
        }
    }
}

fn validate_expression(source: &str, field: String, variables: &[&str], errors: &mut Vec<FieldError>) {
    if source.trim().is_empty() {
        errors.push(FieldError::required(field, ""));
    } else if let Err(e) = Expression::compile(source, variables) {
        errors.push(FieldError::invalid(field, source, &e));
    }
}

/// A list of `{name, expression}` (match conditions, a policy's variables): names given and unique, expressions
/// that compile.
fn validate_named_expressions(conditions: Option<&Value>, at: &str, variables: &[&str], errors: &mut Vec<FieldError>) {
    let mut names = Vec::new();
    for (i, c) in conditions.and_then(Value::as_array).into_iter().flatten().enumerate() {
        let name = str_at(c, "/name");
        if name.is_empty() {
            errors.push(FieldError::required(format!("{at}[{i}].name"), ""));
        } else if names.contains(&name) {
            errors.push(FieldError::duplicate(format!("{at}[{i}].name"), name));
        }
        names.push(name);
        validate_expression(
            str_at(c, "/expression"),
            format!("{at}[{i}].expression"),
            variables,
            errors,
        );
    }
}

fn validate_match_resources(m: &Value, at: &str, rules_required: bool, errors: &mut Vec<FieldError>) {
    let rules = m.get("resourceRules").and_then(Value::as_array);
    if rules_required && rules.is_none_or(|r| r.is_empty()) {
        errors.push(FieldError::required(format!("{at}.resourceRules"), ""));
    }
    for list in ["resourceRules", "excludeResourceRules"] {
        for (j, rule) in m.get(list).and_then(Value::as_array).into_iter().flatten().enumerate() {
            validate_rule(rule, &format!("{at}.{list}[{j}]"), true, errors);
        }
    }
    one_of(
        m.get("matchPolicy").and_then(Value::as_str).unwrap_or("Equivalent"),
        &MATCH_POLICIES,
        format!("{at}.matchPolicy"),
        errors,
    );
    for selector in ["namespaceSelector", "objectSelector"] {
        if let Some(s) = m.get(selector) {
            if let Err(e) = LabelSelector::from_json(s) {
                errors.push(FieldError::invalid(format!("{at}.{selector}"), "", &e.to_string()));
            }
        }
    }
}

fn validate_policy(obj: &Value, errors: &mut Vec<FieldError>) {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    match spec.get("matchConstraints") {
        Some(m) => validate_match_resources(m, "spec.matchConstraints", true, errors),
        None => errors.push(FieldError::required("spec.matchConstraints", "")),
    }
    one_of(
        str_at(&spec, "/failurePolicy"),
        &FAILURE_POLICIES,
        "spec.failurePolicy".into(),
        errors,
    );
    if let Some(kind) = spec.get("paramKind") {
        for field in ["apiVersion", "kind"] {
            if str_at(kind, &format!("/{field}")).is_empty() {
                errors.push(FieldError::required(format!("spec.paramKind.{field}"), ""));
            }
        }
    }
    let validations = spec.get("validations").and_then(Value::as_array);
    let audits = spec.get("auditAnnotations").and_then(Value::as_array);
    if validations.is_none_or(|v| v.is_empty()) && audits.is_none_or(|a| a.is_empty()) {
        errors.push(FieldError::required(
            "spec.validations",
            "validations or auditAnnotations must contain at least one item",
        ));
    }
    validate_named_expressions(spec.get("variables"), "spec.variables", POLICY_VARIABLES, errors);
    for (i, v) in validations.into_iter().flatten().enumerate() {
        let at = |f: &str| format!("spec.validations[{i}].{f}");
        validate_expression(str_at(v, "/expression"), at("expression"), POLICY_VARIABLES, errors);
        let message = str_at(v, "/messageExpression");
        if !message.is_empty() {
            validate_expression(message, at("messageExpression"), POLICY_VARIABLES, errors);
        }
        if let Some(reason) = v.get("reason").and_then(Value::as_str) {
            one_of(reason, &REASONS, at("reason"), errors);
        }
    }
    for (i, a) in audits.into_iter().flatten().enumerate() {
        if str_at(a, "/key").is_empty() {
            errors.push(FieldError::required(format!("spec.auditAnnotations[{i}].key"), ""));
        }
        validate_expression(
            str_at(a, "/valueExpression"),
            format!("spec.auditAnnotations[{i}].valueExpression"),
            POLICY_VARIABLES,
            errors,
        );
    }
    validate_named_expressions(
        spec.get("matchConditions"),
        "spec.matchConditions",
        POLICY_VARIABLES,
        errors,
    );
}

fn validate_binding(obj: &Value, errors: &mut Vec<FieldError>) {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    if str_at(&spec, "/policyName").is_empty() {
        errors.push(FieldError::required("spec.policyName", ""));
    }
    let actions = strs(spec.get("validationActions"));
    if actions.is_empty() {
        errors.push(FieldError::required("spec.validationActions", ""));
    }
    for (i, a) in actions.iter().enumerate() {
        if actions[..i].contains(a) {
            errors.push(FieldError::duplicate(format!("spec.validationActions[{i}]"), a));
        }
        one_of(a, &VALIDATION_ACTIONS, format!("spec.validationActions[{i}]"), errors);
    }
    if actions.contains(&"Deny") && actions.contains(&"Warn") {
        errors.push(FieldError::invalid(
            "spec.validationActions",
            &actions.join(", "),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    if let Some(param) = spec.get("paramRef") {
        // As kube's `len(pr.Name) > 0` and `pr.Selector != nil`: protobuf clients always send a name, empty or not.
        let named = !super::str_at(param, "/name").is_empty();
        let selected = param.get("selector").is_some_and(|s| !s.is_null());
        match (named, selected) {
            (true, true) => errors.push(FieldError::forbidden(
                "spec.paramRef.name",
                "name and selector are mutually exclusive",
            )),
            (false, false) => errors.push(FieldError::required(
                "spec.paramRef",
                "one of name or selector must be specified",
            )),
            _ => {}
        }
        match param.get("parameterNotFoundAction").and_then(Value::as_str) {
            None => errors.push(FieldError::required("spec.paramRef.parameterNotFoundAction", "")),
            Some(a) => one_of(
                a,
                &["Allow", "Deny"],
                "spec.paramRef.parameterNotFoundAction".into(),
                errors,
            ),
        }
    }
    if let Some(m) = spec.get("matchResources") {
        validate_match_resources(m, "spec.matchResources", false, errors);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(resource: &str, obj: Value) -> Vec<String> {
        let strategy = AdmissionStrategy;
        let obj = strategy.default(resource, obj).unwrap();
        strategy
            .validate(resource, &obj)
            .unwrap()
            .errors
            .into_iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect()
    }

    #[test]
    fn webhooks_are_defaulted_and_validated_as_kube_does() {
        let strategy = AdmissionStrategy;
        let config = json!({"webhooks": [{
            "name": "deny.flunders.example.com",
            "clientConfig": {"url": "https://127.0.0.1:9443/deny"},
            "rules": [{"apiGroups": ["wardle.example.com"], "apiVersions": ["*"], "resources": ["flunders"], "operations": ["CREATE"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"]
        }]});
        let defaulted = strategy.default(MUTATING_WEBHOOKS, config.clone()).unwrap();
        let w = &defaulted["webhooks"][0];
        assert_eq!(w["failurePolicy"], "Fail");
        assert_eq!(w["matchPolicy"], "Equivalent");
        assert_eq!(w["timeoutSeconds"], 10);
        assert_eq!(w["reinvocationPolicy"], "Never");
        assert_eq!(w["rules"][0]["scope"], "*");
        assert_eq!(w["namespaceSelector"], json!({}));
        assert!(errors(MUTATING_WEBHOOKS, config.clone()).is_empty());

        let mut bad = config;
        let w = &mut bad["webhooks"][0];
        w["name"] = json!("short.name");
        w["clientConfig"]["url"] = json!("http://x/y");
        w["timeoutSeconds"] = json!(31);
        w["sideEffects"] = json!("Some");
        w["matchConditions"] = json!([{"name": "a", "expression": "object.("}]);
        let found = errors(VALIDATING_WEBHOOKS, bad).join("\n");
        for field in [
            "webhooks[0].name",
            "webhooks[0].clientConfig.url",
            "webhooks[0].timeoutSeconds",
            "webhooks[0].sideEffects",
            "webhooks[0].matchConditions[0].expression",
        ] {
            assert!(found.contains(field), "{field} not in {found}");
        }
    }

    #[test]
    fn policies_and_bindings_are_validated() {
        let policy = json!({"spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["*"], "apiVersions": ["*"], "resources": ["flunders"], "operations": ["CREATE"]}]},
            "validations": [{"expression": "object.spec.size < 10", "messageExpression": "'too big: ' + string(object.spec.size)"}]
        }});
        assert!(errors(POLICIES, policy).is_empty());
        let found = errors(
            POLICIES,
            json!({"spec": {"validations": [{"expression": "nope.x", "reason": "Bad"}]}}),
        )
        .join("\n");
        for field in [
            "spec.matchConstraints",
            "spec.validations[0].expression",
            "spec.validations[0].reason",
        ] {
            assert!(found.contains(field), "{field} not in {found}");
        }
        assert!(errors(
            BINDINGS,
            json!({"spec": {"policyName": "p", "validationActions": ["Deny"]}})
        )
        .is_empty());
        let found = errors(
            BINDINGS,
            json!({"spec": {"validationActions": ["Deny", "Warn", "Deny"]}}),
        )
        .join("\n");
        for field in [
            "spec.policyName",
            "spec.validationActions[2]",
            "must not contain both Deny and Warn",
        ] {
            assert!(found.contains(field), "{field} not in {found}");
        }
    }
}
