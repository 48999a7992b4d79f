//! Tests of the etcd backend against a real etcd (see `test_server`): the shared conformance suite, key prefixes,
//! failures, watches across broken connections and restarts, progress notifications, and TLS.

use std::fmt::Debug;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::test_proxy::Proxy;
use super::test_server::EtcdServer;
use super::{prefix_range, progress_requests_reliable, EtcdOptions, EtcdStorage};
use crate::conformance::{self, next_event};
use crate::{KeyValue, ListOptions, Storage, StorageError, WatchEvent, WatchStream};

/// How long a test waits for something that should happen soon.
const DEADLINE: Duration = Duration::from_secs(30);

/// Expects `operation` to fail with [`StorageError::Unavailable`] within `limit`.
async fn expect_unavailable<T: Debug>(
    what: &str,
    limit: Duration,
    operation: impl Future<Output = Result<T, StorageError>>,
) {
    let started = Instant::now();
    let result = operation.await;
    let elapsed = started.elapsed();
    assert!(
        matches!(result, Err(StorageError::Unavailable(_))),
        "{what}: expected Unavailable, got {result:?}"
    );
    assert!(elapsed < limit, "{what}: failed only after {elapsed:?}");
}

/// Creates a key, retrying while etcd is unavailable (as after a restart).
async fn create_retrying(store: &EtcdStorage, key: &str) -> KeyValue {
    let deadline = Instant::now() + DEADLINE;
    loop {
        match store.create(key, key.as_bytes().to_vec()).await {
            Ok(kv) => return kv,
            // A timed-out attempt may have been applied after all.
            Err(StorageError::AlreadyExists { .. }) => {
                if let Ok(Some(kv)) = store.get(key).await {
                    return kv;
                }
            }
            Err(StorageError::Unavailable(e)) => {
                assert!(Instant::now() < deadline, "etcd stayed unavailable: {e}");
            }
            Err(e) => panic!("create {key}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Writes a marker key under `prefix` and expects it as the watch's next event: no other event came before it.
async fn expect_marker_next(store: &EtcdStorage, watch: &mut WatchStream, prefix: &str) {
    let marker = store
        .create(&format!("{prefix}~marker"), b"marker".to_vec())
        .await
        .expect("create the marker");
    assert_eq!(next_event(watch).await, WatchEvent::Put { kv: marker, prev: None });
}

/// A created key's watch event.
fn created(kv: &KeyValue) -> WatchEvent {
    WatchEvent::Put {
        kv: kv.clone(),
        prev: None,
    }
}

#[test]
fn progress_requests_are_trusted_only_from_fixed_etcd_versions() {
    for version in ["3.4.31", "3.4.40", "3.5.13", "3.5.21", "3.6.0", "3.6.5-rc.0", "4.0.0"] {
        assert!(progress_requests_reliable(version), "{version}");
    }
    for version in ["3.4.23", "3.4.30", "3.5.0", "3.5.12", "3.3.27", "", "garbage", "3.5"] {
        assert!(!progress_requests_reliable(version), "{version}");
    }
}

#[test]
fn prefix_ranges_cover_exactly_the_prefix() {
    assert_eq!(prefix_range(b"/a/"), (b"/a/".to_vec(), b"/a0".to_vec()));
    assert_eq!(prefix_range(b"a\xff"), (b"a\xff".to_vec(), b"b".to_vec()));
    assert_eq!(prefix_range(b"\xff\xff"), (b"\xff\xff".to_vec(), vec![0]));
    assert_eq!(prefix_range(b""), (vec![0], vec![0]));
}

#[tokio::test]
async fn bad_configurations_are_rejected() {
    let base = EtcdOptions {
        dial_timeout: Duration::from_millis(200),
        ..EtcdOptions::default()
    };
    let cases = [
        (
            "no endpoints",
            EtcdOptions {
                endpoints: vec![],
                ..base.clone()
            },
        ),
        (
            "a certificate without its key",
            EtcdOptions {
                cert_file: Some("/nonexistent/cert.pem".into()),
                ..base.clone()
            },
        ),
        (
            "a missing CA file",
            EtcdOptions {
                ca_file: Some("/nonexistent/ca.pem".into()),
                ..base.clone()
            },
        ),
    ];
    for (what, options) in cases {
        match EtcdStorage::connect(options).await {
            Err(StorageError::Internal(_)) => {}
            Err(e) => panic!("{what}: expected Internal, got {e:?}"),
            Ok(_) => panic!("{what}: expected Internal, got a store"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_passes_on_etcd() {
    let server = EtcdServer::start().await;
    let store = Arc::new(server.store("/conformance-tenant").await);
    let started = Instant::now();
    conformance::run_all(store).await;
    eprintln!("the conformance suite took {:?} on etcd", started.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_over_etcds_request_limit_are_too_large_and_not_stored() {
    let server = EtcdServer::start().await;
    let store = server.store("").await;
    // Over etcd's 1.5 MiB limit, and over the 2 MiB its gRPC server accepts.
    for size in [1800 << 10, 2500 << 10] {
        match store.create("/registry/big", vec![b'x'; size]).await {
            Err(StorageError::TooLarge(message)) => assert!(message.starts_with("etcd: "), "{message}"),
            other => panic!("a create of {size} bytes: {other:?}"),
        }
    }
    assert_eq!(store.get("/registry/big").await.expect("get"), None);
    let big = vec![b'x'; 1800 << 10];
    let small = store.create("/registry/big", b"small".to_vec()).await.expect("create");
    assert!(matches!(
        store.update("/registry/big", big, small.mod_revision).await,
        Err(StorageError::TooLarge(_))
    ));
    assert_eq!(store.get("/registry/big").await.expect("get"), Some(small));
}

/// A conditional write whose answer is lost with its connection is sent again; when that finds its own attempt
/// applied (the key holds exactly its value), the write succeeded and says so, instead of "already exists" or
/// "conflict".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_applied_but_unanswered_is_sent_again_and_recognised() {
    let server = EtcdServer::start().await;
    let (proxy, through, direct) = proxied(&server).await;
    let through = Arc::new(through);
    let before = direct.create("/registry/u", b"1".to_vec()).await.expect("create");

    // Each write goes through the proxy with etcd's answers dropped; once etcd has applied it, the connection
    // breaks and the client sends the write again.
    async fn lost_answer<T: Send + 'static>(
        proxy: &Proxy,
        direct: &EtcdStorage,
        key: &str,
        applied: impl Fn(&KeyValue) -> bool,
        write: tokio::task::JoinHandle<crate::Result<T>>,
    ) -> crate::Result<T> {
        let deadline = Instant::now() + DEADLINE;
        while !direct.get(key).await.expect("get").is_some_and(|kv| applied(&kv)) {
            assert!(Instant::now() < deadline, "the write never reached etcd");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        proxy.cut().await;
        proxy.resume();
        write.await.expect("the write task")
    }

    proxy.mute_answers();
    let store = through.clone();
    let create = tokio::spawn(async move { store.create("/registry/c", b"mine".to_vec()).await });
    let created = lost_answer(&proxy, &direct, "/registry/c", |_| true, create)
        .await
        .expect("the create succeeded");
    assert_eq!(created, direct.get("/registry/c").await.expect("get").expect("created"));

    proxy.mute_answers();
    let store = through.clone();
    let revision = before.mod_revision;
    let update = tokio::spawn(async move { store.update("/registry/u", b"2".to_vec(), revision).await });
    let updated = lost_answer(&proxy, &direct, "/registry/u", |kv| kv.value == b"2", update)
        .await
        .expect("the update succeeded");
    assert_eq!(updated, direct.get("/registry/u").await.expect("get").expect("updated"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefixes_isolate_stores_on_one_etcd() {
    let server = EtcdServer::start().await;
    let a = server.store("/tenant-a").await;
    let (b, root) = (a.with_prefix("/tenant-b/"), a.with_prefix(""));
    let mut watch_b = b.watch("/registry/", 0).await.expect("watch");
    let in_a = a.create("/registry/x", b"a".to_vec()).await.expect("create in a");
    assert_eq!(b.get("/registry/x").await.expect("get"), None);
    assert_eq!(
        b.list("/registry/", ListOptions::default()).await.expect("list").items,
        vec![]
    );
    let in_b = b
        .create("/registry/x", b"b".to_vec())
        .await
        .expect("create the same key in b");
    assert!(in_b.mod_revision > in_a.mod_revision, "one etcd, one revision sequence");
    let raw = root
        .list("/tenant-", ListOptions::default())
        .await
        .expect("list everything");
    let keys: Vec<_> = raw.items.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["/tenant-a/registry/x", "/tenant-b/registry/x"]);
    assert_eq!(
        (raw.items[0].value.as_slice(), raw.items[0].mod_revision),
        (b"a".as_slice(), in_a.mod_revision)
    );
    assert_eq!(
        next_event(&mut watch_b).await,
        created(&in_b),
        "b's watch sees only b's keys"
    );
    expect_marker_next(&b, &mut watch_b, "/registry/").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_etcd_is_unavailable_within_the_timeout() {
    let mut server = EtcdServer::start().await;
    let options = server.options("");
    let store = server.store("").await;
    let kv = store.create("/registry/a", b"x".to_vec()).await.expect("create");
    server.stop();
    let limit = options.request_timeout + Duration::from_secs(2);
    expect_unavailable("get", limit, store.get(&kv.key)).await;
    expect_unavailable("list", limit, store.list("/registry/", ListOptions::default())).await;
    expect_unavailable("create", limit, store.create("/registry/b", vec![])).await;
    expect_unavailable("update", limit, store.update(&kv.key, vec![], kv.mod_revision)).await;
    expect_unavailable("delete", limit, store.delete(&kv.key, None)).await;
    expect_unavailable("current revision", limit, store.current_revision()).await;
    expect_unavailable("compact", limit, store.compact(kv.mod_revision)).await;
    expect_unavailable("watch", limit, store.watch("/registry/", kv.mod_revision)).await;
    let limit = options.dial_timeout + Duration::from_secs(2);
    expect_unavailable("connect", limit, EtcdStorage::connect(options)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_etcd_times_out_as_unavailable() {
    let server = EtcdServer::start().await;
    let (proxy, through, _) = proxied(&server).await;
    let kv = through.create("/registry/a", b"x".to_vec()).await.expect("create");
    proxy.stall();
    let options = EtcdOptions {
        endpoints: vec![proxy.endpoint()],
        ..server.options("")
    };
    let limit = options.request_timeout + Duration::from_secs(2);
    tokio::join!(
        expect_unavailable("get", limit, through.get(&kv.key)),
        expect_unavailable("list", limit, through.list("/registry/", ListOptions::default())),
        expect_unavailable("update", limit, through.update(&kv.key, vec![], kv.mod_revision)),
        expect_unavailable("watch", limit, through.watch("/registry/", kv.mod_revision)),
        expect_unavailable("connect", limit, EtcdStorage::connect(options)),
    );
    proxy.cut().await;
    proxy.resume();
    let deadline = Instant::now() + DEADLINE;
    loop {
        match through.get(&kv.key).await {
            // The timed-out update may or may not have been applied: only the key's presence is certain.
            Ok(found) => break assert!(found.is_some_and(|found| found.create_revision == kv.create_revision)),
            Err(e) => assert!(Instant::now() < deadline, "the store did not recover: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_survives_an_etcd_restart() {
    let mut server = EtcdServer::start().await;
    let store = server.store("/tenant").await;
    let mut watch = store.watch("/registry/", 0).await.expect("watch");
    let a = store.create("/registry/a", b"a".to_vec()).await.expect("create");
    assert_eq!(next_event(&mut watch).await, created(&a));
    server.restart().await;
    let mut written = Vec::new();
    for name in ["b", "c", "d"] {
        written.push(create_retrying(&store, &format!("/registry/{name}")).await);
    }
    for kv in &written {
        assert_eq!(
            next_event(&mut watch).await,
            created(kv),
            "events after the restart, in order"
        );
    }
    expect_marker_next(&store, &mut watch, "/registry/").await;
}

/// Polls until `store` runs no watch task.
async fn expect_no_watch_task(store: &EtcdStorage) {
    let deadline = Instant::now() + DEADLINE;
    while store.active_watches() > 0 {
        assert!(Instant::now() < deadline, "a watch task outlived its receiver");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_receiver_ends_the_watch_task() {
    let mut server = EtcdServer::start().await;
    let store = server.store("").await;
    let watch = store.watch("/registry/", 0).await.expect("watch");
    assert_eq!(store.active_watches(), 1);
    drop(watch);
    expect_no_watch_task(&store).await;
    // Also while the task is waiting to re-establish its watch.
    let mut watch = store.watch("/registry/", 0).await.expect("watch");
    server.stop();
    let closed = tokio::time::timeout(Duration::from_millis(300), watch.recv()).await;
    assert!(closed.is_err(), "a broken watch goes on quietly: {closed:?}");
    drop(watch);
    expect_no_watch_task(&store).await;
}

/// A store connected through a proxy (to break its connections), and one connected directly.
async fn proxied(server: &EtcdServer) -> (Proxy, EtcdStorage, EtcdStorage) {
    let proxy = Proxy::start(server.client_addr()).await;
    let options = EtcdOptions {
        endpoints: vec![proxy.endpoint()],
        ..server.options("")
    };
    let through = EtcdStorage::connect(options).await.expect("connect through the proxy");
    (proxy, through, server.store("").await)
}

/// A watch through a proxy that has delivered the creation of `/registry/a`, and then lost its connection;
/// `/registry/a` was then updated.
struct CutWatch {
    proxy: Proxy,
    /// A store connected directly, to write while the watch is cut off.
    direct: EtcdStorage,
    watch: WatchStream,
    /// The key created before the cut.
    a: KeyValue,
    /// The same key, updated after the cut.
    a2: KeyValue,
    /// The store the watch came from (kept open with it).
    _through: EtcdStorage,
}

async fn cut_watch(server: &EtcdServer) -> CutWatch {
    let (proxy, through, direct) = proxied(server).await;
    let mut watch = through.watch("/registry/", 0).await.expect("watch");
    let a = direct.create("/registry/a", b"1".to_vec()).await.expect("create");
    assert_eq!(next_event(&mut watch).await, created(&a));
    proxy.cut().await;
    let a2 = direct
        .update(&a.key, b"2".to_vec(), a.mod_revision)
        .await
        .expect("update");
    CutWatch {
        proxy,
        direct,
        watch,
        a,
        a2,
        _through: through,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumes_after_a_broken_connection_without_losing_events() {
    let server = EtcdServer::start().await;
    let mut cut = cut_watch(&server).await;
    let b = cut.direct.create("/registry/b", b"b".to_vec()).await.expect("create");
    let (_, deleted) = cut.direct.delete(&b.key, None).await.expect("delete");
    cut.proxy.resume();
    let expected = [
        WatchEvent::Put {
            kv: cut.a2,
            prev: Some(cut.a),
        },
        created(&b),
        WatchEvent::Delete {
            prev: b,
            revision: deleted,
        },
    ];
    for want in expected {
        assert_eq!(next_event(&mut cut.watch).await, want);
    }
    expect_marker_next(&cut.direct, &mut cut.watch, "/registry/").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_overtaken_by_compaction_while_disconnected_ends_with_compacted() {
    let server = EtcdServer::start().await;
    let mut cut = cut_watch(&server).await;
    let a3 = cut
        .direct
        .update(&cut.a.key, b"3".to_vec(), cut.a2.mod_revision)
        .await
        .expect("update");
    cut.direct.compact(a3.mod_revision).await.expect("compact");
    cut.proxy.resume();
    let item = tokio::time::timeout(DEADLINE, cut.watch.recv()).await;
    match item {
        Ok(Some(Err(StorageError::Compacted { requested, compacted }))) => {
            assert_eq!((requested, compacted), (cut.a.mod_revision, a3.mod_revision));
        }
        other => panic!("expected Compacted, got {other:?}"),
    }
    let end = tokio::time::timeout(DEADLINE, cut.watch.recv()).await;
    assert!(matches!(end, Ok(None)), "the watch ends after Compacted: {end:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compacted_errors_report_the_compaction_revision() {
    let server = EtcdServer::start().await;
    let store = server.store("").await;
    let a = store.create("/registry/a", b"1".to_vec()).await.expect("create");
    let a2 = store
        .update(&a.key, b"2".to_vec(), a.mod_revision)
        .await
        .expect("update");
    store.compact(a2.mod_revision).await.expect("compact");
    let options = ListOptions {
        revision: a.mod_revision,
        ..ListOptions::default()
    };
    let expected = StorageError::Compacted {
        requested: a.mod_revision,
        compacted: a2.mod_revision,
    };
    assert_eq!(store.list("/registry/", options).await.err(), Some(expected));
    let again = StorageError::Compacted {
        requested: a2.mod_revision,
        compacted: a2.mod_revision,
    };
    assert_eq!(store.compact(a2.mod_revision).await, Err(again));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_notifications_become_progress_events() {
    let server = EtcdServer::start_with(&["--experimental-watch-progress-notify-interval=100ms"]).await;
    let store = server.store("").await;
    let mut watch = store.watch("/registry/idle/", 0).await.expect("watch");
    let outside = store.create("/registry/other", vec![]).await.expect("create");
    let deadline = Instant::now() + DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, watch.recv()).await {
            Ok(Some(Ok(WatchEvent::Progress { revision }))) if revision >= outside.mod_revision => break,
            Ok(Some(Ok(WatchEvent::Progress { .. }))) => continue,
            other => panic!("expected a progress notification, got {other:?}"),
        }
    }
    let inside = store.create("/registry/idle/a", vec![]).await.expect("create");
    assert_eq!(next_event(&mut watch).await, created(&inside));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificates() {
    let server = EtcdServer::start_tls().await;
    let store = server.store("/secure").await;
    let kv = store
        .create("/registry/a", b"x".to_vec())
        .await
        .expect("create over TLS");
    assert_eq!(store.get("/registry/a").await.expect("get over TLS"), Some(kv));
    let mut watch = store.watch("/registry/", 0).await.expect("watch over TLS");
    expect_marker_next(&store, &mut watch, "/registry/").await;
    let anonymous = EtcdOptions {
        cert_file: None,
        key_file: None,
        ..server.options("")
    };
    assert!(
        EtcdStorage::connect(anonymous).await.is_err(),
        "etcd requires a client certificate"
    );
    let plain = EtcdOptions {
        endpoints: vec![server.endpoint().replacen("https://", "http://", 1)],
        ..server.options("")
    };
    match EtcdStorage::connect(plain).await {
        Err(StorageError::Internal(_)) => {}
        other => panic!(
            "TLS files with an http:// URL: expected Internal, got {:?}",
            other.err()
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_passes_under_a_tenant_prefix_on_etcd() {
    let server = EtcdServer::start().await;
    let store: Arc<dyn crate::Storage> = Arc::new(server.store("/registry-root").await);
    conformance::run_all(Arc::new(crate::prefixed::Prefixed::new(store, "/tenants/t1"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conformance_suite_passes_through_the_shared_watch_on_etcd() {
    let server = EtcdServer::start().await;
    let store: Arc<dyn crate::Storage> = Arc::new(server.store("/registry-root").await);
    let shared: Arc<dyn crate::Storage> = Arc::new(crate::shared_watch::SharedWatch::new(store));
    conformance::run_all(Arc::new(crate::prefixed::Prefixed::new(shared, "/tenants/t1"))).await;
}

/// Another client of the same etcd writing outside the server's prefix moves the revision on, and the shared watch
/// never sees those writes: a progress request of one prefix at such a revision either comes (from etcd's own
/// progress notification, where etcd answers progress requests reliably) or is refused at once, so that a
/// consistent read of a watch cache reads etcd instead of waiting for a notification that never comes; refused, it
/// still comes once this server's next write brings the shared watch past the revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_progress_request_at_a_revision_of_another_clients_writes_comes_or_is_refused() {
    let server = EtcdServer::start().await;
    let ours: Arc<dyn crate::Storage> = Arc::new(server.store("/wasm").await);
    let theirs = server.store("/other").await;
    let shared = crate::shared_watch::SharedWatch::new(ours);
    let mut watch = shared.watch("/registry/g/r/", 0).await.expect("watch");
    let mut last = 0;
    for i in 0..3 {
        last = theirs
            .create(&format!("/k{i}"), b"x".to_vec())
            .await
            .expect("foreign write")
            .mod_revision;
    }
    let coming = shared
        .request_progress_of("/registry/g/r/", last)
        .await
        .expect("request progress");
    if coming {
        match tokio::time::timeout(DEADLINE, watch.recv()).await {
            Ok(Some(Ok(WatchEvent::Progress { revision }))) => assert!(revision >= last, "{revision} < {last}"),
            other => panic!("a progress notification was promised, got {other:?}"),
        }
    } else {
        assert!(
            !shared.request_progress().await.expect("request progress"),
            "refused although this etcd answers progress requests"
        );
        // Refused, but not forgotten: the next write this server makes (of another prefix) brings the shared watch
        // past the revision, and the watchers of the prefix are told then, so a cache behind another client's
        // writes catches up at this server's next write.
        let own = shared
            .create("/registry/other/x", b"x".to_vec())
            .await
            .expect("own write");
        match tokio::time::timeout(DEADLINE, watch.recv()).await {
            Ok(Some(Ok(WatchEvent::Progress { revision }))) => {
                assert!(revision >= own.mod_revision, "{revision} < {}", own.mod_revision)
            }
            other => panic!("no progress notification after this server's next write: {other:?}"),
        }
    }
}
