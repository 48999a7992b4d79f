//! `--authorization-mode=Webhook`: decisions delegated to another API server by SubjectAccessReview (kube's webhook
//! authorizer, and how kubernetes/sample-apiserver asks the kube-apiserver it is aggregated behind). The server and
//! credentials come from a kubeconfig (`--authorization-webhook-config-file`); answers are cached, allowed ones for
//! `--authorization-webhook-cache-authorized-ttl` (5 min) and refused ones for `...-unauthorized-ttl` (30 s), as kube.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{json, Value};

use super::{Attributes, Authorizer, Decision};
use authn::kubeconfig::KubeClient;
use storage::BoxFuture;

/// The most answers kept; the cache is emptied when it is full.
const CACHE_ENTRIES: usize = 10_000;

/// The webhook authorizer.
pub struct Webhook {
    url: String,
    client: KubeClient,
    allowed_ttl: Duration,
    denied_ttl: Duration,
    cache: Mutex<HashMap<String, (Decision, Instant)>>,
}

impl Webhook {
    /// The authorizer of a kubeconfig file: its current context's cluster and user.
    pub fn from_kubeconfig(
        path: &std::path::Path,
        allowed_ttl: Duration,
        denied_ttl: Duration,
    ) -> anyhow::Result<Webhook> {
        let client = KubeClient::from_kubeconfig(path, Duration::from_secs(10))?;
        let url = if client.server.ends_with("subjectaccessreviews") {
            client.server.clone()
        } else {
            format!("{}/apis/authorization.k8s.io/v1/subjectaccessreviews", client.server)
        };
        Ok(Webhook {
            url,
            client,
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
        let reply = self
            .client
            .request(reqwest::Method::POST, &self.url)
            .json(review)
            .send()
            .await?;
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
