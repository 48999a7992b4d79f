//! A client of another API server from a kubeconfig (client-go's `clientcmd`, for what a delegating server needs):
//! the current context's cluster (`server`, `certificate-authority[-data]`) and user (`client-certificate[-data]`
//! with `client-key[-data]`, `token`, or `tokenFile`, re-read as client-go does so that a rotated service account
//! token is used). Relative paths are relative to the kubeconfig. The webhook authorizer asks through it, and
//! `--authentication-kubeconfig` reads the front proxy's trust from it ([`crate::delegated`]).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use base64::Engine as _;
use serde_json::Value;

/// How long a token read from `tokenFile` is used before the file is read again (client-go: about a minute).
const TOKEN_FILE_TTL: Duration = Duration::from_secs(60);

/// A client of the API server a kubeconfig names.
pub struct KubeClient {
    /// The server's URL, without a trailing slash.
    pub server: String,
    client: reqwest::Client,
    credential: Credential,
}

enum Credential {
    None,
    Token(String),
    /// `tokenFile`: the token last read and when.
    TokenFile {
        path: PathBuf,
        last: Mutex<Option<(String, Instant)>>,
    },
}

/// The bytes of a kubeconfig field given inline (`<name>-data`, base64) or as a file (`<name>`), relative paths
/// being relative to the kubeconfig's directory.
fn material(section: &Value, name: &str, dir: &Path) -> anyhow::Result<Option<Vec<u8>>> {
    if let Some(data) = section.get(format!("{name}-data")).and_then(Value::as_str) {
        return Ok(Some(
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .with_context(|| format!("{name}-data is not base64"))?,
        ));
    }
    if let Some(file) = section.get(name).and_then(Value::as_str) {
        let path = dir.join(file);
        return Ok(Some(
            std::fs::read(&path).with_context(|| format!("reading {name} {}", path.display()))?,
        ));
    }
    Ok(None)
}

impl KubeClient {
    /// The client of a kubeconfig file's current context (its first context when none is current).
    pub fn from_kubeconfig(path: &Path, timeout: Duration) -> anyhow::Result<KubeClient> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let doc: Value = yaml_serde::from_str(&text).context("the kubeconfig is not valid YAML")?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let named = |list: &str, name: &str, field: &str| -> Option<Value> {
            doc.get(list)?
                .as_array()?
                .iter()
                .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
                .and_then(|e| e.get(field).cloned())
        };
        let current = doc.get("current-context").and_then(Value::as_str).unwrap_or("");
        let context = named("contexts", current, "context")
            .or_else(|| doc.pointer("/contexts/0/context").cloned())
            .context("the kubeconfig has no context")?;
        let cluster_name = context.get("cluster").and_then(Value::as_str).unwrap_or("");
        let user_name = context.get("user").and_then(Value::as_str).unwrap_or("");
        let cluster = named("clusters", cluster_name, "cluster").context("the context's cluster is missing")?;
        let user = named("users", user_name, "user").unwrap_or(Value::Null);
        let server = cluster.get("server").and_then(Value::as_str).unwrap_or("");
        if !server.starts_with("https://") {
            bail!("the kubeconfig's server must be an https:// URL, not {server:?}");
        }
        let mut builder = reqwest::Client::builder().use_rustls_tls().timeout(timeout);
        if let Some(ca) = material(&cluster, "certificate-authority", dir)? {
            builder = builder.tls_built_in_root_certs(false);
            for cert in reqwest::Certificate::from_pem_bundle(&ca).context("the kubeconfig's certificate authority")? {
                builder = builder.add_root_certificate(cert);
            }
        }
        if let (Some(cert), Some(key)) = (
            material(&user, "client-certificate", dir)?,
            material(&user, "client-key", dir)?,
        ) {
            builder = builder.identity(
                reqwest::Identity::from_pem(&[cert, key].concat()).context("the kubeconfig's client certificate")?,
            );
        }
        let credential = match (
            user.get("tokenFile").and_then(Value::as_str),
            user.get("token").and_then(Value::as_str),
        ) {
            (Some(file), _) => {
                let client = Credential::TokenFile {
                    path: dir.join(file),
                    last: Mutex::new(None),
                };
                // Read once now, so that a missing file is said at start.
                client.token().with_context(|| format!("reading tokenFile {file}"))?;
                client
            }
            (None, Some(token)) => Credential::Token(token.to_owned()),
            (None, None) => Credential::None,
        };
        Ok(KubeClient {
            server: server.trim_end_matches('/').to_owned(),
            client: builder.build()?,
            credential,
        })
    }

    /// A request to `path` on the server (a full URL is taken as it is), with the kubeconfig's bearer token.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let url = if path.starts_with("https://") {
            path.to_owned()
        } else {
            format!("{}{path}", self.server)
        };
        let request = self.client.request(method, url);
        match self.credential.token() {
            Ok(Some(token)) => request.bearer_auth(token),
            Ok(None) => request,
            Err(e) => {
                // The last good token is kept; with none, the request goes without and is refused by the server.
                tracing::warn!(error = %e, "reading the kubeconfig's tokenFile failed");
                request
            }
        }
    }
}

impl Credential {
    fn token(&self) -> anyhow::Result<Option<String>> {
        match self {
            Credential::None => Ok(None),
            Credential::Token(token) => Ok(Some(token.clone())),
            Credential::TokenFile { path, last } => {
                let mut last = last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                if let Some((token, at)) = last.as_ref() {
                    if at.elapsed() < TOKEN_FILE_TTL {
                        return Ok(Some(token.clone()));
                    }
                }
                let read = std::fs::read_to_string(path)
                    .map_err(anyhow::Error::from)
                    .and_then(|text| match text.trim() {
                        "" => bail!("{} is empty", path.display()),
                        token => Ok(token.to_owned()),
                    });
                match (read, last.as_ref()) {
                    (Ok(token), _) => {
                        *last = Some((token.clone(), Instant::now()));
                        Ok(Some(token))
                    }
                    (Err(e), Some((token, _))) => {
                        tracing::warn!(error = %e, path = %path.display(), "keeping the last token read");
                        Ok(Some(token.clone()))
                    }
                    (Err(e), None) => Err(e),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kubeconfig(dir: &Path, user: &str) -> PathBuf {
        let path = dir.join("kubeconfig");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://example.test:6443/\n\
                 users:\n- name: u\n  user:\n{user}\ncontexts:\n- name: x\n  context: {{cluster: c, user: u}}\n\
                 current-context: x\n"
            ),
        )
        .unwrap();
        path
    }

    #[test]
    fn a_token_file_is_read_relative_to_the_kubeconfig_and_kept_when_it_goes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), "first\n").unwrap();
        let client =
            KubeClient::from_kubeconfig(&kubeconfig(dir.path(), "    tokenFile: token"), Duration::from_secs(1))
                .unwrap();
        assert_eq!(client.server, "https://example.test:6443");
        assert_eq!(client.credential.token().unwrap().as_deref(), Some("first"));
        std::fs::remove_file(dir.path().join("token")).unwrap();
        if let Credential::TokenFile { last, .. } = &client.credential {
            // As if a minute had passed: the file is read again, and its last token kept when it cannot be.
            let token = last.lock().unwrap().take().unwrap().0;
            *last.lock().unwrap() = Some((token, Instant::now().checked_sub(TOKEN_FILE_TTL).unwrap()));
        }
        assert_eq!(client.credential.token().unwrap().as_deref(), Some("first"));
    }

    #[test]
    fn a_missing_token_file_or_a_plain_http_server_is_refused_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let err = KubeClient::from_kubeconfig(
            &kubeconfig(dir.path(), "    tokenFile: nothing"),
            Duration::from_secs(1),
        )
        .err()
        .unwrap();
        assert!(format!("{err:#}").contains("tokenFile nothing"), "{err:#}");
        let path = dir.path().join("plain");
        std::fs::write(
            &path,
            "clusters:\n- name: c\n  cluster: {server: 'http://x'}\ncontexts:\n- name: x\n  context: {cluster: c}\n",
        )
        .unwrap();
        let err = KubeClient::from_kubeconfig(&path, Duration::from_secs(1))
            .err()
            .unwrap();
        assert!(err.to_string().contains("https://"), "{err}");
    }
}
