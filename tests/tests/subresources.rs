//! The `/status` and `/scale` subresources: flunders declare both (the wardle plugin exports
//! `status-strategy` and `scaler`), and they behave as a custom resource's do on kube-apiserver.

use std::time::Duration;

use e2e::{flunder_v1beta1, str_at, Server, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

const EVENT_TIMEOUT: Duration = Duration::from_secs(30);
const MERGE: &str = "application/merge-patch+json";

fn item(name: &str) -> String {
    format!("{FLUNDERS_V1BETA1}/{name}")
}

fn flunder_with_replicas(name: &str, replicas: i64) -> Value {
    let mut f = flunder_v1beta1(name, "x");
    f["spec"]["replicas"] = json!(replicas);
    f
}

fn status_is_written_only_through_its_subresource(plugin: &str) {
    let server = Server::start(&[plugin]);
    let http = server.http();

    // A create starts without the status it was given.
    let mut body = flunder_with_replicas("s", 1);
    body["status"] = json!({"replicas": 7});
    let created = http.post_json(FLUNDERS_V1BETA1, &body);
    let created = created.expect(201).clone();
    assert_ne!(created["status"]["replicas"], 7, "{created:#}");
    assert_eq!(created["metadata"]["generation"], 1);

    // The object's own update keeps the stored status; a spec change bumps the generation.
    let mut update = created.clone();
    update["status"] = json!({"replicas": 9});
    update["spec"]["replicas"] = json!(2);
    let updated = http.put_json(&item("s"), &update);
    let updated = updated.expect(200).clone();
    assert_eq!(updated["status"], created["status"], "{updated:#}");
    assert_eq!(updated["spec"]["replicas"], 2);
    assert_eq!(updated["metadata"]["generation"], 2);

    let rv = str_at(&updated, "/metadata/resourceVersion").to_owned();
    let mut watch = http.watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={rv}"));

    // `/status` writes the status alone: spec and label changes in the body are ignored, the generation stays.
    let mut status_update = updated.clone();
    status_update["status"] = json!({"replicas": 2, "observedGeneration": 2, "selector": "app=s"});
    status_update["spec"]["replicas"] = json!(5);
    status_update["metadata"]["labels"] = json!({"ignored": "yes"});
    let written = http.put_json(&format!("{}/status", item("s")), &status_update);
    let written = written.expect(200).clone();
    assert_eq!(
        written["status"],
        json!({"replicas": 2, "observedGeneration": 2, "selector": "app=s"}),
        "{written:#}"
    );
    assert_eq!(
        written["spec"]["replicas"], 2,
        "the spec is the stored one: {written:#}"
    );
    assert!(written["metadata"].get("labels").is_none(), "{written:#}");
    assert_eq!(written["metadata"]["generation"], 2);
    assert_ne!(str_at(&written, "/metadata/resourceVersion"), rv);
    let event = watch.next(EVENT_TIMEOUT).expect("a MODIFIED event");
    assert_eq!(event["type"], "MODIFIED", "{event:#}");
    assert_eq!(event["object"]["status"]["replicas"], 2, "{event:#}");

    // GET of `/status` answers the whole object, in the request's version.
    let read = http.get(&format!("{}/status", item("s")));
    assert_eq!(read.expect(200)["kind"], "Flunder");
    assert_eq!(read.json["status"]["selector"], "app=s");

    // A merge patch of `/status`; the plugin's status validation applies there (observedGeneration ahead of the
    // generation is refused), one cause per field.
    let patched = http.patch(
        &format!("{}/status", item("s")),
        MERGE,
        &json!({"status": {"replicas": 3}, "spec": {"replicas": 8}}),
    );
    assert_eq!(patched.expect(200)["status"]["replicas"], 3);
    assert_eq!(patched.json["spec"]["replicas"], 2);
    let refused = http.patch(
        &format!("{}/status", item("s")),
        MERGE,
        &json!({"status": {"observedGeneration": 9, "replicas": -1}}),
    );
    let status = refused.assert_status(422, "Invalid");
    let mut fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .expect("causes")
        .iter()
        .map(|c| c["field"].as_str().unwrap_or(""))
        .collect();
    fields.sort_unstable();
    assert_eq!(fields, ["status.observedGeneration", "status.replicas"], "{status:#}");
    assert_eq!(status["details"]["kind"], "Flunder", "{status:#}");

    // A stale resourceVersion is a conflict; an update without one is refused, as for the object itself.
    let stale = http.put_json(&format!("{}/status", item("s")), &status_update);
    stale.assert_status(409, "Conflict");
    let mut unconditional = written.clone();
    unconditional["metadata"]
        .as_object_mut()
        .expect("metadata")
        .remove("resourceVersion");
    let refused = http.put_json(&format!("{}/status", item("s")), &unconditional);
    let status = refused.assert_status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.resourceVersion");

    // Only get, update and patch; no `/status` for a missing object, for fischers, or of an unknown subresource.
    http.delete(&format!("{}/status", item("s")))
        .assert_status(405, "MethodNotAllowed");
    http.put_json(&format!("{}/status", item("missing")), &{
        let mut m = status_update.clone();
        m["metadata"]["name"] = json!("missing");
        m
    })
    .assert_status(404, "NotFound");
    http.get("/apis/wardle.example.com/v1alpha1/fischers/a/status")
        .assert_status(404, "NotFound");
    http.get(&format!("{}/exec", item("s"))).assert_status(404, "NotFound");
}

fn scale_reads_and_writes_the_replica_paths(plugin: &str) {
    let server = Server::start(&[plugin]);
    let http = server.http();
    let created = http.post_json(FLUNDERS_V1BETA1, &flunder_with_replicas("r", 2));
    let uid = str_at(created.expect(201), "/metadata/uid").to_owned();
    let status = http.patch(
        &format!("{}/status", item("r")),
        MERGE,
        &json!({"status": {"replicas": 1, "selector": "app=r"}}),
    );
    status.expect(200);

    let scale_path = format!("{}/scale", item("r"));
    let scale = http.get(&scale_path);
    let scale = scale.expect(200).clone();
    assert_eq!(scale["apiVersion"], "autoscaling/v1", "{scale:#}");
    assert_eq!(scale["kind"], "Scale");
    assert_eq!(scale["metadata"]["name"], "r");
    assert_eq!(scale["metadata"]["namespace"], "default");
    assert_eq!(scale["metadata"]["uid"], uid.as_str());
    assert_eq!(scale["spec"], json!({"replicas": 2}));
    assert_eq!(scale["status"], json!({"replicas": 1, "selector": "app=r"}));

    // PUT of a Scale sets the desired replicas on the object, through its update strategy (generation bumped).
    let mut put = scale.clone();
    put["spec"]["replicas"] = json!(4);
    let written = http.put_json(&scale_path, &put);
    assert_eq!(written.expect(200)["spec"]["replicas"], 4, "{:#}", written.json);
    assert_eq!(written.json["kind"], "Scale");
    let object = http.get(&item("r"));
    assert_eq!(object.expect(200)["spec"]["replicas"], 4);
    assert_eq!(object.json["metadata"]["generation"], 2);
    assert_eq!(
        str_at(&object.json, "/metadata/resourceVersion"),
        str_at(&written.json, "/metadata/resourceVersion")
    );

    // A stale resourceVersion in the Scale is a conflict; a negative count is invalid on Scale.autoscaling.
    put["spec"]["replicas"] = json!(5);
    http.put_json(&scale_path, &put).assert_status(409, "Conflict");
    let negative = http.patch(&scale_path, MERGE, &json!({"spec": {"replicas": -1}}));
    let status = negative.assert_status(422, "Invalid");
    assert_eq!(status["details"]["group"], "autoscaling", "{status:#}");
    assert_eq!(status["details"]["kind"], "Scale", "{status:#}");
    assert_eq!(status["details"]["causes"][0]["field"], "spec.replicas", "{status:#}");
    let wrong_kind = http.put_json(&scale_path, &flunder_with_replicas("r", 1));
    wrong_kind.assert_status(400, "BadRequest");

    // A JSON patch of the Scale.
    let patched = http.patch(
        &scale_path,
        "application/json-patch+json",
        &json!([{"op": "replace", "path": "/spec/replicas", "value": 6}]),
    );
    assert_eq!(patched.expect(200)["spec"]["replicas"], 6);
    http.get(&format!("{}/scale", item("missing")))
        .assert_status(404, "NotFound");
}

fn kubectl_scales_and_patches_status(plugin: &str) {
    let server = Server::start(&[plugin]);
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &flunder_with_replicas("k", 1).to_string());
    let out = server.kubectl_ok(&["scale", "flunder/k", "--replicas=3"]);
    assert!(out.contains("scaled"), "{out}");
    let replicas = server.kubectl_ok(&["get", "flunder", "k", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "3");

    // `--current-replicas` is a precondition kubectl checks against the Scale.
    let err = server.kubectl_err(&["scale", "flunder/k", "--current-replicas=1", "--replicas=5"]);
    assert!(err.contains("Expected replicas to be 1, was 3"), "{err}");

    server.kubectl_ok(&[
        "patch",
        "flunder",
        "k",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":3,"observedGeneration":2}}"#,
    ]);
    let status = server.kubectl_json(&["get", "flunder", "k", "--subresource=status", "-o", "json"]);
    assert_eq!(status["status"]["replicas"], 3, "{status:#}");
    let scale = server.kubectl_json(&["get", "flunder", "k", "--subresource=scale", "-o", "json"]);
    assert_eq!(scale["kind"], "Scale", "{scale:#}");
    assert_eq!(scale["status"]["replicas"], 3, "{scale:#}");

    // A status patch through the main resource changes nothing of the status.
    server.kubectl_ok(&[
        "patch",
        "flunder",
        "k",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":0}}"#,
    ]);
    let replicas = server.kubectl_ok(&["get", "flunder", "k", "-o", "jsonpath={.status.replicas}"]);
    assert_eq!(replicas, "3");
}

fn discovery_lists_the_subresources(plugin: &str) {
    let server = Server::start(&[plugin]);
    let http = server.http();
    let list = http.get("/apis/wardle.example.com/v1beta1");
    let resources = list.expect(200)["resources"].as_array().expect("resources").clone();
    let by_name = |name: &str| -> Value {
        resources
            .iter()
            .find(|r| r["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {resources:#?}"))
    };
    let status = by_name("flunders/status");
    assert_eq!(status["kind"], "Flunder");
    assert_eq!(status["verbs"], json!(["get", "patch", "update"]));
    let scale = by_name("flunders/scale");
    assert_eq!(
        (scale["group"].as_str(), scale["version"].as_str()),
        (Some("autoscaling"), Some("v1"))
    );
    assert_eq!(scale["kind"], "Scale");
    assert!(resources.iter().all(|r| r["name"] != "fischers/status"));
}

#[test]
fn rbac_tells_status_and_scale_apart_from_the_object() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(FLUNDERS_V1BETA1, &flunder_with_replicas("a", 1))
        .expect(201);
    // A role on flunders alone, and one on their status.
    for (name, resources) in [
        ("flunder-writer", json!(["flunders"])),
        ("status-writer", json!(["flunders/status"])),
    ] {
        let role = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": "default"},
            "rules": [{"apiGroups": ["wardle.example.com"], "resources": resources, "verbs": ["get", "patch", "update"]}],
        });
        http.post_json("/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", &role)
            .expect(201);
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}],
        });
        http.post_json(
            "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
            &binding,
        )
        .expect(201);
    }
    let writer = server.https_as("w", &["flunder-writer"]);
    let reporter = server.https_as("r", &["status-writer"]);
    let status_patch = json!({"status": {"replicas": 1}});
    let status_url = format!("{}/status", item("a"));
    let allowed = |client: &e2e::Http, path: &str| {
        e2e::wait_until(Duration::from_secs(10), || {
            client.patch(path, MERGE, &json!({})).status == 200
        })
    };
    assert!(
        allowed(&writer, &item("a")),
        "RBAC did not follow the flunder-writer binding"
    );
    assert!(
        allowed(&reporter, &status_url),
        "RBAC did not follow the status-writer binding"
    );

    let denied = writer.patch(&status_url, MERGE, &status_patch);
    let status = denied.assert_status(403, "Forbidden");
    assert!(str_at(status, "/message").contains("\"flunders/status\""), "{status:#}");
    reporter.patch(&status_url, MERGE, &status_patch).expect(200);
    let denied = reporter.patch(&item("a"), MERGE, &json!({"spec": {"replicas": 2}}));
    denied.assert_status(403, "Forbidden");
    let denied = writer.get(&format!("{}/scale", item("a")));
    let status = denied.assert_status(403, "Forbidden");
    assert!(str_at(status, "/message").contains("\"flunders/scale\""), "{status:#}");
}

e2e::on_both_wardles!(
    status_is_written_only_through_its_subresource,
    scale_reads_and_writes_the_replica_paths,
    kubectl_scales_and_patches_status,
    discovery_lists_the_subresources,
);
