//! The answers to the access reviews ([`builtin::reviews`]): a review created by a user is answered from the
//! request, the server's authorizer and its RBAC rules, and never stored.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};

use super::rbac::Rbac;
use super::{Attributes, Authorizer, Decision};
use apimachinery::status::ApiError;
use authn::UserInfo;
use builtin::reviews::{AUTHENTICATION, AUTHORIZATION};

/// What the reviews consult: the server's authorizer and, with RBAC, its rules.
#[derive(Clone)]
pub struct Access {
    /// The authorizer of every request.
    pub authorizer: Arc<dyn Authorizer>,
    /// The RBAC rules, when RBAC is on.
    pub rbac: Option<Arc<Rbac>>,
}

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

fn attributes_of(spec: &Value, user: UserInfo) -> Result<Attributes, ApiError> {
    if let Some(r) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
        return Ok(Attributes {
            user,
            verb: str_at(r, "/verb").to_owned(),
            resource_request: true,
            api_group: str_at(r, "/group").to_owned(),
            api_version: str_at(r, "/version").to_owned(),
            resource: str_at(r, "/resource").to_owned(),
            subresource: str_at(r, "/subresource").to_owned(),
            namespace: str_at(r, "/namespace").to_owned(),
            name: str_at(r, "/name").to_owned(),
            path: String::new(),
        });
    }
    if let Some(n) = spec.get("nonResourceAttributes").filter(|v| v.is_object()) {
        return Ok(Attributes {
            user,
            verb: str_at(n, "/verb").to_owned(),
            path: str_at(n, "/path").to_owned(),
            ..Attributes::default()
        });
    }
    Err(invalid(
        "FieldValueRequired",
        "spec.resourceAttributes",
        "exactly one of nonResourceAttributes or resourceAttributes must be specified",
    ))
}

/// A 422 for one field of a review.
fn invalid(reason: &str, field: &str, message: &str) -> ApiError {
    let cause = apimachinery::status::Cause {
        reason: reason.to_owned(),
        message: message.to_owned(),
        field: field.to_owned(),
    };
    ApiError::invalid(AUTHORIZATION, "SubjectAccessReview", "", vec![cause])
}

fn user_of_spec(spec: &Value) -> UserInfo {
    let extra: BTreeMap<String, Vec<String>> = spec
        .get("extra")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    let values = v
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(Value::as_str)
                        .map(str::to_owned);
                    (k.clone(), values.collect())
                })
                .collect()
        })
        .unwrap_or_default();
    UserInfo {
        name: str_at(spec, "/user").to_owned(),
        uid: str_at(spec, "/uid").to_owned(),
        groups: spec
            .get("groups")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        extra,
    }
}

fn decision_status(decision: Decision) -> Value {
    match decision {
        Decision::Allow(reason) => json!({"allowed": true, "reason": reason}),
        Decision::Deny(reason) => json!({"allowed": false, "denied": true, "reason": reason}),
        Decision::NoOpinion(reason) => {
            let mut s = json!({"allowed": false});
            if !reason.is_empty() {
                s["reason"] = json!(reason);
            }
            s
        }
    }
}

/// Answers the creation of a review by `user` (`namespace` is the request path's, for local reviews): the object
/// with its status filled in.
pub async fn create(
    access: &Access,
    group: &str,
    resource: &str,
    namespace: Option<&str>,
    user: &UserInfo,
    mut obj: Value,
) -> Result<Value, ApiError> {
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    let status = match (group, resource) {
        (AUTHENTICATION, "selfsubjectreviews") => {
            let mut info = json!({"username": user.name, "groups": user.groups});
            if !user.uid.is_empty() {
                info["uid"] = json!(user.uid);
            }
            if !user.extra.is_empty() {
                info["extra"] = json!(user.extra);
            }
            json!({"userInfo": info})
        }
        (AUTHORIZATION, "selfsubjectaccessreviews") => {
            let a = attributes_of(&spec, user.clone())?;
            decision_status(access.authorizer.authorize_async(&a).await)
        }
        (AUTHORIZATION, "subjectaccessreviews" | "localsubjectaccessreviews") => {
            let subject = user_of_spec(&spec);
            if subject.name.is_empty() && subject.groups.is_empty() {
                return Err(invalid(
                    "FieldValueRequired",
                    "spec.user",
                    "at least one of user or group must be specified",
                ));
            }
            let a = attributes_of(&spec, subject)?;
            if let Some(ns) = namespace {
                if a.namespace != ns {
                    return Err(invalid(
                        "FieldValueInvalid",
                        "spec.resourceAttributes.namespace",
                        &format!("must match metadata.namespace {ns:?}"),
                    ));
                }
            }
            decision_status(access.authorizer.authorize_async(&a).await)
        }
        (AUTHORIZATION, "selfsubjectrulesreviews") => {
            let ns = str_at(&spec, "/namespace");
            match &access.rbac {
                Some(rbac) => {
                    let groups = rbac.plugin_groups();
                    let rules = rbac.rules_for(user, ns);
                    let (urls, resources): (Vec<_>, Vec<_>) =
                        rules.iter().partition(|r| !r.non_resource_urls.is_empty());
                    json!({
                        "resourceRules": resources.iter().map(|r| r.to_json(&groups)).collect::<Vec<_>>(),
                        "nonResourceRules": urls.iter().map(|r| r.to_json(&groups)).collect::<Vec<_>>(),
                        "incomplete": false
                    })
                }
                None => json!({
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                    "incomplete": false
                }),
            }
        }
        _ => return Err(ApiError::path_not_found()),
    };
    obj["status"] = status;
    if obj.get("metadata").is_none_or(|m| !m.is_object()) {
        obj["metadata"] = json!({});
    }
    obj["metadata"]["creationTimestamp"] = Value::Null;
    Ok(obj)
}
