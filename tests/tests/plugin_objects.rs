//! Plugins as API objects (`tenancy.wasm-apiserver.io/v1alpha1` Plugin), from a real OCI registry (Debian's
//! `docker-registry`, TLS from its own CA, basic authentication) with artifacts pushed by `wasm-apiserver plugin push`:
//! a tenant's admin creates a registry Secret and a Plugin with kubectl, and the resource is served; the tag is
//! resolved once (a moved tag changes nothing); each failure (a wrong digest, a layer that is not wasm, an unreachable
//! registry, bad credentials, a registry not allowed) gives Failed with a condition that names it while the previous
//! version keeps serving; RBAC keeps a tenant's admin to their tenant; deleting the Plugin stops serving its types and
//! keeps their data. One artifact named by 1,000 tenants is pulled and compiled once.

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::Duration;

use e2e::{flunder_v1beta1, server_binary, target_dir, wait_until, Registry, Server};
use serde_json::{json, Value};

const USER: &str = "robot";
const PASSWORD: &str = "s3cret-pass";
const T1: &str = "/tenants/t1";
const PLUGINS: &str = "/apis/tenancy.wasm-apiserver.io/v1alpha1/plugins";
const FLUNDERS: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";

/// `wasm-apiserver plugin push FILE REF` with the registry's user; the printed reference by digest.
fn push(registry: &Registry, plugin: &str, reference: &str) -> String {
    let mut child = Command::new(server_binary())
        .args(["plugin", "push"])
        .arg(target_dir().join("plugins").join(format!("{plugin}.wasm")))
        .arg(reference)
        .args(["--username", USER, "--password-stdin", "--ca-file"])
        .arg(registry.ca_file())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(PASSWORD.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "push failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn digest_of(by_digest: &str) -> String {
    by_digest.split_once('@').expect("a reference by digest").1.to_owned()
}

fn plugin_yaml(name: &str, reference: &str, secret: Option<&str>) -> String {
    let secret = secret.map_or(String::new(), |s| format!("      pullSecretRef: {{name: {s}}}\n"));
    format!(
        "apiVersion: tenancy.wasm-apiserver.io/v1alpha1\nkind: Plugin\nmetadata:\n  name: {name}\nspec:\n  source:\n    oci:\n      reference: {reference}\n{secret}"
    )
}

/// The Plugin `name` in tenant t1 once `done` holds for it, or a panic with the object and the log.
fn plugin_when(server: &Server, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let path = format!("{T1}{PLUGINS}/{name}");
    let mut last = Value::Null;
    let ok = wait_until(Duration::from_secs(30), || {
        last = server.http().get(&path).json.clone();
        done(&last)
    });
    assert!(ok, "plugin {name} never {what}: {last:#}\n{}", server.log_tail(30));
    last
}

fn condition<'a>(plugin: &'a Value, kind: &str) -> &'a Value {
    plugin["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == kind))
        .unwrap_or_else(|| panic!("no {kind} condition in {plugin}"))
}

/// Waits until the Plugin `name` failed with `reason` (Pulled and Ready say it) while the version of `digest` still
/// serves (its flunder answers).
fn failed_while_serving(server: &Server, name: &str, reason: &str, digest: &str) {
    let failed = plugin_when(server, name, &format!("failed with {reason}"), |p| {
        p["status"]["phase"] == "Failed"
            && p["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Ready" && c["reason"] == reason))
    });
    assert_eq!(condition(&failed, "Ready")["status"], "False", "{failed}");
    let message = condition(&failed, "Ready")["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(message.contains("the previous version"), "{message}");
    assert_eq!(failed["status"]["served"]["digest"], digest, "{failed}");
    server.http().get(&format!("{T1}{FLUNDERS}/kept")).expect(200);
}

#[test]
fn a_tenant_admin_installs_a_plugin_from_a_registry_and_each_failure_is_named() {
    let registry = Registry::start(&[(USER, PASSWORD)]);
    let v1 = push(&registry, "wardle", &format!("{}/plugins/wardle:v1", registry.host));
    let v1_digest = digest_of(&v1);
    // A registry the host allows that nothing listens on.
    let closed = format!("127.0.0.1:{}", e2e::free_port().unwrap());
    let allowed = format!("{},{closed}", registry.host);
    let ca = registry.ca_file();
    let server = Server::start_with_args(
        &["wardle"],
        &[
            "--plugin-registries",
            &allowed,
            "--plugin-registry-ca-file",
            ca.to_str().unwrap(),
        ],
    );
    let http = server.http();
    for (name, registries) in [
        ("t1", String::new()),
        ("t2", "  allowedRegistries: [other.example.com]\n".to_owned()),
    ] {
        server.kubectl_stdin_ok(
            &["apply", "-f", "-"],
            &format!("apiVersion: tenancy.wasm-apiserver.io/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  admins: {{users: [alice-{name}]}}\n{registries}"),
        );
    }
    assert!(
        wait_until(Duration::from_secs(10), || http
            .get("/tenants/t2/api/v1/namespaces")
            .status
            == 200
            && http.get("/tenants/t1/api/v1/namespaces").status == 200),
        "the tenants were never served"
    );

    // alice, t1's admin, stores the registry's credentials and installs the plugin, with kubectl.
    let kc = format!(
        "--kubeconfig={}",
        server.tenant_kubeconfig(Some("t1"), "alice-t1", &[]).display()
    );
    let mut out = String::new();
    assert!(
        wait_until(Duration::from_secs(10), || {
            let o = server.kubectl(&[
                &kc,
                "create",
                "secret",
                "docker-registry",
                "regcred",
                &format!("--docker-server={}", registry.host),
                &format!("--docker-username={USER}"),
                &format!("--docker-password={PASSWORD}"),
            ]);
            out = String::from_utf8_lossy(&o.stderr).into_owned();
            o.status.success()
        }),
        "alice cannot create the secret: {out}"
    );
    let tag = format!("{}/plugins/wardle:v1", registry.host);
    server.kubectl_stdin_ok(
        &[&kc, "apply", "-f", "-"],
        &plugin_yaml("wardle", &tag, Some("regcred")),
    );
    let serving = plugin_when(&server, "wardle", "served", |p| p["status"]["phase"] == "Serving");
    assert_eq!(serving["status"]["digest"], v1_digest.as_str(), "{serving}");
    assert_eq!(
        serving["status"]["resolved"],
        json!({"reference": tag, "digest": v1_digest}),
        "{serving}"
    );
    assert_eq!(serving["status"]["served"]["group"], "wardle.example.com", "{serving}");
    for kind in ["Pulled", "Verified", "Compiled", "Ready"] {
        assert_eq!(condition(&serving, kind)["status"], "True", "{kind}: {serving}");
    }
    http.post_json(&format!("{T1}{FLUNDERS}"), &flunder_v1beta1("kept", "t1"))
        .expect(201);
    let table = server.kubectl_ok(&[&kc, "get", "plugins"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "PHASE", "DIGEST", "RESOURCES", "AGE"], "{table}");
    let row = table.lines().nth(1).unwrap();
    assert!(row.starts_with("wardle") && row.contains("Serving"), "{table}");
    assert!(
        row.contains(&v1_digest[..19]) && !row.contains(&v1_digest[..20]),
        "the short digest: {table}"
    );
    assert!(
        row.contains("flunders,fischers") || row.contains("fischers,flunders"),
        "{table}"
    );

    // The tag moves to another artifact: nothing changes while the object's source does not.
    push(&registry, "tasks", &tag);
    http.patch(
        &format!("{T1}{PLUGINS}/wardle"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"touched": "yes"}}}),
    )
    .expect(200);
    let touched = plugin_when(&server, "wardle", "kept its digest", |p| {
        p["metadata"]["labels"]["touched"] == "yes"
    });
    assert_eq!(touched["status"]["digest"], v1_digest.as_str(), "{touched}");
    assert_eq!(touched["status"]["phase"], "Serving", "{touched}");
    http.get(&format!("{T1}{FLUNDERS}/kept")).expect(200);

    // Each failure is named, and the previous version keeps serving.
    let set_reference = |reference: &str, secret: Option<&str>| {
        let secret_ref = secret.map_or(Value::Null, |s| json!({"name": s}));
        let oci = json!({"reference": reference, "pullSecretRef": secret_ref});
        http.patch(
            &format!("{T1}{PLUGINS}/wardle"),
            "application/merge-patch+json",
            &json!({"spec": {"source": {"oci": oci}}}),
        )
        .expect(200);
    };
    let missing = oci::sha256_digest(b"no such manifest");
    set_reference(&format!("{}/plugins/wardle@{missing}", registry.host), Some("regcred"));
    failed_while_serving(&server, "wardle", "NotFound", &v1_digest);

    let text = format!("{}/plugins/text:v1", registry.host);
    push_raw(&registry, &text, oci::LAYER_MEDIA_TYPE, b"hello, not wasm");
    set_reference(&text, Some("regcred"));
    failed_while_serving(&server, "wardle", "NotWasm", &v1_digest);

    set_reference(&format!("{closed}/plugins/wardle:v1"), None);
    failed_while_serving(&server, "wardle", "RegistryUnreachable", &v1_digest);

    server.kubectl_ok(&[
        &kc,
        "create",
        "secret",
        "docker-registry",
        "wrongcred",
        &format!("--docker-server={}", registry.host),
        &format!("--docker-username={USER}"),
        "--docker-password=not-the-password",
    ]);
    set_reference(&tag.replace(":v1", ":v2"), Some("wrongcred"));
    failed_while_serving(&server, "wardle", "Unauthorized", &v1_digest);

    set_reference("registry.example.com/plugins/wardle:v1", None);
    failed_while_serving(&server, "wardle", "RegistryNotAllowed", &v1_digest);

    // A reference by digest serves that artifact again.
    set_reference(&v1, Some("regcred"));
    let back = plugin_when(&server, "wardle", "served again", |p| {
        p["status"]["phase"] == "Serving" && p["status"]["digest"] == v1_digest.as_str()
    });
    assert_eq!(condition(&back, "Ready")["status"], "True", "{back}");

    // A tenant's allowedRegistries narrow the host's.
    let t2_plugins = format!("/tenants/t2{PLUGINS}");
    http.post_json(
        &t2_plugins,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin", "metadata": {"name": "wardle"},
                "spec": {"source": {"oci": {"reference": v1}}}}),
    )
    .expect(201);
    let mut t2 = Value::Null;
    assert!(
        wait_until(Duration::from_secs(30), || {
            t2 = http.get(&format!("{t2_plugins}/wardle")).json.clone();
            t2["status"]["phase"] == "Failed"
        }),
        "{t2}"
    );
    assert_eq!(condition(&t2, "Pulled")["reason"], "RegistryNotAllowed", "{t2}");

    // RBAC: alice installs in her tenant only; she cannot create tenants nor install at the root.
    let alice = server.https_as("alice-t1", &[]);
    let plugin = json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin", "metadata": {"name": "x"},
                        "spec": {"source": {"oci": {"reference": v1}}}});
    alice
        .post_json(&format!("/tenants/t2{PLUGINS}"), &plugin)
        .assert_status(403, "Forbidden");
    alice.post_json(PLUGINS, &plugin).assert_status(403, "Forbidden");
    alice
        .post_json(
            "/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants",
            &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "t3"}}),
        )
        .assert_status(403, "Forbidden");

    // Deleting the Plugin stops serving its types and keeps their data.
    server.kubectl_ok(&[&kc, "delete", "plugin", "wardle"]);
    assert!(
        wait_until(Duration::from_secs(10), || http
            .get(&format!("{T1}{FLUNDERS}/kept"))
            .status
            == 404),
        "the flunders were still served"
    );
    server.kubectl_stdin_ok(&[&kc, "apply", "-f", "-"], &plugin_yaml("wardle", &v1, Some("regcred")));
    plugin_when(&server, "wardle", "served after its re-creation", |p| {
        p["status"]["phase"] == "Serving"
    });
    http.get(&format!("{T1}{FLUNDERS}/kept")).expect(200);
}

/// Pushes an artifact with any layer, as a client that does not check it would.
fn push_raw(registry: &Registry, reference: &str, layer_type: &str, data: &[u8]) {
    let raw = oci_client::Client::new(oci_client::client::ClientConfig {
        extra_root_certificates: vec![oci_client::client::Certificate {
            encoding: oci_client::client::CertificateEncoding::Pem,
            data: registry.ca.pem.clone().into_bytes(),
        }],
        ..Default::default()
    });
    let auth = oci_client::secrets::RegistryAuth::Basic(USER.into(), PASSWORD.into());
    let layer = oci_client::client::ImageLayer::new(data.to_vec(), layer_type.to_owned(), None);
    let config = oci_client::client::Config {
        data: b"{}".to_vec(),
        media_type: oci::CONFIG_MEDIA_TYPE.to_owned(),
        annotations: None,
    };
    let reference: oci_client::Reference = reference.parse().unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(raw.push(&reference, &[layer], config, &auth, None))
        .expect("pushing a raw artifact");
}

/// A counter of the server's `/metrics`, 0 when absent.
#[test]
fn an_artifact_many_tenants_name_is_pulled_and_compiled_once_per_host() {
    let registry = Registry::start(&[]);
    let tag = format!("{}/plugins/partial:v1", registry.host);
    push_anonymous(&registry, "partial", &tag);
    let ca = registry.ca_file();
    let server = Server::start_with_args(
        &["wardle"],
        &[
            "--plugin-registries",
            &registry.host,
            "--plugin-registry-ca-file",
            ca.to_str().unwrap(),
        ],
    );
    let http = server.http();
    let compiled_before = server.metric("wasm_apiserver_plugin_components_compiled_total");
    let loaded_before = server.metric("wasm_apiserver_plugin_components_loaded");
    // The scale: an artifact used by 1,000 tenants is pulled and compiled once per host.
    let tenants: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
    for t in &tenants {
        http.post_json(
            "/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants",
            &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": t}}),
        )
        .expect(201);
    }
    for t in &tenants {
        let plugins = format!("/tenants/{t}{PLUGINS}");
        assert!(
            wait_until(Duration::from_secs(10), || http.get(&plugins).status == 200),
            "{t} was never served"
        );
        http.post_json(
            &plugins,
            &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin", "metadata": {"name": "notes"},
                    "spec": {"source": {"oci": {"reference": tag}}}}),
        )
        .expect(201);
    }
    for t in &tenants {
        let path = format!("/tenants/{t}{PLUGINS}/notes");
        let mut last = Value::Null;
        assert!(
            wait_until(Duration::from_secs(30), || {
                last = http.get(&path).json.clone();
                last["status"]["phase"] == "Serving"
            }),
            "{t}'s plugin never served: {last:#}"
        );
    }
    // Pulled once; compiled at most once (the tests' compile cache may hold it), and one component in memory for all.
    assert_eq!(server.metric("wasm_apiserver_plugin_artifacts_pulled_total"), 1.0);
    let compiled = server.metric("wasm_apiserver_plugin_components_compiled_total") - compiled_before;
    assert!(compiled <= 1.0, "compiled {compiled} times");
    assert_eq!(
        server.metric("wasm_apiserver_plugin_components_loaded") - loaded_before,
        1.0
    );
}

/// `wasm-apiserver plugin push` to an anonymous registry.
fn push_anonymous(registry: &Registry, plugin: &str, reference: &str) {
    let out = Command::new(server_binary())
        .args(["plugin", "push"])
        .arg(target_dir().join("plugins").join(format!("{plugin}.wasm")))
        .arg(reference)
        .arg("--ca-file")
        .arg(registry.ca_file())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "push failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}
