//! `wasm-apiserver plugin check FILE`: prints what a plugin serves and fails with a precise message when the file
//! breaks the contract.

use std::process::Command;

use e2e::{server_binary, target_dir};

fn check(path: &std::path::Path) -> (bool, String, String) {
    let out = Command::new(server_binary())
        .args(["plugin", "check"])
        .arg(path)
        .output()
        .expect("run plugin check");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_good_plugin_reports_its_resources_verbs_and_example_round_trips() {
    let (ok, stdout, stderr) = check(&target_dir().join("plugins/wardle.wasm"));
    assert!(ok, "check failed: {stdout}\n{stderr}");
    assert!(stdout.contains("group wardle.example.com"), "{stdout}");
    assert!(stdout.contains("resource flunders (kind Flunder, namespaced), verbs: create,delete,deletecollection,get,list,patch,update,watch"), "{stdout}");
    assert!(stdout.contains("resource fischers (kind Fischer, cluster)"), "{stdout}");
    assert!(stdout.contains("version v1alpha1 (storage)"), "{stdout}");
    assert!(stdout.contains("example: round trip through v1alpha1 ok"), "{stdout}");
}

#[test]
fn a_partial_plugin_reports_only_its_verbs() {
    let (ok, stdout, _) = check(&target_dir().join("plugins/partial.wasm"));
    assert!(ok);
    assert!(
        stdout.contains("exports: scheme, create-strategy, lister\n"),
        "{stdout}"
    );
    assert!(stdout.contains("verbs: create,get,list,watch\n"), "{stdout}");
}

#[test]
fn files_that_are_not_plugins_fail_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let garbage = dir.path().join("garbage.wasm");
    std::fs::write(&garbage, b"definitely not wasm").expect("write");
    let (ok, _, stderr) = check(&garbage);
    assert!(!ok);
    assert!(stderr.contains("magic header not detected"), "{stderr}");

    // A core module is WebAssembly, but not a component.
    let core = dir.path().join("core.wasm");
    std::fs::write(&core, b"\0asm\x01\0\0\0").expect("write");
    let (ok, _, stderr) = check(&core);
    assert!(!ok);
    assert!(stderr.starts_with("error: loading"), "{stderr}");
    assert!(
        !stderr.contains("Stack backtrace"),
        "errors are one clear line: {stderr}"
    );

    let (ok, _, stderr) = check(&dir.path().join("missing.wasm"));
    assert!(!ok);
    assert!(stderr.contains("No such file"), "{stderr}");
}
