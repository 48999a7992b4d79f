//! Raw HTTP behaviour: status codes and `Status` errors, version conversion, and the `partial` plugin's verbs.

use e2e::{flunder_v1beta1, str_at, Reply, Server, FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1, NOTES_V1};
use reqwest::Method;
use serde_json::{json, Value};

/// The `field` values of a Status' `details.causes`.
fn cause_fields(status: &Value) -> Vec<&str> {
    status["details"]["causes"]
        .as_array()
        .map(|causes| causes.iter().filter_map(|cause| cause["field"].as_str()).collect())
        .unwrap_or_default()
}

/// Asserts that the server still answers `/healthz` with `ok` (it did not panic or wedge).
fn assert_healthy(server: &Server) {
    let reply = server.http().get("/healthz");
    assert_eq!(
        (reply.status, reply.text.trim()),
        (200, "ok"),
        "healthz after bad input"
    );
}

fn note(name: &str, text: Option<&str>) -> Value {
    let mut note = json!({
        "apiVersion": "partial.example.com/v1",
        "kind": "Note",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {},
    });
    if let Some(text) = text {
        note["spec"]["text"] = json!(text);
    }
    note
}

#[test]
fn health_endpoints_answer_ok() {
    let server = Server::start(&["wardle"]);
    for path in ["/healthz", "/livez", "/readyz"] {
        let reply = server.http().get(path);
        assert_eq!((reply.status, reply.text.trim()), (200, "ok"), "{path}");
    }
}

#[test]
fn an_unknown_tenant_answers_404_with_a_status() {
    let server = Server::start(&["wardle"]);
    for path in [
        "/tenants/nope/apis",
        "/tenants/nope/apis/wardle.example.com/v1beta1/flunders",
        "/tenants/nope",
    ] {
        let status = server.http().get(path).assert_status(404, "NotFound").clone();
        assert_eq!(status["message"], "tenants \"nope\" not found", "{path}");
    }
    // The root's flunders are not reachable through a tenant path.
    server
        .http()
        .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("root-only", "x"))
        .expect(201);
    server
        .http()
        .get("/tenants/nope/apis/wardle.example.com/v1beta1/namespaces/default/flunders/root-only")
        .assert_status(404, "NotFound");
}

#[test]
fn each_version_url_serves_the_converted_object() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let alpha = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "via-alpha"},
        "spec": {"reference": "foo"},
    });
    let created = http.post_json(FLUNDERS_V1ALPHA1, &alpha);
    let created = created.expect(201);
    assert_eq!(
        str_at(created, "/spec/referenceType"),
        "Flunder",
        "defaulted on create: {created:#}"
    );

    let beta = http.get(&format!("{FLUNDERS_V1BETA1}/via-alpha"));
    let beta = beta.expect(200);
    assert_eq!(str_at(beta, "/apiVersion"), "wardle.example.com/v1beta1", "{beta:#}");
    assert_eq!(str_at(beta, "/kind"), "Flunder", "{beta:#}");
    assert_eq!(str_at(beta, "/spec/flunderReference"), "foo", "{beta:#}");
    assert_eq!(str_at(beta, "/spec/referenceType"), "Flunder", "{beta:#}");
    assert_eq!(beta["metadata"]["uid"], created["metadata"]["uid"], "the same object");

    let fischer_ref = json!({
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": "via-beta"},
        "spec": {"fischerReference": "fish", "referenceType": "Fischer"},
    });
    http.post_json(FLUNDERS_V1BETA1, &fischer_ref).expect(201);
    let alpha = http.get(&format!("{FLUNDERS_V1ALPHA1}/via-beta"));
    let alpha = alpha.expect(200);
    assert_eq!(str_at(alpha, "/apiVersion"), "wardle.example.com/v1alpha1", "{alpha:#}");
    assert_eq!(str_at(alpha, "/spec/reference"), "fish", "{alpha:#}");
    assert_eq!(str_at(alpha, "/spec/referenceType"), "Fischer", "{alpha:#}");

    let list = http.get(FLUNDERS_V1ALPHA1);
    let list = list.expect(200);
    assert_eq!(str_at(list, "/kind"), "FlunderList", "{list:#}");
    assert_eq!(str_at(list, "/apiVersion"), "wardle.example.com/v1alpha1", "{list:#}");
    let items = list["items"].as_array().cloned().unwrap_or_default();
    assert_eq!(items.len(), 2, "{list:#}");
    assert!(
        items
            .iter()
            .all(|item| str_at(item, "/apiVersion") == "wardle.example.com/v1alpha1"),
        "{list:#}"
    );
}

#[test]
fn partial_notes_can_be_created_read_and_listed() {
    let server = Server::start(&["partial"]);
    let http = server.http();
    let created = http.post_json(NOTES_V1, &note("hello", Some("hi there")));
    let created = created.expect(201);
    assert_eq!(str_at(created, "/spec/text"), "hi there", "{created:#}");
    assert!(!str_at(created, "/metadata/uid").is_empty(), "{created:#}");

    let got = http.get(&format!("{NOTES_V1}/hello"));
    assert_eq!(got.expect(200)["metadata"]["uid"], created["metadata"]["uid"]);
    let list = http.get(NOTES_V1);
    let names: Vec<&str> = list.expect(200)["items"]
        .as_array()
        .map(|items| items.iter().map(|item| str_at(item, "/metadata/name")).collect())
        .unwrap_or_default();
    assert_eq!(names, ["hello"], "{}", list.text);

    let listed = server.kubectl_ok(&["get", "notes", "-o", "name"]);
    assert_eq!(listed.trim(), "note.partial.example.com/hello");
}

#[test]
fn partial_note_validation_rejects_missing_and_long_text() {
    let server = Server::start(&["partial"]);
    let http = server.http();
    let missing = http.post_json(NOTES_V1, &note("empty", None));
    let status = missing.assert_status(422, "Invalid");
    assert!(
        cause_fields(status).contains(&"spec.text"),
        "a cause names spec.text: {status:#}"
    );
    assert_eq!(status["details"]["name"], "empty", "{status:#}");

    let long = "x".repeat(101);
    let too_long = http.post_json(NOTES_V1, &note("long", Some(&long)));
    let status = too_long.assert_status(422, "Invalid");
    assert!(
        cause_fields(status).contains(&"spec.text"),
        "a cause names spec.text: {status:#}"
    );

    let exactly = "y".repeat(100);
    http.post_json(NOTES_V1, &note("limit", Some(&exactly))).expect(201);
    http.get(&format!("{NOTES_V1}/empty")).assert_status(404, "NotFound");
}

#[test]
fn partial_notes_reject_update_patch_and_delete_with_method_not_allowed() {
    let server = Server::start(&["partial"]);
    let http = server.http();
    let created = http.post_json(NOTES_V1, &note("fixed", Some("original")));
    let mut changed = created.expect(201).clone();
    changed["spec"]["text"] = json!("changed");
    let url = format!("{NOTES_V1}/fixed");

    http.put_json(&url, &changed).assert_status(405, "MethodNotAllowed");
    http.patch(
        &url,
        "application/merge-patch+json",
        &json!({"spec": {"text": "changed"}}),
    )
    .assert_status(405, "MethodNotAllowed");
    http.delete(&url).assert_status(405, "MethodNotAllowed");
    http.delete(NOTES_V1).assert_status(405, "MethodNotAllowed");

    let after = http.get(&url);
    assert_eq!(
        str_at(after.expect(200), "/spec/text"),
        "original",
        "nothing was written"
    );

    let stderr = server.kubectl_err(&["delete", "note", "fixed"]);
    assert!(stderr.contains("(MethodNotAllowed)"), "{stderr}");
}

#[test]
fn malformed_json_is_a_bad_request() {
    let server = Server::start(&["wardle"]);
    let reply = server.http().send(
        Method::POST,
        FLUNDERS_V1BETA1,
        Some("application/json"),
        br#"{"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder", "metadata": {"#.to_vec(),
    );
    reply.assert_status(400, "BadRequest");
    assert_healthy(&server);
}

#[test]
fn unknown_field_with_strict_validation_is_a_bad_request_naming_the_field() {
    let server = Server::start(&["wardle"]);
    let mut flunder = flunder_v1beta1("strict", "x");
    flunder["spec"]["bogus"] = json!(1);
    let reply = server
        .http()
        .post_json(&format!("{FLUNDERS_V1BETA1}?fieldValidation=Strict"), &flunder);
    let status = reply.assert_status(400, "BadRequest");
    let message = str_at(status, "/message");
    assert!(
        message.contains(r#"unknown field "spec.bogus""#),
        "the message names the field: {status:#}"
    );
    server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}/strict"))
        .assert_status(404, "NotFound");

    // Without Strict the unknown field is dropped (and the default, Warn, reports it in a Warning header).
    server
        .http()
        .post_json(&format!("{FLUNDERS_V1BETA1}?fieldValidation=Ignore"), &flunder)
        .expect(201);
    let stored = server.http().get(&format!("{FLUNDERS_V1BETA1}/strict"));
    assert!(
        stored.expect(200).pointer("/spec/bogus").is_none(),
        "unknown fields are pruned: {}",
        stored.text
    );
    assert_healthy(&server);
}

#[test]
fn invalid_names_are_unprocessable_with_a_metadata_name_cause() {
    // sample-apiserver validates names with the path-segment rules (`ValidatePathSegmentName`): a name may not be `.`
    // or `..` and may not contain `/` or `%`; a name (or generateName) is required.
    let server = Server::start(&["wardle"]);
    for name in ["bad/name", "bad%name", "..", ""] {
        let mut flunder = flunder_v1beta1(name, "x");
        if name.is_empty() {
            flunder["metadata"].as_object_mut().map(|meta| meta.remove("name"));
        }
        let reply = server.http().post_json(FLUNDERS_V1BETA1, &flunder);
        let status = reply.assert_status(422, "Invalid");
        assert!(
            cause_fields(status).contains(&"metadata.name"),
            "{name:?}: a cause names metadata.name: {status:#}"
        );
        assert_eq!(
            status["details"]["kind"], "Flunder",
            "Invalid details carry the kind: {status:#}"
        );
        assert_eq!(status["details"]["group"], "wardle.example.com", "{status:#}");
    }
    let list = server.http().get(FLUNDERS_V1BETA1);
    assert_eq!(
        list.expect(200)["items"],
        json!([]),
        "nothing was created: {}",
        list.text
    );
    assert_healthy(&server);
}

#[test]
fn invalid_spec_is_unprocessable_with_spec_causes() {
    let server = Server::start(&["wardle"]);
    let both = json!({
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": "both-refs"},
        "spec": {"flunderReference": "a", "fischerReference": "b", "referenceType": "Flunder"},
    });
    let status = server.http().post_json(FLUNDERS_V1BETA1, &both);
    let status = status.assert_status(422, "Invalid");
    assert!(
        cause_fields(status).iter().any(|field| field.starts_with("spec.")),
        "{status:#}"
    );

    let mut bad_type = flunder_v1beta1("bad-type", "a");
    bad_type["spec"]["referenceType"] = json!("Goldfish");
    let status = server.http().post_json(FLUNDERS_V1BETA1, &bad_type);
    let status = status.assert_status(422, "Invalid");
    assert!(cause_fields(status).contains(&"spec.referenceType"), "{status:#}");
    assert_healthy(&server);
}

#[test]
fn oversized_body_is_rejected_with_request_entity_too_large() {
    let server = Server::start(&["wardle"]);
    let mut flunder = flunder_v1beta1("huge", "x");
    flunder["metadata"]["annotations"] = json!({"filler": "z".repeat(3 * 1024 * 1024 + 1)});
    let body = flunder.to_string().into_bytes();
    assert!(body.len() > 3 * 1024 * 1024);
    let reply: Reply = server
        .http()
        .try_send(Method::POST, FLUNDERS_V1BETA1, Some("application/json"), body)
        .unwrap_or_else(|e| panic!("the server must answer 413, not drop the connection: {e:#}"));
    reply.assert_status(413, "RequestEntityTooLarge");
    server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}/huge"))
        .assert_status(404, "NotFound");
    assert_healthy(&server);
}

#[test]
fn invalid_label_selector_is_a_bad_request() {
    let server = Server::start(&["wardle"]);
    let reply = server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}?labelSelector=a%20in%20("));
    reply.assert_status(400, "BadRequest");
    let reply = server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}?fieldSelector=spec.nothing%3Dx"));
    reply.assert_status(400, "BadRequest");
    assert_healthy(&server);
}

#[test]
fn update_with_a_stale_resource_version_conflicts() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let url = format!("{FLUNDERS_V1BETA1}/contended");
    let created = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("contended", "v1"));
    let stale = created.expect(201).clone();

    let mut fresh = stale.clone();
    fresh["spec"]["flunderReference"] = json!("v2");
    let updated = http.put_json(&url, &fresh);
    let updated = updated.expect(200);
    assert_eq!(str_at(updated, "/spec/flunderReference"), "v2", "{updated:#}");
    assert_ne!(
        str_at(updated, "/metadata/resourceVersion"),
        str_at(&stale, "/metadata/resourceVersion"),
        "an update bumps the resourceVersion"
    );

    let mut late = stale.clone();
    late["spec"]["flunderReference"] = json!("v3");
    let status = http.put_json(&url, &late);
    let status = status.assert_status(409, "Conflict");
    assert_eq!(status["details"]["name"], "contended", "{status:#}");
    assert_eq!(status["details"]["kind"], "flunders", "{status:#}");
    assert_eq!(
        str_at(http.get(&url).expect(200), "/spec/flunderReference"),
        "v2",
        "the stale write was refused"
    );

    let mut unconditional = stale;
    unconditional["spec"]["flunderReference"] = json!("v4");
    unconditional["metadata"]
        .as_object_mut()
        .map(|meta| meta.remove("resourceVersion"));
    http.put_json(&url, &unconditional).assert_status(422, "Invalid");

    let missing = flunder_v1beta1("never-created", "x");
    http.put_json(&format!("{FLUNDERS_V1BETA1}/never-created"), &missing)
        .assert_status(404, "NotFound");
    assert_healthy(&server);
}

#[test]
fn missing_object_is_not_found_with_details() {
    let server = Server::start(&["wardle"]);
    let reply = server.http().get(&format!("{FLUNDERS_V1BETA1}/nobody"));
    let status = reply.assert_status(404, "NotFound");
    assert_eq!(status["details"]["name"], "nobody", "{status:#}");
    assert_eq!(status["details"]["group"], "wardle.example.com", "{status:#}");
    assert_eq!(status["details"]["kind"], "flunders", "{status:#}");
    assert_eq!(
        str_at(status, "/message"),
        r#"flunders.wardle.example.com "nobody" not found"#,
        "{status:#}"
    );

    server
        .http()
        .delete(&format!("{FLUNDERS_V1BETA1}/nobody"))
        .assert_status(404, "NotFound");
    let unknown = server
        .http()
        .get("/apis/wardle.example.com/v1beta1/namespaces/default/nothings");
    assert_eq!(unknown.status, 404, "an unknown resource: {}", unknown.text);
    assert_healthy(&server);
}

/// The server listens before its tenants and plugins are loaded, as kube-apiserver does: while start-up is held (a
/// tenant's `tenant.yaml` is a FIFO that nobody has written yet), `/livez` is ok, `/readyz` and `/healthz` fail,
/// and any other request gets a 503 ServiceUnavailable `Status` with `Retry-After`; once start-up goes on, the
/// server is ready and serves the default tenant's plugins and the tenant. It used to refuse connections until then
/// (~25 s with the example plugins on a cold compile cache).
#[test]
fn the_server_answers_starting_until_its_tenants_are_loaded() {
    use std::process::{Command, Stdio};
    use std::time::Duration;

    let dir = tempfile::tempdir().expect("tempdir");
    let plugins = dir.path().join("plugins");
    std::fs::create_dir_all(plugins.join("t1")).expect("tenant dir");
    let wardle = e2e::target_dir().join("plugins/wardle.wasm");
    std::fs::copy(&wardle, plugins.join("wardle.wasm")).expect("copy wardle (run scripts/build-plugins.sh)");
    let gate = plugins.join("t1/tenant.yaml");
    let made = Command::new("mkfifo").arg(&gate).status().expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    let port = e2e::free_port().expect("a free port");
    let log_path = dir.path().join("server.log");
    let log = std::fs::File::create(&log_path).expect("log file");
    let child = Command::new(e2e::server_binary())
        .arg("serve")
        .arg("--plugin-dir")
        .arg(&plugins)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args(["--insecure-port", &port.to_string(), "--secure-port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start the server");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _child = Kill(child);
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .expect("client");
    let get = |path: &str| client.get(format!("http://127.0.0.1:{port}{path}")).send();

    let alive = e2e::wait_until(Duration::from_secs(60), || {
        get("/livez").is_ok_and(|r| r.status().as_u16() == 200)
    });
    assert!(alive, "no /livez within 60 s; the server's log:\n{}", log());
    for endpoint in ["readyz", "healthz"] {
        let reply = get(&format!("/{endpoint}")).expect(endpoint);
        assert_eq!(reply.status().as_u16(), 500, "/{endpoint} while starting");
        let text = reply.text().expect("body");
        assert!(
            text.contains("[-]started failed") && text.contains(&format!("{endpoint} check failed")),
            "{text}"
        );
    }
    let reply = get("/apis/wardle.example.com/v1alpha1/namespaces/default/flunders").expect("list");
    assert_eq!(reply.status().as_u16(), 503);
    assert_eq!(
        reply.headers().get("retry-after").and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let status: Value = reply.json().expect("a Status");
    assert_eq!(
        (str_at(&status, "/kind"), str_at(&status, "/reason")),
        ("Status", "ServiceUnavailable"),
        "{status}"
    );
    assert_eq!(status["code"], 503);

    // Start-up goes on: the tenant's configuration is read (opening the FIFO to write waits for the server's read).
    std::fs::write(&gate, "{}\n").expect("write the tenant's configuration");
    let ready = e2e::wait_until(Duration::from_secs(60), || {
        get("/readyz").is_ok_and(|r| r.status().as_u16() == 200)
    });
    assert!(ready, "not ready within 60 s; the server's log:\n{}", log());
    for path in [
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
        "/tenants/t1/api",
    ] {
        let reply = get(path).expect(path);
        assert_eq!(reply.status().as_u16(), 200, "{path}");
    }
}
