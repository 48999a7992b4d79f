//! `wasm-apiserver plugin check FILE`: prints what a plugin serves and fails with a precise message when the file
//! breaks the contract.

use std::process::Command;
use std::time::Duration;

use e2e::{server_binary, target_dir, wait_until, Server, FLUNDERS_V1BETA1};

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
    for hook in [
        "example: matches its schema (structure and CEL rules)",
        "example: prepare-for-create and validate ok",
        "example: prepare-for-update and validate-update ok",
        "example: validate-status-update ok",
        "example: get-attrs ok",
        "example: table row ok",
    ] {
        assert_eq!(
            stdout.matches(hook).count(),
            2,
            "{hook:?} once per flunder version:\n{stdout}"
        );
    }
    assert!(
        stdout.contains("status-strategy, scaler, create-pipeline\n"),
        "{stdout}"
    );
    assert!(stdout.contains("  subresource status\n"), "{stdout}");
    assert!(
        stdout.contains(
            "  subresource scale: replicas .spec.replicas (observed .status.replicas), selector .status.selector\n"
        ),
        "{stdout}"
    );
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

/// `plugin check` on a component that breaks the contract: it fails with one line on stderr, and nothing on stdout.
fn check_fails(plugin: &str) -> String {
    let (ok, stdout, stderr) = check(&target_dir().join(format!("plugins/{plugin}.wasm")));
    assert!(!ok, "check of {plugin} succeeded: {stdout}\n{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.starts_with("error: loading"), "{stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "errors are one clear line: {stderr}"
    );
    stderr
}

#[test]
fn a_component_without_scheme_is_refused_naming_the_missing_interface() {
    let stderr = check_fails("noscheme");
    assert!(
        stderr.contains("does not export wasm-apiserver:plugin/scheme@0.1.1"),
        "{stderr}"
    );
}

#[test]
fn a_component_with_a_mistyped_export_is_refused_naming_the_interface() {
    let stderr = check_fails("mistyped");
    // plugins/mistyped exports `scheme` as the contract says, but `lister.selectable-fields` returns `u32`.
    assert!(
        stderr.contains("export wasm-apiserver:plugin/lister@0.1.1 does not match the contract"),
        "{stderr}"
    );
    assert!(stderr.contains("u32"), "the message shows the offending type: {stderr}");
    assert!(
        !stderr.contains("scheme.info"),
        "the message must not blame a call of the correct export: {stderr}"
    );
}

#[test]
fn the_server_serves_the_good_plugins_and_reports_the_broken_ones() {
    let server = Server::start(&["wardle", "noscheme", "mistyped"]);
    let mut readyz = String::new();
    let reported = wait_until(Duration::from_secs(30), || {
        readyz = server.http().get("/readyz?verbose").text;
        readyz.contains("[-]plugin/noscheme.wasm failed to load")
            && readyz.contains("[-]plugin/mistyped.wasm failed to load")
    });
    assert!(reported, "{readyz}");
    // Each served plugin with the content hash of its component.
    let wardle = std::fs::read(target_dir().join("plugins").join("wardle.wasm")).unwrap();
    let hash = oci::sha256_digest(&wardle);
    let served = format!("[+]plugins ok (1 served: wardle ({}))", &hash[..19]);
    assert!(readyz.contains(&served), "{served} not in {readyz}");
    let line = |file: &str| {
        readyz
            .lines()
            .find(|l| l.starts_with(&format!("[-]plugin/{file} failed to load")))
            .unwrap_or_default()
            .to_owned()
    };
    let noscheme = line("noscheme.wasm");
    assert!(noscheme.contains("wasm-apiserver:plugin/scheme@0.1.1"), "{noscheme}");
    let mistyped = line("mistyped.wasm");
    assert!(
        mistyped.contains("export wasm-apiserver:plugin/lister@0.1.1 does not match the contract"),
        "{mistyped}"
    );
    server.http().get(FLUNDERS_V1BETA1).expect(200);
    // Nothing of the broken plugins is served: the mistyped one's group was never registered.
    server
        .http()
        .get("/apis/mistyped.example.com/v1/namespaces/default/widgets")
        .expect(404);
}

#[test]
fn a_crd_file_is_checked_and_an_example_breaking_its_schema_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let crd = |example: &str| {
        format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {{name: gadgets.shop.example.com}}
spec:
  group: shop.example.com
  scope: Namespaced
  names: {{plural: gadgets, kind: Gadget}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        example: {example}
        properties:
          spec:
            type: object
            x-kubernetes-validations: [{{rule: 'self.size <= 10', message: too big}}]
            properties: {{size: {{type: integer, minimum: 0}}}}
"
        )
    };
    let good = dir.path().join("good.yaml");
    std::fs::write(&good, crd("{spec: {size: 3}}")).expect("write");
    let (ok, stdout, stderr) = check(&good);
    assert!(ok, "{stdout}{stderr}");
    assert!(stdout.contains("example: matches its schema"), "{stdout}");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, crd("{spec: {size: 11}}")).expect("write");
    let (ok, stdout, stderr) = check(&bad);
    assert!(!ok, "{stdout}");
    let all = format!("{stdout}{stderr}");
    assert!(
        all.contains("does not match its schema") && all.contains("too big"),
        "{all}"
    );
}

/// `plugin check --data-dir D` compiles the component into the compile cache of a server started with
/// `--data-dir D` (a second check loads it from there), and that server serves it without compiling it again.
#[test]
fn a_check_compiles_into_the_servers_cache_so_the_server_does_not_compile_again() {
    let data = tempfile::tempdir().expect("a data directory");
    let wasm = target_dir().join("plugins/widgets-c.wasm");
    let run = || {
        let out = Command::new(server_binary())
            .args(["plugin", "check", "--data-dir"])
            .arg(data.path())
            .arg(&wasm)
            .output()
            .expect("run plugin check");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let cache = data.path().join("plugin-cache");
    let first = run();
    assert!(
        first.contains(&format!("compiled: into the compile cache {}", cache.display())),
        "{first}"
    );
    let second = run();
    assert!(
        second.contains(&format!("compiled: loaded from the compile cache {}", cache.display())),
        "{second}"
    );

    let cache_arg = cache.display().to_string();
    let server = Server::start_with_args(&["widgets-c"], &["--plugin-cache-dir", &cache_arg]);
    server
        .http()
        .get("/apis/widgets.example.com/v1/namespaces/default/widgets")
        .expect(200);
    let metrics = server.http().get("/metrics").text;
    let compiled = metrics
        .lines()
        .find(|l| l.starts_with("wasm_apiserver_plugin_components_compiled_total "))
        .unwrap_or_else(|| panic!("no compile counter in:\n{metrics}"));
    assert_eq!(
        compiled, "wasm_apiserver_plugin_components_compiled_total 0",
        "the server compiled it again"
    );
}
