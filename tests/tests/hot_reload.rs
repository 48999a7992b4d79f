//! Hot reload under load: while a client keeps creating and reading notes, the partial plugin is replaced by a new
//! version (one more schema field), removed, and added again. No request fails except the documented 404 while the
//! plugin is absent, and the new field is served after the swap.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use e2e::{target_dir, wait_until, Server, NOTES_V1};
use serde_json::json;

const OPENAPI_NOTES: &str = "/openapi/v3/apis/partial.example.com/v1";

/// Replaces a file atomically, as a deployment tool would (write beside it, then rename).
fn install(server: &Server, plugin: &str, as_name: &str) {
    let tmp = server.plugin_dir().join(format!(".{as_name}.tmp"));
    std::fs::copy(target_dir().join("plugins").join(format!("{plugin}.wasm")), &tmp).expect("copy the plugin");
    std::fs::rename(&tmp, server.plugin_dir().join(format!("{as_name}.wasm"))).expect("rename the plugin");
}

fn schema_has_color(server: &Server) -> bool {
    let reply = server.http().get(OPENAPI_NOTES);
    reply.status == 200 && reply.text.contains("added in the v2 build")
}

#[test]
fn replacing_removing_and_adding_a_plugin_under_load_loses_no_request() {
    let server = Arc::new(Server::start(&["partial"]));
    assert!(!schema_has_color(&server), "the v1 build must not have spec.color");

    let stop = Arc::new(AtomicBool::new(false));
    let absent = Arc::new(AtomicBool::new(false));
    let ok = Arc::new(AtomicUsize::new(0));
    let not_found_while_absent = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let clients: Vec<_> = (0..2)
        .map(|c| {
            let (server, stop, absent, ok, nf, failures) = (
                server.clone(),
                stop.clone(),
                absent.clone(),
                ok.clone(),
                not_found_while_absent.clone(),
                failures.clone(),
            );
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::SeqCst) {
                    i += 1;
                    let name = format!("c{c}-{i}");
                    let note = json!({"apiVersion": "partial.example.com/v1", "kind": "Note",
                        "metadata": {"name": name}, "spec": {"text": "hello"}});
                    let was_absent = absent.load(Ordering::SeqCst);
                    let created = server.http().post_json(NOTES_V1, &note);
                    let read = (created.status == 201).then(|| server.http().get(&format!("{NOTES_V1}/{name}")));
                    let is_absent = absent.load(Ordering::SeqCst);
                    for reply in std::iter::once(&created).chain(read.as_ref()) {
                        match reply.status {
                            200 | 201 => {
                                ok.fetch_add(1, Ordering::SeqCst);
                            }
                            404 if was_absent || is_absent => {
                                nf.fetch_add(1, Ordering::SeqCst);
                            }
                            other => failures.lock().unwrap().push(format!("{name}: {other} {}", reply.text)),
                        }
                    }
                }
            })
        })
        .collect();
    let progressed = |n: usize| {
        let target = ok.load(Ordering::SeqCst) + n;
        assert!(
            wait_until(Duration::from_secs(30), || ok.load(Ordering::SeqCst) >= target),
            "the clients made no progress; server log:\n{}",
            server.log_tail(40)
        );
    };
    progressed(20);

    // Replace v1 by v2: the new field appears in OpenAPI, and requests keep succeeding.
    install(&server, "partial-v2", "partial");
    assert!(
        wait_until(Duration::from_secs(30), || schema_has_color(&server)),
        "the v2 schema was not served; log:\n{}",
        server.log_tail(40)
    );
    progressed(20);
    let colored = json!({"apiVersion": "partial.example.com/v1", "kind": "Note",
        "metadata": {"name": "colored"}, "spec": {"text": "hi", "color": "red"}});
    let created = server
        .http()
        .post_json(&format!("{NOTES_V1}?fieldValidation=Strict"), &colored);
    assert_eq!(created.expect(201)["spec"]["color"], "red", "v2 keeps the new field");

    // Remove it: 404 while absent (the clients count those as documented, not as failures).
    absent.store(true, Ordering::SeqCst);
    std::fs::remove_file(server.plugin_dir().join("partial.wasm")).expect("remove the plugin");
    assert!(wait_until(Duration::from_secs(30), || server
        .http()
        .get("/apis/partial.example.com/v1")
        .status
        == 404));

    // Add it again: served again, with the data kept.
    install(&server, "partial-v2", "partial");
    assert!(wait_until(Duration::from_secs(30), || server
        .http()
        .get(&format!("{NOTES_V1}/colored"))
        .status
        == 200));
    absent.store(false, Ordering::SeqCst);
    progressed(20);

    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.join().expect("client thread");
    }
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} requests failed, first: {:?}",
        failures.len(),
        failures.first()
    );
    assert!(ok.load(Ordering::SeqCst) >= 60);
}

#[test]
fn a_plugin_that_fails_to_load_is_reported_and_the_previous_version_keeps_serving() {
    let server = Server::start(&["partial"]);
    std::fs::write(server.plugin_dir().join("broken.wasm"), b"not a component").expect("write");
    assert!(wait_until(Duration::from_secs(30), || {
        let r = server.http().get("/readyz?verbose");
        r.status == 200 && r.text.contains("[-]plugin/broken.wasm failed to load") && r.text.contains("magic header")
    }));
    let metrics = server.http().get("/metrics").text;
    assert!(
        metrics.contains("wasm_apiserver_plugin_load_failures{file=\"broken.wasm\"} 1"),
        "{metrics}"
    );
    // Replacing a served plugin with garbage keeps the served version.
    let tmp = server.plugin_dir().join(".partial.tmp");
    std::fs::write(&tmp, b"\0asm garbage").expect("write");
    std::fs::rename(&tmp, server.plugin_dir().join("partial.wasm")).expect("rename");
    assert!(wait_until(Duration::from_secs(30), || server
        .http()
        .get("/readyz?verbose")
        .text
        .contains("plugin/partial.wasm failed")));
    let note = json!({"apiVersion": "partial.example.com/v1", "kind": "Note", "metadata": {"name": "still"}, "spec": {"text": "up"}});
    server.http().post_json(NOTES_V1, &note).expect(201);
}

/// The names of the compiled components in a cache directory.
fn cache_entries(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read the plugin cache")
        .map(|e| e.expect("a directory entry").file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".cwasm"))
        .collect();
    names.sort();
    names
}

#[test]
fn replaced_versions_leave_the_compile_cache_when_it_is_over_its_limit() {
    let cache = tempfile::tempdir().expect("a cache directory");
    let cache_dir = cache.path().to_str().expect("a UTF-8 path");
    let server = Server::start_with_args(
        &["partial", "wardle"],
        &["--plugin-cache-dir", cache_dir, "--plugin-cache-limit", "0"],
    );
    let first = cache_entries(cache.path());
    assert_eq!(first.len(), 2, "one entry per served plugin: {first:?}");

    // Replace partial: its old entry goes (the cache is over its limit of 0), wardle's stays as it is served.
    install(&server, "partial-v2", "partial");
    assert!(
        wait_until(Duration::from_secs(30), || schema_has_color(&server)),
        "the v2 schema was not served; log:\n{}",
        server.log_tail(40)
    );
    let mut now = Vec::new();
    let pruned = wait_until(Duration::from_secs(30), || {
        now = cache_entries(cache.path());
        now.len() == 2
    });
    assert!(
        pruned,
        "the replaced version's entry stayed: {now:?}; log:\n{}",
        server.log_tail(40)
    );
    let kept: Vec<&String> = now.iter().filter(|n| first.contains(n)).collect();
    assert_eq!(
        kept.len(),
        1,
        "wardle's entry is kept and partial's is new: {first:?} → {now:?}"
    );
}
