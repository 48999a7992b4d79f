//! Impersonation (kube's `WithImpersonation`): `Impersonate-User`, `Impersonate-Group` (repeated),
//! `Impersonate-Uid` and `Impersonate-Extra-<key>` make a request act as another user, when the authenticated user
//! may `impersonate` each of them (users, groups and serviceaccounts in the core group; uids and
//! userextras/<key> in authentication.k8s.io). `kubectl --as` and `--as-group` send these.
//!
//! Inside a tenant, the tenant's RBAC decides what its users may impersonate, and the tenant's rule
//! ([`tenants::refuse_host_identities`]) keeps a grant of the tenant from reaching anything host-wide.

use std::collections::BTreeMap;

use hyper::HeaderMap;

use super::layer::{pass, Answered, Filtered, Next};
use crate::filters::authorization;
use apimachinery::status::ApiError;
use authn::{UserInfo, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP};
use authz::{Attributes, Authorizer};

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// The user the request acts as: `Ok(None)` when it impersonates no one; 403 when the requester may not
/// impersonate what it asks for, or when `refused` refuses the user and groups asked for (the tenant's rule,
/// [`tenants::Tenant::refuse_host_identities`]).
pub async fn impersonate(
    authorizer: &dyn Authorizer,
    refused: impl FnOnce(&UserInfo, &str, &[String]) -> Result<(), ApiError>,
    requester: &UserInfo,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect()
    };
    let user = values(USER).into_iter().next();
    let groups = values(GROUP);
    let uid = values(UID).into_iter().next();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix(EXTRA_PREFIX) {
            let key = percent_encoding::percent_decode_str(key)
                .decode_utf8_lossy()
                .to_lowercase();
            if let Ok(v) = value.to_str() {
                extra.entry(key).or_default().push(v.to_owned());
            }
        }
    }
    let Some(name) = user else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(None);
        }
        // kube-apiserver answers this with a 500 InternalError; it is the client's mistake, so a 400 here: a request
        // alone never makes the host answer 5xx.
        return Err(ApiError::bad_request(
            "requested impersonation of groups, a uid or extra attributes without impersonating a user",
        ));
    };

    refused(requester, &name, &groups)?;

    // What the requester must be allowed to impersonate: (group, resource, subresource, namespace, name).
    let mut wanted: Vec<(&str, &str, &str, &str, &str)> = Vec::new();
    match name
        .strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|sa| sa.split_once(':'))
    {
        Some((namespace, account)) => wanted.push(("", "serviceaccounts", "", namespace, account)),
        None => wanted.push(("", "users", "", "", &name)),
    }
    for group in &groups {
        wanted.push(("", "groups", "", "", group));
    }
    if let Some(uid) = &uid {
        wanted.push(("authentication.k8s.io", "uids", "", "", uid));
    }
    for (key, values) in &extra {
        for value in values {
            wanted.push(("authentication.k8s.io", "userextras", key, "", value));
        }
    }
    for (group, resource, subresource, namespace, target) in wanted {
        let attributes = Attributes {
            user: requester.clone(),
            verb: "impersonate".into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: target.into(),
            ..Attributes::default()
        };
        authorization::authorize(authorizer, &attributes).await?;
    }

    let mut impersonated = UserInfo {
        name,
        uid: uid.unwrap_or_default(),
        groups,
        extra,
    };
    let implied = if impersonated.name == ANONYMOUS_USER {
        UNAUTHENTICATED_GROUP
    } else {
        AUTHENTICATED_GROUP
    };
    if !impersonated.in_group(implied) {
        impersonated.groups.push(implied.to_owned());
    }
    Ok(Some(impersonated))
}

/// The filter: the impersonated user becomes the request's, the requester its impersonator; or 403.
pub async fn filter(mut f: Box<Filtered>, next: Next) -> Answered {
    let tenant = f.tenant();
    let refused =
        |requester: &UserInfo, name: &str, groups: &[String]| tenant.refuse_host_identities(requester, name, groups);
    match impersonate(tenant.authorizer.as_ref(), refused, &f.ctx.user, f.req.headers()).await {
        Ok(Some(user)) => f.ctx.impersonator = Some(std::mem::replace(&mut f.ctx.user, user)),
        Ok(None) => {}
        Err(e) => return f.answer(endpoints::response::error(&e, None)),
    }
    pass(next, f).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use authn::{MASTERS_GROUP, SYSTEM_APISERVER};
    use authz::Decision;

    /// Allows impersonating the user "alice" and the group "dev" only.
    struct OnlyAlice;

    impl Authorizer for OnlyAlice {
        fn authorize(&self, a: &Attributes) -> Decision {
            assert_eq!(a.verb, "impersonate");
            match (a.resource.as_str(), a.name.as_str()) {
                ("users", "alice") | ("groups", "dev") => Decision::Allow(String::new()),
                _ => Decision::NoOpinion(String::new()),
            }
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                hyper::header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        map
    }

    #[tokio::test]
    async fn allowed_impersonation_replaces_the_user() {
        let admin = UserInfo::new("admin", ["ops"]);
        assert_eq!(
            impersonate(&OnlyAlice, host_rule, &admin, &HeaderMap::new()).await,
            Ok(None)
        );
        let user = impersonate(
            &OnlyAlice,
            host_rule,
            &admin,
            &headers(&[("Impersonate-User", "alice"), ("Impersonate-Group", "dev")]),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(user.name, "alice");
        assert_eq!(user.groups, ["dev", AUTHENTICATED_GROUP]);
    }

    #[tokio::test]
    async fn refused_impersonation_is_403_naming_what_was_asked() {
        let admin = UserInfo::new("bob", ["ops"]);
        let e = impersonate(
            &OnlyAlice,
            host_rule,
            &admin,
            &headers(&[("Impersonate-User", "carol")]),
        )
        .await
        .unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "users \"carol\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        );
        let e = impersonate(
            &OnlyAlice,
            host_rule,
            &admin,
            &headers(&[("Impersonate-User", "alice"), ("Impersonate-Group", "system:masters")]),
        )
        .await
        .unwrap_err();
        assert!(
            e.message.starts_with("groups \"system:masters\" is forbidden"),
            "{}",
            e.message
        );
    }

    #[tokio::test]
    async fn groups_uid_or_extra_without_a_user_are_a_bad_request() {
        let admin = UserInfo::new("admin", ["ops"]);
        for pair in [
            ("Impersonate-Group", "dev"),
            ("Impersonate-Uid", "1"),
            ("Impersonate-Extra-scopes", "x"),
        ] {
            let e = impersonate(&OnlyAlice, host_rule, &admin, &headers(&[pair]))
                .await
                .unwrap_err();
            assert_eq!((e.code, e.reason), (400, "BadRequest"), "{pair:?}");
        }
    }

    /// Allows every impersonation, as a tenant's cluster-admin binding does inside the tenant.
    struct AllowAll;

    impl Authorizer for AllowAll {
        fn authorize(&self, _: &Attributes) -> Decision {
            Decision::Allow(String::new())
        }
    }

    /// The rule at the root (the host's own RBAC).
    fn host_rule(requester: &UserInfo, name: &str, groups: &[String]) -> Result<(), ApiError> {
        tenants::refuse_host_identities(None, requester, name, groups)
    }

    /// The rule of the tenant t1.
    fn in_t1(requester: &UserInfo, name: &str, groups: &[String]) -> Result<(), ApiError> {
        tenants::refuse_host_identities(Some("t1"), requester, name, groups)
    }

    #[tokio::test]
    async fn in_a_tenant_host_identities_come_from_authentication_only() {
        let tenant_admin = UserInfo::new("alice", ["t1-admins"]);
        let masters = headers(&[("Impersonate-User", "alice"), ("Impersonate-Group", MASTERS_GROUP)]);
        let e = impersonate(&AllowAll, in_t1, &tenant_admin, &masters)
            .await
            .unwrap_err();
        assert_eq!((e.code, e.reason), (403, "Forbidden"));
        assert_eq!(
            e.message,
            "groups \"system:masters\" is forbidden: User \"alice\" cannot impersonate groups \"system:masters\" in \
             tenant \"t1\": inside a tenant, system:masters comes from authentication only"
        );
        let apiserver = headers(&[("Impersonate-User", SYSTEM_APISERVER)]);
        let e = impersonate(&AllowAll, in_t1, &tenant_admin, &apiserver)
            .await
            .unwrap_err();
        assert!(
            e.message.starts_with("users \"system:apiserver\" is forbidden"),
            "{}",
            e.message
        );
        // Other identities, the host's own admins, and the host (the default tenant) are as Kubernetes has them.
        let dev = headers(&[("Impersonate-User", "bob"), ("Impersonate-Group", "dev")]);
        let bob = impersonate(&AllowAll, in_t1, &tenant_admin, &dev)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(bob.groups, ["dev", AUTHENTICATED_GROUP]);
        let root = UserInfo::new("root", [MASTERS_GROUP]);
        let as_masters = impersonate(&AllowAll, in_t1, &root, &masters).await.unwrap().unwrap();
        assert!(as_masters.in_group(MASTERS_GROUP));
        let at_host = impersonate(&AllowAll, host_rule, &tenant_admin, &masters)
            .await
            .unwrap()
            .unwrap();
        assert!(at_host.in_group(MASTERS_GROUP));
    }
}
