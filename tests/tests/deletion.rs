//! Deletion as kube-apiserver does it for a custom resource: finalizers hold an object that is being
//! deleted until the last one is removed, DeleteOptions are validated and honoured, and an update may not change the
//! metadata the server owns.

use std::time::Duration;

use e2e::{flunder_v1beta1, str_at, wait_until, Server, FLUNDERS_V1BETA1};
use reqwest::Method;
use serde_json::{json, Value};

const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

fn flunder_with_finalizers(name: &str, finalizers: &[&str]) -> Value {
    let mut f = flunder_v1beta1(name, "x");
    f["metadata"]["finalizers"] = json!(finalizers);
    f
}

fn item(name: &str) -> String {
    format!("{FLUNDERS_V1BETA1}/{name}")
}

/// The type and name of a watch event, and whether its object carries a deletion timestamp.
fn summary(event: &Value) -> (String, String, bool) {
    (
        str_at(event, "/type").to_owned(),
        str_at(event, "/object/metadata/name").to_owned(),
        event.pointer("/object/metadata/deletionTimestamp").is_some(),
    )
}

#[test]
fn a_finalizer_holds_a_deleted_object_until_it_is_removed() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let created = http.post_json(
        FLUNDERS_V1BETA1,
        &flunder_with_finalizers("held", &["example.com/hold"]),
    );
    let rv = str_at(created.expect(201), "/metadata/resourceVersion").to_owned();
    let mut watch = http.watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={rv}"));

    // DELETE answers 200 with the object, now marked; it stays readable.
    let deleted = http.delete(&item("held"));
    let marked = deleted.expect(200).clone();
    assert_eq!(marked["kind"], "Flunder", "{marked:#}");
    let stamp = str_at(&marked, "/metadata/deletionTimestamp").to_owned();
    assert!(!stamp.is_empty(), "{marked:#}");
    assert_eq!(marked["metadata"]["deletionGracePeriodSeconds"], 0, "{marked:#}");
    assert_eq!(
        marked["metadata"]["generation"], 2,
        "kube bumps the generation: {marked:#}"
    );
    let read = http.get(&item("held"));
    assert_eq!(str_at(read.expect(200), "/metadata/deletionTimestamp"), stamp);

    // A second DELETE changes nothing and answers the object again.
    let again = http.delete(&item("held"));
    assert_eq!(str_at(again.expect(200), "/metadata/deletionTimestamp"), stamp);
    assert_eq!(
        str_at(&again.json, "/metadata/resourceVersion"),
        str_at(&marked, "/metadata/resourceVersion")
    );

    // No new finalizer once deletion started; the deletion timestamp cannot be removed by an update.
    let mut adding = read.json.clone();
    adding["metadata"]["finalizers"] = json!(["example.com/hold", "example.com/more"]);
    let refused = http.put_json(&item("held"), &adding);
    let status = refused.assert_status(422, "Invalid");
    assert_eq!(
        status["details"]["causes"][0]["field"], "metadata.finalizers",
        "{status:#}"
    );
    assert!(
        str_at(status, "/details/causes/0/message")
            .contains("no new finalizers can be added if the object is being deleted"),
        "{status:#}"
    );
    let mut unmarking = read.json.clone();
    unmarking["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("deletionTimestamp");
    let kept = http.put_json(&item("held"), &unmarking);
    assert_eq!(str_at(kept.expect(200), "/metadata/deletionTimestamp"), stamp);
    assert_eq!(
        str_at(&kept.json, "/metadata/resourceVersion"),
        str_at(&marked, "/metadata/resourceVersion"),
        "an update that changes nothing writes nothing"
    );

    // Removing the last finalizer removes the object.
    let released = http.patch(
        &item("held"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    released.expect(200);
    http.get(&item("held")).assert_status(404, "NotFound");

    // Watchers saw it marked (MODIFIED), then DELETED with its last stored state (the update that removed the
    // last finalizer deleted it instead of writing it, as kube-apiserver does).
    let mut seen = Vec::new();
    let mut last = Value::Null;
    while seen
        .last()
        .is_none_or(|(t, _, _): &(String, String, bool)| t != "DELETED")
    {
        let event = watch.next(EVENT_TIMEOUT).expect("a watch event");
        seen.push(summary(&event));
        last = event;
    }
    let name = || "held".to_owned();
    assert_eq!(
        seen,
        [
            ("MODIFIED".to_owned(), name(), true),
            ("DELETED".to_owned(), name(), true),
        ]
    );
    assert_eq!(
        last["object"]["metadata"]["finalizers"],
        json!(["example.com/hold"]),
        "{last:#}"
    );
}

#[test]
fn kubectl_delete_wait_returns_once_a_second_command_removes_the_finalizer() {
    let server = Server::start(&["wardle"]);
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &flunder_with_finalizers("waited", &["example.com/hold"]).to_string(),
    );
    let mut delete = server.kubectl_spawn(&["delete", "flunder", "waited", "--wait=true", "--timeout=60s"]);
    assert!(
        wait_until(EVENT_TIMEOUT, || {
            server
                .kubectl_json(&["get", "flunder", "waited", "-o", "json"])
                .pointer("/metadata/deletionTimestamp")
                .is_some()
        }),
        "kubectl delete did not mark the flunder"
    );
    assert!(
        delete.try_wait().unwrap().is_none(),
        "kubectl delete --wait returned while a finalizer holds the object"
    );
    server.kubectl_ok(&[
        "patch",
        "flunder",
        "waited",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    let output = delete.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains(r#"flunder.wardle.example.com "waited" deleted"#),
        "{stdout}"
    );
    let missing = server.kubectl_err(&["get", "flunder", "waited"]);
    assert!(missing.contains("(NotFound)"), "{missing}");
}

#[test]
fn delete_options_are_validated_and_honoured() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let created = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("opts", "x"));
    let uid = str_at(created.expect(201), "/metadata/uid").to_owned();

    let bad_policy = http.delete(&format!("{}?propagationPolicy=Sometimes", item("opts")));
    let status = bad_policy.assert_status(422, "Invalid");
    assert_eq!(
        str_at(status, "/message"),
        r#"DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: "Sometimes": supported values: "Foreground", "Background", "Orphan""#
    );
    assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueNotSupported");

    let both = http.send(
        Method::DELETE,
        &item("opts"),
        Some("application/json"),
        json!({"kind": "DeleteOptions", "apiVersion": "v1", "orphanDependents": true, "propagationPolicy": "Orphan"})
            .to_string()
            .into_bytes(),
    );
    let status = both.assert_status(422, "Invalid");
    assert!(
        str_at(status, "/message").contains("orphanDependents and deletionPropagation cannot be both set"),
        "{status:#}"
    );

    http.delete(&format!("{}?gracePeriodSeconds=soon", item("opts")))
        .assert_status(400, "BadRequest");
    let status = http.delete(&format!("{}?dryRun=Some", item("opts")));
    let status = status.assert_status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "dryRun", "{status:#}");

    // A precondition on another uid, or an old resourceVersion, in the body: 409 and nothing deleted.
    let wrong_uid = http.send(
        Method::DELETE,
        &item("opts"),
        Some("application/json"),
        json!({"preconditions": {"uid": "not-the-uid"}})
            .to_string()
            .into_bytes(),
    );
    wrong_uid.assert_status(409, "Conflict");
    let old_rv = http.send(
        Method::DELETE,
        &item("opts"),
        Some("application/json"),
        json!({"preconditions": {"resourceVersion": "1"}})
            .to_string()
            .into_bytes(),
    );
    old_rv.assert_status(409, "Conflict");
    http.get(&item("opts")).expect(200);

    // A dry run deletes nothing; a finalizer's dry run marks nothing.
    http.delete(&format!("{}?dryRun=All", item("opts"))).expect(200);
    http.get(&item("opts")).expect(200);
    http.post_json(FLUNDERS_V1BETA1, &flunder_with_finalizers("dry", &["example.com/hold"]))
        .expect(201);
    let dry = http.delete(&format!("{}?dryRun=All", item("dry")));
    assert!(
        dry.expect(200).pointer("/metadata/deletionTimestamp").is_some(),
        "{}",
        dry.text
    );
    assert!(http
        .get(&item("dry"))
        .expect(200)
        .pointer("/metadata/deletionTimestamp")
        .is_none());

    // Background, Foreground and Orphan are accepted; with no garbage collector (no dependents) the object goes.
    let ok = http.send(
        Method::DELETE,
        &item("opts"),
        Some("application/json"),
        json!({"propagationPolicy": "Background", "gracePeriodSeconds": 0, "preconditions": {"uid": uid}})
            .to_string()
            .into_bytes(),
    );
    assert_eq!(ok.expect(200)["status"], "Success", "{}", ok.text);
    http.get(&item("opts")).assert_status(404, "NotFound");
}

#[test]
fn deletecollection_marks_objects_with_finalizers_and_deletes_the_others() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(
        FLUNDERS_V1BETA1,
        &flunder_with_finalizers("kept", &["example.com/hold"]),
    )
    .expect(201);
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("gone", "x"))
        .expect(201);
    let reply = http.delete(FLUNDERS_V1BETA1);
    let items = reply.expect(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 2, "{}", reply.text);
    http.get(&item("gone")).assert_status(404, "NotFound");
    let kept = http.get(&item("kept"));
    assert!(
        kept.expect(200).pointer("/metadata/deletionTimestamp").is_some(),
        "{}",
        kept.text
    );
}

#[test]
fn an_update_may_not_change_the_metadata_the_server_owns() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let created = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("meta", "x"));
    let original = created.expect(201).clone();

    // Another uid: 422 naming metadata.uid.
    let mut other_uid = original.clone();
    other_uid["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let status = http
        .put_json(&item("meta"), &other_uid)
        .assert_status(422, "Invalid")
        .clone();
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.uid", "{status:#}");
    assert_eq!(
        status["details"]["causes"][0]["message"],
        r#"Invalid value: "00000000-0000-0000-0000-000000000000": field is immutable"#
    );

    // A deletion timestamp on an object not being deleted: 422 naming it.
    let mut deleting = original.clone();
    deleting["metadata"]["deletionTimestamp"] = json!("2030-01-01T00:00:00Z");
    let status = http
        .put_json(&item("meta"), &deleting)
        .assert_status(422, "Invalid")
        .clone();
    assert_eq!(
        status["details"]["causes"][0]["field"], "metadata.deletionTimestamp",
        "{status:#}"
    );

    // The creation timestamp and generation are set back from the stored object, as kube does; no uid means the
    // stored one.
    let mut older = original.clone();
    older["metadata"]["creationTimestamp"] = json!("2001-01-01T00:00:00Z");
    older["metadata"]["generation"] = json!(7);
    older["metadata"].as_object_mut().unwrap().remove("uid");
    older["spec"]["flunderReference"] = json!("y");
    let updated = http.put_json(&item("meta"), &older);
    let updated = updated.expect(200);
    assert_eq!(
        updated["metadata"]["creationTimestamp"],
        original["metadata"]["creationTimestamp"]
    );
    assert_eq!(updated["metadata"]["uid"], original["metadata"]["uid"]);
    assert_eq!(
        updated["metadata"]["generation"], 2,
        "the spec changed once: {updated:#}"
    );
}
