//! Watches: `kubectl get -w` and raw `?watch=true` streams.

use std::time::Duration;

use e2e::{flunder_v1beta1, str_at, Server, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

/// How long to wait for one expected watch event.
const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

/// `(type, name)` of a watch event.
fn summary(event: &Value) -> (String, String) {
    (
        str_at(event, "/type").to_owned(),
        str_at(event, "/object/metadata/name").to_owned(),
    )
}

#[test]
fn kubectl_watch_reports_added_modified_deleted_in_order() {
    let server = Server::start(&["wardle"]);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("sentinel", "x").to_string());

    let mut watch = server.kubectl_watch(&["get", "flunders", "-w", "--output-watch-events", "-o", "json"]);
    // kubectl lists first and prints the existing objects as ADDED, then watches from the list's resourceVersion, so
    // once the sentinel is printed every later change is guaranteed to be reported.
    let initial = watch.events().collect_until(EVENT_TIMEOUT, |events| !events.is_empty());
    let described = watch.describe();
    assert_eq!(
        initial.iter().map(summary).collect::<Vec<_>>(),
        [("ADDED".to_owned(), "sentinel".to_owned())],
        "initial list of the watch; {described}"
    );

    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("watched", "first").to_string());
    server.kubectl_ok(&[
        "patch",
        "flunder",
        "watched",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"flunderReference":"second"}}"#,
    ]);
    server.kubectl_ok(&["delete", "flunder", "watched"]);

    let events = watch.events().collect_until(EVENT_TIMEOUT, |events| {
        events
            .iter()
            .any(|e| summary(e) == ("DELETED".to_owned(), "watched".to_owned()))
    });
    let described = watch.describe();
    let seen: Vec<(String, String)> = events.iter().map(summary).collect();
    let expected: Vec<(String, String)> = ["ADDED", "MODIFIED", "DELETED"]
        .iter()
        .map(|t| ((*t).to_owned(), "watched".to_owned()))
        .collect();
    assert_eq!(seen, expected, "watch events after the initial list; {described}");
    assert_eq!(
        str_at(&events[0], "/object/spec/flunderReference"),
        "first",
        "{:#}",
        events[0]
    );
    assert_eq!(
        str_at(&events[1], "/object/spec/flunderReference"),
        "second",
        "{:#}",
        events[1]
    );
    assert_eq!(
        str_at(&events[1], "/object/apiVersion"),
        "wardle.example.com/v1beta1",
        "{:#}",
        events[1]
    );
}

#[test]
fn http_watch_from_a_resource_version_streams_only_later_events() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let first = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("before", "x"));
    let first = first.expect(201);
    let since = str_at(first, "/metadata/resourceVersion").to_owned();
    assert!(!since.is_empty(), "created objects carry a resourceVersion: {first:#}");
    let second = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("after", "x"));
    second.expect(201);

    let mut stream = http.watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={since}&timeoutSeconds=60"
    ));
    let event = stream
        .next(EVENT_TIMEOUT)
        .unwrap_or_else(|| panic!("no event ({:?})", stream.end_reason()));
    assert_eq!(
        summary(&event),
        ("ADDED".to_owned(), "after".to_owned()),
        "the first event after {since}: {event:#}"
    );
    assert_eq!(str_at(&event, "/object/kind"), "Flunder", "{event:#}");
    assert_eq!(
        str_at(&event, "/object/apiVersion"),
        "wardle.example.com/v1beta1",
        "{event:#}"
    );

    // A live change is delivered too, carrying the new object.
    let mut updated = second.json.clone();
    updated["spec"]["flunderReference"] = json!("changed");
    http.put_json(&format!("{FLUNDERS_V1BETA1}/after"), &updated)
        .expect(200);
    let event = stream
        .next(EVENT_TIMEOUT)
        .unwrap_or_else(|| panic!("no event ({:?})", stream.end_reason()));
    assert_eq!(
        summary(&event),
        ("MODIFIED".to_owned(), "after".to_owned()),
        "{event:#}"
    );
    assert_eq!(str_at(&event, "/object/spec/flunderReference"), "changed", "{event:#}");

    http.delete(&format!("{FLUNDERS_V1BETA1}/before")).expect(200);
    let event = stream
        .next(EVENT_TIMEOUT)
        .unwrap_or_else(|| panic!("no event ({:?})", stream.end_reason()));
    assert_eq!(
        summary(&event),
        ("DELETED".to_owned(), "before".to_owned()),
        "{event:#}"
    );
}

#[test]
fn http_watch_in_another_version_converts_the_objects() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let list = http.get(FLUNDERS_V1BETA1);
    let since = str_at(list.expect(200), "/metadata/resourceVersion").to_owned();
    assert!(!since.is_empty(), "lists carry a resourceVersion: {}", list.text);

    let alpha = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
    let mut stream = http.watch(&format!("{alpha}?watch=true&resourceVersion={since}&timeoutSeconds=60"));
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("converted", "target"))
        .expect(201);
    let event = stream
        .next(EVENT_TIMEOUT)
        .unwrap_or_else(|| panic!("no event ({:?})", stream.end_reason()));
    assert_eq!(
        summary(&event),
        ("ADDED".to_owned(), "converted".to_owned()),
        "{event:#}"
    );
    assert_eq!(
        str_at(&event, "/object/apiVersion"),
        "wardle.example.com/v1alpha1",
        "{event:#}"
    );
    assert_eq!(str_at(&event, "/object/spec/reference"), "target", "{event:#}");
    assert_eq!(str_at(&event, "/object/spec/referenceType"), "Flunder", "{event:#}");
}

#[test]
fn http_watch_filters_by_label_selector() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let list = http.get(FLUNDERS_V1BETA1);
    let since = str_at(list.expect(200), "/metadata/resourceVersion").to_owned();

    let mut stream = http.watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={since}&labelSelector=app%3Dwanted"
    ));
    let mut unwanted = flunder_v1beta1("unwanted", "x");
    unwanted["metadata"]["labels"] = json!({"app": "other"});
    http.post_json(FLUNDERS_V1BETA1, &unwanted).expect(201);
    let mut wanted = flunder_v1beta1("wanted", "x");
    wanted["metadata"]["labels"] = json!({"app": "wanted"});
    http.post_json(FLUNDERS_V1BETA1, &wanted).expect(201);

    let event = stream
        .next(EVENT_TIMEOUT)
        .unwrap_or_else(|| panic!("no event ({:?})", stream.end_reason()));
    assert_eq!(
        summary(&event),
        ("ADDED".to_owned(), "wanted".to_owned()),
        "the unwanted one is filtered: {event:#}"
    );
}
