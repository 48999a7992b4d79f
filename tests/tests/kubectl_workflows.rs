//! kubectl workflows not covered elsewhere: `edit` through an editor, and `get -w -l`.

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
