//! Aggregation: wasm-apiserver behind a real kube-apiserver 1.37 as an APIService, as kubernetes/sample-apiserver
//! is deployed. kube-apiserver (built from the k8s.io/kubernetes Go module by scripts/build-kube-apiserver.sh, path
//! in `KUBE_APISERVER`) runs on a test etcd with its own PKI; its aggregator proxies the wardle group to
//! wasm-apiserver with front-proxy authentication; kubectl talks to kube-apiserver only.
//!
//! Authorization: kube-apiserver's RBAC decides who reaches the group (a user it denies is denied before any
//! proxying), and wasm-apiserver asks kube-apiserver about the identities the aggregator forwards
//! (`--authorization-mode=Webhook`, SubjectAccessReviews with its own client certificate, bound to
//! `system:auth-delegator`), as sample-apiserver does: a user bound only in kube-apiserver is served.
//!
//! Admission: a validating webhook registered in kube-apiserver applies to the flunders created through the
//! aggregator, read from kube-apiserver by wasm-apiserver (`--kubeconfig`, with a role to read them).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use e2e::{kube_apiserver_binary, wait_until, Etcd, KubeApiserver, Server, Verdict, WebhookServer};
use serde_json::{json, Value};

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn kubectl(kubeconfig: &str, cache: &Path, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let at = e2e::KubectlAt {
        kubeconfig: kubeconfig.to_owned(),
        cache: cache.to_path_buf(),
    };
    at.run(args, stdin)
}

fn ok(out: std::process::Output, what: &str) -> String {
    assert!(out.status.success(), "{what} failed:\n{}", e2e::output_text(&out));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn aggregation_kube_apiserver_serves_wardle_from_wasm_apiserver() {
    let Some(binary) = kube_apiserver_binary() else {
        return;
    };
    let etcd = Etcd::start().unwrap();
    let kas = KubeApiserver::start(&binary, &etcd).unwrap_or_else(|e| panic!("{e:#}"));
    let d = kas.dir();
    let cache = d.join("kube-cache");
    let ca = &kas.ca;
    let denied = ca.issue("denied-user", None, &[], false);
    let reader = ca.issue("reader", None, &[], false);
    // wasm-apiserver's serving certificate: the aggregator checks it for the Service's DNS name.
    let (wardle_cert, wardle_key) = ca.issue(
        "wardle-api",
        None,
        &["wardle-api.wardle.svc", "localhost", "127.0.0.1"],
        true,
    );
    // wasm-apiserver's own identity towards kube-apiserver, for its SubjectAccessReviews.
    let delegator = ca.issue("wardle-apiserver", None, &[], false);
    let admin_kc = kas.kubeconfig("admin", &kas.admin);

    // wasm-apiserver behind it: front-proxy headers from the aggregator's client certificate, authorization asked of
    // kube-apiserver.
    let front_proxy_ca_file = d.join("front-proxy-ca.crt");
    let webhook_kc = kas.kubeconfig("wardle-apiserver", &delegator);
    let wardle = Server::start_with_args(
        &["wardle"],
        &[
            "--tls-cert-file",
            &write(d, "wardle.crt", &wardle_cert),
            "--tls-private-key-file",
            &write(d, "wardle.key", &wardle_key),
            "--requestheader-client-ca-file",
            front_proxy_ca_file.to_str().unwrap(),
            "--requestheader-allowed-names",
            "front-proxy-client",
            "--authorization-mode",
            "Webhook",
            "--authorization-webhook-config-file",
            &webhook_kc,
            // The cluster's admission webhooks and policies, read with the same identity.
            "--kubeconfig",
            &webhook_kc,
        ],
    );
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut manifests = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wardle"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "wardle-apiserver:auth-delegator"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "wardle-apiserver"}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "wardle-apiserver:admission-reader"},
            "rules": [{"apiGroups": ["admissionregistration.k8s.io"], "verbs": ["get", "list", "watch"],
                "resources": ["mutatingwebhookconfigurations", "validatingwebhookconfigurations",
                    "validatingadmissionpolicies", "validatingadmissionpolicybindings"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "wardle-apiserver:admission-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "wardle-apiserver:admission-reader"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "wardle-apiserver"}]}),
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "wardle-api", "namespace": "wardle"},
            "spec": {"type": "ExternalName", "externalName": "localhost",
                "ports": [{"port": wardle.secure_port(), "protocol": "TCP"}]}}),
    ];
    for (version, priority) in [("v1alpha1", 10), ("v1beta1", 15)] {
        manifests.push(json!({
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": format!("{version}.wardle.example.com")},
            "spec": {"group": "wardle.example.com", "version": version,
                "service": {"namespace": "wardle", "name": "wardle-api", "port": wardle.secure_port()},
                "caBundle": b64.encode(&ca.pem), "groupPriorityMinimum": 1000, "versionPriority": priority}
        }));
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": manifests}).to_string();
    ok(
        kubectl(&admin_kc, &cache, &["apply", "-f", "-"], Some(&list)),
        "creating the APIServices",
    );
    let mut conditions = String::new();
    let available = wait_until(Duration::from_secs(90), || {
        let out = kubectl(
            &admin_kc,
            &cache,
            &["get", "apiservice", "v1beta1.wardle.example.com", "-o", "json"],
            None,
        );
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        conditions = doc["status"]["conditions"].to_string();
        doc["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Available" && c["status"] == "True"))
    });
    assert!(
        available,
        "the APIService never became Available: {conditions}\nkube-apiserver:\n{}\nwasm-apiserver:\n{}",
        kas.log_tail(40),
        wardle.log_tail(40)
    );

    // Discovery and OpenAPI through the aggregator. Its discovery manager fetches the group's discovery in a worker
    // of its own, not in step with the Available condition: an APIService can be Available before its resources
    // are listed.
    let mut resources = String::new();
    let listed = wait_until(Duration::from_secs(60), || {
        resources = ok(
            kubectl(
                &admin_kc,
                &cache,
                &["api-resources", "--api-group=wardle.example.com"],
                None,
            ),
            "api-resources",
        );
        resources.contains("flunders") && resources.contains("fischers")
    });
    assert!(
        listed,
        "the aggregated discovery never listed wardle's resources:\n{resources}\nkube-apiserver:\n{}",
        kas.log_tail(40)
    );
    // The aggregator merges the group's OpenAPI in the background.
    let merged = wait_until(Duration::from_secs(60), || {
        let out = kubectl(&admin_kc, &cache, &["get", "--raw", "/openapi/v3"], None);
        String::from_utf8_lossy(&out.stdout).contains("apis/wardle.example.com/v1beta1")
    });
    assert!(merged, "the aggregated OpenAPI v3 lacks wardle:\n{}", kas.log_tail(40));
    // And its OpenAPI v2, in a controller of its own: merged on its own time, after v3 or before it.
    let merged_v2 = wait_until(Duration::from_secs(60), || {
        let out = kubectl(&admin_kc, &cache, &["get", "--raw", "/openapi/v2"], None);
        String::from_utf8_lossy(&out.stdout)
            .contains("/apis/wardle.example.com/v1beta1/namespaces/{namespace}/flunders")
    });
    assert!(
        merged_v2,
        "no wardle in the aggregated OpenAPI v2:\n{}",
        kas.log_tail(40)
    );

    // Create, list and watch flunders through kube-apiserver.
    let mut watch = Command::new(e2e::kubectl_path())
        .arg(format!("--kubeconfig={admin_kc}"))
        .arg(format!("--cache-dir={}", cache.display()))
        .args(["get", "flunders", "--watch", "-o", "json", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut events = e2e::JsonStream::spawn(watch.stdout.take().unwrap());
    let flunder = e2e::flunder_v1beta1("via-aggregator", "x");
    ok(
        kubectl(&admin_kc, &cache, &["create", "-f", "-"], Some(&flunder.to_string())),
        "creating a flunder",
    );
    let table = ok(
        kubectl(&admin_kc, &cache, &["get", "flunders"], None),
        "listing flunders",
    );
    assert!(table.contains("via-aggregator"), "{table}");
    let seen = events.collect_until(Duration::from_secs(30), |evs| {
        evs.iter()
            .any(|e| e["type"] == "ADDED" && e["object"]["metadata"]["name"] == "via-aggregator")
    });
    assert!(
        seen.iter().any(|e| e["object"]["metadata"]["name"] == "via-aggregator"),
        "the watch did not see the flunder: {seen:?}"
    );
    let _ = watch.kill();
    let _ = watch.wait();
    // wasm-apiserver saw the aggregator's user, forwarded by front-proxy headers.
    let log = std::fs::read_to_string(wardle.log_path()).unwrap_or_default();
    assert!(log.contains("user=admin"), "wasm-apiserver did not see the user admin");

    // kube-apiserver's RBAC decides who reaches the group.
    let denied_kc = kas.kubeconfig("denied", &denied);
    let out = kubectl(&denied_kc, &cache, &["get", "flunders"], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("User \"denied-user\" cannot list resource \"flunders\" in API group \"wardle.example.com\""),
        "{err}"
    );
    let grant = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "flunder-reader"},
         "rules": [{"apiGroups": ["wardle.example.com"], "resources": ["flunders"], "verbs": ["get", "list", "watch"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "reader"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "flunder-reader"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "reader"}]}
    ]});
    ok(
        kubectl(&admin_kc, &cache, &["apply", "-f", "-"], Some(&grant.to_string())),
        "granting reader",
    );
    let reader_kc = kas.kubeconfig("reader", &reader);
    let allowed = wait_until(Duration::from_secs(30), || {
        kubectl(&reader_kc, &cache, &["get", "flunders"], None).status.success()
    });
    assert!(
        allowed,
        "the reader granted by kube-apiserver's RBAC could not list flunders"
    );

    // A validating webhook registered in kube-apiserver applies to flunders created through the aggregator (which
    // runs no admission for them): wasm-apiserver reads it from kube-apiserver, and the webhook is told the user.
    let webhook =
        WebhookServer::start(
            |_, request| match request.pointer("/object/metadata/name").and_then(Value::as_str) {
                Some(name) if name.starts_with("bad") => {
                    Verdict::Deny(format!("{name} is refused by the cluster"), 403)
                }
                _ => Verdict::Allow(Vec::new()),
            },
        );
    let configuration = json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "cluster-policy"},
        "webhooks": [{"name": "cluster.flunders.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"url": format!("{}/validate", webhook.url), "caBundle": webhook.ca_bundle()},
            "rules": [{"apiGroups": ["wardle.example.com"], "apiVersions": ["*"], "resources": ["flunders"], "operations": ["CREATE"]}]}]
    });
    ok(
        kubectl(
            &admin_kc,
            &cache,
            &["create", "-f", "-"],
            Some(&configuration.to_string()),
        ),
        "registering the webhook in kube-apiserver",
    );
    let bad = e2e::flunder_v1beta1("bad-via-aggregator", "x").to_string();
    let mut last = String::new();
    let refused = wait_until(Duration::from_secs(30), || {
        let out = kubectl(&admin_kc, &cache, &["create", "-f", "-"], Some(&bad));
        last = e2e::output_text(&out);
        !out.status.success()
    });
    assert!(
        refused,
        "the cluster's webhook never applied: {last}
{}",
        wardle.log_tail(20)
    );
    assert!(
        last.contains(r#"admission webhook "cluster.flunders.example.com" denied the request: bad-via-aggregator is refused by the cluster"#),
        "{last}"
    );
    let review = webhook.received("/validate").pop().expect("the webhook was called");
    assert_eq!(review["userInfo"]["username"], "admin", "{review}");
    drop(etcd);
}
