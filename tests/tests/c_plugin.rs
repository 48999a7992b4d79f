//! A plugin written in C with the C SDK (plugins/widgets-c, built with Debian's clang for wasm32-wasi, cJSON,
//! wasm-tools and the WASI preview 1 adapter by scripts/build-plugins.sh), driven with kubectl: its defaulting,
//! prepare-for-create, validation on create and update (field errors with their paths, reasons and details), its
//! field selector and table columns, deletes, and the sandbox holding for C: a loop stopped at the CPU deadline, a
//! panic (a trap) and unbounded allocation answered 500 with a message naming the plugin.

use e2e::{parse_table, Server};
use serde_json::{json, Value};

const WIDGETS: &str = "/apis/widgets.example.com/v1/namespaces/default/widgets";

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "widgets.example.com/v1", "kind": "Widget",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

/// The (field, reason, message) of each cause of a Status.
fn causes(status: &Value) -> Vec<(String, String, String)> {
    let text = |c: &Value, key: &str| c[key].as_str().unwrap_or("").to_owned();
    status["details"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| (text(c, "field"), text(c, "reason"), text(c, "message")))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_c_plugin_is_served_with_its_hooks() {
    let server = Server::start(&["widgets-c"]);
    let http = server.http();

    // Created with kubectl: defaulted (size 10) and prepared (the label trimmed).
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: widgets.example.com/v1\nkind: Widget\nmetadata: {name: first, namespace: default}\nspec: {color: red, label: '  shiny  '}\n",
    );
    let first = server.kubectl_json(&["get", "widget", "first", "-o", "json"]);
    assert_eq!(
        first["spec"],
        json!({"color": "red", "size": 10, "label": "shiny"}),
        "{first:#}"
    );
    assert!(first["metadata"]["uid"].is_string(), "{first:#}");
    assert!(server.kubectl_ok(&["get", "wd"]).contains("first"));

    // Validation on create: one cause per broken field, with Kubernetes' reasons and details.
    let invalid = http.post_json(
        WIDGETS,
        &widget("bad", json!({"color": "purple", "size": 101, "label": "x".repeat(33)})),
    );
    let status = invalid.assert_status(422, "Invalid");
    assert_eq!(
        causes(status),
        [
            (
                "spec.color".to_owned(),
                "FieldValueNotSupported".to_owned(),
                r#"Unsupported value: "purple": supported values: "red", "green", "blue""#.to_owned()
            ),
            (
                "spec.size".to_owned(),
                "FieldValueInvalid".to_owned(),
                "Invalid value: 101: must be between 1 and 100".to_owned()
            ),
            (
                "spec.label".to_owned(),
                "FieldValueTooLong".to_owned(),
                "Too long: may not be more than 32 bytes".to_owned()
            ),
        ],
        "{}",
        invalid.text
    );
    assert_eq!(http.get(&format!("{WIDGETS}/bad")).status, 404, "nothing is stored");
    let missing = http.post_json(WIDGETS, &widget("blank", json!({"color": ""})));
    let status = missing.assert_status(422, "Invalid");
    assert_eq!(causes(status)[0].0, "spec.color", "{}", missing.text);
    assert_eq!(causes(status)[0].1, "FieldValueRequired", "{}", missing.text);

    // Validation on update: the color is immutable; the size may change.
    let err = server.kubectl_err(&[
        "patch",
        "widget",
        "first",
        "--type=merge",
        "-p",
        r#"{"spec":{"color":"blue"}}"#,
    ]);
    assert!(
        err.contains(r#"spec.color: Invalid value: "blue": field is immutable"#),
        "{err}"
    );
    server.kubectl_ok(&[
        "patch",
        "widget",
        "first",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":7}}"#,
    ]);
    assert_eq!(
        server.kubectl_ok(&["get", "widget", "first", "-o", "jsonpath={.spec.size}"]),
        "7"
    );

    // The field selector and the table.
    http.post_json(WIDGETS, &widget("second", json!({"color": "green", "size": 2})))
        .expect(201);
    let selected = server.kubectl_ok(&["get", "widgets", "--field-selector", "spec.color=green", "-o", "name"]);
    assert_eq!(selected.trim(), "widget.widgets.example.com/second");
    let refused = server.kubectl_err(&["get", "widgets", "--field-selector", "spec.size=2"]);
    assert!(refused.contains("(BadRequest)"), "{refused}");
    let table = server.kubectl_ok(&["get", "widgets"]);
    let rows = parse_table(&table);
    assert_eq!(rows.len(), 2, "{table}");
    let second = rows.iter().find(|r| r["NAME"] == "second").expect("a row for second");
    assert_eq!(
        (second["COLOR"].as_str(), second["SIZE"].as_str()),
        ("green", "2"),
        "{table}"
    );
    assert!(second.contains_key("AGE"), "{table}");

    // The sandbox holds for C: a panic (a trap), a loop, unbounded allocation; the plugin serves on after each.
    let panicked = http.post_json(WIDGETS, &widget("boom", json!({"color": "abort!"})));
    let status = panicked.assert_status(500, "InternalError");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("widgets-c") && message.contains("panic in validate: asked to: spec.color is abort!"),
        "{message}"
    );
    let looped = http.post_json(WIDGETS, &widget("spin", json!({"color": "loop!"})));
    let status = looped.assert_status(504, "Timeout");
    assert!(
        status["message"].as_str().unwrap_or_default().contains("widgets-c"),
        "{}",
        looped.text
    );
    let allocated = http.post_json(WIDGETS, &widget("grow", json!({"color": "allocate!"})));
    let status = allocated.assert_status(500, "InternalError");
    let message = status["message"].as_str().unwrap_or_default();
    assert!(message.contains("widgets-c") && message.contains("memory"), "{message}");
    http.post_json(WIDGETS, &widget("after", json!({"color": "blue"})))
        .expect(201);

    // Deletes.
    let deleted = server.kubectl_ok(&["delete", "widget", "second"]);
    assert!(deleted.contains(r#""second" deleted"#), "{deleted}");
    let names = server.kubectl_ok(&["get", "widgets", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        ["widget.widgets.example.com/after", "widget.widgets.example.com/first"]
    );
}

/// The rest of the C SDK through the example: a validating admission hook reading another resource through the
/// host (a cluster-scoped Palette banning colors: 403) and warning, a deprecated version converted by the plugin,
/// `/status` with its validation, and `/scale` on `spec.size`.
#[test]
fn a_c_plugin_admits_reads_converts_and_serves_status_and_scale() {
    let server = Server::start(&["widgets-c"]);
    let http = server.http();

    // Admission reads the palettes (cluster-scoped, with their own table) through the host.
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        "apiVersion: widgets.example.com/v1\nkind: Palette\nmetadata: {name: no-blue}\nspec: {banned: [blue, red]}\n",
    );
    let palettes = parse_table(&server.kubectl_ok(&["get", "pal"]));
    assert_eq!(palettes.len(), 1, "{palettes:?}");
    assert_eq!(
        (palettes[0]["NAME"].as_str(), palettes[0]["BANNED"].as_str()),
        ("no-blue", "blue,red")
    );
    let refused = http.post_json(WIDGETS, &widget("b", json!({"color": "blue"})));
    let status = refused.assert_status(403, "Forbidden");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or_default()
            .contains("the color blue is banned by the palette no-blue"),
        "{}",
        refused.text
    );
    let warned = server.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: widgets.example.com/v1\nkind: Widget\nmetadata: {name: w, namespace: default}\nspec: {color: green, label: TODO later}\n",
    );
    let stderr = String::from_utf8_lossy(&warned.stderr);
    assert!(warned.status.success(), "{stderr}");
    assert!(stderr.contains("Warning: the label of w says TODO"), "{stderr}");

    // The deprecated v1beta1 says colour; the plugin converts between the versions.
    let beta = server.kubectl_stdin(
        &["create", "-f", "-"],
        "apiVersion: widgets.example.com/v1beta1\nkind: Widget\nmetadata: {name: old, namespace: default}\nspec: {colour: green, size: 4}\n",
    );
    assert!(beta.status.success(), "{}", String::from_utf8_lossy(&beta.stderr));
    assert!(
        String::from_utf8_lossy(&beta.stderr).contains("deprecated"),
        "a deprecated version warns: {}",
        String::from_utf8_lossy(&beta.stderr)
    );
    let v1 = server.kubectl_json(&["get", "widget", "old", "-o", "json"]);
    assert_eq!(v1["apiVersion"], "widgets.example.com/v1");
    assert_eq!(v1["spec"], json!({"color": "green", "size": 4}), "{v1:#}");
    let v1beta1 = server.kubectl_json(&["get", "widgets.v1beta1.widgets.example.com", "w", "-o", "json"]);
    assert_eq!(v1beta1["spec"]["colour"], "green", "{v1beta1:#}");
    assert!(v1beta1["spec"].get("color").is_none(), "{v1beta1:#}");
    let banned = http.post_json(
        "/apis/widgets.example.com/v1beta1/namespaces/default/widgets",
        &json!({"apiVersion": "widgets.example.com/v1beta1", "kind": "Widget", "metadata": {"name": "r"},
                "spec": {"colour": "red"}}),
    );
    banned.assert_status(403, "Forbidden");

    // /status: only the status changes, and it is validated.
    server.kubectl_ok(&[
        "patch",
        "widget",
        "w",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"ready":true,"size":2},"spec":{"size":99}}"#,
    ]);
    let w = server.kubectl_json(&["get", "widget", "w", "-o", "json"]);
    assert_eq!(w["status"], json!({"ready": true, "size": 2}), "{w:#}");
    assert_eq!(w["spec"]["size"], 10, "a status update changes no spec: {w:#}");
    let invalid = http.patch(
        &format!("{WIDGETS}/w/status"),
        "application/merge-patch+json",
        &json!({"status": {"size": -1}}),
    );
    let status = invalid.assert_status(422, "Invalid");
    assert_eq!(causes(status)[0].0, "status.size", "{}", invalid.text);

    // /scale on spec.size, its observed count status.size.
    server.kubectl_ok(&["scale", "widget", "w", "--replicas=7"]);
    assert_eq!(
        server.kubectl_ok(&["get", "widget", "w", "-o", "jsonpath={.spec.size}"]),
        "7"
    );
    let scale = http.get(&format!("{WIDGETS}/w/scale"));
    assert_eq!(scale.expect(200)["status"]["replicas"], 2, "{}", scale.text);
}
