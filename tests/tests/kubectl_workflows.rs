//! kubectl workflows not covered elsewhere: `edit` through an editor, `get -w -l`, and the client-side `apply` of
//! changes to built-in types (a strategic merge patch).

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use e2e::{str_at, Server};
use serde_json::Value;

const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

fn manifest(name: &str, labels: &str, replicas: u32) -> String {
    format!(
        "apiVersion: wardle.example.com/v1beta1\nkind: Flunder\nmetadata:\n  name: {name}\n  labels: {labels}\nspec:\n  replicas: {replicas}\n"
    )
}

fn kubectl_edit_writes_what_the_editor_saved(plugin: &str) {
    let server = Server::start(&[plugin]);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &manifest("e", "{app: e}", 1));
    // The editor: a script changing the replicas in the file kubectl gives it.
    let editor = server.root().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nsed -i 's/replicas: 1$/replicas: 7/' \"$1\"\n").expect("write the editor");
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).expect("chmod the editor");
    let editor = editor.display().to_string();
    let output = server.kubectl_with_env(&["edit", "flunder", "e"], &[("KUBE_EDITOR", &editor)]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && stdout.contains("flunder.wardle.example.com/e edited"),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let obj = server.kubectl_json(&["get", "flunder", "e", "-o", "json", "--show-managed-fields"]);
    assert_eq!(obj["spec"]["replicas"], 7, "{obj:#}");
    let editors: Vec<&str> = obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["fieldsV1"]["f:spec"].get("f:replicas").is_some())
        .map(|e| str_at(e, "/manager"))
        .collect();
    assert_eq!(editors, ["kubectl-edit"], "{obj:#}");
}

fn kubectl_get_watch_with_a_label_selector_sees_only_matching_objects(plugin: &str) {
    let server = Server::start(&[plugin]);
    let mut watch = server.kubectl_watch(&[
        "get",
        "flunders",
        "-w",
        "-l",
        "team=a",
        "--output-watch-events",
        "-o",
        "json",
    ]);
    for (name, team) in [("a1", "a"), ("b1", "b"), ("a2", "a")] {
        server.kubectl_stdin_ok(&["create", "-f", "-"], &manifest(name, &format!("{{team: {team}}}"), 1));
    }
    // A change of a matching object, then it leaves the selection (kube sends DELETED), then b1 joins (ADDED).
    server.kubectl_ok(&[
        "patch",
        "flunder",
        "a1",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":2}}"#,
    ]);
    server.kubectl_ok(&["label", "flunder", "a2", "team=b", "--overwrite"]);
    server.kubectl_ok(&["label", "flunder", "b1", "team=a", "--overwrite"]);
    let mut seen: Vec<(String, String)> = Vec::new();
    while seen.len() < 5 {
        let Some(event) = watch.next(EVENT_TIMEOUT) else {
            panic!("no more events after {seen:?}: {}", watch.describe());
        };
        let event: &Value = &event;
        seen.push((
            str_at(event, "/type").to_owned(),
            str_at(event, "/object/metadata/name").to_owned(),
        ));
    }
    let expected: Vec<(String, String)> = [
        ("ADDED", "a1"),
        ("ADDED", "a2"),
        ("MODIFIED", "a1"),
        ("DELETED", "a2"),
        ("ADDED", "b1"),
    ]
    .iter()
    .map(|(t, n)| ((*t).to_owned(), (*n).to_owned()))
    .collect();
    assert_eq!(seen, expected);
}

e2e::on_both_wardles!(
    kubectl_edit_writes_what_the_editor_saved,
    kubectl_get_watch_with_a_label_selector_sees_only_matching_objects,
);

const ROLE: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: readers, namespace: default, labels: {team: a}}
rules: [{apiGroups: [wardle.example.com], resources: [flunders], verbs: [VERBS]}]
";

const WEBHOOKS: &str = "apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: applied}
webhooks:
- name: a.example.com
  clientConfig: {url: 'https://127.0.0.1:1/a'}
  rules: [{apiGroups: [x.example.com], apiVersions: ['*'], resources: [things], operations: [CREATE]}]
  failurePolicy: POLICY
  sideEffects: None
  admissionReviewVersions: [v1]
- name: b.example.com
  clientConfig: {url: 'https://127.0.0.1:1/b'}
  rules: [{apiGroups: [x.example.com], apiVersions: ['*'], resources: [things], operations: [CREATE]}]
  sideEffects: None
  admissionReviewVersions: [v1]
";

/// kubectl applies a change to a built-in type with a strategic merge patch: lists without a merge key are replaced
/// (a Role's rules), lists with one are merged by it (webhooks by name), the rest as a merge patch.
#[test]
fn kubectl_apply_changes_built_in_types_with_strategic_merge_patches() {
    let server = Server::start(&["wardle"]);
    server.kubectl_stdin_ok(&["apply", "-f", "-"], &ROLE.replace("VERBS", "get"));
    let out = server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &ROLE.replace("VERBS", "get, list").replace("team: a", "team: b"),
    );
    assert!(
        out.contains("role.rbac.authorization.k8s.io/readers configured"),
        "{out}"
    );
    let role = server.kubectl_json(&["get", "role", "readers", "-n", "default", "-o", "json"]);
    assert_eq!(role["rules"][0]["verbs"], serde_json::json!(["get", "list"]));
    assert_eq!(role["metadata"]["labels"]["team"], "b");

    server.kubectl_stdin_ok(&["apply", "-f", "-"], &WEBHOOKS.replace("POLICY", "Fail"));
    // Another writer's change to webhook b stays: the patch names webhook a's fields only.
    server.kubectl_ok(&[
        "patch",
        "validatingwebhookconfiguration",
        "applied",
        "--type=json",
        "-p",
        r#"[{"op": "replace", "path": "/webhooks/1/timeoutSeconds", "value": 7}]"#,
    ]);
    let out = server.kubectl_stdin_ok(&["apply", "-f", "-"], &WEBHOOKS.replace("POLICY", "Ignore"));
    assert!(out.contains("configured"), "{out}");
    let config = server.kubectl_json(&["get", "validatingwebhookconfiguration", "applied", "-o", "json"]);
    assert_eq!(config["webhooks"][0]["failurePolicy"], "Ignore");
    assert_eq!(config["webhooks"][0]["clientConfig"]["url"], "https://127.0.0.1:1/a");
    assert_eq!(config["webhooks"][1]["name"], "b.example.com");
    assert_eq!(config["webhooks"][1]["timeoutSeconds"], 7);
    // A plugin's type is not patched strategically (kube takes them for its compiled-in types only).
    let reply = server.http().patch(
        "/apis/wardle.example.com/v1beta1/namespaces/default/flunders/none",
        "application/strategic-merge-patch+json",
        &serde_json::json!({"spec": {}}),
    );
    reply.assert_status(415, "UnsupportedMediaType");
}

/// ConfigMaps, built in as kube serves them: `kubectl create configmap` from literals and from a file of bytes
/// (`binaryData`), a table with their entry counts, a client-side apply that merges `data`, an `immutable` one that
/// keeps its data, and kube's message for a bad key.
#[test]
fn kubectl_config_maps_from_literals_files_and_immutable() {
    let server = Server::start(&["wardle"]);
    let out = server.kubectl_ok(&[
        "create",
        "configmap",
        "app",
        "--from-literal=a=1",
        "--from-literal=b.conf=x",
    ]);
    assert!(out.contains("configmap/app created"), "{out}");
    let dir = tempfile::tempdir().unwrap();
    let blob = dir.path().join("blob");
    std::fs::write(&blob, [0xff, 0x00, 0x01]).unwrap();
    server.kubectl_ok(&[
        "create",
        "configmap",
        "bin",
        &format!("--from-file=blob={}", blob.display()),
    ]);
    let bin = server.kubectl_json(&["get", "configmap", "bin", "-o", "json"]);
    assert_eq!(bin["binaryData"]["blob"], "/wAB", "{bin}");
    let table = server.kubectl_ok(&["get", "cm"]);
    let row = |name: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .unwrap_or_else(|| panic!("no {name} in\n{table}"))
    };
    assert_eq!(row("NAME")[..2], ["NAME", "DATA"], "{table}");
    assert_eq!(row("app")[1], "2", "{table}");
    assert_eq!(row("bin")[1], "1", "{table}");

    // A client-side apply merges `data` by key.
    let applied = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {a: \"2\", c: \"3\"}\n";
    server.kubectl_stdin_ok(&["apply", "-f", "-"], applied);
    let app = server.kubectl_json(&["get", "configmap", "app", "-o", "json"]);
    assert_eq!(
        app["data"],
        serde_json::json!({"a": "2", "b.conf": "x", "c": "3"}),
        "{app}"
    );

    // Immutable: its data stays, and so does its immutability; its labels may change.
    let frozen = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: frozen}\nimmutable: true\ndata: {a: \"1\"}\n";
    server.kubectl_stdin_ok(&["apply", "-f", "-"], frozen);
    let err = server.kubectl_err(&["patch", "configmap", "frozen", "-p", r#"{"data": {"a": "2"}}"#]);
    assert!(
        err.contains("data: Forbidden: field is immutable when `immutable` is set"),
        "{err}"
    );
    let err = server.kubectl_err(&["patch", "configmap", "frozen", "-p", r#"{"immutable": false}"#]);
    assert!(
        err.contains("immutable: Forbidden: field is immutable when `immutable` is set"),
        "{err}"
    );
    server.kubectl_ok(&["label", "configmap", "frozen", "team=a"]);

    // A key that is no config key: kube's message.
    let reply = server.http().post_json(
        "/api/v1/namespaces/default/configmaps",
        &serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "bad"}, "data": {"a b": "x"}}),
    );
    let status = reply.assert_status(422, "Invalid");
    assert_eq!(
        status["message"],
        "ConfigMap \"bad\" is invalid: data[a b]: Invalid value: \"a b\": a valid config key must consist of \
         alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for \
         validation is '[-._a-zA-Z0-9]+')"
    );
}

/// Leases, built in: kubectl shows their holders, the host's own leader election lease among them, and refuses a
/// lease of no duration with kube's message.
#[test]
fn kubectl_leases_show_their_holders() {
    let server = Server::start(&["wardle"]);
    let lease = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: mine}\n\
                 spec: {holderIdentity: me_1, leaseDurationSeconds: 15}\n";
    server.kubectl_stdin_ok(&["apply", "-f", "-"], lease);
    let table = server.kubectl_ok(&["get", "leases"]);
    let header: Vec<&str> = table.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(header, ["NAME", "HOLDER", "AGE"], "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("mine") && l.contains("me_1")),
        "{table}"
    );
    let host = server.kubectl_json(&[
        "get",
        "lease",
        "wasm-apiserver-controllers",
        "-n",
        "kube-system",
        "-o",
        "json",
    ]);
    assert!(str_at(&host, "/spec/holderIdentity").len() > 1, "{host}");
    let err = server.kubectl_stdin_err(&["apply", "-f", "-"], &lease.replace("15", "0"));
    assert!(
        err.contains("spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"),
        "{err}"
    );
    // A PUT creates a missing lease, its times kept to the microsecond (as Go's clients read them).
    let put = server
        .http()
        .put_json(
            "/apis/coordination.k8s.io/v1/namespaces/default/leases/put",
            &serde_json::json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "put"},
                "spec": {"holderIdentity": "x", "renewTime": "2026-12-07T10:00:00Z"}}),
        )
        .expect(201)
        .clone();
    assert_eq!(put["spec"]["renewTime"], "2026-12-07T10:00:00.000000Z", "{put}");
    assert_eq!(
        str_at(&host, "/spec/renewTime").len(),
        "2026-12-07T10:00:00.000000Z".len(),
        "{host}"
    );
}
