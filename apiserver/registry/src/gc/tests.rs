//! The collector end to end on one registry with the embedded store, with built-in ClusterRoles as owners and
//! dependents: each policy, several owners, absent owners, and a worker that ends once its work is done.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::refs::{FOREGROUND, ORPHAN};
use super::Propagation;
use crate::store::ResourceStore;
use crate::write_options::{FieldValidation, WriteOptions};
use crate::Registry;
use storage::embedded::EmbeddedStorage;

const GROUP: &str = "rbac.authorization.k8s.io";
const OPTS: WriteOptions = WriteOptions {
    dry_run: false,
    field_validation: FieldValidation::Strict,
};

struct Fixture {
    _dir: tempfile::TempDir,
    registry: Arc<Registry>,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let registry = Registry::with_watch_cache(storage, None);
        Fixture { _dir: dir, registry }
    }

    fn store(&self) -> ResourceStore {
        self.registry.system_store(GROUP, "clusterroles").unwrap()
    }

    /// Creates a ClusterRole owned by `owners` (blocking their foreground deletion), with these finalizers.
    async fn create(&self, name: &str, owners: &[&Value], finalizers: &[&str]) -> Value {
        let refs: Vec<Value> = owners
            .iter()
            .map(|o| {
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                    "name": o["metadata"]["name"], "uid": o["metadata"]["uid"], "blockOwnerDeletion": true})
            })
            .collect();
        let mut role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": []});
        if !refs.is_empty() {
            role["metadata"]["ownerReferences"] = json!(refs);
        }
        if !finalizers.is_empty() {
            role["metadata"]["finalizers"] = json!(finalizers);
        }
        self.store().create(None, role, OPTS).await.unwrap().object
    }

    async fn get(&self, name: &str) -> Option<Value> {
        let key = storage::keys::object_key(GROUP, "clusterroles", None, name);
        let kv = self.registry.storage.get(&key).await.unwrap()?;
        Some(serde_json::from_slice(&kv.value).unwrap())
    }

    async fn delete(&self, name: &str, policy: Option<Propagation>) -> Value {
        self.store()
            .delete(None, name, None, None, false, policy)
            .await
            .unwrap()
    }

    async fn release(&self, name: &str) {
        let release = |obj: &Value| {
            let mut obj = obj.clone();
            obj["metadata"].as_object_mut().unwrap().remove("finalizers");
            Ok(obj)
        };
        self.store().patch(None, name, release, OPTS).await.unwrap();
    }

    /// Waits until the collector has no work left (its worker ended).
    async fn settle(&self) {
        tokio::time::timeout(Duration::from_secs(20), async {
            while self.registry.gc.busy() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .expect("the collector settles");
    }
}

fn finalizers(obj: &Value) -> Vec<&str> {
    apimachinery::object::finalizers(obj)
}

fn owner_uids(obj: &Value) -> Vec<String> {
    super::refs::owner_references(obj).into_iter().map(|r| r.uid).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_deletion_collects_dependents_level_by_level() {
    let f = Fixture::new();
    let owner = f.create("owner", &[], &[]).await;
    let child = f.create("child", &[&owner], &[]).await;
    f.create("grandchild", &[&child], &[]).await;
    f.create("unrelated", &[], &[]).await;
    f.settle().await;
    f.delete("owner", None).await;
    f.settle().await;
    assert!(f.get("child").await.is_none());
    assert!(f.get("grandchild").await.is_none());
    assert!(f.get("unrelated").await.is_some());
    assert!(!f.registry.gc.busy(), "the worker ends when it has nothing to do");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphan_deletion_removes_the_references_then_the_owner() {
    let f = Fixture::new();
    let owner = f.create("owner", &[], &[]).await;
    let other = f.create("other", &[], &[]).await;
    f.create("child", &[&owner, &other], &[]).await;
    let marked = f.delete("owner", Some(Propagation::Orphan)).await;
    assert_eq!(finalizers(&marked), [ORPHAN]);
    f.settle().await;
    assert!(f.get("owner").await.is_none());
    let child = f.get("child").await.expect("orphaned");
    assert_eq!(owner_uids(&child), [other["metadata"]["uid"].as_str().unwrap()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_deletion_waits_for_blocking_dependents() {
    let f = Fixture::new();
    let owner = f.create("owner", &[], &[]).await;
    f.create("held", &[&owner], &["example.com/hold"]).await;
    f.create("free", &[&owner], &[]).await;
    let marked = f.delete("owner", Some(Propagation::Foreground)).await;
    assert_eq!(finalizers(&marked), [FOREGROUND]);
    f.settle().await;
    assert!(f.get("free").await.is_none());
    let held = f.get("held").await.expect("held by its finalizer");
    assert!(held["metadata"]["deletionTimestamp"].is_string(), "{held}");
    let waiting = f.get("owner").await.expect("the owner waits");
    assert_eq!(finalizers(&waiting), [FOREGROUND]);
    f.release("held").await;
    f.settle().await;
    assert!(f.get("held").await.is_none());
    assert!(f.get("owner").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn absent_owners_free_their_dependents_and_the_last_owner_takes_them() {
    let f = Fixture::new();
    let a = f.create("a", &[], &[]).await;
    let b = f.create("b", &[], &[]).await;
    f.create("shared", &[&a, &b], &[]).await;
    let mut ghost = a.clone();
    ghost["metadata"]["uid"] = json!("not-a's-uid");
    f.create("stale", &[&ghost], &[]).await;
    f.settle().await;
    assert!(
        f.get("stale").await.is_none(),
        "its owner's uid is not the live object's"
    );

    f.delete("a", None).await;
    f.settle().await;
    let shared = f.get("shared").await.expect("b still owns it");
    assert_eq!(owner_uids(&shared), [b["metadata"]["uid"].as_str().unwrap()]);
    f.delete("b", None).await;
    f.settle().await;
    assert!(f.get("shared").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dry_runs_and_unserved_owner_kinds_leave_objects_alone() {
    let f = Fixture::new();
    let owner = f.create("owner", &[], &[]).await;
    f.create("child", &[&owner], &[]).await;
    let mut kept = f.create("kept", &[], &[]).await;
    kept["metadata"]["ownerReferences"] =
        json!([{"apiVersion": "example.com/v1", "kind": "Widget", "name": "w", "uid": "w1"}]);
    f.store().update(None, "kept", kept, OPTS).await.unwrap();
    for policy in [None, Some(Propagation::Orphan), Some(Propagation::Foreground)] {
        f.store().delete(None, "owner", None, None, true, policy).await.unwrap();
    }
    f.settle().await;
    let owner = f.get("owner").await.expect("a dry run deletes nothing");
    assert!(finalizers(&owner).is_empty() && owner["metadata"]["deletionTimestamp"].is_null());
    assert!(f.get("child").await.is_some());
    assert_eq!(owner_uids(&f.get("kept").await.expect("kept")), ["w1"]);
    assert!(
        !f.registry.gc.queue.lock().unwrap().parked.is_empty(),
        "parked until the kinds change"
    );
}

/// Measures a round's cost: the scan of a tenant with many objects after one cluster-scoped delete, and the
/// collection of many dependents. Run by hand: `cargo test -p wasm-apiserver gc::tests::cost -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a test"]
async fn cost() {
    let f = Fixture::new();
    let owner = f.create("owner", &[], &[]).await;
    let n = 5000;
    for i in 0..n {
        f.create(&format!("plain-{i}"), &[], &[]).await;
    }
    f.create("lonely", &[], &[]).await;
    f.settle().await;
    let start = std::time::Instant::now();
    f.delete("lonely", None).await;
    f.settle().await;
    println!(
        "delete of a cluster-scoped object among {n} others, to a settled collector: {:?}",
        start.elapsed()
    );
    for i in 0..1000 {
        f.create(&format!("dep-{i}"), &[&owner], &[]).await;
    }
    f.settle().await;
    let start = std::time::Instant::now();
    f.delete("owner", None).await;
    f.settle().await;
    println!(
        "background collection of 1000 dependents among {n} others: {:?}",
        start.elapsed()
    );
    assert!(f.get("dep-999").await.is_none());
}
