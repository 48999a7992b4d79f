//! Query parameters and methods checked as kube-apiserver checks them (issue 12): numbers that do not fit are 400,
//! booleans read as Go's strconv.ParseBool reads them, and a POST to an object's path is 405.

use std::time::Duration;

use e2e::{flunder_v1beta1, str_at, Server, FLUNDERS_V1BETA1};
use reqwest::Method;

#[test]
fn a_post_to_an_object_path_is_not_allowed_and_creates_nothing() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let body = flunder_v1beta1("from-body", "x").to_string().into_bytes();
    let reply = http.send(
        Method::POST,
        &format!("{FLUNDERS_V1BETA1}/in-path"),
        Some("application/json"),
        body,
    );
    reply.assert_status(405, "MethodNotAllowed");
    http.get(&format!("{FLUNDERS_V1BETA1}/from-body"))
        .assert_status(404, "NotFound");
    http.get(&format!("{FLUNDERS_V1BETA1}/in-path"))
        .assert_status(404, "NotFound");
}

#[test]
fn numbers_that_do_not_fit_are_bad_requests() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    for query in [
        "watch=true&timeoutSeconds=18446744073709551615",
        "watch=true&timeoutSeconds=-1",
        "watch=true&timeoutSeconds=soon",
        "limit=99999999999999999999",
    ] {
        let reply = http.get(&format!("{FLUNDERS_V1BETA1}?{query}"));
        reply.assert_status(400, "BadRequest");
    }
    // The largest int64 is a timeout too far to keep: the watch just has none.
    let mut watch = http.watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&timeoutSeconds=9223372036854775807"
    ));
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("late", "x"))
        .expect(201);
    let event = watch.next(Duration::from_secs(30)).expect("an event");
    assert_eq!(str_at(&event, "/type"), "ADDED", "{event:#}");
}

#[test]
fn booleans_are_read_as_go_reads_them() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("one", "x"))
        .expect(201);
    for spelling in ["True", "t", "1", "TRUE"] {
        let mut watch = http.watch(&format!("{FLUNDERS_V1BETA1}?watch={spelling}"));
        let event = watch.next(Duration::from_secs(30)).expect("a watch event");
        assert_eq!(str_at(&event, "/type"), "ADDED", "watch={spelling}: {event:#}");
    }
    let list = http.get(&format!("{FLUNDERS_V1BETA1}?watch=False"));
    assert_eq!(list.expect(200)["kind"], "FlunderList", "{}", list.text);
    http.get(&format!("{FLUNDERS_V1BETA1}?watch=maybe"))
        .assert_status(400, "BadRequest");

    let pretty = http.get(&format!("{FLUNDERS_V1BETA1}/one?pretty=True"));
    assert!(pretty.text.contains("\n  \"metadata\": {\n"), "{}", pretty.text);
    let plain = http.get(&format!("{FLUNDERS_V1BETA1}/one?pretty=0"));
    assert!(!plain.text.trim_end().contains('\n'), "{}", plain.text);
}
