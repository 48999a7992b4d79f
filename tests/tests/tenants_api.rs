//! Tenants as API objects (`tenancy.wasm-apiserver.io/v1alpha1` Tenant at the root): created, changed and deleted
//! with kubectl, served under `/tenants/<name>/` as soon as the host's watch sees them, reconfigured by their spec,
//! and on delete no longer served at once, then their data deleted through the finalizer (Terminating, then gone),
//! or kept with `deletionPolicy: Retain`. The default tenant and tenant directories stay read-only; only the root's
//! admins write tenants. On the embedded store and on etcd, the deleted tenant's keys are checked gone.

use std::time::Duration;

use e2e::{wait_until, Server};
use serde_json::{json, Value};

const TENANTS: &str = "/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants";
const FINALIZER: &str = "tenancy.wasm-apiserver.io/data";

fn tenant_yaml(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: tenancy.wasm-apiserver.io/v1alpha1\nkind: Tenant\nmetadata:\n  name: {name}\nspec:\n  admins:\n    users: [alice]\n{extra}"
    )
}

/// Waits until `/tenants/<name>/` answers (a namespace list), or panics with the log.
fn wait_served(server: &Server, name: &str) {
    let path = format!("/tenants/{name}/api/v1/namespaces");
    assert!(
        wait_until(Duration::from_secs(10), || server.http().get(&path).status == 200),
        "tenant {name} was never served: {}\n{}",
        server.http().get(&path).text,
        server.log_tail(30)
    );
}

fn namespace(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
}

#[test]
fn tenants_are_created_changed_and_deleted_through_the_api() {
    // On the embedded store, whatever E2E_STORAGE says: its keys are read at the end.
    let mut server = Server::try_start_with_args(&["wardle", "t1/wardle"], &[]).unwrap();
    let http = server.http();

    // Created with kubectl (server-side apply), served under /tenants/t9/.
    server.kubectl_stdin_ok(
        &["apply", "--server-side", "-f", "-"],
        &tenant_yaml("t9", "  limits:\n    objects: 50\n"),
    );
    wait_served(&server, "t9");
    let t9 = http.get(&format!("{TENANTS}/t9")).expect(200).clone();
    assert_eq!(t9["status"]["source"], "API", "{t9}");
    assert_eq!(t9["status"]["phase"], "Serving", "{t9}");
    assert_eq!(t9["status"]["path"], "/tenants/t9", "{t9}");
    assert_eq!(t9["status"]["observedGeneration"], t9["metadata"]["generation"], "{t9}");
    assert_eq!(t9["status"]["effectiveLimits"]["objects"], 50, "{t9}");
    assert_eq!(t9["metadata"]["finalizers"], json!([FINALIZER]), "{t9}");
    // The object keeps the spec it was given.
    assert_eq!(
        t9["spec"],
        json!({"admins": {"users": ["alice"]}, "limits": {"objects": 50}})
    );
    let table = server.kubectl_ok(&["get", "tenants"]);
    let row = table
        .lines()
        .find(|l| l.starts_with("t9 "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("Serving"), "{table}");

    // Its admins are its spec's: alice works inside t9, and nowhere at the root.
    let kubeconfig = server.tenant_kubeconfig(Some("t9"), "alice", &[]);
    let kc = format!("--kubeconfig={}", kubeconfig.display());
    let mut out = String::new();
    assert!(
        wait_until(Duration::from_secs(10), || {
            let o = server.kubectl(&[&kc, "create", "namespace", "team"]);
            out = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            o.status.success()
        }),
        "alice cannot create a namespace in t9: {out}"
    );
    let alice = server.https_as("alice", &[]);
    alice
        .post_json(TENANTS, &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "mine"}}))
        .assert_status(403, "Forbidden");
    alice
        .patch(
            &format!("{TENANTS}/t9"),
            "application/merge-patch+json",
            &json!({"spec": {"limits": {"objects": 100000}}}),
        )
        .assert_status(403, "Forbidden");
    // Inside the tenant, its view of itself is read-only.
    let own = format!("/tenants/t9{TENANTS}/t9");
    let e = http.patch(
        &own,
        "application/merge-patch+json",
        &json!({"spec": {"limits": {"objects": 1}}}),
    );
    assert_eq!(e.status, 405, "{}", e.text);

    // A changed spec applies: the limit in effect follows, with the generation.
    http.patch(
        &format!("{TENANTS}/t9"),
        "application/merge-patch+json",
        &json!({"spec": {"limits": {"objects": 60}}}),
    )
    .expect(200);
    assert!(
        wait_until(Duration::from_secs(10), || {
            let t = http.get(&format!("{TENANTS}/t9"));
            t.json["status"]["effectiveLimits"]["objects"] == 60
                && t.json["status"]["observedGeneration"] == t.json["metadata"]["generation"]
        }),
        "the changed limit never took effect: {}",
        http.get(&format!("{TENANTS}/t9")).text
    );

    // A spec with mistakes is refused whole, each field named.
    let invalid = |spec: Value| {
        let reply = http.post_json(
            TENANTS,
            &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "t7"},
                    "spec": spec}),
        );
        reply.assert_status(422, "Invalid");
        let fields: Vec<String> = reply.json["details"]["causes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["field"].as_str().unwrap().to_owned())
            .collect();
        (fields, reply.text.clone())
    };
    let (fields, text) = invalid(json!({"limits": {"objects": -1, "maxInflight": 0, "pluginCallTimeout": "soon"}}));
    assert_eq!(
        fields,
        [
            "spec.limits.objects",
            "spec.limits.maxInflight",
            "spec.limits.pluginCallTimeout"
        ],
        "{text}"
    );
    let (fields, text) = invalid(json!({"deletionPolicy": "Keep", "allowedRegistries": ["https://r.example.com"]}));
    assert_eq!(fields, ["spec.deletionPolicy"], "{text}");
    let (fields, text) = invalid(json!({"allowedRegistries": ["https://r.example.com"]}));
    assert_eq!(fields, ["spec.allowedRegistries[0]"], "{text}");
    http.post_json(
        TENANTS,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "Bad_Name"}}),
    )
    .assert_status(422, "Invalid");

    // The default tenant and the tenant directories are the host's.
    for name in ["default", "t1"] {
        let e = server.kubectl_err(&["delete", "tenant", name]);
        assert!(e.contains("Forbidden") || e.contains("forbidden"), "{e}");
        http.patch(
            &format!("{TENANTS}/{name}"),
            "application/merge-patch+json",
            &json!({"spec": {"limits": {"objects": 1}}}),
        )
        .assert_status(403, "Forbidden");
    }
    let e = server.kubectl_stdin_err(&["create", "-f", "-"], &tenant_yaml("t1", ""));
    assert!(e.contains("tenant directory"), "{e}");
    let claimed = http.post_json(
        TENANTS,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "t6"},
                "status": {"source": "Directory"}}),
    );
    claimed.assert_status(403, "Forbidden");

    // Deleted: not served from the DELETE's answer on, Terminating until its data is gone, then gone.
    let deleted = http.delete(&format!("{TENANTS}/t9")).expect(200).clone();
    assert!(deleted["metadata"]["deletionTimestamp"].is_string(), "{deleted}");
    assert_eq!(deleted["status"]["phase"], "Terminating", "{deleted}");
    http.get("/tenants/t9/api/v1/namespaces").assert_status(404, "NotFound");
    assert!(
        wait_until(Duration::from_secs(10), || http.get(&format!("{TENANTS}/t9")).status
            == 404),
        "t9 was never finalized: {}\n{}",
        http.get(&format!("{TENANTS}/t9")).text,
        server.log_tail(20)
    );

    // Retain keeps the data: a Tenant of the same name serves it again.
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &tenant_yaml("t8", "  deletionPolicy: Retain\n"));
    wait_served(&server, "t8");
    http.post_json("/tenants/t8/api/v1/namespaces", &namespace("kept"))
        .expect(201);
    server.kubectl_ok(&["delete", "tenant", "t8"]);
    http.get(&format!("{TENANTS}/t8")).assert_status(404, "NotFound");
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &tenant_yaml("t8", ""));
    wait_served(&server, "t8");
    http.get("/tenants/t8/api/v1/namespaces/kept").expect(200);

    // A tenant created through the API is served again after a restart, before the server is ready.
    server.restart();
    server.http().get("/tenants/t8/api/v1/namespaces/kept").expect(200);

    // In the store: t9's keys are gone, t8's are there.
    server.stop();
    let store = storage::embedded::EmbeddedStorage::open(&server.root().join("data").join("store")).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let count = |prefix: &str| {
        runtime
            .block_on(storage::Storage::list(&store, prefix, storage::ListOptions::default()))
            .unwrap()
            .items
            .len()
    };
    assert_eq!(count("/tenants/t9/"), 0);
    assert!(count("/tenants/t8/") > 0);
}

#[test]
fn a_deleted_tenant_s_keys_are_gone_from_etcd() {
    let mut server = Server::start_on_etcd(&["wardle"], &[]);
    let endpoint = server.etcd_mut().expect("on etcd").endpoint();
    let http = server.http();
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &tenant_yaml("t5", ""));
    wait_served(&server, "t5");
    http.post_json("/tenants/t5/api/v1/namespaces", &namespace("data"))
        .expect(201);
    let count = |prefix: &str| -> u64 {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        // The range of keys that start with the prefix: its last byte one higher.
        let mut end = prefix.as_bytes().to_vec();
        *end.last_mut().unwrap() += 1;
        let body = json!({"key": b64.encode(prefix), "range_end": b64.encode(end), "count_only": true});
        let reply: Value = reqwest::blocking::Client::new()
            .post(format!("{endpoint}/v3/kv/range"))
            .json(&body)
            .send()
            .unwrap()
            .json()
            .unwrap();
        reply["count"].as_str().map_or(0, |c| c.parse().unwrap())
    };
    assert!(
        count("/tenants/t5/") > 20,
        "the tenant's namespaces and RBAC objects are stored"
    );
    server.kubectl_ok(&["delete", "tenant", "t5"]);
    http.get(&format!("{TENANTS}/t5")).assert_status(404, "NotFound");
    assert_eq!(count("/tenants/t5/"), 0);
    http.get("/tenants/t5/api/v1/namespaces").assert_status(404, "NotFound");
}

/// The tenant's `status.inMemory` at the root, as the host decorates it (`None` before the host's watch saw it).
fn in_memory(server: &Server, name: &str) -> Option<bool> {
    server.http().get(&format!("{TENANTS}/{name}")).json["status"]["inMemory"].as_bool()
}

#[test]
fn api_tenants_are_built_on_first_use_and_dropped_when_idle() {
    let server = Server::start_with_args(&["wardle"], &["--tenant-idle-after", "2s"]);
    let http = server.http();
    let built = || {
        let metrics = http.get("/metrics").text;
        e2e::metric_value(&metrics, "wasm_apiserver_tenants_in_memory")
    };
    for name in ["lazy", "other", "first"] {
        server.kubectl_stdin_ok(&["apply", "-f", "-"], &tenant_yaml(name, ""));
    }
    // Defined, served, and not built until a request comes.
    for name in ["lazy", "other"] {
        assert!(
            wait_until(Duration::from_secs(10), || in_memory(&server, name).is_some()),
            "{name} was never seen: {}",
            http.get(&format!("{TENANTS}/{name}")).text
        );
        let obj = http.get(&format!("{TENANTS}/{name}")).json.clone();
        assert_eq!(obj["status"]["inMemory"], false, "{obj}");
        assert_eq!(obj["status"]["phase"], "Serving", "{obj}");
        assert_eq!(obj["status"]["path"], format!("/tenants/{name}"), "{obj}");
        assert_eq!(
            obj["status"]["observedGeneration"], obj["metadata"]["generation"],
            "{obj}"
        );
    }
    assert_eq!(built(), Some(0.0));
    assert_eq!(
        e2e::metric_value(&http.get("/metrics").text, "wasm_apiserver_tenants "),
        Some(3.0)
    );
    // `kubectl get tenants -o wide` says which are in memory.
    let wide = server.kubectl_ok(&["get", "tenants", "-o", "wide"]);
    assert!(wide.lines().next().unwrap().ends_with("IN MEMORY"), "{wide}");
    let row = |table: &str, name: &str| {
        table
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{table}"))
            .split_whitespace()
            .last()
            .unwrap()
            .to_owned()
    };
    assert_eq!(row(&wide, "lazy"), "false", "{wide}");
    assert_eq!(row(&wide, "default"), "true", "{wide}");

    // A tenant's admin may be the first to use it: the request that builds it is authorized by the RBAC objects made
    // as it is built.
    assert!(wait_until(Duration::from_secs(10), || in_memory(&server, "first").is_some()));
    let admin = server.tenant_kubeconfig(Some("first"), "alice", &[]);
    server.kubectl_ok(&[
        &format!("--kubeconfig={}", admin.display()),
        "create",
        "namespace",
        "mine",
    ]);
    assert_eq!(in_memory(&server, "first"), Some(true));
    server.kubectl_ok(&["delete", "tenant", "first"]);
    assert!(wait_until(Duration::from_secs(10), || {
        e2e::metric_value(&http.get("/metrics").text, "wasm_apiserver_tenants ") == Some(2.0)
    }));

    // Its first request builds it (its namespaces and RBAC objects are made then).
    http.post_json("/tenants/lazy/api/v1/namespaces", &namespace("kept"))
        .expect(201);
    assert_eq!(in_memory(&server, "lazy"), Some(true));
    assert_eq!(built(), Some(1.0));
    let alice = server.tenant_kubeconfig(Some("lazy"), "alice", &[]);
    server.kubectl_ok(&[&format!("--kubeconfig={}", alice.display()), "get", "namespace", "kept"]);

    // Idle, it is dropped from memory, with its usage as it was; its next request builds it again, data kept.
    assert!(
        wait_until(Duration::from_secs(10), || in_memory(&server, "lazy") == Some(false)),
        "an idle tenant was never dropped: {}",
        http.get(&format!("{TENANTS}/lazy")).text
    );
    assert_eq!(built(), Some(0.0));
    let dropped = http.get(&format!("{TENANTS}/lazy")).json.clone();
    assert!(dropped["status"]["objects"].as_i64().unwrap_or(0) > 0, "{dropped}");
    http.get("/tenants/lazy/api/v1/namespaces/kept").expect(200);
    assert_eq!(in_memory(&server, "lazy"), Some(true));

    // A watch keeps its tenant in memory: "other", used after the watch began, is dropped first, and the watch still
    // sees what happens in "lazy".
    let list = http.get("/tenants/lazy/api/v1/namespaces").expect(200).clone();
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut watch = http.watch(&format!(
        "/tenants/lazy/api/v1/namespaces?watch=true&resourceVersion={rv}"
    ));
    http.get("/tenants/other/api/v1/namespaces").expect(200);
    assert_eq!(in_memory(&server, "other"), Some(true));
    assert!(
        wait_until(Duration::from_secs(10), || in_memory(&server, "other") == Some(false)),
        "the idle tenant was never dropped"
    );
    assert_eq!(
        in_memory(&server, "lazy"),
        Some(true),
        "a tenant was dropped under its watch"
    );
    http.post_json("/tenants/lazy/api/v1/namespaces", &namespace("watched"))
        .expect(201);
    let event = watch.next(Duration::from_secs(10)).expect("the watch saw no event");
    assert_eq!(event["type"], "ADDED", "{event}");
    assert_eq!(event["object"]["metadata"]["name"], "watched", "{event}");

    // A deleted tenant is no longer defined, built or not.
    server.kubectl_ok(&["delete", "tenant", "other"]);
    http.get("/tenants/other/api/v1/namespaces")
        .assert_status(404, "NotFound");
    assert!(wait_until(Duration::from_secs(10), || {
        e2e::metric_value(&http.get("/metrics").text, "wasm_apiserver_tenants ") == Some(1.0)
    }));
}
