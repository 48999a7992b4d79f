//! Tests of [`super`].

use super::*;
use crate::FieldErrorReason;
use serde_json::json;

/// The errors as `(reason, field, message)` triples, for compact assertions.
fn triples(errs: &[FieldError]) -> Vec<(&'static str, &str, &str)> {
    errs.iter()
        .map(|e| (e.reason.as_str(), e.field.as_str(), e.message.as_str()))
        .collect()
}

fn create(meta: Value, namespaced: bool, rule: NameRule) -> Vec<FieldError> {
    validate_object_meta(&meta, namespaced, rule)
}

const SUBDOMAIN_DETAIL: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \
    '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation \
    is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

#[test]
fn valid_metadata_passes() {
    let meta = json!({
        "name": "my-flunder",
        "namespace": "default",
        "labels": {"app": "web", "example.com/tier": ""},
        "annotations": {"Example.com/Note": "anything goes here: ,=!"},
        "generation": 3,
        "finalizers": ["example.com/cleanup"],
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "1", "controller": true}],
        "managedFields": [{"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1"}]
    });
    assert_eq!(triples(&create(meta, true, NameRule::PathSegment)), vec![]);
    assert_eq!(
        triples(&create(json!({"name": "fischer"}), false, NameRule::Dns1123Subdomain)),
        vec![]
    );
}

#[test]
fn name_is_required_and_checked() {
    assert_eq!(
        triples(&create(json!({"namespace": "default"}), true, NameRule::PathSegment)),
        vec![(
            "FieldValueRequired",
            "metadata.name",
            "Required value: name or generateName is required"
        )]
    );
    assert_eq!(
        triples(&create(Value::Null, false, NameRule::PathSegment)),
        vec![(
            "FieldValueRequired",
            "metadata.name",
            "Required value: name or generateName is required"
        )]
    );
    let expected = format!("Invalid value: \"Bad_Name\": {SUBDOMAIN_DETAIL}");
    assert_eq!(
        triples(&create(json!({"name": "Bad_Name"}), false, NameRule::Dns1123Subdomain)),
        vec![("FieldValueInvalid", "metadata.name", expected.as_str())]
    );
    assert_eq!(
        triples(&create(json!({"name": "Bad_Name"}), false, NameRule::PathSegment)),
        vec![]
    );
    assert_eq!(
        triples(&create(json!({"name": ".."}), false, NameRule::PathSegment)),
        vec![(
            "FieldValueInvalid",
            "metadata.name",
            "Invalid value: \"..\": may not be '..'"
        )]
    );
    assert_eq!(
        triples(&create(json!({"name": "a/b%"}), false, NameRule::PathSegment)),
        vec![
            (
                "FieldValueInvalid",
                "metadata.name",
                "Invalid value: \"a/b%\": may not contain '/'"
            ),
            (
                "FieldValueInvalid",
                "metadata.name",
                "Invalid value: \"a/b%\": may not contain '%'"
            ),
        ]
    );
    assert_eq!(
        triples(&create(json!({"name": "a.b"}), false, NameRule::Dns1123Label)),
        vec![(
            "FieldValueInvalid",
            "metadata.name",
            "Invalid value: \"a.b\": must not contain dots"
        )]
    );
}

#[test]
fn generate_name_is_checked_as_a_prefix() {
    assert_eq!(
        triples(&create(
            json!({"generateName": "foo/", "name": "foo/abcde"}),
            false,
            NameRule::PathSegment
        )),
        vec![
            (
                "FieldValueInvalid",
                "metadata.generateName",
                "Invalid value: \"foo/\": may not contain '/'"
            ),
            (
                "FieldValueInvalid",
                "metadata.name",
                "Invalid value: \"foo/abcde\": may not contain '/'"
            ),
        ]
    );
    assert_eq!(
        triples(&create(
            json!({"generateName": "web-", "name": "web-x2c4v"}),
            false,
            NameRule::Dns1123Label
        )),
        vec![]
    );
    let errs = create(json!({"generateName": "web-"}), false, NameRule::Dns1123Label);
    assert_eq!(
        triples(&errs),
        vec![(
            "FieldValueRequired",
            "metadata.name",
            "Required value: name or generateName is required"
        )],
        "the name must be generated before validation"
    );
}

#[test]
fn namespace_follows_the_scope() {
    assert_eq!(
        triples(&create(json!({"name": "a"}), true, NameRule::PathSegment)),
        vec![("FieldValueRequired", "metadata.namespace", "Required value")]
    );
    let errs = create(json!({"name": "a", "namespace": "Bad.NS"}), true, NameRule::PathSegment);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "metadata.namespace");
    assert!(errs[0]
        .message
        .starts_with("Invalid value: \"Bad.NS\": a lowercase RFC 1123 label must consist of"));
    assert_eq!(
        triples(&create(
            json!({"name": "a", "namespace": "default"}),
            false,
            NameRule::PathSegment
        )),
        vec![(
            "FieldValueForbidden",
            "metadata.namespace",
            "Forbidden: not allowed on this type"
        )]
    );
}

#[test]
fn labels_and_annotations() {
    let errs = create(
        json!({"name": "a", "labels": {"a_": "ok", "good": "bad value", "n": 1}, "annotations": {"a b": "x"}}),
        false,
        NameRule::PathSegment,
    );
    let fields: Vec<&str> = errs.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "metadata.labels",
            "metadata.labels",
            "metadata.labels[n]",
            "metadata.annotations"
        ]
    );
    assert!(errs[0]
        .message
        .starts_with("Invalid value: \"a_\": name part must consist of alphanumeric characters"));
    assert!(errs[1]
        .message
        .starts_with("Invalid value: \"bad value\": a valid label must be an empty string"));
    assert_eq!(errs[2].reason, FieldErrorReason::TypeInvalid);
    assert_eq!(errs[2].message, "Invalid value: 1: must be of type string");
    assert!(errs[3]
        .message
        .starts_with("Invalid value: \"a b\": name part must consist"));

    let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
    let errs = create(
        json!({"name": "a", "annotations": {"k": big}}),
        false,
        NameRule::PathSegment,
    );
    assert_eq!(
        triples(&errs),
        vec![(
            "FieldValueTooLong",
            "metadata.annotations",
            "Too long: may not be more than 262144 bytes"
        )]
    );
    let exact = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES - 1);
    assert_eq!(
        triples(&create(
            json!({"name": "a", "annotations": {"k": exact}}),
            false,
            NameRule::PathSegment
        )),
        vec![]
    );
    assert_eq!(go_to_lower("İSTANBUL/ΟΔΟΣ"), "istanbul/οδοσ");
}

#[test]
fn generation_and_finalizers() {
    let errs = create(
        json!({"name": "a", "generation": -1, "finalizers": ["orphan", "foregroundDeletion", "bad name"]}),
        false,
        NameRule::PathSegment,
    );
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert_eq!(
        (errs[0].field.as_str(), errs[0].message.as_str()),
        (
            "metadata.generation",
            "Invalid value: -1: must be greater than or equal to 0"
        )
    );
    assert!(errs[1]
        .message
        .starts_with("Invalid value: \"bad name\": name part must consist"));
    assert_eq!(
        errs[2].message,
        "Invalid value: [\"orphan\",\"foregroundDeletion\",\"bad name\"]: finalizer orphan and foregroundDeletion cannot \
         be both set"
    );
}

#[test]
fn owner_references() {
    let errs = create(
        json!({"name": "a", "ownerReferences": [
            {"apiVersion": "", "kind": "", "name": "", "uid": ""},
            {"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u"},
            {"apiVersion": "v1", "kind": "Event", "name": "e", "uid": "u", "controller": true},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d<", "uid": "u", "controller": true, "blockOwnerDeletion": false}
        ]}),
        false,
        NameRule::PathSegment,
    );
    assert_eq!(
        triples(&errs),
        vec![
            ("FieldValueRequired", "metadata.ownerReferences[0].apiVersion", "Required value: must not be empty"),
            ("FieldValueRequired", "metadata.ownerReferences[0].kind", "Required value: must not be empty"),
            ("FieldValueRequired", "metadata.ownerReferences[0].name", "Required value: must not be empty"),
            ("FieldValueRequired", "metadata.ownerReferences[0].uid", "Required value: must not be empty"),
            (
                "FieldValueInvalid",
                "metadata.ownerReferences[1].apiVersion",
                "Invalid value: \"a/b/c\": must be <group>/<version> or <version>"
            ),
            (
                "FieldValueInvalid",
                "metadata.ownerReferences[2]",
                "Invalid value: {\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\"uid\":\"u\",\"controller\":true}: \
                 /v1, Kind=Event is disallowed from being an owner"
            ),
            (
                "FieldValueInvalid",
                "metadata.ownerReferences",
                "Invalid value: [{\"apiVersion\":\"\",\"kind\":\"\",\"name\":\"\",\"uid\":\"\"},{\"apiVersion\":\"a/b/c\",\
                 \"kind\":\"K\",\"name\":\"n\",\"uid\":\"u\"},{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"name\":\"e\",\
                 \"uid\":\"u\",\"controller\":true},{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\
                 \"d\\u003c\",\"uid\":\"u\",\"controller\":true,\"blockOwnerDeletion\":false}]: Only one reference can \
                 have Controller set to true. Found \"true\" in references for Event/e and Deployment/d<"
            ),
        ]
    );
    let errs = create(
        json!({"name": "a", "ownerReferences": [{"apiVersion": "apps/", "kind": "K", "name": "n", "uid": "u"}]}),
        false,
        NameRule::PathSegment,
    );
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "metadata.ownerReferences[0].apiVersion");
}

#[test]
fn managed_fields() {
    let errs = create(
        json!({"name": "a", "managedFields": [
            {"manager": "m", "operation": ""},
            {"manager": "bad\u{7}", "operation": "Patch", "fieldsType": "FieldsV2", "subresource": "s".repeat(257)},
            {"manager": "m".repeat(129), "operation": "Update"}
        ]}),
        false,
        NameRule::PathSegment,
    );
    assert_eq!(
        triples(&errs),
        vec![
            (
                "FieldValueRequired",
                "metadata.managedFields[0].operation",
                "Required value: must not be empty"
            ),
            (
                "FieldValueNotSupported",
                "metadata.managedFields[1].operation",
                "Unsupported value: \"Patch\": supported values: \"Apply\", \"Update\""
            ),
            (
                "FieldValueInvalid",
                "metadata.managedFields[1].fieldsType",
                "Invalid value: \"FieldsV2\": must be `FieldsV1`"
            ),
            (
                "FieldValueInvalid",
                "metadata.managedFields[1].manager",
                "Invalid value: \"bad\\a\": invalid character U+0007 (at position 3)"
            ),
            (
                "FieldValueTooLong",
                "metadata.managedFields[1].subresource",
                "Too long: may not be more than 256 bytes"
            ),
            (
                "FieldValueTooLong",
                "metadata.managedFields[2].manager",
                "Too long: may not be more than 128 bytes"
            ),
        ]
    );
}

#[test]
fn wrong_types_are_reported() {
    assert_eq!(
        triples(&create(json!("x"), false, NameRule::PathSegment)),
        vec![(
            "FieldValueTypeInvalid",
            "metadata",
            "Invalid value: \"x\": must be of type object"
        )]
    );
    assert_eq!(
        triples(&create(
            json!({"name": 5, "finalizers": [1], "labels": []}),
            false,
            NameRule::PathSegment
        )),
        vec![
            (
                "FieldValueRequired",
                "metadata.name",
                "Required value: name or generateName is required"
            ),
            (
                "FieldValueTypeInvalid",
                "metadata.name",
                "Invalid value: 5: must be of type string"
            ),
            (
                "FieldValueTypeInvalid",
                "metadata.labels",
                "Invalid value: []: must be of type object"
            ),
            (
                "FieldValueTypeInvalid",
                "metadata.finalizers[0]",
                "Invalid value: 1: must be of type string"
            ),
        ]
    );
}

fn stored() -> Value {
    json!({
        "name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "5", "generation": 2,
        "creationTimestamp": "2024-01-01T00:00:00Z", "finalizers": ["example.com/f"]
    })
}

#[test]
fn unchanged_update_passes() {
    assert_eq!(triples(&validate_object_meta_update(&stored(), &stored())), vec![]);
    let mut bumped = stored();
    bumped["generation"] = json!(3);
    bumped["labels"] = json!({"a": "b"});
    assert_eq!(triples(&validate_object_meta_update(&bumped, &stored())), vec![]);
}

#[test]
fn immutable_fields() {
    let new = json!({
        "name": "b", "namespace": "other", "uid": "u-2", "resourceVersion": "5", "generation": 2,
        "deletionGracePeriodSeconds": 30, "finalizers": ["example.com/f"]
    });
    assert_eq!(
        triples(&validate_object_meta_update(&new, &stored())),
        vec![
            (
                "FieldValueInvalid",
                "metadata.name",
                "Invalid value: \"b\": field is immutable"
            ),
            (
                "FieldValueInvalid",
                "metadata.namespace",
                "Invalid value: \"other\": field is immutable"
            ),
            (
                "FieldValueInvalid",
                "metadata.uid",
                "Invalid value: \"u-2\": field is immutable"
            ),
            (
                "FieldValueInvalid",
                "metadata.creationTimestamp",
                "Invalid value: null: field is immutable"
            ),
            (
                "FieldValueInvalid",
                "metadata.deletionGracePeriodSeconds",
                "Invalid value: 30: field is immutable"
            ),
        ]
    );
}

#[test]
fn resource_version_generation_and_deletion() {
    let mut new = stored();
    new.as_object_mut().map(|m| m.remove("resourceVersion"));
    new["generation"] = json!(1);
    assert_eq!(
        triples(&validate_object_meta_update(&new, &stored())),
        vec![
            (
                "FieldValueInvalid",
                "metadata.resourceVersion",
                "Invalid value: \"\": must be specified for an update"
            ),
            (
                "FieldValueInvalid",
                "metadata.generation",
                "Invalid value: 1: must not be decremented"
            ),
        ]
    );

    let mut old = stored();
    old["deletionTimestamp"] = json!("2024-02-01T00:00:00Z");
    let mut new = old.clone();
    new["finalizers"] = json!(["example.com/f", "z", "b"]);
    assert_eq!(
        triples(&validate_object_meta_update(&new, &old)),
        vec![(
            "FieldValueForbidden",
            "metadata.finalizers",
            "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers \
             []string{\"b\", \"z\"}"
        )]
    );
    new["finalizers"] = json!([]);
    assert_eq!(
        triples(&validate_object_meta_update(&new, &old)),
        vec![],
        "finalizers may be removed"
    );
    new["deletionTimestamp"] = Value::Null;
    assert_eq!(
        triples(&validate_object_meta_update(&new, &old)),
        vec![(
            "FieldValueInvalid",
            "metadata.deletionTimestamp",
            "Invalid value: null: field is immutable"
        )]
    );
}
