//! A backend-independent conformance suite for [`Storage`]: every backend must pass it.
//!
//! Each `test_*` function takes the store and a key prefix of its own, and panics (with a message) on a failure;
//! [`run_all`] runs them all in sequence under a prefix unique to the run, so they can share one store, even a
//! long-lived etcd. The suite relies only on the trait and on etcd3 semantics: it never assumes absolute revisions
//! or consecutive ones. [`test_compaction`] compacts the whole store: do not run it concurrently with other tests on
//! the same store.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{KeyValue, ListOptions, Revision, Storage, StorageError, WatchEvent, WatchStream};

/// How long to wait for an expected watch event.
const EVENT_TIMEOUT: Duration = Duration::from_secs(20);

/// A shared store under test.
pub type Store = Arc<dyn Storage>;

/// Runs the whole suite against `store`, under a key prefix unique to this run.
pub async fn run_all(store: Store) {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let base = format!("/conformance/{nanos}-{}", std::process::id());
    test_create_get(&store, &format!("{base}/create-get/")).await;
    test_update(&store, &format!("{base}/update/")).await;
    test_delete(&store, &format!("{base}/delete/")).await;
    test_list(&store, &format!("{base}/list/")).await;
    test_list_at_revision(&store, &format!("{base}/list-at-revision/")).await;
    test_pagination(&store, &format!("{base}/pagination/")).await;
    test_watch_order(&store, &format!("{base}/watch-order/")).await;
    test_watch_resume(&store, &format!("{base}/watch-resume/")).await;
    test_watch_seam(&store, &format!("{base}/watch-seam/")).await;
    test_watch_delete_prev(&store, &format!("{base}/watch-delete-prev/")).await;
    test_concurrent_watchers(&store, &format!("{base}/concurrent-watchers/")).await;
    test_concurrent_creates(&store, &format!("{base}/concurrent-creates/")).await;
    test_concurrent_cas(&store, &format!("{base}/concurrent-cas/")).await;
    test_compaction(&store, &format!("{base}/compaction/")).await;
    test_progress(&store, &format!("{base}/progress/")).await;
}

/// Waits for the next event that is not a progress notification.
pub async fn next_event(watch: &mut WatchStream) -> WatchEvent {
    loop {
        match tokio::time::timeout(EVENT_TIMEOUT, watch.recv()).await {
            Err(_) => panic!("no watch event within {EVENT_TIMEOUT:?}"),
            Ok(None) => panic!("the watch ended unexpectedly"),
            Ok(Some(Err(e))) => panic!("the watch failed: {e}"),
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => continue,
            Ok(Some(Ok(event))) => return event,
        }
    }
}

/// Writes a marker key under `prefix` and expects it to be the next event: proves no other event came before.
async fn expect_marker_next(store: &Store, watch: &mut WatchStream, prefix: &str) {
    let marker = store
        .create(&format!("{prefix}~marker"), b"marker".to_vec())
        .await
        .expect("create the marker");
    assert_eq!(
        next_event(watch).await,
        WatchEvent::Put { kv: marker, prev: None },
        "unexpected event"
    );
}

/// Creates `key` with `value`, expecting success.
async fn create(store: &Store, key: &str, value: &str) -> KeyValue {
    store
        .create(key, value.as_bytes().to_vec())
        .await
        .unwrap_or_else(|e| panic!("create {key}: {e}"))
}

/// Updates `key` from `kv`'s revision, expecting success.
async fn update(store: &Store, kv: &KeyValue, value: &str) -> KeyValue {
    let key = &kv.key;
    store
        .update(key, value.as_bytes().to_vec(), kv.mod_revision)
        .await
        .unwrap_or_else(|e| panic!("update {key}: {e}"))
}

/// Lists `prefix` at `revision` (0: latest) and returns the keys and values.
async fn list_at(store: &Store, prefix: &str, revision: Revision) -> Vec<KeyValue> {
    let options = ListOptions {
        revision,
        ..ListOptions::default()
    };
    let result = store
        .list(prefix, options)
        .await
        .unwrap_or_else(|e| panic!("list {prefix} at {revision}: {e}"));
    if revision > 0 {
        assert_eq!(result.revision, revision, "a list at a revision reports that revision");
    }
    assert_eq!(result.remaining, 0, "an unlimited list has nothing remaining");
    result.items
}

/// Create, then get; a second create fails; revisions increase.
pub async fn test_create_get(store: &Store, prefix: &str) {
    let key = format!("{prefix}a");
    assert_eq!(store.get(&key).await.expect("get a missing key"), None);
    let before = store.current_revision().await.expect("current revision");
    let kv = create(store, &key, "one").await;
    assert_eq!(
        (kv.key.as_str(), kv.value.as_slice()),
        (key.as_str(), b"one".as_slice())
    );
    assert_eq!(
        kv.create_revision, kv.mod_revision,
        "a created key's create and mod revisions are equal"
    );
    assert!(
        kv.mod_revision > before,
        "a write gets a revision above the current one"
    );
    assert!(store.current_revision().await.expect("current revision") >= kv.mod_revision);
    assert_eq!(store.get(&key).await.expect("get"), Some(kv.clone()));
    let again = store.create(&key, b"two".to_vec()).await;
    assert_eq!(again, Err(StorageError::AlreadyExists { key: key.clone() }));
    assert_eq!(
        store.get(&key).await.expect("get"),
        Some(kv.clone()),
        "a failed create changes nothing"
    );
    let other = create(store, &format!("{prefix}b"), "other").await;
    assert!(other.mod_revision > kv.mod_revision, "revisions strictly increase");
}

/// Update is a compare-and-swap on the mod revision.
pub async fn test_update(store: &Store, prefix: &str) {
    let key = format!("{prefix}a");
    let v1 = create(store, &key, "v1").await;
    let v2 = update(store, &v1, "v2").await;
    assert_eq!(v2.value, b"v2");
    assert_eq!(
        v2.create_revision, v1.create_revision,
        "an update keeps the create revision"
    );
    assert!(v2.mod_revision > v1.mod_revision);
    assert_eq!(store.get(&key).await.expect("get"), Some(v2.clone()));
    let stale = store.update(&key, b"v3".to_vec(), v1.mod_revision).await;
    let conflict = StorageError::Conflict {
        key: key.clone(),
        expected: v1.mod_revision,
        actual: v2.mod_revision,
    };
    assert_eq!(stale, Err(conflict));
    assert_eq!(
        store.get(&key).await.expect("get"),
        Some(v2.clone()),
        "a failed update changes nothing"
    );
    let missing = format!("{prefix}missing");
    let result = store.update(&missing, b"x".to_vec(), v2.mod_revision).await;
    assert_eq!(result, Err(StorageError::NotFound { key: missing }));
}

/// Delete with and without a precondition; a deleted key can be created again.
pub async fn test_delete(store: &Store, prefix: &str) {
    let key = format!("{prefix}a");
    assert_eq!(
        store.delete(&key, None).await,
        Err(StorageError::NotFound { key: key.clone() })
    );
    assert_eq!(
        store.delete(&key, Some(1)).await,
        Err(StorageError::NotFound { key: key.clone() })
    );
    let kv = create(store, &key, "v1").await;
    let wrong = kv.mod_revision + 1000;
    let conflict = StorageError::Conflict {
        key: key.clone(),
        expected: wrong,
        actual: kv.mod_revision,
    };
    assert_eq!(store.delete(&key, Some(wrong)).await, Err(conflict));
    assert_eq!(
        store.get(&key).await.expect("get"),
        Some(kv.clone()),
        "a failed delete changes nothing"
    );
    let (prev, revision) = store.delete(&key, Some(kv.mod_revision)).await.expect("delete");
    assert_eq!(prev, kv, "delete returns the deleted key-value");
    assert!(revision > kv.mod_revision, "a delete gets a new revision");
    assert_eq!(store.get(&key).await.expect("get"), None);
    assert_eq!(
        store.delete(&key, None).await,
        Err(StorageError::NotFound { key: key.clone() })
    );
    let again = create(store, &key, "v2").await;
    assert!(
        again.create_revision > revision,
        "a re-created key has a new create revision"
    );
    let (prev, revision) = store.delete(&key, None).await.expect("unconditional delete");
    assert_eq!(prev, again);
    assert!(revision > again.mod_revision);
}

/// A prefix list returns exactly the keys under the prefix, in key order.
pub async fn test_list(store: &Store, prefix: &str) {
    let outside_before = format!("{}-outside", prefix.trim_end_matches('/'));
    let outside_after = format!("{}0", prefix.trim_end_matches('/'));
    create(store, &outside_before, "x").await;
    create(store, &outside_after, "x").await;
    let b = create(store, &format!("{prefix}b"), "b").await;
    let a = create(store, &format!("{prefix}a"), "a").await;
    let cd = create(store, &format!("{prefix}c/d"), "cd").await;
    let result = store.list(prefix, ListOptions::default()).await.expect("list");
    assert_eq!(result.items, vec![a.clone(), b.clone(), cd.clone()]);
    assert_eq!(result.remaining, 0);
    assert!(
        result.revision >= cd.mod_revision,
        "a list's revision covers every item"
    );
    assert_eq!(
        list_at(store, prefix, result.revision).await,
        result.items,
        "a list at its own revision agrees"
    );
    assert_eq!(list_at(store, &format!("{prefix}c/"), 0).await, vec![cd]);
    assert_eq!(list_at(store, &format!("{prefix}none/"), 0).await, vec![]);
}

/// A list at an older revision sees the state at that revision; a future revision fails.
pub async fn test_list_at_revision(store: &Store, prefix: &str) {
    let k1 = format!("{prefix}k1");
    let v1 = create(store, &k1, "v1").await;
    let v2 = update(store, &v1, "v2").await;
    let k2 = create(store, &format!("{prefix}k2"), "k2").await;
    let (_, deleted) = store.delete(&k1, Some(v2.mod_revision)).await.expect("delete");
    assert_eq!(list_at(store, prefix, v1.mod_revision).await, vec![v1.clone()]);
    assert_eq!(list_at(store, prefix, v2.mod_revision).await, vec![v2.clone()]);
    assert_eq!(
        list_at(store, prefix, k2.mod_revision).await,
        vec![v2.clone(), k2.clone()]
    );
    assert_eq!(list_at(store, prefix, deleted).await, vec![k2.clone()]);
    assert_eq!(list_at(store, prefix, 0).await, vec![k2]);
    let future = store.current_revision().await.expect("current revision") + 1_000_000;
    let options = ListOptions {
        revision: future,
        ..ListOptions::default()
    };
    match store.list(prefix, options).await {
        Err(StorageError::TooLargeRevision { requested, current }) => {
            assert_eq!(requested, future);
            assert!(current >= deleted && current < future);
        }
        other => panic!("a list at a future revision: expected TooLargeRevision, got {other:?}"),
    }
}

/// Pages with `limit` and `start_after` at a fixed revision, with the count of remaining keys.
pub async fn test_pagination(store: &Store, prefix: &str) {
    let mut all = Vec::new();
    for i in 0..7 {
        all.push(create(store, &format!("{prefix}k{i}"), &format!("v{i}")).await);
    }
    let first = store
        .list(
            prefix,
            ListOptions {
                limit: 3,
                ..ListOptions::default()
            },
        )
        .await
        .expect("page 1");
    assert_eq!(first.items, all[0..3]);
    assert_eq!(first.remaining, 4);
    // Writes between pages do not change pages read at the first page's revision.
    create(store, &format!("{prefix}k7"), "v7").await;
    store.delete(&all[1].key, None).await.expect("delete");
    let page = |after: &KeyValue| ListOptions {
        revision: first.revision,
        limit: 3,
        start_after: Some(after.key.clone()),
    };
    let second = store.list(prefix, page(&all[2])).await.expect("page 2");
    assert_eq!(
        (second.items.as_slice(), second.remaining, second.revision),
        (&all[3..6], 1, first.revision)
    );
    let third = store.list(prefix, page(&all[5])).await.expect("page 3");
    assert_eq!(
        (third.items.as_slice(), third.remaining, third.revision),
        (&all[6..7], 0, first.revision)
    );
    let latest = list_at(store, prefix, 0).await;
    let keys: Vec<_> = latest
        .iter()
        .map(|kv| kv.key.rsplit('/').next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(keys, ["k0", "k2", "k3", "k4", "k5", "k6", "k7"]);
    let big = store
        .list(
            prefix,
            ListOptions {
                limit: 100,
                ..ListOptions::default()
            },
        )
        .await
        .expect("list");
    assert_eq!((big.items, big.remaining), (latest, 0));
    let current = ListOptions {
        limit: 2,
        start_after: Some(all[0].key.clone()),
        ..ListOptions::default()
    };
    let page = store.list(prefix, current).await.expect("page at the latest revision");
    assert_eq!((page.items.len(), page.remaining), (2, 4), "k2, k3; then k4..k7 remain");
}

/// A watch from now sees each later write under its prefix once, in order, with previous values.
pub async fn test_watch_order(store: &Store, prefix: &str) {
    create(store, &format!("{prefix}before"), "x").await;
    let mut watch = store.watch(prefix, 0).await.expect("watch");
    let a = create(store, &format!("{prefix}a"), "a1").await;
    create(store, &format!("{}-outside", prefix.trim_end_matches('/')), "x").await;
    let a2 = update(store, &a, "a2").await;
    let b = create(store, &format!("{prefix}b"), "b").await;
    let (_, deleted) = store.delete(&a.key, None).await.expect("delete");
    let expected = [
        WatchEvent::Put {
            kv: a.clone(),
            prev: None,
        },
        WatchEvent::Put {
            kv: a2.clone(),
            prev: Some(a),
        },
        WatchEvent::Put { kv: b, prev: None },
        WatchEvent::Delete {
            prev: a2,
            revision: deleted,
        },
    ];
    for want in expected {
        assert_eq!(next_event(&mut watch).await, want);
    }
    expect_marker_next(store, &mut watch, prefix).await;
}

/// A watch from an old revision replays every later event, then continues live, without gap or duplicate.
pub async fn test_watch_resume(store: &Store, prefix: &str) {
    let mut kv = create(store, &format!("{prefix}a"), "0").await;
    let mut revisions = vec![kv.clone()];
    for i in 1..5 {
        kv = update(store, &kv, &i.to_string()).await;
        revisions.push(kv.clone());
    }
    let mut replay = store
        .watch(prefix, revisions[1].mod_revision)
        .await
        .expect("watch from an old revision");
    let mut latest = store
        .watch(prefix, revisions[4].mod_revision)
        .await
        .expect("watch from the latest revision");
    for i in 5..7 {
        kv = update(store, &kv, &i.to_string()).await;
        revisions.push(kv.clone());
    }
    for window in revisions[1..].windows(2) {
        let want = WatchEvent::Put {
            kv: window[1].clone(),
            prev: Some(window[0].clone()),
        };
        assert_eq!(next_event(&mut replay).await, want);
    }
    for window in revisions[4..].windows(2) {
        let want = WatchEvent::Put {
            kv: window[1].clone(),
            prev: Some(window[0].clone()),
        };
        assert_eq!(next_event(&mut latest).await, want);
    }
    expect_marker_next(store, &mut replay, prefix).await;
}

/// Writes racing with the start of a watch from an old revision: every write after it arrives exactly once.
pub async fn test_watch_seam(store: &Store, prefix: &str) {
    let start = create(store, &format!("{prefix}start"), "x").await;
    let writer = {
        let store = store.clone();
        let prefix = prefix.to_owned();
        tokio::spawn(async move {
            let mut revisions = Vec::new();
            for i in 0..100 {
                let kv = store
                    .create(&format!("{prefix}k{i:03}"), vec![b'x'])
                    .await
                    .expect("create");
                revisions.push(kv.mod_revision);
            }
            revisions
        })
    };
    let mut watch = store.watch(prefix, start.mod_revision).await.expect("watch");
    let written = writer.await.expect("writer task");
    for want in &written {
        let event = next_event(&mut watch).await;
        assert_eq!(event.revision(), *want, "events arrive once each, in order");
    }
    expect_marker_next(store, &mut watch, prefix).await;
}

/// A delete event carries the value before the deletion, with its mod revision.
pub async fn test_watch_delete_prev(store: &Store, prefix: &str) {
    let from = store.current_revision().await.expect("current revision");
    let v1 = create(store, &format!("{prefix}a"), "v1").await;
    let v2 = update(store, &v1, "v2").await;
    let (prev, deleted) = store.delete(&v2.key, Some(v2.mod_revision)).await.expect("delete");
    assert_eq!(prev, v2);
    let mut watch = store.watch(prefix, from).await.expect("watch");
    assert_eq!(
        next_event(&mut watch).await,
        WatchEvent::Put {
            kv: v1.clone(),
            prev: None
        }
    );
    assert_eq!(
        next_event(&mut watch).await,
        WatchEvent::Put {
            kv: v2.clone(),
            prev: Some(v1)
        }
    );
    let event = next_event(&mut watch).await;
    assert_eq!(
        event,
        WatchEvent::Delete {
            prev: v2,
            revision: deleted
        }
    );
    assert_eq!(event.revision(), deleted);
}

/// Several watches on overlapping prefixes each see exactly their events.
pub async fn test_concurrent_watchers(store: &Store, prefix: &str) {
    let sub = format!("{prefix}sub/");
    let mut whole = [
        store.watch(prefix, 0).await.expect("watch"),
        store.watch(prefix, 0).await.expect("watch"),
    ];
    let mut partial = store.watch(&sub, 0).await.expect("watch");
    let mut all = Vec::new();
    for i in 0..30 {
        let key = if i % 3 == 0 {
            format!("{sub}k{i}")
        } else {
            format!("{prefix}k{i}")
        };
        all.push(create(store, &key, "x").await);
    }
    for watch in &mut whole {
        for kv in &all {
            assert_eq!(
                next_event(watch).await,
                WatchEvent::Put {
                    kv: kv.clone(),
                    prev: None
                }
            );
        }
    }
    for kv in all.iter().filter(|kv| kv.key.starts_with(&sub)) {
        assert_eq!(
            next_event(&mut partial).await,
            WatchEvent::Put {
                kv: kv.clone(),
                prev: None
            }
        );
    }
    expect_marker_next(store, &mut partial, &sub).await;
}

/// Concurrent creates all succeed, each with its own revision.
pub async fn test_concurrent_creates(store: &Store, prefix: &str) {
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..50 {
        let store = store.clone();
        let key = format!("{prefix}k{i:02}");
        tasks.spawn(async move { store.create(&key, key.clone().into_bytes()).await });
    }
    let mut created = Vec::new();
    while let Some(result) = tasks.join_next().await {
        created.push(result.expect("create task").expect("a concurrent create"));
    }
    let revisions: BTreeSet<_> = created.iter().map(|kv| kv.mod_revision).collect();
    assert_eq!(revisions.len(), 50, "every create has its own revision");
    created.sort_by(|a, b| a.key.cmp(&b.key));
    assert_eq!(list_at(store, prefix, 0).await, created);
}

/// Concurrent compare-and-swaps from the same revision: exactly one wins, the others conflict with it.
pub async fn test_concurrent_cas(store: &Store, prefix: &str) {
    let kv = create(store, &format!("{prefix}a"), "initial").await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let (store, key) = (store.clone(), kv.key.clone());
        tasks.spawn(async move { store.update(&key, format!("v{i}").into_bytes(), kv.mod_revision).await });
    }
    let mut winners = Vec::new();
    let mut conflicts = Vec::new();
    while let Some(result) = tasks.join_next().await {
        match result.expect("update task") {
            Ok(kv) => winners.push(kv),
            Err(StorageError::Conflict { actual, expected, .. }) => conflicts.push((expected, actual)),
            Err(e) => panic!("a concurrent update failed: {e}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one compare-and-swap wins");
    let winner = &winners[0];
    assert!(
        conflicts.iter().all(|&c| c == (kv.mod_revision, winner.mod_revision)),
        "{conflicts:?}"
    );
    assert_eq!(conflicts.len(), 19);
    assert_eq!(store.get(&kv.key).await.expect("get").as_ref(), Some(winner));
}

/// Expects a watch from `after` to fail with `Compacted`, when it starts or as its first item.
async fn expect_watch_compacted(store: &Store, prefix: &str, after: Revision) {
    let error = match store.watch(prefix, after).await {
        Err(e) => e,
        Ok(mut watch) => match tokio::time::timeout(EVENT_TIMEOUT, watch.recv()).await {
            Ok(Some(Err(e))) => e,
            other => panic!("a watch from compacted revision {after}: expected an error, got {other:?}"),
        },
    };
    match error {
        StorageError::Compacted { .. } => {}
        e => panic!("a watch from compacted revision {after}: expected Compacted, got {e:?}"),
    }
}

/// Compaction removes older history: reads and watches below it fail; the latest values stay.
pub async fn test_compaction(store: &Store, prefix: &str) {
    let a1 = create(store, &format!("{prefix}a"), "a1").await;
    let a2 = update(store, &a1, "a2").await;
    let b = create(store, &format!("{prefix}b"), "b").await;
    let (_, b_deleted) = store.delete(&b.key, None).await.expect("delete");
    let a3 = update(store, &a2, "a3").await;
    store.compact(b_deleted).await.expect("compact");
    for revision in [a1.mod_revision, a2.mod_revision, b.mod_revision] {
        let options = ListOptions {
            revision,
            ..ListOptions::default()
        };
        match store.list(prefix, options).await {
            Err(StorageError::Compacted { requested, .. }) => assert_eq!(requested, revision),
            other => panic!("a list at compacted revision {revision}: expected Compacted, got {other:?}"),
        }
    }
    assert_eq!(
        list_at(store, prefix, b_deleted).await,
        vec![a2.clone()],
        "the compaction revision stays readable"
    );
    assert_eq!(list_at(store, prefix, a3.mod_revision).await, vec![a3.clone()]);
    assert_eq!(store.get(&a3.key).await.expect("get"), Some(a3.clone()));
    assert_eq!(store.get(&b.key).await.expect("get"), None);
    expect_watch_compacted(store, prefix, a1.mod_revision).await;
    expect_watch_compacted(store, prefix, b_deleted - 1).await;
    let mut watch = store
        .watch(prefix, b_deleted)
        .await
        .expect("a watch from the compaction revision");
    assert_eq!(next_event(&mut watch).await, WatchEvent::Put { kv: a3, prev: Some(a2) });
    expect_marker_next(store, &mut watch, prefix).await;
    match store.compact(b_deleted).await {
        Err(StorageError::Compacted { .. }) => {}
        other => panic!("compacting an already compacted revision: expected Compacted, got {other:?}"),
    }
    let future = store.current_revision().await.expect("current revision") + 1_000_000;
    match store.compact(future).await {
        Err(StorageError::TooLargeRevision { requested, .. }) => assert_eq!(requested, future),
        other => panic!("compacting a future revision: expected TooLargeRevision, got {other:?}"),
    }
}

/// When the backend supports progress requests, a watch on a quiet prefix reports, on request, a revision at least
/// the store's current one, after the events it owes; without support, nothing is asked.
pub async fn test_progress(store: &Store, prefix: &str) {
    let mut watch = store.watch(prefix, 0).await.expect("watch");
    let inside = create(store, &format!("{prefix}a"), "a").await;
    create(store, &format!("{}-elsewhere", prefix.trim_end_matches('/')), "x").await;
    let current = store.current_revision().await.expect("current revision");
    if !store.request_progress().await.expect("request progress") {
        return;
    }
    let mut seen_event = false;
    loop {
        match tokio::time::timeout(EVENT_TIMEOUT, watch.recv()).await {
            Err(_) => panic!("no progress notification within {EVENT_TIMEOUT:?}"),
            Ok(None) => panic!("the watch ended unexpectedly"),
            Ok(Some(Err(e))) => panic!("the watch failed: {e}"),
            Ok(Some(Ok(WatchEvent::Progress { revision }))) if revision >= current => {
                assert!(
                    seen_event,
                    "progress at {revision} came before the event at {}",
                    inside.mod_revision
                );
                return;
            }
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => {}
            Ok(Some(Ok(event))) => {
                assert_eq!(
                    event,
                    WatchEvent::Put {
                        kv: inside.clone(),
                        prev: None
                    }
                );
                seen_event = true;
            }
        }
    }
}
