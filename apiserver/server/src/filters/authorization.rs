//! The authorization filter (kube's `WithAuthorization`): asks the authorizer about the request's attributes and
//! answers 403 Forbidden with kube's message when it is not allowed.

use super::layer::{pass, Answered, Filtered, Next};
use apimachinery::status::{qualified, ApiError};
use authn::UserInfo;
use authz::{Attributes, Authorizer, Decision};
use endpoints::request_info::RequestInfo;

/// The attributes of a request made by `user` (kube's `GetAuthorizerAttributes`).
pub fn attributes(user: &UserInfo, info: &RequestInfo) -> Attributes {
    Attributes {
        user: user.clone(),
        verb: info.verb.to_owned(),
        resource_request: info.resource_request,
        api_group: info.group.clone(),
        api_version: info.version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone().unwrap_or_default(),
        namespace: info.namespace.clone().unwrap_or_default(),
        name: info.authorized_name().unwrap_or_default().to_owned(),
        path: info.path.clone(),
    }
}

/// Allows the request (returning the reason, for the audit log) or refuses it with 403.
pub async fn authorize(authorizer: &dyn Authorizer, attributes: &Attributes) -> Result<String, ApiError> {
    match authorizer.authorize_async(attributes).await {
        Decision::Allow(reason) => Ok(reason),
        // A request without credentials that anonymous may not make asks for credentials (as kube-apiserver
        // answers when anonymous access is limited to its public endpoints).
        Decision::Deny(_) | Decision::NoOpinion(_) if attributes.user.name == authn::ANONYMOUS_USER => {
            Err(ApiError::new(401, "Unauthorized", "Unauthorized"))
        }
        Decision::Deny(reason) | Decision::NoOpinion(reason) => Err(forbidden(attributes, &reason)),
    }
}

/// kube's 403 for a refused request: `<resource>.<group> "<name>" is forbidden: User "<user>" cannot <verb>
/// resource "<resource>" in API group "<group>" in the namespace "<ns>"`, with the authorizer's reason appended
/// when it gave one.
pub fn forbidden(a: &Attributes, reason: &str) -> ApiError {
    let mut why = if a.resource_request {
        let resource = if a.subresource.is_empty() {
            a.resource.clone()
        } else {
            format!("{}/{}", a.resource, a.subresource)
        };
        let scope = if a.namespace.is_empty() {
            "at the cluster scope".to_owned()
        } else {
            format!("in the namespace \"{}\"", a.namespace)
        };
        format!(
            "User \"{}\" cannot {} resource \"{resource}\" in API group \"{}\" {scope}",
            a.user.name, a.verb, a.api_group
        )
    } else {
        format!("User \"{}\" cannot {} path \"{}\"", a.user.name, a.verb, a.path)
    };
    if !reason.is_empty() {
        why = format!("{why}: {reason}");
    }
    if !a.resource_request {
        let mut e = ApiError::new(403, "Forbidden", format!("forbidden: {why}"));
        e.kind = None;
        return e;
    }
    let target = qualified(&a.api_group, &a.resource);
    let mut e = if a.name.is_empty() {
        ApiError::new(403, "Forbidden", format!("{target} is forbidden: {why}"))
    } else {
        ApiError::forbidden(&a.api_group, &a.resource, &a.name, &why)
    };
    e.group = Some(a.api_group.clone());
    e.kind = Some(a.resource.clone());
    e
}

/// The filter: asks the tenant's authorizer, noting its decision for the audit log; or 403 (401 for anonymous).
pub async fn filter(mut f: Box<Filtered>, next: Next) -> Answered {
    let tenant = f.tenant();
    let attributes = attributes(&f.ctx.user, &f.ctx.info);
    let span =
        tracing::info_span!(target: component_base::trace::TARGET, "authorization", decision = tracing::field::Empty);
    let decided =
        tracing::Instrument::instrument(authorize(tenant.authorizer.as_ref(), &attributes), span.clone()).await;
    span.record("decision", if decided.is_ok() { "allow" } else { "forbid" });
    match decided {
        Ok(reason) => f.ctx.authorization = Some(("allow", reason)),
        Err(e) => {
            f.ctx.authorization = Some(("forbid", String::new()));
            return f.answer(endpoints::response::error(&e, None));
        }
    }
    pass(next, f).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(verb: &str, group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
        Attributes {
            user: UserInfo::new("bob", ["dev"]),
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn messages_are_kubes() {
        let e = forbidden(&attrs("list", "wardle.example.com", "flunders", "a", ""), "");
        assert_eq!(
            e.message,
            "flunders.wardle.example.com is forbidden: User \"bob\" cannot list resource \"flunders\" in API group \"wardle.example.com\" in the namespace \"a\""
        );
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        let e = forbidden(&attrs("get", "wardle.example.com", "fischers", "", "f1"), "");
        assert_eq!(
            e.message,
            "fischers.wardle.example.com \"f1\" is forbidden: User \"bob\" cannot get resource \"fischers\" in API group \"wardle.example.com\" at the cluster scope"
        );
        assert_eq!(e.name.as_deref(), Some("f1"));
        let e = forbidden(&attrs("delete", "", "namespaces", "x", "x"), "");
        assert!(
            e.message.starts_with(
                "namespaces \"x\" is forbidden: User \"bob\" cannot delete resource \"namespaces\" in API group \"\""
            ),
            "{}",
            e.message
        );
        let mut a = attrs("get", "", "", "", "");
        a.resource_request = false;
        a.path = "/metrics".into();
        assert_eq!(
            forbidden(&a, "").message,
            "forbidden: User \"bob\" cannot get path \"/metrics\""
        );
    }
}
