//! A real OCI registry for the tests: Debian's `docker-registry` (the CNCF distribution server) on a free loopback port,
//! serving HTTPS with a certificate from a CA of its own; anonymous, with basic authentication from an htpasswd file,
//! or with bearer tokens (JWTs a test mints, signed by a key whose certificate chains to the registry's token CA).
//! Killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;
use tempfile::TempDir;

use crate::kube_apiserver::Ca;

/// A running registry.
pub struct Registry {
    child: Child,
    dir: TempDir,
    /// `127.0.0.1:<port>`: the registry part of references.
    pub host: String,
    /// The CA that signed its serving certificate.
    pub ca: Ca,
    /// With token authentication: the signing key (PEM) and certificate (DER) of the tokens.
    token_signer: Option<(String, Vec<u8>)>,
}

/// How a registry authenticates.
#[derive(Clone, Copy)]
pub enum RegistryAuth<'a> {
    /// Anyone may pull and push.
    Anonymous,
    /// HTTP basic authentication of these (name, password) pairs.
    Basic(&'a [(&'a str, &'a str)]),
    /// Bearer tokens ([`Registry::token`]).
    Token,
}

/// The token issuer and service (audience) the registry expects.
const TOKEN_ISSUER: &str = "test-token-issuer";
const TOKEN_SERVICE: &str = "test-registry";

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The registry binary: `$DOCKER_REGISTRY`, else `docker-registry` on the PATH (`apt-get install docker-registry`).
fn binary() -> PathBuf {
    std::env::var_os("DOCKER_REGISTRY").map_or_else(|| PathBuf::from("docker-registry"), PathBuf::from)
}

impl Registry {
    /// Starts a registry; with `users` ((name, password) pairs), only they may pull and push, else anyone.
    pub fn start(users: &[(&str, &str)]) -> Registry {
        match users {
            [] => Registry::start_with(RegistryAuth::Anonymous),
            users => Registry::start_with(RegistryAuth::Basic(users)),
        }
    }

    /// Starts a registry that authenticates as `auth` says.
    pub fn start_with(auth: RegistryAuth<'_>) -> Registry {
        const ATTEMPTS: usize = 5;
        let mut last = String::new();
        for _ in 0..ATTEMPTS {
            match Registry::try_start(auth) {
                Ok(registry) => return registry,
                // Another test may have taken the port between choosing it and the registry binding it.
                Err(e) => last = format!("{e:#}"),
            }
        }
        panic!("the OCI registry did not start ({ATTEMPTS} attempts): {last}");
    }

    fn try_start(auth: RegistryAuth<'_>) -> anyhow::Result<Registry> {
        let dir = tempfile::tempdir()?;
        let port = crate::free_port()?;
        let host = format!("127.0.0.1:{port}");
        let ca = Ca::new("test registry CA");
        let (cert, key) = ca.issue("registry", None, &["127.0.0.1", "localhost"], true);
        std::fs::write(dir.path().join("cert.pem"), cert)?;
        std::fs::write(dir.path().join("key.pem"), key)?;
        let mut token_signer = None;
        let auth = match auth {
            RegistryAuth::Anonymous => String::new(),
            RegistryAuth::Basic(users) => {
                let htpasswd: String = users
                    .iter()
                    .map(|(user, password)| {
                        let hash = bcrypt::hash(password, 4).expect("a bcrypt hash");
                        format!("{user}:{hash}\n")
                    })
                    .collect();
                std::fs::write(dir.path().join("htpasswd"), htpasswd)?;
                format!(
                    "auth:\n  htpasswd:\n    realm: test-registry\n    path: {}\n",
                    dir.path().join("htpasswd").display()
                )
            }
            RegistryAuth::Token => {
                let token_ca = Ca::new("test token CA");
                let (cert, key) = token_ca.issue("token-signer", None, &["token-signer"], true);
                let der = pem_to_der(&cert);
                std::fs::write(dir.path().join("token-ca.pem"), &token_ca.pem)?;
                token_signer = Some((key, der));
                // The realm is where a client without a token would get one; these tests bring their own.
                format!(
                    "auth:\n  token:\n    realm: https://{host}/no-token-service\n    service: {TOKEN_SERVICE}\n    \
                     issuer: {TOKEN_ISSUER}\n    rootcertbundle: {}\n",
                    dir.path().join("token-ca.pem").display()
                )
            }
        };
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {root}\n  delete:\n    enabled: true\n\
             http:\n  addr: {host}\n  tls:\n    certificate: {dir}/cert.pem\n    key: {dir}/key.pem\n{auth}",
            root = dir.path().join("data").display(),
            dir = dir.path().display(),
        );
        std::fs::write(dir.path().join("config.yml"), config)?;
        let log = std::fs::File::create(dir.path().join("registry.log"))?;
        let child = Command::new(binary())
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} (install it with `apt-get install docker-registry`, or set DOCKER_REGISTRY)",
                    binary().display()
                )
            })?;
        let mut registry = Registry {
            child,
            dir,
            host,
            ca,
            token_signer,
        };
        registry.wait_ready()?;
        Ok(registry)
    }

    /// Waits until the registry answers its API's base path over TLS (200, or 401 when it wants credentials).
    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let client = reqwest::blocking::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(self.ca.pem.as_bytes())?)
            .timeout(Duration::from_secs(2))
            .build()?;
        let url = format!("https://{}/v2/", self.host);
        let mut answered = false;
        crate::wait_until(Duration::from_secs(20), || {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Exited: the port was taken, or the configuration is wrong.
                let _ = status;
                return true;
            }
            answered = client
                .get(&url)
                .send()
                .is_ok_and(|r| matches!(r.status().as_u16(), 200 | 401));
            answered
        });
        if answered {
            return Ok(());
        }
        let log = std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default();
        anyhow::bail!("the registry at {} never answered; its log:\n{log}", self.host)
    }

    /// The CA certificate, as a file (for `--ca-file`).
    pub fn ca_file(&self) -> PathBuf {
        let path = self.dir.path().join("ca.pem");
        std::fs::write(&path, &self.ca.pem).expect("writing the CA file");
        path
    }

    /// A bearer token for `actions` (`pull`, `push`) on `repository`, as the registry's token service would issue
    /// it: a JWT signed by the token signer, whose certificate (in `x5c`) chains to the registry's token CA.
    pub fn token(&self, repository: &str, actions: &[&str]) -> String {
        use base64::Engine as _;
        let (key, der) = self
            .token_signer
            .as_ref()
            .expect("a registry started with token authentication");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = serde_json::json!({
            "iss": TOKEN_ISSUER, "sub": "robot", "aud": TOKEN_SERVICE,
            "exp": now + 600, "nbf": now - 60, "iat": now, "jti": format!("t-{now}-{repository}"),
            "access": [{"type": "repository", "name": repository, "actions": actions}],
        });
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.x5c = Some(vec![base64::engine::general_purpose::STANDARD.encode(der)]);
        let key = jsonwebtoken::EncodingKey::from_ec_pem(key.as_bytes()).expect("the token signer's key");
        jsonwebtoken::encode(&header, &claims, &key).expect("a signed token")
    }

    /// The registry's working directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// The DER bytes of a one-certificate PEM.
fn pem_to_der(pem: &str) -> Vec<u8> {
    use base64::Engine as _;
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .expect("a PEM certificate")
}
