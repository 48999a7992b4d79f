//! Events, built in (core v1, short name `ev`): kube's validation of a core request (the old recorder's events and
//! the new one's), kube's table columns and field selectors, and their time to live (`--event-ttl`).

use std::time::Duration;

use e2e::{wait_until, Server};
use serde_json::json;

const EVENTS: &str = "/api/v1/namespaces/default/events";

fn event(name: &str, object: &str, kind: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
        "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": object, "namespace": "default"},
        "reason": "Configured", "message": "configured it", "type": kind,
        "source": {"component": "ctl", "host": "h1"},
        "firstTimestamp": "2026-12-07T10:00:00Z", "lastTimestamp": "2026-12-07T10:05:00Z", "count": 3})
}

#[test]
fn events_kubectl_shows_kube_columns_and_selects_by_field() {
    let server = Server::start(&[]);
    let http = server.http();
    http.post_json(EVENTS, &event("app.1", "app", "Normal")).expect(201);
    http.post_json(EVENTS, &event("db.1", "db", "Warning")).expect(201);
    let table = server.kubectl_ok(&["get", "events"]);
    let header: Vec<&str> = table.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"],
        "{table}"
    );
    let app = table
        .lines()
        .find(|l| l.contains("configmap/app"))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        app.contains("Normal") && app.contains("Configured") && app.ends_with("configured it"),
        "{table}"
    );
    let wide = server.kubectl_ok(&["get", "ev", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        [
            "LAST",
            "SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST",
            "SEEN",
            "COUNT",
            "NAME"
        ],
        "{wide}"
    );
    assert!(
        wide.lines()
            .any(|l| l.contains("ctl, h1") && l.contains("app.1") && l.contains(" 3 ")),
        "{wide}"
    );
    // kube's selectable fields.
    let names = |selector: &str| {
        let list = http
            .get(&format!("{EVENTS}?fieldSelector={selector}"))
            .expect(200)
            .clone();
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["metadata"]["name"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(names("involvedObject.name%3Ddb"), ["db.1"]);
    assert_eq!(names("type%3DWarning"), ["db.1"]);
    assert_eq!(names("source%3Dctl,involvedObject.kind%3DConfigMap").len(), 2);
    let out = server.kubectl_ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=app",
        "-o",
        "name",
    ]);
    assert_eq!(out.trim(), "event/app.1");
    // A PUT creates a missing event (kube's event strategy).
    http.put_json(&format!("{EVENTS}/put.1"), &event("put.1", "app", "Normal"))
        .expect(201);
}

#[test]
fn events_are_validated_as_kube_validates_core_requests() {
    let server = Server::start(&[]);
    let http = server.http();
    let mut elsewhere = event("x.1", "app", "Normal");
    elsewhere["involvedObject"]["namespace"] = json!("other");
    let status = http.post_json(EVENTS, &elsewhere).assert_status(422, "Invalid").clone();
    assert_eq!(
        status["message"],
        "Event \"x.1\" is invalid: involvedObject.namespace: Invalid value: \"other\": does not match event.namespace"
    );
    // The new recorder's events: an eventTime, a reporting controller and instance, an action and a reason.
    let new = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "n.1"},
        "eventTime": "2026-12-07T10:00:00.123456Z", "involvedObject": {"kind": "ConfigMap", "name": "app", "namespace": "default"},
        "reason": "Configured", "action": "Configure", "reportingComponent": "example.com/ctl", "reportingInstance": "ctl-1",
        "series": {"count": 2, "lastObservedTime": "2026-12-07T10:01:00Z"}});
    let created = http.post_json(EVENTS, &new).expect(201).clone();
    assert_eq!(created["eventTime"], "2026-12-07T10:00:00.123456Z");
    assert_eq!(created["series"]["lastObservedTime"], "2026-12-07T10:01:00.000000Z");
    let mut bare = new.clone();
    bare["metadata"]["name"] = json!("n.2");
    bare.as_object_mut().unwrap().remove("reportingInstance");
    bare.as_object_mut().unwrap().remove("action");
    let status = http.post_json(EVENTS, &bare).assert_status(422, "Invalid").clone();
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(fields, ["reportingInstance", "action"], "{status}");
    let err = server.kubectl_stdin_err(
        &["create", "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "Event", "metadata": {"name": "u.1"}, "involvedObject": {}, "note": "x"}"#,
    );
    assert!(err.contains("unknown field \"note\""), "{err}");
}

#[test]
fn events_are_deleted_once_their_time_to_live_has_passed() {
    let server = Server::start_with_args(&[], &["--event-ttl", "2s"]);
    let http = server.http();
    let mut watch = http.watch(&format!("{EVENTS}?watch=true"));
    let mut fresh = event("fresh.1", "app", "Normal");
    // Seen now: its time to live counts from its creation (its own times are older).
    fresh.as_object_mut().unwrap().remove("lastTimestamp");
    http.post_json(EVENTS, &fresh).expect(201);
    assert!(
        wait_until(Duration::from_secs(30), || http
            .get(&format!("{EVENTS}/fresh.1"))
            .status
            == 404),
        "the event outlived its time to live"
    );
    let mut kinds = Vec::new();
    while kinds.last().map(String::as_str) != Some("DELETED") {
        let event = watch.next(Duration::from_secs(10)).expect("a watch event");
        kinds.push(event["type"].as_str().unwrap_or_default().to_owned());
    }
    assert_eq!(kinds, ["ADDED", "DELETED"]);
    // Other objects stay.
    server.kubectl_ok(&["create", "configmap", "kept"]);
    http.post_json(EVENTS, &event("late.1", "kept", "Normal")).expect(201);
    assert!(wait_until(Duration::from_secs(30), || http
        .get(&format!("{EVENTS}/late.1"))
        .status
        == 404));
    http.get("/api/v1/namespaces/default/configmaps/kept").expect(200);
}
