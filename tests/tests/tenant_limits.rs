//! A tenant's limits (tenant.yaml `limits:`): the first request over each gets its Status (403 with kube's quota
//! message, or 429 with Retry-After) and the tenant recovers once under it again. Requests are made by the tenant's
//! admin (tenant.yaml `admins:`), not by system:masters, whom request limits exempt.

use std::time::Duration;

use e2e::{flunder_v1beta1, wait_until, Http, Server};
use serde_json::{json, Value};

const FLUNDERS: &str = "/tenants/t1/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
const T2_NAMESPACE: &str = "/tenants/t2/api/v1/namespaces/default";
const TRIALS: &str = "/tenants/t2/apis/hostile.example.com/v1/namespaces/default/trials";

fn set_config(server: &Server, tenant: &str, limits: &str) {
    let text = format!("admins:\n  users: [alice]\nlimits: {limits}\n");
    std::fs::write(server.plugin_dir().join(tenant).join("tenant.yaml"), text).unwrap();
}

/// The number after `name=` in a quota message's `part` ("used" or "limited").
fn quota_number(message: &str, part: &str, name: &str) -> i64 {
    let after = message
        .split(&format!("{part}: {name}="))
        .nth(1)
        .unwrap_or_else(|| panic!("no {part}: {name}= in {message:?}"));
    after
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

fn trial(name: &str, mode: &str) -> Value {
    json!({
        "apiVersion": "hostile.example.com/v1", "kind": "Trial",
        "metadata": {"name": name, "namespace": "default"}, "spec": {"mode": mode},
    })
}

/// Waits until `condition` holds for a reply of `request`, which it returns.
fn until(what: &str, mut request: impl FnMut() -> e2e::Reply, condition: impl Fn(&e2e::Reply) -> bool) -> e2e::Reply {
    let mut last = None;
    let ok = wait_until(Duration::from_secs(15), || {
        let reply = request();
        let done = condition(&reply);
        last = Some(reply);
        done
    });
    let last = last.unwrap();
    assert!(ok, "{what}: last reply {} {}", last.status, last.text);
    last
}

#[test]
fn tenant_limits_refuse_with_their_status_and_recover() {
    let server = Server::start(&["t1/wardle", "t2/hostile"]);
    let alice: Http = server.https_as("alice", &[]);

    // objects: learn the usage from the first refusal, then allow two more.
    set_config(&server, "t1", "{objects: 1}");
    let refused = until(
        "the objects limit never applied",
        || alice.post_json(FLUNDERS, &flunder_v1beta1("probe", "x")),
        |r| r.status == 403 && r.text.contains("exceeded quota"),
    );
    let message = refused.json["message"].as_str().unwrap().to_owned();
    assert_eq!(refused.json["reason"], "Forbidden");
    assert!(
        message.starts_with("flunders.wardle.example.com \"probe\" is forbidden: exceeded quota: tenant-t1, requested: objects=1, used: objects="),
        "{message}"
    );
    assert!(message.ends_with("limited: objects=1"), "{message}");
    let used = quota_number(&message, "used", "objects");
    set_config(&server, "t1", &format!("{{objects: {}}}", used + 2));
    until(
        "the raised objects limit never applied",
        || alice.post_json(FLUNDERS, &flunder_v1beta1("one", "x")),
        |r| r.status == 201,
    );
    alice.post_json(FLUNDERS, &flunder_v1beta1("two", "x")).expect(201);
    let over = alice.post_json(FLUNDERS, &flunder_v1beta1("three", "x"));
    over.assert_status(403, "Forbidden");
    let message = over.json["message"].as_str().unwrap();
    assert!(
        message.ends_with(&format!(
            "requested: objects=1, used: objects={}, limited: objects={}",
            used + 2,
            used + 2
        )),
        "{message}"
    );
    // Under the limit again after a delete.
    alice.delete(&format!("{FLUNDERS}/two")).expect(200);
    alice.post_json(FLUNDERS, &flunder_v1beta1("three", "x")).expect(201);

    // storageBytes: a large object is refused, a small one still fits.
    set_config(&server, "t1", "{storageBytes: 1}");
    let refused = until(
        "the storageBytes limit never applied",
        || alice.post_json(FLUNDERS, &flunder_v1beta1("probe", "x")),
        |r| r.status == 403 && r.text.contains("storageBytes"),
    );
    let bytes = quota_number(refused.json["message"].as_str().unwrap(), "used", "storageBytes");
    set_config(&server, "t1", &format!("{{storageBytes: {}}}", bytes + 1500));
    let mut big = flunder_v1beta1("big", "x");
    big["metadata"]["annotations"] = json!({"padding": "x".repeat(3000)});
    let refused = until(
        "the raised storageBytes limit never applied",
        || alice.post_json(FLUNDERS, &big),
        |r| r.status == 403 && r.text.contains(&format!("limited: storageBytes={}", bytes + 1500)),
    );
    assert!(refused.json["message"]
        .as_str()
        .unwrap()
        .contains("exceeded quota: tenant-t1, requested: storageBytes="));
    alice.post_json(FLUNDERS, &flunder_v1beta1("small", "x")).expect(201);

    // requestsPerSecond: a burst past the rate gets 429 with Retry-After, then the tenant is served again.
    set_config(&server, "t1", "{requestsPerSecond: 2}");
    let limited = until(
        "the rate limit never applied",
        || alice.get(FLUNDERS),
        |r| r.status == 429,
    );
    assert_eq!(limited.json["reason"], "TooManyRequests");
    assert!(
        limited
            .text
            .contains("too many requests in tenant t1: its limit is 2 requests per second"),
        "{}",
        limited.text
    );
    let raw = alice.client().get(alice.url(FLUNDERS)).send().unwrap();
    if raw.status().as_u16() == 429 {
        assert!(raw.headers().get("retry-after").is_some());
    }
    until(
        "the tenant never recovered from its rate limit",
        || alice.get(FLUNDERS),
        |r| r.status == 200,
    );
    set_config(&server, "t1", "{}");

    // maxInflight: a plugin call that loops until its deadline holds t2's only place.
    set_config(&server, "t2", "{maxInflight: 1, pluginCallTimeout: 1s}");
    until(
        "alice never became t2's admin",
        || alice.get(T2_NAMESPACE),
        |r| r.status == 200,
    );
    std::thread::scope(|scope| {
        // It may find the place taken by a probe below: it tries again until it holds it.
        let slow = scope.spawn(|| loop {
            let reply = alice.post_json(TRIALS, &trial("slow", "loop"));
            if reply.status != 429 {
                return reply;
            }
        });
        let mut refused = None;
        wait_until(Duration::from_secs(15), || {
            let reply = alice.get(T2_NAMESPACE);
            let done = reply.status == 429 || slow.is_finished();
            refused = Some(reply);
            done
        });
        let refused = refused.unwrap();
        if refused.status != 429 {
            let slow = slow.join().unwrap();
            panic!(
                "the slow call never held t2's place: {} / slow call: {} {}",
                refused.text, slow.status, slow.text
            );
        }
        assert!(
            refused
                .text
                .contains("too many requests in tenant t2: its limit is 1 requests in flight"),
            "{}",
            refused.text
        );
        let slow = slow.join().unwrap();
        assert_eq!(slow.status, 504, "{}", slow.text);
    });
    alice.get(T2_NAMESPACE).expect(200);

    // pluginCpu: a call spinning for 500 ms spends 200m's bucket; calls are refused until it refills.
    set_config(&server, "t2", "{pluginCpu: 200m, pluginCallTimeout: 500ms}");
    until(
        "the CPU limit never applied",
        || alice.post_json(TRIALS, &trial("spin", "loop")),
        |r| r.status == 504,
    );
    let refused = alice.post_json(TRIALS, &trial("after-spin", "ok"));
    refused.assert_status(429, "TooManyRequests");
    assert!(
        refused
            .text
            .contains("tenant t2 has used its plugin CPU (200m CPU per second)"),
        "{}",
        refused.text
    );
    until(
        "the tenant never got CPU again",
        || alice.post_json(TRIALS, &trial("after-spin", "ok")),
        |r| r.status == 201,
    );

    // pluginMemory: below what an instance needs, calls fail (500) naming the plugin; raised, they work again.
    let attempt = std::cell::Cell::new(0);
    let create = || {
        attempt.set(attempt.get() + 1);
        alice.post_json(TRIALS, &trial(&format!("memory-{}", attempt.get()), "ok"))
    };
    set_config(&server, "t2", "{pluginMemory: 1Mi}");
    let failed = until("the memory limit never applied", create, |r| r.status == 500);
    assert!(failed.text.contains("hostile"), "{}", failed.text);
    set_config(&server, "t2", "{pluginMemory: 32Mi}");
    until("the raised memory limit never applied", create, |r| r.status == 201);
}

/// `GET path` as `http`'s user with the impersonation headers `headers`.
fn get_impersonating(http: &Http, path: &str, headers: &[(&str, &str)]) -> e2e::Reply {
    let mut request = http.client().get(http.url(path));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().unwrap();
    let status = response.status().as_u16();
    let text = response.text().unwrap();
    e2e::Reply {
        status,
        content_type: String::new(),
        json: serde_json::from_str(&text).unwrap_or(Value::Null),
        text,
    }
}

#[test]
fn a_tenant_grant_reaches_nothing_host_wide() {
    let server = Server::start(&["t1/wardle", "t2/hostile"]);
    let alice: Http = server.https_as("alice", &[]);
    set_config(&server, "t1", "{requestsPerSecond: 2}");
    // alice is t1's admin: cluster-admin there, which may impersonate anyone in t1.
    until(
        "the rate limit never applied",
        || alice.get(FLUNDERS),
        |r| r.status == 429,
    );

    // Impersonating system:masters in t1 would escape t1's request limits and the host's in-flight limits, which
    // exempt that group: it is refused, before any limit is counted.
    let masters = [("Impersonate-User", "alice"), ("Impersonate-Group", "system:masters")];
    let replies: Vec<e2e::Reply> = (0..20).map(|_| get_impersonating(&alice, FLUNDERS, &masters)).collect();
    let statuses: Vec<u16> = replies.iter().map(|r| r.status).collect();
    assert_eq!(statuses, [403; 20]);
    assert_eq!(
        replies[0].json["message"],
        "groups \"system:masters\" is forbidden: User \"alice\" cannot impersonate groups \"system:masters\" in \
         tenant \"t1\": inside a tenant, system:masters comes from authentication only"
    );
    // Nor may t1's admin act as the host itself, whose writes quota never refuses.
    let apiserver = [("Impersonate-User", "system:apiserver")];
    get_impersonating(&alice, FLUNDERS, &apiserver).assert_status(403, "Forbidden");
    // Without the header the same user meets the limit: 429 among 20 quick LISTs.
    let statuses: Vec<u16> = (0..20).map(|_| alice.get(FLUNDERS).status).collect();
    assert!(statuses.contains(&429), "{statuses:?}");

    // t1's grants give nothing at the root or in another tenant.
    set_config(&server, "t1", "{}");
    until("t1 never lifted its limit", || alice.get(FLUNDERS), |r| r.status == 200);
    alice.get("/api/v1/namespaces").assert_status(403, "Forbidden");
    alice
        .get("/tenants/t2/apis/hostile.example.com/v1/namespaces/default/trials")
        .assert_status(403, "Forbidden");
    get_impersonating(&alice, "/api/v1/namespaces", &masters).assert_status(403, "Forbidden");
    // A host admin (in system:masters by authentication) may act as system:masters inside a tenant.
    let root: Http = server.https_as("root", &["system:masters"]);
    get_impersonating(&root, FLUNDERS, &masters).expect(200);
}

#[test]
fn a_new_tenant_starts_with_no_objects_against_its_limit() {
    let server = Server::start(&["t1/wardle"]);
    let alice: Http = server.https_as("alice", &[]);
    // Its four namespaces and default RBAC objects are the host's: a limit of 2 leaves room for 2 flunders.
    set_config(&server, "t1", "{objects: 2}");
    until(
        "alice never became t1's admin",
        || alice.get(FLUNDERS),
        |r| r.status == 200,
    );
    alice.post_json(FLUNDERS, &flunder_v1beta1("f1", "x")).expect(201);
    alice.post_json(FLUNDERS, &flunder_v1beta1("f2", "x")).expect(201);
    let refused = alice.post_json(FLUNDERS, &flunder_v1beta1("f3", "x"));
    refused.assert_status(403, "Forbidden");
    assert!(
        refused.json["message"]
            .as_str()
            .unwrap()
            .ends_with("exceeded quota: tenant-t1, requested: objects=1, used: objects=2, limited: objects=2"),
        "{}",
        refused.text
    );
    let flunders = alice.get(FLUNDERS).expect(200).clone();
    assert_eq!(flunders["items"].as_array().unwrap().len(), 2, "{flunders}");
    let tenant = alice
        .get("/tenants/t1/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants/t1")
        .expect(200)
        .clone();
    assert_eq!(tenant["status"]["objects"], 2, "{tenant}");
    // Deleting one gives its room back; the host's objects stay out of the count.
    alice.delete(&format!("{FLUNDERS}/f1")).expect(200);
    alice.post_json(FLUNDERS, &flunder_v1beta1("again", "x")).expect(201);
}

/// A tenant's plugins as its Tenant shows them: (name, phase, reason).
fn tenant_plugins(alice: &Http) -> Vec<(String, String, String)> {
    let tenant = alice
        .get("/tenants/t1/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants/t1")
        .expect(200)
        .clone();
    tenant["status"]["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let field = |f: &str| p[f].as_str().unwrap_or_default().to_owned();
            (field("name"), field("phase"), field("reason"))
        })
        .collect()
}

#[test]
fn a_tenant_serves_at_most_its_plugins_and_plugin_bytes() {
    let server = Server::start(&["t1/wardle"]);
    let alice: Http = server.https_as("alice", &[]);
    let t1 = server.plugin_dir().join("t1");
    let plugin = |name: &str| e2e::target_dir().join("plugins").join(format!("{name}.wasm"));
    let wardle_bytes = std::fs::metadata(plugin("wardle")).unwrap().len();

    // One plugin at most: a second one is not loaded, and the Tenant says why.
    set_config(&server, "t1", "{plugins: 1}");
    until(
        "alice never became t1's admin",
        || alice.get(FLUNDERS),
        |r| r.status == 200,
    );
    std::fs::copy(plugin("partial"), t1.join("partial.wasm")).unwrap();
    let mut plugins = Vec::new();
    assert!(
        wait_until(Duration::from_secs(15), || {
            plugins = tenant_plugins(&alice);
            plugins
                .iter()
                .any(|(name, phase, _)| name == "partial" && phase == "Failed")
        }),
        "partial was never refused: {plugins:?}"
    );
    let (_, _, reason) = plugins.iter().find(|(name, ..)| name == "partial").unwrap();
    assert_eq!(
        reason,
        "over the tenant's plugins limit: 1 plugin(s) served, at most 1 (limits.plugins)"
    );
    alice
        .get("/tenants/t1/apis/partial.example.com/v1/namespaces/default/notes")
        .assert_status(404, "NotFound");

    // Raised, the refused plugin is loaded; the bytes limit then refuses one more that would not fit.
    let partial_bytes = std::fs::metadata(plugin("partial")).unwrap().len();
    let room = wardle_bytes + partial_bytes + 1000;
    set_config(&server, "t1", &format!("{{plugins: 3, pluginBytes: {room}}}"));
    until(
        "partial was never served after the limit was raised",
        || alice.get("/tenants/t1/apis/partial.example.com/v1/namespaces/default/notes"),
        |r| r.status == 200,
    );
    std::fs::copy(plugin("hostile"), t1.join("hostile.wasm")).unwrap();
    assert!(
        wait_until(Duration::from_secs(15), || {
            plugins = tenant_plugins(&alice);
            plugins
                .iter()
                .any(|(name, phase, _)| name == "hostile" && phase == "Failed")
        }),
        "hostile was never refused: {plugins:?}"
    );
    let (_, _, reason) = plugins.iter().find(|(name, ..)| name == "hostile").unwrap();
    let hostile_bytes = std::fs::metadata(plugin("hostile")).unwrap().len();
    assert_eq!(
        *reason,
        format!(
            "over the tenant's pluginBytes limit: {hostile_bytes} bytes with the {} served make {}, over {room} \
             (limits.pluginBytes)",
            wardle_bytes + partial_bytes,
            wardle_bytes + partial_bytes + hostile_bytes
        )
    );
    // The plugins served keep serving.
    alice.get(FLUNDERS).expect(200);
}
