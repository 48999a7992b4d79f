//! Namespaces, built in: the initial ones, NamespaceLifecycle (404 for a missing namespace, 403 while one
//! terminates), and deletion that empties a namespace and then removes it (`kubectl delete ns --wait`).

use std::time::Duration;

use e2e::{wait_until, Server};
use serde_json::json;

/// A v1beta1 flunder in namespace `ns`.
fn flunder_in(ns: &str, name: &str) -> serde_json::Value {
    let mut flunder = e2e::flunder_v1beta1(name, "x");
    flunder["metadata"]["namespace"] = serde_json::json!(ns);
    flunder
}

fn flunders(ns: &str) -> String {
    format!("/apis/wardle.example.com/v1beta1/namespaces/{ns}/flunders")
}

#[test]
fn namespaces_initial_ones_exist_and_missing_ones_refuse_objects() {
    let server = Server::start(&["wardle"]);
    let table = server.kubectl_ok(&["get", "namespaces"]);
    for ns in ["default", "kube-system", "kube-public"] {
        assert!(
            table.lines().any(|l| l.starts_with(ns) && l.contains("Active")),
            "{ns}: {table}"
        );
    }
    let http = server.http();
    let status = http
        .post_json(&flunders("missing"), &flunder_in("missing", "f"))
        .assert_status(404, "NotFound")
        .clone();
    assert_eq!(status["message"], "namespaces \"missing\" not found");
    assert_eq!(status["details"]["kind"], "namespaces");
    let err = server.kubectl_stdin_err(
        &["create", "-n", "missing", "-f", "-"],
        &flunder_in("missing", "f").to_string(),
    );
    assert!(err.contains("namespaces \"missing\" not found"), "{err}");

    // kube's kubectl create namespace, then objects in it.
    server.kubectl_ok(&["create", "namespace", "team-a"]);
    http.post_json(&flunders("team-a"), &flunder_in("team-a", "f"))
        .expect(201);
    let ns = server.kubectl_json(&["get", "namespace", "team-a", "-o", "json"]);
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(ns["apiVersion"], "v1");

    // Invalid names are refused with kube's rule (a DNS-1123 label).
    let status = http
        .post_json(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "Not.A.Label"}}),
        )
        .assert_status(422, "Invalid")
        .clone();
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");

    // The server's own namespaces cannot go.
    let status = http
        .delete("/api/v1/namespaces/default")
        .assert_status(403, "Forbidden")
        .clone();
    assert_eq!(
        status["message"],
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );
}

#[test]
fn namespaces_kubectl_delete_wait_removes_the_objects_then_the_namespace() {
    let server = Server::start(&["wardle"]);
    server.kubectl_ok(&["create", "namespace", "doomed"]);
    server.kubectl_ok(&["create", "namespace", "kept"]);
    let http = server.http();
    for name in ["a", "b", "c"] {
        http.post_json(&flunders("doomed"), &flunder_in("doomed", name))
            .expect(201);
    }
    http.post_json(&flunders("kept"), &flunder_in("kept", "k")).expect(201);

    let out = server.kubectl_ok(&["delete", "namespace", "doomed", "--wait", "--timeout=60s"]);
    assert!(out.contains("namespace \"doomed\" deleted"), "{out}");
    let err = server.kubectl_err(&["get", "namespace", "doomed"]);
    assert!(err.contains("namespaces \"doomed\" not found"), "{err}");
    assert_eq!(http.get(&flunders("doomed")).expect(200)["items"], json!([]));
    let kept = http.get(&flunders("kept")).expect(200).clone();
    assert_eq!(kept["items"].as_array().unwrap().len(), 1);
}

#[test]
fn namespaces_terminating_refuse_new_objects() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    // A finalizer of another controller keeps the namespace Terminating once its objects are gone.
    http.post_json(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "held"},
            "spec": {"finalizers": ["example.com/hold"]}}),
    )
    .expect(201);
    http.post_json(&flunders("held"), &flunder_in("held", "a")).expect(201);
    let deleted = http.delete("/api/v1/namespaces/held").expect(200).clone();
    assert_eq!(deleted["status"]["phase"], "Terminating");
    assert!(deleted["metadata"]["deletionTimestamp"].is_string(), "{deleted}");
    assert!(
        wait_until(Duration::from_secs(20), || http.get(&flunders("held")).json["items"]
            == json!([])),
        "the namespace's objects were not deleted"
    );
    let status = http
        .post_json(&flunders("held"), &flunder_in("held", "b"))
        .assert_status(403, "Forbidden")
        .clone();
    assert_eq!(
        status["message"],
        "flunders.wardle.example.com \"b\" is forbidden: unable to create new content in namespace held because it \
         is being terminated"
    );
    let table = server.kubectl_ok(&["get", "namespace", "held"]);
    assert!(table.contains("Terminating"), "{table}");
}

/// A namespace created with a finalizer that is neither standard nor qualified is refused, as kube refuses it.
#[test]
fn namespaces_finalizers_are_checked_on_create() {
    let server = Server::start(&["wardle"]);
    let status = server
        .http()
        .post_json(
            "/api/v1/namespaces",
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "odd"},
                "spec": {"finalizers": ["fake"]}}),
        )
        .assert_status(422, "Invalid")
        .clone();
    assert_eq!(
        status["message"],
        "Namespace \"odd\" is invalid: spec.finalizers: Invalid value: \"fake\": name is neither a standard finalizer \
         name nor is it fully qualified"
    );
}

/// `namespaces/{name}/status` (get, update, patch: the status alone, Active until the namespace is deleted) and
/// `namespaces/{name}/finalize` (update only: `spec.finalizers`, the status kept), as kube-apiserver serves them and
/// Kubernetes' namespace conformance tests use them.
#[test]
fn namespaces_status_and_finalize_subresources() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sub"}}),
    )
    .expect(201);

    // Discovery lists both, with kube's verbs.
    let core = http.get("/api/v1").expect(200).clone();
    let verbs = |name: &str| {
        core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .map(|r| r["verbs"].clone())
            .unwrap_or_else(|| panic!("no {name} in {core}"))
    };
    assert_eq!(verbs("namespaces/finalize"), json!(["update"]));
    assert_eq!(verbs("namespaces/status"), json!(["get", "patch", "update"]));

    // The status: patched with a condition, read back through /status; the phase is kept.
    let condition =
        json!({"type": "StatusUpdate", "status": "True", "reason": "E2E", "message": "Set from an e2e test"});
    let patched = http
        .patch(
            "/api/v1/namespaces/sub/status",
            "application/merge-patch+json",
            &json!({"status": {"conditions": [condition]}}),
        )
        .expect(200)
        .clone();
    assert_eq!(patched["status"]["conditions"][0]["reason"], "E2E", "{patched}");
    assert_eq!(patched["status"]["phase"], "Active");
    let read = http.get("/api/v1/namespaces/sub/status").expect(200).clone();
    assert_eq!(read["status"]["conditions"][0]["type"], "StatusUpdate", "{read}");
    // The object's own updates keep it.
    let mut plain = http.get("/api/v1/namespaces/sub").expect(200).clone();
    plain["status"] = json!({"phase": "Active"});
    let updated = http.put_json("/api/v1/namespaces/sub", &plain).expect(200).clone();
    assert_eq!(updated["status"]["conditions"][0]["type"], "StatusUpdate", "{updated}");
    // A phase that does not match the deletion state is refused, with kube's message.
    let status = http
        .patch(
            "/api/v1/namespaces/sub/status",
            "application/merge-patch+json",
            &json!({"status": {"phase": "Terminating"}}),
        )
        .assert_status(422, "Invalid")
        .clone();
    assert!(
        status["message"].as_str().unwrap().contains(
            "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"
        ),
        "{status}"
    );

    // The finalizers change through /finalize only.
    let mut ns = http.get("/api/v1/namespaces/sub").expect(200).clone();
    ns["spec"]["finalizers"] = json!(["kubernetes", "e2e.example.com/fakeFinalizer"]);
    ns["status"] = json!({});
    let unchanged = http.put_json("/api/v1/namespaces/sub", &ns).expect(200).clone();
    assert_eq!(unchanged["spec"]["finalizers"], json!(["kubernetes"]), "{unchanged}");
    ns["metadata"]["resourceVersion"] = unchanged["metadata"]["resourceVersion"].clone();
    let finalized = http
        .put_json("/api/v1/namespaces/sub/finalize", &ns)
        .expect(200)
        .clone();
    assert_eq!(
        finalized["spec"]["finalizers"],
        json!(["kubernetes", "e2e.example.com/fakeFinalizer"]),
        "{finalized}"
    );
    assert_eq!(
        finalized["status"]["phase"], "Active",
        "the status is kept: {finalized}"
    );
    assert_eq!(
        finalized["status"]["conditions"][0]["type"], "StatusUpdate",
        "{finalized}"
    );
    // A finalizer that is neither standard nor qualified is refused; /finalize takes no patch.
    let mut bad = finalized.clone();
    bad["spec"]["finalizers"] = json!(["fakeFinalizer"]);
    let status = http
        .put_json("/api/v1/namespaces/sub/finalize", &bad)
        .assert_status(422, "Invalid")
        .clone();
    assert!(
        status["message"]
            .as_str()
            .unwrap()
            .contains("name is neither a standard finalizer name nor is it fully qualified"),
        "{status}"
    );
    http.patch(
        "/api/v1/namespaces/sub/finalize",
        "application/merge-patch+json",
        &json!({"spec": {"finalizers": []}}),
    )
    .assert_status(405, "MethodNotAllowed");

    // Deleted, it waits for its finalizers; its status is Terminating now, and stays so.
    http.delete("/api/v1/namespaces/sub").expect(200);
    let terminating = http.get("/api/v1/namespaces/sub").expect(200).clone();
    assert_eq!(terminating["status"]["phase"], "Terminating");
    let status = http
        .patch(
            "/api/v1/namespaces/sub/status",
            "application/merge-patch+json",
            &json!({"status": {"phase": "Active"}}),
        )
        .assert_status(422, "Invalid")
        .clone();
    assert!(
        status["message"].as_str().unwrap().contains(
            "status.Phase: Invalid value: \"Active\": may only be 'Terminating' if `deletionTimestamp` is not empty"
        ),
        "{status}"
    );
    // Once /finalize removes the last finalizer, it goes.
    let mut done = terminating.clone();
    done["spec"]["finalizers"] = json!([]);
    http.put_json("/api/v1/namespaces/sub/finalize", &done).expect(200);
    assert!(
        wait_until(Duration::from_secs(20), || http.get("/api/v1/namespaces/sub").status
            == 404),
        "the namespace stayed after its finalizers were removed: {}",
        http.get("/api/v1/namespaces/sub").json
    );
}

/// A namespace's own finalizers (`metadata.finalizers`, another controller's) hold it once it is emptied, as its
/// `spec.finalizers` do; removing the last of them lets it go.
#[test]
fn namespaces_metadata_finalizers_hold_a_deleted_namespace() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(
        "/api/v1/namespaces",
        &json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "kept", "finalizers": ["example.com/keep"]}}),
    )
    .expect(201);
    http.post_json(&flunders("kept"), &flunder_in("kept", "a")).expect(201);
    http.delete("/api/v1/namespaces/kept").expect(200);
    assert!(
        wait_until(Duration::from_secs(20), || http.get(&flunders("kept")).json["items"]
            == json!([])),
        "the namespace's objects were not deleted"
    );
    // Emptied, it stays while its own finalizer does (the controller deletes it right after the objects, if at all).
    let held = !wait_until(Duration::from_secs(2), || {
        http.get("/api/v1/namespaces/kept").status == 404
    });
    assert!(held, "the namespace went while metadata.finalizers held it");
    let mut ns = http.get("/api/v1/namespaces/kept").expect(200).clone();
    assert_eq!(ns["status"]["phase"], "Terminating");
    ns["metadata"]["finalizers"] = json!([]);
    http.put_json("/api/v1/namespaces/kept", &ns).expect(200);
    assert!(
        wait_until(Duration::from_secs(20), || http.get("/api/v1/namespaces/kept").status
            == 404),
        "the namespace stayed after its own finalizer was removed"
    );
}
