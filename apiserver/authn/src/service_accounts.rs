//! Service account tokens, as kube-apiserver's (`pkg/serviceaccount`): JWTs the server signs for a ServiceAccount
//! (`serviceaccounts/<name>/token`, TokenRequest) and authenticates as `system:serviceaccount:<namespace>:<name>` in
//! `system:serviceaccounts` and `system:serviceaccounts:<namespace>`, for as long as the account (and the Secret the
//! token may be bound to) exists with the uid the token names.
//!
//! Keys: the signing key (`--service-account-signing-key-file`, an ECDSA P-256 or RSA private key in PKCS#8, PKCS#1 or
//! SEC1 PEM) and the keys that verify (its public half, and those of `--service-account-key-file`: public keys,
//! certificates or private keys, PEM), each named by kube's key id (the base64url SHA-256 of its DER public key). They are published as a JWK set
//! (`/openid/v1/jwks`) with an OpenID discovery document (`/.well-known/openid-configuration`).
//!
//! Tenants: each tenant is an issuer of its own, `<issuer>/tenants/<name>` (the root's is the issuer itself), so that a
//! tenant's tokens authenticate in that tenant only, and a relying party outside may trust one tenant's tokens.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};

use anyhow::{bail, Context as _};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::UserInfo;

/// The issuer when `--service-account-issuer` is not given (kube's conventional in-cluster one).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
/// The group every service account is in.
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";
/// The prefix of a service account's user name.
pub const USER_PREFIX: &str = "system:serviceaccount:";
/// The user's extra key naming the token (kube's `authentication.kubernetes.io/credential-id`).
pub const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";
/// The shortest validity a TokenRequest may ask (kube's ten minutes).
pub const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest validity a TokenRequest may ask (kube's 2^32 seconds).
pub const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;
/// A TokenRequest's validity when it asks none (kube's hour).
pub const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// How much clock skew is tolerated on `exp` and `nbf`.
const LEEWAY_SECONDS: u64 = 60;

/// A future returned by [`Accounts`].
pub type Lookup<'a> = Pin<Box<dyn Future<Output = anyhow::Result<Option<String>>> + Send + 'a>>;

/// Where the authenticator finds the objects a token names: the uid of a tenant's service account or Secret (`None`
/// when it does not exist or is being deleted).
pub trait Accounts: Send + Sync {
    /// The uid of `resource` (`serviceaccounts` or `secrets`) `namespace/name` in `tenant` (`None`: the root).
    fn uid<'a>(&'a self, tenant: Option<&'a str>, resource: &'a str, namespace: &'a str, name: &'a str) -> Lookup<'a>;
}

/// A key that verifies tokens.
struct VerifyingKey {
    kid: String,
    algorithm: Algorithm,
    key: DecodingKey,
    jwk: Value,
}

/// The private claims of a service account token (kube's `kubernetes.io` claim).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct KubernetesClaims {
    /// The account's namespace.
    pub namespace: String,
    /// The account.
    pub serviceaccount: Reference,
    /// The Secret the token is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<Reference>,
}

/// An object a token names.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Reference {
    /// Its name.
    pub name: String,
    /// Its uid.
    pub uid: String,
}

/// The claims the server signs.
#[derive(Debug, Serialize)]
struct Claims {
    iss: String,
    sub: String,
    aud: Vec<String>,
    exp: i64,
    iat: i64,
    nbf: i64,
    jti: String,
    #[serde(rename = "kubernetes.io")]
    kubernetes: KubernetesClaims,
}

/// The claims read from a token: as the server signs them, or as another kube-apiserver signed them (a single `aud`
/// string, no `jti`, `nbf` or `iat`).
#[derive(Debug, Deserialize)]
struct ReadClaims {
    #[serde(deserialize_with = "one_or_many")]
    aud: Vec<String>,
    iat: Option<i64>,
    #[serde(default)]
    jti: String,
    #[serde(rename = "kubernetes.io")]
    kubernetes: KubernetesClaims,
}

fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

/// Why a bearer token is not a service account's of the request's tenant.
#[derive(Debug, PartialEq, Eq)]
pub enum TokenError {
    /// Not issued by this server (another authenticator may know it).
    NotOurs,
    /// Issued by this server, and not valid here (why, for the log).
    Invalid(String),
}

/// The server's service account token issuer and authenticator.
pub struct ServiceAccountTokens {
    /// The issuers (`--service-account-issuer`): the first signs, each is accepted.
    issuers: Vec<String>,
    /// The audiences the API accepts (`--api-audiences`; the issuers when not given).
    audiences: Vec<String>,
    /// The longest validity a token is given (`--service-account-max-token-expiration`), in seconds.
    max_expiration: Option<i64>,
    signing: EncodingKey,
    algorithm: Algorithm,
    kid: String,
    verifying: Vec<VerifyingKey>,
    jwks_uri: Option<String>,
    accounts: OnceLock<Arc<dyn Accounts>>,
}

impl std::fmt::Debug for ServiceAccountTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountTokens")
            .field("issuers", &self.issuers)
            .field("audiences", &self.audiences)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// What a TokenRequest asks for.
#[derive(Clone, Debug, Default)]
pub struct TokenRequest {
    /// The tenant the account is in (`None`: the root).
    pub tenant: Option<String>,
    /// The account's namespace, name and uid; the Secret bound to, if any.
    pub claims: Option<KubernetesClaims>,
    /// The audiences (the API's when empty).
    pub audiences: Vec<String>,
    /// How long the token is valid, in seconds.
    pub expiration_seconds: i64,
}

impl ServiceAccountTokens {
    /// The issuer and authenticator over the signing key (PEM) and the other verifying keys (PEM files' texts).
    pub fn new(
        issuers: Vec<String>,
        audiences: Vec<String>,
        max_expiration: Option<i64>,
        signing_pem: &str,
        verifying_pems: &[String],
    ) -> anyhow::Result<ServiceAccountTokens> {
        if issuers.is_empty() {
            bail!("no service account issuer");
        }
        for issuer in &issuers {
            if issuer.contains(':') && !issuer.starts_with("https://") {
                bail!("service account issuer {issuer:?}: a URL must use the https scheme");
            }
        }
        // PKCS#1 (kubeadm's `sa.key`) and SEC1 keys read as PKCS#8.
        let signing_pem = &private_key_pkcs8(signing_pem)?;
        let key = rcgen::KeyPair::from_pem(signing_pem).context("the signing key is no PEM private key")?;
        let signer = verifying_key(&rcgen::PublicKeyData::subject_public_key_info(&key))?;
        let signing = match signer.algorithm {
            Algorithm::ES256 => EncodingKey::from_ec_pem(signing_pem.as_bytes()),
            _ => EncodingKey::from_rsa_pem(signing_pem.as_bytes()),
        }
        .context("reading the signing key")?;
        let (algorithm, kid) = (signer.algorithm, signer.kid.clone());
        let mut verifying = vec![signer];
        for pem in verifying_pems {
            for key in public_keys(pem)? {
                if !verifying.iter().any(|v| v.kid == key.kid) {
                    verifying.push(key);
                }
            }
        }
        let audiences = if audiences.is_empty() {
            issuers.clone()
        } else {
            audiences
        };
        Ok(ServiceAccountTokens {
            issuers,
            audiences,
            max_expiration,
            signing,
            algorithm,
            kid,
            verifying,
            jwks_uri: None,
            accounts: OnceLock::new(),
        })
    }

    /// Sets where the authenticator finds the accounts tokens name (once: the tenants, built after this).
    pub fn set_accounts(&self, accounts: Arc<dyn Accounts>) {
        let _ = self.accounts.set(accounts);
    }

    /// The API's audiences: a TokenRequest's default.
    pub fn audiences(&self) -> &[String] {
        &self.audiences
    }

    /// The issuer of `tenant`'s tokens: the first issuer, under `/tenants/<name>` for a tenant.
    pub fn issuer(&self, tenant: Option<&str>) -> String {
        tenant_issuer(&self.issuers[0], tenant)
    }

    /// The longest validity a token is given, in seconds.
    pub fn max_expiration(&self) -> Option<i64> {
        self.max_expiration
    }

    /// Signs a token; its expiry time (seconds since the epoch) with it.
    pub fn mint(&self, request: &TokenRequest) -> anyhow::Result<(String, i64)> {
        let claims = request.claims.clone().context("a token names its service account")?;
        let now = chrono::Utc::now().timestamp();
        let expiration = match self.max_expiration {
            Some(max) => request.expiration_seconds.min(max),
            None => request.expiration_seconds,
        };
        let audiences = if request.audiences.is_empty() {
            self.audiences.clone()
        } else {
            request.audiences.clone()
        };
        let claims = Claims {
            iss: self.issuer(request.tenant.as_deref()),
            sub: format!("{USER_PREFIX}{}:{}", claims.namespace, claims.serviceaccount.name),
            aud: audiences,
            exp: now + expiration,
            iat: now,
            nbf: now,
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: claims,
        };
        let mut header = Header::new(self.algorithm);
        header.kid = Some(self.kid.clone());
        let token = jsonwebtoken::encode(&header, &claims, &self.signing).context("signing the token")?;
        Ok((token, claims.exp))
    }

    /// The user of a service account token presented to `tenant` (`audiences`: those it must name one of; the
    /// API's when empty).
    pub async fn authenticate(
        &self,
        tenant: Option<&str>,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), TokenError> {
        let issuer = unverified_issuer(token).ok_or(TokenError::NotOurs)?;
        let ours: Vec<String> = self.issuers.iter().map(|i| tenant_issuer(i, tenant)).collect();
        if !ours.contains(&issuer) {
            // Another tenant's token (or the root's) is refused here, not passed on; any other issuer's is not ours.
            return Err(if self.is_any_tenants(&issuer) {
                TokenError::Invalid(format!("issued by {issuer}, not this tenant's issuer"))
            } else {
                TokenError::NotOurs
            });
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| TokenError::Invalid(e.to_string()))?;
        let candidates = self
            .verifying
            .iter()
            .filter(|k| k.algorithm == header.alg && header.kid.as_ref().is_none_or(|kid| *kid == k.kid));
        let audiences = if audiences.is_empty() {
            &self.audiences
        } else {
            audiences
        };
        let mut validation = Validation::new(header.alg);
        validation.set_issuer(&ours);
        validation.set_audience(audiences);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        let mut last = TokenError::Invalid("no key verifies the token".into());
        let mut claims = None;
        for key in candidates {
            match jsonwebtoken::decode::<ReadClaims>(token, &key.key, &validation) {
                Ok(data) => {
                    claims = Some(data.claims);
                    break;
                }
                Err(e) => last = TokenError::Invalid(e.to_string()),
            }
        }
        let claims = claims.ok_or(last)?;
        // Issued in the future (kube's check).
        let leeway = i64::try_from(LEEWAY_SECONDS).unwrap_or(0);
        if claims
            .iat
            .is_some_and(|iat| iat > chrono::Utc::now().timestamp() + leeway)
        {
            return Err(TokenError::Invalid("the token is issued in the future".into()));
        }
        let k8s = &claims.kubernetes;
        let accounts = self
            .accounts
            .get()
            .ok_or_else(|| TokenError::Invalid("the server is starting".into()))?;
        let exists = |resource: &'static str, reference: &Reference| {
            let (namespace, reference) = (k8s.namespace.clone(), reference.clone());
            async move {
                match accounts.uid(tenant, resource, &namespace, &reference.name).await {
                    Ok(Some(uid)) if uid == reference.uid => Ok(()),
                    Ok(Some(_)) => Err(TokenError::Invalid(format!(
                        "{resource} {namespace}/{} has another uid than the token's",
                        reference.name
                    ))),
                    Ok(None) => Err(TokenError::Invalid(format!(
                        "{resource} {namespace}/{} is gone",
                        reference.name
                    ))),
                    Err(e) => Err(TokenError::Invalid(format!("looking up {resource}: {e:#}"))),
                }
            }
        };
        exists("serviceaccounts", &k8s.serviceaccount).await?;
        if let Some(secret) = &k8s.secret {
            exists("secrets", secret).await?;
        }
        let namespace = &k8s.namespace;
        let mut user = UserInfo::new(
            format!("{USER_PREFIX}{namespace}:{}", k8s.serviceaccount.name),
            [
                ALL_SERVICE_ACCOUNTS_GROUP.to_owned(),
                format!("{ALL_SERVICE_ACCOUNTS_GROUP}:{namespace}"),
            ],
        );
        user.uid = k8s.serviceaccount.uid.clone();
        if !claims.jti.is_empty() {
            user.extra
                .insert(CREDENTIAL_ID.to_owned(), vec![format!("JTI={}", claims.jti)]);
        }
        let matched = claims.aud.into_iter().filter(|a| audiences.contains(a)).collect();
        Ok((user, matched))
    }

    /// Whether `issuer` is the root's or a tenant's (`<issuer>/tenants/<name>`, one path segment).
    fn is_any_tenants(&self, issuer: &str) -> bool {
        self.issuers.iter().any(|i| {
            issuer == i
                || issuer
                    .strip_prefix(i.trim_end_matches('/'))
                    .and_then(|rest| rest.strip_prefix("/tenants/"))
                    .is_some_and(|name| !name.is_empty() && !name.contains('/'))
        })
    }

    /// The JWK set of the verifying keys (`/openid/v1/jwks`).
    pub fn jwks(&self) -> Value {
        json!({"keys": self.verifying.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()})
    }

    /// Where relying parties fetch the keys (`--service-account-jwks-uri`); `<issuer>/openid/v1/jwks` (the tenant's)
    /// when not set, the issuer being this server's address for discovery to work at all.
    pub fn set_jwks_uri(&mut self, uri: Option<String>) {
        self.jwks_uri = uri;
    }

    /// The OpenID discovery document of `tenant`'s issuer (`/.well-known/openid-configuration`), or `None` where the
    /// issuer is no https URL (kube publishes none then).
    pub fn discovery(&self, tenant: Option<&str>) -> Option<Value> {
        let issuer = self.issuer(tenant);
        if !issuer.starts_with("https://") {
            return None;
        }
        let jwks_uri = self
            .jwks_uri
            .clone()
            .unwrap_or_else(|| format!("{}/openid/v1/jwks", issuer.trim_end_matches('/')));
        let algorithms: Vec<String> = {
            let mut all: Vec<String> = self.verifying.iter().map(|k| format!("{:?}", k.algorithm)).collect();
            all.sort();
            all.dedup();
            all
        };
        Some(json!({
            "issuer": issuer,
            "jwks_uri": jwks_uri,
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algorithms,
        }))
    }
}

fn tenant_issuer(issuer: &str, tenant: Option<&str>) -> String {
    match tenant {
        None => issuer.to_owned(),
        Some(name) => format!("{}/tenants/{name}", issuer.trim_end_matches('/')),
    }
}

/// The `iss` of a JWT, read before its signature is checked (to choose the authenticator).
fn unverified_issuer(token: &str) -> Option<String> {
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()?;
    claims.get("iss")?.as_str().map(str::to_owned)
}

/// A DER element: its tag, its length, its content.
fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// The AlgorithmIdentifier of RSA keys (rsaEncryption, NULL parameters).
const RSA_ALGORITHM: &[u8] = &[
    0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00,
];
/// The AlgorithmIdentifier of P-256 keys (id-ecPublicKey, prime256v1).
const P256_ALGORITHM: &[u8] = &[
    0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03,
    0x01, 0x07,
];

/// A PKCS#8 private key (DER) holding a PKCS#1 RSA key or a SEC1 P-256 key (DER).
fn pkcs8(algorithm: &[u8], key: &[u8]) -> Vec<u8> {
    der(0x30, &[&der(0x02, &[0])[..], algorithm, &der(0x04, key)].concat())
}

/// A PEM block of `label` around `der`.
fn pem_block(label: &str, der: &[u8]) -> String {
    let text = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = text
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap_or_default())
        .collect();
    format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"))
}

/// The first private key of a PEM text as PKCS#8 PEM: `PRIVATE KEY` as it is, `RSA PRIVATE KEY` (PKCS#1) and
/// `EC PRIVATE KEY` (SEC1, P-256) wrapped, as kube's `keyutil.ParsePrivateKeyPEM` reads them all.
fn private_key_pkcs8(pem: &str) -> anyhow::Result<String> {
    for block in x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes()) {
        let block = block.map_err(|e| anyhow::anyhow!("not PEM: {e}"))?;
        let der = match block.label.as_str() {
            "PRIVATE KEY" => block.contents,
            "RSA PRIVATE KEY" => pkcs8(RSA_ALGORITHM, &block.contents),
            "EC PRIVATE KEY" => pkcs8(P256_ALGORITHM, &block.contents),
            // EC PARAMETERS and the like, before the key.
            _ => continue,
        };
        return Ok(pem_block("PRIVATE KEY", &der));
    }
    bail!("no PEM private key found (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)")
}

/// The public keys of a PEM text: `PUBLIC KEY` and `RSA PUBLIC KEY` blocks, certificates' keys, and the public halves
/// of private keys (PKCS#8, PKCS#1 or SEC1), as kube's `keyutil.ParsePublicKeysPEM` reads them.
fn public_keys(pem: &str) -> anyhow::Result<Vec<VerifyingKey>> {
    use x509_parser::prelude::FromDer as _;
    let mut keys = Vec::new();
    for block in x509_parser::pem::Pem::iter_from_buffer(pem.as_bytes()) {
        let block = block.map_err(|e| anyhow::anyhow!("not PEM: {e}"))?;
        match block.label.as_str() {
            "PUBLIC KEY" => keys.push(verifying_key(&block.contents)?),
            "RSA PUBLIC KEY" => {
                let spki = der(
                    0x30,
                    &[RSA_ALGORITHM, &der(0x03, &[&[0u8][..], &block.contents].concat())].concat(),
                );
                keys.push(verifying_key(&spki)?);
            }
            "CERTIFICATE" => {
                let (_, cert) = x509_parser::certificate::X509Certificate::from_der(&block.contents)
                    .map_err(|e| anyhow::anyhow!("not a DER certificate: {e}"))?;
                keys.push(verifying_key(cert.tbs_certificate.subject_pki.raw)?);
            }
            label @ ("PRIVATE KEY" | "RSA PRIVATE KEY" | "EC PRIVATE KEY") => {
                let text = private_key_pkcs8(&pem_block(label, &block.contents))?;
                let key = rcgen::KeyPair::from_pem(&text).context("reading a private key")?;
                keys.push(verifying_key(&rcgen::PublicKeyData::subject_public_key_info(&key))?);
            }
            _ => {}
        }
    }
    if keys.is_empty() {
        bail!("no PEM key found (PUBLIC KEY, RSA PUBLIC KEY, CERTIFICATE or a private key)");
    }
    Ok(keys)
}

/// A verifying key from its DER SubjectPublicKeyInfo: ECDSA P-256 (ES256) or RSA (RS256).
fn verifying_key(spki: &[u8]) -> anyhow::Result<VerifyingKey> {
    use sha2::Digest as _;
    use x509_parser::prelude::FromDer as _;
    let kid = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(spki));
    let (_, info) = x509_parser::x509::SubjectPublicKeyInfo::from_der(spki)
        .map_err(|e| anyhow::anyhow!("not a DER public key: {e}"))?;
    let b64 = |bytes: &[u8]| {
        let first = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
        URL_SAFE_NO_PAD.encode(&bytes[first..])
    };
    match info
        .parsed()
        .map_err(|e| anyhow::anyhow!("reading the public key: {e}"))?
    {
        x509_parser::public_key::PublicKey::EC(point) if point.data().len() == 65 && point.data()[0] == 4 => {
            let (x, y) = point.data()[1..].split_at(32);
            let (x, y) = (URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y));
            Ok(VerifyingKey {
                key: DecodingKey::from_ec_components(&x, &y).context("an ECDSA key")?,
                jwk: json!({"use": "sig", "kty": "EC", "kid": kid, "crv": "P-256", "alg": "ES256", "x": x, "y": y}),
                algorithm: Algorithm::ES256,
                kid,
            })
        }
        x509_parser::public_key::PublicKey::RSA(rsa) => {
            let (n, e) = (b64(rsa.modulus), b64(rsa.exponent));
            Ok(VerifyingKey {
                key: DecodingKey::from_rsa_components(&n, &e).context("an RSA key")?,
                jwk: json!({"use": "sig", "kty": "RSA", "kid": kid, "alg": "RS256", "n": n, "e": e}),
                algorithm: Algorithm::RS256,
                kid,
            })
        }
        _ => bail!("only ECDSA P-256 and RSA keys sign service account tokens"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// An object by tenant, resource, namespace and name.
    type Key = (Option<String>, String, String, String);

    #[derive(Default)]
    struct Objects(Mutex<HashMap<Key, String>>);

    impl Accounts for Objects {
        fn uid<'a>(
            &'a self,
            tenant: Option<&'a str>,
            resource: &'a str,
            namespace: &'a str,
            name: &'a str,
        ) -> Lookup<'a> {
            let key = (
                tenant.map(str::to_owned),
                resource.to_owned(),
                namespace.to_owned(),
                name.to_owned(),
            );
            let uid = self.0.lock().unwrap().get(&key).cloned();
            Box::pin(async move { Ok(uid) })
        }
    }

    fn tokens(key: &rcgen::KeyPair) -> (ServiceAccountTokens, Arc<Objects>) {
        let tokens = ServiceAccountTokens::new(
            vec!["https://issuer.example".into()],
            Vec::new(),
            None,
            &key.serialize_pem(),
            &[],
        )
        .unwrap();
        let objects = Arc::new(Objects::default());
        tokens.set_accounts(objects.clone());
        (tokens, objects)
    }

    fn request(tenant: Option<&str>) -> TokenRequest {
        TokenRequest {
            tenant: tenant.map(str::to_owned),
            claims: Some(KubernetesClaims {
                namespace: "ns".into(),
                serviceaccount: Reference {
                    name: "builder".into(),
                    uid: "uid-1".into(),
                },
                secret: None,
            }),
            audiences: Vec::new(),
            expiration_seconds: 3600,
        }
    }

    #[tokio::test]
    async fn tokens_authenticate_their_account_in_their_tenant_only() {
        for alg in [&rcgen::PKCS_ECDSA_P256_SHA256] {
            let key = rcgen::KeyPair::generate_for(alg).unwrap();
            let (tokens, objects) = tokens(&key);
            let (token, exp) = tokens.mint(&request(Some("acme"))).unwrap();
            assert!(exp > chrono::Utc::now().timestamp() + 3500);
            // The account is missing: refused.
            let gone = tokens.authenticate(Some("acme"), &token, &[]).await.unwrap_err();
            assert!(
                matches!(gone, TokenError::Invalid(ref why) if why.contains("gone")),
                "{gone:?}"
            );
            objects.0.lock().unwrap().insert(
                (
                    Some("acme".into()),
                    "serviceaccounts".into(),
                    "ns".into(),
                    "builder".into(),
                ),
                "uid-1".into(),
            );
            let (user, audiences) = tokens.authenticate(Some("acme"), &token, &[]).await.unwrap();
            assert_eq!(user.name, "system:serviceaccount:ns:builder");
            assert_eq!(user.uid, "uid-1");
            assert_eq!(user.groups, ["system:serviceaccounts", "system:serviceaccounts:ns"]);
            assert!(user.extra[CREDENTIAL_ID][0].starts_with("JTI="));
            assert_eq!(audiences, ["https://issuer.example"]);
            // Another tenant's, the root's, another audience's: refused; a stranger's token is not ours.
            assert!(matches!(
                tokens.authenticate(Some("other"), &token, &[]).await,
                Err(TokenError::Invalid(_))
            ));
            assert!(matches!(
                tokens.authenticate(None, &token, &[]).await,
                Err(TokenError::Invalid(_))
            ));
            let elsewhere = tokens
                .authenticate(Some("acme"), &token, &["https://other".into()])
                .await;
            assert!(matches!(elsewhere, Err(TokenError::Invalid(_))));
            assert_eq!(
                tokens.authenticate(None, "not.a.jwt", &[]).await.unwrap_err(),
                TokenError::NotOurs
            );
            // Its account made again (another uid): refused.
            objects.0.lock().unwrap().insert(
                (
                    Some("acme".into()),
                    "serviceaccounts".into(),
                    "ns".into(),
                    "builder".into(),
                ),
                "uid-2".into(),
            );
            assert!(tokens.authenticate(Some("acme"), &token, &[]).await.is_err());
        }
    }

    #[tokio::test]
    async fn tokens_of_another_kube_apiserver_are_read() {
        // One audience as a string, no jti, nbf or iat (go-jose's form, older kube-apiservers' claims).
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let (tokens, objects) = tokens(&key);
        objects.0.lock().unwrap().insert(
            (None, "serviceaccounts".into(), "ns".into(), "builder".into()),
            "uid-1".into(),
        );
        let claims = json!({"iss": "https://issuer.example", "sub": "system:serviceaccount:ns:builder",
            "aud": "https://issuer.example", "exp": chrono::Utc::now().timestamp() + 600,
            "kubernetes.io": {"namespace": "ns", "serviceaccount": {"name": "builder", "uid": "uid-1"}}});
        let encoding = EncodingKey::from_ec_pem(key.serialize_pem().as_bytes()).unwrap();
        let token = jsonwebtoken::encode(&Header::new(Algorithm::ES256), &claims, &encoding).unwrap();
        let (user, _) = tokens.authenticate(None, &token, &[]).await.unwrap();
        assert_eq!(user.name, "system:serviceaccount:ns:builder");
        assert!(!user.extra.contains_key(CREDENTIAL_ID));
        // Issued in the future: refused.
        let mut future = claims.clone();
        future["iat"] = json!(chrono::Utc::now().timestamp() + 3600);
        let token = jsonwebtoken::encode(&Header::new(Algorithm::ES256), &future, &encoding).unwrap();
        assert!(tokens.authenticate(None, &token, &[]).await.is_err());
    }

    #[tokio::test]
    async fn keys_are_published_and_other_keys_verify() {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let old = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let tokens = ServiceAccountTokens::new(
            vec!["https://issuer.example/".into(), "https://old.example".into()],
            vec!["api".into()],
            Some(1200),
            &key.serialize_pem(),
            &[old.public_key_pem(), key.public_key_pem()],
        )
        .unwrap();
        let jwks = tokens.jwks();
        assert_eq!(jwks["keys"].as_array().unwrap().len(), 2, "{jwks}");
        assert_eq!(jwks["keys"][0]["kty"], "EC");
        assert_eq!(tokens.issuer(Some("acme")), "https://issuer.example/tenants/acme");
        let discovery = tokens.discovery(Some("acme")).unwrap();
        assert_eq!(
            discovery["jwks_uri"],
            "https://issuer.example/tenants/acme/openid/v1/jwks"
        );
        assert_eq!(discovery["id_token_signing_alg_values_supported"], json!(["ES256"]));
        let (_, exp) = tokens.mint(&request(None)).unwrap();
        assert!(
            exp <= chrono::Utc::now().timestamp() + 1200,
            "the longest validity holds"
        );
        assert!(ServiceAccountTokens::new(vec!["http://x".into()], vec![], None, &key.serialize_pem(), &[]).is_err());
        // An issuer that is no https URL publishes no discovery document.
        let named = ServiceAccountTokens::new(vec!["named".into()], vec![], None, &key.serialize_pem(), &[]).unwrap();
        assert!(named.discovery(None).is_none());
        assert!(public_keys("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----\n").is_err());
        // A certificate's key verifies; a SEC1 key signs (its PKCS#8 form taken apart).
        let cert = rcgen::CertificateParams::new(vec!["x".to_owned()])
            .unwrap()
            .self_signed(&old)
            .unwrap();
        assert_eq!(
            public_keys(&cert.pem()).unwrap()[0].kid,
            public_keys(&old.public_key_pem()).unwrap()[0].kid
        );
    }
}
