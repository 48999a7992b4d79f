//! The one-call create (`create-pipeline`, which the Rust SDK derives for wardle) gives exactly what the separate
//! plugin calls give: the same objects (defaults, cleared status, host metadata, labels) and the same errors (Status
//! reason, message and causes), for valid and invalid creates, BanFlunder's refusal, dry runs, generated names and
//! creates in a missing namespace.
//! Two servers serve the same wardle component, one with `--create-pipeline=false`.

use e2e::{fischer_v1alpha1, metric_value, Reply, Server, FISCHERS_V1ALPHA1, FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

/// A reply with what differs between any two creates removed: uid, timestamps, resourceVersion, a generated name's
/// suffix.
fn normalized(reply: &Reply) -> (u16, Value) {
    let mut body = reply.json.clone();
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["uid", "creationTimestamp", "resourceVersion"] {
            meta.remove(field);
        }
        if let Some(base) = meta.get("generateName").and_then(Value::as_str).map(str::to_owned) {
            let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
            assert!(
                name.starts_with(&base) && name.len() > base.len(),
                "generated name {name} from {base}"
            );
            meta.insert("name".into(), json!(format!("{base}<generated>")));
        }
        if let Some(Value::Array(managed)) = meta.get_mut("managedFields") {
            for entry in managed {
                entry.as_object_mut().map(|e| e.remove("time"));
            }
        }
    }
    (reply.status, body)
}

fn plugin_calls(server: &Server) -> f64 {
    let text = server.http().get("/metrics").text;
    metric_value(&text, "wasm_apiserver_plugin_calls_total{plugin=\"wardle\"}").unwrap_or(0.0)
}

/// The creates: (collection, query, body).
fn creates() -> Vec<(&'static str, &'static str, Value)> {
    let alpha = |name: &str, spec: Value| json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": name}, "spec": spec});
    let beta = |name: &str, spec: Value| json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder", "metadata": {"name": name}, "spec": spec});
    let mut with_extras = alpha("extras", json!({"reference": "r"}));
    with_extras["metadata"]["labels"] = json!({"app": "a"});
    with_extras["metadata"]["annotations"] = json!({"note": "n"});
    with_extras["metadata"]["uid"] = json!("client-chosen");
    with_extras["metadata"]["generation"] = json!(7);
    with_extras["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
    with_extras["metadata"]["finalizers"] = json!(["example.com/keep"]);
    with_extras["status"] = json!({"replicas": 3});
    let mut generated = alpha("", json!({"reference": "r"}));
    generated["metadata"] = json!({"generateName": "gen-"});
    let mut with_rv = alpha("with-rv", json!({}));
    with_rv["metadata"]["resourceVersion"] = json!("5");
    let mut bad_meta = alpha("Bad_Name", json!({}));
    bad_meta["metadata"]["labels"] = json!({"-bad": "x"});
    vec![
        // Defaulted in v1alpha1 (referenceType), not in v1beta1.
        (FLUNDERS_V1ALPHA1, "", alpha("defaulted", json!({"reference": "r"}))),
        (FLUNDERS_V1ALPHA1, "", alpha("empty", json!(null))),
        (FLUNDERS_V1BETA1, "", beta("beta", json!({"flunderReference": "f"}))),
        (FLUNDERS_V1ALPHA1, "", with_extras),
        (FLUNDERS_V1ALPHA1, "", generated),
        (
            FLUNDERS_V1ALPHA1,
            "?dryRun=All",
            alpha("dry", json!({"reference": "r"})),
        ),
        // Validation's field errors (422 with causes).
        (
            FLUNDERS_V1ALPHA1,
            "",
            alpha("both-refs", json!({"reference": "r", "referenceType": "Other"})),
        ),
        (
            FLUNDERS_V1BETA1,
            "",
            beta("two-refs", json!({"flunderReference": "f", "fischerReference": "g"})),
        ),
        // The defaulter's, and the preparation's, refusal of a spec that does not decode.
        (FLUNDERS_V1ALPHA1, "", alpha("bad-spec", json!({"reference": ["x"]}))),
        (
            FLUNDERS_V1BETA1,
            "",
            beta("bad-beta-spec", json!({"flunderReference": 1})),
        ),
        // BanFlunder (the plugin's own mutating admission).
        (FLUNDERS_V1ALPHA1, "", alpha("banned", json!({}))),
        (FLUNDERS_V1BETA1, "?dryRun=All", beta("banned", json!({}))),
        // In a namespace that does not exist: NamespaceLifecycle answers before the plugin's admission.
        (
            "/apis/wardle.example.com/v1alpha1/namespaces/missing/flunders",
            "",
            alpha("banned", json!({})),
        ),
        (
            "/apis/wardle.example.com/v1alpha1/namespaces/missing/flunders",
            "",
            alpha("bad-spec", json!({"reference": ["x"]})),
        ),
        // The host's checks around the plugin.
        (FLUNDERS_V1ALPHA1, "", with_rv),
        (FLUNDERS_V1ALPHA1, "", bad_meta),
        (FLUNDERS_V1ALPHA1, "", alpha("defaulted", json!({"reference": "again"}))),
        (
            FLUNDERS_V1ALPHA1,
            "?fieldValidation=Strict",
            alpha("strict", json!({"reference": "r", "unknown": 1})),
        ),
        // Fischers: no admission applies.
        (FISCHERS_V1ALPHA1, "", fischer_v1alpha1("other-fischer", &["x"])),
    ]
}

#[test]
fn one_call_creates_give_what_the_separate_calls_give() {
    let one_call = Server::start_with_args(&["wardle"], &[]);
    let separate = Server::start_with_args(&["wardle"], &["--create-pipeline=false"]);
    for server in [&one_call, &separate] {
        server
            .http()
            .post_json(FISCHERS_V1ALPHA1, &fischer_v1alpha1("ban", &["banned"]))
            .expect(201);
    }
    for (collection, query, body) in creates() {
        let path = format!("{collection}{query}");
        let a = one_call.http().post_json(&path, &body);
        let b = separate.http().post_json(&path, &body);
        assert_eq!(
            normalized(&a),
            normalized(&b),
            "POST {path} {body}: one call (left) and separate calls (right) differ"
        );
        // And what is stored.
        if a.status == 201 && query.is_empty() {
            let name = a.json["metadata"]["name"].as_str().expect("name");
            let (ga, gb) = (
                one_call.http().get(&format!("{collection}/{name}")),
                separate.http().get(&format!(
                    "{collection}/{}",
                    b.json["metadata"]["name"].as_str().expect("name")
                )),
            );
            assert_eq!(normalized(&ga), normalized(&gb), "GET {collection}/{name}");
        }
    }
}

#[test]
fn a_create_is_one_plugin_call() {
    let one_call = Server::start_with_args(&["wardle"], &[]);
    let separate = Server::start_with_args(&["wardle"], &["--create-pipeline=false"]);
    let flunder = |name: &str| {
        json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": name},
            "spec": {"reference": "r"}})
    };
    let mut per_create = Vec::new();
    for server in [&one_call, &separate] {
        // The first create instantiates the plugin's pool and reads its admission's fischers.
        server
            .http()
            .post_json(FLUNDERS_V1ALPHA1, &flunder("first"))
            .expect(201);
        let before = plugin_calls(server);
        for i in 0..10 {
            server
                .http()
                .post_json(FLUNDERS_V1ALPHA1, &flunder(&format!("f{i}")))
                .expect(201);
        }
        per_create.push((plugin_calls(server) - before) / 10.0);
    }
    // Defaulter, BanFlunder, prepare and validate: four calls, or one.
    assert_eq!(per_create, [1.0, 4.0], "plugin calls per create, one call / separate");
}
