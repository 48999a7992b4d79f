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
