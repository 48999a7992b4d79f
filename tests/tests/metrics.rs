//! `/metrics`: Prometheus text with per-plugin call metrics and request counters.

use e2e::{flunder_v1beta1, Server, FLUNDERS_V1BETA1};

fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
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
    assert!(sample(&after, "apiserver_request_total{method=\"POST\",code=\"201\"}") >= 1.0);
    assert!(sample(&after, "apiserver_request_total{method=\"POST\",code=\"422\"}") >= 1.0);
}

/// The value of a series, if present.
fn find(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

#[test]
fn every_served_resource_has_a_watch_cache_including_plugins_added_later() {
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
    let added = wait_until(Duration::from_secs(30), || {
        find(&server.http().get("/metrics").text, notes).is_some()
    });
    assert!(added, "no cache for the notes of the added plugin");
    std::fs::remove_file(server.plugin_dir().join("partial.wasm")).expect("remove the plugin");
    let removed = wait_until(Duration::from_secs(30), || {
        find(&server.http().get("/metrics").text, notes).is_none()
    });
    assert!(removed, "the cache of the removed plugin's notes is still there");
}
