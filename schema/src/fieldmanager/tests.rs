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
    assert_eq!(owners(&created), ["creator/Update: .spec, .spec.image, .spec.replicas"]);
    assert_eq!(created["metadata"]["managedFields"][0]["time"], "t1");
    assert_eq!(created["metadata"]["managedFields"][0]["fieldsType"], "FieldsV1");

    let mut edited = created.clone();
    edited["spec"]["replicas"] = json!(2);
    update(&s, Some(&created), &mut edited, &manager("editor", "t2"), Scope::All).expect("update");
    assert_eq!(
        owners(&edited),
        ["creator/Update: .spec, .spec.image", "editor/Update: .spec.replicas"]
    );
    // A removed field leaves every manager; a manager left with nothing is dropped.
    let mut removed = edited.clone();
    removed["spec"].as_object_mut().expect("spec").remove("replicas");
    update(&s, Some(&edited), &mut removed, &manager("creator", "t3"), Scope::All).expect("update");
    assert_eq!(owners(&removed), ["creator/Update: .spec, .spec.image"]);
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
        ["kubectl-create/Update: .spec, .spec.image", "ctl/Apply: .spec.replicas"]
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
            "kubectl-create/Update: .spec, .spec.image, .spec.replicas",
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
    assert_eq!(owners(&created), ["a/Update: .spec, .spec.replicas"]);
    let mut status = created.clone();
    status["status"]["ready"] = json!(false);
    let status_writer = Manager {
        subresource: "status",
        ..manager("controller", "t2")
    };
    update(&s, Some(&created), &mut status, &status_writer, Scope::StatusOnly).expect("status");
    assert_eq!(
        owners(&status),
        ["a/Update: .spec, .spec.replicas", "controller/Update: .status.ready"]
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

/// Two versions of one type: `example.com/v1` names a field `.spec.ref`, `example.com/v2` names it `.spec.reference`.
struct Renamed(Value);

impl Versions for Renamed {
    fn schema(&self, api_version: &str) -> Option<&Value> {
        matches!(api_version, "example.com/v1" | "example.com/v2").then_some(&self.0)
    }

    fn convert(&self, obj: &Value, api_version: &str) -> Result<Value, String> {
        let (from, to) = match api_version {
            "example.com/v1" => ("reference", "ref"),
            "example.com/v2" => ("ref", "reference"),
            other => return Err(format!("no version {other}")),
        };
        let mut out = obj.clone();
        out["apiVersion"] = json!(api_version);
        if let Some(spec) = out.get_mut("spec").and_then(Value::as_object_mut) {
            if let Some(v) = spec.remove(from) {
                spec.insert(to.into(), v);
            }
        }
        Ok(out)
    }
}

fn renamed() -> Renamed {
    Renamed(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ref": {"type": "string"}, "reference": {"type": "string"}, "size": {"type": "integer"},
        }}}}),
    )
}

fn in_version(version: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget", "metadata": {"name": "w"}, "spec": spec})
}

fn manager_in<'a>(name: &'a str, api_version: &'a str, time: &'a str) -> Manager<'a> {
    Manager {
        name,
        api_version,
        subresource: "",
        time,
    }
}

#[test]
fn an_update_in_another_version_takes_the_field_it_changes_there() {
    let versions = renamed();
    let mut created = in_version("v1", json!({"ref": "a", "size": 1}));
    let creator = manager_in("creator", "example.com/v1", "t1");
    update(&versions, None, &mut created, &creator, Scope::All).expect("create");
    // The same object read in v2, its reference changed there.
    let old = versions.convert(&created, "example.com/v2").expect("convert");
    let mut new = old.clone();
    new["spec"]["reference"] = json!("b");
    let editor = manager_in("editor", "example.com/v2", "t2");
    update(&versions, Some(&old), &mut new, &editor, Scope::All).expect("update");
    // Each keeps its fields in its own version: the creator lost .spec.ref, the editor owns .spec.reference.
    assert_eq!(
        owners(&new),
        ["creator/Update: .spec, .spec.size", "editor/Update: .spec.reference"]
    );
}

#[test]
fn an_apply_in_another_version_conflicts_with_the_owner_of_the_same_field() {
    let versions = renamed();
    let first = manager_in("first", "example.com/v1", "t1");
    let live = apply(
        &versions,
        None,
        &in_version("v1", json!({"ref": "a"})),
        &first,
        Scope::All,
        false,
    )
    .expect("create");
    let live = versions.convert(&live, "example.com/v2").expect("convert");
    let second = manager_in("second", "example.com/v2", "t2");
    let config = in_version("v2", json!({"reference": "b"}));
    let err = apply(&versions, Some(&live), &config, &second, Scope::All, false).expect_err("conflict");
    let Error::Conflicts(conflicts) = err else {
        panic!("not a conflict: {err:?}")
    };
    // Named as the owner recorded it, in its version.
    assert_eq!(
        conflicts,
        [Conflict {
            manager: "\"first\"".into(),
            field: ".spec.ref".into()
        }]
    );
    let forced = apply(&versions, Some(&live), &config, &second, Scope::All, true).expect("forced");
    assert_eq!(forced["spec"], json!({"reference": "b"}));
    assert_eq!(owners(&forced), ["second/Apply: .spec.reference"]);
}

#[test]
fn an_apply_in_a_new_version_removes_what_the_last_one_applied_and_this_one_does_not() {
    let versions = renamed();
    let v1 = manager_in("ctl", "example.com/v1", "t1");
    let live = apply(
        &versions,
        None,
        &in_version("v1", json!({"ref": "a", "size": 1})),
        &v1,
        Scope::All,
        false,
    )
    .expect("create");
    let live = versions.convert(&live, "example.com/v2").expect("convert");
    // The next apply, in v2, keeps the size and drops the reference: it goes.
    let v2 = manager_in("ctl", "example.com/v2", "t2");
    let out = apply(
        &versions,
        Some(&live),
        &in_version("v2", json!({"size": 1})),
        &v2,
        Scope::All,
        false,
    )
    .expect("apply");
    assert_eq!(out["spec"], json!({"size": 1}));
    assert_eq!(owners(&out), ["ctl/Apply: .spec.size"]);
    // Dropping a field that another manager (of a third version's writes) owns keeps it.
    let mut edited = out.clone();
    edited["spec"]["reference"] = json!("c");
    let editor = manager_in("editor", "example.com/v2", "t3");
    update(&versions, Some(&out), &mut edited, &editor, Scope::All).expect("update");
    let edited = versions.convert(&edited, "example.com/v1").expect("convert");
    let back = manager_in("ctl", "example.com/v1", "t4");
    let out = apply(
        &versions,
        Some(&edited),
        &in_version("v1", json!({"size": 2})),
        &back,
        Scope::All,
        false,
    )
    .expect("apply");
    assert_eq!(out["spec"], json!({"ref": "c", "size": 2}));
}
