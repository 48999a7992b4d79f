//! RBAC's privilege-escalation prevention (kube's `rbac/rest` storage guards): a user may create or update a Role
//! or ClusterRole only with rules they hold themselves, and a binding only to a role whose rules they hold, unless
//! they may `escalate` roles or `bind` that role (or are in `system:masters`).

use std::sync::Arc;

use serde_json::Value;

use super::rbac::{covers, Rbac, Rule};
use super::{Attributes, Authorizer, Decision};
use admission::Check;
use apimachinery::status::ApiError;
use authn::{UserInfo, MASTERS_GROUP};
use builtin::rbac::GROUP;
use storage::BoxFuture;

/// The admission check.
pub struct Escalation {
    /// The server's authorizer (for `escalate` and `bind`).
    pub authorizer: Arc<dyn Authorizer>,
    /// The RBAC rules users hold.
    pub rbac: Arc<Rbac>,
}

async fn allowed(
    authorizer: &dyn Authorizer,
    user: &UserInfo,
    verb: &str,
    resource: &str,
    namespace: &str,
    name: &str,
) -> bool {
    let a = Attributes {
        user: user.clone(),
        verb: verb.into(),
        resource_request: true,
        api_group: GROUP.into(),
        api_version: "v1".into(),
        resource: resource.into(),
        namespace: namespace.into(),
        name: name.into(),
        ..Attributes::default()
    };
    matches!(authorizer.authorize_async(&a).await, Decision::Allow(_))
}

/// kube's message for rules a user does not hold.
fn describe(rules: &[Rule]) -> String {
    rules
        .iter()
        .map(|r| {
            if r.non_resource_urls.is_empty() {
                let names = if r.resource_names.is_empty() {
                    String::new()
                } else {
                    format!(", ResourceNames:{:?}", r.resource_names)
                };
                format!(
                    "{{APIGroups:{:?}, Resources:{:?}{names}, Verbs:{:?}}}",
                    r.api_groups, r.resources, r.verbs
                )
            } else {
                format!("{{NonResourceURLs:{:?}, Verbs:{:?}}}", r.non_resource_urls, r.verbs)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Escalation {
    async fn check(&self, r: &admission::Attributes<'_>) -> Result<(), ApiError> {
        let Some(object) = r.object else {
            return Ok(());
        };
        if r.group != GROUP || r.user.in_group(MASTERS_GROUP) {
            return Ok(());
        }
        let namespace = r.namespace.unwrap_or("");
        let user = r.user;
        let index = self.rbac.index();
        let plugin_groups = self.rbac.plugin_groups();
        let refuse = |missing: Vec<Rule>, extra: &str| {
            let groups = format!("{:?}", user.groups);
            ApiError::forbidden(
                r.group,
                r.resource,
                r.name,
                &format!(
                    "user \"{}\" (groups={groups}) is attempting to grant RBAC permissions not currently held:\n{}{extra}",
                    user.name,
                    describe(&missing)
                ),
            )
        };
        match r.resource {
            "roles" | "clusterroles" => {
                if allowed(
                    self.authorizer.as_ref(),
                    user,
                    "escalate",
                    r.resource,
                    namespace,
                    r.name,
                )
                .await
                {
                    return Ok(());
                }
                let rules: Vec<Rule> = object
                    .get("rules")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(Rule::from_json)
                    .collect();
                let owner = index.rules_for(user, namespace);
                covers(&owner, &rules, &plugin_groups).map_err(|missing| refuse(missing, ""))
            }
            "rolebindings" | "clusterrolebindings" => {
                let kind = object.pointer("/roleRef/kind").and_then(Value::as_str).unwrap_or("");
                let name = object.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or("");
                let role_resource = if kind == "Role" { "roles" } else { "clusterroles" };
                if allowed(self.authorizer.as_ref(), user, "bind", role_resource, namespace, name).await {
                    return Ok(());
                }
                let Some(rules) = index.role(kind, namespace, name) else {
                    return Err(ApiError::not_found(GROUP, role_resource, name));
                };
                let owner = index.rules_for(user, namespace);
                covers(&owner, &rules, &plugin_groups).map_err(|missing| refuse(missing, ""))
            }
            _ => Ok(()),
        }
    }
}

impl Check for Escalation {
    fn name(&self) -> &'static str {
        "RBACEscalation"
    }

    fn validate<'a>(&'a self, request: &'a admission::Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
        Box::pin(async move { self.check(request).await.map(|()| Vec::new()) })
    }
}
