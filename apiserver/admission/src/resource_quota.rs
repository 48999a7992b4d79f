//! kube's ResourceQuota admission plugin, for object counts: a create of a namespaced object is counted against every
//! ResourceQuota of its namespace that limits its count (`count/<resource>.<group>`, or a core count's older name such
//! as `configmaps`). Over a limit, the create is refused with 403 and kube's message; else the quota's `status.used`
//! is raised by one before the object is stored (a compare-and-swap on the quota, tried again when another create
//! raced it; creates of a namespace take turns on a host), so that concurrent creates cannot pass a limit together.
//! A usage not counted yet is counted here. A quota with scopes counts no objects (kube's object count evaluators
//! match none). The quota controller (`registry::resource_quotas`) counts again after deletions and every so often,
//! as kube's does.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::attributes::Attributes;
use crate::chain::Check;
use crate::objects::{Freshness, Reader};
use apimachinery::plugin::Operation;
use apimachinery::status::ApiError;
use builtin::core::quota;
use storage::{BoxFuture, Revision};

/// How often a create tries again when its quota changed under it.
const ATTEMPTS: usize = 10;

/// Writes of the quotas' usage, and counts of objects: what the registry lends the check besides reads.
pub trait QuotaStore: Send + Sync {
    /// How many objects of a resource a namespace holds.
    fn count<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<u64, ApiError>>;

    /// Replaces a stored object (its storage version) if it is still at `revision`: `false` when it changed.
    fn replace<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        key: &'a str,
        value: Vec<u8>,
        revision: Revision,
    ) -> BoxFuture<'a, Result<bool, ApiError>>;

    /// Has the quotas of a namespace counted again (a usage raised for a create that did not happen).
    fn recount(&self, namespace: &str);

    /// Whether a namespace may have ResourceQuotas (`false`: it has none, known without a read).
    fn may_have_quotas(&self, namespace: &str) -> bool;
}

/// The ResourceQuota check.
pub struct ResourceQuota {
    objects: Arc<dyn Reader>,
    store: Arc<dyn QuotaStore>,
    locks: Vec<tokio::sync::Mutex<()>>,
}

/// A quantity as kube prints a whole one.
fn amount(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

/// How many locks creates in namespaces with a limiting quota share (by the namespace's hash).
const LOCKS: usize = 64;

/// Whether a quota has scopes: kube's object count evaluators match no scoped quota.
fn scoped(q: &Value) -> bool {
    q.pointer("/spec/scopes")
        .and_then(Value::as_array)
        .is_some_and(|s| !s.is_empty())
        || q.pointer("/spec/scopeSelector").is_some_and(|s| !s.is_null())
}

/// kube's `prettyPrint` of a list of quantities: `name=value`, sorted by name, comma-separated.
fn listed(items: &[(String, f64)]) -> String {
    let mut items: Vec<String> = items.iter().map(|(name, n)| format!("{name}={}", amount(*n))).collect();
    items.sort();
    items.join(",")
}

impl ResourceQuota {
    /// The check over the tenant's objects.
    pub fn new(objects: Arc<dyn Reader>, store: Arc<dyn QuotaStore>) -> ResourceQuota {
        ResourceQuota {
            objects,
            store,
            locks: (0..LOCKS).map(|_| tokio::sync::Mutex::new(())).collect(),
        }
    }

    /// The lock of a namespace's creates on this host.
    fn lock(&self, namespace: &str) -> &tokio::sync::Mutex<()> {
        use std::hash::{Hash as _, Hasher as _};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        namespace.hash(&mut hasher);
        &self.locks[hasher.finish() as usize % LOCKS]
    }

    async fn check(&self, a: &Attributes<'_>) -> Result<(), ApiError> {
        let Some(namespace) = a.namespace else {
            return Ok(());
        };
        if a.operation != Operation::Create || !a.subresource.is_empty() {
            return Ok(());
        }
        let names = quota::counted_by(a.group, a.resource);
        let limits = |q: &Value| !scoped(q) && names.iter().any(|name| quota::hard(q, name).is_some());
        // Most namespaces have no quota: known from the quota controller, without a read on every create.
        if !self.store.may_have_quotas(namespace) {
            return Ok(());
        }
        // One create of the namespace at a time on this host (kube batches them): they do not race each other's
        // compare-and-swap; other hosts' creates may, and are tried again.
        let _turn = self.lock(namespace).lock().await;
        // The quotas raised already (a retry raises only the others).
        let mut raised_keys: Vec<String> = Vec::new();
        for attempt in 0..ATTEMPTS {
            let quotas = self
                .objects
                .list("", "resourcequotas", Some(namespace), Freshness::Latest)
                .await?;
            let mut raised = Vec::new();
            for kv in quotas.iter().filter(|kv| !raised_keys.contains(&kv.key)) {
                let Ok(mut q) = serde_json::from_slice::<Value>(&kv.value) else {
                    continue;
                };
                if !limits(&q) {
                    continue;
                }
                let mut exceeded: Vec<(String, f64, f64)> = Vec::new();
                let mut counted = Vec::new();
                for name in &names {
                    let Some(hard) = quota::hard(&q, name) else {
                        continue;
                    };
                    let used = match quota::used(&q, name) {
                        Some(used) => used,
                        // Not counted yet by the controller: counted now.
                        None => self.store.count(a.group, a.resource, namespace).await? as f64,
                    };
                    if used + 1.0 > hard {
                        exceeded.push((name.clone(), used, hard));
                    }
                    counted.push((name.clone(), used + 1.0));
                }
                if !exceeded.is_empty() {
                    if !raised_keys.is_empty() {
                        // Raised in another quota already: counted again by the controller.
                        self.store.recount(namespace);
                    }
                    let pick = |f: fn(&(String, f64, f64)) -> f64| -> Vec<(String, f64)> {
                        exceeded.iter().map(|e| (e.0.clone(), f(e))).collect()
                    };
                    let why = format!(
                        "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                        quota::name(&q),
                        listed(&pick(|_| 1.0)),
                        listed(&pick(|e| e.1)),
                        listed(&pick(|e| e.2)),
                    );
                    return Err(ApiError::forbidden(a.group, a.resource, a.name, &why));
                }
                if !q.get("status").is_some_and(Value::is_object) {
                    q["status"] = json!({});
                }
                if !q["status"].get("used").is_some_and(Value::is_object) {
                    q["status"]["used"] = json!({});
                }
                for (name, used) in counted {
                    q["status"]["used"][name.as_str()] = json!(amount(used));
                }
                if let Some(spec_hard) = q.pointer("/spec/hard").cloned() {
                    q["status"]["hard"] = spec_hard;
                }
                raised.push((kv.key.clone(), q, kv.mod_revision));
            }
            if a.dry_run || raised.is_empty() {
                return Ok(());
            }
            let mut raced = false;
            for (key, q, revision) in raised {
                let value = serde_json::to_vec(&q).map_err(|e| ApiError::internal(e.to_string()))?;
                if self.store.replace("", "resourcequotas", &key, value, revision).await? {
                    raised_keys.push(key);
                } else {
                    raced = true;
                }
            }
            if !raced {
                return Ok(());
            }
            // Another host's create raced this one: again, a little later.
            tokio::time::sleep(std::time::Duration::from_millis(2 << attempt.min(6))).await;
        }
        if !raised_keys.is_empty() {
            self.store.recount(namespace);
        }
        Err(ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on resourcequotas in namespace {namespace}: too many concurrent \
                 creates; try again"
            ),
        ))
    }
}

impl Check for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
        Box::pin(async move { self.check(a).await.map(|()| Vec::new()) })
    }
}
