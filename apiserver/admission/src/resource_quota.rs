//! kube's ResourceQuota admission plugin, for object counts: a create of a namespaced object is counted against every
//! ResourceQuota of its namespace that limits its count (`count/<resource>.<group>`, or a core count's older name such
//! as `configmaps`). Over a limit, the create is refused with 403 and kube's message; else the quota's `status.used`
//! is raised by one before the object is stored (a compare-and-swap on the quota, tried again when another create
//! raced it), so that concurrent creates cannot pass a limit together. A usage not counted yet is counted here. The
//! quota controller (`registry::resource_quotas`) counts again after deletions and every so often, as kube's does.

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
}

/// The ResourceQuota check.
pub struct ResourceQuota {
    objects: Arc<dyn Reader>,
    store: Arc<dyn QuotaStore>,
}

/// A quantity as kube prints a whole one.
fn amount(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        n.to_string()
    }
}

impl ResourceQuota {
    /// The check over the tenant's objects.
    pub fn new(objects: Arc<dyn Reader>, store: Arc<dyn QuotaStore>) -> ResourceQuota {
        ResourceQuota { objects, store }
    }

    async fn check(&self, a: &Attributes<'_>) -> Result<(), ApiError> {
        let Some(namespace) = a.namespace else {
            return Ok(());
        };
        if a.operation != Operation::Create || !a.subresource.is_empty() {
            return Ok(());
        }
        let names = quota::counted_by(a.group, a.resource);
        // Most namespaces have no quota limiting the resource: known from the watch cache, without a read of storage
        // on every create.
        let cached = self
            .objects
            .list("", "resourcequotas", Some(namespace), Freshness::Cached)
            .await?;
        let limits = |kv: &storage::KeyValue| {
            serde_json::from_slice::<Value>(&kv.value)
                .is_ok_and(|q| names.iter().any(|name| quota::hard(&q, name).is_some()))
        };
        if !cached.iter().any(|kv| limits(kv)) {
            return Ok(());
        }
        for _ in 0..ATTEMPTS {
            let quotas = self
                .objects
                .list("", "resourcequotas", Some(namespace), Freshness::Latest)
                .await?;
            let mut raised = Vec::new();
            for kv in &quotas {
                let Ok(mut q) = serde_json::from_slice::<Value>(&kv.value) else {
                    continue;
                };
                let mut changed = false;
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
                        let why = format!(
                            "exceeded quota: {}, requested: {name}=1, used: {name}={}, limited: {name}={}",
                            quota::name(&q),
                            amount(used),
                            amount(hard)
                        );
                        return Err(ApiError::forbidden(a.group, a.resource, a.name, &why));
                    }
                    if !q.get("status").is_some_and(Value::is_object) {
                        q["status"] = json!({});
                    }
                    if !q["status"].get("used").is_some_and(Value::is_object) {
                        q["status"]["used"] = json!({});
                    }
                    q["status"]["used"][name.as_str()] = json!(amount(used + 1.0));
                    if let Some(spec_hard) = q.pointer("/spec/hard").cloned() {
                        q["status"]["hard"] = spec_hard;
                    }
                    changed = true;
                }
                if changed {
                    raised.push((kv.key.clone(), q, kv.mod_revision));
                }
            }
            if a.dry_run || raised.is_empty() {
                return Ok(());
            }
            let mut raced = false;
            for (key, q, revision) in raised {
                let value = serde_json::to_vec(&q).map_err(|e| ApiError::internal(e.to_string()))?;
                if !self.store.replace("", "resourcequotas", &key, value, revision).await? {
                    raced = true;
                    break;
                }
            }
            if !raced {
                return Ok(());
            }
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
