//! The admission configuration of the cluster behind the server (`--kubeconfig`), as an aggregated server built on
//! k8s.io/apiserver reads it with its informers: each of the four resources listed from the cluster's API server,
//! then watched, and listed again after a watch ends or fails. Its webhooks and policies apply to the writes of
//! every tenant, with the tenant's own.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use serde_json::Value;

use crate::config::Objects;
use crate::config::RESOURCES;
use authn::kubeconfig::KubeClient;
use builtin::admissionregistration::{GROUP, VERSION};

/// How long a watch is asked to last before it is made again.
const WATCH_SECONDS: u64 = 300;
/// How long to wait before listing again after a failure.
const RETRY: Duration = Duration::from_secs(1);

/// The cluster's configuration as last seen.
pub struct Remote {
    objects: RwLock<Objects>,
    generation: AtomicU64,
    listed: tokio::sync::watch::Sender<u8>,
}

impl Remote {
    /// Starts following the cluster `client` reaches (its client's timeout must outlast a watch: over 300 s).
    pub fn start(client: Arc<KubeClient>) -> Arc<Remote> {
        let remote = Arc::new(Remote {
            objects: RwLock::default(),
            generation: AtomicU64::new(1),
            listed: tokio::sync::watch::Sender::new(0),
        });
        for resource in RESOURCES {
            tokio::spawn(follow(Arc::downgrade(&remote), client.clone(), resource));
        }
        remote
    }

    /// Changes every time an object changes.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The objects.
    pub fn objects(&self) -> Objects {
        self.objects.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Whether the four resources have been listed once.
    pub fn is_ready(&self) -> bool {
        all_listed(*self.listed.borrow())
    }

    /// Waits up to `timeout` for the four resources to have been listed once; returns whether they were.
    pub async fn ready(&self, timeout: Duration) -> bool {
        let mut listed = self.listed.subscribe();
        let listed = tokio::time::timeout(timeout, listed.wait_for(|n| all_listed(*n))).await;
        matches!(listed, Ok(Ok(_)))
    }

    fn update(&self, resource: &str, change: impl FnOnce(&mut std::collections::BTreeMap<String, Value>)) {
        change(
            self.objects
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .of_mut(resource),
        );
        self.generation.fetch_add(1, Ordering::AcqRel);
    }
}

/// Whether `listed` first lists are all of them: one per resource.
fn all_listed(listed: u8) -> bool {
    usize::from(listed) >= RESOURCES.len()
}

/// Lists and watches one resource until the [`Remote`] is dropped.
async fn follow(remote: std::sync::Weak<Remote>, client: Arc<KubeClient>, resource: &'static str) {
    let path = format!("/apis/{GROUP}/{VERSION}/{resource}");
    let mut first = true;
    loop {
        let Some(r) = remote.upgrade() else {
            return;
        };
        match list_and_watch(&r, &client, &path, resource, &mut first).await {
            Ok(()) => continue,
            Err(e) => {
                tracing::warn!(resource, error = %e, "following the cluster's admission configuration failed");
                drop(r);
                tokio::time::sleep(RETRY).await;
            }
        }
    }
}

async fn list_and_watch(
    remote: &Remote,
    client: &KubeClient,
    path: &str,
    resource: &str,
    first: &mut bool,
) -> anyhow::Result<()> {
    let list: Value = client
        .request(reqwest::Method::GET, path)
        .timeout(Duration::from_secs(30))
        .send()
        .await?
        .error_for_status()?
        .json()
        .await?;
    let rv = list
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let items: std::collections::BTreeMap<String, Value> = list
        .get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|o| (apimachinery::object::name(o).to_owned(), o.clone()))
        .collect();
    remote.update(resource, |map| *map = items);
    if std::mem::take(first) {
        remote.listed.send_modify(|n| *n += 1);
    }
    let mut response = client
        .request(
            reqwest::Method::GET,
            &format!("{path}?watch=true&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}&resourceVersion={rv}"),
        )
        .timeout(Duration::from_secs(WATCH_SECONDS + 30))
        .send()
        .await?
        .error_for_status()?;
    let mut buffer = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let event: Value = serde_json::from_slice(&line)?;
            let object = event.get("object").cloned().unwrap_or(Value::Null);
            let name = apimachinery::object::name(&object).to_owned();
            match event.get("type").and_then(Value::as_str).unwrap_or("") {
                "ADDED" | "MODIFIED" => remote.update(resource, |map| {
                    map.insert(name, object.clone());
                }),
                "DELETED" => remote.update(resource, |map| {
                    map.remove(&name);
                }),
                "BOOKMARK" => {}
                // An ERROR (such as 410 Gone): list again.
                _ => return Ok(()),
            }
        }
    }
    // The watch ended (after its timeout): list again.
    Ok(())
}
