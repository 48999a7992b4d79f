//! Discovery and OpenAPI as kubectl sees them: `api-resources`, `explain`, and the raw discovery documents.

use std::collections::{BTreeMap, BTreeSet};

use e2e::{parse_table, Server};

/// The verbs of a generic Kubernetes store.
const ALL_VERBS: [&str; 8] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
/// The verbs of the `partial` plugin, which exports only the create strategy and the lister.
const PARTIAL_VERBS: [&str; 4] = ["create", "get", "list", "watch"];

/// The row of `kubectl api-resources` for resource `name` in API group `group`.
fn resource_row<'a>(rows: &'a [BTreeMap<String, String>], name: &str, group: &str) -> &'a BTreeMap<String, String> {
    rows.iter()
        .find(|row| row["NAME"] == name && row["APIVERSION"].starts_with(&format!("{group}/")))
        .unwrap_or_else(|| panic!("api-resources has no {name} in {group}: {rows:#?}"))
}

/// Parses the VERBS column, printed by kubectl 1.37 as `create,delete,get` (older versions: `[create delete get]`).
fn verbs(cell: &str) -> BTreeSet<String> {
    cell.trim_start_matches('[')
        .trim_end_matches(']')
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|verb| !verb.is_empty())
        .map(str::to_owned)
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn api_resources_lists_flunders_and_fischers_with_scope_kind_and_version() {
    let server = Server::start(&["wardle", "partial"]);
    let rows = parse_table(&server.kubectl_ok(&["api-resources"]));

    let flunders = resource_row(&rows, "flunders", "wardle.example.com");
    assert_eq!(
        flunders["APIVERSION"], "wardle.example.com/v1beta1",
        "flunders use the preferred version: {flunders:?}"
    );
    assert_eq!(flunders["NAMESPACED"], "true", "{flunders:?}");
    assert_eq!(flunders["KIND"], "Flunder", "{flunders:?}");
    assert_eq!(flunders["SHORTNAMES"], "fl", "{flunders:?}");

    let fischers = resource_row(&rows, "fischers", "wardle.example.com");
    assert_eq!(
        fischers["APIVERSION"], "wardle.example.com/v1alpha1",
        "fischers exist only in v1alpha1: {fischers:?}"
    );
    assert_eq!(fischers["NAMESPACED"], "false", "{fischers:?}");
    assert_eq!(fischers["KIND"], "Fischer", "{fischers:?}");

    let notes = resource_row(&rows, "notes", "partial.example.com");
    assert_eq!(notes["APIVERSION"], "partial.example.com/v1", "{notes:?}");
    assert_eq!(notes["NAMESPACED"], "true", "{notes:?}");

    // kubectl resolves the short name, the singular and the fully qualified name through discovery.
    for name in [
        "fl",
        "flunder",
        "flunders.wardle.example.com",
        "flunders.v1beta1.wardle.example.com",
    ] {
        let output = server.kubectl(&["get", name]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "kubectl get {name}: {stderr}");
        assert!(
            stderr.contains("No resources found in default namespace."),
            "kubectl get {name}: {stderr}"
        );
    }
}

#[test]
fn api_resources_wide_shows_all_verbs_for_wardle_and_only_exported_ones_for_partial() {
    let server = Server::start(&["wardle", "partial"]);
    let rows = parse_table(&server.kubectl_ok(&["api-resources", "-o", "wide"]));

    for name in ["flunders", "fischers"] {
        let row = resource_row(&rows, name, "wardle.example.com");
        assert_eq!(verbs(&row["VERBS"]), set(&ALL_VERBS), "verbs of {name}: {row:?}");
    }
    let notes = resource_row(&rows, "notes", "partial.example.com");
    assert_eq!(verbs(&notes["VERBS"]), set(&PARTIAL_VERBS), "verbs of notes: {notes:?}");
}

#[test]
fn api_resources_filters_by_verb() {
    let server = Server::start(&["wardle", "partial"]);
    let deletable = server.kubectl_ok(&["api-resources", "--verbs=delete", "-o", "name"]);
    let deletable: BTreeSet<&str> = deletable.lines().collect();
    assert!(deletable.contains("flunders.wardle.example.com"), "{deletable:?}");
    assert!(deletable.contains("fischers.wardle.example.com"), "{deletable:?}");
    assert!(
        !deletable.iter().any(|name| name.starts_with("notes")),
        "notes cannot be deleted: {deletable:?}"
    );
}

#[test]
fn explain_describes_the_v1beta1_flunder_spec_fields() {
    let server = Server::start(&["wardle"]);
    let text = server.kubectl_ok(&["explain", "flunders.spec"]);
    let header = |key: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(key))
            .map(str::trim)
            .unwrap_or_else(|| panic!("explain output has no {key} line:\n{text}"))
            .to_owned()
    };
    assert_eq!(header("GROUP:"), "wardle.example.com", "{text}");
    assert_eq!(header("KIND:"), "Flunder", "{text}");
    assert_eq!(header("VERSION:"), "v1beta1", "{text}");
    for field in ["flunderReference", "fischerReference", "referenceType"] {
        let described = text.lines().any(|line| {
            let mut words = line.split_whitespace();
            words.next() == Some(field) && words.next() == Some("<string>")
        });
        assert!(
            described,
            "explain flunders.spec does not list `{field} <string>`:\n{text}"
        );
    }
    assert!(
        !text
            .lines()
            .any(|line| line.split_whitespace().next() == Some("reference")),
        "the v1alpha1-only field `reference` must not appear in the v1beta1 explanation:\n{text}"
    );
}

#[test]
fn explain_describes_the_fischer_disallowed_flunders_list() {
    let server = Server::start(&["wardle"]);
    let text = server.kubectl_ok(&["explain", "fischers.disallowedFlunders"]);
    assert!(
        text.lines().any(|line| line.starts_with("FIELD:")
            && line.contains("disallowedFlunders")
            && line.contains("<[]string>")),
        "explain shows no `FIELD: disallowedFlunders <[]string>` line:\n{text}"
    );
    assert!(
        text.lines()
            .any(|line| line.starts_with("KIND:") && line.contains("Fischer")),
        "{text}"
    );
}

#[test]
fn wardle_group_prefers_v1beta1_and_serves_v1alpha1() {
    let server = Server::start(&["wardle"]);
    let group = server.http().get("/apis/wardle.example.com");
    let group = group.expect(200);
    assert_eq!(group["kind"], "APIGroup", "{group}");
    assert_eq!(group["name"], "wardle.example.com", "{group}");
    assert_eq!(
        group["preferredVersion"]["groupVersion"], "wardle.example.com/v1beta1",
        "{group}"
    );
    let versions: BTreeSet<&str> = group["versions"]
        .as_array()
        .map(|versions| versions.iter().filter_map(|v| v["version"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(versions, BTreeSet::from(["v1alpha1", "v1beta1"]), "{group}");

    let groups = server.http().get("/apis");
    let groups = groups.expect(200);
    assert_eq!(groups["kind"], "APIGroupList", "{groups}");
    let names: Vec<&str> = groups["groups"]
        .as_array()
        .map(|g| g.iter().filter_map(|g| g["name"].as_str()).collect())
        .unwrap_or_default();
    assert!(names.contains(&"wardle.example.com"), "{groups}");
}

#[test]
fn partial_discovery_lists_exactly_the_exported_verbs() {
    let server = Server::start(&["partial"]);
    let reply = server.http().get("/apis/partial.example.com/v1");
    let list = reply.expect(200);
    assert_eq!(list["kind"], "APIResourceList", "{list}");
    assert_eq!(list["groupVersion"], "partial.example.com/v1", "{list}");
    let resources = list["resources"].as_array().cloned().unwrap_or_default();
    let notes = resources
        .iter()
        .find(|r| r["name"] == "notes")
        .unwrap_or_else(|| panic!("no notes resource in {list}"));
    assert_eq!(notes["namespaced"], true, "{notes}");
    let verbs: Vec<&str> = notes["verbs"]
        .as_array()
        .map(|v| v.iter().filter_map(|v| v.as_str()).collect())
        .unwrap_or_default();
    let mut sorted = verbs.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, PARTIAL_VERBS, "verbs of notes: {notes}");
    assert_eq!(sorted.len(), verbs.len(), "no duplicate verbs: {notes}");
}
