//! kube-controller-manager's ResourceQuota controller, in the server: each quota's `status.hard` follows its
//! `spec.hard` and its `status.used` is counted from the objects of its namespace: when the quota is made or its
//! limits change and when objects of its namespace are deleted (kube's replenishment, [`Replenish`]), by the host
//! that sees it (a count is written by compare-and-swap: any host may); and all of them every [`RESYNC`] by the host
//! that leads. A quota with scopes counts no objects (kube's object count evaluators match none). The admission check (`admission::resource_quota`) raises the usage on each
//! create; this brings it back to the count. Object counts are counted; other limits (compute resources) stay at zero.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::controllers::Leading;
use super::Registry;
use apimachinery::status::ApiError;
use builtin::core::quota;
use storage::keys::key_prefix;
use storage::{BoxFuture, KeyValue, ListOptions, Revision, Storage, StorageError, WatchEvent};

/// How often every quota is counted again while this host leads (kube's `--resource-quota-sync-period`).
const RESYNC: Duration = Duration::from_secs(300);
/// How often a host that does not lead looks whether it leads now.
const FOLLOWER_CHECK: Duration = Duration::from_secs(10);

/// The namespaces where objects were deleted since the controller last looked: their quotas are counted again.
#[derive(Default)]
pub struct Replenish {
    dirty: Mutex<BTreeSet<String>>,
    notify: tokio::sync::Notify,
}

impl Replenish {
    /// An object of `namespace` was deleted.
    pub fn note(&self, namespace: &str) {
        self.dirty
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(namespace.to_owned());
        self.notify.notify_one();
    }

    fn take(&self) -> BTreeSet<String> {
        std::mem::take(&mut *self.dirty.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The namespaces that have ResourceQuotas, as the controller's watch sees them: a create in any other namespace
/// needs no read of quotas (`None` until the controller has listed them: every namespace may have some).
#[derive(Default)]
pub struct QuotaNamespaces(Mutex<Option<std::collections::HashMap<String, usize>>>);

impl QuotaNamespaces {
    /// Whether `namespace` may have a quota.
    pub fn may_have(&self, namespace: &str) -> bool {
        match &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(known) => known.contains_key(namespace),
            None => true,
        }
    }

    /// The quotas listed: the set starts from them.
    fn listed<'a>(&self, namespaces: impl IntoIterator<Item = &'a str>) {
        let mut known = std::collections::HashMap::new();
        for ns in namespaces {
            *known.entry(ns.to_owned()).or_insert(0) += 1;
        }
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(known);
    }

    /// A quota made (`+1`) or deleted (`-1`) in `namespace`.
    fn add(&self, namespace: &str, delta: i64) {
        if let Some(known) = &mut *self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            let count = known.entry(namespace.to_owned()).or_insert(0);
            *count = count.saturating_add_signed(delta as isize);
            if *count == 0 {
                known.remove(namespace);
            }
        }
    }

    /// The controller stopped following: every namespace may have quotas again.
    fn forget(&self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// The namespace of a quota's key.
fn namespace_of(key: &str) -> Option<&str> {
    key.strip_prefix(prefix(None).as_str())?
        .split_once('/')
        .map(|(ns, _)| ns)
}

/// How many objects are stored under a prefix.
async fn count(storage: &dyn Storage, prefix: &str) -> Result<u64, StorageError> {
    let page = storage
        .list(
            prefix,
            ListOptions {
                limit: 1,
                ..ListOptions::default()
            },
        )
        .await?;
    Ok(page.items.len() as u64 + page.remaining)
}

/// What the admission check writes and counts through: the registry's storage, its watch caches told of the writes.
pub struct QuotaStore {
    pub(crate) storage: Arc<dyn Storage>,
    pub(crate) caches: Arc<super::Caches>,
    pub(crate) replenish: Arc<Replenish>,
    pub(crate) namespaces: Arc<QuotaNamespaces>,
}

impl admission::resource_quota::QuotaStore for QuotaStore {
    fn count<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        namespace: &'a str,
    ) -> BoxFuture<'a, Result<u64, ApiError>> {
        Box::pin(async move {
            count(self.storage.as_ref(), &key_prefix(group, resource, Some(namespace)))
                .await
                .map_err(|e| super::errors::from_storage(e, group, resource, ""))
        })
    }

    fn replace<'a>(
        &'a self,
        group: &'a str,
        resource: &'a str,
        key: &'a str,
        value: Vec<u8>,
        revision: Revision,
    ) -> BoxFuture<'a, Result<bool, ApiError>> {
        Box::pin(async move {
            match self.storage.update(key, value, revision).await {
                Ok(kv) => {
                    if let Some(cache) = self.caches.get(group, resource) {
                        cache.note_write(kv.mod_revision);
                    }
                    Ok(true)
                }
                Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => Ok(false),
                Err(e) => Err(super::errors::from_storage(e, group, resource, "")),
            }
        })
    }

    fn recount(&self, namespace: &str) {
        self.replenish.note(namespace);
    }

    fn may_have_quotas(&self, namespace: &str) -> bool {
        self.namespaces.may_have(namespace)
    }
}

/// Starts the controller for as long as the registry lives; the periodic count runs only while `leading` holds.
pub fn start_controller(registry: &Arc<Registry>, leading: Leading) {
    super::controllers::run(registry, "resource quotas", move |registry| {
        let leading = leading.clone();
        Box::pin(async move {
            let followed = follow(registry, &leading).await;
            // Not following: every namespace may have quotas again.
            registry.quota_namespaces.forget();
            followed
        })
    });
}

fn prefix(namespace: Option<&str>) -> String {
    key_prefix("", "resourcequotas", namespace)
}

async fn follow(registry: &Registry, leading: &Leading) -> anyhow::Result<()> {
    let quotas = prefix(None);
    let listed = registry.storage.list(&quotas, ListOptions::default()).await?;
    let mut events = registry.storage.watch(&quotas, listed.revision).await?;
    registry
        .quota_namespaces
        .listed(listed.items.iter().filter_map(|kv| namespace_of(&kv.key)));
    let mut next_resync = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next_resync) => {
                let leads = leading();
                if leads {
                    for kv in registry.storage.list(&quotas, ListOptions::default()).await?.items {
                        recount(registry, &kv).await?;
                    }
                }
                next_resync = tokio::time::Instant::now() + if leads { RESYNC } else { FOLLOWER_CHECK };
            }
            event = events.recv() => {
                let event = event.ok_or_else(|| anyhow::anyhow!("the resource quota watch ended"))??;
                match &event {
                    WatchEvent::Put { kv, prev: None } => {
                        if let Some(ns) = namespace_of(&kv.key) {
                            registry.quota_namespaces.add(ns, 1);
                        }
                    }
                    WatchEvent::Delete { prev, .. } => {
                        if let Some(ns) = namespace_of(&prev.key) {
                            registry.quota_namespaces.add(ns, -1);
                        }
                    }
                    _ => {}
                }
                if let WatchEvent::Put { kv, .. } = event {
                    // A new quota, or new limits: counted now.
                    let stale = serde_json::from_slice::<Value>(&kv.value)
                        .is_ok_and(|q| q.pointer("/spec/hard") != q.pointer("/status/hard"));
                    if stale {
                        recount(registry, &kv).await?;
                    }
                }
            }
            () = registry.quota_replenish.notify.notified() => {
                for namespace in registry.quota_replenish.take() {
                    let list = registry.storage.list(&prefix(Some(&namespace)), ListOptions::default()).await?;
                    for kv in list.items {
                        recount(registry, &kv).await?;
                    }
                }
            }
        }
    }
}

/// Counts a quota's usage again and writes its status if it changed (a quota written meanwhile is left to its next
/// count).
async fn recount(registry: &Registry, kv: &KeyValue) -> anyhow::Result<()> {
    let Ok(mut q) = serde_json::from_slice::<Value>(&kv.value) else {
        return Ok(());
    };
    let namespace = q
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let hard = q
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut used = Map::new();
    for name in hard.keys() {
        let n = match quota::counted_resource(name) {
            Some((group, resource)) => {
                count(
                    registry.storage.as_ref(),
                    &key_prefix(&group, &resource, Some(&namespace)),
                )
                .await?
            }
            None => 0,
        };
        used.insert(name.clone(), json!(n.to_string()));
    }
    let status = json!({"hard": hard, "used": used});
    if q.get("status") == Some(&status) {
        return Ok(());
    }
    q["status"] = status;
    match registry
        .storage
        .update(&kv.key, serde_json::to_vec(&q)?, kv.mod_revision)
        .await
    {
        Ok(written) => {
            if let Some(cache) = registry.cache("", "resourcequotas") {
                cache.note_write(written.mod_revision);
            }
            Ok(())
        }
        Err(StorageError::Conflict { .. } | StorageError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
