//! Watch tests of the watch cache: replay and live events, the history window, fan-out, slow watchers, bookmarks.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{caught_up, eventually, key, next_event, patient, recv, start, store, CacherOptions, DEADLINE, PREFIX};
use crate::{KeyValue, Revision, Storage, StorageError, WatchEvent, WatchStream};

/// Writes a mix of creates, updates and deletes under [`PREFIX`] (in namespaces `ns0` and `ns1`) and returns the
/// event each write must produce.
struct Writer {
    /// The store.
    store: Arc<dyn Storage>,
    /// The live keys written so far.
    live: Vec<KeyValue>,
    /// Writes made.
    count: usize,
}

impl Writer {
    /// A writer to `store`.
    fn new(store: Arc<dyn Storage>) -> Self {
        Writer {
            store,
            live: Vec::new(),
            count: 0,
        }
    }

    /// Makes one write and returns its event.
    async fn step(&mut self) -> WatchEvent {
        self.count += 1;
        let n = self.count;
        if n.is_multiple_of(5) && !self.live.is_empty() {
            let prev = self.live.remove(n % self.live.len());
            let (_, revision) = self
                .store
                .delete(&prev.key, Some(prev.mod_revision))
                .await
                .expect("delete");
            WatchEvent::Delete { prev, revision }
        } else if n.is_multiple_of(3) && !self.live.is_empty() {
            let index = n % self.live.len();
            let prev = self.live[index].clone();
            let value = format!("update {n}").into_bytes();
            let kv = self
                .store
                .update(&prev.key, value, prev.mod_revision)
                .await
                .expect("update");
            self.live[index] = kv.clone();
            WatchEvent::Put { kv, prev: Some(prev) }
        } else {
            let key = key(&format!("ns{}/w{n:04}", n % 2));
            let kv = self
                .store
                .create(&key, format!("create {n}").into_bytes())
                .await
                .expect("create");
            self.live.push(kv.clone());
            WatchEvent::Put { kv, prev: None }
        }
    }

    /// Makes `count` writes and returns their events.
    async fn steps(&mut self, count: usize) -> Vec<WatchEvent> {
        let mut events = Vec::with_capacity(count);
        for _ in 0..count {
            events.push(self.step().await);
        }
        events
    }
}

/// The key of an event.
fn event_key(event: &WatchEvent) -> &str {
    match event {
        WatchEvent::Put { kv, .. } => &kv.key,
        WatchEvent::Delete { prev, .. } => &prev.key,
        WatchEvent::Progress { .. } => "",
    }
}

/// The events of `events` under `prefix` after revision `after`.
fn expected(events: &[WatchEvent], prefix: &str, after: Revision) -> Vec<WatchEvent> {
    events
        .iter()
        .filter(|event| event.revision() > after && event_key(event).starts_with(prefix))
        .cloned()
        .collect()
}

/// Receives `count` events (skipping bookmarks).
async fn take(watch: &mut WatchStream, count: usize) -> Vec<WatchEvent> {
    let mut events = Vec::with_capacity(count);
    for _ in 0..count {
        events.push(next_event(watch).await);
    }
    events
}

/// Creates a marker under `prefix` and expects it as the next event: nothing else came before.
async fn expect_marker_next(store: &dyn Storage, watch: &mut WatchStream, prefix: &str) {
    let marker = store
        .create(&format!("{prefix}~marker"), b"m".to_vec())
        .await
        .expect("marker");
    assert_eq!(next_event(watch).await, WatchEvent::Put { kv: marker, prev: None });
    store
        .delete(&format!("{prefix}~marker"), None)
        .await
        .expect("delete the marker");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_replays_history_then_live_without_gaps() {
    let (_dir, store) = store();
    let cacher = start(store.clone(), patient()).await;
    let mut writer = Writer::new(store.clone());
    let mut events = writer.steps(30).await;
    caught_up(&cacher, events[29].revision()).await;
    let live = tokio::spawn(async move { writer.steps(100).await });
    let ns1 = key("ns1/");
    let mut watches = Vec::new();
    for (prefix, start) in [(PREFIX, 0), (PREFIX, 10), (PREFIX, 29), (ns1.as_str(), 10)] {
        let after = events[start].revision();
        let watch = cacher.watch(prefix, after).await.expect("watch");
        watches.push((prefix, after, watch));
    }
    let mut from_now = cacher.watch(PREFIX, 0).await.expect("watch from now");
    events.extend(live.await.expect("join"));
    for (prefix, after, watch) in &mut watches {
        let expected = expected(&events, prefix, *after);
        assert_eq!(
            take(watch, expected.len()).await,
            expected,
            "watch of {prefix} after {after}"
        );
    }
    // Nothing else came: a marker in a namespace every watch covers is the next event of each.
    let marker = store.create(&key("ns1/~marker"), b"m".to_vec()).await.expect("marker");
    for (_, _, watch) in &mut watches {
        assert_eq!(
            next_event(watch).await,
            WatchEvent::Put {
                kv: marker.clone(),
                prev: None
            }
        );
    }
    let last = events.last().map(WatchEvent::revision).unwrap_or_default();
    let mut got = Vec::new();
    while got.last().map(WatchEvent::revision).unwrap_or_default() < last {
        got.push(next_event(&mut from_now).await);
    }
    assert!(
        events.ends_with(&got),
        "a watch from now gets a contiguous tail of the events"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_old_revision_is_compacted() {
    let (_dir, store) = store();
    let options = CacherOptions {
        history: 5,
        ..patient()
    };
    let cacher = start(store.clone(), options).await;
    let first = cacher.revision();
    let events = Writer::new(store.clone()).steps(12).await;
    caught_up(&cacher, events[11].revision()).await;
    let oldest = events[6].revision();
    let stats = cacher.stats();
    assert_eq!((stats.oldest, stats.events), (oldest, 5));
    for requested in [first, events[5].revision()] {
        assert_eq!(
            cacher.watch(PREFIX, requested).await.err(),
            Some(StorageError::Compacted {
                requested,
                compacted: oldest
            })
        );
    }
    let mut watch = cacher
        .watch(PREFIX, oldest)
        .await
        .expect("a watch from the oldest revision");
    assert_eq!(take(&mut watch, 5).await, events[7..].to_vec());
    expect_marker_next(store.as_ref(), &mut watch, PREFIX).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watchers_get_the_same_events() {
    let (_dir, store) = store();
    let cacher = start(store.clone(), patient()).await;
    let ns1 = key("ns1/");
    let mut watches = Vec::new();
    for i in 0..8 {
        let prefix = if i % 2 == 0 { PREFIX.to_owned() } else { ns1.clone() };
        let watch = cacher.watch(&prefix, 0).await.expect("watch");
        watches.push((prefix, watch));
    }
    assert_eq!(cacher.stats().watchers, 8);
    let after = cacher.revision();
    let events = Writer::new(store.clone()).steps(40).await;
    for (prefix, mut watch) in watches {
        let expected = expected(&events, &prefix, after);
        assert_eq!(take(&mut watch, expected.len()).await, expected, "watch of {prefix}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_and_slow_watchers_do_not_stall_others() {
    let (_dir, store) = store();
    let options = CacherOptions {
        watcher_queue: 16,
        ..patient()
    };
    let cacher = start(store.clone(), options).await;
    drop(cacher.watch(PREFIX, 0).await.expect("a watch dropped at once"));
    let mut slow = cacher.watch(PREFIX, 0).await.expect("a watch never read");
    let mut fast = cacher.watch(PREFIX, 0).await.expect("a watch read");
    const WRITES: usize = 200;
    const CHUNK: usize = 10;
    let received = Arc::new(AtomicUsize::new(0));
    let reader = tokio::spawn({
        let received = received.clone();
        async move {
            let mut events = Vec::with_capacity(WRITES);
            while events.len() < WRITES {
                events.push(next_event(&mut fast).await);
                received.store(events.len(), Ordering::SeqCst);
            }
            (events, fast)
        }
    });
    // The fast watcher keeps up: the writes wait for it every few events, so only the slow one falls behind.
    let mut writer = Writer::new(store.clone());
    let mut events = Vec::with_capacity(WRITES);
    while events.len() < WRITES {
        events.extend(writer.steps(CHUNK).await);
        let written = events.len();
        eventually("the fast watcher", || async {
            received.load(Ordering::SeqCst) >= written
        })
        .await;
    }
    let (received, fast) = reader.await.expect("join");
    assert_eq!(received, events, "the fast watcher gets every event");

    // As kube's cacher terminates a watcher that cannot keep up, the slow watcher's stream just ends: no error.
    let mut delivered = Vec::new();
    loop {
        match tokio::time::timeout(DEADLINE, slow.recv()).await {
            Ok(Some(Ok(event))) => delivered.push(event),
            Ok(Some(Err(e))) => panic!("the slow watcher ended with an error: {e:?}"),
            Ok(None) => break,
            Err(_) => panic!("the slow watcher's stream did not end within {DEADLINE:?}"),
        }
    }
    assert!(delivered.len() < WRITES, "the slow watcher was ended early");
    assert!(
        events.starts_with(&delivered),
        "the slow watcher got its events in order up to its end"
    );
    assert_eq!(cacher.stats().watchers, 1);
    drop(fast);
    eventually("no watcher left", || async { cacher.stats().watchers == 0 }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_arrive_when_idle() {
    let (_dir, store) = store();
    let options = CacherOptions {
        bookmark_interval: Duration::from_millis(20),
        ..patient()
    };
    let cacher = start(store.clone(), options).await;
    let a = store.create(&key("a"), b"a".to_vec()).await.expect("create");
    caught_up(&cacher, a.mod_revision).await;
    let mut idle = cacher.watch(PREFIX, 0).await.expect("watch");
    let bookmark = WatchEvent::Progress {
        revision: a.mod_revision,
    };
    assert_eq!(recv(&mut idle).await, Ok(bookmark.clone()));
    assert_eq!(
        recv(&mut idle).await,
        Ok(bookmark.clone()),
        "bookmarks repeat while idle"
    );

    let mut replaying = cacher.watch(PREFIX, a.mod_revision - 1).await.expect("watch");
    assert_eq!(recv(&mut replaying).await, Ok(WatchEvent::Put { kv: a, prev: None }));
    assert_eq!(recv(&mut replaying).await, Ok(bookmark));

    let b = store.create(&key("b"), b"b".to_vec()).await.expect("create");
    assert_eq!(
        next_event(&mut idle).await,
        WatchEvent::Put {
            kv: b.clone(),
            prev: None
        }
    );
    assert_eq!(
        recv(&mut idle).await,
        Ok(WatchEvent::Progress {
            revision: b.mod_revision
        }),
        "the next bookmark is at the new revision"
    );
}
