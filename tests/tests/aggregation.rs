//! Aggregation: wasm-apiserver behind a real kube-apiserver 1.37 as an APIService, as kubernetes/sample-apiserver
//! is deployed. kube-apiserver (built from the k8s.io/kubernetes Go module by scripts/build-kube-apiserver.sh, path
//! in `KUBE_APISERVER`) runs on a test etcd with its own PKI; its aggregator proxies the wardle group to
//! wasm-apiserver with front-proxy authentication; kubectl talks to kube-apiserver only.
//!
//! Authorization: kube-apiserver's RBAC decides who reaches the group (a user it denies is denied before any
//! proxying), and wasm-apiserver asks kube-apiserver about the identities the aggregator forwards
//! (`--authorization-mode=Webhook`, SubjectAccessReviews with its own client certificate, bound to
//! `system:auth-delegator`), as sample-apiserver does: a user bound only in kube-apiserver is served.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use e2e::{wait_until, Etcd, Server};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use serde_json::{json, Value};

/// A CA that issues certificates.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate and key (PEM) for `cn` in `org`, with SANs, for clients or servers.
    fn issue(&self, cn: &str, org: Option<&str>, sans: &[&str], server: bool) -> (String, String) {
        let mut params = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        if let Some(org) = org {
            params.distinguished_name.push(DnType::OrganizationName, org);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![if server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.issuer).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// kube-apiserver, killed on drop.
struct KubeApiserver {
    child: Child,
    log: PathBuf,
}

impl Drop for KubeApiserver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl KubeApiserver {
    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

/// A kubeconfig for kube-apiserver with a client certificate.
fn kubeconfig(dir: &Path, name: &str, server: &str, ca: &str, cert: &(String, String)) -> String {
    let b64 = base64::engine::general_purpose::STANDARD;
    write(
        dir,
        &format!("{name}.kubeconfig"),
        &format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kube\n  cluster:\n    server: {server}\n    \
             certificate-authority-data: {}\nusers:\n- name: {name}\n  user:\n    client-certificate-data: {}\n    \
             client-key-data: {}\ncontexts:\n- name: c\n  context: {{cluster: kube, user: {name}, namespace: default}}\n\
             current-context: c\n",
            b64.encode(ca),
            b64.encode(&cert.0),
            b64.encode(&cert.1)
        ),
    )
}

fn kubectl(kubeconfig: &str, cache: &Path, args: &[&str], stdin: Option<&str>) -> std::process::Output {
    let mut command = Command::new(e2e::kubectl_path());
    command
        .arg(format!("--kubeconfig={kubeconfig}"))
        .arg(format!("--cache-dir={}", cache.display()))
        .arg("--request-timeout=60s")
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("run kubectl");
    if let Some(input) = stdin {
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    child.wait_with_output().unwrap()
}

fn ok(out: std::process::Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn aggregation_kube_apiserver_serves_wardle_from_wasm_apiserver() {
    let Some(binary) = std::env::var_os("KUBE_APISERVER") else {
        eprintln!("SKIPPED: KUBE_APISERVER is not set (scripts/test.sh builds kube-apiserver and sets it)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let cache = d.join("kube-cache");

    // PKI: the cluster CA (serving and client certificates), the front-proxy CA, service-account keys.
    let ca = Ca::new("kube-ca");
    let front_proxy_ca = Ca::new("front-proxy-ca");
    let ca_file = write(d, "ca.crt", &ca.pem);
    let (serving_cert, serving_key) = ca.issue("kube-apiserver", None, &["127.0.0.1", "localhost"], true);
    let admin = ca.issue("admin", Some("system:masters"), &[], false);
    let denied = ca.issue("denied-user", None, &[], false);
    let reader = ca.issue("reader", None, &[], false);
    let proxy_client = front_proxy_ca.issue("front-proxy-client", None, &[], false);
    // wasm-apiserver's serving certificate: the aggregator checks it for the Service's DNS name.
    let (wardle_cert, wardle_key) = ca.issue(
        "wardle-api",
        None,
        &["wardle-api.wardle.svc", "localhost", "127.0.0.1"],
        true,
    );
    let sa_key = KeyPair::generate().unwrap();
    // wasm-apiserver's own identity towards kube-apiserver, for its SubjectAccessReviews.
    let delegator = ca.issue("wardle-apiserver", None, &[], false);

    let etcd = Etcd::start().unwrap();
    let port = free_port();
    let log = d.join("kube-apiserver.log");
    let child = Command::new(&binary)
        .args([
            format!("--etcd-servers={}", etcd.endpoint()),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", d.join("certs").display()),
            format!("--tls-cert-file={}", write(d, "serving.crt", &serving_cert)),
            format!("--tls-private-key-file={}", write(d, "serving.key", &serving_key)),
            format!("--client-ca-file={ca_file}"),
            "--authorization-mode=RBAC".into(),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            format!(
                "--service-account-key-file={}",
                write(d, "sa.pub", &sa_key.public_key_pem())
            ),
            format!(
                "--service-account-signing-key-file={}",
                write(d, "sa.key", &sa_key.serialize_pem())
            ),
            "--service-cluster-ip-range=10.96.0.0/24".into(),
            format!(
                "--requestheader-client-ca-file={}",
                write(d, "front-proxy-ca.crt", &front_proxy_ca.pem)
            ),
            "--requestheader-allowed-names=front-proxy-client".into(),
            "--requestheader-username-headers=X-Remote-User".into(),
            "--requestheader-group-headers=X-Remote-Group".into(),
            "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
            format!(
                "--proxy-client-cert-file={}",
                write(d, "proxy-client.crt", &proxy_client.0)
            ),
            format!(
                "--proxy-client-key-file={}",
                write(d, "proxy-client.key", &proxy_client.1)
            ),
            "--endpoint-reconciler-type=none".into(),
            "--profiling=false".into(),
        ])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start kube-apiserver");
    let kas = KubeApiserver { child, log };
    let server_url = format!("https://127.0.0.1:{port}");
    let admin_kc = kubeconfig(d, "admin", &server_url, &ca.pem, &admin);
    let ready = wait_until(Duration::from_secs(120), || {
        kubectl(&admin_kc, &cache, &["get", "--raw", "/readyz"], None)
            .status
            .success()
    });
    assert!(ready, "kube-apiserver was not ready:\n{}", kas.log_tail());

    // wasm-apiserver behind it: front-proxy headers from the aggregator's client certificate, authorization asked of
    // kube-apiserver.
    let front_proxy_ca_file = d.join("front-proxy-ca.crt");
    let webhook_kc = kubeconfig(d, "wardle-apiserver", &server_url, &ca.pem, &delegator);
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
        ],
    );
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut manifests = vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "wardle"}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "wardle-apiserver:auth-delegator"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:auth-delegator"},
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
        kas.log_tail(),
        wardle.log_tail(40)
    );

    // Discovery and OpenAPI through the aggregator.
    let resources = ok(
        kubectl(
            &admin_kc,
            &cache,
            &["api-resources", "--api-group=wardle.example.com"],
            None,
        ),
        "api-resources",
    );
    assert!(
        resources.contains("flunders") && resources.contains("fischers"),
        "{resources}"
    );
    // The aggregator merges the group's OpenAPI in the background.
    let merged = wait_until(Duration::from_secs(60), || {
        let out = kubectl(&admin_kc, &cache, &["get", "--raw", "/openapi/v3"], None);
        String::from_utf8_lossy(&out.stdout).contains("apis/wardle.example.com/v1beta1")
    });
    assert!(merged, "the aggregated OpenAPI v3 lacks wardle:\n{}", kas.log_tail());
    let v2 = ok(
        kubectl(&admin_kc, &cache, &["get", "--raw", "/openapi/v2"], None),
        "openapi v2",
    );
    assert!(
        v2.contains("/apis/wardle.example.com/v1beta1/namespaces/{namespace}/flunders"),
        "no wardle in v2"
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
    let denied_kc = kubeconfig(d, "denied", &server_url, &ca.pem, &denied);
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
    let reader_kc = kubeconfig(d, "reader", &server_url, &ca.pem, &reader);
    let allowed = wait_until(Duration::from_secs(30), || {
        kubectl(&reader_kc, &cache, &["get", "flunders"], None).status.success()
    });
    assert!(
        allowed,
        "the reader granted by kube-apiserver's RBAC could not list flunders"
    );
    drop(etcd);
}
