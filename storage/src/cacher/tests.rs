//! Tests of the watch cache against the embedded store (directly, or behind [`gated::Gated`] gates).

use std::future::Future;
use std::mem::size_of;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{Cacher, CacherOptions};
use crate::conformance::next_event;
use crate::embedded::EmbeddedStorage;
use crate::{KeyValue, ListOptions, Revision, Storage, StorageError, WatchEvent, WatchStream};

mod gated;
mod watch;

use gated::Gated;

/// How long to wait for anything expected.
const DEADLINE: Duration = Duration::from_secs(20);
/// The resource prefix under test.
const PREFIX: &str = "/registry/example.com/widgets/";

/// A store in a temporary directory.
fn store() -> (TempDir, Arc<EmbeddedStorage>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Arc::new(EmbeddedStorage::open(dir.path()).expect("open the store"));
    (dir, store)
}

/// Options for tests that must be served from memory: reads wait for the cache as long as needed.
fn patient() -> CacherOptions {
    CacherOptions {
        bookmark_interval: Duration::ZERO,
        wait_timeout: DEADLINE,
        catch_up_timeout: DEADLINE,
        ..CacherOptions::default()
    }
}

/// Options for tests of reads the cache cannot serve yet: they go to the upstream soon.
fn impatient() -> CacherOptions {
    CacherOptions {
        wait_timeout: Duration::from_millis(50),
        catch_up_timeout: Duration::from_millis(10),
        ..patient()
    }
}

/// Starts a cacher of [`PREFIX`] and waits for its first list.
async fn start(upstream: Arc<dyn Storage>, options: CacherOptions) -> Arc<Cacher> {
    let cacher = Cacher::start(upstream, PREFIX.to_owned(), options);
    cacher.ready(DEADLINE).await.expect("the cache gets ready");
    cacher
}

/// The key of `name` under [`PREFIX`].
fn key(name: &str) -> String {
    format!("{PREFIX}{name}")
}

/// Polls `condition` until it holds, failing after [`DEADLINE`].
async fn eventually<F, Fut>(what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + DEADLINE;
    while !condition().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the cache's revision reaches `revision`.
async fn caught_up(cacher: &Cacher, revision: Revision) {
    eventually(&format!("the cache at revision {revision}"), || async {
        cacher.revision() >= revision
    })
    .await;
}

/// The next item of a watch, which must not end.
async fn recv(stream: &mut WatchStream) -> crate::Result<WatchEvent> {
    match tokio::time::timeout(DEADLINE, stream.recv()).await {
        Ok(Some(item)) => item,
        Ok(None) => panic!("the watch ended without an error"),
        Err(_) => panic!("no watch item within {DEADLINE:?}"),
    }
}

/// Creates `key` with `value`.
async fn create(store: &dyn Storage, key: &str, value: &str) -> KeyValue {
    store.create(key, value.as_bytes().to_vec()).await.expect("create")
}

/// Lists `prefix` from the cache at a revision not older than `min_revision`.
async fn cached_list(cacher: &Cacher, prefix: &str, min_revision: Revision) -> Vec<KeyValue> {
    let result = cacher
        .list(prefix, ListOptions::default(), min_revision)
        .await
        .expect("list");
    assert_eq!(result.remaining, 0);
    result.items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_list_then_live_updates() {
    let (_dir, store) = store();
    let mut expected = Vec::new();
    for i in 0..25 {
        expected.push(create(store.as_ref(), &key(&format!("ns{}/w{i:02}", i % 3)), &format!("v{i}")).await);
    }
    create(store.as_ref(), "/registry/example.com/other/x", "outside").await;
    expected.sort_by(|a, b| a.key.cmp(&b.key));
    let options = CacherOptions {
        page_size: 4,
        ..patient()
    };
    let cacher = start(store.clone(), options).await;
    let current = store.current_revision().await.expect("revision");
    assert_eq!(cacher.revision(), current, "the first list is at the store's revision");
    let listed = cacher.list(PREFIX, ListOptions::default(), 0).await.expect("list");
    assert_eq!((listed.items, listed.revision), (expected.clone(), current));

    let created = create(store.as_ref(), &key("ns0/new"), "new").await;
    assert_eq!(
        cacher.get(&created.key, created.mod_revision).await,
        Ok(Some(created.clone()))
    );
    let updated = store
        .update(&created.key, b"newer".to_vec(), created.mod_revision)
        .await
        .expect("update");
    assert_eq!(
        cacher.get(&created.key, updated.mod_revision).await,
        Ok(Some(updated.clone()))
    );
    let (_, deleted) = store.delete(&expected[0].key, None).await.expect("delete");
    assert_eq!(cacher.get(&expected[0].key, deleted).await, Ok(None));

    let fresh = store
        .list(PREFIX, ListOptions::default())
        .await
        .expect("list the store");
    assert_eq!(cached_list(&cacher, PREFIX, deleted).await, fresh.items);
    let stats = cacher.stats();
    assert_eq!((stats.objects, stats.revision, stats.events), (25, deleted, 3));
    let bytes: usize = fresh.items.iter().map(|kv| kv.key.len() + kv.value.len()).sum();
    assert_eq!(stats.bytes, bytes);
    assert_eq!(stats.upstream_reads, 0, "every read was served from memory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_sub_prefixes_with_pagination() {
    let (_dir, store) = store();
    let cacher = start(store.clone(), patient()).await;
    let mut last = 0;
    for ns in ["a", "b", "c"] {
        for i in 0..7 {
            last = create(store.as_ref(), &key(&format!("{ns}/w{i}")), ns)
                .await
                .mod_revision;
        }
    }
    caught_up(&cacher, last).await;
    let namespace = key("b/");
    let expected = store
        .list(&namespace, ListOptions::default())
        .await
        .expect("list")
        .items;
    assert_eq!(expected.len(), 7);
    let mut pages = Vec::new();
    let mut start_after = None;
    loop {
        let options = ListOptions {
            revision: 0,
            limit: 3,
            start_after: start_after.clone(),
        };
        let page = cacher.list(&namespace, options, last).await.expect("page");
        assert_eq!(page.revision, last);
        let seen = pages.len() + page.items.len();
        assert_eq!(
            page.remaining as usize,
            expected.len() - seen,
            "remaining after {seen} items"
        );
        start_after = page.items.last().map(|kv| kv.key.clone());
        pages.extend(page.items);
        if page.remaining == 0 {
            break;
        }
    }
    assert_eq!(pages, expected);
    let exact = ListOptions {
        revision: last,
        ..ListOptions::default()
    };
    let at_last = cacher
        .list(&namespace, exact, 0)
        .await
        .expect("list at the cache's revision");
    assert_eq!((at_last.items, at_last.revision), (expected, last));
    assert_eq!(cacher.stats().upstream_reads, 0);
    let outside = cacher
        .list("/registry/example.com/other/", ListOptions::default(), 0)
        .await;
    assert!(matches!(outside, Err(StorageError::Internal(_))), "{outside:?}");
    assert!(matches!(
        cacher.get("/elsewhere", 0).await,
        Err(StorageError::Internal(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_at_a_min_revision_wait_then_answer() {
    let (_dir, store) = store();
    let gated = Gated::new(store.clone());
    let options = CacherOptions {
        wait_timeout: Duration::from_millis(200),
        ..patient()
    };
    let cacher = start(gated.clone(), options).await;
    gated.pause(true);
    let kv = create(gated.as_ref(), &key("late"), "late").await;
    let get = tokio::spawn({
        let (cacher, key) = (cacher.clone(), kv.key.clone());
        async move { cacher.get(&key, kv.mod_revision).await }
    });
    let list = tokio::spawn({
        let cacher = cacher.clone();
        async move { cacher.list(PREFIX, ListOptions::default(), kv.mod_revision).await }
    });
    let mut get = get;
    let early = tokio::time::timeout(Duration::from_millis(50), &mut get).await;
    assert!(early.is_err(), "the get waits while the cache is behind");
    assert!(cacher.revision() < kv.mod_revision);
    gated.pause(false);
    assert_eq!(get.await.expect("join"), Ok(Some(kv.clone())));
    let listed = list.await.expect("join").expect("list");
    assert_eq!((listed.items, listed.revision), (vec![kv.clone()], kv.mod_revision));
    assert_eq!(cacher.stats().upstream_reads, 0, "served from memory");

    let future = kv.mod_revision + 10;
    let too_large = cacher.get(&kv.key, future).await;
    let current = store.current_revision().await.expect("revision");
    assert_eq!(
        too_large,
        Err(StorageError::TooLargeRevision {
            requested: future,
            current
        })
    );
    let too_large = cacher.list(PREFIX, ListOptions::default(), future).await;
    assert!(
        matches!(too_large, Err(StorageError::TooLargeRevision { .. })),
        "{too_large:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_list_sees_a_write_made_just_before_it() {
    let (_dir, store) = store();
    let cacher = start(store.clone(), patient()).await;
    for i in 0..20 {
        let kv = create(store.as_ref(), &key(&format!("w{i:02}")), "x").await;
        let listed = cacher
            .consistent_list(PREFIX, ListOptions::default())
            .await
            .expect("list");
        assert!(listed.revision >= kv.mod_revision);
        assert_eq!(listed.items.len(), i + 1);
        assert_eq!(listed.items.last(), Some(&kv));
    }
    assert_eq!(cacher.stats().upstream_reads, 0, "served from memory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consistent_get_sees_this_hosts_write_made_just_before_it() {
    let (_dir, store) = store();
    let cacher = start(store.clone(), patient()).await;
    for i in 0..20 {
        let kv = create(store.as_ref(), &key(&format!("w{i:02}")), "x").await;
        // As the registry does after each write through this host.
        cacher.note_write(kv.mod_revision);
        assert_eq!(cacher.consistent_get(&kv.key).await, Ok(Some(kv)));
    }
    assert_eq!(cacher.consistent_get(&key("absent")).await, Ok(None));
    assert_eq!(cacher.stats().upstream_reads, 0, "served from memory");
}

/// Asserts that a consistent list holds only `kv`, at `revision`, and that a get at `revision` finds it.
async fn assert_only_object_at(cacher: &Cacher, kv: &KeyValue, revision: Revision) {
    let listed = cacher
        .consistent_list(PREFIX, ListOptions::default())
        .await
        .expect("list");
    assert_eq!((listed.items, listed.revision), (vec![kv.clone()], revision));
    assert_eq!(cacher.get(&kv.key, revision).await, Ok(Some(kv.clone())));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_catch_up_by_requesting_progress_after_writes_elsewhere() {
    let (_dir, store) = store();
    let cacher = start(store.clone(), patient()).await;
    let kv = create(store.as_ref(), &key("a"), "a").await;
    for i in 0..5 {
        let outside = create(store.as_ref(), &format!("/registry/example.com/other/x{i}"), "x").await;
        assert_only_object_at(&cacher, &kv, outside.mod_revision).await;
    }
    assert_eq!(cacher.stats().upstream_reads, 0, "served from memory");
}

/// Behind the shared watch (as every tenant's caches are), a consistent get that finds the cache behind another
/// prefix's write reads the upstream once and brings the cache up to date: the gets after it are served from memory.
/// Before, every get read the upstream until a write under the cache's own prefix came.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_get_that_finds_the_cache_behind_a_write_elsewhere_brings_it_up_to_date() {
    let (_dir, store) = store();
    let shared = Arc::new(crate::shared_watch::SharedWatch::new(store.clone()));
    let cacher = start(shared.clone(), patient()).await;
    let kv = create(store.as_ref(), &key("a"), "a").await;
    caught_up(&cacher, kv.mod_revision).await;
    let mut elsewhere = shared.watch("/registry/example.com/other/", 0).await.expect("watch");
    let outside = create(store.as_ref(), "/registry/example.com/other/x", "x").await;
    assert!(matches!(next_event(&mut elsewhere).await, WatchEvent::Put { .. }));
    assert!(
        cacher.revision() < outside.mod_revision,
        "the cache has not heard of the other write"
    );

    assert_eq!(cacher.consistent_get(&kv.key).await, Ok(Some(kv.clone())));
    assert_eq!(cacher.stats().upstream_reads, 1);
    caught_up(&cacher, outside.mod_revision).await;
    for _ in 0..3 {
        assert_eq!(cacher.consistent_get(&kv.key).await, Ok(Some(kv.clone())));
    }
    assert_eq!(cacher.stats().upstream_reads, 1, "served from memory");
    assert!(elsewhere.try_recv().is_err(), "the other prefix's watcher was woken");
}

/// A read of a cache still loading its first list asks no watch for progress: none would reach the cache, and with
/// thousands of tenants' caches behind the shared watch, each cache started under writes woke them all.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_a_loading_cache_wakes_no_other_watch() {
    let (_dir, store) = store();
    let gated = Gated::new(store.clone());
    let shared = Arc::new(crate::shared_watch::SharedWatch::new(gated.clone()));
    let mut elsewhere = shared.watch("/registry/example.com/other/", 0).await.expect("watch");
    let outside = create(shared.as_ref(), "/registry/example.com/other/x", "x").await;
    assert!(matches!(next_event(&mut elsewhere).await, WatchEvent::Put { .. }));

    gated.hold_lists(true);
    let options = impatient();
    let cacher = Cacher::start(shared.clone(), PREFIX.to_owned(), options);
    let listed = cacher
        .consistent_list(PREFIX, ListOptions::default())
        .await
        .expect("list");
    assert_eq!((listed.items.len(), listed.revision), (0, outside.mod_revision));
    assert_eq!(cacher.stats().upstream_reads, 1);
    assert!(elsewhere.try_recv().is_err(), "another prefix's watcher was woken");
    gated.hold_lists(false);
    assert_eq!(cacher.ready(DEADLINE).await, Ok(outside.mod_revision));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_progress_requests_reads_wait_only_for_this_hosts_writes() {
    let (_dir, store) = store();
    let gated = Gated::new(store.clone());
    gated.refuse_progress_requests();
    let cacher = start(gated.clone(), patient()).await;
    gated.pause(true);
    let kv = create(gated.as_ref(), &key("mine"), "x").await;
    cacher.note_write(kv.mod_revision);
    assert_eq!(cacher.last_write(), kv.mod_revision);
    let list = tokio::spawn({
        let cacher = cacher.clone();
        async move { cacher.consistent_list(PREFIX, ListOptions::default()).await }
    });
    let mut list = list;
    let early = tokio::time::timeout(Duration::from_millis(50), &mut list).await;
    assert!(early.is_err(), "the list waits for the event of this host's write");
    gated.pause(false);
    let listed = list.await.expect("join").expect("list");
    assert_eq!((listed.items, listed.revision), (vec![kv.clone()], kv.mod_revision));
    assert_eq!(cacher.stats().upstream_reads, 0, "served from memory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_fall_back_to_the_upstream_until_progress_arrives() {
    let (_dir, store) = store();
    let gated = Gated::new(store.clone());
    gated.refuse_progress_requests();
    let options = CacherOptions {
        catch_up_timeout: Duration::from_millis(30),
        ..patient()
    };
    let cacher = start(gated.clone(), options).await;
    let kv = create(gated.as_ref(), &key("a"), "a").await;
    caught_up(&cacher, kv.mod_revision).await;
    let outside = create(gated.as_ref(), "/registry/example.com/other/x", "x").await;

    // The cache cannot know that nothing changed under its prefix: the reads go to the upstream.
    assert_only_object_at(&cacher, &kv, outside.mod_revision).await;
    assert_eq!(cacher.stats().upstream_reads, 2);
    assert_eq!(cacher.consistent_get(&kv.key).await, Ok(Some(kv.clone())));
    assert_eq!(cacher.stats().upstream_reads, 3);

    // A progress notification from the upstream lets the cache answer.
    eventually("the upstream watch", || async { gated.watches() == 1 }).await;
    gated.inject(Ok(WatchEvent::Progress {
        revision: outside.mod_revision,
    }));
    caught_up(&cacher, outside.mod_revision).await;
    assert_only_object_at(&cacher, &kv, outside.mod_revision).await;
    assert_eq!(cacher.consistent_get(&kv.key).await, Ok(Some(kv.clone())));
    assert_eq!(cacher.stats().upstream_reads, 3, "served from memory");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_from_the_upstream_until_ready() {
    let (_dir, store) = store();
    let kv = create(store.as_ref(), &key("a"), "a").await;
    let gated = Gated::new(store.clone());
    gated.hold_lists(true);
    let options = impatient();
    let cacher = Cacher::start(gated.clone(), PREFIX.to_owned(), options);
    assert_eq!(cacher.revision(), 0);
    assert_eq!(cacher.get(&kv.key, 0).await, Ok(Some(kv.clone())));
    let listed = cacher.list(PREFIX, ListOptions::default(), 0).await.expect("list");
    assert_eq!(listed.items, vec![kv.clone()]);
    assert_eq!(cacher.stats().upstream_reads, 2);
    assert!(matches!(
        cacher.watch(PREFIX, 0).await,
        Err(StorageError::Unavailable(_))
    ));
    gated.hold_lists(false);
    assert_eq!(cacher.ready(DEADLINE).await, Ok(kv.mod_revision));
    assert_eq!(cacher.get(&kv.key, 0).await, Ok(Some(kv)));
    assert_eq!(cacher.stats().upstream_reads, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resumes_the_upstream_watch_after_an_error() {
    let (_dir, store) = store();
    let gated = Gated::new(store.clone());
    let cacher = start(gated.clone(), patient()).await;
    let mut watch = cacher.watch(PREFIX, 0).await.expect("watch");
    let a = create(gated.as_ref(), &key("a"), "a").await;
    assert_eq!(next_event(&mut watch).await, WatchEvent::Put { kv: a, prev: None });
    eventually("the upstream watch", || async { gated.watches() == 1 }).await;
    gated.inject(Err(StorageError::Unavailable("connection reset".into())));
    eventually("a resumed upstream watch", || async { gated.watches() == 2 }).await;
    let b = create(gated.as_ref(), &key("b"), "b").await;
    assert_eq!(
        next_event(&mut watch).await,
        WatchEvent::Put { kv: b, prev: None },
        "the cache's watchers go on with no gap"
    );
    let stats = cacher.stats();
    assert_eq!((stats.resumes, stats.relists), (1, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_again_after_an_upstream_compaction() {
    let (_dir, store) = store();
    let gated = Gated::new(store.clone());
    let cacher = start(gated.clone(), patient()).await;
    let a = create(gated.as_ref(), &key("a"), "a").await;
    let b = create(gated.as_ref(), &key("b"), "b").await;
    caught_up(&cacher, b.mod_revision).await;
    let mut watch = cacher.watch(PREFIX, 0).await.expect("watch");
    let old = cacher.revision();

    // The cache misses some events, then the upstream compacts them away and the upstream watch breaks.
    gated.pause(true);
    store
        .update(&a.key, b"a2".to_vec(), a.mod_revision)
        .await
        .expect("update");
    store.delete(&b.key, None).await.expect("delete");
    let c = create(store.as_ref(), &key("c"), "c").await;
    store.compact(c.mod_revision).await.expect("compact");
    eventually("the upstream watch", || async { gated.watches() == 1 }).await;
    gated.inject(Err(StorageError::Unavailable("connection reset".into())));

    // Resuming from the cache's revision fails as compacted: the cache lists again.
    caught_up(&cacher, c.mod_revision).await;
    let fresh = store.list(PREFIX, ListOptions::default()).await.expect("list");
    assert_eq!(cached_list(&cacher, PREFIX, c.mod_revision).await, fresh.items);
    let stats = cacher.stats();
    assert_eq!((stats.resumes, stats.relists, stats.oldest), (1, 1, c.mod_revision));
    assert_eq!(
        recv(&mut watch).await,
        Err(StorageError::Compacted {
            requested: old,
            compacted: c.mod_revision
        }),
        "a watcher that missed events ends as expired"
    );
    assert_eq!(
        cacher.watch(PREFIX, old).await.err(),
        Some(StorageError::Compacted {
            requested: old,
            compacted: c.mod_revision
        })
    );

    // The cache follows the upstream again.
    let mut watch = cacher.watch(PREFIX, 0).await.expect("watch");
    gated.pause(false);
    let d = create(gated.as_ref(), &key("d"), "d").await;
    assert_eq!(
        next_event(&mut watch).await,
        WatchEvent::Put {
            kv: d.clone(),
            prev: None
        }
    );
    assert_eq!(cacher.get(&d.key, d.mod_revision).await, Ok(Some(d.clone())));

    // An upstream watch that ends as compacted makes the cache list again too.
    eventually("the upstream watch", || async { gated.watches() >= 2 }).await;
    let e = create(gated.as_ref(), &key("e"), "e").await;
    caught_up(&cacher, e.mod_revision).await;
    gated.pause(true);
    let f = create(store.as_ref(), &key("f"), "f").await;
    gated.inject(Err(StorageError::Compacted {
        requested: e.mod_revision,
        compacted: f.mod_revision,
    }));
    caught_up(&cacher, f.mod_revision).await;
    assert_eq!(cacher.get(&f.key, f.mod_revision).await, Ok(Some(f)));
    assert_eq!(cacher.stats().relists, 2);
    assert!(
        matches!(recv(&mut watch).await, Ok(WatchEvent::Put { .. })),
        "the event of e"
    );
    assert!(matches!(recv(&mut watch).await, Err(StorageError::Compacted { .. })));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "measurement: run with --ignored --nocapture"]
async fn memory_per_object() {
    const OBJECTS: usize = 10_000;
    let (_dir, store) = store();
    let body = |i: usize, generation: usize| {
        let mut json = format!(
            concat!(
                r#"{{"apiVersion":"example.com/v1","kind":"Widget","metadata":{{"name":"widget-{i:05}","#,
                r#""namespace":"ns-{ns}","uid":"{uid:032x}","generation":{generation},"#,
                r#""labels":{{"app":"demo","tier":"backend"}}}},"spec":{{"replicas":3,"#,
                r#""image":"registry.example.com/demo/widget:v1.2.3","description":""#,
            ),
            i = i,
            ns = i % 10,
            uid = i * 7919,
            generation = generation,
        );
        while json.len() < 480 {
            json.push('x');
        }
        json.push_str(r#""}}"#);
        json.into_bytes()
    };
    let tasks: Vec<_> = (0..32)
        .map(|t| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in (t..OBJECTS).step_by(32) {
                    let key = key(&format!("ns-{}/widget-{i:05}", i % 10));
                    store.create(&key, body(i, 1)).await.expect("create");
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.expect("join");
    }
    let before = resident_bytes();
    let cacher = start(store.clone(), patient()).await;
    let after = resident_bytes();
    let stats = cacher.stats();
    assert_eq!(stats.objects, OBJECTS);
    let data = stats.bytes as f64 / OBJECTS as f64;
    // Per object: the Arc's allocation (two counts and the KeyValue) and the set's slot (a pointer and where the
    // resourceVersion goes, in B-tree nodes about two-thirds full), plus the key and the JSON.
    let object = (2 * size_of::<usize>() + size_of::<KeyValue>()) as f64;
    let slot = size_of::<super::SharedObject>() as f64 * 1.5;
    let heap = data + object + slot;
    println!("objects: {OBJECTS}, key + JSON per object: {data:.0} bytes");
    println!(
        "heap per object from the sizes held: {heap:.0} bytes ({:.2}x the key + JSON; allocator overhead not counted)",
        heap / data
    );
    println!(
        "resident memory growth per object over the first list: {:.0} bytes",
        after.saturating_sub(before) as f64 / OBJECTS as f64
    );
    let mut last = 0;
    for i in 0..OBJECTS {
        let key = key(&format!("ns-{}/widget-{i:05}", i % 10));
        let current = cacher.get(&key, 0).await.expect("get").expect("cached");
        last = store
            .update(&key, body(i, 2), current.mod_revision)
            .await
            .expect("update")
            .mod_revision;
    }
    caught_up(&cacher, last).await;
    let updated = resident_bytes();
    let stats = cacher.stats();
    // Each event of the history holds the previous version of an object, which nothing else holds.
    let history =
        (stats.events as f64 * (size_of::<super::state::CachedEvent>() as f64 + object + data)) / OBJECTS as f64;
    println!(
        "after one update of each object, with {} events in the history: {:.0} bytes per object from the sizes held; \
         resident memory growth {:.0} bytes per object (includes the store's own cache)",
        stats.events,
        heap + history,
        updated.saturating_sub(before) as f64 / OBJECTS as f64
    );
}

/// The resident memory of this process, from `/proc/self/statm` (0 when unavailable).
fn resident_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Pages of a namespace stop at its prefix, with neighbours whose names extend it or sort right after it, and count
/// what remains; the objects are shared with the cache, with their splices found.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wire_list_cache_pages_stop_at_the_prefix() {
    let (_dir, store) = store();
    for ns in ["a", "a-b", "a0", "ab", "a."] {
        for i in 0..3 {
            let value = format!(r#"{{"metadata":{{"name":"w{i}","namespace":"{ns}"}}}}"#);
            create(store.as_ref(), &key(&format!("{ns}/w{i}")), &value).await;
        }
    }
    let cacher = start(store.clone(), patient()).await;
    let prefix = key("a/");
    let page = |limit, start_after: Option<String>| ListOptions {
        limit,
        start_after,
        ..ListOptions::default()
    };
    let first = cacher.list_shared(&prefix, page(2, None), 0).await.expect("list");
    let keys: Vec<&str> = first.items.iter().map(|o| o.kv.key.as_str()).collect();
    assert_eq!(keys, [key("a/w0"), key("a/w1")]);
    assert_eq!(first.remaining, 1);
    assert!(first.items.iter().all(|o| o.splice.is_some()));
    let rest = cacher
        .list_shared(&prefix, page(2, Some(key("a/w1"))), 0)
        .await
        .expect("list");
    let keys: Vec<&str> = rest.items.iter().map(|o| o.kv.key.as_str()).collect();
    assert_eq!(keys, [key("a/w2")]);
    assert_eq!(rest.remaining, 0);
    let all = cacher.list(&prefix, ListOptions::default(), 0).await.expect("list");
    assert_eq!(all.items.len(), 3);
}
