//! A plugin written in Go with the Go SDK (plugins/greetings-go, built with stock Go, wasm-tools and the WASI
//! preview 1 adapter by scripts/build-plugins.sh), driven with kubectl: its defaulting, prepare-for-create,
//! validation on create and update (field errors with their paths and reasons), its field selector, deletes, a
//! panic in a hook answered as a 500 naming the plugin and the panic, with the stack in the server's log, and the
//! sandbox's CPU deadline and memory cap stopping a Go loop and unbounded allocation; table columns, `/scale`,
//! `/status` and a validating admission hook.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use e2e::{free_port, kubectl_path, server_binary, wait_until, Server};
use serde_json::{json, Value};

const GREETINGS: &str = "/apis/greetings.example.com/v1/namespaces/default/greetings";

fn greeting(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "greetings.example.com/v1", "kind": "Greeting",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// The (field, reason) of each cause of a Status.
fn causes(status: &Value) -> Vec<(String, String)> {
    status["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| {
                    (
                        c["field"].as_str().unwrap_or("").to_owned(),
                        c["reason"].as_str().unwrap_or("").to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_go_plugin_is_served_with_its_hooks() {
    let server = Server::start(&["greetings-go"]);
    let http = server.http();

    // Created with kubectl: defaulted (replicas 1) and prepared (the message trimmed).
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: greetings.example.com/v1\nkind: Greeting\nmetadata: {name: hello, namespace: default}\nspec: {message: '  Hello, world  '}\n",
    );
    let out = server.kubectl_ok(&["get", "greeting", "hello", "-o", "json"]);
    let hello: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(hello["spec"]["message"], "Hello, world", "{hello:#}");
    assert_eq!(hello["spec"]["replicas"], 1, "{hello:#}");
    assert!(
        hello["metadata"]["uid"].is_string(),
        "the host owns the metadata: {hello:#}"
    );
    let short = server.kubectl_ok(&["get", "gr"]);
    assert!(short.contains("hello"), "{short}");

    // Validation on create: one cause per broken field, named by its path.
    let invalid = http.post_json(
        GREETINGS,
        &greeting("long", json!({"message": "a".repeat(65), "replicas": 11})),
    );
    let status = invalid.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        [
            ("spec.message".to_owned(), "FieldValueTooLong".to_owned()),
            ("spec.replicas".to_owned(), "FieldValueInvalid".to_owned())
        ],
        "{}",
        invalid.text
    );
    assert_eq!(http.get(&format!("{GREETINGS}/long")).status, 404, "nothing is stored");
    let missing = http.post_json(GREETINGS, &greeting("empty", json!({"message": ""})));
    let status = missing.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        [("spec.message".to_owned(), "FieldValueRequired".to_owned())]
    );

    // Validation on update: the message is immutable; replicas may change.
    let err = server.kubectl_err(&[
        "patch",
        "greeting",
        "hello",
        "--type=merge",
        "-p",
        r#"{"spec":{"message":"Bye"}}"#,
    ]);
    assert!(
        err.contains("spec.message") && err.contains("field is immutable"),
        "{err}"
    );
    server.kubectl_ok(&[
        "patch",
        "greeting",
        "hello",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":3}}"#,
    ]);
    let out = server.kubectl_ok(&["get", "greeting", "hello", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(out.trim(), "3");

    // The field selector the plugin declares.
    http.post_json(GREETINGS, &greeting("hi", json!({"message": "Hi"})))
        .expect(201);
    let selected = server.kubectl_ok(&["get", "greetings", "--field-selector", "spec.message=Hi", "-o", "name"]);
    assert_eq!(selected.trim(), "greeting.greetings.example.com/hi");
    let refused = server.kubectl_err(&["get", "greetings", "--field-selector", "spec.replicas=1"]);
    assert!(refused.contains("spec.replicas"), "{refused}");

    // A panic in a hook: 500 naming the plugin and the panic; the stack in the log; the plugin serves on.
    let panicked = http.post_json(GREETINGS, &greeting("boom", json!({"message": "panic!"})));
    let status = panicked.assert_status(500, "InternalError");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("greetings-go") && message.contains("panic in validate: asked to"),
        "{message}"
    );
    let mut log = String::new();
    assert!(
        wait_until(Duration::from_secs(10), || {
            log = server.log_tail(200);
            log.contains("goroutine") && log.contains("main.Validate")
        }),
        "the panic's stack is not in the log:\n{log}"
    );
    http.post_json(GREETINGS, &greeting("after", json!({"message": "Still here"})))
        .expect(201);

    // The sandbox holds for Go: a loop is stopped at its CPU deadline, unbounded allocation at the memory cap.
    let looped = http.post_json(GREETINGS, &greeting("spin", json!({"message": "loop!"})));
    let status = looped.assert_status(504, "Timeout");
    assert!(
        status["message"].as_str().unwrap_or_default().contains("greetings-go"),
        "{}",
        looped.text
    );
    let allocated = http.post_json(GREETINGS, &greeting("grow", json!({"message": "allocate!"})));
    let status = allocated.assert_status(500, "InternalError");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("greetings-go") && message.contains("memory"),
        "{message}"
    );
    http.post_json(GREETINGS, &greeting("recovered", json!({"message": "Back"})))
        .expect(201);

    // Table columns, /scale, /status and the validating admission hook.
    let table = server.kubectl_ok(&["get", "greetings", "-o", "wide"]);
    let header = table.lines().next().unwrap_or_default();
    for column in ["NAME", "MESSAGE", "REPLICAS", "SAID", "AGE"] {
        assert!(header.contains(column), "{table}");
    }
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("hello") && l.contains("Hello, world")),
        "{table}"
    );
    server.kubectl_ok(&["scale", "greeting", "hello", "--replicas=5"]);
    let out = server.kubectl_ok(&["get", "greeting", "hello", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(out.trim(), "5", "scaled through /scale");
    server.kubectl_ok(&[
        "patch",
        "greeting",
        "hello",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":4}}"#,
    ]);
    let reply = http.get(&format!("{GREETINGS}/hello/scale"));
    let scale = reply.expect(200);
    assert_eq!(scale["spec"]["replicas"], 5, "{scale:#}");
    assert_eq!(scale["status"]["replicas"], 4, "{scale:#}");
    let negative = http.patch(
        &format!("{GREETINGS}/hello/status"),
        "application/merge-patch+json",
        &json!({"status": {"replicas": -1}}),
    );
    let status = negative.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        [("status.replicas".to_owned(), "FieldValueInvalid".to_owned())]
    );
    let banned = http.post_json(GREETINGS, &greeting("bye", json!({"message": "Goodbye, world"})));
    let status = banned.assert_status(403, "Forbidden");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or_default()
            .contains("a greeting may not say goodbye"),
        "{}",
        banned.text
    );
    let shouted = server.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: greetings.example.com/v1\nkind: Greeting\nmetadata: {name: loud, namespace: default}\nspec: {message: HELLO}\n",
    );
    let stderr = String::from_utf8_lossy(&shouted.stderr);
    assert!(shouted.status.success(), "{stderr}");
    assert!(
        stderr.contains("Warning: this greeting shouts"),
        "kubectl shows the hook's warning: {stderr}"
    );

    server.kubectl_ok(&["delete", "greeting", "hello"]);
    assert_eq!(http.get(&format!("{GREETINGS}/hello")).status, 404);
}

/// Garbage collections start and end inside hooks only: a hook that leaves garbage behind, called many times with
/// objects the host writes into the plugin's memory between calls, fails no request. (A collection running while
/// the host writes there reads the clock, an import the component model forbids then: the instance traps.)
#[test]
fn garbage_collections_never_run_while_the_host_writes_into_a_go_plugin() {
    let server = Server::start(&["greetings-go"]);
    let http = server.http();
    // Each request carries 8 KiB of annotations the plugin reads, and validation drops 256 KiB of garbage.
    let padding = "x".repeat(8 << 10);
    let mut object = greeting("collected", json!({"message": "garbage!"}));
    object["metadata"]["annotations"] = json!({"padding": padding});
    http.post_json(GREETINGS, &object).expect(201);
    for replicas in 0..300 {
        let patched = http.patch(
            &format!("{GREETINGS}/collected"),
            "application/merge-patch+json",
            &json!({"spec": {"replicas": replicas % 10}, "metadata": {"annotations": {"n": replicas.to_string()}}}),
        );
        assert_eq!(patched.status, 200, "patch {replicas}: {}", patched.text);
    }
}

/// The Go SDK README's walkthrough, run as a new author would run it: `plugin new --lang go`, `./build.sh`,
/// `plugin check`, a server on a plugin directory, `kubectl apply` and `kubectl get`. The block is taken from the
/// README as it is; only its port becomes a free one (and the secure port an ephemeral one), and the server it
/// starts is stopped when the script ends.
#[test]
fn the_go_sdk_walkthrough_runs_as_written() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../guest-sdk/go/README.md"))
        .expect("read the Go SDK's README");
    let block = readme
        .split_once("<!-- walkthrough")
        .and_then(|(_, rest)| rest.split_once("```sh\n"))
        .and_then(|(_, rest)| rest.split_once("\n```"))
        .map(|(block, _)| block)
        .expect("the README has a walkthrough block");
    let port = free_port().expect("a free port").to_string();
    let script = format!(
        "set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n{}\n",
        block
            .replace(
                "--insecure-port 8080",
                &format!("--insecure-port {port} --secure-port 0")
            )
            .replace("127.0.0.1:8080", &format!("127.0.0.1:{port}"))
    );
    assert!(script.contains(&port) && !script.contains("8080"), "{script}");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let bin_dir = |p: PathBuf| p.parent().expect("a directory").to_path_buf();
    let path = std::env::join_paths(
        [bin_dir(server_binary()), bin_dir(kubectl_path())]
            .into_iter()
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("a PATH");
    let started = Instant::now();
    let output = Command::new("timeout")
        .args(["900", "bash", "-c", &script])
        .current_dir(dir.path())
        .env("PATH", path)
        .output()
        .expect("run the walkthrough");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the walkthrough failed:\n{stdout}\n{stderr}");
    eprintln!("the Go walkthrough took {:.1?}", started.elapsed());
    assert!(stdout.contains("hello.hello.example.com/first created"), "{stdout}");
    let table = stdout.rsplit("NAME").next().unwrap_or_default();
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("first") && l.contains("Hello from Go")),
        "kubectl get hellos:\n{stdout}"
    );
}
