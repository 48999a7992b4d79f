//! The read-only `tenants` resource (`tenancy.wasm-apiserver.io/v1alpha1` Tenant): every tenant and its usage at
//! the root, only itself inside a tenant (for its admins), tenant directories that are not served in phase Failed,
//! and `kubectl get tenants` as a table. At the root they are stored objects, watched as any resource.

use std::time::Duration;

use e2e::{flunder_v1beta1, parse_table, wait_until, Http, Server};
use serde_json::{json, Value};

const TENANTS: &str = "/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants";
const T1_TENANTS: &str = "/tenants/t1/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants";
const T1_FLUNDERS: &str = "/tenants/t1/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|t| t["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// A tenant's plugins as (name, phase, group).
fn plugins(tenant: &Value) -> Vec<(String, String, String)> {
    tenant["status"]["plugins"]
        .as_array()
        .unwrap_or_else(|| panic!("no plugins: {tenant}"))
        .iter()
        .map(|p| {
            let s = |k: &str| p[k].as_str().unwrap_or("").to_owned();
            (s("name"), s("phase"), s("group"))
        })
        .collect()
}

fn tenant(http: &Http, name: &str) -> Value {
    http.get(&format!("{TENANTS}/{name}")).expect(200).clone()
}

#[test]
fn tenants_show_their_plugins_usage_and_failures() {
    let server = Server::start(&["wardle", "t1/wardle", "t2/partial", "t2/noscheme"]);
    let http = server.http();
    let t1_dir = server.plugin_dir().join("t1");
    std::fs::write(
        t1_dir.join("tenant.yaml"),
        "admins:\n  users: [alice]\nlimits: {objects: 1000}\n",
    )
    .unwrap();
    // A tenant directory whose tenant.yaml is invalid is not served.
    let t3_dir = server.plugin_dir().join("t3");
    std::fs::create_dir(&t3_dir).unwrap();
    std::fs::write(t3_dir.join("tenant.yaml"), "admin: {users: [carol]}\n").unwrap();
    assert!(
        wait_until(Duration::from_secs(15), || {
            let list = http.get(TENANTS);
            list.status == 200
                && names(&list.json) == ["default", "t1", "t2", "t3"]
                && tenant(http, "t1")["spec"]["admins"]["users"] == json!(["alice"])
        }),
        "the tenants never showed t1's tenant.yaml and t3: {}",
        http.get(TENANTS).text
    );

    // The root lists every tenant with its plugins.
    let list = http.get(TENANTS).expect(200).clone();
    assert_eq!(list["kind"], "TenantList");
    assert_eq!(list["apiVersion"], "tenancy.wasm-apiserver.io/v1alpha1");
    let by_name = |name: &str| {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["metadata"]["name"] == name)
            .unwrap()
    };
    let wardle = (
        "wardle".to_owned(),
        "Loaded".to_owned(),
        "wardle.example.com".to_owned(),
    );
    for name in ["default", "t1"] {
        let t = by_name(name);
        assert_eq!(t["kind"], "Tenant");
        assert_eq!(t["status"]["phase"], "Serving", "{t}");
        assert_eq!(plugins(t), std::slice::from_ref(&wardle), "{t}");
        assert!(t["metadata"]["creationTimestamp"].is_string(), "{t}");
    }
    assert_eq!(by_name("default")["status"]["path"], "/");
    assert_eq!(by_name("t1")["status"]["path"], "/tenants/t1");
    assert_eq!(by_name("t1")["spec"]["limits"], json!({"objects": 1000}));
    assert_eq!(by_name("t1")["status"]["effectiveLimits"]["objects"], 1000);
    let t2 = by_name("t2");
    assert_eq!(
        plugins(t2)
            .into_iter()
            .map(|(name, phase, _)| (name, phase))
            .collect::<Vec<_>>(),
        [
            ("noscheme".to_owned(), "Failed".to_owned()),
            ("partial".to_owned(), "Loaded".to_owned())
        ],
        "{t2}"
    );
    let noscheme = &t2["status"]["plugins"][0];
    assert!(noscheme["reason"].as_str().unwrap().contains("scheme"), "{noscheme}");
    assert_eq!(t2["status"]["plugins"][1]["group"], "partial.example.com");
    let t3 = by_name("t3");
    assert_eq!(t3["status"]["phase"], "Failed", "{t3}");
    assert!(
        t3["status"]["reason"]
            .as_str()
            .unwrap()
            .contains("unknown field `admin`"),
        "{t3}"
    );
    http.get(&format!("{TENANTS}/t3")).expect(200);
    http.get(&format!("{TENANTS}/nope")).assert_status(404, "NotFound");

    // Objects and bytes go up with t1's writes, and its plugin calls use CPU.
    let before = tenant(http, "t1");
    for name in ["a", "b"] {
        http.post_json(T1_FLUNDERS, &flunder_v1beta1(name, "x")).expect(201);
    }
    let after = tenant(http, "t1");
    let number = |t: &Value, field: &str| t["status"][field].as_i64().unwrap_or_else(|| panic!("{field}: {t}"));
    assert_eq!(number(&after, "objects"), number(&before, "objects") + 2, "{after}");
    assert!(
        number(&after, "storageBytes") > number(&before, "storageBytes"),
        "{after}"
    );
    assert!(after["status"]["pluginCpuSeconds"].as_f64().unwrap() > 0.0, "{after}");
    assert_eq!(
        number(&tenant(http, "t2"), "objects"),
        number(&by_name("t2").clone(), "objects")
    );

    // A write over the objects quota is counted among t1's rejections.
    std::fs::write(
        t1_dir.join("tenant.yaml"),
        "admins:\n  users: [alice]\nlimits: {objects: 1}\n",
    )
    .unwrap();
    let mut attempt = 0;
    assert!(
        wait_until(Duration::from_secs(15), || {
            attempt += 1;
            let flunder = flunder_v1beta1(&format!("over-{attempt}"), "x");
            http.post_json(T1_FLUNDERS, &flunder).status == 403
        }),
        "the objects limit was never applied"
    );
    let rejections = tenant(http, "t1")["status"]["rejections"].clone();
    assert!(rejections["objects"].as_u64().unwrap() >= 1, "{rejections}");
    assert_eq!(rejections["storageBytes"], 0, "{rejections}");

    // A changed tenant.yaml that is invalid leaves the previous configuration, and the Tenant says why (without the
    // host's paths).
    std::fs::write(
        t1_dir.join("tenant.yaml"),
        "admins:\n  users: [alice]\nlimits: {objects: lots}\n",
    )
    .unwrap();
    let mut t1 = Value::Null;
    assert!(
        wait_until(Duration::from_secs(15), || {
            t1 = tenant(http, "t1");
            t1["status"]["reason"].is_string()
        }),
        "the invalid tenant.yaml was never reported: {t1}"
    );
    let reason = t1["status"]["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("the previous configuration stays: tenant.yaml: limits.objects: Invalid value: \"lots\""),
        "{reason}"
    );
    assert_eq!(t1["status"]["phase"], "Serving");
    assert_eq!(t1["spec"]["limits"], json!({"objects": 1}));
    // Its conditions say it is served, but not with this tenant.yaml, and why.
    let conditions = t1["status"]["conditions"]
        .as_array()
        .unwrap_or_else(|| panic!("no conditions: {t1}"));
    let condition = |kind: &str| {
        conditions
            .iter()
            .find(|c| c["type"] == kind)
            .unwrap_or_else(|| panic!("no {kind} condition: {t1}"))
    };
    assert_eq!(
        (&condition("Ready")["status"], &condition("Ready")["reason"]),
        (&json!("True"), &json!("Serving"))
    );
    let valid = condition("ConfigurationValid");
    assert_eq!(
        (&valid["status"], &valid["reason"]),
        (&json!("False"), &json!("InvalidConfiguration")),
        "{valid}"
    );
    assert_eq!(valid["message"], t1["status"]["reason"]);
    assert!(valid["lastTransitionTime"].is_string(), "{valid}");
    let t3 = tenant(http, "t3");
    assert_eq!(
        (
            &t3["status"]["conditions"][0]["type"],
            &t3["status"]["conditions"][0]["status"]
        ),
        (&json!("Ready"), &json!("False")),
        "{t3}"
    );
    assert_eq!(t3["status"]["conditions"][0]["reason"], "InvalidConfiguration", "{t3}");

    // A directory's tenant is read-only (tenants created through the API: tests/tenants_api.rs); inside a tenant,
    // its view of itself is; the resource is listed in discovery and OpenAPI.
    http.delete(&format!("{TENANTS}/t1")).assert_status(403, "Forbidden");
    http.post_json(
        T1_TENANTS,
        &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": "x"}}),
    )
    .assert_status(405, "MethodNotAllowed");
    let resources = http.get("/apis/tenancy.wasm-apiserver.io/v1alpha1").expect(200).clone();
    let served: Vec<&str> = resources["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(served, ["plugins", "tenants"], "{resources}");
    assert_eq!(resources["resources"][1]["namespaced"], false, "{resources}");
    let aggregated = http.get_accepting("/apis", AGGREGATED);
    assert_eq!(aggregated.status, 200);
    let group = aggregated.json["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "tenancy.wasm-apiserver.io")
        .unwrap_or_else(|| panic!("no tenancy group in {}", aggregated.text));
    // At the root, tenants are written through the API too.
    let tenants = group["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "tenants")
        .unwrap_or_else(|| panic!("no tenants in {group}"));
    assert_eq!(
        tenants["verbs"],
        json!([
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ])
    );
    let openapi = http
        .get("/openapi/v3/apis/tenancy.wasm-apiserver.io/v1alpha1")
        .expect(200)
        .clone();
    assert!(openapi.to_string().contains("pluginCpuSeconds"), "{openapi}");

    // alice, t1's admin, reads t1's Tenant inside t1, and nothing else.
    let alice = server.https_as("alice", &[]);
    assert!(
        wait_until(Duration::from_secs(10), || alice.get(T1_TENANTS).status == 200),
        "alice cannot list the tenants in t1: {}",
        alice.get(T1_TENANTS).text
    );
    assert_eq!(names(&alice.get(T1_TENANTS).json), ["t1"]);
    let own = alice.get(&format!("{T1_TENANTS}/t1")).expect(200).clone();
    assert_eq!(own["status"]["path"], "/tenants/t1");
    assert_eq!(plugins(&own), [wardle]);
    alice.get(&format!("{T1_TENANTS}/t2")).assert_status(404, "NotFound");
    alice
        .get(&format!("{T1_TENANTS}/default"))
        .assert_status(404, "NotFound");
    alice.get(TENANTS).assert_status(403, "Forbidden");
    alice.get(&format!("{TENANTS}/t1")).assert_status(403, "Forbidden");

    // kubectl prints the table, and the object.
    let table = server.kubectl_ok(&["get", "tenants"]);
    let rows = parse_table(&table);
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap()
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .collect();
    assert_eq!(
        header,
        [
            "NAME",
            "PHASE",
            "PLUGINS",
            "OBJECTS",
            "STORAGE BYTES",
            "PLUGIN CPU",
            "AGE"
        ],
        "{table}"
    );
    let row_names: Vec<&str> = rows.iter().map(|r| r["NAME"].as_str()).collect();
    assert_eq!(row_names, ["default", "t1", "t2", "t3"], "{table}");
    let t1_row = &rows[1];
    assert_eq!(t1_row["PHASE"], "Serving");
    assert_eq!(t1_row["PLUGINS"], "1");
    assert!(t1_row["OBJECTS"].parse::<u64>().unwrap() > 2, "{table}");
    assert!(t1_row["PLUGIN CPU"].ends_with('s'), "{table}");
    assert!(e2e::is_age(&t1_row["AGE"]), "{table}");
    assert_eq!(rows[3]["PHASE"], "Failed", "{table}");
    let wide = server.kubectl_ok(&["get", "tenants", "-o", "wide"]);
    assert!(wide.lines().next().unwrap().contains("REJECTIONS"), "{wide}");
    let yaml = server.kubectl_ok(&["get", "tenant", "t1", "-o", "yaml"]);
    assert!(
        yaml.contains("kind: Tenant") && yaml.contains("storageBytes:"),
        "{yaml}"
    );
    let selected = server.kubectl_ok(&["get", "tenants", "--field-selector", "metadata.name=t2", "-o", "name"]);
    assert_eq!(selected.trim(), "tenant.tenancy.wasm-apiserver.io/t2");

    // Inside t1, alice's kubectl shows t1 alone.
    let kubeconfig = server.tenant_kubeconfig(Some("t1"), "alice", &[]);
    let kc = format!("--kubeconfig={}", kubeconfig.display());
    let own_table = server.kubectl_ok(&[&kc, "get", "tenants"]);
    let own_rows: Vec<String> = parse_table(&own_table).iter().map(|r| r["NAME"].clone()).collect();
    assert_eq!(own_rows, ["t1"], "{own_table}");
}

#[test]
fn the_roots_tenants_are_stored_watched_and_decorated_with_their_usage() {
    let server = Server::start(&["t1/wardle"]);
    let http = server.http();
    assert!(
        wait_until(Duration::from_secs(15), || names(&http.get(TENANTS).json)
            == ["default", "t1"]),
        "{}",
        http.get(TENANTS).text
    );
    let list = http.get(TENANTS).expect(200).clone();
    let revision = list["metadata"]["resourceVersion"]
        .as_str()
        .expect("a list resourceVersion")
        .to_owned();
    let t1 = tenant(http, "t1");
    assert!(
        t1["metadata"]["uid"].is_string() && t1["metadata"]["resourceVersion"].is_string(),
        "{t1}"
    );
    assert_eq!(t1["status"]["source"], "Directory", "{t1}");

    // Usage is live: it follows t1's writes while the stored Tenant object does not change.
    let before = t1["status"]["objects"].as_i64().unwrap();
    http.post_json(T1_FLUNDERS, &flunder_v1beta1("a", "x")).expect(201);
    let after = tenant(http, "t1");
    assert_eq!(after["status"]["objects"].as_i64().unwrap(), before + 1, "{after}");
    assert_eq!(after["metadata"]["resourceVersion"], t1["metadata"]["resourceVersion"]);

    // A new tenant directory is an ADDED event, its removal a DELETED one, each object decorated. The root's stored
    // bytes are compared below: the priority and fairness controller's start-up writes, which add to them, done first.
    server.wait_for_flowcontrol_bootstrap();
    let default_bytes = tenant(http, "default")["status"]["storageBytes"].clone();
    let mut events = http.watch(&format!("{TENANTS}?watch=1&resourceVersion={revision}"));
    std::fs::create_dir(server.plugin_dir().join("t9")).unwrap();
    let next = |events: &mut e2e::JsonStream, kind: &str| loop {
        let event = events
            .next(Duration::from_secs(15))
            .unwrap_or_else(|| panic!("no {kind} event"));
        if event["type"] == kind {
            return event;
        }
    };
    let added = next(&mut events, "ADDED");
    assert_eq!(added["object"]["metadata"]["name"], "t9", "{added}");
    assert_eq!(added["object"]["status"]["phase"], "Serving", "{added}");
    assert_eq!(added["object"]["status"]["path"], "/tenants/t9", "{added}");
    // The Tenant objects the server keeps at the root are not the default tenant's objects under its quota.
    assert_eq!(tenant(http, "default")["status"]["objects"], 0);
    std::fs::remove_dir_all(server.plugin_dir().join("t9")).unwrap();
    let deleted = next(&mut events, "DELETED");
    assert_eq!(deleted["object"]["metadata"]["name"], "t9", "{deleted}");
    http.get(&format!("{TENANTS}/t9")).assert_status(404, "NotFound");
    // The root's storageBytes counted t9's Tenant object while it was stored, and no longer do.
    assert_eq!(tenant(http, "default")["status"]["storageBytes"], default_bytes);

    // Inside a tenant, its view of itself is computed, and has no watch.
    http.get("/tenants/t1/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants/t1")
        .expect(200);
    http.get(&format!("{T1_TENANTS}?watch=1"))
        .assert_status(405, "MethodNotAllowed");
}
