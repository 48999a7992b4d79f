//! `--authorization-mode=Webhook`: decisions delegated to another API server by SubjectAccessReview (kube's webhook
//! authorizer, and how kubernetes/sample-apiserver asks the kube-apiserver it is aggregated behind). The server and
//! credentials come from a kubeconfig (`--authorization-webhook-config-file`); answers are cached, allowed ones for
//! `--authorization-webhook-cache-authorized-ttl` (5 min) and refused ones for `...-unauthorized-ttl` (30 s), as kube.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use base64::Engine as _;
use serde_json::{json, Value};

use super::{Attributes, Authorizer, Decision};
use storage::BoxFuture;

/// The most answers kept; the cache is emptied when it is full.
const CACHE_ENTRIES: usize = 10_000;

/// The webhook authorizer.
pub struct Webhook {
    url: String,
    client: reqwest::Client,
    bearer: Option<String>,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    cache: Mutex<HashMap<String, (Decision, Instant)>>,
}

/// The bytes of a kubeconfig field given inline (`<name>-data`, base64) or as a file (`<name>`), relative paths
/// being relative to the kubeconfig.
fn material(section: &Value, name: &str, dir: &std::path::Path) -> anyhow::Result<Option<Vec<u8>>> {
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

impl Webhook {
    /// The authorizer of a kubeconfig file: its current context's cluster and user.
    pub fn from_kubeconfig(
        path: &std::path::Path,
        allowed_ttl: Duration,
        denied_ttl: Duration,
    ) -> anyhow::Result<Webhook> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let doc: Value = yaml_serde::from_str(&text).context("the webhook kubeconfig is not valid YAML")?;
        let dir = path.parent().unwrap_or(std::path::Path::new("."));
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
            .context("the webhook kubeconfig has no context")?;
        let cluster_name = context.get("cluster").and_then(Value::as_str).unwrap_or("");
        let user_name = context.get("user").and_then(Value::as_str).unwrap_or("");
        let cluster = named("clusters", cluster_name, "cluster").context("the context's cluster is missing")?;
        let user = named("users", user_name, "user").unwrap_or(Value::Null);
        let server = cluster.get("server").and_then(Value::as_str).unwrap_or("");
        if !server.starts_with("https://") {
            bail!("the webhook's server must be an https:// URL, not {server:?}");
        }
        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .timeout(Duration::from_secs(10));
        if let Some(ca) = material(&cluster, "certificate-authority", dir)? {
            builder = builder.tls_built_in_root_certs(false);
            for cert in reqwest::Certificate::from_pem_bundle(&ca).context("the webhook's certificate authority")? {
                builder = builder.add_root_certificate(cert);
            }
        }
        if let (Some(cert), Some(key)) = (
            material(&user, "client-certificate", dir)?,
            material(&user, "client-key", dir)?,
        ) {
            builder = builder.identity(
                reqwest::Identity::from_pem(&[cert, key].concat()).context("the webhook's client certificate")?,
            );
        }
        let bearer = user.get("token").and_then(Value::as_str).map(str::to_owned);
        let url = if server.ends_with("subjectaccessreviews") {
            server.to_owned()
        } else {
            format!(
                "{}/apis/authorization.k8s.io/v1/subjectaccessreviews",
                server.trim_end_matches('/')
            )
        };
        Ok(Webhook {
            url,
            client: builder.build()?,
            bearer,
            allowed_ttl,
            denied_ttl,
            cache: Mutex::new(HashMap::new()),
        })
    }

    fn review(a: &Attributes) -> Value {
        let mut spec = json!({"user": a.user.name, "groups": a.user.groups});
        if !a.user.uid.is_empty() {
            spec["uid"] = json!(a.user.uid);
        }
        if !a.user.extra.is_empty() {
            spec["extra"] = json!(a.user.extra);
        }
        if a.resource_request {
            spec["resourceAttributes"] = json!({"namespace": a.namespace, "verb": a.verb, "group": a.api_group,
                "version": a.api_version, "resource": a.resource, "subresource": a.subresource, "name": a.name});
        } else {
            spec["nonResourceAttributes"] = json!({"path": a.path, "verb": a.verb});
        }
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
    }

    async fn ask(&self, review: &Value) -> anyhow::Result<Decision> {
        let mut request = self.client.post(&self.url).json(review);
        if let Some(token) = &self.bearer {
            request = request.bearer_auth(token);
        }
        let reply = request.send().await?;
        let code = reply.status();
        let body: Value = reply.json().await.unwrap_or(Value::Null);
        if !code.is_success() {
            bail!(
                "the webhook answered {code}: {}",
                body["message"].as_str().unwrap_or("")
            );
        }
        let reason = body
            .pointer("/status/reason")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        Ok(if body.pointer("/status/allowed") == Some(&Value::Bool(true)) {
            Decision::Allow(reason)
        } else if body.pointer("/status/denied") == Some(&Value::Bool(true)) {
            Decision::Deny(reason)
        } else {
            Decision::NoOpinion(reason)
        })
    }

    fn cached(&self, key: &str) -> Option<Decision> {
        let cache = self.cache.lock().ok()?;
        let (decision, at) = cache.get(key)?;
        let ttl = if matches!(decision, Decision::Allow(_)) {
            self.allowed_ttl
        } else {
            self.denied_ttl
        };
        (at.elapsed() < ttl).then(|| decision.clone())
    }
}

impl Authorizer for Webhook {
    fn authorize(&self, attributes: &Attributes) -> Decision {
        let key = Webhook::review(attributes).to_string();
        self.cached(&key)
            .unwrap_or_else(|| Decision::NoOpinion("the webhook was not asked".into()))
    }

    fn authorize_async<'a>(&'a self, attributes: &'a Attributes) -> BoxFuture<'a, Decision> {
        Box::pin(async move {
            let review = Webhook::review(attributes);
            let key = review.to_string();
            if let Some(decision) = self.cached(&key) {
                return decision;
            }
            match self.ask(&review).await {
                Ok(decision) => {
                    if let Ok(mut cache) = self.cache.lock() {
                        if cache.len() >= CACHE_ENTRIES {
                            cache.clear();
                        }
                        cache.insert(key, (decision.clone(), Instant::now()));
                    }
                    decision
                }
                Err(e) => {
                    tracing::warn!(error = format!("{e:#}"), "the authorization webhook failed");
                    Decision::NoOpinion(format!("the authorization webhook failed: {e:#}"))
                }
            }
        })
    }
}
