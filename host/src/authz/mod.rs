//! Authorization: whether a user may make a request, as `k8s.io/apiserver/pkg/authorization/authorizer`.

use crate::authn::UserInfo;

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
