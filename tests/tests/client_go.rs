//! The client-go suite (`tests/client-go`, a Go module on `k8s.io/client-go` 0.37): a dynamic informer with a
//! resync, a finalizer-driven delete, `/status` updates and server-side apply, driven by the real client-go against
//! the real binary serving the wardle plugin.
//!
//! The Go tests are compiled once per run into `<target>/client-go/client-go.test` (`go test -c`; Go's build cache
//! makes an unchanged rebuild take a second or two, the first build several minutes). Each Go test runs as its own
//! Rust test on a server of its own, reading the server's kubeconfig from `WASM_APISERVER_KUBECONFIG`. Go comes from
//! `$GO`, else `go` on `PATH`; the modules from the Go module proxy (go.sum is complete).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use std::time::Instant;

use e2e::{target_dir, Server};

/// The Go tests of the suite. `every_go_test_is_run` keeps this list and the Go package in step.
const GO_TESTS: &[&str] = &[
    "TestInformerSeesAddUpdateDeleteAndResync",
    "TestFinalizerHoldsDeleteUntilControllerReleasesIt",
    "TestStatusAndSpecUpdatesLeaveEachOtherAlone",
    "TestServerSideApply",
    "TestBuiltinTypesInProtobuf",
    "TestLeaderElectionOnALease",
    "TestEventRecorderWritesEvents",
];

/// client-go's feature gate turning the informers' streaming list off (client-go reads `KUBE_FEATURE_<gate>`).
const WATCH_LIST_OFF: (&str, &str) = ("KUBE_FEATURE_WatchListClient", "false");

/// How long one Go test may run before the Go test binary fails it (and prints every goroutine).
const GO_TEST_TIMEOUT: &str = "5m";

/// client-go's informers start with a streaming list (a watch with `sendInitialEvents=true`, feature
/// `WatchListClient`, on by default since 1.35).
#[test]
fn informer_sees_add_update_delete_and_resync() {
    run_go_test("TestInformerSeesAddUpdateDeleteAndResync", &[]);
}

/// The same with the informer's classic start: a paginated list, then a watch from its resourceVersion.
#[test]
fn informer_sees_add_update_delete_and_resync_after_a_list() {
    run_go_test("TestInformerSeesAddUpdateDeleteAndResync", &[WATCH_LIST_OFF]);
}

#[test]
fn finalizer_holds_delete_until_controller_releases_it() {
    run_go_test("TestFinalizerHoldsDeleteUntilControllerReleasesIt", &[]);
}

#[test]
fn status_and_spec_updates_leave_each_other_alone() {
    run_go_test("TestStatusAndSpecUpdatesLeaveEachOtherAlone", &[]);
}

#[test]
fn server_side_apply() {
    run_go_test("TestServerSideApply", &[]);
}

/// The built-in types written by client-go's typed clients, in protobuf.
#[test]
fn builtin_types_in_protobuf() {
    run_go_test("TestBuiltinTypesInProtobuf", &[]);
}

/// client-go's leader election on a Lease, as controller-runtime's managers run it.
#[test]
fn leader_election_on_a_lease() {
    run_go_test("TestLeaderElectionOnALease", &[]);
}

/// client-go's event recorder, as controllers record events.
#[test]
fn event_recorder_writes_events() {
    run_go_test("TestEventRecorderWritesEvents", &[]);
}

#[test]
fn every_go_test_is_run() {
    let output = Command::new(test_binary())
        .args(["-test.list", "."])
        .output()
        .expect("run the client-go test binary");
    assert!(output.status.success(), "-test.list failed:\n{}", text(&output));
    let mut listed: Vec<&str> = std::str::from_utf8(&output.stdout)
        .expect("UTF-8 test names")
        .lines()
        .filter(|l| l.starts_with("Test"))
        .collect();
    listed.sort_unstable();
    let mut known = GO_TESTS.to_vec();
    known.sort_unstable();
    assert_eq!(
        listed, known,
        "the Go tests in tests/client-go and GO_TESTS in client_go.rs differ"
    );
}

/// Starts a server with the wardle plugin and runs one Go test against it with extra environment variables, failing
/// with the Go output.
fn run_go_test(name: &str, env: &[(&str, &str)]) {
    let binary = test_binary();
    let server = Server::start(&["wardle"]);
    let started = Instant::now();
    let output = Command::new(binary)
        .args(["-test.v", "-test.count=1", "-test.timeout", GO_TEST_TIMEOUT])
        .arg(format!("-test.run=^{name}$"))
        .env("WASM_APISERVER_KUBECONFIG", server.kubeconfig_path())
        .envs(env.iter().copied())
        .current_dir(module_dir())
        .output()
        .expect("run the client-go test binary");
    let log = text(&output);
    assert!(
        output.status.success(),
        "client-go test {name} failed ({}) after {:.1?}; its output:\n{log}",
        output.status,
        started.elapsed()
    );
    // A name that matched nothing passes with a warning: make it fail.
    assert!(
        log.contains(&format!("--- PASS: {name} ")) || log.contains(&format!("--- SKIP: {name} ")),
        "client-go test {name} did not run; the output:\n{log}"
    );
    eprintln!("{log}");
}

/// The Go module of the suite.
fn module_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("client-go")
}

/// The suite's test binary, built once per process with `go test -c`. It is built to a file of this process's own,
/// then renamed into place, so concurrent runs never execute a half-written binary.
fn test_binary() -> &'static Path {
    static BINARY: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BINARY.get_or_init(|| {
        let go = std::env::var_os("GO").map_or_else(|| PathBuf::from("go"), PathBuf::from);
        let dir = target_dir().join("client-go");
        std::fs::create_dir_all(&dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        let binary = dir.join("client-go.test");
        let partial = dir.join(format!("client-go.test.{}.tmp", std::process::id()));
        let started = Instant::now();
        let output = Command::new(&go)
            .args(["test", "-c", "-o"])
            .arg(&partial)
            .arg("./")
            .current_dir(module_dir())
            .output()
            .map_err(|e| {
                format!(
                    "cannot run {} ({e}): the client-go suite needs Go 1.26 (https://go.dev/dl/) on PATH, or GO set \
                     to the go command",
                    go.display()
                )
            })?;
        if !output.status.success() {
            let _ = std::fs::remove_file(&partial);
            return Err(format!(
                "go test -c in {} failed:\n{}",
                module_dir().display(),
                text(&output)
            ));
        }
        std::fs::rename(&partial, &binary)
            .map_err(|e| format!("rename {} to {}: {e}", partial.display(), binary.display()))?;
        eprintln!("built {} in {:.1?}", binary.display(), started.elapsed());
        Ok(binary)
    });
    match built {
        Ok(binary) => binary,
        Err(e) => panic!("{e}"),
    }
}

/// A command's standard output and standard error, as text.
fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
