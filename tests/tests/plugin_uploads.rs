//! Plugins uploaded through the API (`spec.source.upload`): the component PUT to `plugins/<name>/content` with curl
//! and with the Python `kubernetes` client, on one of two hosts sharing an etcd, is served by both (the bytes are
//! stored in chunks every host reads). Bad uploads get clear errors: the wrong media type, bytes that are not a
//! component, too many bytes, a Plugin that takes no upload, one that does not exist; a component whose schemas'
//! examples fail, as `plugin check` runs them, is not served.

use std::process::Command;
use std::time::Duration;

use e2e::{flunder_v1beta1, target_dir, wait_until, Server};
use serde_json::{json, Value};

const PLUGINS: &str = "/tenants/t1/apis/tenancy.wasm-apiserver.io/v1alpha1/plugins";
const FLUNDERS: &str = "/tenants/t1/apis/wardle.example.com/v1beta1/namespaces/default/flunders";

fn component(name: &str) -> std::path::PathBuf {
    target_dir().join("plugins").join(format!("{name}.wasm"))
}

fn upload_plugin(name: &str) -> Value {
    json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin", "metadata": {"name": name},
           "spec": {"source": {"upload": {}}}})
}

/// Creates the tenant t1 through `server`.
fn create_t1(server: &Server) {
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: tenancy.wasm-apiserver.io/v1alpha1\nkind: Tenant\nmetadata: {name: t1}\n",
    );
}

/// Waits until `server` serves t1.
fn wait_for_t1(server: &Server) {
    assert!(
        wait_until(Duration::from_secs(10), || server.http().get(PLUGINS).status == 200),
        "t1 was never served on {}",
        server.base_url()
    );
}

/// Creates the Plugin `name` of t1 to upload, then PUTs the test component `file` to its content; the component's
/// digest.
fn upload(server: &Server, name: &str, file: &str) -> String {
    server.http().post_json(PLUGINS, &upload_plugin(name)).expect(201);
    let bytes = std::fs::read(component(file)).unwrap();
    let digest = oci::sha256_digest(&bytes);
    server
        .http()
        .send(
            reqwest::Method::PUT,
            &format!("{PLUGINS}/{name}/content"),
            Some("application/wasm"),
            bytes,
        )
        .expect(200);
    digest
}

/// The Plugin `name` of t1 on `server` once it serves `digest`.
fn serving(server: &Server, name: &str, digest: &str) -> Value {
    let mut last = Value::Null;
    let ok = wait_until(Duration::from_secs(60), || {
        last = server.http().get(&format!("{PLUGINS}/{name}")).json.clone();
        last["status"]["phase"] == "Serving" && last["status"]["served"]["digest"] == digest
    });
    assert!(
        ok,
        "plugin {name} never served {digest} on {}: {last:#}\n{}",
        server.base_url(),
        server.log_tail(20)
    );
    last
}

#[test]
fn an_uploaded_plugin_is_served_by_every_host_on_the_store() {
    let mut a = Server::start_on_etcd(&["wardle"], &["--plugin-max-upload-bytes", "4Mi"]);
    let endpoint = a.etcd_mut().expect("on etcd").endpoint();
    let b = Server::start_with_args(
        &["wardle"],
        &["--etcd-servers", &endpoint, "--plugin-max-upload-bytes", "4Mi"],
    );
    create_t1(&a);
    for server in [&a, &b] {
        wait_for_t1(server);
    }

    // A Plugin to upload waits for its component.
    a.http().post_json(PLUGINS, &upload_plugin("wardle")).expect(201);
    let mut waiting = Value::Null;
    assert!(
        wait_until(Duration::from_secs(10), || {
            waiting = a.http().get(&format!("{PLUGINS}/wardle")).json.clone();
            waiting["status"]["conditions"][0]["reason"] == "WaitingForUpload"
        }),
        "{waiting:#}"
    );
    assert_eq!(waiting["status"]["phase"], "Pending", "{waiting}");

    // Uploaded with curl to host A, served by A and B.
    let wardle = std::fs::read(component("wardle")).unwrap();
    let digest = oci::sha256_digest(&wardle);
    let out = Command::new("curl")
        .args([
            "-sS",
            "-X",
            "PUT",
            "-H",
            "Content-Type: application/wasm",
            "--data-binary",
        ])
        .arg(format!("@{}", component("wardle").display()))
        .arg(format!("{}{PLUGINS}/wardle/content", a.base_url()))
        .output()
        .expect("curl");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "curl's answer is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    assert_eq!(answer["kind"], "Plugin", "{answer}");
    assert_eq!(answer["status"]["resolved"]["digest"], digest.as_str(), "{answer}");
    for server in [&a, &b] {
        let plugin = serving(server, "wardle", &digest);
        assert_eq!(plugin["status"]["served"]["group"], "wardle.example.com", "{plugin}");
    }
    a.http()
        .post_json(FLUNDERS, &flunder_v1beta1("uploaded", "t1"))
        .expect(201);
    b.http().get(&format!("{FLUNDERS}/uploaded")).expect(200);

    // Uploaded with the Python client to host B, served by A.
    b.http().post_json(PLUGINS, &upload_plugin("partial")).expect(201);
    let partial = std::fs::read(component("partial")).unwrap();
    let partial_digest = oci::sha256_digest(&partial);
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script = r#"
import json, sys
from kubernetes import config
api = config.new_client_from_config(config_file=sys.argv[1])
with open(sys.argv[2], "rb") as f:
    body = f.read()
method, url, headers, _, _ = api.param_serialize(
    "PUT", "/tenants/t1/apis/tenancy.wasm-apiserver.io/v1alpha1/plugins/{name}/content",
    path_params={"name": "partial"},
    header_params={"Content-Type": "application/wasm", "Accept": "application/json"},
    auth_settings=["BearerToken"])
response = api.call_api(method, url, header_params=headers, body=body)
response.read()
print(response.status, json.loads(response.data)["status"]["resolved"]["digest"])
"#;
    let out = Command::new(&python)
        .args(["-c", script])
        .arg(b.kubeconfig_path())
        .arg(component("partial"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    let printed = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(
        printed,
        format!("200 {partial_digest}"),
        "the Python client's upload: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serving(&a, "partial", &partial_digest);
    serving(&b, "partial", &partial_digest);

    // Mistakes are named.
    let http = a.http();
    let put =
        |path: &str, content_type: &str, body: Vec<u8>| http.send(reqwest::Method::PUT, path, Some(content_type), body);
    put(&format!("{PLUGINS}/wardle/content"), "application/json", wardle.clone())
        .assert_status(415, "UnsupportedMediaType");
    let e = put(
        &format!("{PLUGINS}/wardle/content"),
        "application/wasm",
        b"not a component".to_vec(),
    );
    e.assert_status(400, "BadRequest");
    assert!(e.text.contains("not a WebAssembly component"), "{}", e.text);
    put(
        &format!("{PLUGINS}/wardle/content"),
        "application/wasm",
        vec![0; 5 << 20],
    )
    .assert_status(413, "RequestEntityTooLarge");
    put(
        &format!("{PLUGINS}/nothing/content"),
        "application/wasm",
        wardle.clone(),
    )
    .assert_status(404, "NotFound");
    http.post_json(
        PLUGINS,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin", "metadata": {"name": "pulled"},
                "spec": {"source": {"oci": {"reference": "registry.example.com/p:v1"}}}}),
    )
    .expect(201);
    let e = put(&format!("{PLUGINS}/pulled/content"), "application/wasm", wardle.clone());
    e.assert_status(400, "BadRequest");
    assert!(e.text.contains("takes no upload"), "{}", e.text);
    // The object's own verbs are not the content's.
    let e = http.get(&format!("{PLUGINS}/wardle/content"));
    assert_eq!(e.status, 405, "{}", e.text);
}

#[test]
fn a_component_whose_examples_fail_is_not_served() {
    let server = Server::start(&["wardle"]);
    create_t1(&server);
    wait_for_t1(&server);
    upload(&server, "vaults", "guarded");
    let mut last = Value::Null;
    assert!(
        wait_until(Duration::from_secs(60), || {
            last = server.http().get(&format!("{PLUGINS}/vaults")).json.clone();
            last["status"]["phase"] == "Failed"
        }),
        "{last:#}"
    );
    let conditions = last["status"]["conditions"].as_array().unwrap();
    let compiled = conditions.iter().find(|c| c["type"] == "Compiled").unwrap();
    assert_eq!(compiled["status"], "False", "{last:#}");
    assert_eq!(compiled["reason"], "InvalidExample", "{last:#}");
    let message = compiled["message"].as_str().unwrap();
    assert!(message.contains("vaults v1") && message.contains("sealed"), "{message}");
    let vaults = server
        .http()
        .get("/tenants/t1/apis/guarded.example.com/v1/namespaces/default/vaults");
    assert_eq!(vaults.status, 404, "{}", vaults.text);
}

/// The reason of the Plugin's `Compiled` condition.
fn compiled_reason(plugin: &Value) -> String {
    plugin["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Compiled"))
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn a_new_component_is_served_from_the_baseline_compiler_then_from_the_optimized_build_without_a_failed_request() {
    // An empty compile cache of its own: the Python example was never compiled for this server.
    let cache = tempfile::tempdir().unwrap();
    let cache_dir = cache.path().display().to_string();
    let server = Server::start_with_args(
        &["wardle"],
        &["--plugin-baseline-tier=true", "--plugin-cache-dir", &cache_dir],
    );
    create_t1(&server);
    wait_for_t1(&server);
    let digest = upload(&server, "books", "books");

    // Served from Winch first: the optimizing compiler has not finished (it takes several times longer).
    let first = serving(&server, "books", &digest);
    assert_eq!(compiled_reason(&first), "BaselineCompiled", "{first:#}");
    assert!(server.metric("wasm_apiserver_plugin_components_compiled_baseline_total") >= 1.0);
    const BOOKS: &str = "/tenants/t1/apis/books.example.com/v1/namespaces/default/books";
    let book = |name: &str| {
        json!({"apiVersion": "books.example.com/v1", "kind": "Book",
               "metadata": {"name": name, "namespace": "default"},
               "spec": {"title": "Dune", "authors": ["Frank Herbert"]}})
    };
    let created = server.http().post_json(BOOKS, &book("from-winch"));
    assert_eq!(created.expect(201)["spec"]["title"], "Dune", "{}", created.text);

    // Requests go on while the optimized build compiles and is swapped in: none fails.
    let mut requests = 0;
    let mut failed = Vec::new();
    let mut last = Value::Null;
    let swapped = wait_until(Duration::from_secs(180), || {
        requests += 1;
        let name = format!("during-{requests}");
        let reply = server.http().post_json(BOOKS, &book(&name));
        if reply.status != 201 {
            failed.push(format!("create {name}: {} {}", reply.status, reply.text));
        }
        let reply = server.http().get(&format!("{BOOKS}/from-winch"));
        if reply.status != 200 {
            failed.push(format!("get: {} {}", reply.status, reply.text));
        }
        last = server.http().get(&format!("{PLUGINS}/books")).json.clone();
        compiled_reason(&last) == "Compiled"
    });
    assert!(
        swapped,
        "the optimized build never replaced Winch's: {last:#}\n{}",
        server.log_tail(30)
    );
    assert!(
        failed.is_empty(),
        "{} of {requests} rounds failed: {failed:#?}",
        failed.len()
    );
    assert_eq!(last["status"]["phase"], "Serving", "{last:#}");
    assert_eq!(last["status"]["served"]["digest"], digest.as_str(), "{last:#}");
    assert!(server.metric("wasm_apiserver_plugin_components_compiled_total") >= 1.0);
    let log = server.log_tail(400);
    assert!(log.contains("optimized build compiled"), "{log}");

    // The objects created on either build are served by the optimized one, as its defaulting and validation say.
    let listed = server.http().get(BOOKS);
    let names: Vec<&str> = listed.expect(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["metadata"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"from-winch") && names.contains(&"during-1"),
        "{names:?}"
    );
    let mut anonymous = book("anonymous");
    anonymous["spec"]["authors"] = json!([""]);
    let invalid = server.http().post_json(BOOKS, &anonymous);
    assert_eq!(
        invalid.status, 422,
        "the plugin's own rule (a non-empty author): {}",
        invalid.text
    );
}
