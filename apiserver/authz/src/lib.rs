//! Authorization: whether a user may make a request, as `k8s.io/apiserver/pkg/authorization/authorizer`.

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

use authn::UserInfo;

pub mod bootstrap;
pub mod escalation;
pub mod rbac;
pub mod reviews;
pub mod webhook;

/// What an authorizer decides on: the user and what the request does (kube's `authorizer.Attributes`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who asks.
    pub user: UserInfo,
    /// The verb: for resource requests get, list, watch, create, update, patch, delete, deletecollection (and
    /// impersonate, escalate, bind...); for other paths the lower-case HTTP method (get, post, put, ...).
    pub verb: String,
    /// Whether this is a request for a resource (else for a non-resource URL such as `/healthz`).
    pub resource_request: bool,
    /// The API group (`""` for the core group).
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The plural resource.
    pub resource: String,
    /// The subresource, or `""`.
    pub subresource: String,
    /// The namespace, or `""` for cluster-scoped requests and requests across all namespaces.
    pub namespace: String,
    /// The object name, or `""`.
    pub name: String,
    /// The request path, for non-resource requests.
    pub path: String,
}

/// An authorizer's answer (kube's `authorizer.Decision`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The request may go on; the reason names what allowed it (for the audit log).
    Allow(String),
    /// The request is refused; the reason says why, if anything does.
    Deny(String),
    /// This authorizer has no opinion; the next one decides (the last one's no-opinion denies).
    NoOpinion(String),
}

/// Decides whether a request may go on (kube's `authorizer.Authorizer`).
pub trait Authorizer: Send + Sync {
    /// The decision for a request's attributes, from what the authorizer holds (an authorizer that must ask over
    /// the network answers from its cache, or has no opinion).
    fn authorize(&self, attributes: &Attributes) -> Decision;

    /// The decision, asking over the network when the authorizer must (a webhook): what the server's filters and
    /// handlers call.
    fn authorize_async<'a>(&'a self, attributes: &'a Attributes) -> storage::BoxFuture<'a, Decision> {
        Box::pin(async move { self.authorize(attributes) })
    }
}

/// `--authorization-mode=AlwaysAllow`: everything is allowed (for development only).
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Allow(String::new())
    }
}

/// `--authorization-mode=AlwaysDeny`: everything is refused.
pub struct AlwaysDeny;

impl Authorizer for AlwaysDeny {
    fn authorize(&self, _: &Attributes) -> Decision {
        Decision::Deny(String::new())
    }
}

impl<T: Authorizer + ?Sized> Authorizer for std::sync::Arc<T> {
    fn authorize(&self, attributes: &Attributes) -> Decision {
        (**self).authorize(attributes)
    }

    fn authorize_async<'a>(&'a self, attributes: &'a Attributes) -> storage::BoxFuture<'a, Decision> {
        (**self).authorize_async(attributes)
    }
}

/// Members of `system:masters` may do anything (kube's privileged-group authorizer, always first).
pub struct PrivilegedGroup;

impl Authorizer for PrivilegedGroup {
    fn authorize(&self, attributes: &Attributes) -> Decision {
        if attributes.user.in_group(authn::MASTERS_GROUP) {
            Decision::Allow(format!("user is in group {:?}", authn::MASTERS_GROUP))
        } else {
            Decision::NoOpinion(String::new())
        }
    }
}

/// The health checks (`/healthz`, `/livez`, `/readyz` and their checks) allowed to anyone, as k8s.io/apiserver's
/// delegated authorization always allows them (`--authorization-always-allow-paths`): a kubelet's probes of a server
/// that asks kube-apiserver (`Webhook`) are answered whether kube-apiserver is reachable or not.
pub struct HealthChecks;

impl Authorizer for HealthChecks {
    fn authorize(&self, a: &Attributes) -> Decision {
        let health = ["/healthz", "/livez", "/readyz"]
            .iter()
            .any(|p| a.path == *p || a.path.strip_prefix(p).is_some_and(|rest| rest.starts_with('/')));
        if !a.resource_request && a.verb == "get" && health {
            Decision::Allow("a health check".into())
        } else {
            Decision::NoOpinion(String::new())
        }
    }
}

/// Authorizers asked in order: the first that allows or denies decides; when none has an opinion, the request is
/// denied.
pub struct Union(pub Vec<Box<dyn Authorizer>>);

impl Authorizer for Union {
    fn authorize(&self, attributes: &Attributes) -> Decision {
        let mut reasons = Vec::new();
        for authorizer in &self.0 {
            match authorizer.authorize(attributes) {
                Decision::NoOpinion(reason) => {
                    if !reason.is_empty() {
                        reasons.push(reason)
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(reasons.join("; "))
    }

    fn authorize_async<'a>(&'a self, attributes: &'a Attributes) -> storage::BoxFuture<'a, Decision> {
        Box::pin(async move {
            let mut reasons = Vec::new();
            for authorizer in &self.0 {
                match authorizer.authorize_async(attributes).await {
                    Decision::NoOpinion(reason) => {
                        if !reason.is_empty() {
                            reasons.push(reason)
                        }
                    }
                    decided => return decided,
                }
            }
            Decision::NoOpinion(reasons.join("; "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use authn::UserInfo;

    #[test]
    fn masters_are_allowed_first_and_no_opinion_is_the_last_word() {
        let union = Union(vec![Box::new(PrivilegedGroup)]);
        let mut attributes = Attributes {
            user: UserInfo::new("root", [authn::MASTERS_GROUP]),
            verb: "delete".into(),
            ..Attributes::default()
        };
        assert!(matches!(union.authorize(&attributes), Decision::Allow(_)));
        attributes.user = UserInfo::new("bob", ["dev"]);
        assert!(matches!(union.authorize(&attributes), Decision::NoOpinion(_)));
        let open = Union(vec![Box::new(PrivilegedGroup), Box::new(AlwaysAllow)]);
        assert!(matches!(open.authorize(&attributes), Decision::Allow(_)));
    }
}

#[cfg(test)]
mod health_checks_tests {
    use super::*;

    fn request(path: &str, verb: &str, resource_request: bool) -> Attributes {
        Attributes {
            user: UserInfo::anonymous(),
            verb: verb.into(),
            resource_request,
            api_group: String::new(),
            api_version: String::new(),
            resource: String::new(),
            subresource: String::new(),
            namespace: String::new(),
            name: String::new(),
            path: path.into(),
        }
    }

    #[test]
    fn health_checks_are_allowed_to_anyone_and_nothing_else_is() {
        for path in ["/healthz", "/livez", "/readyz", "/readyz/etcd", "/livez/ping"] {
            assert!(
                matches!(HealthChecks.authorize(&request(path, "get", false)), Decision::Allow(_)),
                "{path}"
            );
        }
        for (path, verb) in [
            ("/healthzx", "get"),
            ("/metrics", "get"),
            ("/readyz", "post"),
            ("/", "get"),
        ] {
            assert!(
                matches!(
                    HealthChecks.authorize(&request(path, verb, false)),
                    Decision::NoOpinion(_)
                ),
                "{verb} {path}"
            );
        }
        assert!(matches!(
            HealthChecks.authorize(&request("/readyz", "get", true)),
            Decision::NoOpinion(_)
        ));
    }
}
