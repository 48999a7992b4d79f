//! The union of authenticators (kube's `union.New` with anonymous behind `NewFailOnError`): front-proxy headers,
//! then the x509 client certificate, then a bearer token (the token file's, a service account's, an OIDC issuer's),
//! then anonymous. The first that
//! recognises the request names the user; a credential that is presented but wrong is refused (401), never
//! treated as anonymous.

use hyper::header::AUTHORIZATION;
use hyper::HeaderMap;

use super::request_header::RequestHeaderConfig;
use super::token_file::TokenFile;
use super::x509::PeerCertificate;
use super::UserInfo;

/// Why a request is not authenticated: logged, while the client gets a bare 401.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unauthenticated(pub String);

/// The configured authenticators.
#[derive(Clone, Debug, Default)]
pub struct Authenticator {
    /// Front-proxy headers, when `--requestheader-client-ca-file` is set.
    pub request_header: Option<RequestHeaderConfig>,
    /// Static bearer tokens, when `--token-auth-file` is set.
    pub tokens: Option<TokenFile>,
    /// JWTs of OIDC issuers, when `--authentication-config` configures some.
    pub jwt: Option<super::jwt::JwtAuthenticator>,
    /// The server's own service account tokens.
    pub service_accounts: Option<std::sync::Arc<super::service_accounts::ServiceAccountTokens>>,
    /// Whether requests without credentials are `system:anonymous` (else 401).
    pub anonymous: bool,
}

impl Authenticator {
    /// Who makes a request to `tenant` (`None`: the root): `peer` is what its connection's client certificate
    /// proves, `headers` its headers. Authenticated users are in `system:authenticated`; anonymous ones in
    /// `system:unauthenticated`.
    pub async fn authenticate(
        &self,
        tenant: Option<&str>,
        peer: &PeerCertificate,
        headers: &HeaderMap,
    ) -> Result<UserInfo, Unauthenticated> {
        let mut errors = Vec::new();
        if let Some(request_header) = &self.request_header {
            match request_header.authenticate(peer, headers) {
                Ok(Some(user)) => return Ok(user.authenticated()),
                Ok(None) => {}
                Err(e) => errors.push(e),
            }
        }
        match &peer.user {
            Some(Ok(user)) => return Ok(user.clone().authenticated()),
            Some(Err(e)) => errors.push(e.clone()),
            None => {}
        }
        if let Some(token) = bearer_token(headers) {
            match token {
                Some(token) => {
                    if let Some(user) = self.tokens.as_ref().and_then(|t| t.authenticate(token)) {
                        return Ok(user.clone().authenticated());
                    }
                    if let Some(accounts) = &self.service_accounts {
                        use super::service_accounts::TokenError;
                        match accounts.authenticate(tenant, token, &[]).await {
                            Ok((user, _)) => return Ok(user.authenticated()),
                            Err(TokenError::NotOurs) => {}
                            Err(TokenError::Invalid(why)) => {
                                return Err(Unauthenticated(format!("invalid service account token: {why}")))
                            }
                        }
                    }
                    match &self.jwt {
                        Some(jwt) => match jwt.authenticate(token).await {
                            Ok(user) => return Ok(user.authenticated()),
                            Err(super::jwt::JwtError::NotOurs) => errors.push("invalid bearer token".into()),
                            Err(super::jwt::JwtError::Invalid(why)) => errors.push(format!("invalid JWT: {why}")),
                        },
                        None => errors.push("invalid bearer token".into()),
                    }
                }
                None => errors.push("the Authorization header's bearer token is empty".into()),
            }
        }
        if !errors.is_empty() {
            return Err(Unauthenticated(errors.join("; ")));
        }
        if self.anonymous {
            return Ok(UserInfo::anonymous());
        }
        Err(Unauthenticated(
            "no credentials, and anonymous requests are disabled".into(),
        ))
    }
}

impl Authenticator {
    /// A TokenReview's answer, from the bearer token authenticators: the user of `token` presented to `tenant`, and
    /// the audiences among `audiences` (the API's when empty) it is valid for, or why it is not. Authenticators that
    /// know no audiences (the token file, OIDC issuers) are valid for the API's, as kube wraps them.
    pub async fn review_token(
        &self,
        tenant: Option<&str>,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), String> {
        let api: Vec<String> = self
            .service_accounts
            .as_ref()
            .map(|s| s.audiences().to_vec())
            .unwrap_or_default();
        let agnostic = |user: UserInfo| {
            if audiences.is_empty() {
                return Ok((user.authenticated(), api.clone()));
            }
            let shared: Vec<String> = audiences.iter().filter(|a| api.contains(a)).cloned().collect();
            if shared.is_empty() {
                return Err(format!(
                    "token audiences {api:?} is invalid for the target audiences {audiences:?}"
                ));
            }
            Ok((user.authenticated(), shared))
        };
        if let Some(user) = self.tokens.as_ref().and_then(|t| t.authenticate(token)) {
            return agnostic(user.clone());
        }
        if let Some(accounts) = &self.service_accounts {
            use super::service_accounts::TokenError;
            match accounts.authenticate(tenant, token, audiences).await {
                Ok((user, valid_for)) => return Ok((user.authenticated(), valid_for)),
                Err(TokenError::NotOurs) => {}
                Err(TokenError::Invalid(why)) => return Err(format!("invalid service account token: {why}")),
            }
        }
        if let Some(jwt) = &self.jwt {
            match jwt.authenticate(token).await {
                Ok(user) => return agnostic(user),
                Err(super::jwt::JwtError::NotOurs) => {}
                Err(super::jwt::JwtError::Invalid(why)) => return Err(format!("invalid JWT: {why}")),
            }
        }
        Err("invalid bearer token".into())
    }
}

/// The bearer token of an `Authorization: Bearer <token>` header: `None` without one, `Some(None)` when empty.
fn bearer_token(headers: &HeaderMap) -> Option<Option<&str>> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ').unwrap_or((value.trim(), ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let token = token.trim();
    Some((!token.is_empty()).then_some(token))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP};

    fn authn(anonymous: bool) -> Authenticator {
        Authenticator {
            request_header: Some(RequestHeaderConfig::default()),
            tokens: Some(TokenFile::parse(b"t0ken,bob,uid-b,\"dev\"\n").unwrap()),
            jwt: None,
            service_accounts: None,
            anonymous,
        }
    }

    fn with_auth(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, value.parse().unwrap());
        h
    }

    #[tokio::test]
    async fn tokens_certificates_and_anonymous() {
        let a = authn(true);
        let none = PeerCertificate::default();
        let bob = a.authenticate(None, &none, &with_auth("Bearer t0ken")).await.unwrap();
        assert_eq!((bob.name.as_str(), bob.uid.as_str()), ("bob", "uid-b"));
        assert_eq!(bob.groups, ["dev", AUTHENTICATED_GROUP]);

        let anon = a.authenticate(None, &none, &HeaderMap::new()).await.unwrap();
        assert_eq!(
            (anon.name.as_str(), anon.groups.as_slice()),
            (ANONYMOUS_USER, &[UNAUTHENTICATED_GROUP.to_owned()][..])
        );

        let cert = PeerCertificate {
            user: Some(Ok(UserInfo::new("alice", ["ops"]))),
            proxy_name: None,
        };
        let alice = a.authenticate(None, &cert, &with_auth("Bearer t0ken")).await.unwrap();
        assert_eq!(alice.name, "alice", "the certificate is tried before the token");
    }

    #[tokio::test]
    async fn wrong_credentials_are_refused_even_with_anonymous_allowed() {
        let a = authn(true);
        let none = PeerCertificate::default();
        for header in ["Bearer nope", "Bearer ", "bearer  "] {
            assert!(
                a.authenticate(None, &none, &with_auth(header)).await.is_err(),
                "{header:?}"
            );
        }
        let bad_cert = PeerCertificate {
            user: Some(Err("unknown authority".into())),
            proxy_name: None,
        };
        assert!(a.authenticate(None, &bad_cert, &HeaderMap::new()).await.is_err());
        // Basic credentials are no bearer token: nothing is presented to us.
        assert_eq!(
            a.authenticate(None, &none, &with_auth("Basic YTpi"))
                .await
                .unwrap()
                .name,
            ANONYMOUS_USER
        );
        let strict = authn(false);
        assert!(strict.authenticate(None, &none, &HeaderMap::new()).await.is_err());
    }
}
