use serde_json::{json, Value};

use super::*;

fn schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"}, "image": {"type": "string"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                "items": {"type": "object", "properties": {"port": {"type": "integer"}, "name": {"type": "string"}}}},
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    }})
}

fn manager<'a>(name: &'a str, time: &'a str) -> Manager<'a> {
    Manager {
        name,
        api_version: "example.com/v1",
        subresource: "",
        time,
    }
}

fn obj(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "uid": "u"}, "spec": spec})
}

/// Each manager's operation and owned fields, as `manager/operation: .a, .b`.
fn owners(obj: &Value) -> Vec<String> {
    entries_of(obj)
        .expect("managedFields")
        .iter()
        .map(|e| {
            let fields: Vec<String> = e.fields.iter().map(|p| display(p)).collect();
            format!("{}/{}: {}", e.manager, e.operation.as_str(), fields.join(", "))
        })
        .collect()
}

#[test]
fn updates_take_the_fields_they_change() {
    let s = schema();
    let mut created = obj(json!({"replicas": 1, "image": "a"}));
    update(&s, None, &mut created, &manager("creator", "t1"), Scope::All).expect("create");
    assert_eq!(owners(&created), ["creator/Update: .spec.image, .spec.replicas"]);
    assert_eq!(created["metadata"]["managedFields"][0]["time"], "t1");
    assert_eq!(created["metadata"]["managedFields"][0]["fieldsType"], "FieldsV1");

    let mut edited = created.clone();
    edited["spec"]["replicas"] = json!(2);
    update(&s, Some(&created), &mut edited, &manager("editor", "t2"), Scope::All).expect("update");
    assert_eq!(
        owners(&edited),
        ["creator/Update: .spec.image", "editor/Update: .spec.replicas"]
    );
    // A removed field leaves every manager; a manager left with nothing is dropped.
    let mut removed = edited.clone();
    removed["spec"].as_object_mut().expect("spec").remove("replicas");
    update(&s, Some(&edited), &mut removed, &manager("creator", "t3"), Scope::All).expect("update");
    assert_eq!(owners(&removed), ["creator/Update: .spec.image"]);
    // The time of an entry moves only when its fields do.
    assert_eq!(removed["metadata"]["managedFields"][0]["time"], "t1");
}

#[test]
fn apply_conflicts_with_another_owner_unless_forced() {
    let s = schema();
    let mut live = obj(json!({"replicas": 1, "image": "a"}));
    update(&s, None, &mut live, &manager("kubectl-create", "t1"), Scope::All).expect("create");
    let config = obj(json!({"replicas": 3}));
    let err = apply(&s, Some(&live), &config, &manager("ctl", "t2"), Scope::All, false).expect_err("conflict");
    let Error::Conflicts(conflicts) = err else {
        panic!("not a conflict: {err:?}")
    };
    assert_eq!(
        conflicts,
        [Conflict {
            manager: "\"kubectl-create\" using example.com/v1 at t1".into(),
            field: ".spec.replicas".into()
        }]
    );
    assert_eq!(
        Conflict::message(&conflicts),
        "Apply failed with 1 conflict: conflict with \"kubectl-create\" using example.com/v1 at t1: .spec.replicas"
    );
    let forced = apply(&s, Some(&live), &config, &manager("ctl", "t2"), Scope::All, true).expect("forced");
    assert_eq!(forced["spec"], json!({"replicas": 3, "image": "a"}));
    assert_eq!(
        owners(&forced),
        ["kubectl-create/Update: .spec.image", "ctl/Apply: .spec.replicas"]
    );
    // The same value is no conflict: the field is shared.
    let same = apply(
        &s,
        Some(&live),
        &obj(json!({"image": "a"})),
        &manager("ctl", "t2"),
        Scope::All,
        false,
    )
    .expect("shared");
    assert_eq!(
        owners(&same),
        [
            "kubectl-create/Update: .spec.image, .spec.replicas",
            "ctl/Apply: .spec.image"
        ]
    );
}

#[test]
fn apply_creates_and_removes_what_it_no_longer_applies() {
    let s = schema();
    let first = obj(json!({"replicas": 1, "image": "a", "ports": [{"port": 80}, {"port": 81, "name": "x"}]}));
    let created = apply(&s, None, &first, &manager("ctl", "t1"), Scope::All, false).expect("create");
    assert_eq!(created["spec"], first["spec"]);
    // Another manager sets a field of its own.
    let mut other = created.clone();
    other["spec"]["ports"][1]["name"] = json!("y");
    update(&s, Some(&created), &mut other, &manager("editor", "t2"), Scope::All).expect("update");
    // The next apply drops image and both ports: image and port 80 go; port 81 stays, its name being the editor's.
    let second = obj(json!({"replicas": 2}));
    let out = apply(&s, Some(&other), &second, &manager("ctl", "t3"), Scope::All, false).expect("apply");
    assert_eq!(
        out["spec"],
        json!({"replicas": 2, "ports": [{"port": 81, "name": "y"}]})
    );
    assert_eq!(
        owners(&out),
        ["ctl/Apply: .spec.replicas", "editor/Update: .spec.ports[port=81].name"]
    );
}

#[test]
fn objects_without_managers_are_owned_before_first_apply() {
    let s = schema();
    let live = obj(json!({"replicas": 1}));
    let err = apply(
        &s,
        Some(&live),
        &obj(json!({"replicas": 2})),
        &manager("ctl", "t1"),
        Scope::All,
        false,
    );
    assert!(
        matches!(&err, Err(Error::Conflicts(c)) if c[0].manager.starts_with("\"before-first-apply\"")),
        "{err:?}"
    );
}

#[test]
fn scopes_keep_status_and_spec_apart_and_managed_fields_can_be_reset() {
    let s = schema();
    let mut created = obj(json!({"replicas": 1}));
    created["status"] = json!({"ready": true});
    update(&s, None, &mut created, &manager("a", "t1"), Scope::AllButStatus).expect("create");
    assert_eq!(owners(&created), ["a/Update: .spec.replicas"]);
    let mut status = created.clone();
    status["status"]["ready"] = json!(false);
    let status_writer = Manager {
        subresource: "status",
        ..manager("controller", "t2")
    };
    update(&s, Some(&created), &mut status, &status_writer, Scope::StatusOnly).expect("status");
    assert_eq!(
        owners(&status),
        ["a/Update: .spec.replicas", "controller/Update: .status.ready"]
    );
    assert_eq!(status["metadata"]["managedFields"][1]["subresource"], "status");

    let mut reset = status.clone();
    reset["metadata"]["managedFields"] = json!([{}]);
    update(&s, Some(&status), &mut reset, &manager("a", "t3"), Scope::All).expect("reset");
    assert!(reset["metadata"].get("managedFields").is_none(), "{reset:#}");
    let mut garbage = status.clone();
    garbage["metadata"]["managedFields"] = json!([{"operation": "Sideways"}]);
    let err = update(&s, Some(&status), &mut garbage, &manager("a", "t3"), Scope::All);
    assert!(matches!(err, Err(Error::Invalid(_))), "{err:?}");
}
