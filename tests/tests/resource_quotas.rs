//! ResourceQuotas, built in (core v1, short name `quota`): object counts enforced at create with kube's message,
//! `status.used` counted by the server's quota controller (again after deletions), kube's columns and validation.

use std::time::Duration;

use e2e::{wait_until, Server};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(30);
const FLUNDERS: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
const QUOTA: &str = "/api/v1/namespaces/default/resourcequotas/flunders";

#[test]
fn resource_quotas_refuse_the_create_past_a_count_with_kubes_message() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    server.kubectl_ok(&[
        "create",
        "quota",
        "flunders",
        "--hard=count/flunders.wardle.example.com=2",
    ]);
    // Counted by the controller (none yet).
    assert!(wait_until(DEADLINE, || {
        http.get(QUOTA).expect(200)["status"]["used"]["count/flunders.wardle.example.com"] == "0"
    }));
    for name in ["f1", "f2"] {
        http.post_json(FLUNDERS, &e2e::flunder_v1beta1(name, "x")).expect(201);
    }
    let status = http
        .post_json(FLUNDERS, &e2e::flunder_v1beta1("f3", "x"))
        .assert_status(403, "Forbidden")
        .clone();
    assert_eq!(
        status["message"],
        "flunders.wardle.example.com \"f3\" is forbidden: exceeded quota: flunders, requested: \
         count/flunders.wardle.example.com=1, used: count/flunders.wardle.example.com=2, limited: \
         count/flunders.wardle.example.com=2"
    );
    let err = server.kubectl_stdin_err(&["create", "-f", "-"], &e2e::flunder_v1beta1("f4", "x").to_string());
    assert!(err.contains("exceeded quota: flunders"), "{err}");
    // kube's columns.
    let table = server.kubectl_ok(&["get", "quota"]);
    let header: Vec<&str> = table.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "REQUEST", "LIMIT", "AGE"], "{table}");
    assert!(table.contains("count/flunders.wardle.example.com: 2/2"), "{table}");
    // A deletion gives the room back once counted again.
    http.delete(&format!("{FLUNDERS}/f1")).expect(200);
    assert!(wait_until(DEADLINE, || {
        http.get(QUOTA).expect(200)["status"]["used"]["count/flunders.wardle.example.com"] == "1"
    }));
    http.post_json(FLUNDERS, &e2e::flunder_v1beta1("f5", "x")).expect(201);
    // A dry run is checked, not counted.
    http.post_json(&format!("{FLUNDERS}?dryRun=All"), &e2e::flunder_v1beta1("f6", "x"))
        .assert_status(403, "Forbidden");
    // Raising the limit is counted at once.
    http.patch(
        QUOTA,
        "application/merge-patch+json",
        &json!({"spec": {"hard": {"count/flunders.wardle.example.com": "3"}}}),
    )
    .expect(200);
    assert!(wait_until(DEADLINE, || {
        http.get(QUOTA).expect(200)["status"]["hard"]["count/flunders.wardle.example.com"] == "3"
    }));
    http.post_json(FLUNDERS, &e2e::flunder_v1beta1("f6", "x")).expect(201);
}

#[test]
fn resource_quotas_count_what_a_namespace_holds_under_kubes_older_names() {
    let server = Server::start(&[]);
    server.kubectl_ok(&["create", "namespace", "team"]);
    let http = server.http();
    // The namespace holds its root CA ConfigMap already: one of two.
    assert!(wait_until(DEADLINE, || http
        .get("/api/v1/namespaces/team/configmaps/kube-root-ca.crt")
        .status
        == 200));
    server.kubectl_ok(&["create", "quota", "small", "-n", "team", "--hard=configmaps=2,cpu=1"]);
    assert!(wait_until(DEADLINE, || {
        let q = http
            .get("/api/v1/namespaces/team/resourcequotas/small")
            .expect(200)
            .clone();
        q["status"]["used"] == json!({"configmaps": "1", "cpu": "0"})
    }));
    server.kubectl_ok(&["create", "configmap", "one", "-n", "team"]);
    let err = server.kubectl_err(&["create", "configmap", "two", "-n", "team"]);
    assert!(
        err.contains("exceeded quota: small, requested: configmaps=1, used: configmaps=2, limited: configmaps=2"),
        "{err}"
    );
    // Other namespaces are not limited.
    server.kubectl_ok(&["create", "configmap", "two"]);
    // Names and quantities are checked as kube checks them.
    let status = http
        .post_json(
            "/api/v1/namespaces/team/resourcequotas",
            &json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "bad"},
                "spec": {"hard": {"widgets": "1", "secrets": "-1", "count/configmaps": "1.5"}}}),
        )
        .assert_status(422, "Invalid")
        .clone();
    let fields: Vec<&str> = status["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["field"].as_str())
        .collect();
    assert_eq!(
        fields,
        [
            "spec.hard[count/configmaps]",
            "spec.hard[secrets]",
            "spec.hard[widgets]",
            "spec.hard[widgets]"
        ],
        "{status}"
    );
}
