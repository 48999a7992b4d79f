//! The `tasks` plugin, written in JavaScript (componentize-js, `plugins/tasks`, with the helper module in
//! `guest-sdk/js`), served end to end: CRUD over HTTP and kubectl, defaulting, validation causes, the rule that a done
//! task cannot be reopened, a deletion refused with 403, table columns, short name and category, field selectors.
//!
//! `target/plugins/tasks.wasm` is built by `scripts/build-plugins.sh` (which runs `plugins/tasks/build.sh`). A
//! componentize-js component is ~12 MB and its first compilation takes seconds, so each test starts one server and
//! runs several commented steps against it.

use e2e::{is_age, parse_table, str_at, Server};
use serde_json::{json, Value};

/// The collection URL of v1 tasks in the `default` namespace.
const TASKS_V1: &str = "/apis/tasks.example.com/v1/namespaces/default/tasks";

/// The URL of one task in the `default` namespace.
fn task_url(name: &str) -> String {
    format!("{TASKS_V1}/{name}")
}

/// A v1 task in the `default` namespace with the given spec.
fn task(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "tasks.example.com/v1",
        "kind": "Task",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    })
}

/// The `(field, reason)` pairs of a Status' `details.causes`, sorted.
fn causes(status: &Value) -> Vec<(String, String)> {
    let mut causes: Vec<(String, String)> = status["details"]["causes"]
        .as_array()
        .map(|causes| {
            causes
                .iter()
                .map(|c| (str_at(c, "/field").to_owned(), str_at(c, "/reason").to_owned()))
                .collect()
        })
        .unwrap_or_default();
    causes.sort();
    causes
}

/// The sorted `(field, reason)` pairs given as string slices.
fn expected_causes(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = pairs.iter().map(|(f, r)| ((*f).to_owned(), (*r).to_owned())).collect();
    pairs.sort();
    pairs
}

/// The sorted `metadata.name` of each item of a list.
fn item_names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["items"]
        .as_array()
        .map(|items| items.iter().map(|i| str_at(i, "/metadata/name").to_owned()).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// The sorted names printed by `kubectl get ... -o name` (`task.tasks.example.com/x` → `x`).
fn printed_names(output: &str) -> Vec<String> {
    let mut names: Vec<String> = output
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.rsplit('/').next().unwrap_or(line).trim().to_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn javascript_tasks_serve_crud_defaulting_validation_and_rules_over_http() {
    let server = Server::start(&["tasks"]);
    let http = server.http();

    // Create: 201; the defaulter sets priority and done, prepare-for-create trims the title.
    let created = http.post_json(TASKS_V1, &task("docs", json!({"title": "  Write the docs  "})));
    let created = created.expect(201);
    assert_eq!(str_at(created, "/spec/title"), "Write the docs", "{created:#}");
    assert_eq!(str_at(created, "/spec/priority"), "medium", "{created:#}");
    assert_eq!(created["spec"]["done"], json!(false), "{created:#}");
    assert!(created["spec"].get("assignee").is_none(), "{created:#}");
    assert!(!str_at(created, "/metadata/uid").is_empty(), "{created:#}");

    // Explicit values are kept, and get returns what create stored.
    let spec = json!({"title": "Ship", "priority": "high", "done": false, "assignee": "alice"});
    http.post_json(TASKS_V1, &task("ship", spec.clone())).expect(201);
    let got = http.get(&task_url("ship"));
    assert_eq!(got.expect(200)["spec"], spec, "{}", got.text);

    // Validation: the schema first (types, enum), every problem a cause naming its field, and nothing is stored;
    // the plugin's own rules are not reached (as a CRD's webhooks are not).
    let bad = http.post_json(
        TASKS_V1,
        &task(
            "bad",
            json!({"title": "", "priority": "urgent", "done": "yes", "assignee": 7}),
        ),
    );
    let status = bad.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        expected_causes(&[
            ("spec.priority", "FieldValueNotSupported"),
            ("spec.done", "FieldValueTypeInvalid"),
            ("spec.assignee", "FieldValueTypeInvalid"),
        ]),
        "{status:#}"
    );
    assert_eq!(status["details"]["name"], "bad", "{status:#}");
    let message = str_at(status, "/message");
    assert!(
        message.contains(r#"spec.priority: Unsupported value: "urgent": supported values: "low", "medium", "high""#),
        "{message}"
    );
    http.get(&task_url("bad")).assert_status(404, "NotFound");

    // A missing spec, and a title of spaces only (trimmed before validation), lack the title.
    let no_spec = json!({"apiVersion": "tasks.example.com/v1", "kind": "Task", "metadata": {"name": "nospec"}});
    let status = http.post_json(TASKS_V1, &no_spec).assert_status(422, "Invalid").clone();
    assert_eq!(
        causes(&status),
        expected_causes(&[("spec.title", "FieldValueRequired")]),
        "{status:#}"
    );
    let blank = http.post_json(TASKS_V1, &task("blank", json!({"title": "   "})));
    let status = blank.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        expected_causes(&[("spec.title", "FieldValueRequired")]),
        "{status:#}"
    );

    // Title length: 201 characters are too long, 200 are fine (counted in characters, not bytes).
    let long = http.post_json(TASKS_V1, &task("long", json!({"title": "x".repeat(201)})));
    let status = long.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        expected_causes(&[("spec.title", "FieldValueTooLong")]),
        "{status:#}"
    );
    // The schema's maxLength, in kube's words (which count characters but say bytes).
    assert!(
        str_at(status, "/message").contains("may not be more than 200 bytes"),
        "{status:#}"
    );
    http.post_json(TASKS_V1, &task("limit", json!({"title": "é".repeat(200)})))
        .expect(201);

    // Update: marking a task done is allowed; a PUT without resourceVersion is accepted (unconditional update).
    let mut done = got.json.clone();
    done["spec"]["done"] = json!(true);
    let updated = http.put_json(&task_url("ship"), &done);
    assert_eq!(updated.expect(200)["spec"]["done"], json!(true), "{}", updated.text);
    let unconditional = task("docs", json!({"title": "Write the docs", "assignee": "bob"}));
    let replaced = http.put_json(&task_url("docs"), &unconditional);
    let replaced = replaced.expect(200);
    assert_eq!(str_at(replaced, "/spec/assignee"), "bob", "{replaced:#}");
    assert_eq!(
        str_at(replaced, "/spec/priority"),
        "medium",
        "defaulted on update: {replaced:#}"
    );

    // ...but a done task cannot be reopened, by PUT or by patch; it stays done.
    let mut reopened = updated.json.clone();
    reopened["spec"]["done"] = json!(false);
    let status = http
        .put_json(&task_url("ship"), &reopened)
        .assert_status(422, "Invalid")
        .clone();
    assert_eq!(
        causes(&status),
        expected_causes(&[("spec.done", "FieldValueForbidden")]),
        "{status:#}"
    );
    assert!(
        str_at(&status, "/message").contains("a done task cannot be reopened"),
        "{status:#}"
    );
    let patched = http.patch(
        &task_url("ship"),
        "application/merge-patch+json",
        &json!({"spec": {"done": false}}),
    );
    patched.assert_status(422, "Invalid");
    let still = http.get(&task_url("ship"));
    assert_eq!(still.expect(200)["spec"]["done"], json!(true), "{}", still.text);
    // Other changes to a done task are fine, and so is validation on patch.
    let patched = http.patch(
        &task_url("ship"),
        "application/merge-patch+json",
        &json!({"spec": {"assignee": "carol"}}),
    );
    assert_eq!(
        str_at(patched.expect(200), "/spec/assignee"),
        "carol",
        "{}",
        patched.text
    );
    let patched = http.patch(
        &task_url("ship"),
        "application/merge-patch+json",
        &json!({"spec": {"priority": "someday"}}),
    );
    let status = patched.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        expected_causes(&[("spec.priority", "FieldValueNotSupported")]),
        "{status:#}"
    );

    // Field selectors on the plugin's selectable fields; other fields are a bad request.
    let high = http.get(&format!("{TASKS_V1}?fieldSelector=spec.priority%3Dhigh"));
    assert_eq!(item_names(high.expect(200)), ["ship"], "{}", high.text);
    let open = http.get(&format!("{TASKS_V1}?fieldSelector=spec.done%3Dfalse"));
    assert_eq!(item_names(open.expect(200)), ["docs", "limit"], "{}", open.text);
    let both = http.get(&format!(
        "{TASKS_V1}?fieldSelector=spec.done%3Dtrue,spec.priority%3Dhigh"
    ));
    assert_eq!(item_names(both.expect(200)), ["ship"], "{}", both.text);
    http.get(&format!("{TASKS_V1}?fieldSelector=spec.assignee%3Dbob"))
        .assert_status(400, "BadRequest");

    // Delete: a task labelled protected=true is refused with 403 and kept; without the label it can go.
    let mut protected = task("keep", json!({"title": "Keep me"}));
    protected["metadata"]["labels"] = json!({"protected": "true"});
    http.post_json(TASKS_V1, &protected).expect(201);
    let refused = http.delete(&task_url("keep"));
    let status = refused.assert_status(403, "Forbidden");
    assert_eq!(
        str_at(status, "/message"),
        r#"tasks.tasks.example.com "keep" is forbidden: the task is protected: remove the label protected=true before deleting it"#,
        "{status:#}"
    );
    http.get(&task_url("keep")).expect(200);
    let unlabelled = http.patch(
        &task_url("keep"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"protected": null}}}),
    );
    unlabelled.expect(200);
    http.delete(&task_url("keep")).expect(200);
    http.get(&task_url("keep")).assert_status(404, "NotFound");

    // A done task can be deleted.
    http.delete(&task_url("ship")).expect(200);
    let remaining = http.get(TASKS_V1);
    assert_eq!(
        item_names(remaining.expect(200)),
        ["docs", "limit"],
        "{}",
        remaining.text
    );
}

#[test]
fn javascript_tasks_work_with_kubectl() {
    let server = Server::start(&["tasks"]);
    let manifest = |name: &str, priority: &str, extra: &str| {
        format!(
            "\
apiVersion: tasks.example.com/v1
kind: Task
metadata:
  name: {name}
spec:
  title: Task {name}
  priority: {priority}
{extra}"
        )
    };

    // Apply creates, then configures; create through a file without priority gets the default.
    let first = server.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest("alpha", "high", "  assignee: alice\n"));
    assert!(first.contains("task.tasks.example.com/alpha created"), "{first}");
    let second = server.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest("alpha", "high", "  assignee: bob\n"));
    assert!(second.contains("task.tasks.example.com/alpha configured"), "{second}");
    server.kubectl_stdin_ok(&["create", "-f", "-"], &manifest("beta", "low", ""));
    let created = server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        "apiVersion: tasks.example.com/v1\nkind: Task\nmetadata:\n  name: gamma\nspec:\n  title: Task gamma\n",
    );
    assert!(created.contains("task.tasks.example.com/gamma created"), "{created}");
    let gamma = server.kubectl_json(&["get", "task", "gamma", "-o", "json"]);
    assert_eq!(
        (str_at(&gamma, "/spec/priority"), gamma["spec"]["done"].clone()),
        ("medium", json!(false)),
        "{gamma:#}"
    );

    // The plugin's table columns, with an age in the Age column; the short name and the `all` category work.
    let table = server.kubectl_ok(&["get", "tasks"]);
    let header: Vec<&str> = table.lines().next().unwrap_or("").split_whitespace().collect();
    assert_eq!(
        header,
        ["NAME", "TITLE", "PRIORITY", "DONE", "ASSIGNEE", "AGE"],
        "{table}"
    );
    let rows = parse_table(&table);
    let alpha = rows
        .iter()
        .find(|r| r["NAME"] == "alpha")
        .unwrap_or_else(|| panic!("no alpha row:\n{table}"));
    assert_eq!(
        (
            alpha["TITLE"].as_str(),
            alpha["PRIORITY"].as_str(),
            alpha["DONE"].as_str(),
            alpha["ASSIGNEE"].as_str()
        ),
        ("Task alpha", "high", "false", "bob"),
        "{table}"
    );
    assert!(is_age(&alpha["AGE"]), "AGE is an age: {table}");
    let short = parse_table(&server.kubectl_ok(&["get", "tk"]));
    let names: Vec<&str> = short.iter().map(|r| r["NAME"].as_str()).collect();
    assert_eq!(names, ["alpha", "beta", "gamma"], "{short:?}");
    let all = server.kubectl_ok(&["get", "all", "-o", "name"]);
    assert_eq!(printed_names(&all), ["alpha", "beta", "gamma"], "{all}");
    let resources = parse_table(&server.kubectl_ok(&["api-resources", "--api-group", "tasks.example.com"]));
    assert_eq!(resources.len(), 1, "{resources:?}");
    assert_eq!(
        (
            resources[0]["NAME"].as_str(),
            resources[0]["SHORTNAMES"].as_str(),
            resources[0]["NAMESPACED"].as_str(),
            resources[0]["KIND"].as_str()
        ),
        ("tasks", "tk", "true", "Task"),
        "{resources:?}"
    );

    // Field selectors.
    let high = server.kubectl_ok(&["get", "tasks", "--field-selector", "spec.priority=high", "-o", "name"]);
    assert_eq!(printed_names(&high), ["alpha"], "{high}");
    let not_high = server.kubectl_ok(&["get", "tasks", "--field-selector", "spec.priority!=high", "-o", "name"]);
    assert_eq!(printed_names(&not_high), ["beta", "gamma"], "{not_high}");

    // Done, then the attempt to reopen is refused with the field named.
    server.kubectl_ok(&[
        "patch",
        "task",
        "beta",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"done":true}}"#,
    ]);
    let done = server.kubectl_ok(&["get", "tasks", "--field-selector", "spec.done=true", "-o", "name"]);
    assert_eq!(printed_names(&done), ["beta"], "{done}");
    let stderr = server.kubectl_err(&[
        "patch",
        "task",
        "beta",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"done":false}}"#,
    ]);
    assert!(
        stderr.contains(r#"The Task "beta" is invalid: spec.done: Forbidden: a done task cannot be reopened"#),
        "{stderr}"
    );

    // Validation errors from kubectl create name the fields.
    let stderr = server.kubectl_stdin_err(
        &["create", "-f", "-"],
        "apiVersion: tasks.example.com/v1\nkind: Task\nmetadata:\n  name: bad\nspec:\n  priority: urgent\n",
    );
    assert!(stderr.contains(r#"The Task "bad" is invalid"#), "{stderr}");
    assert!(stderr.contains("spec.title: Required value"), "{stderr}");
    assert!(
        stderr.contains(r#"spec.priority: Unsupported value: "urgent""#),
        "{stderr}"
    );

    // A protected task cannot be deleted until the label is removed.
    server.kubectl_ok(&["label", "task", "gamma", "protected=true"]);
    let stderr = server.kubectl_err(&["delete", "task", "gamma"]);
    assert!(stderr.contains("(Forbidden)"), "{stderr}");
    assert!(
        stderr.contains(r#"tasks.tasks.example.com "gamma" is forbidden: the task is protected"#),
        "{stderr}"
    );
    server.kubectl_ok(&["get", "task", "gamma"]);
    server.kubectl_ok(&["label", "task", "gamma", "protected-"]);
    let deleted = server.kubectl_ok(&["delete", "task", "gamma"]);
    assert!(
        deleted.contains(r#"task.tasks.example.com "gamma" deleted"#),
        "{deleted}"
    );
    let missing = server.kubectl_err(&["get", "task", "gamma"]);
    assert!(missing.contains("(NotFound)"), "{missing}");

    // kubectl explain reads the plugin's OpenAPI schema, descriptions included.
    let explained = server.kubectl_ok(&["explain", "tasks.spec.priority"]);
    assert!(
        explained.contains("How urgent the task is: low, medium (the default) or high."),
        "{explained}"
    );
}

#[test]
fn javascript_tasks_report_their_state_through_status() {
    let server = Server::start(&["tasks"]);
    let http = server.http();
    http.post_json(TASKS_V1, &task("build", json!({"title": "Build"})))
        .expect(201);
    let status_url = format!("{}/status", task_url("build"));
    let running = http.patch(
        &status_url,
        "application/merge-patch+json",
        &json!({"status": {"state": "Running"}, "spec": {"title": "ignored"}}),
    );
    assert_eq!(running.expect(200)["status"]["state"], "Running", "{}", running.text);
    assert_eq!(running.json["spec"]["title"], "Build", "{}", running.text);
    let refused = http.patch(
        &status_url,
        "application/merge-patch+json",
        &json!({"status": {"state": "Done", "message": 3}}),
    );
    let refused = refused.assert_status(422, "Invalid");
    assert_eq!(
        causes(refused),
        expected_causes(&[
            ("status.message", "FieldValueTypeInvalid"),
            ("status.state", "FieldValueNotSupported"),
        ])
    );
    // The task's own patch cannot change its status.
    let patched = http.patch(
        &task_url("build"),
        "application/merge-patch+json",
        &json!({"status": {"state": "Failed"}, "spec": {"priority": "high"}}),
    );
    assert_eq!(patched.expect(200)["status"]["state"], "Running", "{}", patched.text);
    assert_eq!(patched.json["spec"]["priority"], "high", "{}", patched.text);
    let state = server.kubectl_ok(&[
        "get",
        "task",
        "build",
        "--subresource=status",
        "-o",
        "jsonpath={.status.state}",
    ]);
    assert_eq!(state, "Running");
}
