//! What the plugins cost in memory while idle and while compiling: an idle component is unloaded
//! with its instances, its code mapping gone from the process, and loaded again from the compile cache on its next
//! call; components compile in a child process, never in the server's heap.

use std::time::Duration;

use e2e::{metric_value, wait_until, Server};
use serde_json::json;

const FLUNDERS: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
const BOOKS: &str = "/apis/books.example.com/v1/namespaces/default/books";
const LOADED: &str = "wasm_apiserver_plugin_components_loaded";

fn flunder(name: &str) -> serde_json::Value {
    json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
        "metadata": {"name": name}, "spec": {"reference": "r"}})
}

fn book(name: &str) -> serde_json::Value {
    json!({"apiVersion": "books.example.com/v1", "kind": "Book",
        "metadata": {"name": name}, "spec": {"title": "A title", "pages": 10}})
}

/// The compiled components (`.cwasm` files of the compile cache) mapped into the server's address space.
fn mapped_components(server: &Server) -> Vec<String> {
    let pid = server.pid().expect("the server runs");
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).expect("the server's memory maps");
    let mut files: Vec<String> = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .filter(|f| f.ends_with(".cwasm"))
        .map(str::to_owned)
        .collect();
    files.sort();
    files.dedup();
    files
}

#[test]
fn idle_components_are_unloaded_and_loaded_again_on_their_next_call() {
    let server = Server::start_with_args(&["wardle", "books"], &["--evict-idle-after", "1s"]);
    let http = server.http();
    http.post_json(FLUNDERS, &flunder("one")).expect(201);
    http.post_json(BOOKS, &book("one")).expect(201);
    let metrics = || http.get("/metrics").text;
    let text = metrics();
    assert_eq!(metric_value(&text, LOADED), Some(2.0), "{text}");
    assert_eq!(mapped_components(&server).len(), 2, "{:?}", mapped_components(&server));
    // The instances' linear memory is counted: the Python guest's is several MiB.
    let books_memory = r#"wasm_apiserver_plugin_memory_bytes{plugin="books"}"#;
    assert!(
        metric_value(&text, books_memory).is_some_and(|b| b > 1_000_000.0),
        "{text}"
    );

    // Idle: both components go, and with them their code's memory mapping.
    // Within seconds of the idle time: the first eviction pass comes early, not after the 2-minute default's 30 s.
    let mut text = String::new();
    assert!(
        wait_until(Duration::from_secs(15), || {
            text = metrics();
            metric_value(&text, LOADED) == Some(0.0)
        }),
        "idle components kept loaded:\n{text}"
    );
    // The gauge counts a component out as it is unloaded; its mapping and its instances' memory go when the last
    // references to them (a call finishing on another thread, the pool's instances) are dropped, moments later.
    let mut mapped = Vec::new();
    assert!(
        wait_until(Duration::from_secs(5), || {
            mapped = mapped_components(&server);
            text = metrics();
            mapped.is_empty() && metric_value(&text, books_memory) == Some(0.0)
        }),
        "unloaded components still mapped ({mapped:?}) or their instances' memory counted:\n{text}"
    );

    // Their next calls load them again; the objects made before are there.
    http.post_json(FLUNDERS, &flunder("two")).expect(201);
    http.post_json(BOOKS, &book("two")).expect(201);
    let list = http.get(BOOKS).expect(200).clone();
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|b| b["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["one", "two"]);
    let text = metrics();
    assert_eq!(metric_value(&text, LOADED), Some(2.0), "{text}");
}

/// A component compiles in a child process (`plugin compile`): a server with an empty compile cache serves its plugin,
/// and a file that is no component still fails to load with the compiler's own message.
#[test]
fn components_compile_in_a_child_process() {
    let cache = tempfile::tempdir().expect("a temp dir");
    let cache_dir = cache.path().to_str().expect("a UTF-8 path");
    let server = Server::start_with_args(&["wardle"], &["--plugin-cache-dir", cache_dir]);
    server.http().post_json(FLUNDERS, &flunder("one")).expect(201);
    let compiled: Vec<_> = std::fs::read_dir(cache.path())
        .expect("the cache")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(compiled.len(), 1, "{compiled:?}");
    assert!(compiled[0].ends_with(".cwasm"), "{compiled:?}");

    std::fs::write(server.plugin_dir().join("broken.wasm"), b"not a component").expect("write");
    let mut text = String::new();
    assert!(
        wait_until(Duration::from_secs(30), || {
            text = server.http().get("/readyz?verbose").text;
            text.contains("[-]plugin/broken.wasm failed to load")
        }),
        "{text}"
    );
    assert!(text.contains("compiling the component"), "{text}");
    assert!(text.contains("magic header"), "{text}");
    // No temporary file of the failed compile is left in the cache.
    let left: Vec<_> = std::fs::read_dir(cache.path())
        .expect("the cache")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert_eq!(left, Vec::<String>::new());
    assert!(
        server.log_contains("compiled in a child process"),
        "{}",
        server.log_tail(200)
    );
}

#[test]
fn idle_instances_hold_at_most_the_pool_memory_bound_host_wide() {
    // Room for wardle's idle instance (about 1 MiB of linear memory), not for the Python guest's (over 10 MiB).
    let server = Server::start_with_args(&["wardle", "books"], &["--plugin-pool-memory", "8Mi"]);
    let http = server.http();
    let metrics = || http.get("/metrics").text;
    let count = |text: &str, plugin: &str| {
        metric_value(
            text,
            &format!(r#"wasm_apiserver_plugin_instantiations_total{{plugin="{plugin}"}}"#),
        )
        .unwrap_or(0.0)
    };
    const POOLED: &str = "wasm_apiserver_plugin_pooled_memory_bytes";
    const NOT_POOLED: &str = "wasm_apiserver_plugin_instances_not_pooled_total";

    // Wardle's instance fits: kept after its call and used by the next ones.
    http.post_json(FLUNDERS, &flunder("f0")).expect(201);
    let before = metrics();
    for i in 1..4 {
        http.post_json(FLUNDERS, &flunder(&format!("f{i}"))).expect(201);
    }
    let after = metrics();
    assert_eq!(count(&after, "wardle"), count(&before, "wardle"), "{after}");
    let pooled = metric_value(&after, POOLED).expect("the pooled memory gauge");
    assert!(pooled > 0.0 && pooled <= (8 << 20) as f64, "{after}");

    // The Python guest's does not: each call makes an instance of its own, drops it after, and still succeeds.
    let before = metrics();
    for i in 0..3 {
        http.post_json(BOOKS, &book(&format!("b{i}"))).expect(201);
    }
    let after = metrics();
    assert!(count(&after, "books") >= count(&before, "books") + 3.0, "{after}");
    let dropped = metric_value(&after, NOT_POOLED).unwrap_or(0.0) - metric_value(&before, NOT_POOLED).unwrap_or(0.0);
    assert!(dropped >= 3.0, "{after}");
    assert!(
        metric_value(&after, POOLED).is_some_and(|p| p <= (8 << 20) as f64),
        "{after}"
    );
    assert_eq!(http.get(BOOKS).expect(200)["items"].as_array().map(Vec::len), Some(3));
}
