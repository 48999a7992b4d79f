//! Server-side apply and managed fields, with kubectl as on a cluster and over HTTP with the
//! Status kube-apiserver answers.

use e2e::{flunder_v1beta1, str_at, Server, FLUNDERS_V1BETA1};
use reqwest::Method;
use serde_json::{json, Value};

const APPLY: &str = "application/apply-patch+yaml";

fn item(name: &str) -> String {
    format!("{FLUNDERS_V1BETA1}/{name}")
}

fn manifest(name: &str, spec: &str) -> String {
    format!("apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: {name}\nspec:\n{spec}")
}

/// `(manager, operation)` of every managedFields entry.
fn managers(obj: &Value) -> Vec<(String, String)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| (str_at(e, "/manager").to_owned(), str_at(e, "/operation").to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

fn apply(server: &Server, path_and_query: &str, body: &str) -> e2e::Reply {
    server
        .http()
        .send(Method::PATCH, path_and_query, Some(APPLY), body.as_bytes().to_vec())
}

#[test]
fn kubectl_applies_server_side_with_conflicts_and_force() {
    let server = Server::start(&["wardle"]);
    let first = manifest(
        "ssa",
        "  replicas: 2\n  referenceType: Flunder\n  flunderReference: other\n",
    );
    let out = server.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], &first);
    assert!(
        out.contains("flunder.wardle.example.com/ssa serverside-applied"),
        "{out}"
    );
    let obj = server.kubectl_json(&["get", "flunder", "ssa", "-o", "json", "--show-managed-fields"]);
    assert_eq!(managers(&obj), [("kubectl".to_owned(), "Apply".to_owned())], "{obj:#}");
    let fields = &obj["metadata"]["managedFields"][0];
    assert_eq!(fields["fieldsV1"]["f:spec"]["f:replicas"], json!({}), "{fields:#}");
    assert_eq!(fields["apiVersion"], "wardle.example.com/v1beta1");

    // Another manager changing a field kubectl owns conflicts, naming the manager and the field.
    let other = manifest("ssa", "  replicas: 5\n");
    let err = server.kubectl_stdin_err(&["apply", "--server-side", "--field-manager=scaler", "-f", "-"], &other);
    assert!(err.contains("Apply failed with 1 conflict"), "{err}");
    assert!(err.contains(r#"conflict with "kubectl": .spec.replicas"#), "{err}");
    let replicas = server.kubectl_ok(&["get", "flunder", "ssa", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(replicas, "2");
    // --force-conflicts takes the field over.
    server.kubectl_stdin_ok(
        &[
            "apply",
            "--server-side",
            "--field-manager=scaler",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &other,
    );
    let obj = server.kubectl_json(&["get", "flunder", "ssa", "-o", "json", "--show-managed-fields"]);
    assert_eq!(obj["spec"]["replicas"], 5);
    assert_eq!(
        managers(&obj),
        [
            ("kubectl".to_owned(), "Apply".to_owned()),
            ("scaler".to_owned(), "Apply".to_owned())
        ]
    );
    assert!(obj["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]
        .get("f:replicas")
        .is_none());

    // Fields kubectl no longer applies go, unless someone else owns them: replicas stays (scaler's).
    let trimmed = manifest("ssa", "  referenceType: Flunder\n  flunderReference: other\n");
    server.kubectl_stdin_ok(&["apply", "--server-side", "-f", "-"], &trimmed);
    let obj = server.kubectl_json(&["get", "flunder", "ssa", "-o", "json"]);
    assert_eq!(obj["spec"]["replicas"], 5, "{obj:#}");
    let fewer = manifest("ssa", "  referenceType: Flunder\n  flunderReference: other\n");
    let out = server.kubectl_stdin_ok(&["apply", "--server-side", "--field-manager=scaler", "-f", "-"], &fewer);
    assert!(out.contains("serverside-applied"), "{out}");
    let obj = server.kubectl_json(&["get", "flunder", "ssa", "-o", "json"]);
    assert!(
        obj["spec"].get("replicas").is_none(),
        "the last owner let go of replicas: {obj:#}"
    );
}

#[test]
fn client_side_apply_twice_removes_a_dropped_field() {
    let server = Server::start(&["wardle"]);
    let with = manifest(
        "csa",
        "  replicas: 2\n  referenceType: Flunder\n  flunderReference: other\n",
    );
    let out = server.kubectl_stdin_ok(&["apply", "-f", "-"], &with);
    assert!(out.contains("created"), "{out}");
    let without = manifest("csa", "  referenceType: Flunder\n  flunderReference: other\n");
    let out = server.kubectl_stdin_ok(&["apply", "-f", "-"], &without);
    assert!(out.contains("configured"), "{out}");
    let obj = server.kubectl_json(&["get", "flunder", "csa", "-o", "json", "--show-managed-fields"]);
    assert!(obj["spec"].get("replicas").is_none(), "{obj:#}");
    assert_eq!(obj["spec"]["flunderReference"], "other");
    let names: Vec<String> = managers(&obj).into_iter().map(|(m, _)| m).collect();
    assert!(names.contains(&"kubectl-client-side-apply".to_owned()), "{names:?}");
}

#[test]
fn apply_over_http_answers_as_kube_apiserver() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let body = manifest("h", "  replicas: 1\n");

    // fieldManager is required; force is for apply only; both are 422 on PatchOptions.
    let missing = apply(&server, &item("h"), &body);
    let status = missing.assert_status(422, "Invalid");
    assert_eq!(status["details"]["kind"], "PatchOptions", "{status:#}");
    assert_eq!(status["details"]["causes"][0]["field"], "fieldManager");
    assert_eq!(status["details"]["causes"][0]["reason"], "FieldValueRequired");
    let forced = http.patch(
        &format!("{}?force=true", item("h")),
        "application/merge-patch+json",
        &json!({}),
    );
    let status = forced.assert_status(422, "Invalid");
    assert_eq!(status["details"]["causes"][0]["field"], "force");
    let long = format!("{}?fieldManager={}", item("h"), "m".repeat(129));
    let status = apply(&server, &long, &body).assert_status(422, "Invalid").clone();
    assert_eq!(
        status["details"]["causes"][0]["reason"], "FieldValueTooLong",
        "{status:#}"
    );

    // Apply creates (201), then answers 200; a conflict is a 409 with a FieldManagerConflict cause.
    let created = apply(&server, &format!("{}?fieldManager=a", item("h")), &body);
    assert_eq!(created.expect(201)["spec"]["replicas"], 1, "{}", created.text);
    let again = apply(&server, &format!("{}?fieldManager=a", item("h")), &body);
    assert_eq!(
        again.expect(200)["metadata"]["resourceVersion"],
        created.json["metadata"]["resourceVersion"]
    );
    let conflict = apply(
        &server,
        &format!("{}?fieldManager=b", item("h")),
        &manifest("h", "  replicas: 3\n"),
    );
    let status = conflict.assert_status(409, "Conflict");
    assert_eq!(
        str_at(status, "/message"),
        r#"Apply failed with 1 conflict: conflict with "a": .spec.replicas"#
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"a\"", "field": ".spec.replicas"}])
    );
    let forced = apply(
        &server,
        &format!("{}?fieldManager=b&force=true", item("h")),
        &manifest("h", "  replicas: 3\n"),
    );
    assert_eq!(forced.expect(200)["spec"]["replicas"], 3);

    // An update by another manager takes the field it changes; the time and API version are recorded.
    let mut current = http.get(&item("h")).expect(200).clone();
    current["spec"]["replicas"] = json!(4);
    let updated = http.put_json(&format!("{}?fieldManager=editor", item("h")), &current);
    let entries = updated.expect(200)["metadata"]["managedFields"].clone();
    let editor = entries
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == "editor"))
        .cloned()
        .unwrap_or_else(|| panic!("no editor in {entries:#}"));
    assert_eq!(editor["operation"], "Update");
    assert_eq!(editor["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    assert!(!str_at(&editor, "/time").is_empty());
    assert!(
        entries.as_array().expect("entries").iter().all(|e| e["manager"] != "b"),
        "{entries:#}"
    );

    // The configuration must be this object: name, apiVersion and kind.
    let other_name = apply(
        &server,
        &format!("{}?fieldManager=a", item("h")),
        &manifest("x", "  replicas: 1\n"),
    );
    other_name.assert_status(400, "BadRequest");
    let no_kind = apply(
        &server,
        &format!("{}?fieldManager=a", item("h")),
        "apiVersion: wardle.example.com/v1beta1\nmetadata:\n  name: h\n",
    );
    no_kind.assert_status(400, "BadRequest");
    let not_yaml = apply(&server, &format!("{}?fieldManager=a", item("h")), "spec: [unclosed");
    not_yaml.assert_status(400, "BadRequest");
    // A stale resourceVersion in the configuration is a conflict.
    let stale = apply(
        &server,
        &format!("{}?fieldManager=a", item("h")),
        "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: h\n  resourceVersion: \"1\"\n",
    );
    stale.assert_status(409, "Conflict");
}

#[test]
fn creates_and_status_updates_record_their_managers() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    let created = http.post_json(
        &format!("{FLUNDERS_V1BETA1}?fieldManager=maker"),
        &flunder_v1beta1("m", "x"),
    );
    let created = created.expect(201).clone();
    assert_eq!(
        managers(&created),
        [("maker".to_owned(), "Update".to_owned())],
        "{created:#}"
    );
    // The status is not the main resource's to own; /status records its writer with the subresource.
    let status = http.patch(
        &format!("{}/status?fieldManager=controller", item("m")),
        "application/merge-patch+json",
        &json!({"status": {"replicas": 1}}),
    );
    let entries = status.expect(200)["metadata"]["managedFields"].clone();
    let controller = entries
        .as_array()
        .and_then(|a| a.iter().find(|e| e["manager"] == "controller"))
        .cloned()
        .unwrap_or_else(|| panic!("no controller in {entries:#}"));
    assert_eq!(controller["subresource"], "status");
    assert_eq!(controller["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
    // kubectl names itself.
    server.kubectl_stdin_ok(&["create", "-f", "-"], &manifest("k", "  replicas: 1\n"));
    let obj = server.kubectl_json(&["get", "flunder", "k", "-o", "json", "--show-managed-fields"]);
    assert_eq!(
        managers(&obj),
        [("kubectl-create".to_owned(), "Update".to_owned())],
        "{obj:#}"
    );
}

/// Fields are owned in the version they were written in: an apply in v1beta1 that changes the field a v1alpha1
/// applier owns (`.spec.reference` there, `.spec.flunderReference` here) conflicts, as on kube-apiserver, and once
/// forced the field changes hands.
#[test]
fn apply_conflicts_across_versions() {
    let server = Server::start(&["wardle"]);
    let alpha = "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: cross\nspec:\n  \
                 reference: first\n  referenceType: Flunder\n";
    let path = format!("{}/cross?fieldManager=alpha", e2e::FLUNDERS_V1ALPHA1);
    apply(&server, &path, alpha).expect(201);

    let beta = manifest("cross", "  flunderReference: second\n");
    let conflict = apply(&server, &format!("{}?fieldManager=beta", item("cross")), &beta);
    let status = conflict.assert_status(409, "Conflict");
    let causes = status["details"]["causes"].as_array().expect("causes");
    assert!(
        causes
            .iter()
            .any(|c| c["field"] == ".spec.reference" && c["reason"] == "FieldManagerConflict"),
        "{status:#}"
    );

    let forced = apply(
        &server,
        &format!("{}?fieldManager=beta&force=true", item("cross")),
        &beta,
    );
    let obj = forced.expect(200);
    assert_eq!(obj["spec"]["flunderReference"], "second", "{obj:#}");
    let entries = obj["metadata"]["managedFields"].as_array().expect("managedFields");
    let alpha_entry = entries.iter().find(|e| e["manager"] == "alpha").expect("alpha");
    assert!(
        alpha_entry["fieldsV1"]["f:spec"].get("f:reference").is_none(),
        "{alpha_entry:#}"
    );
    let beta_entry = entries.iter().find(|e| e["manager"] == "beta").expect("beta");
    assert_eq!(beta_entry["apiVersion"], "wardle.example.com/v1beta1");
    assert!(
        beta_entry["fieldsV1"]["f:spec"].get("f:flunderReference").is_some(),
        "{beta_entry:#}"
    );
}
