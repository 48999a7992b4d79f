//! Tenants: subdirectories of the plugin directory are tenants served under `/tenants/<t>/`, each
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

    // The same name in two tenants is two objects; t1's never appear in t2 or at the root, in lists or watches.
    let list = http.get(&format!("/tenants/t2{FLUNDERS}"));
    let rv = e2e::str_at(list.expect(200), "/metadata/resourceVersion").to_owned();
    let mut t2_watch = http.watch(&format!("/tenants/t2{FLUNDERS}?watch=true&resourceVersion={rv}"));
    http.post_json(&format!("/tenants/t1{FLUNDERS}"), &flunder_v1beta1("same", "t1"))
        .expect(201);
    http.post_json(&format!("/tenants/t2{FLUNDERS}"), &flunder_v1beta1("same", "t2"))
        .expect(201);
    // t2's watch gets t2's object first: t1's, written before it, never reached it.
    let event = t2_watch
        .next(Duration::from_secs(30))
        .expect("t2's watch sees t2's write");
    assert_eq!(event["type"], "ADDED");
    assert_eq!(e2e::str_at(&event, "/object/spec/flunderReference"), "t2", "{event:#}");
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

fn wardle_wasm() -> std::path::PathBuf {
    e2e::target_dir().join("plugins").join("wardle.wasm")
}

/// Whether tenant `t` serves wardle (its discovery lists the group).
fn serves_wardle(http: &e2e::Http, t: &str) -> bool {
    let reply = http.get(&format!("/tenants/{t}/apis"));
    reply.status == 200 && reply.text.contains("wardle.example.com")
}

/// A tenant directory added while the server runs is served (with its tenant.yaml's admins), a removed one answers
/// 404 and keeps its data, an invalid tenant.yaml is reported and refused, and none of it loses a request of the
/// tenants under load meanwhile.
#[test]
fn tenant_directories_come_and_go_under_load() {
    let server = Server::start(&["wardle", "t0/wardle"]);
    let http = server.http().clone();

    // Load on the root and on t0 while tenants come and go.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (http, stop) = (http.clone(), stop.clone());
        std::thread::spawn(move || {
            let (mut served, mut failed) = (0u64, Vec::new());
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for prefix in ["", "/tenants/t0"] {
                    let name = format!("load-{i}");
                    let created = http.post_json(&format!("{prefix}{FLUNDERS}"), &flunder_v1beta1(&name, "x"));
                    let read = http.get(&format!("{prefix}{FLUNDERS}/{name}"));
                    for reply in [created.status, read.status] {
                        if reply == 201 || reply == 200 {
                            served += 1;
                        } else {
                            failed.push(format!("{prefix} {name}: {reply}"));
                        }
                    }
                }
                i += 1;
            }
            (served, failed)
        })
    };

    // A new tenant directory with its admin.
    let t9 = server.plugin_dir().join("t9");
    std::fs::create_dir(&t9).unwrap();
    std::fs::write(t9.join("tenant.yaml"), "admins:\n  users: [alice]\n").unwrap();
    std::fs::copy(wardle_wasm(), t9.join("wardle.wasm")).unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || serves_wardle(&http, "t9")),
        "t9 was never served: {}",
        server.log_tail(30)
    );
    http.post_json(&format!("/tenants/t9{FLUNDERS}"), &flunder_v1beta1("kept", "t9"))
        .expect(201);

    // alice is t9's admin (tenant.yaml), through kubectl with `wasm-apiserver kubeconfig --tenant t9`.
    let kubeconfig = server.tenant_kubeconfig(Some("t9"), "alice", &[]);
    let kc = format!("--kubeconfig={}", kubeconfig.display());
    let mut table = String::new();
    assert!(
        wait_until(Duration::from_secs(10), || {
            table = String::from_utf8_lossy(&server.kubectl(&[&kc, "get", "flunders"]).stdout).into_owned();
            table.contains("kept")
        }),
        "alice cannot list t9's flunders: {table}"
    );
    let alice = server.https_as("alice", &[]);
    alice
        .get(&format!("/tenants/t0{FLUNDERS}"))
        .assert_status(403, "Forbidden");

    // A changed tenant.yaml applies: bob replaces alice.
    std::fs::write(t9.join("tenant.yaml"), "admins:\n  users: [bob]\n").unwrap();
    let bob = server.https_as("bob", &[]);
    assert!(
        wait_until(Duration::from_secs(10), || bob
            .get(&format!("/tenants/t9{FLUNDERS}"))
            .status
            == 200
            && alice.get(&format!("/tenants/t9{FLUNDERS}")).status == 403),
        "the admins did not change"
    );
    // An invalid tenant.yaml is reported and leaves the previous configuration.
    std::fs::write(
        t9.join("tenant.yaml"),
        "admins:\n  users: [bob]\nlimits: {objects: lots}\n",
    )
    .unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || server
            .log_contains("limits.objects: Invalid value: \"lots\"")),
        "no error for the invalid tenant.yaml: {}",
        server.log_tail(20)
    );
    bob.get(&format!("/tenants/t9{FLUNDERS}")).expect(200);

    // A new tenant whose tenant.yaml is invalid is not served until it is fixed.
    let t8 = server.plugin_dir().join("t8");
    std::fs::create_dir(&t8).unwrap();
    std::fs::write(t8.join("tenant.yaml"), "admin: {users: [carol]}\n").unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || server.log_contains("unknown field `admin`")),
        "no error for t8's tenant.yaml: {}",
        server.log_tail(20)
    );
    http.get("/tenants/t8/apis").assert_status(404, "NotFound");
    std::fs::write(t8.join("tenant.yaml"), "admins: {users: [carol]}\n").unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || http.get("/tenants/t8/apis").status == 200),
        "t8 was not served once its tenant.yaml was fixed"
    );

    // Removing t9's directory stops serving it and frees its registry; bringing it back finds its data.
    let registries = || e2e::metric_value(&http.get("/metrics").text, "wasm_apiserver_registries ").unwrap_or(-1.0);
    let before = registries();
    std::fs::remove_dir_all(&t9).unwrap();
    assert!(
        wait_until(Duration::from_secs(10), || http.get("/tenants/t9/apis").status == 404),
        "t9 is still served"
    );
    assert!(
        wait_until(Duration::from_secs(10), || registries() == before - 1.0),
        "t9's registry was not freed: {} registries, {before} before",
        registries()
    );
    http.get(&format!("/tenants/t9{FLUNDERS}/kept"))
        .assert_status(404, "NotFound");
    std::fs::create_dir(&t9).unwrap();
    std::fs::copy(wardle_wasm(), t9.join("wardle.wasm")).unwrap();
    assert!(
        wait_until(Duration::from_secs(30), || serves_wardle(&http, "t9")),
        "t9 was not served again"
    );
    assert_eq!(
        http.get(&format!("/tenants/t9{FLUNDERS}/kept")).expect(200)["spec"]["flunderReference"],
        "t9"
    );

    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (served, failed) = load.join().unwrap();
    assert!(failed.is_empty(), "requests of other tenants failed: {failed:?}");
    assert!(served > 20, "too little load to show anything: {served} requests");
}

/// Every tenant's keys live under its prefix (in etcd here; the embedded store below), and kill -9 keeps every
/// tenant's data.
fn keys_and_restart(mut server: Server, keys: impl Fn(&Server) -> Vec<String>) {
    for t in ["t1", "t2"] {
        server
            .http()
            .post_json(&format!("/tenants/{t}{FLUNDERS}"), &flunder_v1beta1("durable", t))
            .expect(201);
    }
    server
        .http()
        .post_json(FLUNDERS, &flunder_v1beta1("durable", "root"))
        .expect(201);
    server.kill();
    let keys = keys(&server);
    for t in ["/tenants/t1", "/tenants/t2", ""] {
        let key = format!("{t}/registry/wardle.example.com/flunders/default/durable");
        assert!(
            keys.iter().any(|k| k.ends_with(&key) && k.len() - key.len() <= 1),
            "no key {key} in {keys:?}"
        );
    }
    server.restart();
    for (t, reference) in [("/tenants/t1", "t1"), ("/tenants/t2", "t2"), ("", "root")] {
        let f = server.http().get(&format!("{t}{FLUNDERS}/durable")).expect(200).clone();
        assert_eq!(f["spec"]["flunderReference"], reference);
    }
}

#[test]
fn tenant_keys_are_prefixed_and_survive_kill_on_etcd() {
    let etcd = e2e::Etcd::start().unwrap();
    let endpoint = etcd.endpoint();
    let server = Server::start_with_args(&["wardle", "t1/wardle", "t2/wardle"], &["--etcd-servers", &endpoint]);
    keys_and_restart(server, |_| {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let body = json!({"key": b64.encode("/"), "range_end": b64.encode("\0"), "keys_only": true});
        let reply: serde_json::Value = reqwest::blocking::Client::new()
            .post(format!("{endpoint}/v3/kv/range"))
            .json(&body)
            .send()
            .unwrap()
            .json()
            .unwrap();
        reply["kvs"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .map(|kv| String::from_utf8(b64.decode(kv["key"].as_str().unwrap()).unwrap()).unwrap())
            .collect()
    });
}

#[test]
fn tenant_keys_are_prefixed_and_survive_kill_in_the_embedded_store() {
    let server = Server::start(&["wardle", "t1/wardle", "t2/wardle"]);
    keys_and_restart(server, |server| {
        // The store's file holds its keys as they are: find the flunder keys in it.
        let mut keys = Vec::new();
        for entry in walk(&server.root().join("data").join("store")) {
            let bytes = std::fs::read(&entry).unwrap();
            for t in ["/tenants/t1", "/tenants/t2", ""] {
                let key = format!("{t}/registry/wardle.example.com/flunders/default/durable");
                let found = bytes.windows(key.len()).enumerate().any(|(i, w)| {
                    // Not the tail of a longer key: the root's key must not only be found inside a tenant's.
                    w == key.as_bytes()
                        && (i < 11 || &bytes[i - 11..i] != b"/tenants/t1" && &bytes[i - 11..i] != b"/tenants/t2")
                });
                if found {
                    keys.push(key);
                }
            }
        }
        keys
    });
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// A trap in one tenant's plugin instance touches no other tenant: each has its own instances of the same component.
#[test]
fn a_trap_in_one_tenants_plugin_touches_no_other_tenant() {
    let server = Server::start(&["t1/hostile", "t2/hostile"]);
    let http = server.http();
    let trials = |t: &str| format!("/tenants/{t}/apis/hostile.example.com/v1/namespaces/default/trials");
    let trial = |name: &str, mode: &str| {
        json!({"apiVersion": "hostile.example.com/v1", "kind": "Trial",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"mode": mode}})
    };
    http.post_json(&trials("t2"), &trial("before", "ok")).expect(201);
    http.post_json(&trials("t1"), &trial("boom", "trap"))
        .assert_status(500, "InternalError");
    http.post_json(&trials("t2"), &trial("after", "ok")).expect(201);
    http.post_json(&trials("t1"), &trial("recovered", "ok")).expect(201);
}

/// The metric series a server exposes: each sample's name and labels, without its value.
fn metric_series(http: &e2e::Http) -> std::collections::BTreeSet<String> {
    http.get("/metrics")
        .text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.rsplit_once(' ').map(|(series, _)| series.to_owned()))
        .collect()
}

/// Serving more tenants grows neither the metric label sets (no series names a tenant) nor the number of etcd
/// watches (every tenant's watches share one watch of etcd).
#[test]
fn more_tenants_add_no_metric_series_and_no_etcd_watches() {
    let etcd = e2e::Etcd::start().unwrap();
    let endpoint = etcd.endpoint();
    let server = Server::start_with_args(&["t1/wardle", "t2/wardle", "t3/wardle"], &["--etcd-servers", &endpoint]);
    let http = server.http();
    // The same requests in one tenant, then in the others: lists (which start watch caches), a create (admission
    // reads the fischers), a get, a watch.
    let exercise = |t: &str| {
        let flunders = format!("/tenants/{t}{FLUNDERS}");
        http.post_json(&flunders, &flunder_v1beta1("f", t)).expect(201);
        http.get(&format!("{flunders}/f")).expect(200);
        let list = http.get(&flunders);
        let rv = e2e::str_at(list.expect(200), "/metadata/resourceVersion").to_owned();
        let mut watch = http.watch(&format!("{flunders}?watch=true&resourceVersion={rv}"));
        http.post_json(&flunders, &flunder_v1beta1("g", t)).expect(201);
        watch.next(Duration::from_secs(30)).expect("the watch sees the create");
        http.get(&format!("/tenants/{t}/api/v1/namespaces")).expect(200);
    };
    let etcd_watchers = || -> f64 {
        let text = reqwest::blocking::get(format!("{endpoint}/metrics"))
            .unwrap()
            .text()
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("etcd_debugging_mvcc_watcher_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no etcd_debugging_mvcc_watcher_total in etcd's metrics"))
    };
    // The priority and fairness controller's start-up writes add storage series of their own: done first.
    server.wait_for_flowcontrol_bootstrap();
    exercise("t1");
    let series = metric_series(http);
    let watchers = etcd_watchers();
    exercise("t2");
    exercise("t3");
    let more = metric_series(http);
    let new: Vec<&String> = more.difference(&series).collect();
    assert!(new.is_empty(), "series added by more tenants: {new:#?}");
    assert!(
        !more
            .iter()
            .any(|s| ["\"t1\"", "\"t2\"", "t1/", "/tenants/"].iter().any(|t| s.contains(t))),
        "a series names a tenant"
    );
    assert_eq!(etcd_watchers(), watchers, "more tenants opened more etcd watches");
    assert!(watchers <= 2.0, "{watchers} etcd watches for three tenants");
}
