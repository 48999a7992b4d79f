//! ServiceAccounts, built in (core v1, short name `sa`), and what kube-controller-manager keeps in every namespace:
//! a `default` service account and the `kube-root-ca.crt` ConfigMap holding the CA that verifies the server, made
//! again when deleted, its bundle put back when changed.

use std::time::Duration;

use e2e::{wait_until, Server};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

#[test]
fn service_accounts_kubectl_creates_lists_and_deletes_them() {
    let server = Server::start(&[]);
    server.kubectl_ok(&["create", "serviceaccount", "builder"]);
    let table = server.kubectl_ok(&["get", "sa"]);
    let header = table.lines().next().unwrap_or_default();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "AGE"],
        "{table}"
    );
    assert!(table.lines().any(|l| l.starts_with("builder ")), "{table}");
    let sa = server.kubectl_json(&["get", "serviceaccount", "builder", "-o", "json"]);
    assert_eq!(sa["apiVersion"], "v1");
    assert_eq!(sa["kind"], "ServiceAccount");
    assert_eq!(sa["metadata"]["namespace"], "default");

    // Its fields are kept; unknown ones refused, names checked as kube does.
    let http = server.http();
    let created = http
        .post_json(
            "/api/v1/namespaces/default/serviceaccounts",
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "puller"},
                "automountServiceAccountToken": false, "imagePullSecrets": [{"name": "registry"}],
                "secrets": [{"name": "token-a"}]}),
        )
        .expect(201)
        .clone();
    assert_eq!(created["automountServiceAccountToken"], false);
    assert_eq!(created["imagePullSecrets"], json!([{"name": "registry"}]));
    let status = http
        .post_json(
            "/api/v1/namespaces/default/serviceaccounts",
            &json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "Bad_Name"}}),
        )
        .assert_status(422, "Invalid")
        .clone();
    assert_eq!(status["details"]["causes"][0]["field"], "metadata.name");
    let err = server.kubectl_stdin_err(
        &["create", "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "x"}, "automount": true}"#,
    );
    assert!(err.contains("unknown field \"automount\""), "{err}");

    server.kubectl_ok(&["delete", "sa", "builder"]);
    let err = server.kubectl_err(&["get", "sa", "builder"]);
    assert!(err.contains("serviceaccounts \"builder\" not found"), "{err}");
}

#[test]
fn service_accounts_every_namespace_has_a_default_one_and_the_root_ca() {
    let server = Server::start(&[]);
    let http = server.http();
    let ca = server.ca_pem();
    let has = |path: &str| http.get(path).status == 200;
    // The initial namespaces, and one made now.
    server.kubectl_ok(&["create", "namespace", "team-a"]);
    for ns in ["default", "kube-system", "kube-public", "team-a"] {
        let account = format!("/api/v1/namespaces/{ns}/serviceaccounts/default");
        assert!(wait_until(DEADLINE, || has(&account)), "{account}");
        let config_map = format!("/api/v1/namespaces/{ns}/configmaps/kube-root-ca.crt");
        assert!(wait_until(DEADLINE, || has(&config_map)), "{config_map}");
        let cm = http.get(&config_map).expect(200).clone();
        assert_eq!(cm["data"]["ca.crt"], ca.as_str(), "{ns}");
        assert!(cm["metadata"]["annotations"]["kubernetes.io/description"]
            .as_str()
            .is_some_and(|d| d.starts_with("Contains a CA bundle")));
    }
    // The bundle verifies the secure port.
    let secure = e2e::Http::secure(server.secure_url(), &ca, None);
    secure.get("/version").expect(200);

    // Deleted, they come back; a changed bundle is put back, the rest of the change kept.
    server.kubectl_ok(&["delete", "serviceaccount", "default", "-n", "team-a"]);
    assert!(wait_until(DEADLINE, || has(
        "/api/v1/namespaces/team-a/serviceaccounts/default"
    )));
    server.kubectl_ok(&["delete", "configmap", "kube-root-ca.crt", "-n", "team-a"]);
    assert!(wait_until(DEADLINE, || has(
        "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt"
    )));
    http.patch(
        "/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt",
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"mine": "yes"}}, "data": {"ca.crt": "tampered", "extra": "kept"}}),
    )
    .expect(200);
    assert!(wait_until(DEADLINE, || {
        let cm = http
            .get("/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt")
            .expect(200)
            .clone();
        cm["data"]["ca.crt"] == ca.as_str()
            && cm["data"]["extra"] == "kept"
            && cm["metadata"]["labels"]["mine"] == "yes"
    }));

    // A deleted namespace is emptied of them and goes (they are not made again in it).
    server.kubectl_ok(&["delete", "namespace", "team-a", "--wait=true", "--timeout=60s"]);
    http.get("/api/v1/namespaces/team-a").assert_status(404, "NotFound");
    let left = http.get("/api/v1/serviceaccounts").expect(200).clone();
    let namespaces: Vec<&str> = left["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|sa| sa["metadata"]["namespace"].as_str())
        .collect();
    assert!(!namespaces.contains(&"team-a"), "{namespaces:?}");
}

#[test]
fn service_accounts_exist_in_every_tenant() {
    let server = Server::start(&[]);
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        r#"{"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "acme"}}"#,
    );
    let http = server.http();
    let path = "/tenants/acme/api/v1/namespaces/default/serviceaccounts/default";
    assert!(wait_until(DEADLINE, || http.get(path).status == 200), "{path}");
    assert!(wait_until(DEADLINE, || http
        .get("/tenants/acme/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt")
        .status
        == 200));
}
