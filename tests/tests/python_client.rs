//! The Python `kubernetes` client's dynamic client (tests/python-client): CRUD, label and field selectors, watch and
//! server-side apply against the real binary serving the wardle plugin. The package (`kubernetes` on PyPI, pinned in
//! scripts/test.sh) must be installed for the Python the tests find: `$PYTHON`, else `python3`.

use std::process::Command;

use e2e::Server;

/// Runs one unittest of tests/python-client against a server of its own.
fn run_python_test(name: &str) {
    let server = Server::start(&["wardle"]);
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("python-client");
    let output = Command::new(&python)
        .args([
            "-m",
            "unittest",
            "-v",
            &format!("test_dynamic_client.DynamicClientTest.{name}"),
        ])
        .current_dir(&dir)
        .env("WASM_APISERVER_KUBECONFIG", server.kubeconfig_path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e} (the Python client suite needs python3 with kubernetes)"));
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !log.contains("No module named 'kubernetes'"),
        "the Python kubernetes client is not installed for {python}: run scripts/test.sh, or pip install kubernetes\n{log}"
    );
    assert!(output.status.success(), "Python test {name} failed:\n{log}");
    assert!(
        log.contains("Ran 1 test") && !log.contains("skipped"),
        "Python test {name} did not run:\n{log}"
    );
}

#[test]
fn python_dynamic_client_crud() {
    run_python_test("test_crud");
}

#[test]
fn python_dynamic_client_selectors() {
    run_python_test("test_label_and_field_selectors");
}

#[test]
fn python_dynamic_client_watch() {
    run_python_test("test_watch_sees_added_modified_deleted");
}

#[test]
fn python_dynamic_client_server_side_apply() {
    run_python_test("test_server_side_apply_with_a_conflict");
}
