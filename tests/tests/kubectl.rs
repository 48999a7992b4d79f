//! Everyday kubectl workflows against the wardle plugins (in Rust and in Go, each test on both): create, get, apply,
//! patch, delete, selectors, admission, validation, version conversion and persistence across restarts.

use std::collections::BTreeSet;

use e2e::{fischer_v1alpha1, flunder_v1beta1, parse_table, str_at, Server, FLUNDERS_V1BETA1};
use serde_json::json;

/// The names printed by `kubectl get ... -o name` (`flunder.wardle.example.com/x` → `x`).
fn names(output: &str) -> BTreeSet<String> {
    output
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| line.rsplit('/').next().unwrap_or(line).trim().to_owned())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn ban_flunder_admission_rejects_names_a_fischer_disallows(plugin: &str) {
    let server = Server::start(&[plugin]);
    let applied = server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &fischer_v1alpha1("no-bad-names", &["bad-name"]).to_string(),
    );
    assert!(applied.contains("created"), "{applied}");

    let stderr = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder_v1beta1("bad-name", "x").to_string());
    assert!(
        stderr.contains(
            r#"flunders.wardle.example.com "bad-name" is forbidden: this name may not be used, please change the resource name"#
        ),
        "unexpected kubectl error:\n{stderr}"
    );
    assert!(
        stderr.contains("(Forbidden)"),
        "the error should be a 403 Forbidden:\n{stderr}"
    );
    let missing = server.kubectl_err(&["get", "flunder", "bad-name"]);
    assert!(
        missing.contains("(NotFound)"),
        "the rejected flunder must not exist:\n{missing}"
    );

    let created = server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("good-name", "x").to_string());
    assert!(
        created.contains(r#"flunder.wardle.example.com/good-name created"#),
        "{created}"
    );
}

fn flunder_created_in_v1alpha1_reads_back_in_v1beta1_with_defaulted_reference_type(plugin: &str) {
    let server = Server::start(&[plugin]);
    let manifest = "\
apiVersion: wardle.example.com/v1alpha1
kind: Flunder
metadata:
  name: from-alpha
spec:
  reference: foo
";
    server.kubectl_stdin_ok(&["create", "-f", "-"], manifest);

    let beta = server.kubectl_json(&["get", "flunders.v1beta1.wardle.example.com", "from-alpha", "-o", "json"]);
    assert_eq!(str_at(&beta, "/apiVersion"), "wardle.example.com/v1beta1", "{beta:#}");
    assert_eq!(str_at(&beta, "/spec/flunderReference"), "foo", "{beta:#}");
    assert_eq!(
        str_at(&beta, "/spec/referenceType"),
        "Flunder",
        "defaulted in v1alpha1: {beta:#}"
    );
    assert!(
        beta.pointer("/spec/reference").is_none(),
        "no v1alpha1 field in v1beta1: {beta:#}"
    );

    let alpha = server.kubectl_json(&[
        "get",
        "flunders.v1alpha1.wardle.example.com",
        "from-alpha",
        "-o",
        "json",
    ]);
    assert_eq!(
        str_at(&alpha, "/apiVersion"),
        "wardle.example.com/v1alpha1",
        "{alpha:#}"
    );
    assert_eq!(str_at(&alpha, "/spec/reference"), "foo", "{alpha:#}");
    assert_eq!(str_at(&alpha, "/spec/referenceType"), "Flunder", "{alpha:#}");
}

fn flunder_created_in_v1beta1_reads_back_in_v1alpha1(plugin: &str) {
    let server = Server::start(&[plugin]);
    let manifest = "\
apiVersion: wardle.example.com/v1beta1
kind: Flunder
metadata:
  name: from-beta
spec:
  fischerReference: some-fischer
  referenceType: Fischer
";
    server.kubectl_stdin_ok(&["create", "-f", "-"], manifest);

    let alpha = server.kubectl_json(&["get", "flunders.v1alpha1.wardle.example.com", "from-beta", "-o", "json"]);
    assert_eq!(
        str_at(&alpha, "/apiVersion"),
        "wardle.example.com/v1alpha1",
        "{alpha:#}"
    );
    assert_eq!(str_at(&alpha, "/spec/reference"), "some-fischer", "{alpha:#}");
    assert_eq!(str_at(&alpha, "/spec/referenceType"), "Fischer", "{alpha:#}");

    let beta = server.kubectl_json(&["get", "flunder", "from-beta", "-o", "json"]);
    assert_eq!(
        str_at(&beta, "/apiVersion"),
        "wardle.example.com/v1beta1",
        "the preferred version: {beta:#}"
    );
    assert_eq!(str_at(&beta, "/spec/fischerReference"), "some-fischer", "{beta:#}");
    assert_eq!(str_at(&beta, "/spec/referenceType"), "Fischer", "{beta:#}");
    assert_eq!(str_at(&beta, "/spec/flunderReference"), "", "{beta:#}");
}

fn get_flunders_prints_the_plugin_table_columns(plugin: &str) {
    let server = Server::start(&[plugin]);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("table-a", "ref-a").to_string());
    let fischer_ref = json!({
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": "table-b"},
        "spec": {"fischerReference": "ref-b", "referenceType": "Fischer"},
    });
    server.kubectl_stdin_ok(&["create", "-f", "-"], &fischer_ref.to_string());

    let output = server.kubectl_ok(&["get", "flunders"]);
    let header: Vec<&str> = output
        .lines()
        .next()
        .unwrap_or("")
        .split("  ")
        .map(str::trim)
        .filter(|column| !column.is_empty())
        .collect();
    assert_eq!(
        header,
        ["NAME", "REFERENCE TYPE", "REFERENCE", "CREATED AT"],
        "table:\n{output}"
    );

    let rows = parse_table(&output);
    assert_eq!(rows.len(), 2, "table:\n{output}");
    let row = |name: &str| {
        rows.iter()
            .find(|row| row["NAME"] == name)
            .unwrap_or_else(|| panic!("no row {name} in:\n{output}"))
    };
    assert_eq!(row("table-a")["REFERENCE TYPE"], "Flunder", "{output}");
    assert_eq!(row("table-a")["REFERENCE"], "ref-a", "{output}");
    assert_eq!(row("table-b")["REFERENCE TYPE"], "Fischer", "{output}");
    assert_eq!(row("table-b")["REFERENCE"], "ref-b", "{output}");
    // Like sample-apiserver's table convertor, "Created At" holds the RFC 3339 creation timestamp (not an age).
    let created = server.kubectl_json(&["get", "flunder", "table-a", "-o", "json"]);
    assert_eq!(
        row("table-a")["CREATED AT"],
        str_at(&created, "/metadata/creationTimestamp"),
        "{output}"
    );
}

fn apply_creates_then_configures_then_reports_unchanged(plugin: &str) {
    let server = Server::start(&[plugin]);
    let manifest = |reference: &str| {
        format!(
            "apiVersion: wardle.example.com/v1beta1
kind: Flunder
metadata:
  name: applied
  labels:
    app: demo
spec:
  flunderReference: {reference}
  referenceType: Flunder
"
        )
    };

    let first = server.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest("first"));
    assert_eq!(first.trim(), "flunder.wardle.example.com/applied created");

    let second = server.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest("second"));
    assert_eq!(second.trim(), "flunder.wardle.example.com/applied configured");
    let object = server.kubectl_json(&["get", "flunder", "applied", "-o", "json"]);
    assert_eq!(str_at(&object, "/spec/flunderReference"), "second", "{object:#}");
    assert_eq!(str_at(&object, "/metadata/labels/app"), "demo", "{object:#}");

    let third = server.kubectl_stdin_ok(&["apply", "-f", "-"], &manifest("second"));
    assert_eq!(third.trim(), "flunder.wardle.example.com/applied unchanged");
    let again = server.kubectl_json(&["get", "flunder", "applied", "-o", "json"]);
    assert_eq!(
        str_at(&again, "/metadata/resourceVersion"),
        str_at(&object, "/metadata/resourceVersion"),
        "an unchanged apply must not write"
    );
}

fn merge_and_json_patches_change_the_spec(plugin: &str) {
    let server = Server::start(&[plugin]);
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &flunder_v1beta1("patched", "original").to_string(),
    );

    let merged = server.kubectl_ok(&[
        "patch",
        "flunder",
        "patched",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"flunderReference":"merged"},"metadata":{"labels":{"tier":"gold"}}}"#,
    ]);
    assert!(
        merged.contains("flunder.wardle.example.com/patched patched"),
        "{merged}"
    );
    let object = server.kubectl_json(&["get", "flunder", "patched", "-o", "json"]);
    assert_eq!(str_at(&object, "/spec/flunderReference"), "merged", "{object:#}");
    assert_eq!(
        str_at(&object, "/spec/referenceType"),
        "Flunder",
        "merge patch keeps other fields: {object:#}"
    );
    assert_eq!(str_at(&object, "/metadata/labels/tier"), "gold", "{object:#}");

    let json_patched = server.kubectl_ok(&[
        "patch",
        "flunder",
        "patched",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/flunderReference","value":"json-patched"}]"#,
    ]);
    assert!(
        json_patched.contains("flunder.wardle.example.com/patched patched"),
        "{json_patched}"
    );
    let reference = server.kubectl_ok(&["get", "flunder", "patched", "-o", "jsonpath={.spec.flunderReference}"]);
    assert_eq!(reference, "json-patched");

    let failed = server.kubectl_err(&[
        "patch",
        "flunder",
        "patched",
        "--type",
        "json",
        "-p",
        r#"[{"op":"test","path":"/spec/flunderReference","value":"something-else"}]"#,
    ]);
    // A failed JSON patch operation is a 422, which kubectl prints as "The request is invalid: ...".
    assert!(
        failed.contains("The request is invalid"),
        "a failing JSON patch test op is rejected:\n{failed}"
    );
    let reference = server.kubectl_ok(&["get", "flunder", "patched", "-o", "jsonpath={.spec.flunderReference}"]);
    assert_eq!(reference, "json-patched", "a failed patch must not write");
}

fn delete_removes_the_flunder_and_get_reports_not_found(plugin: &str) {
    let server = Server::start(&[plugin]);
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("doomed", "x").to_string());
    server.kubectl_ok(&["get", "flunder", "doomed"]);

    let deleted = server.kubectl_ok(&["delete", "flunder", "doomed"]);
    // kubectl 1.37 prints `... "doomed" deleted from default namespace`.
    assert!(
        deleted.starts_with(r#"flunder.wardle.example.com "doomed" deleted"#),
        "{deleted}"
    );

    let stderr = server.kubectl_err(&["get", "flunder", "doomed"]);
    assert!(
        stderr.contains(r#"Error from server (NotFound): flunders.wardle.example.com "doomed" not found"#),
        "{stderr}"
    );
    let listed = server.kubectl_ok(&["get", "flunders", "-o", "name"]);
    assert!(names(&listed).is_empty(), "{listed}");

    let again = server.kubectl_err(&["delete", "flunder", "doomed"]);
    assert!(again.contains("(NotFound)"), "{again}");
}

fn label_and_field_selectors_filter_lists(plugin: &str) {
    let server = Server::start(&[plugin]);
    let flunder = |name: &str, app: &str, reference_type: &str| {
        let spec = if reference_type == "Fischer" {
            json!({"fischerReference": "f", "referenceType": "Fischer"})
        } else {
            json!({"flunderReference": "f", "referenceType": "Flunder"})
        };
        json!({
            "apiVersion": "wardle.example.com/v1beta1",
            "kind": "Flunder",
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": spec,
        })
    };
    for object in [
        flunder("one", "a", "Flunder"),
        flunder("two", "a", "Fischer"),
        flunder("three", "b", "Fischer"),
    ] {
        server.kubectl_stdin_ok(&["create", "-f", "-"], &object.to_string());
    }

    let get = |args: &[&str]| {
        let mut all = vec!["get", "flunders", "-o", "name"];
        all.extend_from_slice(args);
        names(&server.kubectl_ok(&all))
    };
    assert_eq!(get(&[]), set(&["one", "two", "three"]));
    assert_eq!(get(&["-l", "app=a"]), set(&["one", "two"]));
    assert_eq!(get(&["-l", "app!=a"]), set(&["three"]));
    assert_eq!(get(&["-l", "app in (b,c)"]), set(&["three"]));
    assert_eq!(get(&["-l", "app=nothing"]), set(&[]));
    assert_eq!(get(&["--field-selector", "metadata.name=two"]), set(&["two"]));
    assert_eq!(get(&["--field-selector", "metadata.name!=two"]), set(&["one", "three"]));
    assert_eq!(
        get(&["--field-selector", "spec.referenceType=Fischer"]),
        set(&["two", "three"])
    );
    assert_eq!(
        get(&["--field-selector", "spec.referenceType=Fischer", "-l", "app=a"]),
        set(&["two"])
    );

    let unknown = server.kubectl_err(&["get", "flunders", "--field-selector", "spec.nothing=x"]);
    assert!(
        unknown.contains("(BadRequest)"),
        "an unknown field selector is a bad request:\n{unknown}"
    );
}

fn create_from_a_v1_list_creates_every_item(plugin: &str) {
    // `kubectl get -o json` output (a v1 List) fed back to kubectl is a common workflow; kubectl validates it
    // against the server's OpenAPI before creating each item.
    let server = Server::start(&[plugin]);
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [
        flunder_v1beta1("listed-one", "x"),
        flunder_v1beta1("listed-two", "y"),
    ]});
    let created = server.kubectl_stdin_ok(&["create", "-f", "-"], &list.to_string());
    assert!(
        created.contains("flunder.wardle.example.com/listed-one created"),
        "{created}"
    );
    assert!(
        created.contains("flunder.wardle.example.com/listed-two created"),
        "{created}"
    );
    let listed = server.kubectl_ok(&["get", "flunders", "-o", "name"]);
    assert_eq!(names(&listed), set(&["listed-one", "listed-two"]));
}

fn objects_survive_a_restart_with_the_same_uid_and_resource_version(plugin: &str) {
    let mut server = Server::start(&[plugin]);
    server.kubectl_stdin_ok(
        &["apply", "-f", "-"],
        &fischer_v1alpha1("keeper", &["kept-out"]).to_string(),
    );
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("durable", "x").to_string());
    server.kubectl_ok(&["label", "flunder", "durable", "touched=yes"]);
    let before_flunder = server.kubectl_json(&["get", "flunder", "durable", "-o", "json"]);
    let before_fischer = server.kubectl_json(&["get", "fischer", "keeper", "-o", "json"]);
    let before_list = server.http().get(FLUNDERS_V1BETA1);

    server.restart();

    let after_flunder = server.kubectl_json(&["get", "flunder", "durable", "-o", "json"]);
    let after_fischer = server.kubectl_json(&["get", "fischer", "keeper", "-o", "json"]);
    for (before, after) in [(&before_flunder, &after_flunder), (&before_fischer, &after_fischer)] {
        assert!(
            !str_at(before, "/metadata/uid").is_empty(),
            "objects have a uid: {before:#}"
        );
        assert_eq!(
            str_at(after, "/metadata/uid"),
            str_at(before, "/metadata/uid"),
            "{before:#}\n{after:#}"
        );
        assert_eq!(
            str_at(after, "/metadata/resourceVersion"),
            str_at(before, "/metadata/resourceVersion"),
            "{before:#}\n{after:#}"
        );
        assert_eq!(after["spec"], before["spec"], "{before:#}\n{after:#}");
        assert_eq!(after["metadata"]["labels"], before["metadata"]["labels"]);
    }
    let after_list = server.http().get(FLUNDERS_V1BETA1);
    assert_eq!(after_list.expect(200)["items"], before_list.expect(200)["items"]);

    // The admission plugin still sees the stored fischer, and new writes get later resource versions.
    let stderr = server.kubectl_stdin_err(&["create", "-f", "-"], &flunder_v1beta1("kept-out", "x").to_string());
    assert!(stderr.contains("is forbidden"), "{stderr}");
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &flunder_v1beta1("after-restart", "x").to_string(),
    );
    let newer = server.kubectl_json(&["get", "flunder", "after-restart", "-o", "json"]);
    let rv = |value: &serde_json::Value| str_at(value, "/metadata/resourceVersion").parse::<u64>().unwrap_or(0);
    assert!(
        rv(&newer) > rv(&before_flunder),
        "resource versions keep growing: {newer:#} vs {before_flunder:#}"
    );
}

fn invalid_flunders_are_refused_with_each_field_named(plugin: &str) {
    let server = Server::start(&[plugin]);
    let both = json!({
        "apiVersion": "wardle.example.com/v1beta1",
        "kind": "Flunder",
        "metadata": {"name": "both"},
        "spec": {"flunderReference": "a", "fischerReference": "b", "referenceType": "Other", "replicas": -2},
    });
    let stderr = server.kubectl_stdin_err(&["create", "-f", "-"], &both.to_string());
    for expected in [
        r#"The Flunder "both" is invalid: "#,
        r#"spec.fischerReference: Invalid value: "b": cannot be set with flunderReference at the same time"#,
        r#"spec.referenceType: Invalid value: "Other": must be Flunder or Fischer"#,
        "spec.replicas: Invalid value: -2: must be greater than or equal to 0",
    ] {
        assert!(stderr.contains(expected), "no {expected:?} in:\n{stderr}");
    }
    // v1alpha1 is validated after its conversion: a Fischer reference needs its reference.
    let alpha = "apiVersion: wardle.example.com/v1alpha1\nkind: Flunder\nmetadata:\n  name: empty-fischer\nspec:\n  referenceType: Fischer\n";
    let stderr = server.kubectl_stdin_err(&["create", "-f", "-"], alpha);
    assert!(
        stderr.contains(r#"spec.fischerReference: Invalid value: "": cannot be empty if referenceType is Fischer"#),
        "{stderr}"
    );
    let listed = server.kubectl_ok(&["get", "flunders", "-o", "name"]);
    assert!(names(&listed).is_empty(), "nothing invalid is stored: {listed}");

    // An update is validated too, and leaves the stored object as it was.
    server.kubectl_stdin_ok(&["create", "-f", "-"], &flunder_v1beta1("kept", "x").to_string());
    let stderr = server.kubectl_err(&[
        "patch",
        "flunder",
        "kept",
        "--type=merge",
        "-p",
        r#"{"spec":{"referenceType":"Fischer"}}"#,
    ]);
    assert!(
        stderr.contains(r#"spec.flunderReference: Invalid value: "x": cannot be set if referenceType is not Flunder"#),
        "{stderr}"
    );
    let kept = server.kubectl_json(&["get", "flunder", "kept", "-o", "json"]);
    assert_eq!(str_at(&kept, "/spec/referenceType"), "Flunder", "{kept:#}");
}

fn fischers_are_cluster_scoped_with_their_own_table(plugin: &str) {
    let server = Server::start(&[plugin]);
    server.kubectl_stdin_ok(
        &["create", "-f", "-"],
        &fischer_v1alpha1("picky", &["a", "b"]).to_string(),
    );
    let output = server.kubectl_ok(&["get", "fischers"]);
    let rows = parse_table(&output);
    assert_eq!(rows.len(), 1, "{output}");
    assert_eq!(rows[0]["NAME"], "picky", "{output}");
    assert_eq!(rows[0]["DISALLOWED FLUNDERS"], "a,b", "{output}");
    let fischer = server.kubectl_json(&["get", "fi", "picky", "-o", "json"]);
    assert!(fischer["metadata"].get("namespace").is_none(), "{fischer:#}");
    assert_eq!(fischer["disallowedFlunders"], json!(["a", "b"]), "{fischer:#}");
    // The short names and the category name both kinds.
    let all = server.kubectl_ok(&["get", "wardle", "-o", "name"]);
    assert!(all.contains("fischer.wardle.example.com/picky"), "{all}");
    let deleted = server.kubectl_ok(&["delete", "fischer", "picky"]);
    assert!(deleted.contains(r#""picky" deleted"#), "{deleted}");
}

e2e::on_both_wardles!(
    ban_flunder_admission_rejects_names_a_fischer_disallows,
    flunder_created_in_v1alpha1_reads_back_in_v1beta1_with_defaulted_reference_type,
    flunder_created_in_v1beta1_reads_back_in_v1alpha1,
    get_flunders_prints_the_plugin_table_columns,
    apply_creates_then_configures_then_reports_unchanged,
    merge_and_json_patches_change_the_spec,
    delete_removes_the_flunder_and_get_reports_not_found,
    label_and_field_selectors_filter_lists,
    create_from_a_v1_list_creates_every_item,
    objects_survive_a_restart_with_the_same_uid_and_resource_version,
    invalid_flunders_are_refused_with_each_field_named,
    fischers_are_cluster_scoped_with_their_own_table,
);
