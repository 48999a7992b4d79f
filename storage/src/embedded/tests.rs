//! Tests of the embedded store: the conformance suite, plus durability, group commit, compaction and watch
//! lifecycle specifics.

use std::future::Future;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use redb::{ReadableDatabase, ReadableTableMetadata};

use super::{EmbeddedStorage, HISTORY, LOG, META, META_COMPACTED};
use crate::{conformance, KeyValue, ListOptions, Storage, StorageError, WatchEvent};

/// Opens a store in `dir`.
fn open(dir: &Path) -> Arc<EmbeddedStorage> {
    Arc::new(EmbeddedStorage::open(dir).expect("open the store"))
}

/// Polls `condition` until it holds, failing after a deadline.
async fn eventually<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// The number of rows of the history and log tables.
fn table_sizes(store: &EmbeddedStorage) -> (u64, u64) {
    let txn = store.shared.db.begin_read().expect("read");
    let history = txn.open_table(HISTORY).expect("history").len().expect("len");
    let log = txn.open_table(LOG).expect("log").len().expect("len");
    (history, log)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite() {
    let dir = tempfile::tempdir().expect("tempdir");
    conformance::run_all(open(dir.path())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_start_like_etcd() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir.path().join("new/nested"));
    assert_eq!(store.current_revision().await, Ok(1), "an empty store is at revision 1");
    let empty = store.list("", ListOptions::default()).await.expect("list");
    assert_eq!((empty.items.len(), empty.revision, empty.remaining), (0, 1, 0));
    let kv = store.create("/a", b"x".to_vec()).await.expect("create");
    assert_eq!(
        (kv.create_revision, kv.mod_revision),
        (2, 2),
        "the first write gets revision 2"
    );
    let failed = store.create("/a", b"y".to_vec()).await;
    assert!(matches!(failed, Err(StorageError::AlreadyExists { .. })));
    let kv = store.update("/a", b"y".to_vec(), 2).await.expect("update");
    assert_eq!(kv.mod_revision, 3, "a failed precondition consumes no revision");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopen_restores_data_history_and_compaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a1, a2, b, deleted, compacted, listed, current) = {
        let store = open(dir.path());
        let a1 = store.create("/r/a", b"a1".to_vec()).await.expect("create");
        let a2 = store
            .update("/r/a", b"a2".to_vec(), a1.mod_revision)
            .await
            .expect("update");
        let b = store.create("/r/b", b"b".to_vec()).await.expect("create");
        let compacted = a2.mod_revision;
        store.compact(compacted).await.expect("compact");
        let (_, deleted) = store.delete("/r/a", None).await.expect("delete");
        let options = ListOptions {
            revision: b.mod_revision,
            ..ListOptions::default()
        };
        let listed = store.list("/r/", options).await.expect("list");
        let current = store.current_revision().await.expect("revision");
        (a1, a2, b, deleted, compacted, listed.items, current)
    };
    let store = open(dir.path());
    assert_eq!(store.current_revision().await, Ok(current));
    assert_eq!(store.get("/r/a").await, Ok(None));
    assert_eq!(store.get("/r/b").await, Ok(Some(b.clone())));
    let options = ListOptions {
        revision: b.mod_revision,
        ..ListOptions::default()
    };
    assert_eq!(store.list("/r/", options).await.expect("list").items, listed);
    let options = ListOptions {
        revision: a1.mod_revision,
        ..ListOptions::default()
    };
    let error = StorageError::Compacted {
        requested: a1.mod_revision,
        compacted,
    };
    assert_eq!(store.list("/r/", options).await.err(), Some(error.clone()));
    assert_eq!(store.watch("/r/", a1.mod_revision).await.err(), Some(error));
    let mut watch = store.watch("/r/", compacted).await.expect("watch");
    assert_eq!(
        conformance::next_event(&mut watch).await,
        WatchEvent::Put { kv: b, prev: None }
    );
    let want = WatchEvent::Delete {
        prev: a2,
        revision: deleted,
    };
    assert_eq!(conformance::next_event(&mut watch).await, want);
    let next = store.create("/r/c", b"c".to_vec()).await.expect("create");
    assert_eq!(
        next.mod_revision,
        current + 1,
        "the revision counter survives a restart"
    );
    assert_eq!(
        conformance::next_event(&mut watch).await,
        WatchEvent::Put { kv: next, prev: None }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_writes_share_transactions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let shared = store.shared.clone();
    // Hold the database's write lock so that the writer thread stalls while all the requests queue up.
    let blocker = shared.db.begin_write().expect("begin_write");
    let before = shared.transactions.load(Ordering::Relaxed);
    let submitted = shared.submitted.load(Ordering::Relaxed);
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..100 {
        let store = store.clone();
        tasks.spawn(async move { store.create(&format!("/g/{i:03}"), vec![1]).await });
    }
    eventually("all the requests to be queued", || {
        let shared = shared.clone();
        async move { shared.submitted.load(Ordering::Relaxed) == submitted + 100 }
    })
    .await;
    drop(blocker);
    let mut revisions = Vec::new();
    while let Some(result) = tasks.join_next().await {
        revisions.push(result.expect("task").expect("create").mod_revision);
    }
    revisions.sort_unstable();
    revisions.dedup();
    assert_eq!(revisions.len(), 100);
    let transactions = shared.transactions.load(Ordering::Relaxed) - before;
    assert!(transactions <= 2, "100 queued writes took {transactions} transactions");
}

/// Updates `keys` keys `rounds` times each, with one concurrent task per key. Returns the final key-values.
async fn churn(store: &Arc<EmbeddedStorage>, prefix: &str, keys: usize, rounds: usize) -> Vec<KeyValue> {
    let mut tasks = tokio::task::JoinSet::new();
    for k in 0..keys {
        let store = store.clone();
        let key = format!("{prefix}{k:04}");
        tasks.spawn(async move {
            let mut kv = store.create(&key, vec![0]).await.expect("create");
            for round in 1..rounds {
                kv = store
                    .update(&key, round.to_le_bytes().to_vec(), kv.mod_revision)
                    .await
                    .expect("update");
            }
            kv
        });
    }
    let mut latest = Vec::new();
    while let Some(kv) = tasks.join_next().await {
        latest.push(kv.expect("task"));
    }
    latest.sort_by(|a, b| a.key.cmp(&b.key));
    latest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_keeps_only_the_latest_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    // More revisions than one compaction step removes, so that compaction interleaves with writes.
    let latest = churn(&store, "/c/", 100, 50).await;
    let doomed = store.create("/c/doomed", vec![1]).await.expect("create");
    store.delete(&doomed.key, None).await.expect("delete");
    let middle = latest[0].mod_revision / 2;
    let target = store.current_revision().await.expect("revision");
    // Two compactions at once: the second raises the target while the first is under way.
    let (first, second) = tokio::join!(store.compact(middle), store.compact(target));
    assert_eq!((first, second), (Ok(()), Ok(())));
    assert_eq!(
        table_sizes(&store),
        (100, 0),
        "only the latest value of each live key is left"
    );
    assert_eq!(
        store.list("/c/", ListOptions::default()).await.expect("list").items,
        latest
    );
    let options = ListOptions {
        revision: target,
        ..ListOptions::default()
    };
    assert_eq!(
        store
            .list("/c/", options)
            .await
            .expect("list at the compaction revision")
            .items,
        latest
    );
    let error = StorageError::Compacted {
        requested: target - 1,
        compacted: target,
    };
    assert_eq!(store.watch("/c/", target - 1).await.err(), Some(error));
    assert_eq!(
        store.compact(middle).await,
        Err(StorageError::Compacted {
            requested: middle,
            compacted: target
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_compaction_resumes_on_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let target = {
        let store = open(dir.path());
        churn(&store, "/i/", 10, 20).await;
        store.current_revision().await.expect("revision")
    };
    {
        // Simulate a crash right after a compaction was recorded and before its history was removed.
        let db = redb::Database::create(dir.path().join("store.redb")).expect("open the database");
        let txn = db.begin_write().expect("begin_write");
        txn.open_table(META)
            .expect("meta")
            .insert(META_COMPACTED, target)
            .expect("insert");
        txn.commit().expect("commit");
    }
    let store = open(dir.path());
    let options = ListOptions {
        revision: target - 1,
        ..ListOptions::default()
    };
    let error = StorageError::Compacted {
        requested: target - 1,
        compacted: target,
    };
    assert_eq!(store.list("/i/", options).await.err(), Some(error));
    eventually("the compaction to finish", || {
        let store = store.clone();
        async move { table_sizes(&store) == (10, 0) }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_watcher_loses_nothing_and_delays_no_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let mut slow = store.watch("/s/", 0).await.expect("watch");
    let mut fast = store.watch("/s/", 0).await.expect("watch");
    let count = 3 * super::WATCH_CHANNEL_CAPACITY;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..count {
        let store = store.clone();
        tasks.spawn(async move { store.create(&format!("/s/{i:04}"), vec![1]).await });
    }
    let mut revisions = Vec::new();
    while let Some(result) = tasks.join_next().await {
        revisions.push(result.expect("task").expect("create").mod_revision);
    }
    revisions.sort_unstable();
    for want in &revisions {
        assert_eq!(conformance::next_event(&mut fast).await.revision(), *want);
    }
    for want in &revisions {
        assert_eq!(conformance::next_event(&mut slow).await.revision(), *want);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_receiver_ends_the_watch_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let watch = store.watch("/d/", 0).await.expect("watch");
    assert_eq!(store.watchers.load(Ordering::Relaxed), 1);
    drop(watch);
    let watchers = store.watchers.clone();
    eventually("the watch task to end", || {
        let watchers = watchers.clone();
        async move { watchers.load(Ordering::Relaxed) == 0 }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_store_ends_watches_and_frees_the_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = EmbeddedStorage::open(dir.path()).expect("open");
    let mut watch = store.watch("/x/", 0).await.expect("watch");
    let kv = store.create("/x/a", vec![1]).await.expect("create");
    assert_eq!(
        conformance::next_event(&mut watch).await,
        WatchEvent::Put {
            kv: kv.clone(),
            prev: None
        }
    );
    drop(store);
    let end = tokio::time::timeout(Duration::from_secs(20), watch.recv())
        .await
        .expect("the watch ends");
    assert!(matches!(end, Some(Err(StorageError::Unavailable(_)))), "{end:?}");
    let store = EmbeddedStorage::open(dir.path()).expect("reopen at once");
    assert_eq!(store.get("/x/a").await, Ok(Some(kv)));
}

#[test]
fn corrupt_versions_are_errors() {
    use super::Version;
    for bytes in [&[][..], &[1, 2, 3][..], &[7, 0, 0, 0, 0, 0, 0, 0, 0][..]] {
        assert!(
            matches!(Version::decode(bytes), Err(StorageError::Internal(_))),
            "{bytes:?}"
        );
    }
    let put = Version::decode(&Version::encode_put(5, b"v")).expect("decode");
    assert_eq!(
        put,
        Version {
            create_revision: 5,
            value: Some(b"v".to_vec())
        }
    );
    assert!(Version::is_tombstone(&Version::encode_tombstone()));
}

/// Measures write throughput with 1 and 32 concurrent writers:
/// `cargo test --release -- --ignored --nocapture write_throughput`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement, not a test"]
async fn write_throughput() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(dir.path());
    let mut watches = Vec::new();
    for (writers, watchers) in [(1usize, 0), (32, 0), (32, 50)] {
        // Watchers of other prefixes: each commit wakes them all to read the log.
        while watches.len() < watchers {
            watches.push(
                store
                    .watch(&format!("/elsewhere/{}/", watches.len()), 0)
                    .await
                    .expect("watch"),
            );
        }
        let writes_per_writer = 4000 / writers.max(1);
        let before = store.shared.transactions.load(Ordering::Relaxed);
        let start = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for w in 0..writers {
            let store = store.clone();
            tasks.spawn(async move {
                for i in 0..writes_per_writer {
                    let key = format!("/bench/{writers}/{watchers}/{w}/{i}");
                    store.create(&key, vec![b'x'; 512]).await.expect("create");
                }
            });
        }
        while let Some(result) = tasks.join_next().await {
            result.expect("task");
        }
        let elapsed = start.elapsed().as_secs_f64();
        let writes = (writers * writes_per_writer) as f64;
        let transactions = store.shared.transactions.load(Ordering::Relaxed) - before;
        println!(
            "{writers:>2} writers, {watchers:>2} watchers: {writes} writes in {elapsed:.2}s = {:.0} writes/s, \
             {transactions} transactions",
            writes / elapsed
        );
    }
}

// ---- Snapshots --------------------------------------------------------------------------------------------------

/// Everything a client can read of a store at its latest revision: every key's value and revisions.
async fn contents(store: &EmbeddedStorage) -> (i64, Vec<KeyValue>) {
    let list = store.list("", ListOptions::default()).await.expect("list");
    (list.revision, list.items)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_restores_keys_history_log_and_compaction() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir.path().join("a"));
    churn(&store, "/k/", 5, 4).await;
    let compact_at = store.current_revision().await.expect("revision") - 3;
    store.compact(compact_at).await.expect("compact");
    let deleted = store.create("/gone", b"x".to_vec()).await.expect("create");
    store.delete("/gone", Some(deleted.mod_revision)).await.expect("delete");
    let file = dir.path().join("snap");
    let saved = store
        .snapshot(std::fs::File::create(&file).expect("create the file"))
        .expect("snapshot");
    assert_eq!(saved.revision, store.current_revision().await.expect("revision"));
    assert_eq!((saved.compacted, saved.keys), (compact_at, 5), "{saved:?}");
    assert_eq!(saved.bytes, std::fs::metadata(&file).expect("metadata").len());
    assert_eq!(super::snapshot::status(&file).expect("status"), saved);

    let restored_dir = dir.path().join("b");
    let status = super::snapshot::restore(&file, &restored_dir).expect("restore");
    assert_eq!(status, saved);
    let restored = open(&restored_dir);
    assert_eq!(contents(&restored).await, contents(&store).await);
    // History after the compaction reads the same; before it, it is compacted in both.
    let between = ListOptions {
        revision: compact_at + 1,
        ..ListOptions::default()
    };
    assert_eq!(
        restored.list("", between.clone()).await.expect("list").items,
        store.list("", between).await.expect("list").items
    );
    let before = ListOptions {
        revision: compact_at - 1,
        ..ListOptions::default()
    };
    assert!(matches!(
        restored.list("", before).await,
        Err(StorageError::Compacted { .. })
    ));
    // The log replays the same events to a watch from the compaction revision on.
    let events = |store: Arc<EmbeddedStorage>| async move {
        let mut watch = store.watch("", compact_at).await.expect("watch");
        let mut seen = Vec::new();
        while seen.len() < (saved.revision - compact_at) as usize {
            match watch.recv().await.expect("an event").expect("not an error") {
                WatchEvent::Progress { .. } => {}
                event => seen.push(format!("{event:?}")),
            }
        }
        seen
    };
    assert_eq!(events(restored.clone()).await, events(store.clone()).await);
    // And the restored store goes on from the snapshot's revision.
    let next = restored.create("/after", b"y".to_vec()).await.expect("create");
    assert_eq!(next.mod_revision, saved.revision + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_taken_during_writes_holds_exactly_the_writes_acknowledged_by_its_revision() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir.path().join("a"));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut acknowledged = Vec::new();
                for i in 0..150 {
                    let key = format!("/w{w}/{i}");
                    let kv = store.create(&key, vec![b'v'; 64]).await.expect("create");
                    acknowledged.push((key, kv.mod_revision));
                }
                acknowledged
            })
        })
        .collect();
    eventually("some writes", || async {
        store.current_revision().await.unwrap_or(0) > 100
    })
    .await;
    let file = dir.path().join("snap");
    let store_for_snapshot = store.clone();
    let snapshot_file = file.clone();
    let saved = tokio::task::spawn_blocking(move || {
        store_for_snapshot.snapshot(std::fs::File::create(&snapshot_file).expect("create the file"))
    })
    .await
    .expect("join")
    .expect("snapshot");
    let mut acknowledged = Vec::new();
    for writer in writers {
        acknowledged.extend(writer.await.expect("join"));
    }
    assert!(
        acknowledged.iter().any(|(_, rev)| *rev > saved.revision),
        "the writes went on after the snapshot ({} at {})",
        acknowledged.len(),
        saved.revision
    );
    super::snapshot::restore(&file, &dir.path().join("b")).expect("restore");
    let restored = open(&dir.path().join("b"));
    for (key, revision) in &acknowledged {
        let found = restored.get(key).await.expect("get");
        assert_eq!(
            found.is_some(),
            *revision <= saved.revision,
            "{key} written at {revision}, snapshot at {}",
            saved.revision
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_snapshots_and_used_directories_are_refused_writing_nothing() {
    use super::snapshot::{restore, status, SnapshotError};
    let dir = tempfile::tempdir().expect("tempdir");
    let store = open(&dir.path().join("a"));
    churn(&store, "/k/", 3, 2).await;
    let file = dir.path().join("snap");
    store
        .snapshot(std::fs::File::create(&file).expect("file"))
        .expect("snapshot");
    let good = std::fs::read(&file).expect("read");

    let write = |name: &str, bytes: &[u8]| {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        path
    };
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 1;
    for (name, bytes, says) in [
        ("flipped", flipped.as_slice(), "SHA-256 does not match"),
        ("cut", &good[..good.len() - 10], "SHA-256 does not match"),
        ("tiny", &good[..4], "does not start as a wasm-apiserver snapshot does"),
        (
            "other",
            b"{\"kind\": \"List\"} and more bytes than a digest has".as_slice(),
            "does not start",
        ),
    ] {
        let path = write(name, bytes);
        let error = status(&path).expect_err(name);
        assert!(matches!(error, SnapshotError::Damaged(_)), "{name}: {error}");
        assert!(error.to_string().contains(says), "{name}: {error}");
        let target = dir.path().join(format!("restored-{name}"));
        restore(&path, &target).expect_err(name);
        assert!(
            !target.join("store.redb").exists(),
            "{name}: a damaged snapshot wrote a store"
        );
    }
    let error = restore(&file, &dir.path().join("a")).expect_err("a used directory");
    assert!(matches!(error, SnapshotError::Exists(_)), "{error}");
    assert!(error.to_string().contains("restore into a new directory"), "{error}");
}
