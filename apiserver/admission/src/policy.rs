//! ValidatingAdmissionPolicies (kube's `policy/validating`): for each binding whose policy matches the write
//! (the policy's `matchConstraints`, then the binding's `matchResources`), the policy's `matchConditions`, then its
//! `variables` and `validations` run over `object`, `oldObject`, `request`, `namespaceObject` and `params` (the
//! binding's parameter objects, each in turn, from the tenant's storage). A failed validation is, by the binding's
//! `validationActions`, a refusal with kube's message and the validation's reason (`Deny`: 422 Invalid unless the
//! reason says otherwise), a warning (`Warn`), or an audit annotation of the request (`Audit`:
//! `validation.policy.admission.k8s.io/validation_failure`, kube's JSON). The policy's `auditAnnotations` are
//! annotations too (`<policy>/<key>`). Every binding is evaluated; the first refusal is the answer. An expression
//! that cannot be compiled or evaluated, or parameters not found, follow the policy's `failurePolicy`.

use serde_json::Value;

use crate::config::BoundPolicy;
use crate::objects::Freshness;
use crate::request::Request;
use apimachinery::labels::LabelSelector;
use apimachinery::status::{ApiError, Cause};
use builtin::str_at;
use schema::cel::{Bindings, Evaluated, Expression};

/// A failed validation.
struct Decision {
    message: String,
    reason: String,
    /// The index of the validation among the policy's (0 for a failure of the binding as a whole).
    index: usize,
}

impl Decision {
    fn failure(message: String) -> Decision {
        Decision {
            message,
            reason: "Invalid".into(),
            index: 0,
        }
    }
}

/// What one binding found: its failed validations, and the audit annotations its policy made (key, values).
#[derive(Default)]
struct Evaluation {
    decisions: Vec<Decision>,
    annotations: Vec<(String, Vec<String>)>,
}

/// The key of a failed validation's audit annotation.
const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

/// Runs the bindings; the first refusal is the answer, the warnings of the others are returned.
pub(crate) async fn validate(
    bindings: &[std::sync::Arc<BoundPolicy>],
    r: &Request<'_>,
) -> Result<Vec<String>, ApiError> {
    let mut warnings = Vec::new();
    let mut refusal = None;
    for b in bindings {
        let evaluation = match evaluate(b, r).await {
            Ok(e) => e,
            Err(_) if b.ignore_failures => Evaluation::default(),
            Err(message) => Evaluation {
                decisions: vec![Decision::failure(message)],
                annotations: Vec::new(),
            },
        };
        // Several parameters may give a key several values: kube joins them.
        for (key, values) in &evaluation.annotations {
            component_base::audit::annotate(format!("{}/{key}", b.policy), values.join(", "));
        }
        let decisions = evaluation.decisions;
        let Some(first) = decisions.first() else {
            continue;
        };
        if b.warn {
            for d in &decisions {
                warnings.push(format!(
                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                    b.policy, b.binding, d.message
                ));
            }
        }
        if b.audit {
            for d in &decisions {
                let failure = serde_json::json!([{"message": d.message, "policy": b.policy, "binding": b.binding,
                    "expressionIndex": d.index, "validationActions": b.actions}]);
                component_base::audit::annotate(VALIDATION_FAILURE, failure.to_string());
            }
        }
        if b.deny && refusal.is_none() {
            refusal = Some(denied(b, first, r));
        }
    }
    match refusal {
        Some(e) => Err(e),
        None => Ok(warnings),
    }
}

/// kube's refusal: a Forbidden message with the validation's reason and code, and the message as a cause.
fn denied(b: &BoundPolicy, d: &Decision, r: &Request<'_>) -> ApiError {
    let a = r.attributes;
    let message = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        b.policy, b.binding, d.message
    );
    let mut e = ApiError::forbidden(a.group, a.resource, a.name, &message);
    (e.reason, e.code) = match d.reason.as_str() {
        "Unauthorized" => ("Unauthorized", 401),
        "Forbidden" => ("Forbidden", 403),
        "RequestEntityTooLarge" => ("RequestEntityTooLarge", 413),
        _ => ("Invalid", 422),
    };
    e.causes = vec![Cause {
        reason: String::new(),
        message,
        field: String::new(),
    }];
    e
}

/// The failed validations and audit annotations of one binding (none if it does not match); `Err` is a failure
/// subject to the policy's failure policy.
async fn evaluate(b: &BoundPolicy, r: &Request<'_>) -> Result<Evaluation, String> {
    let Some(version) = b.policy_constraints.matching_version(r, false) else {
        return Ok(Evaluation::default());
    };
    if b.binding_constraints.matching_version(r, true).is_none()
        || !b.policy_constraints.select(r).await?
        || !b.binding_constraints.select(r).await?
    {
        return Ok(Evaluation::default());
    }
    let (object, old) = r.objects_in(&version).map_err(|e| e.message)?;
    let mut bindings = Bindings::default();
    bindings.bind("object", object.as_ref().unwrap_or(&Value::Null));
    bindings.bind("oldObject", old.as_ref().unwrap_or(&Value::Null));
    bindings.bind("request", &r.review_request(&version, None, None));
    bindings.bind("namespaceObject", r.namespace_object().await.unwrap_or(&Value::Null));
    let params = match params(b, r).await? {
        Params::Found(params) => params,
        Params::Allowed => return Ok(Evaluation::default()),
        Params::Denied => {
            return Ok(Evaluation {
                decisions: vec![Decision::failure(
                    "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
                )],
                annotations: Vec::new(),
            })
        }
    };
    let mut decisions = Vec::new();
    let mut annotations: Vec<(String, Vec<String>)> = Vec::new();
    for param in params {
        bindings.bind("params", &param);
        // The match conditions see the parameters, one at a time, as kube evaluates them.
        if !crate::config::conditions_hold(&b.conditions, &bindings)? {
            continue;
        }
        // kube evaluates a variable when an expression first uses it: one that fails fails only what uses it.
        // Here each is evaluated in order, and one that fails is left out of `variables` with its error, which is
        // the error of any expression that names it.
        let mut variables: Vec<(String, Evaluated)> = Vec::new();
        let mut failed: Vec<(String, String)> = Vec::new();
        for (name, expression) in &b.variables {
            let expression = expression.as_ref().map_err(Clone::clone)?;
            bindings.bind_evaluated("variables", &variables);
            match expression.evaluate(&bindings) {
                Ok(value) => variables.push((name.clone(), value)),
                Err(e) => {
                    let e = variable_error(&failed, expression.source()).map_or(e, str::to_owned);
                    failed.push((name.clone(), e));
                }
            }
        }
        bindings.bind_evaluated("variables", &variables);
        for (index, v) in b.validations.iter().enumerate() {
            let outcome =
                run(&v.expression, &bindings).map_err(|e| variable_error(&failed, &v.source).map_or(e, str::to_owned));
            let passed = match outcome {
                Ok(value) => match value.as_bool() {
                    Some(passed) => passed,
                    None => return Err(format!("expression '{}' did not evaluate to a bool", v.source)),
                },
                Err(_) if b.ignore_failures => continue,
                Err(e) => {
                    decisions.push(Decision {
                        message: format!("expression '{}' resulted in error: {e}", v.source),
                        reason: v.reason.clone(),
                        index,
                    });
                    continue;
                }
            };
            if passed {
                continue;
            }
            let from_expression = v
                .message_expression
                .as_ref()
                .and_then(|m| m.as_ref().ok())
                .and_then(|m| m.evaluate(&bindings).ok())
                .and_then(|m| m.as_str().map(str::to_owned))
                .filter(|m| !m.trim().is_empty() && !m.contains('\n'));
            let message = match (from_expression, v.message.as_str()) {
                (Some(m), _) => m,
                (None, "") => format!("failed expression: {}", v.source),
                (None, m) => m.to_owned(),
            };
            decisions.push(Decision {
                message,
                reason: v.reason.clone(),
                index,
            });
        }
        // kube's audit annotations: a string value is kept (cut at 10 KiB), null leaves the key out, an error is a
        // failure by the failure policy.
        for (key, expression) in &b.audit_annotations {
            let value = match run(expression, &bindings) {
                Ok(value) => value,
                Err(_) if b.ignore_failures => continue,
                Err(e) => {
                    decisions.push(Decision::failure(format!(
                        "valueExpression of auditAnnotation '{key}' resulted in error: {e}"
                    )));
                    continue;
                }
            };
            let Some(mut text) = value.as_str().map(str::to_owned) else {
                if !value.is_null() && !b.ignore_failures {
                    decisions.push(Decision::failure(format!(
                        "valueExpression of auditAnnotation '{key}' must evaluate to a string or null"
                    )));
                }
                continue;
            };
            text.truncate(text.floor_char_boundary(MAX_ANNOTATION_BYTES));
            match annotations.iter_mut().find(|(k, _)| k == key) {
                Some((_, values)) if !values.contains(&text) => values.push(text),
                Some(_) => {}
                None => annotations.push((key.clone(), vec![text])),
            }
        }
    }
    Ok(Evaluation { decisions, annotations })
}

/// An expression's value, or its compile or evaluation error.
fn run(expression: &Result<Expression, String>, bindings: &Bindings) -> Result<Evaluated, String> {
    expression
        .as_ref()
        .map_err(Clone::clone)
        .and_then(|e| e.evaluate(bindings))
}

/// The error of a failed variable that the expression `source` names (`variables.<name>`), if any.
fn variable_error<'a>(failed: &'a [(String, String)], source: &str) -> Option<&'a str> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    failed
        .iter()
        .find(|(name, _)| {
            let needle = format!("variables.{name}");
            source.match_indices(&needle).any(|(at, _)| {
                let before = source[..at].chars().next_back();
                !word(source[at + needle.len()..].chars().next()) && !word(before) && before != Some('.')
            })
        })
        .map(|(_, e)| e.as_str())
}

/// The longest value of an audit annotation (kube's `maxAuditAnnotationValueLength`).
const MAX_ANNOTATION_BYTES: usize = 10 * 1024;

/// The parameters of a binding.
enum Params {
    /// The parameter objects (`[null]` for a policy without parameters).
    Found(Vec<Value>),
    /// None, and `parameterNotFoundAction: Allow`.
    Allowed,
    /// None, and `parameterNotFoundAction: Deny`: the write is refused.
    Denied,
}

/// The parameter objects the binding names, read from the tenant's storage in their storage version.
async fn params(b: &BoundPolicy, r: &Request<'_>) -> Result<Params, String> {
    let (Some((api_version, kind)), Some(param_ref)) = (&b.param_kind, &b.param_ref) else {
        return Ok(Params::Found(vec![Value::Null]));
    };
    if b.cluster {
        // Their kinds (ConfigMaps, say) are the cluster's; this server does not read them from it.
        return Err(format!(
            "the parameters ({kind}) of the cluster's policy bindings are not read by this server"
        ));
    }
    let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
    let resource = r
        .attributes
        .served
        .iter()
        .filter(|p| p.group.group == group)
        .flat_map(|p| p.group.resources.iter())
        .find(|res| res.kind == *kind)
        .cloned()
        .ok_or_else(|| format!("failed to find resource referenced by paramKind: '{api_version}, Kind={kind}'"))?;
    let namespace = match str_at(param_ref, "/namespace") {
        "" if resource.namespaced => r.attributes.namespace,
        "" => None,
        ns => Some(ns),
    };
    if resource.namespaced && namespace.is_none() {
        return Err("cannot use a namespaced paramRef in a policy binding that matches a cluster-scoped resource without a namespace".into());
    }
    let found: Vec<Value> = match str_at(param_ref, "/name") {
        "" => {
            let selector = LabelSelector::from_json(param_ref.get("selector").unwrap_or(&Value::Null))
                .map_err(|e| e.to_string())?;
            let listed = r
                .objects
                .list(group, &resource.plural, namespace, Freshness::Latest)
                .await
                .map_err(|e| e.message)?;
            listed
                .iter()
                .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
                .filter(|o| {
                    let labels = o
                        .pointer("/metadata/labels")
                        .and_then(Value::as_object)
                        .cloned()
                        .unwrap_or_default();
                    selector.matches(&labels)
                })
                .collect()
        }
        name => {
            let kv = r
                .objects
                .get(group, &resource.plural, namespace, name, Freshness::Latest)
                .await
                .map_err(|e| e.message)?;
            kv.and_then(|kv| serde_json::from_slice(&kv.value).ok())
                .into_iter()
                .collect()
        }
    };
    Ok(
        match (found.is_empty(), str_at(param_ref, "/parameterNotFoundAction")) {
            (false, _) => Params::Found(found),
            (true, "Allow") => Params::Allowed,
            (true, _) => Params::Denied,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_variables_error_is_that_of_the_expressions_naming_it_only() {
        let failed = vec![("replicas".to_owned(), "no such key: replicas".to_owned())];
        assert_eq!(
            variable_error(&failed, "variables.replicas <= 10"),
            Some("no such key: replicas")
        );
        assert_eq!(
            variable_error(&failed, "!has(object.spec.replicas) || variables.replicas < 3"),
            Some("no such key: replicas")
        );
        assert_eq!(variable_error(&failed, "variables.replicasMax > 1"), None);
        assert_eq!(variable_error(&failed, "object.variables.replicas > 1"), None);
        assert_eq!(variable_error(&failed, "size(object.metadata.name) < 5"), None);
    }
}
