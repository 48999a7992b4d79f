//! The secure port: HTTPS with the server's own certificates, kubeconfigs from `wasm-apiserver kubeconfig`, and
//! the authenticators (client certificates, bearer tokens, front-proxy headers, anonymous).

use std::time::Duration;

use e2e::{flunder_v1beta1, wait_until, Server, FLUNDERS_V1BETA1};

/// The user a request was served as, from the server log line carrying the request's audit id.
fn served_user(server: &Server, reply_audit_id: &str) -> String {
    let mut user = String::new();
    let found = wait_until(Duration::from_secs(10), || {
        let log = std::fs::read_to_string(server.log_path()).unwrap_or_default();
        match log.lines().find(|l| l.contains(&format!("audit_id={reply_audit_id}"))) {
            Some(line) => {
                user = line
                    .split_whitespace()
                    .find_map(|w| w.strip_prefix("user="))
                    .unwrap_or_default()
                    .to_owned();
                true
            }
            None => false,
        }
    });
    assert!(found, "no log line for audit id {reply_audit_id}");
    user
}

/// A kubeconfig for the secure port that trusts the server's CA and has no credentials of its own.
fn token_kubeconfig(server: &Server) -> String {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(server.ca_pem());
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\n\
         users:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context: {{cluster: s, user: u, namespace: default}}\n\
         current-context: c\n",
        server.secure_url()
    )
}

fn audit_id(reply: &reqwest::blocking::Response) -> String {
    reply
        .headers()
        .get("audit-id")
        .and_then(|v| v.to_str().ok())
        .expect("every response has an Audit-Id header")
        .to_owned()
}

#[test]
fn kubectl_with_a_generated_kubeconfig_does_the_wardle_workflow_over_https() {
    let server = Server::start(&["wardle"]);
    let kubeconfig = server.user_kubeconfig("alice", &["system:masters"]);
    let kc = format!("--kubeconfig={}", kubeconfig.display());
    let text = std::fs::read_to_string(&kubeconfig).unwrap();
    assert!(text.contains(&format!("server: {}", server.secure_url())), "{text}");

    let manifest = serde_json::to_string(&flunder_v1beta1("over-tls", "other")).unwrap();
    server.kubectl_stdin_ok(&[&kc, "create", "-f", "-"], &manifest);
    let table = server.kubectl_ok(&[&kc, "get", "flunders"]);
    assert!(table.contains("over-tls"), "{table}");
    server.kubectl_ok(&[
        &kc,
        "patch",
        "flunder",
        "over-tls",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"flunderReference":"third"}}"#,
    ]);
    let obj = server.kubectl_json(&[&kc, "get", "flunder", "over-tls", "-o", "json"]);
    assert_eq!(obj["spec"]["flunderReference"], "third");
    server.kubectl_ok(&[&kc, "delete", "flunder", "over-tls"]);
    let err = server.kubectl_err(&[&kc, "get", "flunder", "over-tls"]);
    assert!(err.contains("NotFound") || err.contains("not found"), "{err}");
}

#[test]
fn client_certificates_and_bearer_tokens_name_the_user_and_wrong_tokens_get_401() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tokens.path(), "s3cret,bob,uid-bob,\"dev,ops\"\n").unwrap();
    let path = tokens.path().to_str().unwrap();
    let server = Server::start_with_args(&["wardle"], &["--token-auth-file", path]);
    // Both users read flunders through the group they share (RBAC has tests of its own).
    server.grant("default", "view", "dev");

    // A client certificate: CN is the user.
    let alice = server.https_as("alice", &["dev", "ops"]);
    let reply = alice.client().get(alice.url(FLUNDERS_V1BETA1)).send().unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    assert_eq!(reply.version(), reqwest::Version::HTTP_2, "HTTPS serves HTTP/2");
    assert_eq!(served_user(&server, &audit_id(&reply)), "alice");

    // A bearer token from the token file.
    let https = server.https();
    let reply = https
        .client()
        .get(https.url(FLUNDERS_V1BETA1))
        .bearer_auth("s3cret")
        .send()
        .unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    assert_eq!(served_user(&server, &audit_id(&reply)), "bob");

    // kubectl with a token (a kubeconfig trusting the server's CA, with no client certificate).
    let kubeconfig = server.root().join("kubeconfig-token");
    std::fs::write(&kubeconfig, token_kubeconfig(&server)).unwrap();
    let kc = format!("--kubeconfig={}", kubeconfig.display());
    let out = server.kubectl_ok(&[&kc, "--token=s3cret", "get", "flunders"]);
    assert!(
        out.contains("No resources") || out.is_empty() || out.contains("NAME"),
        "{out}"
    );

    // A wrong token is refused, not taken as anonymous.
    for token in ["wrong", "s3cret2"] {
        let reply = https
            .client()
            .get(https.url(FLUNDERS_V1BETA1))
            .bearer_auth(token)
            .send()
            .unwrap();
        assert_eq!(reply.status().as_u16(), 401, "{token}");
        let status: serde_json::Value = reply.json().unwrap();
        assert_eq!(
            (
                status["kind"].as_str(),
                status["reason"].as_str(),
                status["code"].as_u64()
            ),
            (Some("Status"), Some("Unauthorized"), Some(401))
        );
    }
    let err = server.kubectl_err(&[&kc, "--token=wrong", "get", "flunders"]);
    assert!(
        err.contains("Unauthorized") || err.contains("provide credentials"),
        "{err}"
    );

    // Without credentials the request is anonymous.
    let reply = https.client().get(https.url("/version")).send().unwrap();
    assert_eq!(reply.status().as_u16(), 200);
    assert_eq!(served_user(&server, &audit_id(&reply)), "system:anonymous");
}

#[test]
fn without_anonymous_auth_requests_without_credentials_get_401() {
    let server = Server::start_with_args(&["wardle"], &["--anonymous-auth=false"]);
    let https = server.https();
    for path in [FLUNDERS_V1BETA1, "/version", "/apis"] {
        https.get(path).assert_status(401, "Unauthorized");
    }
    let admin = server.https_as("admin", &["system:masters"]);
    admin.get(FLUNDERS_V1BETA1).expect(200);
    // The insecure development port stays open to its administrator.
    server.http().get(FLUNDERS_V1BETA1).expect(200);
}

#[test]
fn front_proxy_headers_count_only_from_the_request_header_ca_with_an_allowed_name() {
    // A separate CA for the front proxy: `kubeconfig` makes one in a data directory of its own.
    let proxy_dir = tempfile::tempdir().unwrap();
    let make = |user: &str| -> String {
        let out = std::process::Command::new(e2e::server_binary())
            .args(["kubeconfig", "--user", user, "--data-dir"])
            .arg(proxy_dir.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let identity = |kubeconfig: &str| -> Vec<u8> {
        use base64::Engine as _;
        let field = |name: &str| {
            let value = kubeconfig
                .lines()
                .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
                .unwrap();
            base64::engine::general_purpose::STANDARD.decode(value.trim()).unwrap()
        };
        [field("client-certificate-data"), field("client-key-data")].concat()
    };
    let front_proxy = identity(&make("front-proxy"));
    let other_proxy = identity(&make("other-proxy"));
    let proxy_ca = proxy_dir.path().join("pki").join("ca.crt");
    let server = Server::start_with_args(
        &["wardle"],
        &[
            "--requestheader-client-ca-file",
            proxy_ca.to_str().unwrap(),
            "--requestheader-allowed-names",
            "front-proxy",
        ],
    );
    server.grant("default", "view", "readers");
    let as_proxy = |identity: &[u8]| e2e::Http::secure(server.secure_url(), &server.ca_pem(), Some(identity));
    let forged = |http: &e2e::Http| {
        http.client()
            .get(http.url(FLUNDERS_V1BETA1))
            .header("X-Remote-User", "carol")
            .header("X-Remote-Group", "system:masters")
            .send()
            .unwrap()
    };

    let proxy = as_proxy(&front_proxy);
    let reply = forged(&proxy);
    assert_eq!(reply.status().as_u16(), 200);
    assert_eq!(served_user(&server, &audit_id(&reply)), "carol");

    // The same CA, but a common name that is not allowed: refused.
    let reply = forged(&as_proxy(&other_proxy));
    assert_eq!(reply.status().as_u16(), 401);

    // A client certificate of the server's own CA: the headers are ignored, the certificate names the user.
    let dave = server.https_as("dave", &["readers"]);
    let reply = forged(&dave);
    assert_eq!(reply.status().as_u16(), 200);
    assert_eq!(served_user(&server, &audit_id(&reply)), "dave");

    // No certificate at all: the headers are ignored too.
    let reply = forged(&server.https());
    assert_eq!(served_user(&server, &audit_id(&reply)), "system:anonymous");
}
