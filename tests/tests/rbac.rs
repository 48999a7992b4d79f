//! RBAC, the default authorization mode: 401 without credentials, 403 with kube's message without a binding,
//! success with one; RoleBindings confined to their namespace; `kubectl auth can-i` and `whoami`; impersonation;
//! privilege-escalation prevention.

use std::time::Duration;

use e2e::{wait_until, Http, Server};
use reqwest::Method;
use serde_json::{json, Value};

const FLUNDERS: &str = "/apis/wardle.example.com/v1beta1/namespaces";

/// A v1beta1 flunder in namespace `ns`.
fn flunder_in(ns: &str, name: &str) -> serde_json::Value {
    let mut flunder = e2e::flunder_v1beta1(name, "x");
    flunder["metadata"]["namespace"] = serde_json::json!(ns);
    flunder
}

fn flunders(ns: &str) -> String {
    format!("{FLUNDERS}/{ns}/flunders")
}

/// Applies a manifest as the administrator (the insecure development port).
fn admin_apply(server: &Server, manifest: &Value) {
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest.to_string());
}

fn role_binding(ns: &str, name: &str, role_kind: &str, role: &str, user: &str) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]
    })
}

/// Every verb on flunders in `ns`, answering with the HTTP code of each.
fn every_verb(http: &Http, ns: &str, name: &str) -> Vec<(&'static str, u16)> {
    let collection = flunders(ns);
    let item = format!("{collection}/{name}");
    let body = serde_json::to_vec(&flunder_in(ns, name)).unwrap();
    let mut out = Vec::new();
    let code = |r: e2e::Reply| r.status;
    out.push((
        "create",
        code(http.send(Method::POST, &collection, Some("application/json"), body)),
    ));
    out.push(("get", code(http.get(&item))));
    out.push(("list", code(http.get(&collection))));
    out.push((
        "watch",
        code(http.get(&format!("{collection}?watch=1&timeoutSeconds=1"))),
    ));
    let current = http.get(&item).json;
    let put = if current.is_object() {
        current
    } else {
        flunder_in(ns, name)
    };
    out.push(("update", code(http.put_json(&item, &put))));
    out.push((
        "patch",
        code(http.patch(
            &item,
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"patched": "yes"}}}),
        )),
    ));
    out.push(("delete", code(http.delete(&item))));
    out.push(("deletecollection", code(http.delete(&collection))));
    out
}

#[test]
fn rbac_every_verb_needs_credentials_and_a_binding_and_role_bindings_stay_in_their_namespace() {
    let server = Server::start(&["wardle"]);
    server.kubectl_ok(&["create", "namespace", "a"]);
    server.kubectl_ok(&["create", "namespace", "b"]);
    admin_apply(
        &server,
        &role_binding("a", "carol-edits", "ClusterRole", "edit", "carol"),
    );

    // No credentials: 401 for every verb.
    let anonymous = server.https();
    for (verb, code) in every_verb(&anonymous, "a", "f1") {
        assert_eq!(code, 401, "anonymous {verb}");
    }
    // A user without a binding: 403 for every verb, with kube's message.
    let bob = server.https_as("bob", &["dev"]);
    for (verb, code) in every_verb(&bob, "a", "f1") {
        assert_eq!(code, 403, "bob {verb}");
    }
    let status = bob.get(&flunders("a")).assert_status(403, "Forbidden").clone();
    assert_eq!(
        status["message"],
        "flunders.wardle.example.com is forbidden: User \"bob\" cannot list resource \"flunders\" in API group \
         \"wardle.example.com\" in the namespace \"a\""
    );
    let status = bob
        .get(&format!("{}/f1", flunders("a")))
        .assert_status(403, "Forbidden")
        .clone();
    assert_eq!(
        status["message"],
        "flunders.wardle.example.com \"f1\" is forbidden: User \"bob\" cannot get resource \"flunders\" in API group \
         \"wardle.example.com\" in the namespace \"a\""
    );
    assert_eq!(status["details"]["name"], "f1");

    // A bound user: every verb succeeds in the binding's namespace (RBAC follows bindings within moments).
    let carol = server.https_as("carol", &["dev"]);
    assert!(
        wait_until(Duration::from_secs(10), || carol.get(&flunders("a")).status == 200),
        "carol's binding never took effect"
    );
    for (verb, code) in every_verb(&carol, "a", "f2") {
        assert!((200..300).contains(&code), "carol {verb} answered {code}");
    }
    // ...and nothing in namespace b, nor across namespaces.
    for (verb, code) in every_verb(&carol, "b", "f3") {
        assert_eq!(code, 403, "carol {verb} in b");
    }
    bob.get("/apis/wardle.example.com/v1beta1/flunders")
        .assert_status(403, "Forbidden");
    carol
        .get("/apis/wardle.example.com/v1beta1/flunders")
        .assert_status(403, "Forbidden");
}

/// A binding that leaves `roleRef.apiGroup` and its subjects' `apiGroup` out (as Kubernetes' own e2e tests write
/// them) gets kube's defaults, and binds.
#[test]
fn rbac_bindings_without_api_groups_get_kube_defaults() {
    let server = Server::start(&["wardle"]);
    server.kubectl_ok(&["create", "namespace", "a"]);
    admin_apply(
        &server,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "dave-views", "namespace": "a"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "dave"}, {"kind": "ServiceAccount", "name": "default", "namespace": "a"}]
        }),
    );
    let stored: Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "rolebinding", "dave-views", "-n", "a", "-o", "json"]))
            .unwrap();
    assert_eq!(stored["roleRef"]["apiGroup"], "rbac.authorization.k8s.io", "{stored}");
    assert_eq!(
        stored["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io",
        "{stored}"
    );
    assert!(stored["subjects"][1].get("apiGroup").is_none(), "{stored}");
    let dave = server.https_as("dave", &[]);
    assert!(
        wait_until(Duration::from_secs(10), || dave.get(&flunders("a")).status == 200),
        "dave's binding never took effect"
    );
    // A ClusterRoleBinding likewise.
    admin_apply(
        &server,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "erin-views"},
            "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "viewers"}]
        }),
    );
    let erin = server.https_as("erin", &["viewers"]);
    assert!(
        wait_until(Duration::from_secs(10), || erin
            .get("/apis/wardle.example.com/v1beta1/flunders")
            .status
            == 200),
        "erin's group binding never took effect"
    );
}

#[test]
fn rbac_every_verb_on_namespaces_needs_a_binding() {
    let server = Server::start(&["wardle"]);
    admin_apply(
        &server,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "namespace-admin"},
            "rules": [{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["*"]}]
        }),
    );
    admin_apply(
        &server,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "dave-namespaces"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "namespace-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "dave"}]
        }),
    );
    let ns = |name: &str| json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    let verbs = |http: &Http, name: &str| -> Vec<(&'static str, u16)> {
        let item = format!("/api/v1/namespaces/{name}");
        let mut out = vec![("create", http.post_json("/api/v1/namespaces", &ns(name)).status)];
        out.push(("get", http.get(&item).status));
        out.push(("list", http.get("/api/v1/namespaces").status));
        out.push(("watch", http.get("/api/v1/namespaces?watch=1&timeoutSeconds=1").status));
        let current = http.get(&item).json;
        let put = if current.is_object() { current } else { ns(name) };
        out.push(("update", http.put_json(&item, &put).status));
        let labels = json!({"metadata": {"labels": {"team": "x"}}});
        out.push((
            "patch",
            http.patch(&item, "application/merge-patch+json", &labels).status,
        ));
        out.push(("delete", http.delete(&item).status));
        out
    };
    for (verb, code) in verbs(&server.https(), "n1") {
        assert_eq!(code, 401, "anonymous {verb}");
    }
    let bob = server.https_as("bob", &[]);
    for (verb, code) in verbs(&bob, "n1") {
        assert_eq!(code, 403, "bob {verb}");
    }
    bob.get("/api/v1/namespaces/default").assert_status(403, "Forbidden");
    let dave = server.https_as("dave", &[]);
    assert!(wait_until(Duration::from_secs(10), || dave
        .get("/api/v1/namespaces")
        .status
        == 200));
    for (verb, code) in verbs(&dave, "n2") {
        assert!((200..300).contains(&code), "dave {verb} answered {code}");
    }
}

#[test]
fn rbac_kubectl_auth_can_i_whoami_and_impersonation_follow_the_bindings() {
    let server = Server::start(&["wardle"]);
    server.kubectl_ok(&["create", "namespace", "a"]);
    // kubectl's typed create commands send protobuf.
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "carol-views",
        "--clusterrole=view",
        "--user=carol",
        "-n",
        "a",
    ]);
    server.kubectl_ok(&[
        "create",
        "role",
        "getter",
        "--verb=get",
        "--resource=flunders.wardle.example.com",
        "-n",
        "a",
    ]);
    server.kubectl_ok(&[
        "create",
        "clusterrole",
        "lister",
        "--verb=list",
        "--resource=fischers.wardle.example.com",
    ]);
    server.kubectl_ok(&[
        "create",
        "clusterrolebinding",
        "dev-lists",
        "--clusterrole=lister",
        "--group=dev",
    ]);
    let binding = server.kubectl_json(&["get", "rolebinding", "carol-views", "-n", "a", "-o", "json"]);
    assert_eq!(binding["roleRef"]["name"], "view");
    assert_eq!(binding["subjects"][0]["name"], "carol");
    let carol = server.user_kubeconfig("carol", &["dev"]);
    let kc = format!("--kubeconfig={}", carol.display());
    assert!(wait_until(Duration::from_secs(10), || {
        server
            .kubectl(&[&kc, "auth", "can-i", "list", "flunders", "-n", "a"])
            .status
            .success()
    }));
    let answer = |args: &[&str]| {
        let out = server.kubectl(&[&[kc.as_str(), "auth", "can-i"], args].concat());
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    assert_eq!(answer(&["list", "flunders.wardle.example.com", "-n", "a"]), "yes");
    assert_eq!(answer(&["get", "flunders", "-n", "a"]), "yes");
    assert_eq!(answer(&["create", "flunders", "-n", "a"]), "no");
    assert_eq!(answer(&["list", "flunders", "-n", "b"]), "no");
    assert_eq!(answer(&["delete", "namespaces"]), "no");
    assert_eq!(answer(&["list", "fischers"]), "yes");
    assert_eq!(answer(&["get", "fischers"]), "no");
    let list = server.kubectl_ok(&[&kc, "auth", "can-i", "--list", "-n", "a"]);
    assert!(
        list.lines()
            .any(|l| l.contains("*.wardle.example.com") && l.contains("[get list watch]")),
        "{list}"
    );
    assert!(list.contains("selfsubjectaccessreviews.authorization.k8s.io"), "{list}");

    let whoami = server.kubectl_ok(&[&kc, "auth", "whoami", "-o", "json"]);
    let whoami: Value = serde_json::from_str(&whoami).unwrap();
    assert_eq!(whoami["kind"], "SelfSubjectReview");
    assert_eq!(whoami["status"]["userInfo"]["username"], "carol");
    assert_eq!(
        whoami["status"]["userInfo"]["groups"],
        json!(["dev", "system:authenticated"])
    );

    // An administrator may act as carol; carol may not act as anyone.
    let admin = server.user_kubeconfig("root", &["system:masters"]);
    let admin = format!("--kubeconfig={}", admin.display());
    let as_carol = server.kubectl_ok(&[&admin, "--as=carol", "auth", "whoami", "-o", "json"]);
    assert!(as_carol.contains("\"username\": \"carol\""), "{as_carol}");
    server.kubectl_ok(&[&admin, "--as=carol", "get", "flunders", "-n", "a"]);
    let err = server.kubectl_err(&[&admin, "--as=carol", "create", "namespace", "c"]);
    assert!(
        err.contains("User \"carol\" cannot create resource \"namespaces\""),
        "{err}"
    );
    let err = server.kubectl_err(&[&kc, "--as=root", "get", "flunders", "-n", "a"]);
    assert!(err.contains("cannot impersonate resource \"users\""), "{err}");
    let err = server.kubectl_err(&[&kc, "--as=carol", "--as-group=system:masters", "get", "ns"]);
    assert!(err.contains("cannot impersonate"), "{err}");
}

#[test]
fn rbac_users_cannot_grant_or_bind_what_they_do_not_hold() {
    let server = Server::start(&["wardle"]);
    server.kubectl_ok(&["create", "namespace", "a"]);
    admin_apply(
        &server,
        &role_binding("a", "erin-admin", "ClusterRole", "admin", "erin"),
    );
    let erin = server.https_as("erin", &[]);
    let rolebindings = "/apis/rbac.authorization.k8s.io/v1/namespaces/a/rolebindings";
    let roles = "/apis/rbac.authorization.k8s.io/v1/namespaces/a/roles";
    assert!(wait_until(Duration::from_secs(10), || erin.get(rolebindings).status == 200));

    // Binding a role she holds the rules of (view is within admin) works; cluster-admin does not.
    erin.post_json(
        rolebindings,
        &role_binding("a", "frank-views", "ClusterRole", "view", "frank"),
    )
    .expect(201);
    let status = erin
        .post_json(
            rolebindings,
            &role_binding("a", "frank-rules", "ClusterRole", "cluster-admin", "frank"),
        )
        .assert_status(403, "Forbidden")
        .clone();
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with("rolebindings.rbac.authorization.k8s.io \"frank-rules\" is forbidden: user \"erin\""),
        "{message}"
    );
    assert!(
        message.contains("attempting to grant RBAC permissions not currently held"),
        "{message}"
    );

    // A Role with rules she holds works; one with more does not.
    let role = |name: &str, rules: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": "a"}, "rules": rules})
    };
    erin.post_json(
        roles,
        &role(
            "flunder-reader",
            json!([{"apiGroups": ["wardle.example.com"], "resources": ["flunders"], "verbs": ["get", "list"]}]),
        ),
    )
    .expect(201);
    erin.post_json(
        roles,
        &role(
            "ns-deleter",
            json!([{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["delete"]}]),
        ),
    )
    .assert_status(403, "Forbidden");

    // With `bind` on cluster-admin she may bind it (kube's escape hatch for delegated administration).
    admin_apply(
        &server,
        &json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "bind-cluster-admin", "namespace": "a"},
            "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "verbs": ["bind"], "resourceNames": ["cluster-admin"]}]
        }),
    );
    admin_apply(
        &server,
        &role_binding("a", "erin-binds", "Role", "bind-cluster-admin", "erin"),
    );
    assert!(wait_until(Duration::from_secs(10), || {
        let reply = erin.post_json(
            rolebindings,
            &role_binding("a", "frank-admin", "ClusterRole", "cluster-admin", "frank"),
        );
        reply.status == 201
    }));
}

#[test]
fn rbac_default_roles_exist_and_anonymous_reads_only_public_information() {
    let server = Server::start(&["wardle"]);
    let names = server.kubectl_ok(&["get", "clusterroles", "-o", "name"]);
    for role in [
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:public-info-viewer",
    ] {
        assert!(
            names
                .lines()
                .any(|l| l == format!("clusterrole.rbac.authorization.k8s.io/{role}")),
            "{role}: {names}"
        );
    }
    // Aggregation writes the rules of admin, edit and view into them, as kube's controller does.
    let aggregated = wait_until(Duration::from_secs(10), || {
        let edit = server.kubectl_json(&["get", "clusterrole", "edit", "-o", "json"]);
        edit["rules"]
            .as_array()
            .is_some_and(|rules| rules.iter().any(|r| r["resources"] == json!(["namespaces"])))
    });
    assert!(aggregated, "edit never got the rules it aggregates");
    let bindings = server.kubectl_ok(&["get", "clusterrolebindings"]);
    assert!(
        bindings
            .lines()
            .any(|l| l.starts_with("cluster-admin") && l.contains("ClusterRole/cluster-admin")),
        "{bindings}"
    );
    let anonymous = server.https();
    for path in ["/healthz", "/livez", "/readyz", "/version", "/apis", "/api"] {
        anonymous.get(path).expect(200);
    }
    anonymous.get("/metrics").assert_status(401, "Unauthorized");
    anonymous.get("/api/v1/namespaces").assert_status(401, "Unauthorized");
    // An authenticated user without bindings reads discovery and OpenAPI too.
    let bob = server.https_as("bob", &[]);
    bob.get("/apis/wardle.example.com/v1beta1").expect(200);
    bob.get("/openapi/v2").expect(200);
    bob.get("/metrics").assert_status(403, "Forbidden");
}
