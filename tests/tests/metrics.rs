//! `/metrics`: Prometheus text with per-plugin call metrics and request counters.

use e2e::{flunder_v1beta1, metric_value as find, Server, FLUNDERS_V1BETA1};

fn sample(text: &str, series: &str) -> f64 {
    e2e::metric_value(text, series).unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
}

#[test]
fn plugin_calls_errors_latency_and_instances_are_counted() {
    let server = Server::start(&["wardle"]);
    let before = server.http().get("/metrics").text;
    let calls_before = sample(&before, "wasm_apiserver_plugin_calls_total{plugin=\"wardle\"}");

    server
        .http()
        .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("counted", "x"))
        .expect(201);
    let mut invalid = flunder_v1beta1("invalid", "x");
    invalid["spec"]["fischerReference"] = "y".into();
    assert_eq!(server.http().post_json(FLUNDERS_V1BETA1, &invalid).status, 422);

    let after = server.http().get("/metrics").text;
    assert!(
        after.contains("# TYPE wasm_apiserver_plugin_call_duration_seconds histogram"),
        "{after}"
    );
    let calls = sample(&after, "wasm_apiserver_plugin_calls_total{plugin=\"wardle\"}");
    assert!(calls >= calls_before + 4.0, "calls went from {calls_before} to {calls}");
    assert_eq!(
        sample(
            &after,
            "wasm_apiserver_plugin_call_duration_seconds_count{plugin=\"wardle\"}"
        ),
        calls
    );
    assert!(sample(&after, "wasm_apiserver_plugin_instances{plugin=\"wardle\"}") >= 1.0);
}

#[test]
fn requests_are_counted_and_timed_by_verb_resource_scope_and_code() {
    let server = Server::start(&["wardle"]);
    let http = server.http();
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("counted", "x"))
        .expect(201);
    let mut invalid = flunder_v1beta1("invalid", "x");
    invalid["spec"]["fischerReference"] = "y".into();
    assert_eq!(http.post_json(FLUNDERS_V1BETA1, &invalid).status, 422);
    http.get(&format!("{FLUNDERS_V1BETA1}/counted")).expect(200);
    http.get("/apis/wardle.example.com/v1beta1/flunders").expect(200);
    // Unknown resources and other paths are counted by method only: garbage URLs cannot grow the label sets.
    http.get("/apis/wardle.example.com/v1beta1/namespaces/default/garbage-1")
        .assert_status(404, "NotFound");
    http.get("/apis/nothing.example.com/v1/garbage-2")
        .assert_status(404, "NotFound");
    http.get(&format!("{FLUNDERS_V1BETA1}/counted/garbage-3"))
        .assert_status(404, "NotFound");

    let text = http.get("/metrics").text;
    let flunders = |verb: &str, scope: &str| {
        format!(
            "verb=\"{verb}\",group=\"wardle.example.com\",version=\"v1beta1\",resource=\"flunders\",subresource=\"\",scope=\"{scope}\""
        )
    };
    let total = |kind: &str, code: u16| sample(&text, &format!("apiserver_request_total{{{kind},code=\"{code}\"}}"));
    assert_eq!(total(&flunders("POST", "namespace"), 201), 1.0);
    assert_eq!(total(&flunders("POST", "namespace"), 422), 1.0);
    assert_eq!(total(&flunders("GET", "resource"), 200), 1.0);
    assert_eq!(total(&flunders("LIST", "cluster"), 200), 1.0);
    let other = "verb=\"GET\",group=\"\",version=\"\",resource=\"\",subresource=\"\",scope=\"\"";
    assert!(total(other, 404) >= 2.0, "{text}");
    assert!(!text.contains("garbage"), "{text}");
    assert_eq!(
        sample(
            &text,
            &format!(
                "apiserver_request_duration_seconds_count{{{}}}",
                flunders("POST", "namespace")
            )
        ),
        2.0
    );
    // One storage create: the invalid flunder never reached storage.
    assert_eq!(
        sample(
            &text,
            "wasm_apiserver_storage_request_duration_seconds_count{operation=\"create\",type=\"flunders.wardle.example.com\"}"
        ),
        1.0
    );
}

#[test]
fn served_resources_get_a_watch_cache_on_first_use_including_plugins_added_later() {
    use std::time::Duration;

    use e2e::{target_dir, wait_until};

    let server = Server::start(&["wardle"]);
    for name in ["one", "two"] {
        server
            .http()
            .post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(name, "x"))
            .expect(201);
    }
    let flunders = r#"{group="wardle.example.com",resource="flunders"}"#;
    let _watch = server
        .http()
        .watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion=0"));
    let cached = wait_until(Duration::from_secs(30), || {
        let text = server.http().get("/metrics").text;
        find(&text, &format!("wasm_apiserver_watch_cache_objects{flunders}")) == Some(2.0)
            && find(&text, &format!("wasm_apiserver_watch_cache_watchers{flunders}")) == Some(1.0)
    });
    let text = server.http().get("/metrics").text;
    assert!(cached, "the flunders cache holds 2 objects and 1 watcher:\n{text}");
    let bytes = sample(&text, &format!("wasm_apiserver_watch_cache_bytes{flunders}"));
    assert!(bytes > 100.0, "{bytes} bytes for two flunders");
    let fischers = r#"wasm_apiserver_watch_cache_objects{group="wardle.example.com",resource="fischers"}"#;
    assert_eq!(sample(&text, fischers), 0.0);

    // A plugin added while serving gets its caches; a removed one loses them.
    let notes = r#"wasm_apiserver_watch_cache_objects{group="partial.example.com",resource="notes"}"#;
    assert_eq!(find(&text, notes), None, "{text}");
    std::fs::copy(
        target_dir().join("plugins").join("partial.wasm"),
        server.plugin_dir().join("partial.wasm"),
    )
    .expect("copy the plugin");
    // Caches start on first use: once the notes are served, a list starts theirs.
    let added = wait_until(Duration::from_secs(30), || {
        server.http().get(e2e::NOTES_V1).status == 200 && find(&server.http().get("/metrics").text, notes).is_some()
    });
    assert!(added, "no cache for the notes of the added plugin");
    std::fs::remove_file(server.plugin_dir().join("partial.wasm")).expect("remove the plugin");
    let removed = wait_until(Duration::from_secs(30), || {
        find(&server.http().get("/metrics").text, notes).is_none()
    });
    assert!(removed, "the cache of the removed plugin's notes is still there");
}

#[test]
fn watches_are_counted_while_served_and_their_events_by_kind() {
    use std::time::Duration;

    use e2e::{str_at, wait_until};

    let server = Server::start(&["wardle"]);
    let http = server.http();
    let created = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("first", "x"));
    let rv = str_at(created.expect(201), "/metadata/resourceVersion").to_owned();
    let mut open = http.watch(&format!("{FLUNDERS_V1BETA1}?watch=true&resourceVersion={rv}"));
    http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1("second", "x"))
        .expect(201);
    let event = open.next(Duration::from_secs(30)).expect("an event");
    assert_eq!(str_at(&event, "/object/metadata/name"), "second");

    let watching = "apiserver_longrunning_requests{verb=\"WATCH\",group=\"wardle.example.com\",version=\"v1beta1\",resource=\"flunders\",subresource=\"\",scope=\"namespace\"}";
    let events = "{group=\"wardle.example.com\",version=\"v1beta1\",kind=\"Flunder\"}";
    let text = http.get("/metrics").text;
    assert_eq!(sample(&text, watching), 1.0);
    assert_eq!(sample(&text, &format!("apiserver_watch_events_total{events}")), 1.0);
    assert_eq!(
        sample(&text, &format!("apiserver_watch_events_sizes_count{events}")),
        1.0
    );
    assert!(sample(&text, &format!("apiserver_watch_events_sizes_sum{events}")) > 100.0);

    // A watch that times out stops being counted; the open one still is.
    let opened = std::time::Instant::now();
    let mut brief = http.watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={rv}&timeoutSeconds=5"
    ));
    brief.next(Duration::from_secs(30)).expect("the replayed event");
    let now = sample(&http.get("/metrics").text, watching);
    if opened.elapsed() < Duration::from_secs(4) {
        assert_eq!(now, 2.0, "both watches are counted");
    }
    let counted = |n: f64| {
        wait_until(Duration::from_secs(30), || {
            sample(&http.get("/metrics").text, watching) == n
        })
    };
    assert!(counted(1.0), "the timed-out watch is still counted");
    drop(open);
}

#[test]
fn a_stored_object_is_converted_once_for_all_the_reads_in_another_version() {
    use e2e::FLUNDERS_V1ALPHA1;

    let server = Server::start(&["wardle"]);
    let http = server.http();
    // Stored in v1alpha1 (the storage version); read in v1beta1.
    let revisions: Vec<String> = ["a", "b", "c"]
        .iter()
        .map(|name| {
            let reply = http.post_json(FLUNDERS_V1BETA1, &flunder_v1beta1(name, "x"));
            e2e::str_at(reply.expect(201), "/metadata/resourceVersion").to_owned()
        })
        .collect();
    let calls = || {
        sample(
            &http.get("/metrics").text,
            "wasm_apiserver_plugin_calls_total{plugin=\"wardle\"}",
        )
    };
    let list = |path: &str| {
        let reply = http.get(path);
        let items = reply.expect(200)["items"].as_array().expect("items").clone();
        items
            .iter()
            .map(|i| i["apiVersion"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    let before = calls();
    assert_eq!(list(FLUNDERS_V1BETA1), ["wardle.example.com/v1beta1"; 3]);
    let first = calls();
    assert!(
        first - before <= 3.0,
        "at most one conversion per object: {before} → {first}"
    );
    // Read again, as a list, one by one and as a watch's replay: no conversion is made again.
    assert_eq!(list(FLUNDERS_V1BETA1), ["wardle.example.com/v1beta1"; 3]);
    http.get(&format!("{FLUNDERS_V1BETA1}/b")).expect(200);
    let mut watch = http.watch(&format!(
        "{FLUNDERS_V1BETA1}?watch=true&resourceVersion={}",
        revisions[0]
    ));
    for name in ["b", "c"] {
        let event = watch
            .next(std::time::Duration::from_secs(30))
            .expect("a replayed event");
        assert_eq!(event["object"]["metadata"]["name"], name);
        assert_eq!(event["object"]["apiVersion"], "wardle.example.com/v1beta1");
    }
    assert_eq!(calls(), first, "the second reads converted again");
    // Tables, as kubectl asks: each row once (from the stored form already known), then never again.
    let table = |path: &str| {
        let reply = http.get_accepting(path, "application/json;as=Table;v=v1;g=meta.k8s.io");
        reply.expect(200)["rows"].as_array().expect("rows").len()
    };
    assert_eq!(table(FLUNDERS_V1BETA1), 3);
    let rows = calls();
    assert!(rows - first <= 3.0, "one row call per object: {first} → {rows}");
    assert_eq!(table(FLUNDERS_V1BETA1), 3);
    assert_eq!(table(&format!("{FLUNDERS_V1BETA1}/a")), 1);
    assert_eq!(calls(), rows, "the second tables called the plugin again");
    let first = rows;
    // The storage version needs no conversion at all.
    assert_eq!(list(FLUNDERS_V1ALPHA1), ["wardle.example.com/v1alpha1"; 3]);
    assert_eq!(calls(), first);
    // A changed object is converted again, once. The watch goes first: its MODIFIED event would be converted
    // concurrently with the reads below, and the memo does not make two conversions of one object at the same time
    // wait for each other (seen once in a full run under load: two calls).
    drop(watch);
    let mut b = http.get(&format!("{FLUNDERS_V1BETA1}/b")).json.clone();
    b["spec"]["flunderReference"] = "y".into();
    http.put_json(&format!("{FLUNDERS_V1BETA1}/b"), &b).expect(200);
    let after_update = calls();
    let got = http.get(&format!("{FLUNDERS_V1BETA1}/b"));
    assert_eq!(got.expect(200)["spec"]["flunderReference"], "y");
    assert_eq!(list(FLUNDERS_V1BETA1), ["wardle.example.com/v1beta1"; 3]);
    assert!(calls() - after_update <= 1.0, "{after_update} → {}", calls());
}
