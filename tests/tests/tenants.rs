//! Tenants (issue 11, part 1): subdirectories of the plugin directory are tenants served under `/tenants/<t>/`, each
//! with its own discovery, objects (under its own key prefix), namespaces and RBAC.

use std::time::Duration;

use e2e::{fischer_v1alpha1, flunder_v1beta1, wait_until, Server};
use serde_json::json;

const FLUNDERS: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";

#[test]
fn tenants_have_their_own_discovery_objects_and_rbac() {
    let server = Server::start(&["wardle", "t1/wardle", "t2/wardle", "t3/partial"]);
    let http = server.http();

    // Discovery differs per tenant.
    let groups = |prefix: &str| -> Vec<String> {
        http.get(&format!("{prefix}/apis")).expect(200)["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(groups("/tenants/t1").contains(&"wardle.example.com".to_owned()));
    assert!(!groups("/tenants/t3").contains(&"wardle.example.com".to_owned()));
    assert!(groups("/tenants/t3").contains(&"partial.example.com".to_owned()));
    http.get("/tenants/nope/apis").assert_status(404, "NotFound");

    // The same name in two tenants is two objects; t1's never appear in t2 or at the root.
    http.post_json(&format!("/tenants/t1{FLUNDERS}"), &flunder_v1beta1("same", "t1"))
        .expect(201);
    http.post_json(&format!("/tenants/t2{FLUNDERS}"), &flunder_v1beta1("same", "t2"))
        .expect(201);
    let one = http.get(&format!("/tenants/t1{FLUNDERS}/same")).expect(200).clone();
    let two = http.get(&format!("/tenants/t2{FLUNDERS}/same")).expect(200).clone();
    assert_ne!(one["metadata"]["uid"], two["metadata"]["uid"]);
    assert_eq!(one["spec"]["flunderReference"], "t1");
    http.get(&format!("{FLUNDERS}/same")).assert_status(404, "NotFound");
    assert_eq!(http.get(FLUNDERS).expect(200)["items"], json!([]));

    // A BanFlunder Fischer in t1 does not ban the name in t2.
    http.post_json(
        "/tenants/t1/apis/wardle.example.com/v1alpha1/fischers",
        &fischer_v1alpha1("ban", &["banned"]),
    )
    .expect(201);
    http.post_json(&format!("/tenants/t1{FLUNDERS}"), &flunder_v1beta1("banned", "x"))
        .assert_status(403, "Forbidden");
    http.post_json(&format!("/tenants/t2{FLUNDERS}"), &flunder_v1beta1("banned", "x"))
        .expect(201);

    // Each tenant has its namespaces and RBAC: alice, bound to admin in t1, has rights there only.
    http.get("/tenants/t2/api/v1/namespaces/default").expect(200);
    let binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "alice-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}]
    });
    http.post_json(
        "/tenants/t1/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &binding,
    )
    .expect(201);
    let alice = server.https_as("alice", &[]);
    assert!(
        wait_until(Duration::from_secs(10), || alice
            .get(&format!("/tenants/t1{FLUNDERS}"))
            .status
            == 200),
        "alice never got her rights in t1"
    );
    alice
        .get(&format!("/tenants/t2{FLUNDERS}"))
        .assert_status(403, "Forbidden");
    alice.get(FLUNDERS).assert_status(403, "Forbidden");

    // kubectl with a kubeconfig whose server ends in /tenants/t1.
    let kubeconfig = server.user_kubeconfig("alice", &[]);
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    let text = text.replace(&server.secure_url(), &format!("{}/tenants/t1", server.secure_url()));
    std::fs::write(&kubeconfig, text).unwrap();
    let kc = format!("--kubeconfig={}", kubeconfig.display());
    let table = server.kubectl_ok(&[&kc, "get", "flunders"]);
    assert!(table.contains("same") && !table.contains("banned"), "{table}");
}
