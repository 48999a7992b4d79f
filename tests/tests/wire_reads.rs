//! GETs and the initial events of watches written from the stored bytes against the parsed
//! path, through the real server: a plain JSON GET is written from the cached object's JSON with its
//! resourceVersion spliced in (or from the conversion memo's text), and the initial ADDED events of a watch in plain
//! JSON the same way, while `?pretty=true`, YAML, Tables and selectors still parse. For the same objects both must
//! carry the same JSON, and the wire bytes must be exactly its compact serialization (keys in byte order).

use e2e::{create_escaped_flunders, flunder_v1beta1, plain_equals_pretty, Server, FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1};
use serde_json::{json, Value};

#[test]
fn plain_json_gets_equal_the_parsed_gets() {
    let server = Server::start(&["wardle"]);
    // A list's resourceVersion is the store's revision: the priority and fairness controller's start-up writes
    // must be done before two answers are compared.
    server.wait_for_flowcontrol_bootstrap();
    create_escaped_flunders(&server, 3);
    let listed = server.http().get(FLUNDERS_V1ALPHA1);
    let listed = &listed.expect(200)["items"];
    for (i, name) in ["applied", "f0", "f1", "f2"].into_iter().enumerate() {
        for collection in [FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1] {
            for query in [
                "",
                "?resourceVersion=0",
                "?resourceVersion=0&resourceVersionMatch=NotOlderThan",
            ] {
                let path = format!("{collection}/{name}{query}");
                let got = plain_equals_pretty(&server, &path);
                assert_eq!(got["metadata"]["name"], name, "{path}");
                assert_eq!(
                    got["metadata"]["resourceVersion"], listed[i]["metadata"]["resourceVersion"],
                    "{path}"
                );
                assert!(got["metadata"]["managedFields"].is_array(), "{path}: {got}");
                let version = collection.split('/').nth(3).unwrap_or("");
                assert_eq!(got["apiVersion"], format!("wardle.example.com/{version}"), "{path}");
            }
            // The status subresource's GET answers the same object.
            assert_eq!(
                plain_equals_pretty(&server, &format!("{collection}/{name}/status")),
                plain_equals_pretty(&server, &format!("{collection}/{name}"))
            );
        }
    }
    // A change is read at once (a consistent read), with its new resourceVersion.
    let patched = server.http().patch(
        &format!("{FLUNDERS_V1BETA1}/f1"),
        "application/merge-patch+json",
        &json!({"spec": {"flunderReference": "changed"}}),
    );
    let patched = patched.expect(200).clone();
    let got = plain_equals_pretty(&server, &format!("{FLUNDERS_V1BETA1}/f1"));
    assert_eq!(got, patched);
    assert_eq!(got["spec"]["flunderReference"], "changed");
    // YAML and Tables still answer (the parsed path), with the same object.
    let yaml = server
        .http()
        .get_accepting(&format!("{FLUNDERS_V1BETA1}/f1"), "application/yaml");
    assert_eq!((yaml.status, yaml.content_type.as_str()), (200, "application/yaml"));
    let rv = got["metadata"]["resourceVersion"].as_str().unwrap_or("");
    assert!(
        yaml.text
            .lines()
            .any(|l| l.trim_start().starts_with("resourceVersion:") && l.contains(rv)),
        "{}",
        yaml.text
    );
    let table = server.http().get_accepting(
        &format!("{FLUNDERS_V1BETA1}/f1"),
        "application/json;as=Table;v=v1;g=meta.k8s.io",
    );
    assert_eq!(table.expect(200)["kind"], "Table");
    assert_eq!(table.json["rows"][0]["object"]["metadata"]["name"], "f1");
    // Missing: a 404 Status, as before.
    server
        .http()
        .get(&format!("{FLUNDERS_V1BETA1}/nothing"))
        .assert_status(404, "NotFound");
    // kubectl reads the same object (and hides its managedFields, as it does by default).
    let printed = server.kubectl_json(&["get", "flunder", "f1", "-o", "json"]);
    let mut shown = got.clone();
    if let Some(meta) = shown["metadata"].as_object_mut() {
        meta.remove("managedFields");
    }
    assert_eq!(printed, shown);
}

/// The lines of a watch at `path` that ends by itself (`timeoutSeconds`): its whole body, split.
fn watch_lines(server: &Server, path: &str) -> Vec<String> {
    let response = server
        .http()
        .client()
        .get(server.http().url(path))
        .header("Accept", "application/json")
        .send()
        .unwrap_or_else(|e| panic!("watch {path}: {e:#}"));
    assert_eq!(response.status().as_u16(), 200, "watch {path}");
    let text = response.text().unwrap_or_else(|e| panic!("watch {path}: {e:#}"));
    text.lines().map(str::to_owned).collect()
}

/// The ADDED lines of a watch, plain and with a selector every object matches (the parsed path).
fn added_both_ways(server: &Server, path: &str) -> (Vec<String>, Vec<String>) {
    let added = |lines: Vec<String>| -> Vec<String> {
        lines.into_iter().filter(|l| l.contains("\"type\":\"ADDED\"")).collect()
    };
    let plain = added(watch_lines(server, path));
    let selected = added(watch_lines(server, &format!("{path}&labelSelector=!nothing")));
    (plain, selected)
}

#[test]
fn watch_initial_events_in_plain_json_equal_the_parsed_ones() {
    let server = Server::start(&["wardle"]);
    // A list's resourceVersion is the store's revision: the priority and fairness controller's start-up writes
    // must be done before two answers are compared.
    server.wait_for_flowcontrol_bootstrap();
    create_escaped_flunders(&server, 4);
    let names = ["applied", "f0", "f1", "f2", "f3"];
    let after = ["applied", "f0", "f1", "f3", "late"];
    for collection in [FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1] {
        for query in [
            "watch=true&resourceVersion=0&timeoutSeconds=1",
            "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1",
        ] {
            let path = format!("{collection}?{query}");
            let (plain, selected) = added_both_ways(&server, &path);
            assert_eq!(plain, selected, "{path}");
            let events: Vec<Value> = plain
                .iter()
                .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: {e}: {l}")))
                .collect();
            let got: Vec<&str> = events
                .iter()
                .map(|e| e["object"]["metadata"]["name"].as_str().unwrap_or(""))
                .collect();
            assert_eq!(got, names, "{path}");
            for (line, event) in plain.iter().zip(&events) {
                assert_eq!(*line, serde_json::to_string(event).expect("serialize"), "{path}");
                assert!(event["object"]["metadata"]["resourceVersion"].is_string(), "{line}");
            }
        }
    }
    // Changes replayed from the watch cache's history: written from the stored bytes too (or the remembered
    // conversions), the same as parsed.
    let since = server.http().get(FLUNDERS_V1ALPHA1);
    let since = since.expect(200)["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    server
        .http()
        .patch(
            &format!("{FLUNDERS_V1BETA1}/f1"),
            "application/merge-patch+json",
            &json!({"spec": {"flunderReference": "changed"}}),
        )
        .expect(200);
    server.http().delete(&format!("{FLUNDERS_V1BETA1}/f2")).expect(200);
    server
        .http()
        .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("late", "z"))
        .expect(201);
    for collection in [FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1] {
        let path = format!("{collection}?watch=true&resourceVersion={since}&timeoutSeconds=1");
        let plain = watch_lines(&server, &path);
        let selected = watch_lines(&server, &format!("{path}&labelSelector=!nothing"));
        assert_eq!(plain, selected, "{path}");
        let events: Vec<(String, String)> = plain
            .iter()
            .map(|l| {
                let event: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{path}: {e}: {l}"));
                assert_eq!(*l, serde_json::to_string(&event).expect("serialize"), "{path}");
                let name = event["object"]["metadata"]["name"].as_str().unwrap_or("").to_owned();
                (event["type"].as_str().unwrap_or("").to_owned(), name)
            })
            .collect();
        let expected =
            [("MODIFIED", "f1"), ("DELETED", "f2"), ("ADDED", "late")].map(|(t, n)| (t.to_owned(), n.to_owned()));
        assert_eq!(events, expected, "{path}");
    }
    // kubectl's watch still reports what changes after its list.
    let mut watch = server.kubectl_watch(&["get", "flunders", "-w", "--output-watch-events", "-o", "json"]);
    let initial = watch
        .events()
        .collect_until(std::time::Duration::from_secs(30), |events| events.len() == after.len());
    assert_eq!(initial.len(), after.len(), "{}", watch.describe());
    server.http().delete(&format!("{FLUNDERS_V1BETA1}/f0")).expect(200);
    let deleted = watch
        .events()
        .collect_until(std::time::Duration::from_secs(30), |events| !events.is_empty());
    assert_eq!(
        deleted.first().map(|e| e["type"].clone()),
        Some(json!("DELETED")),
        "{}",
        watch.describe()
    );
}

/// A Table's JSON with the age cells (columns of type date) replaced by "AGE" after checking they are strings: an
/// age may tick between two Tables.
fn without_ages(mut table: Value) -> Value {
    let ages: Vec<usize> = table["columnDefinitions"]
        .as_array()
        .unwrap_or_else(|| panic!("not a Table: {table}"))
        .iter()
        .enumerate()
        .filter(|(_, c)| c["type"] == "date")
        .map(|(i, _)| i)
        .collect();
    for row in table["rows"].as_array_mut().into_iter().flatten() {
        for &i in &ages {
            assert!(row["cells"][i].is_string(), "{row}");
            row["cells"][i] = json!("AGE");
        }
    }
    table
}

#[test]
fn tables_from_the_stored_bytes_equal_the_parsed_tables() {
    let server = Server::start(&["wardle"]);
    // A list's resourceVersion is the store's revision: the priority and fairness controller's start-up writes
    // must be done before two answers are compared.
    server.wait_for_flowcontrol_bootstrap();
    create_escaped_flunders(&server, 4);
    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
    for collection in [FLUNDERS_V1ALPHA1, FLUNDERS_V1BETA1] {
        for query in [
            "?resourceVersion=0",
            "?limit=2",
            "?includeObject=None",
            "?includeObject=Object",
        ] {
            // Twice: the first Table remembers the rows' cells, the second is written from them.
            for _ in 0..2 {
                let path = format!("{collection}{query}");
                let plain = server.http().get_accepting(&path, TABLE);
                assert_eq!(plain.status, 200, "{path}: {}", plain.text);
                assert_eq!(plain.content_type, TABLE, "{path}");
                assert_eq!(
                    plain.text,
                    serde_json::to_string(&plain.json).expect("serialize"),
                    "{path}: not the compact serialization"
                );
                let selected = server
                    .http()
                    .get_accepting(&format!("{path}&labelSelector=!nothing"), TABLE);
                let (plain, selected) = (without_ages(plain.json), without_ages(selected.json));
                if query == "?limit=2" {
                    // A selective page has no remainingItemCount.
                    assert_eq!(plain["rows"], selected["rows"], "{path}");
                } else {
                    assert_eq!(plain, selected, "{path}");
                }
            }
        }
    }
    let printed = server.kubectl_ok(&["get", "flunders"]);
    for name in ["applied", "f0", "f1", "f2", "f3"] {
        assert!(printed.contains(name), "{printed}");
    }
}
