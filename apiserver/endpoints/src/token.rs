//! `POST .../serviceaccounts/<name>/token`: a TokenRequest (`authentication.k8s.io/v1`), answered with a token
//! signed for the account, as kube's `TokenREST`: the audiences default to the API's, the validity to an hour (at
//! least ten minutes, at most 2^32 seconds, shortened to `--service-account-max-token-expiration` with a warning),
//! and a token may be bound to a Secret of the namespace, valid only while that Secret is.
//!
//! `POST /apis/authentication.k8s.io/v1/tokenreviews`: a TokenReview, answered with the user the server's bearer
//! token authenticators see in its token (service account tokens of this tenant, the token file's, OIDC issuers'),
//! as kube's `TokenReview` storage. Neither is stored.

use std::sync::Arc;

use hyper::{Response, StatusCode};
use serde_json::{json, Value};

use super::negotiate::decode_object;
use super::response::Body;
use super::scope::Scope;
use apimachinery::field_error::FieldError;
use apimachinery::status::{ApiError, Cause};
use authn::service_accounts::{
    KubernetesClaims, Reference, ServiceAccountTokens, TokenRequest, DEFAULT_EXPIRATION_SECONDS,
    MAX_EXPIRATION_SECONDS, MIN_EXPIRATION_SECONDS,
};
use registry::read::ReadAt;

/// The group of TokenRequest.
const GROUP: &str = "authentication.k8s.io";
/// Its kind.
const KIND: &str = "TokenRequest";

/// A tenant's issuer of service account tokens.
#[derive(Clone, Debug)]
pub struct TenantTokens {
    /// The server's issuer and keys.
    pub tokens: Arc<ServiceAccountTokens>,
    /// The tenant (`None`: the root).
    pub tenant: Option<String>,
}

fn invalid(name: &str, causes: Vec<FieldError>) -> ApiError {
    ApiError::invalid(GROUP, KIND, name, causes.into_iter().map(Cause::from).collect())
}

/// Mints a token for the service account the request names.
pub(super) async fn request(
    s: &Scope<'_>,
    tokens: Option<&TenantTokens>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let opts = s.write_options("CreateOptions")?;
    let tokens = tokens.ok_or_else(|| ApiError::internal("service account tokens are not available"))?;
    let (namespace, name) = (s.ns().unwrap_or_default().to_owned(), s.name().to_owned());
    let mut req = decode_object(content_type, body)?;
    let (api_version, kind) = (
        req.get("apiVersion").and_then(Value::as_str).unwrap_or(""),
        req.get("kind").and_then(Value::as_str).unwrap_or(""),
    );
    if (!api_version.is_empty() && api_version != "authentication.k8s.io/v1") || (!kind.is_empty() && kind != KIND) {
        return Err(ApiError::bad_request(format!(
            "the body is a {api_version} {kind}, not an authentication.k8s.io/v1 TokenRequest"
        )));
    }
    if !req.is_object() {
        return Err(ApiError::bad_request("the body is no TokenRequest object"));
    }
    let meta_str = |req: &Value, field: &str| {
        req.pointer(&format!("/metadata/{field}"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned()
    };
    for (field, want, what) in [
        ("name", &name, "must match the service account name if specified"),
        (
            "namespace",
            &namespace,
            "must match the service account namespace if specified",
        ),
    ] {
        let given = meta_str(&req, field);
        if !given.is_empty() && given != *want {
            return Err(invalid(
                &name,
                vec![FieldError::invalid(format!("metadata.{field}"), &given, what)],
            ));
        }
    }
    let account = s.store.get(Some(&namespace), &name, ReadAt::Latest).await?;
    let uid = account
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let given_uid = meta_str(&req, "uid");
    if !given_uid.is_empty() && given_uid != uid {
        return Err(ApiError::conflict(
            GROUP,
            KIND,
            &name,
            &format!(
                "the UID in the token request ({given_uid}) does not match the UID of the service account ({uid})"
            ),
        ));
    }

    // Admission (the webhooks and policies of `serviceaccounts/token`) of the request as sent.
    req["apiVersion"] = json!("authentication.k8s.io/v1");
    req["kind"] = json!(KIND);
    let mut admission_warnings = Vec::new();
    let mut req = s
        .store
        .admit_subresource_create(Some(&namespace), &name, req, opts.dry_run, &mut admission_warnings)
        .await?;
    // The spec, defaulted and checked.
    if !req.get("spec").is_some_and(Value::is_object) {
        req["spec"] = json!({});
    }
    let spec = &mut req["spec"];
    let audiences: Vec<String> = match spec.get("audiences").and_then(Value::as_array) {
        Some(list) if !list.is_empty() => list.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => tokens.tokens.audiences().to_vec(),
    };
    spec["audiences"] = json!(audiences);
    let mut expiration = match spec.get("expirationSeconds") {
        None | Some(Value::Null) => DEFAULT_EXPIRATION_SECONDS,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| ApiError::bad_request("spec.expirationSeconds is not an integer"))?,
    };
    let mut errors = Vec::new();
    if expiration < MIN_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid_json(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if expiration > MAX_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid_json(
            "spec.expirationSeconds",
            &json!(expiration),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if spec
        .get("attestations")
        .is_some_and(|a| a.as_object().is_some_and(|m| !m.is_empty()))
    {
        errors.push(FieldError::invalid(
            "spec.attestations",
            "",
            "attestations may only be specified with a webhook bound object reference",
        ));
    }
    if !errors.is_empty() {
        return Err(invalid("", errors));
    }

    // A Secret the token is bound to.
    let mut secret = None;
    if let Some(bound) = spec.get("boundObjectRef").filter(|b| b.is_object()) {
        let field = |f: &str| bound.get(f).and_then(Value::as_str).unwrap_or("").to_owned();
        let (api_version, kind, bound_name, bound_uid) =
            (field("apiVersion"), field("kind"), field("name"), field("uid"));
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        if !(group.is_empty() && kind == "Secret") {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {api_version}, Kind={kind}: this server binds tokens to Secrets only"
            )));
        }
        let secrets = s
            .store
            .apis
            .store("", "secrets")
            .cloned()
            .ok_or_else(|| ApiError::internal("secrets are not served"))?;
        let key = storage::keys::object_key("", "secrets", Some(&namespace), &bound_name);
        let stored = secrets
            .storage
            .get(&key)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
            .ok_or_else(|| ApiError::not_found("", "secrets", &bound_name))?;
        let stored: Value = serde_json::from_slice(&stored.value).map_err(|e| ApiError::internal(e.to_string()))?;
        let secret_uid = stored
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !bound_uid.is_empty() && bound_uid != secret_uid {
            return Err(ApiError::conflict(
                "",
                "Secret",
                &bound_name,
                &format!(
                    "the UID in the bound object reference ({bound_uid}) does not match the UID in record. The object \
                     might have been deleted and then recreated"
                ),
            ));
        }
        secret = Some(Reference {
            name: bound_name,
            uid: secret_uid.to_owned(),
        });
    }
    let mut warnings = admission_warnings;
    if let Some(max) = tokens.tokens.max_expiration().filter(|max| expiration > *max) {
        warnings.push(format!(
            "requested expiration of {expiration} seconds shortened to {max} seconds"
        ));
        expiration = max;
    }
    spec["expirationSeconds"] = json!(expiration);

    let request = TokenRequest {
        tenant: tokens.tenant.clone(),
        claims: Some(KubernetesClaims {
            namespace: namespace.clone(),
            serviceaccount: Reference {
                name: name.clone(),
                uid: uid.clone(),
            },
            secret,
        }),
        audiences,
        expiration_seconds: expiration,
    };
    let (token, expires) = tokens
        .tokens
        .mint(&request)
        .map_err(|e| ApiError::internal(format!("failed to generate token: {e:#}")))?;
    req["apiVersion"] = json!("authentication.k8s.io/v1");
    req["kind"] = json!(KIND);
    let now = apimachinery::object::now_rfc3339();
    let metadata = req
        .as_object_mut()
        .map(|o| o.entry("metadata").or_insert_with(|| json!({})))
        .filter(|m| m.is_object());
    if let Some(metadata) = metadata {
        for (field, value) in [("name", &name), ("namespace", &namespace), ("uid", &uid)] {
            if metadata.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
                metadata[field] = json!(value);
            }
        }
        metadata["creationTimestamp"] = json!(now);
    }
    let expires = chrono::DateTime::from_timestamp(expires, 0)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default();
    req["status"] = json!({"token": token, "expirationTimestamp": expires});
    Ok(s.respond(StatusCode::CREATED, &req, &warnings))
}

/// Answers a TokenReview: who its `spec.token` authenticates as here, for which of its `spec.audiences`.
pub(super) async fn review(
    s: &Scope<'_>,
    authenticator: Option<&authn::authenticator::Authenticator>,
    tenant: Option<&str>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    s.write_options("CreateOptions")?;
    let authenticator = authenticator.ok_or_else(|| ApiError::internal("token reviews are not available"))?;
    let mut review = decode_object(content_type, body)?;
    if !review.is_object() {
        return Err(ApiError::bad_request("the body is no TokenReview object"));
    }
    let token = review.pointer("/spec/token").and_then(Value::as_str).unwrap_or("");
    if token.is_empty() {
        return Err(ApiError::bad_request(
            "token is required for TokenReview in authentication",
        ));
    }
    let audiences: Vec<String> = review
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default();
    review["status"] = match authenticator.review_token(tenant, token, &audiences).await {
        Ok((user, audiences)) => {
            let mut info = json!({"username": user.name, "groups": user.groups});
            if !user.uid.is_empty() {
                info["uid"] = json!(user.uid);
            }
            if !user.extra.is_empty() {
                info["extra"] = json!(user.extra);
            }
            json!({"authenticated": true, "user": info, "audiences": audiences})
        }
        Err(why) => json!({"user": {}, "error": why}),
    };
    review["apiVersion"] = json!("authentication.k8s.io/v1");
    review["kind"] = json!("TokenReview");
    if !review.get("metadata").is_some_and(Value::is_object) {
        review["metadata"] = json!({});
    }
    review["metadata"]["creationTimestamp"] = Value::Null;
    Ok(s.respond(StatusCode::CREATED, &review, &[]))
}
