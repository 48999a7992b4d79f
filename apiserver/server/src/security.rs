//! The security flags of `serve` (kube-apiserver's SecureServing, Authentication, Authorization and in-flight
//! options) and what they build: the secure port's TLS and the handler chain.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use super::filters::max_inflight::MaxInFlight;
use super::filters::FlowControl;
use super::filters::{Chain, Parts};
use super::pki::Pki;
use super::tls::{server_config, ReloadingCertificate};
use super::SecurePort;
use authn::authenticator::Authenticator;
use authn::request_header::RequestHeaderConfig;
use authn::token_file::TokenFile;
use authn::x509::CaPool;
use authz::{AlwaysAllow, Authorizer, PrivilegedGroup, Union};
use storage::compactor::parse_duration;

/// How requests are authorized.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuthorizationMode {
    /// Role-based access control: Roles, ClusterRoles and their bindings.
    #[value(name = "RBAC")]
    Rbac,
    /// Everything is allowed: for development only.
    #[value(name = "AlwaysAllow")]
    AlwaysAllow,
    /// Everything is refused (but for `system:masters`): for tests.
    #[value(name = "AlwaysDeny")]
    AlwaysDeny,
    /// Ask another API server by SubjectAccessReview (`--authorization-webhook-config-file`), as an aggregated
    /// server asks the kube-apiserver in front of it.
    #[value(name = "Webhook")]
    Webhook,
}

/// Flags for TLS, authentication, authorization and overload protection.
#[derive(Args, Debug, Clone)]
pub struct SecurityOptions {
    /// The serving certificate (PEM, the chain's leaf first). Without it, a CA and a certificate for
    /// localhost/127.0.0.1/::1 and the host name are made once under `<data-dir>/pki/`. Reloaded when it changes.
    #[arg(long, value_name = "FILE", requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The serving certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// CA certificates whose client certificates authenticate users (CN = user, O = groups), besides the server's
    /// own CA under `<data-dir>/pki/`.
    #[arg(long, value_name = "FILE")]
    pub client_ca_file: Option<PathBuf>,
    /// Static bearer tokens, as kube-apiserver's CSV: `token,user,uid,"group1,group2"`.
    #[arg(long, value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,
    /// The CA of front proxies (such as kube-apiserver's aggregator) whose X-Remote-* headers name the user.
    #[arg(long, value_name = "FILE")]
    pub requestheader_client_ca_file: Option<PathBuf>,
    /// Common names a front proxy's certificate may have (any when empty).
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub requestheader_allowed_names: Vec<String>,
    /// Headers naming the user, from a front proxy.
    #[arg(long, value_name = "HEADERS", value_delimiter = ',', default_value = "X-Remote-User")]
    pub requestheader_username_headers: Vec<String>,
    /// Headers naming the groups, from a front proxy.
    #[arg(
        long,
        value_name = "HEADERS",
        value_delimiter = ',',
        default_value = "X-Remote-Group"
    )]
    pub requestheader_group_headers: Vec<String>,
    /// Prefixes of headers carrying extra user attributes, from a front proxy.
    #[arg(
        long,
        value_name = "PREFIXES",
        value_delimiter = ',',
        default_value = "X-Remote-Extra-"
    )]
    pub requestheader_extra_headers_prefix: Vec<String>,
    /// The kubeconfig of the kube-apiserver this server is aggregated behind: the front proxy's CA, allowed names
    /// and headers, and the cluster's client CA, are read at start from its ConfigMap
    /// kube-system/extension-apiserver-authentication, where the `--requestheader-client-ca-file` and
    /// `--client-ca-file` flags do not give them.
    #[arg(long, value_name = "FILE")]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// Serve requests without credentials as `system:anonymous` (authorization decides what they may do).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub anonymous_auth: bool,
    /// How requests are authorized: a comma-separated list of authorizers asked in order (RBAC, Webhook,
    /// AlwaysAllow, AlwaysDeny); members of `system:masters` are always allowed.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "RBAC")]
    pub authorization_mode: Vec<AuthorizationMode>,
    /// The most read-only requests served at once (0: no limit); watches are not counted. With API Priority and
    /// Fairness, the server's seats are this and `--max-mutating-requests-inflight` together.
    #[arg(long, default_value_t = 400, value_name = "N")]
    pub max_requests_inflight: usize,
    /// The most mutating requests served at once (0: no limit).
    #[arg(long, default_value_t = 200, value_name = "N")]
    pub max_mutating_requests_inflight: usize,
    /// API Priority and Fairness: requests classified by the FlowSchemas (flowcontrol.apiserver.k8s.io/v1) share
    /// the server's seats by priority level, in fair queues; false: fixed limits of read-only and mutating
    /// requests, with a queue per tenant.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub enable_priority_and_fairness: bool,
    /// How long a request that is not a watch may take before it answers 504 (`0`: no limit).
    #[arg(long, default_value = "60s", value_name = "DURATION", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// The audit log.
    #[command(flatten)]
    pub audit: audit::options::AuditOptions,
    /// The kubeconfig of the API server the Webhook authorization mode asks (its server, CA and credentials).
    #[arg(long, value_name = "FILE")]
    pub authorization_webhook_config_file: Option<PathBuf>,
    /// How long the Webhook mode remembers an allowed answer.
    #[arg(long, default_value = "5m", value_name = "DURATION", value_parser = parse_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// How long the Webhook mode remembers a refusal.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    /// Structured authentication configuration (apiserver.config.k8s.io/v1 AuthenticationConfiguration): JWT
    /// authenticators of OIDC issuers (issuer url, audiences, certificateAuthority, claim mappings and rules).
    #[arg(long, value_name = "FILE")]
    pub authentication_config: Option<PathBuf>,
    /// The most watches one user may have open at once (0: no limit); `system:masters` is exempt.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_watches_per_user: usize,
    /// The issuer of service account tokens (`iss`), a URL (https) or a name; repeated, the first signs and every
    /// one is accepted. A tenant's tokens are issued by `<issuer>/tenants/<name>`.
    #[arg(long, value_name = "ISSUER", default_value = authn::service_accounts::DEFAULT_ISSUER)]
    pub service_account_issuer: Vec<String>,
    /// The private key that signs service account tokens (ECDSA P-256 or RSA; PKCS#8, PKCS#1 or SEC1 PEM). Without it, a key is
    /// made once and kept in the store, shared by the hosts that share the store.
    #[arg(long, value_name = "FILE")]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// More keys that verify service account tokens (PEM public keys, certificates, or private keys), such as a key
    /// rotated out; repeated for several files.
    #[arg(long, value_name = "FILE")]
    pub service_account_key_file: Vec<PathBuf>,
    /// The longest a service account token is valid, whatever a TokenRequest asks: between 1 hour and 2^32 seconds
    /// (none when not given, or 0).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub service_account_max_token_expiration: Option<Duration>,
    /// Where the service account issuer's discovery document says its keys are (`<issuer>/openid/v1/jwks` when not
    /// given).
    #[arg(long, value_name = "URL")]
    pub service_account_jwks_uri: Option<String>,
    /// The audiences the API accepts in service account tokens, and a TokenRequest's default (the issuers when not
    /// given).
    #[arg(long, value_name = "AUDIENCES", value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// How long a client may take to send a request's headers before it is disconnected.
    #[arg(long, default_value = "30s", value_name = "DURATION", value_parser = parse_duration)]
    pub header_read_timeout: Duration,
}

/// Where the key that signs service account tokens is kept when `--service-account-signing-key-file` is not given:
/// in the store, outside the API's keys, so that every host sharing the store signs and verifies with the same key.
pub const SIGNING_KEY_KEY: &str = "/wasm-apiserver/service-account-signing-key";

/// The signing key kept in `storage`, made (ECDSA P-256, PKCS#8 PEM) by the first host that needs it.
pub async fn stored_signing_key(storage: &dyn storage::Storage) -> anyhow::Result<String> {
    let read = |value: Vec<u8>| String::from_utf8(value).context("the stored service account signing key is not text");
    if let Some(kv) = storage.get(SIGNING_KEY_KEY).await? {
        return read(kv.value);
    }
    let key = rcgen::KeyPair::generate().context("generating the service account signing key")?;
    match storage.create(SIGNING_KEY_KEY, key.serialize_pem().into_bytes()).await {
        Ok(kv) => {
            tracing::info!("made the service account signing key, kept in the store");
            read(kv.value)
        }
        // Another host made it first.
        Err(storage::StorageError::AlreadyExists { .. }) => match storage.get(SIGNING_KEY_KEY).await? {
            Some(kv) => read(kv.value),
            None => anyhow::bail!("the service account signing key was made and is gone"),
        },
        Err(e) => Err(e.into()),
    }
}

impl SecurityOptions {
    /// API Priority and Fairness over the root tenant's configuration (its controller started), or the fixed
    /// limits.
    fn flow_control(&self, tenants: &tenants::Tenants) -> FlowControl {
        // No limit (0) is no priority level to share.
        if !self.enable_priority_and_fairness || self.max_requests_inflight + self.max_mutating_requests_inflight == 0 {
            return FlowControl::MaxInFlight(MaxInFlight::new(
                self.max_requests_inflight,
                self.max_mutating_requests_inflight,
            ));
        }
        let seats = self.max_requests_inflight + self.max_mutating_requests_inflight;
        let seats = u32::try_from(seats).unwrap_or(u32::MAX);
        let apf = flowcontrol::PriorityAndFairness::new(seats, self.request_timeout);
        flowcontrol::controller::start(&apf, &tenants.root().api.registry);
        FlowControl::PriorityAndFairness(apf)
    }

    /// With `--authentication-kubeconfig`: reads kube-system/extension-apiserver-authentication (retrying until
    /// `deadline`, as the kube-apiserver may be starting too), writes its CAs under `<data-dir>/pki/delegated/` and
    /// takes what the flags do not give: the front proxy's CA with its allowed names and headers, and the client CA.
    pub async fn delegate_authentication(&mut self, data_dir: &Path, deadline: Duration) -> anyhow::Result<()> {
        let Some(file) = &self.authentication_kubeconfig else {
            return Ok(());
        };
        let client = authn::kubeconfig::KubeClient::from_kubeconfig(file, Duration::from_secs(10))
            .with_context(|| format!("in --authentication-kubeconfig {}", file.display()))?;
        let until = std::time::Instant::now() + deadline;
        let mut delay = Duration::from_millis(200);
        let read = loop {
            match authn::delegated::read(&client).await {
                Ok(read) => break read,
                Err(e) if std::time::Instant::now() + delay < until => {
                    tracing::warn!(error = %format!("{e:#}"), "reading the front proxy's trust; retrying");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(e.context("--authentication-kubeconfig")),
            }
        };
        let dir = data_dir.join("pki").join("delegated");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let write = |name: &str, pem: &str| -> anyhow::Result<PathBuf> {
            let path = dir.join(name);
            std::fs::write(&path, pem).with_context(|| format!("writing {}", path.display()))?;
            Ok(path)
        };
        if self.requestheader_client_ca_file.is_none() {
            if let Some(ca) = &read.requestheader_client_ca {
                self.requestheader_client_ca_file = Some(write("requestheader-client-ca.crt", ca)?);
                self.requestheader_allowed_names = read.requestheader_allowed_names.clone();
                for (flag, from) in [
                    (
                        &mut self.requestheader_username_headers,
                        &read.requestheader_username_headers,
                    ),
                    (&mut self.requestheader_group_headers, &read.requestheader_group_headers),
                    (
                        &mut self.requestheader_extra_headers_prefix,
                        &read.requestheader_extra_headers_prefix,
                    ),
                ] {
                    if !from.is_empty() {
                        flag.clone_from(from);
                    }
                }
            }
        }
        if self.client_ca_file.is_none() {
            if let Some(ca) = &read.client_ca {
                self.client_ca_file = Some(write("client-ca.crt", ca)?);
            }
        }
        tracing::info!(
            server = %client.server,
            front_proxy = self.requestheader_client_ca_file.is_some(),
            allowed_names = ?self.requestheader_allowed_names,
            "read the front proxy's trust from kube-system/extension-apiserver-authentication"
        );
        Ok(())
    }

    /// The secure port's TLS and client CAs. Makes the server's own PKI under `<data-dir>/pki/` if needed.
    pub fn secure_port(&self, data_dir: &Path) -> anyhow::Result<SecurePort> {
        let pki = Pki::in_data_dir(data_dir);
        pki.ensure()?;
        let (cert, key) = match (&self.tls_cert_file, &self.tls_private_key_file) {
            (Some(cert), Some(key)) => (cert.clone(), key.clone()),
            _ => (pki.serving_cert_path(), pki.serving_key_path()),
        };
        let serving = ReloadingCertificate::load(cert, key).context("loading the serving certificate")?;
        let ca_path = pki.ca_cert_path();
        let mut client_cas: Vec<&Path> = vec![&ca_path];
        if let Some(file) = &self.client_ca_file {
            client_cas.push(file);
        }
        let client_ca = CaPool::from_files(&client_cas).context("loading --client-ca-file")?;
        let proxy_ca = self
            .requestheader_client_ca_file
            .as_deref()
            .map(|file| CaPool::from_files(&[file]))
            .transpose()
            .context("loading --requestheader-client-ca-file")?;
        let mut roots = vec![client_ca.roots()];
        roots.extend(proxy_ca.as_ref().map(CaPool::roots));
        let config = server_config(Arc::new(serving), roots)?;
        Ok(SecurePort {
            acceptor: tokio_rustls::TlsAcceptor::from(config),
            client_ca: Some(client_ca),
            proxy_ca,
        })
    }

    /// The CA bundle that verifies the secure port, published in every namespace as the `kube-root-ca.crt`
    /// ConfigMap: the server's own CA (made under `<data-dir>/pki/` by [`SecurityOptions::secure_port`]), or with
    /// `--tls-cert-file` the last certificate of that file's chain (its root, or the certificate itself when it is
    /// alone).
    pub fn root_ca(&self, data_dir: &Path) -> anyhow::Result<String> {
        let file = match &self.tls_cert_file {
            Some(file) => file.clone(),
            None => Pki::in_data_dir(data_dir).ca_cert_path(),
        };
        let text =
            std::fs::read_to_string(&file).with_context(|| format!("reading the root CA bundle {}", file.display()))?;
        if self.tls_cert_file.is_none() {
            return Ok(text);
        }
        const BEGIN: &str = "-----BEGIN CERTIFICATE-----";
        let last = text
            .rfind(BEGIN)
            .with_context(|| format!("no certificate in {}", file.display()))?;
        Ok(format!("{}\n", text[last..].trim_end()))
    }

    /// The service account tokens' issuer and authenticator, over `--service-account-signing-key-file` (or the key
    /// kept in `storage`, [`stored_signing_key`]) and `--service-account-key-file`.
    pub async fn service_account_tokens(
        &self,
        storage: &dyn storage::Storage,
    ) -> anyhow::Result<Arc<authn::service_accounts::ServiceAccountTokens>> {
        let signing = match &self.service_account_signing_key_file {
            Some(file) => std::fs::read_to_string(file)
                .with_context(|| format!("reading --service-account-signing-key-file {}", file.display()))?,
            None => stored_signing_key(storage).await?,
        };
        let mut verifying = Vec::new();
        for file in &self.service_account_key_file {
            verifying.push(
                std::fs::read_to_string(file)
                    .with_context(|| format!("reading --service-account-key-file {}", file.display()))?,
            );
        }
        // kube-apiserver's range (0: no limit).
        let max = match self.service_account_max_token_expiration {
            None => None,
            Some(d) if d.is_zero() => None,
            Some(d) if d < Duration::from_secs(3600) || d.as_secs() > 1 << 32 => anyhow::bail!(
                "--service-account-max-token-expiration must be between 1 hour and 2^32 seconds, or 0 for no limit"
            ),
            Some(d) => Some(i64::try_from(d.as_secs()).unwrap_or(i64::MAX)),
        };
        let mut tokens = authn::service_accounts::ServiceAccountTokens::new(
            self.service_account_issuer.clone(),
            self.api_audiences.clone(),
            max,
            &signing,
            &verifying,
        )
        .context("service account tokens")?;
        tokens.set_jwks_uri(self.service_account_jwks_uri.clone());
        Ok(Arc::new(tokens))
    }

    /// The authorizer of `--authorization-mode`, and with RBAC its rules, loaded (and followed) from the
    /// registry's storage.
    pub async fn authorizer(
        &self,
        registry: &Arc<registry::Registry>,
    ) -> anyhow::Result<(Arc<dyn Authorizer>, Option<Arc<authz::rbac::Rbac>>)> {
        let mut members: Vec<Box<dyn Authorizer>> = vec![Box::new(PrivilegedGroup)];
        if self.authorization_mode.contains(&AuthorizationMode::Webhook) {
            // As a delegating server: the probes do not depend on the server it asks.
            members.push(Box::new(authz::HealthChecks));
        }
        let mut rbac = None;
        for mode in &self.authorization_mode {
            match mode {
                AuthorizationMode::Rbac => {
                    let r = authz::rbac::Rbac::new(registry.clone());
                    r.start().await;
                    members.push(Box::new(r.clone()));
                    rbac = Some(r);
                }
                AuthorizationMode::AlwaysAllow => {
                    tracing::warn!("--authorization-mode=AlwaysAllow: every authenticated request is allowed");
                    members.push(Box::new(AlwaysAllow));
                }
                AuthorizationMode::AlwaysDeny => members.push(Box::new(authz::AlwaysDeny)),
                AuthorizationMode::Webhook => {
                    let file = self
                        .authorization_webhook_config_file
                        .as_ref()
                        .context("--authorization-mode=Webhook needs --authorization-webhook-config-file")?;
                    let webhook = authz::webhook::Webhook::from_kubeconfig(
                        file,
                        self.authorization_webhook_cache_authorized_ttl,
                        self.authorization_webhook_cache_unauthorized_ttl,
                    )
                    .with_context(|| format!("in --authorization-webhook-config-file {}", file.display()))?;
                    members.push(Box::new(webhook));
                }
            }
        }
        Ok((Arc::new(Union(members)), rbac))
    }

    /// Who requests are from: the front proxy's headers, client certificates, `--token-auth-file`, service account
    /// tokens (`service_accounts`, told where the accounts are by [`SecurityOptions::chain`]), OIDC issuers'
    /// JWTs, anonymous. Built before the tenants: TokenReviews ask it too.
    pub fn authenticator(
        &self,
        service_accounts: Arc<authn::service_accounts::ServiceAccountTokens>,
        secure: bool,
    ) -> anyhow::Result<Arc<Authenticator>> {
        let tokens = self.token_auth_file.as_deref().map(TokenFile::load).transpose()?;
        if let Some(tokens) = &tokens {
            tracing::info!(tokens = tokens.len(), "bearer tokens from --token-auth-file");
        }
        let jwt = match &self.authentication_config {
            Some(file) => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("reading --authentication-config {}", file.display()))?;
                authn::jwt::JwtAuthenticator::from_config(&text)
                    .with_context(|| format!("in --authentication-config {}", file.display()))?
            }
            None => None,
        };
        let request_header = self.requestheader_client_ca_file.as_ref().map(|_| RequestHeaderConfig {
            allowed_names: self.requestheader_allowed_names.clone(),
            username_headers: self.requestheader_username_headers.clone(),
            group_headers: self.requestheader_group_headers.clone(),
            extra_headers_prefixes: self.requestheader_extra_headers_prefix.clone(),
        });
        if !secure && (tokens.is_some() || request_header.is_some()) {
            tracing::warn!("authentication flags have no effect without the secure port");
        }
        Ok(Arc::new(Authenticator {
            request_header,
            tokens,
            jwt,
            service_accounts: Some(service_accounts),
            anonymous: self.anonymous_auth,
        }))
    }

    /// The handler chain in front of `tenants`, authenticating with `authenticator`.
    pub fn chain(&self, tenants: Arc<tenants::Tenants>, authenticator: Arc<Authenticator>) -> anyhow::Result<Chain> {
        if let Some(service_accounts) = &authenticator.service_accounts {
            service_accounts.set_accounts(tenants.clone());
        }
        Ok(Chain::new(Parts {
            flow_control: self.flow_control(&tenants),
            tenants,
            authenticator,
            request_timeout: self.request_timeout,
            watch_limit: super::filters::watch_limit::WatchLimit::new(self.max_watches_per_user),
            auditor: self.audit.auditor()?,
        }))
    }
}
