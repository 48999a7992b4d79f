//! The access reviews: `authorization.k8s.io/v1` SelfSubjectAccessReview, SubjectAccessReview,
//! LocalSubjectAccessReview and SelfSubjectRulesReview, and `authentication.k8s.io/v1` SelfSubjectReview (what
//! `kubectl auth can-i [--list]` and `kubectl auth whoami` create) and TokenReview (what a server delegating its
//! authentication asks). Each is answered from the request and never
//! stored (`authz::reviews` answers them); the scheme is served as any group's, with `create` as the only
//! verb.

use std::sync::Arc;

use serde_json::{json, Value};

use super::resource;
use apimachinery::scheme::Exports;
use apimachinery::scheme::GroupInfo;
use rest::plugin::Plugin;
use rest::strategy::Strategy;

/// The authorization group.
pub const AUTHORIZATION: &str = "authorization.k8s.io";
/// The authentication group.
pub const AUTHENTICATION: &str = "authentication.k8s.io";

struct ReviewStrategy;

impl Strategy for ReviewStrategy {}

fn create_only() -> Exports {
    Exports {
        create: true,
        ..Exports::default()
    }
}

/// The reviews are only created (kube's discovery lists `create` alone for them).
fn create_only_verbs(mut group: GroupInfo) -> GroupInfo {
    for r in &mut group.resources {
        Arc::make_mut(r).verbs = vec!["create"];
    }
    group
}

fn review_schema(description: &str) -> Value {
    json!({
        "type": "object",
        "description": description,
        "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
        }
    })
}

/// `authorization.k8s.io/v1`.
pub fn authorization_plugin() -> Plugin {
    let r = |kind: &str, plural: &str, namespaced: bool| {
        resource(
            kind,
            plural,
            &[],
            namespaced,
            "v1",
            review_schema(&format!(
                "{kind} checks whether or not a user or group can perform an action."
            )),
        )
    };
    let group = GroupInfo {
        group: AUTHORIZATION.into(),
        resources: apimachinery::scheme::shared(vec![
            r("LocalSubjectAccessReview", "localsubjectaccessreviews", true),
            r("SelfSubjectAccessReview", "selfsubjectaccessreviews", false),
            r("SelfSubjectRulesReview", "selfsubjectrulesreviews", false),
            r("SubjectAccessReview", "subjectaccessreviews", false),
        ]),
        reads: Vec::new(),
    };
    Plugin::native(
        "builtin:authorization",
        create_only_verbs(group),
        create_only(),
        Vec::new(),
        Vec::new(),
        Arc::new(ReviewStrategy),
    )
}

/// `authentication.k8s.io/v1`.
pub fn authentication_plugin() -> Plugin {
    let group = GroupInfo {
        group: AUTHENTICATION.into(),
        resources: apimachinery::scheme::shared(vec![
            resource(
                "SelfSubjectReview",
                "selfsubjectreviews",
                &[],
                false,
                "v1",
                review_schema("SelfSubjectReview contains the user information that the kube-apiserver has about the user making this request."),
            ),
            resource(
                "TokenReview",
                "tokenreviews",
                &[],
                false,
                "v1",
                review_schema("TokenReview attempts to authenticate a token to a known user. Note: TokenReview requests may be cached by the webhook token authenticator plugin in the kube-apiserver."),
            ),
        ]),
        reads: Vec::new(),
    };
    Plugin::native(
        "builtin:authentication",
        create_only_verbs(group),
        create_only(),
        Vec::new(),
        Vec::new(),
        Arc::new(ReviewStrategy),
    )
}

/// Whether a group and resource are the review's (`create` on it is served here).
pub fn is_review(group: &str) -> bool {
    group == AUTHORIZATION || group == AUTHENTICATION
}
