//! ServiceAccounts, built in (core v1, short name `sa`), and what kube-controller-manager keeps in every namespace:
//! a `default` service account and the `kube-root-ca.crt` ConfigMap holding the CA that verifies the server, made
//! again when deleted, its bundle put back when changed.

use std::time::Duration;

use e2e::{wait_until, Server};
use serde_json::json;

const DEADLINE: Duration = Duration::from_secs(20);

/// Creates a Tenant through the API.
fn create_tenant(server: &Server, name: &str) {
    let tenant =
        json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": name}});
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &tenant.to_string());
}

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

    // Deleted, they come back; a changed bundle is put back as kube's publisher does (the data is the bundle alone,
    // other metadata kept).
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
        &json!({"metadata": {"labels": {"mine": "yes"}}, "data": {"ca.crt": "tampered", "extra": "dropped"}}),
    )
    .expect(200);
    assert!(wait_until(DEADLINE, || {
        let cm = http
            .get("/api/v1/namespaces/team-a/configmaps/kube-root-ca.crt")
            .expect(200)
            .clone();
        cm["data"] == json!({"ca.crt": ca}) && cm["metadata"]["labels"]["mine"] == "yes"
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
    create_tenant(&server, "acme");
    let http = server.http();
    let path = "/tenants/acme/api/v1/namespaces/default/serviceaccounts/default";
    assert!(wait_until(DEADLINE, || http.get(path).status == 200), "{path}");
    assert!(wait_until(DEADLINE, || http
        .get("/tenants/acme/api/v1/namespaces/kube-system/configmaps/kube-root-ca.crt")
        .status
        == 200));
}

/// A kubeconfig for the secure port (of `tenant`, if any) that authenticates with a bearer `token`.
fn token_kubeconfig(server: &Server, tenant: Option<&str>, token: &str) -> e2e::KubectlAt {
    use base64::Engine as _;
    let ca = base64::engine::general_purpose::STANDARD.encode(server.ca_pem());
    let url = match tenant {
        Some(t) => format!("{}/tenants/{t}", server.secure_url()),
        None => server.secure_url(),
    };
    let path = server
        .root()
        .join(format!("kubeconfig-token-{}", tenant.unwrap_or("root")));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: s\n  cluster: {{server: \"{url}\", certificate-authority-data: {ca}}}\n\
             users:\n- name: u\n  user: {{token: \"{token}\"}}\ncontexts:\n- name: c\n  context: {{cluster: s, user: u}}\ncurrent-context: c\n"
        ),
    )
    .unwrap();
    e2e::KubectlAt {
        kubeconfig: path.display().to_string(),
        cache: server.root().join("kubectl-cache-token"),
    }
}

/// The user `kubectl auth whoami` shows, or kubectl's error.
fn whoami(kubectl: &e2e::KubectlAt) -> Result<serde_json::Value, String> {
    let out = kubectl.run(&["auth", "whoami", "-o", "json"], None);
    if out.status.success() {
        Ok(serde_json::from_slice(&out.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

#[test]
fn service_accounts_kubectl_create_token_authenticates_the_account_until_it_is_deleted() {
    let server = Server::start(&[]);
    server.kubectl_ok(&["create", "serviceaccount", "builder"]);
    let token = server.kubectl_ok(&[
        "create",
        "token",
        "builder",
        "--audience",
        "https://kubernetes.default.svc.cluster.local",
    ]);
    let token = token.trim();
    assert_eq!(token.split('.').count(), 3, "{token}");
    let kubectl = token_kubeconfig(&server, None, token);
    let user = whoami(&kubectl).expect("the token authenticates");
    assert_eq!(
        user["status"]["userInfo"]["username"], "system:serviceaccount:default:builder",
        "{user}"
    );
    let groups = &user["status"]["userInfo"]["groups"];
    for group in [
        "system:serviceaccounts",
        "system:serviceaccounts:default",
        "system:authenticated",
    ] {
        assert!(groups.as_array().unwrap().iter().any(|g| g == group), "{group}: {user}");
    }
    let uid = server.kubectl_json(&["get", "sa", "builder", "-o", "json"])["metadata"]["uid"].clone();
    assert_eq!(user["status"]["userInfo"]["uid"], uid, "{user}");
    assert!(
        user["status"]["userInfo"]["extra"]["authentication.kubernetes.io/credential-id"][0]
            .as_str()
            .is_some_and(|id| id.starts_with("JTI="))
    );
    // It is the account's: RBAC names it (no grant yet, then the view role).
    let err = kubectl.run(&["get", "configmaps"], None);
    assert!(String::from_utf8_lossy(&err.stderr)
        .contains("\"system:serviceaccount:default:builder\" cannot list resource \"configmaps\""));
    server.kubectl_ok(&[
        "create",
        "rolebinding",
        "builder-view",
        "--clusterrole=view",
        "--serviceaccount=default:builder",
    ]);
    assert!(wait_until(DEADLINE, || kubectl
        .run(&["get", "configmaps"], None)
        .status
        .success()));

    // The TokenRequest itself, as kube answers it: audiences and validity defaulted, kube's limits.
    let http = server.http();
    let answer = http
        .post_json(
            "/api/v1/namespaces/default/serviceaccounts/builder/token",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
        )
        .expect(201)
        .clone();
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    assert_eq!(
        answer["spec"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert!(answer["status"]["expirationTimestamp"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
    let status = http
        .post_json(
            "/api/v1/namespaces/default/serviceaccounts/builder/token",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 60}}),
        )
        .assert_status(422, "Invalid")
        .clone();
    assert_eq!(
        status["details"]["causes"][0]["message"],
        "Invalid value: 60: may not specify a duration less than 10 minutes"
    );
    http.post_json(
        "/api/v1/namespaces/default/serviceaccounts/missing/token",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}),
    )
    .assert_status(404, "NotFound");
    // Bound to a Secret: valid while the Secret is.
    server.kubectl_ok(&["create", "secret", "generic", "holder", "--from-literal=a=b"]);
    let bound = http
        .post_json(
            "/api/v1/namespaces/default/serviceaccounts/builder/token",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Secret", "name": "holder"}}}),
        )
        .expect(201)
        .clone();
    let bound = token_kubeconfig(&server, None, bound["status"]["token"].as_str().unwrap());
    whoami(&bound).expect("the bound token authenticates");
    server.kubectl_ok(&["delete", "secret", "holder"]);
    assert!(whoami(&bound).is_err(), "a token bound to a deleted Secret is refused");

    // The account deleted: its tokens are refused (401).
    server.kubectl_ok(&["delete", "sa", "builder"]);
    let err = whoami(&kubectl).unwrap_err();
    assert!(err.contains("Unauthorized"), "{err}");
}

#[test]
fn service_accounts_tokens_are_valid_in_their_tenant_only() {
    let server = Server::start(&[]);
    create_tenant(&server, "acme");
    let http = server.http();
    let path = "/tenants/acme/api/v1/namespaces/default/serviceaccounts/default";
    assert!(wait_until(DEADLINE, || http.get(path).status == 200), "{path}");
    let answer = http
        .post_json(
            &format!("{path}/token"),
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest"}),
        )
        .expect(201)
        .clone();
    let token = answer["status"]["token"].as_str().unwrap();
    let user = whoami(&token_kubeconfig(&server, Some("acme"), token)).expect("valid in its tenant");
    assert_eq!(
        user["status"]["userInfo"]["username"],
        "system:serviceaccount:default:default"
    );
    // At the root, where default/default exists too, and in another tenant: refused.
    assert!(wait_until(DEADLINE, || http
        .get("/api/v1/namespaces/default/serviceaccounts/default")
        .status
        == 200));
    let err = whoami(&token_kubeconfig(&server, None, token)).unwrap_err();
    assert!(err.contains("Unauthorized"), "{err}");
    // The issuer names the tenant.
    use base64::Engine as _;
    let payload = token.split('.').nth(1).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        claims["iss"], "https://kubernetes.default.svc.cluster.local/tenants/acme",
        "{claims}"
    );
    assert_eq!(claims["kubernetes.io"]["namespace"], "default");
}

#[test]
fn service_accounts_token_reviews_and_issuer_discovery_verify_tokens() {
    let server = Server::start(&[]);
    let http = server.http();
    server.kubectl_ok(&["create", "serviceaccount", "robot"]);
    let token = server.kubectl_ok(&["create", "token", "robot"]).trim().to_owned();
    let review = |token: &str, audiences: serde_json::Value| {
        http.post_json(
            "/apis/authentication.k8s.io/v1/tokenreviews",
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                "spec": {"token": token, "audiences": audiences}}),
        )
        .expect(201)
        .clone()
    };
    let ok = review(&token, json!([]));
    assert_eq!(ok["status"]["authenticated"], true, "{ok}");
    assert_eq!(ok["status"]["user"]["username"], "system:serviceaccount:default:robot");
    assert_eq!(
        ok["status"]["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    assert!(ok["status"]["user"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g == "system:serviceaccounts:default"));
    let elsewhere = review(&token, json!(["https://vault.example"]));
    assert!(elsewhere["status"]["authenticated"].is_null(), "{elsewhere}");
    assert!(
        elsewhere["status"]["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{elsewhere}"
    );
    let forged = review(&format!("{token}x"), json!([]));
    assert!(
        forged["status"]["error"].as_str().is_some_and(|e| !e.is_empty()),
        "{forged}"
    );
    http.post_json(
        "/apis/authentication.k8s.io/v1/tokenreviews",
        &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {}}),
    )
    .assert_status(400, "BadRequest");
    // A token made for another audience is valid there only.
    let vault = server.kubectl_ok(&["create", "token", "robot", "--audience", "https://vault.example"]);
    let vault = review(vault.trim(), json!(["https://vault.example"]));
    assert_eq!(
        vault["status"]["audiences"],
        json!(["https://vault.example"]),
        "{vault}"
    );

    // The issuer's discovery document and keys, as kube publishes them: the token verifies with them.
    let config = http.get("/.well-known/openid-configuration").expect(200).clone();
    assert_eq!(config["issuer"], "https://kubernetes.default.svc.cluster.local");
    assert_eq!(
        config["jwks_uri"],
        "https://kubernetes.default.svc.cluster.local/openid/v1/jwks"
    );
    let keys = http.get("/openid/v1/jwks").expect(200).clone();
    let jwks: jsonwebtoken::jwk::JwkSet = serde_json::from_value(keys.clone()).unwrap();
    let header = jsonwebtoken::decode_header(&token).unwrap();
    let jwk = jwks
        .find(header.kid.as_deref().unwrap())
        .expect("the token's key is published");
    let mut validation = jsonwebtoken::Validation::new(header.alg);
    validation.set_audience(&["https://kubernetes.default.svc.cluster.local"]);
    validation.set_issuer(&["https://kubernetes.default.svc.cluster.local"]);
    let claims = jsonwebtoken::decode::<serde_json::Value>(
        &token,
        &jsonwebtoken::DecodingKey::from_jwk(jwk).unwrap(),
        &validation,
    )
    .expect("the token verifies with the published key")
    .claims;
    assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
    // On the secure port: service accounts may read them (kube's system:service-account-issuer-discovery), others
    // (here without credentials) may not.
    let anonymous = e2e::Http::secure(server.secure_url(), &server.ca_pem(), None);
    let refused = anonymous.get("/openid/v1/jwks").status;
    assert!([401, 403].contains(&refused), "{refused}");
    let robot = token_kubeconfig(&server, None, &token);
    let raw = robot.ok(&["get", "--raw", "/openid/v1/jwks"], None);
    assert_eq!(serde_json::from_str::<serde_json::Value>(&raw).unwrap(), keys);
    // A tenant is an issuer of its own.
    create_tenant(&server, "acme");
    assert!(wait_until(DEADLINE, || http
        .get("/tenants/acme/.well-known/openid-configuration")
        .status
        == 200));
    let tenant = http
        .get("/tenants/acme/.well-known/openid-configuration")
        .expect(200)
        .clone();
    assert_eq!(
        tenant["issuer"],
        "https://kubernetes.default.svc.cluster.local/tenants/acme"
    );
}

/// Hosts sharing a store: a token minted by one authenticates on the other (the generated signing key is kept in
/// the store, made once), and the root CA ConfigMap is published by the leading host only (each host has its own CA
/// here: they would otherwise write it in turns without end).
#[test]
fn service_accounts_hosts_sharing_a_store_share_the_key_and_one_publishes() {
    let mut a = Server::start_on_etcd(&[], &["--leader-elect-lease-duration", "2s"]);
    let endpoint = a.etcd_mut().expect("on etcd").endpoint();
    let b = Server::start_with_args(
        &[],
        &["--etcd-servers", &endpoint, "--leader-elect-lease-duration", "2s"],
    );
    a.kubectl_ok(&["create", "serviceaccount", "shared"]);
    let token = a.kubectl_ok(&["create", "token", "shared"]).trim().to_owned();
    for host in [&a, &b] {
        let user = whoami(&token_kubeconfig(host, None, &token)).expect("the token authenticates on every host");
        assert_eq!(
            user["status"]["userInfo"]["username"],
            "system:serviceaccount:default:shared"
        );
    }
    let path = "/api/v1/namespaces/default/configmaps/kube-root-ca.crt";
    assert!(wait_until(DEADLINE, || a.http().get(path).status == 200));
    // Published by one host: its resourceVersion stays put.
    let first = a.http().get(path).expect(200)["metadata"]["resourceVersion"].clone();
    let bundles = [a.ca_pem(), b.ca_pem()];
    assert_ne!(bundles[0], bundles[1], "each host made its own CA");
    let published = a.http().get(path).expect(200)["data"]["ca.crt"].clone();
    assert!(bundles.iter().any(|b| published == b.as_str()));
    let settled = !wait_until(Duration::from_secs(5), || {
        a.http().get(path).expect(200)["metadata"]["resourceVersion"] != first
    });
    assert!(settled, "the hosts write the root CA ConfigMap in turns");
}

/// A TokenRequest passes admission as kube's does: a ValidatingAdmissionPolicy on `serviceaccounts/token` refuses
/// the audiences it does not allow.
#[test]
fn service_accounts_token_requests_pass_admission_policies() {
    let server = Server::start(&[]);
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: token-audiences.example.com}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [\"\"], apiVersions: [v1], resources: [serviceaccounts/token], operations: [CREATE]}
  validations:
  - {expression: \"!object.spec.audiences.exists(a, a == 'https://forbidden.example')\", message: this audience is not allowed}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: token-audiences}
spec:
  policyName: token-audiences.example.com
  validationActions: [Deny]
",
    );
    let refused = || {
        let out = server.kubectl(&["create", "token", "default", "--audience", "https://forbidden.example"]);
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("this audience is not allowed")
    };
    assert!(wait_until(DEADLINE, refused), "the policy never refused the token");
    server.kubectl_ok(&["create", "token", "default", "--audience", "https://allowed.example"]);
}

/// The signing and verifying keys as kubeadm and openssl write them: a PKCS#1 RSA signing key (kubeadm's `sa.key`)
/// and a SEC1 P-256 key among the verifying ones; both published, the token signed with RS256.
#[test]
fn service_accounts_keys_in_pkcs1_and_sec1() {
    let dir = tempfile::tempdir().unwrap();
    let (rsa, ec) = (dir.path().join("sa.key"), dir.path().join("old.key"));
    for (args, out) in [
        (vec!["genrsa", "-traditional", "-out"], &rsa),
        (vec!["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out"], &ec),
    ] {
        let made = std::process::Command::new("openssl")
            .args(&args)
            .arg(out)
            .output()
            .expect("run openssl");
        assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    }
    assert!(std::fs::read_to_string(&rsa)
        .unwrap()
        .starts_with("-----BEGIN RSA PRIVATE KEY-----"));
    let server = Server::start_with_args(
        &[],
        &[
            "--service-account-signing-key-file",
            rsa.to_str().unwrap(),
            "--service-account-key-file",
            ec.to_str().unwrap(),
        ],
    );
    let keys = server.http().get("/openid/v1/jwks").expect(200).clone();
    let kinds: Vec<&str> = keys["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|k| k["kty"].as_str())
        .collect();
    assert_eq!(kinds, ["RSA", "EC"], "{keys}");
    assert!(wait_until(DEADLINE, || server
        .http()
        .get("/api/v1/namespaces/default/serviceaccounts/default")
        .status
        == 200));
    let token = server.kubectl_ok(&["create", "token", "default"]).trim().to_owned();
    assert_eq!(
        jsonwebtoken::decode_header(&token).unwrap().alg,
        jsonwebtoken::Algorithm::RS256
    );
    let user = whoami(&token_kubeconfig(&server, None, &token)).expect("the RS256 token authenticates");
    assert_eq!(
        user["status"]["userInfo"]["username"],
        "system:serviceaccount:default:default"
    );
}
