//! Leader election among the hosts sharing a store, as client-go's `leaderelection` does it over a Lease: the lease is a
//! `coordination.k8s.io/v1` Lease stored at [`LEASE_KEY`] (the root's `kube-system` namespace, where kubectl shows it
//! as kube-controller-manager's), held by one host's identity
//! and renewed every [`Leader::retry_period`]; another host takes it over once it has seen the lease unchanged for a
//! whole lease duration, measured on its own clock (never by comparing another host's timestamps, so clock skew
//! between hosts does not matter). The controllers that must run once, such as deleting a deleted tenant's data, run
//! on the leader only.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use storage::{Revision, Storage, StorageError};

/// Where the lease is stored (the root's storage): a Lease object, as kube-controller-manager's in `kube-system`.
pub const LEASE_KEY: &str = "/registry/coordination.k8s.io/leases/kube-system/wasm-apiserver-controllers";

/// This host's part in the election.
pub struct Leader {
    /// Who this host is in the lease.
    pub identity: String,
    /// How long a lease holds without a renewal.
    pub lease_duration: Duration,
    leading: AtomicBool,
    state: Mutex<Observed>,
    /// The store the lease is in (`None` for [`Leader::alone`]).
    storage: Option<Arc<dyn Storage>>,
    /// Set once the lease is given up: this host no longer takes part.
    released: AtomicBool,
}

/// What this host saw of the lease last.
#[derive(Default)]
struct Observed {
    /// The lease's revision, and when (on this host's clock) it was first seen at it.
    revision: Revision,
    since: Option<Instant>,
    /// When this host last renewed its own lease.
    renewed: Option<Instant>,
}

impl Leader {
    /// Takes part in the election over `storage` as `identity` until the process ends.
    pub fn start(storage: Arc<dyn Storage>, identity: String, lease_duration: Duration) -> Arc<Leader> {
        let leader = Arc::new(Leader {
            identity,
            lease_duration,
            leading: AtomicBool::new(false),
            state: Mutex::default(),
            storage: Some(storage.clone()),
            released: AtomicBool::new(false),
        });
        let weak = Arc::downgrade(&leader);
        tokio::spawn(async move {
            loop {
                let Some(leader) = weak.upgrade() else { return };
                if leader.released.load(Ordering::Acquire) {
                    return;
                }
                let period = leader.retry_period();
                if let Err(e) = leader.try_acquire_or_renew(storage.as_ref()).await {
                    tracing::warn!(error = %e, "leader election: the lease could not be read or written");
                }
                drop(leader);
                tokio::time::sleep(period).await;
            }
        });
        leader
    }

    /// A host that always leads (no election: tests of one host, and the default tenant's own controllers).
    pub fn alone() -> Arc<Leader> {
        Arc::new(Leader {
            identity: "alone".into(),
            lease_duration: Duration::MAX,
            leading: AtomicBool::new(true),
            state: Mutex::new(Observed {
                renewed: Some(Instant::now()),
                ..Observed::default()
            }),
            storage: None,
            released: AtomicBool::new(false),
        })
    }

    /// Gives the lease up, if this host holds it (on a clean shutdown, as client-go's `ReleaseOnCancel`): the next
    /// host, or this one restarted, leads at once instead of a lease duration later.
    pub async fn release(&self) {
        let Some(storage) = &self.storage else { return };
        self.released.store(true, Ordering::Release);
        self.leading.store(false, Ordering::Release);
        let Ok(Some(kv)) = storage.get(LEASE_KEY).await else {
            return;
        };
        let Ok(mut lease) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        if lease.pointer("/spec/holderIdentity").and_then(Value::as_str) != Some(self.identity.as_str()) {
            return;
        }
        lease["spec"]["holderIdentity"] = json!("");
        lease["spec"]["leaseDurationSeconds"] = json!(1);
        match storage
            .update(LEASE_KEY, lease.to_string().into_bytes(), kv.mod_revision)
            .await
        {
            Ok(_) => tracing::info!(identity = %self.identity, "leader election: the lease is released"),
            Err(e) => tracing::warn!(error = %e, "leader election: releasing the lease failed"),
        }
    }

    /// How often the lease is renewed or looked at.
    pub fn retry_period(&self) -> Duration {
        (self.lease_duration / 4).clamp(Duration::from_millis(100), Duration::from_secs(2))
    }

    /// Whether this host holds the lease now (renewed within the lease duration).
    pub fn is_leader(&self) -> bool {
        if !self.leading.load(Ordering::Acquire) {
            return false;
        }
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.renewed.is_some_and(|r| r.elapsed() < self.lease_duration)
    }

    fn lease(&self, acquired: &str, transitions: i64) -> Vec<u8> {
        json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "wasm-apiserver-controllers", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self.lease_duration.as_secs().max(1),
                // A MicroTime, as Go's clients read it (an older host wrote seconds).
                "acquireTime": apimachinery::object::to_micro_time(acquired).unwrap_or_else(apimachinery::object::now_micro_time),
                "renewTime": apimachinery::object::now_micro_time(),
                "leaseTransitions": transitions,
            }
        })
        .to_string()
        .into_bytes()
    }

    fn set_leading(&self, leading: bool) {
        let was = self.leading.swap(leading, Ordering::AcqRel);
        if leading {
            self.state.lock().unwrap_or_else(PoisonError::into_inner).renewed = Some(Instant::now());
        }
        if was != leading {
            tracing::info!(identity = %self.identity, leading, "leader election: {}", if leading { "this host leads" } else { "this host no longer leads" });
        }
    }

    async fn try_acquire_or_renew(&self, storage: &dyn Storage) -> storage::Result<()> {
        let now = apimachinery::object::now_micro_time();
        let Some(kv) = storage.get(LEASE_KEY).await? else {
            return match storage.create(LEASE_KEY, self.lease(&now, 0)).await {
                Ok(_) => {
                    self.set_leading(true);
                    Ok(())
                }
                Err(StorageError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            };
        };
        let lease: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
        let holder = lease
            .pointer("/spec/holderIdentity")
            .and_then(Value::as_str)
            .unwrap_or("");
        let transitions = lease
            .pointer("/spec/leaseTransitions")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let acquired = lease
            .pointer("/spec/acquireTime")
            .and_then(Value::as_str)
            .unwrap_or(&now)
            .to_owned();
        let unchanged_for = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.revision != kv.mod_revision || state.since.is_none() {
                state.revision = kv.mod_revision;
                state.since = Some(Instant::now());
            }
            state.since.map_or(Duration::ZERO, |s| s.elapsed())
        };
        let value = if holder == self.identity {
            self.lease(&acquired, transitions)
        } else if holder.is_empty() || unchanged_for >= self.lease_duration {
            tracing::info!(previous = holder, identity = %self.identity, "leader election: taking over an expired lease");
            self.lease(&now, transitions + 1)
        } else {
            self.set_leading(false);
            return Ok(());
        };
        match storage.update(LEASE_KEY, value, kv.mod_revision).await {
            Ok(stored) => {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.revision = stored.mod_revision;
                state.since = Some(Instant::now());
                drop(state);
                self.set_leading(true);
                Ok(())
            }
            // Another host wrote it first: it leads.
            Err(StorageError::Conflict { .. }) | Err(StorageError::NotFound { .. }) => {
                self.set_leading(false);
                Ok(())
            }
            Err(e) => {
                // Not renewed: this host stops leading once its last renewal is a lease duration old.
                Err(e)
            }
        }
    }
}

/// A host's identity in the lease: its host name and a random suffix (two processes on one host differ).
pub fn identity() -> String {
    let host = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "wasm-apiserver".into());
    let suffix: String = uuid::Uuid::new_v4().simple().to_string().chars().take(8).collect();
    format!("{host}_{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_host_leads_and_another_takes_over_an_expired_lease() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(storage::embedded::EmbeddedStorage::open(dir.path()).unwrap());
        let duration = Duration::from_millis(400);
        let a = Leader::start(storage.clone(), "a".into(), duration);
        let b = Leader::start(storage.clone(), "b".into(), duration);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !(a.is_leader() ^ b.is_leader()) {
            assert!(Instant::now() < deadline, "no single leader");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let (leader, follower) = if a.is_leader() { (a, b) } else { (b, a) };
        let holder = |storage: Arc<dyn Storage>| async move {
            let kv = storage.get(LEASE_KEY).await.unwrap().unwrap();
            let lease: Value = serde_json::from_slice(&kv.value).unwrap();
            lease["spec"]["holderIdentity"].as_str().unwrap().to_owned()
        };
        assert_eq!(holder(storage.clone()).await, leader.identity);
        // The leader goes (its renewals stop): the follower takes over once the lease is a duration old.
        drop(leader);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !follower.is_leader() {
            assert!(Instant::now() < deadline, "the follower never took over");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(holder(storage.clone()).await, follower.identity);
        assert!(Leader::alone().is_leader());

        // A released lease is taken at once, long before it would expire.
        let long = Duration::from_secs(3600);
        let first = Leader::start(storage.clone(), "first".into(), long);
        follower.release().await;
        drop(follower);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !first.is_leader() {
            assert!(Instant::now() < deadline, "the released lease was not taken");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(holder(storage.clone()).await, "first");
    }
}
