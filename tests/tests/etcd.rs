//! The server on etcd: an outage answers 503 and fails readiness, everything recovers when etcd returns, and watches
//! lose no events; compacted revisions answer 410 Expired.

use std::time::Duration;

use e2e::{flunder_v1beta1, str_at, wait_until, Server, FLUNDERS_V1BETA1};

#[test]
fn an_etcd_outage_answers_503_and_recovers_without_losing_watch_events() {
    let mut server = Server::start_on_etcd(&["wardle"], &[]);
    let created = server
        .http()
        .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("before", "x"));
    let rv = str_at(created.expect(201), "/metadata/resourceVersion").to_owned();
    let mut watch = server
        .http()
        .watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={rv}"));

    server.etcd_mut().expect("etcd").stop();
    let get = server.http().get(&format!("{FLUNDERS_V1BETA1}/before"));
    get.assert_status(503, "ServiceUnavailable");
    let create = server
        .http()
        .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("during", "x"));
    create.assert_status(503, "ServiceUnavailable");
    let ready = server.http().get("/readyz");
    assert_eq!(ready.status, 500, "readyz while etcd is down: {}", ready.text);
    assert!(ready.text.contains("[-]storage failed"), "{}", ready.text);
    assert_eq!(
        server.http().get("/livez").status,
        200,
        "liveness does not depend on etcd"
    );

    server.etcd_mut().expect("etcd").restart().expect("restart etcd");
    assert!(wait_until(Duration::from_secs(30), || server
        .http()
        .get("/readyz")
        .status
        == 200));
    server
        .http()
        .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("after", "x"))
        .expect(201);
    let event = watch
        .next(Duration::from_secs(30))
        .expect("the watch delivers the write made after the outage");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(str_at(&event, "/object/metadata/name"), "after");
}

#[test]
fn without_the_watch_cache_a_watch_from_a_compacted_revision_gets_410_expired() {
    // The watch cache serves watches from its own event window, whatever etcd compacted (see the watch_cache
    // tests); without it, watches go to etcd, whose compaction is tested here.
    let server = Server::start_on_etcd(
        &["wardle"],
        &["--etcd-compaction-interval", "200ms", "--watch-cache", "false"],
    );
    let first = server.http().post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("old", "x"));
    let old_rv = str_at(first.expect(201), "/metadata/resourceVersion").to_owned();
    for i in 0..3 {
        server
            .http()
            .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(&format!("n{i}"), "x"))
            .expect(201);
    }
    // The compactor compacts at the revision it saw one interval earlier; wait until the old revision is gone.
    let expired = wait_until(Duration::from_secs(30), || {
        let mut watch = server
            .http()
            .watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={old_rv}"));
        match watch.next(Duration::from_secs(5)) {
            Some(event) if event["type"] == "ERROR" => {
                assert_eq!(event["object"]["code"], 410, "{event}");
                assert_eq!(event["object"]["reason"], "Expired", "{event}");
                true
            }
            _ => false,
        }
    });
    assert!(
        expired,
        "the old revision was never compacted; log:\n{}",
        server.log_tail(30)
    );
}

#[test]
fn an_object_over_etcds_request_limit_is_413_and_not_stored() {
    let server = Server::start_on_etcd(&["wardle"], &[]);
    // Within the server's 3 MiB body limit, over etcd's 1.5 MiB request limit (and over the 2 MiB its gRPC
    // server reads).
    for (name, size) in [("big", 1800 << 10), ("bigger", 2500 << 10)] {
        let flunder = flunder_v1beta1(name, &"x".repeat(size));
        let reply = server.http().post_json(FLUNDERS_V1BETA1, &flunder);
        let status = reply.assert_status(413, "RequestEntityTooLarge");
        let message = str_at(status, "/message");
        assert!(
            message.starts_with(&format!(
                "flunders.wardle.example.com \"{name}\" is too large to store: etcd: "
            )),
            "{message}"
        );
        server
            .http()
            .get(&format!("{FLUNDERS_V1BETA1}/{name}"))
            .assert_status(404, "NotFound");
    }
    server
        .http()
        .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("small", "x"))
        .expect(201);
}
