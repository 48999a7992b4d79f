use serde_json::json;

use super::*;
use crate::testing::{self, trial};
use apimachinery::plugin::FieldErrorReason;

#[test]
fn a_validation_comes_back_as_the_hosts_field_errors() {
    let hostile = testing::load("hostile");
    let v = hostile
        .validate("trials", &trial("nope", "prepare-for-create"))
        .unwrap();
    assert_eq!(v.errors.len(), 1, "{v:?}");
    let e = &v.errors[0];
    assert_eq!(
        (e.reason, e.field.as_str()),
        (FieldErrorReason::NotSupported, "spec.mode")
    );
    assert!(e.message.starts_with("Unsupported value: \"nope\""), "{}", e.message);
    let v = hostile.validate("trials", &trial("internal", "validate")).unwrap();
    assert_eq!(v.errors[0].reason, FieldErrorReason::Forbidden);
    assert_eq!(
        v.errors[0].message,
        "Forbidden: hostile: this trial asked for an internal error"
    );
    assert!(hostile
        .validate("trials", &trial("ok", "validate"))
        .unwrap()
        .errors
        .is_empty());
}

#[test]
fn an_object_that_is_not_json_is_a_failure_of_the_call() {
    let hostile = testing::load("hostile");
    let e = hostile
        .prepare_for_create("trials", &trial("garbage", "prepare-for-create"))
        .unwrap_err();
    match e {
        PluginError::Failed { plugin, call, message } => {
            assert_eq!(
                (plugin.as_str(), call),
                ("hostile", "create-strategy.prepare-for-create")
            );
            assert!(message.starts_with("the plugin returned invalid JSON"), "{message}");
        }
        other => panic!("not a failure: {other:?}"),
    }
    assert!(matches!(parse_object("p", "c", "[1]"), Err(PluginError::Failed { .. })));
    assert!(matches!(parse_cells("p", "c", "{}"), Err(PluginError::Failed { .. })));
    assert_eq!(parse_cells("p", "c", "[1, \"a\"]").unwrap(), [json!(1), json!("a")]);
}

#[test]
fn a_conversion_must_land_in_the_version_asked_for() {
    let wardle = testing::load("wardle");
    let v1alpha1 = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "f"},
        "spec": {"reference": "other", "referenceType": "Flunder"},
    });
    let converted = wardle
        .convert("flunders", &v1alpha1, "v1beta1", "wardle.example.com/v1beta1")
        .unwrap();
    assert_eq!(converted["apiVersion"], "wardle.example.com/v1beta1");
    assert_eq!(converted["spec"]["flunderReference"], "other");
    let e = wardle
        .convert("flunders", &v1alpha1, "v1beta1", "wardle.example.com/v2")
        .unwrap_err();
    assert!(e.to_string().contains("apiVersion is not wardle.example.com/v2"), "{e}");
}

#[test]
fn interfaces_a_component_does_not_export_answer_as_the_contract_says() {
    let hostile = testing::load("hostile");
    let obj = trial("ok", "prepare-for-create");
    // No defaulter and no status strategy: the object unchanged, valid.
    assert_eq!(hostile.default("trials", obj.clone()).unwrap(), obj);
    assert_eq!(hostile.prepare_for_status_update("trials", &obj, &obj).unwrap(), obj);
    assert!(hostile
        .validate_status_update("trials", &obj, &obj)
        .unwrap()
        .errors
        .is_empty());
    // No update strategy: a call that needs it fails, naming the interface.
    let e = hostile.allow_create_on_update("trials").unwrap_err();
    assert!(
        e.to_string()
            .contains("does not export the interface of update-strategy"),
        "{e}"
    );
}

#[test]
fn admission_is_told_the_user_its_groups_uid_and_extra() {
    use apimachinery::plugin::{AdmissionRequest, Operation, Rejection, UserInfo};
    let guarded = testing::load("guarded");
    let sealed = json!({
        "apiVersion": "guarded.example.com/v1",
        "kind": "Vault",
        "metadata": {"name": "v", "namespace": "default"},
        "spec": {"sealed": true},
    });
    let alice = UserInfo::new("alice", ["vault-keepers", "system:authenticated"]);
    let mut bob = UserInfo::new("bob", ["system:authenticated"]);
    bob.uid = "u-2".into();
    bob.extra.insert("scopes".into(), vec!["vaults".into()]);
    let request = |user| AdmissionRequest {
        operation: Operation::Create,
        group: "guarded.example.com",
        version: "v1",
        resource: "vaults",
        subresource: "",
        namespace: Some("default"),
        name: "v",
        object: Some(&sealed),
        old: None,
        dry_run: false,
        user,
    };
    assert!(guarded
        .validating_rules
        .matches("guarded.example.com", "vaults", "", Operation::Create));
    // The plugin fails the call when `host.request-user` does not answer, or answers another user than the request's.
    assert_eq!(
        guarded.validate_admission(&request(&alice)).unwrap(),
        Vec::<String>::new()
    );
    match guarded.validate_admission(&request(&bob)).unwrap_err() {
        PluginError::Rejected(Rejection::Forbidden(reason)) => {
            assert!(
                reason.ends_with(
                    r#"user "bob" is in groups ["system:authenticated"], uid "u-2", extra [("scopes", ["vaults"])]"#
                ),
                "{reason}"
            );
        }
        other => panic!("not forbidden: {other:?}"),
    }
}
