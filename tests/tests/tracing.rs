//! Traces: the server started with `--tracing-config-file` (a TracingConfiguration with sampling at 0, so only
//! callers that sample are traced) exports over OTLP to a real Jaeger (built from its Go module by
//! scripts/build-jaeger.sh, path in `JAEGER`); a create sent with a W3C `traceparent` is read back through Jaeger's
//! query API as one trace with the client's trace id: the request's span is the child of the client's, and below
//! it are authentication, authorization, admission, the plugin's calls (plugin, tenant, hook, CPU time) and the
//! storage write; a request its caller did not sample is not traced; a plugin's log line during a traced request
//! names the trace.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use e2e::{free_port, wait_until, Server};
use serde_json::{json, Value};

/// The Jaeger binary, or `None` (the test is skipped) when `JAEGER` is not set.
fn jaeger_binary() -> Option<PathBuf> {
    match std::env::var_os("JAEGER") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            eprintln!("SKIPPED: JAEGER is not set (scripts/test.sh builds Jaeger and sets it)");
            None
        }
    }
}

/// A running Jaeger (all in one process, traces in memory) on free loopback ports.
struct Jaeger {
    child: Child,
    otlp: u16,
    query: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Jaeger {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Jaeger {
    fn start(binary: &PathBuf) -> Jaeger {
        let dir = tempfile::tempdir().unwrap();
        let (otlp, query, query_grpc) = (free_port().unwrap(), free_port().unwrap(), free_port().unwrap());
        let config = format!(
            "service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 1000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: 127.0.0.1:{otlp}
processors:
  batch:
    timeout: 100ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
"
        );
        let file = dir.path().join("jaeger.yaml");
        std::fs::write(&file, config).unwrap();
        let log = std::fs::File::create(dir.path().join("jaeger.log")).unwrap();
        let child = Command::new(binary)
            .arg(format!("--config={}", file.display()))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start jaeger");
        let jaeger = Jaeger {
            child,
            otlp,
            query,
            _dir: dir,
        };
        let ready = wait_until(Duration::from_secs(60), || jaeger.get("/api/services").is_some());
        let log = std::fs::read_to_string(jaeger._dir.path().join("jaeger.log")).unwrap_or_default();
        assert!(ready, "jaeger's query API never answered:\n{log}");
        jaeger
    }

    fn get(&self, path: &str) -> Option<Value> {
        let reply = reqwest::blocking::get(format!("http://127.0.0.1:{}{path}", self.query)).ok()?;
        if !reply.status().is_success() {
            return None;
        }
        reply.json().ok()
    }

    /// The spans of a trace, once Jaeger has them all (those `complete` asks for).
    fn trace(&self, trace_id: &str, complete: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let mut spans = Vec::new();
        wait_until(Duration::from_secs(30), || {
            spans = self
                .get(&format!("/api/traces/{trace_id}"))
                .and_then(|t| t.pointer("/data/0/spans").and_then(Value::as_array).cloned())
                .unwrap_or_default();
            complete(&spans)
        });
        spans
    }
}

fn tag<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["tags"]
        .as_array()?
        .iter()
        .find(|t| t["key"] == key)
        .map(|t| &t["value"])
}

/// A tag's integer value (Jaeger shows some integer attributes as text).
fn integer(v: Option<&Value>) -> Option<i64> {
    match v? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

fn parent(span: &Value) -> Option<&str> {
    span["references"]
        .as_array()?
        .iter()
        .find(|r| r["refType"] == "CHILD_OF")
        .and_then(|r| r["spanID"].as_str())
}

/// Whether `span` is below `ancestor` in `spans`.
fn below(spans: &[Value], span: &Value, ancestor: &Value) -> bool {
    let mut at = span;
    for _ in 0..32 {
        let Some(up) = parent(at) else {
            return false;
        };
        if up == ancestor["spanID"] {
            return true;
        }
        match spans.iter().find(|s| s["spanID"] == up) {
            Some(s) => at = s,
            None => return false,
        }
    }
    false
}

/// Whether a storage span is the create of the flunder `name` in `default`.
fn is_write_of(span: &Value, name: &str) -> bool {
    tag(span, "operation") == Some(&json!("create"))
        && tag(span, "key")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with(&format!("/flunders/default/{name}")))
}

fn named<'a>(spans: &'a [Value], name: &str) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["operationName"] == name).collect()
}

const FLUNDERS: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";

/// Sends a request with a W3C `traceparent` (a POST of `body`, or a GET) and returns its status code.
fn send_traced(server: &Server, traceparent: &str, body: Option<&Value>) -> u16 {
    let client = server.http().client();
    let url = server.http().url(FLUNDERS);
    let request = match body {
        Some(body) => client.post(url).json(body),
        None => client.get(url),
    };
    request
        .header("traceparent", traceparent)
        .send()
        .unwrap()
        .status()
        .as_u16()
}

#[test]
fn a_create_with_a_traceparent_is_one_trace_in_jaeger_down_to_the_plugin_and_the_storage_write() {
    let Some(binary) = jaeger_binary() else {
        return;
    };
    let jaeger = Jaeger::start(&binary);
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("tracing.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nendpoint: 127.0.0.1:{}\nsamplingRatePerMillion: 0\n",
            jaeger.otlp
        ),
    )
    .unwrap();
    let server = Server::start_with_args(&["wardle"], &["--tracing-config-file", config.to_str().unwrap()]);

    // A caller that does not sample: no trace (checked once the sampled one below has arrived, after it).
    let unsampled = "5bf92f3577b34da6a3ce929d0e0e4737";
    let traceparent = format!("00-{unsampled}-00f067aa0ba902b8-00");
    assert_eq!(send_traced(&server, &traceparent, None), 200);

    // The client's span: a trace id and a span id of its own, sampled.
    let trace_id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let client_span = "00f067aa0ba902b7";
    let flunder = e2e::flunder_v1beta1("traced", "x");
    let traceparent = format!("00-{trace_id}-{client_span}-01");
    assert_eq!(send_traced(&server, &traceparent, Some(&flunder)), 201);

    let spans = jaeger.trace(trace_id, |spans| {
        !named(spans, "KubernetesAPI").is_empty()
            && named(spans, "storage").iter().any(|s| is_write_of(s, "traced"))
            && !named(spans, "plugin call").is_empty()
    });
    let names: Vec<&str> = spans.iter().filter_map(|s| s["operationName"].as_str()).collect();
    let request = named(&spans, "KubernetesAPI");
    assert_eq!(request.len(), 1, "one request span: {names:?}");
    let request = request[0];
    assert_eq!(parent(request), Some(client_span), "{request}");
    assert_eq!(tag(request, "http.method"), Some(&json!("POST")));
    assert_eq!(integer(tag(request, "http.status_code")), Some(201), "{request}");
    for name in ["authentication", "authorization", "admission", "plugin call", "storage"] {
        let found = named(&spans, name);
        assert!(!found.is_empty(), "no {name:?} span in {names:?}");
        assert!(
            found.iter().all(|s| below(&spans, s, request)),
            "{name:?} is not below the request span"
        );
    }
    assert!(
        jaeger.get(&format!("/api/traces/{unsampled}")).is_none(),
        "a request its caller did not sample was traced"
    );
    let write = named(&spans, "storage")
        .into_iter()
        .find(|s| is_write_of(s, "traced"))
        .expect("the storage write");
    assert!(below(&spans, write, request));
    let calls = named(&spans, "plugin call");
    assert!(calls
        .iter()
        .all(|c| tag(c, "plugin").is_some() && tag(c, "tenant").is_some()));
    assert!(calls.iter().any(|c| integer(tag(c, "cpu_us")).is_some()), "{calls:?}");
    let hooks: Vec<&str> = calls
        .iter()
        .filter_map(|c| tag(c, "hook").and_then(Value::as_str))
        .collect();
    assert!(!hooks.is_empty(), "{hooks:?}");

    // A plugin's log line during a traced request carries the trace id (BanFlunder logs its refusals).
    server
        .http()
        .post_json(
            "/apis/wardle.example.com/v1alpha1/fischers",
            &e2e::fischer_v1alpha1("f", &["banned"]),
        )
        .expect(201);
    let banned_trace = "0af7651916cd43dd8448eb211c80319c";
    let traceparent = format!("00-{banned_trace}-b7ad6b7169203331-01");
    let banned = e2e::flunder_v1beta1("banned", "x");
    assert_eq!(send_traced(&server, &traceparent, Some(&banned)), 403);
    assert!(
        wait_until(Duration::from_secs(10), || server
            .log_contains(&format!("trace_id={banned_trace}"))),
        "no plugin log line with the trace id:\n{}",
        server.log_tail(20)
    );
}
