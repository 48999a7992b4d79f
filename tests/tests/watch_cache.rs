//! The watch cache seen through the API: watches replayed from its event window (410 Expired outside it),
//! bookmarks, `sendInitialEvents`, and the resourceVersion semantics of gets and lists. Runs on the embedded store,
//! and on etcd with `E2E_STORAGE=etcd`.

use std::time::Duration;

use e2e::{flunder_v1beta1, str_at, Server, FLUNDERS_V1BETA1};
use serde_json::Value;

/// How long to wait for one expected watch event.
const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

/// `(type, name)` of a watch event.
fn summary(event: &Value) -> (String, String) {
    (
        str_at(event, "/type").to_owned(),
        str_at(event, "/object/metadata/name").to_owned(),
    )
}

/// Creates a flunder and returns its resourceVersion.
fn create(server: &Server, name: &str) -> i64 {
    let reply = server.http().post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(name, "x"));
    let rv = str_at(reply.expect(201), "/metadata/resourceVersion");
    rv.parse()
        .unwrap_or_else(|_| panic!("resourceVersion {rv:?} is not a number"))
}

/// The names of a list's items.
fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list:#}"))
        .iter()
        .map(|item| str_at(item, "/metadata/name").to_owned())
        .collect()
}

/// The flunders listed at a state not older than `revision`: on etcd the watch cache sees writes through its
/// upstream watch, a little after they are acknowledged, and this list waits until it holds `revision`.
fn names_not_older_than(server: &Server, revision: i64) -> Vec<String> {
    let list = server.http().get(&format!(
        "{FLUNDERS_V1BETA1}?resourceVersion={revision}&resourceVersionMatch=NotOlderThan"
    ));
    names(list.expect(200))
}

#[test]
fn a_watch_older_than_the_cache_window_gets_410_and_a_recent_one_replays_the_window() {
    let server = Server::start_with_args(&["wardle"], &["--default-watch-cache-size", "3"]);
    let revisions: Vec<i64> = (0..6).map(|i| create(&server, &format!("f{i}"))).collect();
    // Once the cache holds the last write, the window below is the last three events.
    assert_eq!(names_not_older_than(&server, revisions[5]).len(), 6);

    let mut too_old = server.http().watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={}",
        revisions[0]
    ));
    let event = too_old.next(EVENT_TIMEOUT).expect("an ERROR event");
    assert_eq!(event["type"], "ERROR", "{event:#}");
    assert_eq!(event["object"]["code"], 410, "{event:#}");
    assert_eq!(event["object"]["reason"], "Expired", "{event:#}");
    assert!(
        str_at(&event, "/object/message").starts_with("too old resource version"),
        "{event:#}"
    );

    // The window holds the last three events: a watch after the fourth write replays the fifth and sixth.
    let mut recent = server.http().watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={}",
        revisions[3]
    ));
    for name in ["f4", "f5"] {
        let event = recent.next(EVENT_TIMEOUT).expect("a replayed event");
        assert_eq!(summary(&event), ("ADDED".to_owned(), name.to_owned()), "{event:#}");
    }
    create(&server, "live");
    let event = recent.next(EVENT_TIMEOUT).expect("a live event");
    assert_eq!(summary(&event), ("ADDED".to_owned(), "live".to_owned()), "{event:#}");
}

#[test]
fn bookmarks_come_only_to_watches_that_allow_them() {
    let server = Server::start_with_args(&["wardle"], &["--watch-bookmark-interval", "300ms"]);
    let start = create(&server, "first");
    let watch = |query: &str| {
        server
            .http()
            .watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={start}{query}"))
    };
    let mut plain = watch("");
    let mut with_bookmarks = watch("&allowWatchBookmarks=true");

    let bookmark = with_bookmarks.next(EVENT_TIMEOUT).expect("a bookmark");
    assert_eq!(bookmark["type"], "BOOKMARK", "{bookmark:#}");
    assert_eq!(str_at(&bookmark, "/object/kind"), "Flunder", "{bookmark:#}");
    assert_eq!(
        str_at(&bookmark, "/object/apiVersion"),
        "wardle.example.com/v1beta1",
        "{bookmark:#}"
    );
    let at: i64 = str_at(&bookmark, "/object/metadata/resourceVersion")
        .parse()
        .expect("a numeric resourceVersion");
    assert!(at >= start, "a bookmark at {at}, before the watch's start {start}");

    // A bookmark interval has passed for the plain watch too: its first event is still the next change.
    create(&server, "second");
    let event = plain.next(EVENT_TIMEOUT).expect("an event");
    assert_eq!(summary(&event), ("ADDED".to_owned(), "second".to_owned()), "{event:#}");

    // Watched as Tables, a bookmark is a Table without rows that carries the resourceVersion.
    let mut tables = server.http().watch_accepting(
        &format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={at}&allowWatchBookmarks=true"),
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    );
    let event = tables.next(EVENT_TIMEOUT).expect("an event");
    assert_eq!(summary(&event).0, "ADDED", "the write after {at} first: {event:#}");
    assert_eq!(str_at(&event, "/object/kind"), "Table", "{event:#}");
    let bookmark = tables.next(EVENT_TIMEOUT).expect("a bookmark");
    assert_eq!(bookmark["type"], "BOOKMARK", "{bookmark:#}");
    assert_eq!(str_at(&bookmark, "/object/kind"), "Table", "{bookmark:#}");
    assert_eq!(bookmark["object"]["rows"], serde_json::json!([]), "{bookmark:#}");
    assert!(
        !str_at(&bookmark, "/object/metadata/resourceVersion").is_empty(),
        "{bookmark:#}"
    );
}

#[test]
fn send_initial_events_ends_the_current_objects_with_a_bookmark() {
    let server = Server::start(&["wardle"]);
    create(&server, "a");
    let last = create(&server, "b");

    let mut stream = server.http().watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={last}&allowWatchBookmarks=true"
    ));
    let mut initial: Vec<(String, String)> = (0..2)
        .map(|_| summary(&stream.next(EVENT_TIMEOUT).expect("an initial event")))
        .collect();
    initial.sort();
    assert_eq!(
        initial,
        [
            ("ADDED".to_owned(), "a".to_owned()),
            ("ADDED".to_owned(), "b".to_owned())
        ]
    );
    let end = stream.next(EVENT_TIMEOUT).expect("the initial-events-end bookmark");
    assert_eq!(end["type"], "BOOKMARK", "{end:#}");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
        "{end:#}"
    );
    let at: i64 = str_at(&end, "/object/metadata/resourceVersion")
        .parse()
        .expect("a number");
    assert!(at >= last, "the initial events are at {at}, older than {last}");

    create(&server, "c");
    let event = stream.next(EVENT_TIMEOUT).expect("a live event");
    assert_eq!(summary(&event), ("ADDED".to_owned(), "c".to_owned()), "{event:#}");

    // sendInitialEvents needs resourceVersionMatch=NotOlderThan and allowWatchBookmarks.
    let http = server.http();
    http.get(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"
    ))
    .assert_status(422, "Invalid");
    http.get(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    ))
    .assert_status(422, "Invalid");
}

#[test]
fn gets_and_lists_honour_resource_version_semantics() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let before = create(&server, "old");
    let rv = create(&server, "new");

    // Not older than a revision: served from the cache once it has seen the write.
    for query in [
        format!("resourceVersion={rv}&resourceVersionMatch=NotOlderThan"),
        format!("resourceVersion={rv}"),
        String::new(),
    ] {
        let list = http.get(&format!("{FLUNDERS_V1BETA1}?{query}"));
        let mut got = names(list.expect(200));
        got.sort();
        assert_eq!(got, ["new", "old"], "list ?{query}");
    }
    // Any state ("0"): whatever the cache holds, which has now seen both writes (on etcd it may lag a fresh write).
    let list = http.get(&format!("{FLUNDERS_V1BETA1}?resourceVersion=0"));
    let listed = list.expect(200);
    let list_rv: i64 = str_at(listed, "/metadata/resourceVersion").parse().expect("a number");
    assert!(list_rv >= rv, "{listed:#}");
    let got = http.get(&format!("{FLUNDERS_V1BETA1}/new?resourceVersion={rv}"));
    assert_eq!(str_at(got.expect(200), "/metadata/name"), "new");
    http.get(&format!("{FLUNDERS_V1BETA1}/new?resourceVersion=0"))
        .expect(200);

    // Exactly an older revision: the list as it was then.
    let exact = http.get(&format!(
        "{FLUNDERS_V1BETA1}?resourceVersion={before}&resourceVersionMatch=Exact"
    ));
    let exact = exact.expect(200);
    assert_eq!(names(exact), ["old"], "{exact:#}");
    assert_eq!(str_at(exact, "/metadata/resourceVersion"), before.to_string());

    // A revision the store has not reached: 504 Timeout after a short wait, as kube-apiserver answers.
    let future = rv + 1000;
    http.get(&format!(
        "{FLUNDERS_V1BETA1}?resourceVersion={future}&resourceVersionMatch=NotOlderThan"
    ))
    .assert_status(504, "Timeout");
    http.get(&format!("{FLUNDERS_V1BETA1}/new?resourceVersion={future}"))
        .assert_status(504, "Timeout");

    // Inconsistent parameters.
    http.get(&format!("{FLUNDERS_V1BETA1}?resourceVersionMatch=Exact"))
        .assert_status(422, "Invalid");
    http.get(&format!(
        "{FLUNDERS_V1BETA1}?resourceVersion=0&resourceVersionMatch=Exact"
    ))
    .assert_status(422, "Invalid");
    http.get(&format!("{FLUNDERS_V1BETA1}?resourceVersion=abc"))
        .assert_status(400, "BadRequest");
    let page = http.get(&format!("{FLUNDERS_V1BETA1}?limit=1"));
    let token = str_at(page.expect(200), "/metadata/continue").to_owned();
    http.get(&format!(
        "{FLUNDERS_V1BETA1}?limit=1&continue={token}&resourceVersion={rv}"
    ))
    .assert_status(400, "BadRequest");
    let next = http.get(&format!("{FLUNDERS_V1BETA1}?limit=1&continue={token}"));
    assert_eq!(names(next.expect(200)).len(), 1);
}

#[test]
fn a_continue_token_from_a_compacted_revision_gets_410_expired() {
    use e2e::wait_until;

    let server = Server::start_with_args(&["wardle"], &["--etcd-compaction-interval", "200ms"]);
    for name in ["a", "b", "c"] {
        create(&server, name);
    }
    let http = server.http();
    let page = http.get(&format!("{FLUNDERS_V1BETA1}?limit=1"));
    let token = str_at(page.expect(200), "/metadata/continue").to_owned();
    // A later write moves the store (and the cache) past the token's revision; the compactor then removes it.
    create(&server, "d");
    let expired = wait_until(Duration::from_secs(30), || {
        http.get(&format!("{FLUNDERS_V1BETA1}?limit=1&continue={token}")).status == 410
    });
    assert!(
        expired,
        "the continue token never expired; log:\n{}",
        server.log_tail(30)
    );
    let reply = http.get(&format!("{FLUNDERS_V1BETA1}?limit=1&continue={token}"));
    let status = reply.assert_status(410, "Expired");
    assert!(
        str_at(status, "/message").starts_with("The provided continue parameter is too old"),
        "{status:#}"
    );
    // As kube-apiserver does, the Status carries a token that continues at the latest revision.
    let fresh = str_at(status, "/metadata/continue").to_owned();
    let mut rest = Vec::new();
    let mut next = Some(fresh);
    while let Some(token) = next.take() {
        let page = http.get(&format!("{FLUNDERS_V1BETA1}?limit=1&continue={token}"));
        let page = page.expect(200);
        rest.extend(names(page));
        next = page["metadata"]["continue"].as_str().map(str::to_owned);
    }
    assert_eq!(rest, ["b", "c", "d"], "the rest of the list after the first page");
}

#[test]
fn watch_cache_sizes_set_one_resources_window_or_turn_its_cache_off() {
    use e2e::{fischer_v1alpha1, FISCHERS_V1ALPHA1};

    let server = Server::start_with_args(
        &["wardle"],
        &[
            "--watch-cache-sizes",
            "flunders.wardle.example.com#2,fischers.wardle.example.com#0",
        ],
    );
    let http = server.http();

    // Flunders: a window of two events.
    let revisions: Vec<i64> = (0..4).map(|i| create(&server, &format!("f{i}"))).collect();
    // Caches start on first use (the creates' admission read the fischers): flunders have one, fischers none.
    let metrics = http.get("/metrics").text;
    assert!(
        metrics.contains(r#"wasm_apiserver_watch_cache_objects{group="wardle.example.com",resource="flunders"}"#),
        "{metrics}"
    );
    assert!(
        !metrics.contains(r#"resource="fischers""#),
        "fischers have no cache: {metrics}"
    );
    assert_eq!(names_not_older_than(&server, revisions[3]).len(), 4);
    // The window holds f2 and f3: a watch after f0 would need f1.
    let mut too_old = http.watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={}",
        revisions[0]
    ));
    let event = too_old.next(EVENT_TIMEOUT).expect("an ERROR event");
    assert_eq!(
        (event["type"].as_str(), event["object"]["code"].as_i64()),
        (Some("ERROR"), Some(410)),
        "{event:#}"
    );
    let mut recent = http.watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={}",
        revisions[2]
    ));
    let event = recent.next(EVENT_TIMEOUT).expect("a replayed event");
    assert_eq!(summary(&event), ("ADDED".to_owned(), "f3".to_owned()), "{event:#}");

    // Fischers: served by storage, whose history reaches back to the first write.
    let fischers: Vec<i64> = ["a", "b", "c"]
        .iter()
        .map(|name| {
            let reply = http.post_json(FISCHERS_V1ALPHA1, &fischer_v1alpha1(name, &[]));
            str_at(reply.expect(201), "/metadata/resourceVersion")
                .parse()
                .expect("a number")
        })
        .collect();
    let mut watch = http.watch(&format!(
        "{FISCHERS_V1ALPHA1}?watch=true&resourceVersion={}",
        fischers[0]
    ));
    for name in ["b", "c"] {
        let event = watch.next(EVENT_TIMEOUT).expect("an event from storage");
        assert_eq!(summary(&event), ("ADDED".to_owned(), name.to_owned()), "{event:#}");
    }
}

/// With `--evict-idle-after`, a watch cache no watch is served from and the plugin's pooled instances are dropped
/// once unused that long, while a cache with a watcher stays; the next request makes them again.
#[test]
fn idle_caches_and_plugin_instances_are_dropped_and_made_again_on_use() {
    use e2e::{metric_value, wait_until};

    let server = Server::start_with_args(&["wardle"], &["--evict-idle-after", "1s"]);
    let http = server.http();
    // The watch first: it keeps the flunders' cache, which a loaded machine could otherwise evict between the
    // create and the metrics read.
    let mut watch = http.watch(&format!("{FLUNDERS_V1BETA1}?watch=true"));
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("one", "x"))
        .expect(201);
    watch.next(EVENT_TIMEOUT).expect("the watch sees the first create");
    let metrics = || http.get("/metrics").text;
    let flunders = r#"wasm_apiserver_watch_cache_objects{group="wardle.example.com",resource="flunders"}"#;
    let namespaces = r#"wasm_apiserver_watch_cache_objects{group="core",resource="namespaces"}"#;
    let instances = r#"wasm_apiserver_plugin_instances{plugin="wardle"}"#;
    let text = metrics();
    assert_eq!(metric_value(&text, flunders), Some(1.0), "{text}");
    assert!(metric_value(&text, instances).is_some_and(|n| n >= 1.0), "{text}");

    // The watch keeps the flunders' cache; the namespaces' cache and the instances go.
    let mut text = String::new();
    assert!(
        wait_until(Duration::from_secs(30), || {
            text = metrics();
            metric_value(&text, namespaces).is_none() && metric_value(&text, instances) == Some(0.0)
        }),
        "idle cache or instances kept:\n{text}"
    );
    assert_eq!(
        metric_value(&text, flunders),
        Some(1.0),
        "the watched cache was dropped:\n{text}"
    );

    // The next create makes the instances and the namespaces' cache again.
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("two", "x"))
        .expect(201);
    let event = watch.next(EVENT_TIMEOUT).expect("the watch sees the create");
    assert_eq!(str_at(&event, "/object/metadata/name"), "two");
    let text = metrics();
    assert!(metric_value(&text, namespaces).is_some(), "{text}");
    assert!(metric_value(&text, instances).is_some_and(|n| n >= 1.0), "{text}");
}

/// A watch with a timeout that allows bookmarks gets one 2 s before it ends (as from kube's cacher), at the revision
/// of the last event, so that the client resumes from there; a watch that does not allow them gets none.
#[test]
fn a_bookmark_comes_shortly_before_a_watch_times_out() {
    let server = Server::start(&["wardle"]);
    let start = create(&server, "first");
    let watch = |query: &str| {
        server.http().watch(&format!(
            "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={start}&timeoutSeconds=4{query}"
        ))
    };
    let mut with_bookmarks = watch("&allowWatchBookmarks=true");
    let mut plain = watch("");
    let second = create(&server, "second");
    let added = with_bookmarks.next(EVENT_TIMEOUT).expect("an event");
    assert_eq!(summary(&added), ("ADDED".to_owned(), "second".to_owned()), "{added:#}");
    let bookmark = with_bookmarks
        .next(EVENT_TIMEOUT)
        .expect("the bookmark before the timeout");
    assert_eq!(bookmark["type"], "BOOKMARK", "{bookmark:#}");
    assert_eq!(
        str_at(&bookmark, "/object/metadata/resourceVersion"),
        second.to_string(),
        "{bookmark:#}"
    );
    assert!(
        with_bookmarks.next(EVENT_TIMEOUT).is_none(),
        "the watch ends at its timeout"
    );
    let added = plain.next(EVENT_TIMEOUT).expect("an event");
    assert_eq!(summary(&added).0, "ADDED", "{added:#}");
    assert!(
        plain.next(EVENT_TIMEOUT).is_none(),
        "no bookmark, and the watch ends at its timeout"
    );
}

/// A watch that has timed out lets go of its cache at once, not at the next event of its resource (which for an
/// idle resource may never come), so an idle cache with no watchers left is evicted.
#[test]
fn a_watch_that_timed_out_does_not_keep_its_cache() {
    use e2e::{metric_value, wait_until};

    let server = Server::start_with_args(&["wardle"], &["--evict-idle-after", "1s"]);
    let http = server.http();
    let flunders = r#"wasm_apiserver_watch_cache_objects{group="wardle.example.com",resource="flunders"}"#;
    let mut watch = http.watch(&format!("{FLUNDERS_V1BETA1}?watch=true&timeoutSeconds=2"));
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("one", "x"))
        .expect(201);
    watch.next(EVENT_TIMEOUT).expect("the watch sees the create");
    assert!(metric_value(&http.get("/metrics").text, flunders).is_some());
    assert!(watch.next(EVENT_TIMEOUT).is_none(), "the watch ends at its timeout");
    let mut text = String::new();
    assert!(
        wait_until(Duration::from_secs(30), || {
            text = http.get("/metrics").text;
            metric_value(&text, flunders).is_none()
        }),
        "the cache of a watch that timed out was kept:\n{text}"
    );
}
