//! JWT bearer tokens from OIDC issuers, configured by a structured `--authentication-config` file
//! (`apiserver.config.k8s.io/v1` AuthenticationConfiguration, kube's `jwt` authenticators): the issuer's keys come
//! from its discovery document (`<url>/.well-known/openid-configuration` → `jwks_uri`) over HTTPS, trusting the
//! configured `certificateAuthority`; a token is valid when its signature verifies with one of them, its `iss` is the
//! issuer's URL, its `aud` holds one of the audiences, it has not expired (a minute of clock skew allowed) and the
//! claim validation rules hold. Claims map to the user as configured (username, groups with prefixes, uid).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use base64::Engine as _;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::Value;

use super::UserInfo;

/// How much clock skew is tolerated on `exp`, `nbf` and `iat`.
const LEEWAY_SECONDS: u64 = 60;
/// The shortest time between two fetches of an issuer's keys.
const REFRESH_INTERVAL: Duration = Duration::from_secs(10);

/// A claim mapped to a user attribute.
#[derive(Clone, Debug, Default)]
struct ClaimMapping {
    claim: String,
    prefix: String,
}

/// One configured issuer.
#[derive(Clone, Debug)]
struct IssuerConfig {
    url: String,
    discovery_url: Option<String>,
    audiences: Vec<String>,
    ca_pem: Option<String>,
    username: ClaimMapping,
    groups: Option<ClaimMapping>,
    uid_claim: Option<String>,
    required: Vec<(String, String)>,
}

fn str_of<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Parses and validates an AuthenticationConfiguration's `jwt` list.
fn parse(text: &str) -> anyhow::Result<Vec<IssuerConfig>> {
    let doc: Value = yaml_serde::from_str(text).context("the authentication configuration is not valid YAML")?;
    let kind = str_of(&doc, "/kind");
    let api_version = str_of(&doc, "/apiVersion");
    if kind != "AuthenticationConfiguration" || !api_version.starts_with("apiserver.config.k8s.io/") {
        bail!(
            "expected kind AuthenticationConfiguration of apiserver.config.k8s.io/v1, found {api_version:?} {kind:?}"
        );
    }
    let mut out: Vec<IssuerConfig> = Vec::new();
    for (i, j) in doc
        .get("jwt")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let at = format!("jwt[{i}]");
        let url = str_of(j, "/issuer/url").trim_end_matches('/').to_owned();
        if !url.starts_with("https://") {
            bail!("{at}.issuer.url must be an https:// URL, not {url:?}");
        }
        if out.iter().any(|o| o.url == url) {
            bail!("{at}.issuer.url {url:?} is configured twice");
        }
        let audiences: Vec<String> = j
            .pointer("/issuer/audiences")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        if audiences.is_empty() {
            bail!("{at}.issuer.audiences: at least one audience is required");
        }
        let policy = str_of(j, "/issuer/audienceMatchPolicy");
        if audiences.len() > 1 && policy != "MatchAny" {
            bail!("{at}.issuer.audienceMatchPolicy must be MatchAny when several audiences are given");
        }
        let mapping = |name: &str| -> anyhow::Result<Option<ClaimMapping>> {
            let Some(m) = j.pointer(&format!("/claimMappings/{name}")) else {
                return Ok(None);
            };
            if m.get("expression").is_some() {
                bail!("{at}.claimMappings.{name}.expression: CEL expressions are not supported; use claim and prefix");
            }
            let claim = str_of(m, "/claim");
            if claim.is_empty() {
                bail!("{at}.claimMappings.{name}.claim is required");
            }
            let Some(prefix) = m.get("prefix").and_then(Value::as_str) else {
                bail!("{at}.claimMappings.{name}.prefix is required when claim is set (it may be \"\")");
            };
            Ok(Some(ClaimMapping {
                claim: claim.to_owned(),
                prefix: prefix.to_owned(),
            }))
        };
        let username = mapping("username")?.with_context(|| format!("{at}.claimMappings.username is required"))?;
        let groups = mapping("groups")?;
        let uid_claim = j
            .pointer("/claimMappings/uid/claim")
            .and_then(Value::as_str)
            .map(str::to_owned);
        for unsupported in ["/userValidationRules", "/claimMappings/extra"] {
            if j.pointer(unsupported).is_some_and(|v| !v.is_null()) {
                bail!("{at}{}: CEL rules are not supported", unsupported.replace('/', "."));
            }
        }
        let mut required = Vec::new();
        for (k, rule) in j
            .get("claimValidationRules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            if rule.get("expression").is_some() {
                bail!("{at}.claimValidationRules[{k}].expression: CEL expressions are not supported");
            }
            let claim = str_of(rule, "/claim");
            if claim.is_empty() {
                bail!("{at}.claimValidationRules[{k}].claim is required");
            }
            required.push((claim.to_owned(), str_of(rule, "/requiredValue").to_owned()));
        }
        let ca_pem = j
            .pointer("/issuer/certificateAuthority")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned);
        if let Some(pem) = &ca_pem {
            reqwest::Certificate::from_pem_bundle(pem.as_bytes())
                .with_context(|| format!("{at}.issuer.certificateAuthority is not PEM"))?;
        }
        out.push(IssuerConfig {
            url,
            discovery_url: j
                .pointer("/issuer/discoveryURL")
                .and_then(Value::as_str)
                .map(str::to_owned),
            audiences,
            ca_pem,
            username,
            groups,
            uid_claim,
            required,
        });
    }
    if doc.get("anonymous").is_some_and(|a| !a.is_null()) {
        bail!("anonymous: configure anonymous access with --anonymous-auth");
    }
    Ok(out)
}

/// The keys of one issuer, fetched and refreshed.
struct Issuer {
    config: IssuerConfig,
    client: reqwest::Client,
    keys: RwLock<Option<Arc<JwkSet>>>,
    last_fetch: Mutex<Option<Instant>>,
    fetching: tokio::sync::Mutex<()>,
}

impl Issuer {
    fn new(config: IssuerConfig) -> anyhow::Result<Issuer> {
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(Duration::from_secs(10))
            .tls_built_in_root_certs(config.ca_pem.is_none());
        if let Some(pem) = &config.ca_pem {
            for cert in reqwest::Certificate::from_pem_bundle(pem.as_bytes())? {
                builder = builder.add_root_certificate(cert);
            }
        }
        Ok(Issuer {
            config,
            client: builder.build()?,
            keys: RwLock::new(None),
            last_fetch: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
        })
    }

    async fn fetch(&self) -> anyhow::Result<Arc<JwkSet>> {
        let discovery = self
            .config
            .discovery_url
            .clone()
            .unwrap_or_else(|| format!("{}/.well-known/openid-configuration", self.config.url));
        let doc: Value = self
            .client
            .get(&discovery)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let issuer = str_of(&doc, "/issuer").trim_end_matches('/');
        if issuer != self.config.url {
            bail!(
                "the discovery document names issuer {issuer:?}, not {:?}",
                self.config.url
            );
        }
        let jwks_uri = str_of(&doc, "/jwks_uri");
        if jwks_uri.is_empty() {
            bail!("the discovery document has no jwks_uri");
        }
        let keys: JwkSet = self
            .client
            .get(jwks_uri)
            .send()
            .await?
            .error_for_status()?
            .json()
            .await?;
        let keys = Arc::new(keys);
        if let Ok(mut slot) = self.keys.write() {
            *slot = Some(keys.clone());
        }
        Ok(keys)
    }

    /// The keys, fetched now when there are none yet or when `kid` is unknown (at most every few seconds).
    async fn keys(&self, kid: Option<&str>) -> anyhow::Result<Arc<JwkSet>> {
        let current = self.keys.read().ok().and_then(|k| k.clone());
        if let Some(keys) = &current {
            if kid.is_none_or(|kid| keys.find(kid).is_some()) {
                return Ok(keys.clone());
            }
        }
        let _one_at_a_time = self.fetching.lock().await;
        let recent = self
            .last_fetch
            .lock()
            .ok()
            .and_then(|t| *t)
            .is_some_and(|t| t.elapsed() < REFRESH_INTERVAL);
        if recent {
            if let Some(keys) = self.keys.read().ok().and_then(|k| k.clone()) {
                return Ok(keys);
            }
        }
        if let Ok(mut t) = self.last_fetch.lock() {
            *t = Some(Instant::now());
        }
        self.fetch().await
    }
}

/// The JWT authenticators.
#[derive(Clone)]
pub struct JwtAuthenticator {
    issuers: Arc<Vec<Issuer>>,
}

impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let urls: Vec<&str> = self.issuers.iter().map(|i| i.config.url.as_str()).collect();
        f.debug_struct("JwtAuthenticator").field("issuers", &urls).finish()
    }
}

/// Why a token is refused.
#[derive(Debug)]
pub enum JwtError {
    /// The token is not a JWT of a configured issuer: another authenticator may know it.
    NotOurs,
    /// The token claims a configured issuer but is not valid.
    Invalid(String),
}

fn unverified_claims(token: &str) -> Option<Value> {
    let mut parts = token.split('.');
    let (_, payload, _) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn claim_strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

impl JwtAuthenticator {
    /// The authenticators of a configuration file's text; starts fetching every issuer's keys in the background
    /// (an issuer that is down does not stop the server from starting).
    pub fn from_config(text: &str) -> anyhow::Result<Option<JwtAuthenticator>> {
        let configs = parse(text)?;
        if configs.is_empty() {
            return Ok(None);
        }
        let issuers = configs
            .into_iter()
            .map(Issuer::new)
            .collect::<anyhow::Result<Vec<_>>>()?;
        let this = JwtAuthenticator {
            issuers: Arc::new(issuers),
        };
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            for i in 0..this.issuers.len() {
                let issuers = this.issuers.clone();
                runtime.spawn(async move {
                    let issuer = &issuers[i];
                    if let Err(e) = issuer.keys(None).await {
                        tracing::warn!(issuer = %issuer.config.url, error = format!("{e:#}"), "fetching the issuer's keys failed; retried on use");
                    }
                });
            }
        }
        Ok(Some(this))
    }

    /// The user a token names, [`JwtError::NotOurs`] when it is not a JWT of a configured issuer.
    pub async fn authenticate(&self, token: &str) -> Result<UserInfo, JwtError> {
        let claims = unverified_claims(token).ok_or(JwtError::NotOurs)?;
        let iss = claims
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or("")
            .trim_end_matches('/');
        let issuer = self
            .issuers
            .iter()
            .find(|i| i.config.url == iss)
            .ok_or(JwtError::NotOurs)?;
        let header = jsonwebtoken::decode_header(token).map_err(|e| JwtError::Invalid(format!("bad header: {e}")))?;
        if !matches!(
            header.alg,
            Algorithm::RS256
                | Algorithm::RS384
                | Algorithm::RS512
                | Algorithm::PS256
                | Algorithm::PS384
                | Algorithm::PS512
                | Algorithm::ES256
                | Algorithm::ES384
        ) {
            return Err(JwtError::Invalid(format!("unsupported algorithm {:?}", header.alg)));
        }
        let keys = issuer
            .keys(header.kid.as_deref())
            .await
            .map_err(|e| JwtError::Invalid(format!("the issuer's keys are unavailable: {e:#}")))?;
        let candidates: Vec<&Jwk> = match header.kid.as_deref() {
            Some(kid) => keys.find(kid).into_iter().collect(),
            None => keys.keys.iter().collect(),
        };
        let mut validation = Validation::new(header.alg);
        validation.leeway = LEEWAY_SECONDS;
        validation.set_audience(&issuer.config.audiences);
        validation.set_issuer(&[&issuer.config.url, &format!("{}/", issuer.config.url)]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        validation.validate_nbf = true;
        let mut last = String::from("no key of the issuer matches the token");
        let mut verified = None;
        for jwk in candidates {
            let Ok(key) = DecodingKey::from_jwk(jwk) else {
                continue;
            };
            match jsonwebtoken::decode::<Value>(token, &key, &validation) {
                Ok(data) => {
                    verified = Some(data.claims);
                    break;
                }
                Err(e) => last = e.to_string(),
            }
        }
        let claims = verified.ok_or(JwtError::Invalid(last))?;
        if let Some(iat) = claims.get("iat").and_then(Value::as_i64) {
            if iat > chrono::Utc::now().timestamp() + LEEWAY_SECONDS as i64 {
                return Err(JwtError::Invalid("the token was issued in the future".into()));
            }
        }
        self.user(&issuer.config, &claims).map_err(JwtError::Invalid)
    }

    /// Maps verified claims to a user, checking the claim validation rules.
    fn user(&self, config: &IssuerConfig, claims: &Value) -> Result<UserInfo, String> {
        for (claim, required) in &config.required {
            if claims.get(claim).and_then(Value::as_str) != Some(required.as_str()) {
                return Err(format!("claim {claim:?} is not {required:?}"));
            }
        }
        let username = claims
            .get(&config.username.claim)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| format!("the token has no {:?} claim", config.username.claim))?;
        if config.username.claim == "email" && claims.get("email_verified").is_some_and(|v| v != &Value::Bool(true)) {
            return Err("email_verified is not true".into());
        }
        let groups = config
            .groups
            .as_ref()
            .map(|g| {
                claim_strings(claims.get(&g.claim))
                    .into_iter()
                    .map(|x| format!("{}{x}", g.prefix))
                    .collect()
            })
            .unwrap_or_default();
        let uid = config
            .uid_claim
            .as_ref()
            .and_then(|c| claims.get(c))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        Ok(UserInfo {
            name: format!("{}{username}", config.username.prefix),
            uid,
            groups,
            extra: BTreeMap::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn config(mappings: &str) -> String {
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer:\n    url: \
             https://issuer.example\n    audiences: [kube]\n  claimMappings:\n{mappings}"
        )
    }

    #[test]
    fn configurations_are_validated_with_the_field_named() {
        let err = |text: &str| format!("{:#}", parse(text).unwrap_err());
        assert!(
            err(&config("    username: {claim: sub}\n")).contains("jwt[0].claimMappings.username.prefix is required")
        );
        assert!(
            err(&config("    username: {expression: 'claims.sub'}\n")).contains("CEL expressions are not supported")
        );
        assert!(err(&config("    groups: {claim: g, prefix: ''}\n")).contains("claimMappings.username is required"));
        assert!(err("kind: Other").contains("AuthenticationConfiguration"));
        let plain_http = config("    username: {claim: sub, prefix: ''}\n").replace("https://", "http://");
        assert!(err(&plain_http).contains("must be an https:// URL"));
        assert_eq!(
            parse(&config("    username: {claim: sub, prefix: 'oidc:'}\n"))
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn claims_map_to_a_user_with_prefixes() {
        let configs = parse(&config(
            "    username: {claim: email, prefix: ''}\n    groups: {claim: groups, prefix: 'oidc:'}\n    uid: {claim: sub}\n",
        ))
        .unwrap();
        let auth = JwtAuthenticator {
            issuers: Arc::new(Vec::new()),
        };
        let user = auth
            .user(
                &configs[0],
                &json!({"email": "jane@example.com", "email_verified": true, "groups": ["dev", "ops"], "sub": "123"}),
            )
            .unwrap();
        assert_eq!(user.name, "jane@example.com");
        assert_eq!(user.groups, ["oidc:dev", "oidc:ops"]);
        assert_eq!(user.uid, "123");
        let single = auth
            .user(&configs[0], &json!({"email": "a@b", "groups": "dev"}))
            .unwrap();
        assert_eq!(single.groups, ["oidc:dev"]);
        assert!(auth
            .user(&configs[0], &json!({"email": "a@b", "email_verified": false}))
            .is_err());
        assert!(auth.user(&configs[0], &json!({"sub": "x"})).is_err());
    }
}
