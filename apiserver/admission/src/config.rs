//! The admission configuration as the dispatchers use it: every webhook of the Mutating- and
//! ValidatingWebhookConfigurations, every ValidatingAdmissionPolicy and Binding, parsed once (selectors parsed,
//! CEL compiled) per version of the objects, and how a write is matched against their rules (kube's
//! `admission/plugin/webhook/predicates` and `policy/matching`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::request::Request;
use apimachinery::labels::LabelSelector;
use apimachinery::plugin::Operation;
use builtin::admissionregistration::{
    BINDINGS, MUTATING_WEBHOOKS, POLICIES, POLICY_VARIABLES, VALIDATING_WEBHOOKS, WEBHOOK_VARIABLES,
};
use builtin::owned_strings as strings;
use builtin::str_at;
use schema::cel::Expression;

/// The configuration objects, by resource, as read (name → object).
#[derive(Default, Clone, PartialEq)]
pub struct Objects {
    /// MutatingWebhookConfigurations.
    pub mutating: BTreeMap<String, Value>,
    /// ValidatingWebhookConfigurations.
    pub validating: BTreeMap<String, Value>,
    /// ValidatingAdmissionPolicies.
    pub policies: BTreeMap<String, Value>,
    /// ValidatingAdmissionPolicyBindings.
    pub bindings: BTreeMap<String, Value>,
}

/// The four resources of the configuration.
pub const RESOURCES: [&str; 4] = [MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, POLICIES, BINDINGS];

impl Objects {
    /// The objects of one of the [`RESOURCES`].
    pub fn of_mut(&mut self, resource: &str) -> &mut BTreeMap<String, Value> {
        match resource {
            MUTATING_WEBHOOKS => &mut self.mutating,
            VALIDATING_WEBHOOKS => &mut self.validating,
            POLICIES => &mut self.policies,
            _ => &mut self.bindings,
        }
    }
}

/// What the dispatchers run: compiled from [`Objects`].
#[derive(Default)]
pub struct Snapshot {
    /// The mutating webhooks, in the order kube calls them (configurations by name, then their webhooks in order).
    pub mutating: Vec<Arc<Webhook>>,
    /// The validating webhooks.
    pub validating: Vec<Arc<Webhook>>,
    /// The bindings with their policy (bindings by name; a binding whose policy is missing is left out).
    pub bindings: Vec<Arc<BoundPolicy>>,
}

impl Snapshot {
    /// Compiles the objects; a webhook or policy that cannot be read (an object stored before validation, or
    /// read from another server) is kept with its error, which fails its calls by its failure policy.
    pub fn compile(objects: &Objects, cluster: bool) -> Snapshot {
        let webhooks = |configs: &BTreeMap<String, Value>, mutating: bool| {
            configs
                .iter()
                .flat_map(|(name, config)| {
                    config
                        .get("webhooks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .map(move |w| Arc::new(Webhook::of(name, w, mutating)))
                })
                .collect()
        };
        let bindings = objects
            .bindings
            .iter()
            .filter_map(|(name, binding)| {
                let policy_name = str_at(binding, "/spec/policyName");
                let policy = objects.policies.get(policy_name)?;
                let mut bound = BoundPolicy::of(name, binding, policy_name, policy);
                bound.cluster = cluster;
                Some(Arc::new(bound))
            })
            .collect();
        Snapshot {
            mutating: webhooks(&objects.mutating, true),
            validating: webhooks(&objects.validating, false),
            bindings,
        }
    }

    /// Adds `other`'s webhooks and bindings after these.
    pub fn append(&mut self, other: Snapshot) {
        self.mutating.extend(other.mutating);
        self.validating.extend(other.validating);
        self.bindings.extend(other.bindings);
    }

    /// Whether there is nothing to run.
    pub fn is_empty(&self) -> bool {
        self.mutating.is_empty() && self.validating.is_empty() && self.bindings.is_empty()
    }
}

/// One rule of a webhook or a policy's resource rules.
#[derive(Debug, Clone)]
pub struct Rule {
    /// A policy rule's `resourceNames` (empty: any name).
    names: Vec<String>,
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    operations: Vec<String>,
    scope: String,
}

fn any_or(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

impl Rule {
    fn of(rule: &Value) -> Rule {
        Rule {
            names: strings(rule.get("resourceNames")),
            groups: strings(rule.get("apiGroups")),
            versions: strings(rule.get("apiVersions")),
            resources: strings(rule.get("resources")),
            operations: strings(rule.get("operations")),
            scope: rule.get("scope").and_then(Value::as_str).unwrap_or("*").to_owned(),
        }
    }

    fn all(rules: Option<&Value>) -> Vec<Rule> {
        rules
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(Rule::of)
            .collect()
    }

    /// kube's `rules.Matcher`: operation, group, version, resource and subresource (`*`, `*/*`, `r/*`, `*/s`),
    /// scope (and a policy rule's `resourceNames`, checked by [`Constraints::matching_version`]).
    fn matches(&self, op: Operation, group: &str, version: &str, resource: &str, sub: &str, namespaced: bool) -> bool {
        let operation = match op {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        };
        any_or(&self.operations, operation)
            && any_or(&self.groups, group)
            && any_or(&self.versions, version)
            && self.resources.iter().any(|r| {
                let (res, rsub) = r.split_once('/').unwrap_or((r, ""));
                match (res, rsub) {
                    ("*", "*") => true,
                    ("*", "") => sub.is_empty(),
                    ("*", s) => s == sub,
                    (res, "*") => res == resource,
                    (res, s) => res == resource && s == sub,
                }
            })
            && match self.scope.as_str() {
                "Cluster" => !namespaced,
                "Namespaced" => namespaced,
                _ => true,
            }
    }
}

/// Which rules a write matches, and in which version (kube's `matchPolicy`).
#[derive(Debug, Clone)]
pub struct Constraints {
    rules: Vec<Rule>,
    excluded: Vec<Rule>,
    equivalent: bool,
    /// The selectors, or the error that makes them unusable.
    pub namespace_selector: Result<LabelSelector, String>,
    /// The object selector.
    pub object_selector: Result<LabelSelector, String>,
}

fn selector(v: Option<&Value>) -> Result<LabelSelector, String> {
    match v {
        None | Some(Value::Null) => Ok(LabelSelector::everything()),
        Some(s) => LabelSelector::from_json(s).map_err(|e| e.to_string()),
    }
}

impl Constraints {
    fn of(rules: Option<&Value>, excluded: Option<&Value>, at: &Value) -> Constraints {
        Constraints {
            rules: Rule::all(rules),
            excluded: Rule::all(excluded),
            equivalent: at.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
            namespace_selector: selector(at.get("namespaceSelector")),
            object_selector: selector(at.get("objectSelector")),
        }
    }

    /// Whether the write `r` passes these selectors: the namespace's labels (a Namespace's own for a Namespace;
    /// every cluster-scoped write passes) and the object's or the old object's labels.
    pub(crate) async fn select(&self, r: &Request<'_>) -> Result<bool, String> {
        let namespace_selector = self.namespace_selector.as_ref().map_err(Clone::clone)?;
        let object_selector = self.object_selector.as_ref().map_err(Clone::clone)?;
        let a = r.attributes;
        let none = serde_json::Map::new();
        if !namespace_selector.is_empty() {
            let selected = if a.group.is_empty() && a.resource == "namespaces" {
                namespace_selector.matches(labels_of(a.object.or(a.old), &none))
            } else if a.namespace.is_some() {
                namespace_selector.matches(labels_of(r.namespace_object().await, &none))
            } else {
                true
            };
            if !selected {
                return Ok(false);
            }
        }
        // kube's matchObject: an object that is not there (the old object of a create, the new one of a delete)
        // matches no selector but the empty one.
        let matches = |o: Option<&Value>| o.is_some() && object_selector.matches(labels_of(o, &none));
        if !object_selector.is_empty() && !matches(a.object) && !matches(a.old) {
            return Ok(false);
        }
        Ok(true)
    }

    /// The version whose rules the write matches: the request's own, or with `Equivalent` another served version
    /// of the same resource (the object is then converted to it); `None` if none matches. `any_rules`: no rules
    /// at all matches every write (a binding's optional `matchResources`).
    pub fn matching_version<'a>(&self, r: &Request<'a>, any_rules: bool) -> Option<String> {
        let a = &r.attributes;
        let namespaced = a.namespace.is_some();
        let hit = |rules: &[Rule], version: &str| {
            rules.iter().any(|rule| {
                rule.matches(a.operation, a.group, version, a.resource, a.subresource, namespaced)
                    && (rule.names.is_empty() || rule.names.iter().any(|n| n == a.name))
            })
        };
        let versions = || {
            std::iter::once(a.version).chain(
                a.info
                    .versions
                    .iter()
                    .filter(|v| self.equivalent && v.served && v.name != a.version)
                    .map(|v| v.name.as_str()),
            )
        };
        // Excluded in any equivalent version is excluded (kube's `matchPolicy` applies to the exclusions too).
        if versions().any(|v| hit(&self.excluded, v)) {
            return None;
        }
        if any_rules && self.rules.is_empty() {
            return Some(a.version.to_owned());
        }
        versions().find(|v| hit(&self.rules, v)).map(str::to_owned)
    }
}

/// A compiled CEL condition: its name and expression, or the compile error.
pub struct Condition {
    /// Its name.
    pub name: String,
    /// The expression, or why it does not compile.
    pub expression: Result<Expression, String>,
}

/// kube's match conditions: all true to match; any false does not match, whatever the others' errors; else the
/// first error (subject to the failure policy).
pub fn conditions_hold(conditions: &[Condition], bindings: &schema::cel::Bindings) -> Result<bool, String> {
    let mut error = None;
    for c in conditions {
        let outcome = match &c.expression {
            Err(e) => Err(format!("failed to compile matchCondition {:?}: {e}", c.name)),
            Ok(e) => match e.evaluate(bindings) {
                Ok(v) => v
                    .as_bool()
                    .ok_or_else(|| format!("matchCondition {:?} did not evaluate to a bool", c.name)),
                Err(e) => Err(format!("failed to evaluate matchCondition {:?}: {e}", c.name)),
            },
        };
        match outcome {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    error.map_or(Ok(true), Err)
}

fn conditions(v: Option<&Value>, variables: &[&str]) -> Vec<Condition> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| Condition {
            name: str_at(c, "/name").to_owned(),
            expression: Expression::compile(str_at(c, "/expression"), variables),
        })
        .collect()
}

/// Where a webhook is called.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// `clientConfig.url`, or the URL of `clientConfig.service` (`https://<name>.<namespace>.svc:<port><path>`,
    /// kube's default service resolver).
    Url(String),
    /// The configuration cannot be used.
    Invalid(String),
}

/// One webhook.
pub struct Webhook {
    /// Its configuration's name.
    pub configuration: String,
    /// Its name.
    pub name: String,
    /// Where to call it.
    pub endpoint: Endpoint,
    /// `clientConfig.caBundle`, decoded (PEM).
    pub ca_bundle: Vec<u8>,
    /// What it matches.
    pub constraints: Constraints,
    /// `failurePolicy: Ignore`.
    pub ignore_failures: bool,
    /// `timeoutSeconds`.
    pub timeout: Duration,
    /// Whether it is a mutating webhook (else a validating one, which may not answer with a patch).
    pub mutating: bool,
    /// `reinvocationPolicy: IfNeeded` (mutating only).
    pub reinvoke: bool,
    /// `matchConditions`.
    pub conditions: Vec<Condition>,
    /// The AdmissionReview version sent: the first of its `admissionReviewVersions` known (v1 or v1beta1, the same
    /// shape), as kube picks it; `None` when it names neither.
    pub review_version: Option<&'static str>,
}

impl Webhook {
    fn of(configuration: &str, w: &Value, mutating: bool) -> Webhook {
        use base64::Engine as _;
        let client = w.get("clientConfig").cloned().unwrap_or(Value::Null);
        let endpoint = match (client.get("url").and_then(Value::as_str), client.get("service")) {
            (Some(url), _) => Endpoint::Url(url.to_owned()),
            (None, Some(service)) => Endpoint::Url(format!(
                "https://{}.{}.svc:{}{}",
                str_at(service, "/name"),
                str_at(service, "/namespace"),
                service.get("port").and_then(Value::as_i64).unwrap_or(443),
                str_at(service, "/path"),
            )),
            (None, None) => Endpoint::Invalid("the webhook has neither a url nor a service".into()),
        };
        let ca_bundle = client
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default();
        let versions = strings(w.get("admissionReviewVersions"));
        Webhook {
            configuration: configuration.to_owned(),
            name: str_at(w, "/name").to_owned(),
            endpoint,
            ca_bundle,
            constraints: Constraints::of(w.get("rules"), None, w),
            ignore_failures: str_at(w, "/failurePolicy") == "Ignore",
            timeout: Duration::from_secs(
                w.get("timeoutSeconds")
                    .and_then(Value::as_u64)
                    .unwrap_or(10)
                    .clamp(1, 30),
            ),
            mutating,
            reinvoke: mutating && str_at(w, "/reinvocationPolicy") == "IfNeeded",
            conditions: conditions(w.get("matchConditions"), WEBHOOK_VARIABLES),
            review_version: versions.iter().find_map(|v| match v.as_str() {
                "v1" => Some("v1"),
                "v1beta1" => Some("v1beta1"),
                _ => None,
            }),
        }
    }
}

/// One validation of a policy.
pub struct Validation {
    /// The expression, or its compile error.
    pub expression: Result<Expression, String>,
    /// Its text.
    pub source: String,
    /// `message`.
    pub message: String,
    /// `messageExpression`, compiled.
    pub message_expression: Option<Result<Expression, String>>,
    /// `reason` (Invalid by default).
    pub reason: String,
}

/// A binding with its policy.
pub struct BoundPolicy {
    /// The binding's name.
    pub binding: String,
    /// The policy's name.
    pub policy: String,
    /// The policy's match constraints.
    pub policy_constraints: Constraints,
    /// The binding's `matchResources` (every write the policy matches, when absent).
    pub binding_constraints: Constraints,
    /// `failurePolicy: Ignore`.
    pub ignore_failures: bool,
    /// The policy's `matchConditions`.
    pub conditions: Vec<Condition>,
    /// The policy's `variables`, in order.
    pub variables: Vec<(String, Result<Expression, String>)>,
    /// The policy's validations.
    pub validations: Vec<Validation>,
    /// `paramKind` (apiVersion, kind), if the policy has parameters.
    pub param_kind: Option<(String, String)>,
    /// The binding's `paramRef`.
    pub param_ref: Option<Value>,
    /// `validationActions`: Deny, Warn, Audit.
    pub deny: bool,
    /// Warn.
    pub warn: bool,
    /// Audit: a failed validation is an audit annotation (`validation.policy.admission.k8s.io/validation_failure`).
    pub audit: bool,
    /// The binding's `validationActions`, as written (the annotation names them).
    pub actions: Vec<String>,
    /// The policy's `auditAnnotations`: key and `valueExpression`, compiled.
    pub audit_annotations: Vec<(String, Result<Expression, String>)>,
    /// The cluster's (read with `--kubeconfig`), not the tenant's.
    pub cluster: bool,
}

impl BoundPolicy {
    fn of(binding_name: &str, binding: &Value, policy_name: &str, policy: &Value) -> BoundPolicy {
        let spec = policy.get("spec").cloned().unwrap_or(Value::Null);
        let constraints = spec.get("matchConstraints").cloned().unwrap_or(Value::Null);
        let binding_match = binding.pointer("/spec/matchResources").cloned().unwrap_or(Value::Null);
        let actions = strings(binding.pointer("/spec/validationActions"));
        let compile = |source: &str| Expression::compile(source, POLICY_VARIABLES);
        BoundPolicy {
            binding: binding_name.to_owned(),
            policy: policy_name.to_owned(),
            policy_constraints: Constraints::of(
                constraints.get("resourceRules"),
                constraints.get("excludeResourceRules"),
                &constraints,
            ),
            binding_constraints: Constraints::of(
                binding_match.get("resourceRules"),
                binding_match.get("excludeResourceRules"),
                &binding_match,
            ),
            ignore_failures: str_at(&spec, "/failurePolicy") == "Ignore",
            conditions: conditions(spec.get("matchConditions"), POLICY_VARIABLES),
            variables: spec
                .get("variables")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|v| (str_at(v, "/name").to_owned(), compile(str_at(v, "/expression"))))
                .collect(),
            validations: spec
                .get("validations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|v| {
                    let message_expression = str_at(v, "/messageExpression");
                    Validation {
                        expression: compile(str_at(v, "/expression")),
                        source: str_at(v, "/expression").to_owned(),
                        message: str_at(v, "/message").to_owned(),
                        message_expression: (!message_expression.is_empty()).then(|| compile(message_expression)),
                        reason: match str_at(v, "/reason") {
                            "" => "Invalid".to_owned(),
                            r => r.to_owned(),
                        },
                    }
                })
                .collect(),
            param_kind: spec
                .get("paramKind")
                .map(|k| (str_at(k, "/apiVersion").to_owned(), str_at(k, "/kind").to_owned())),
            param_ref: binding.pointer("/spec/paramRef").cloned(),
            deny: actions.iter().any(|a| a == "Deny"),
            warn: actions.iter().any(|a| a == "Warn"),
            audit: actions.iter().any(|a| a == "Audit"),
            audit_annotations: spec
                .get("auditAnnotations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| (str_at(a, "/key").to_owned(), compile(str_at(a, "/valueExpression"))))
                .collect(),
            actions,
            cluster: false,
        }
    }
}

/// An object's labels (none for a missing object, or one without).
fn labels_of<'v>(
    object: Option<&'v Value>,
    none: &'v serde_json::Map<String, Value>,
) -> &'v serde_json::Map<String, Value> {
    object
        .and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .unwrap_or(none)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rules_match_as_kubes_rule_matcher() {
        let rule = |resources: Value, scope: &str| {
            Rule::of(
                &json!({"apiGroups": ["g"], "apiVersions": ["v1"], "resources": resources, "operations": ["CREATE", "UPDATE"], "scope": scope}),
            )
        };
        let create = |r: &Rule, resource: &str, sub: &str, namespaced: bool| {
            r.matches(Operation::Create, "g", "v1", resource, sub, namespaced)
        };
        let plain = rule(json!(["flunders"]), "*");
        assert!(create(&plain, "flunders", "", true));
        assert!(!create(&plain, "flunders", "status", true));
        assert!(!create(&plain, "fischers", "", true));
        assert!(!plain.matches(Operation::Delete, "g", "v1", "flunders", "", true));
        assert!(!plain.matches(Operation::Create, "other", "v1", "flunders", "", true));
        assert!(!plain.matches(Operation::Create, "g", "v2", "flunders", "", true));
        let all = rule(json!(["*"]), "*");
        assert!(create(&all, "fischers", "", false) && !create(&all, "fischers", "status", false));
        let everything = rule(json!(["*/*"]), "*");
        assert!(create(&everything, "fischers", "status", false));
        let subresources = rule(json!(["flunders/*"]), "*");
        assert!(
            create(&subresources, "flunders", "status", true) && !create(&subresources, "fischers", "status", true)
        );
        let statuses = rule(json!(["*/status"]), "*");
        assert!(create(&statuses, "fischers", "status", true) && !create(&statuses, "fischers", "scale", true));
        let cluster = rule(json!(["*"]), "Cluster");
        assert!(create(&cluster, "fischers", "", false) && !create(&cluster, "flunders", "", true));
        let namespaced = rule(json!(["*"]), "Namespaced");
        assert!(!create(&namespaced, "fischers", "", false) && create(&namespaced, "flunders", "", true));
    }

    #[test]
    fn a_false_match_condition_wins_over_another_ones_error() {
        let conditions = conditions(
            Some(&json!([
                {"name": "broken", "expression": "object.missing.field"},
                {"name": "no", "expression": "object.name == 'other'"}
            ])),
            WEBHOOK_VARIABLES,
        );
        let mut bindings = schema::cel::Bindings::default();
        bindings.bind("object", &json!({"name": "this"}));
        assert_eq!(conditions_hold(&conditions, &bindings), Ok(false));
        bindings.bind("object", &json!({"name": "other"}));
        let err = conditions_hold(&conditions, &bindings).unwrap_err();
        assert!(err.contains("failed to evaluate matchCondition \"broken\""), "{err}");
    }

    #[test]
    fn a_binding_without_its_policy_is_left_out_and_webhooks_keep_their_order() {
        let webhook = |name: &str| json!({"name": name, "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/p"}}});
        let mut objects = Objects::default();
        objects.validating.insert(
            "b".into(),
            json!({"webhooks": [webhook("b1.x.io"), webhook("b0.x.io")]}),
        );
        objects
            .validating
            .insert("a".into(), json!({"webhooks": [webhook("a.x.io")]}));
        objects
            .bindings
            .insert("orphan".into(), json!({"spec": {"policyName": "missing"}}));
        let snapshot = Snapshot::compile(&objects, false);
        let names: Vec<&str> = snapshot.validating.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["a.x.io", "b1.x.io", "b0.x.io"]);
        assert!(snapshot.bindings.is_empty());
        match &snapshot.validating[0].endpoint {
            Endpoint::Url(url) => assert_eq!(url, "https://s.n.svc:443/p"),
            Endpoint::Invalid(why) => panic!("{why}"),
        }
    }
}
