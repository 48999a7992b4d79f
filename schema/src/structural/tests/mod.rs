//! Table tests, one table per keyword, against kube-apiserver 1.37's answers.
//!
//! Every expected cause, format verdict, pattern match and defaulted object in these tables is what kube's own code
//! gives for the same input. They were produced by running, on these inputs, apiextensions-apiserver v0.37.2
//! (`validation.ValidateCustomResource` with the kube-openapi it vendors, `objectmeta.Validate`,
//! `listtype.ValidateListSetsAndMaps`, `defaulting.Default` and `PruneNonNullableNullsWithoutDefaults`), kube-openapi's
//! `strfmt.Default.Validates` and Go's `regexp`, then copied here unchanged. The inputs are JSON text, decoded as a
//! request body is.
//!
//! kube reports the causes of different properties in Go's random map order, so the tables compare causes as sorted
//! lists; [`causes_come_in_schema_order`] checks the order this implementation gives.

mod defaults;
mod formats;
mod keywords;

use serde_json::{json, Value};

use super::*;

/// Parses JSON text.
fn j(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("bad JSON {text}: {e}"))
}

/// An expected cause: field, reason and message.
type Cause<'a> = (&'a str, &'a str, &'a str);

fn causes(errs: &[FieldError]) -> Vec<(String, String, String)> {
    errs.iter()
        .map(|e| (e.field.clone(), e.reason.as_str().to_string(), e.message.clone()))
        .collect()
}

/// A resource whose `spec` has the given schema and value, with the host's fields set.
fn resource(spec: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "a"}, "spec": spec})
}

fn root_schema(spec_schema: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec_schema}})
}

/// Validates each `spec` (JSON text) against the `spec` schema (JSON text) and compares the causes, sorted.
fn check(spec_schema: &str, cases: &[(&str, &[Cause])]) {
    let schema = root_schema(j(spec_schema));
    for (spec, want) in cases {
        let mut got = causes(&validate(&schema, &resource(j(spec))));
        got.sort();
        let mut want: Vec<(String, String, String)> = want
            .iter()
            .map(|(f, r, m)| (f.to_string(), r.to_string(), m.to_string()))
            .collect();
        want.sort();
        assert_eq!(got, want, "spec {spec}");
    }
}

#[test]
fn causes_come_in_schema_order() {
    // kube-openapi's order for one value (type, then number checks), properties in the schema's order, then the
    // list-type checks.
    let schema = root_schema(j(r#"{"type": "object", "required": ["z"], "properties": {
        "b": {"type": "integer", "maximum": 1},
        "a": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "z": {"type": "string"}}}"#));
    let got = causes(&validate(&schema, &resource(j(r#"{"a": ["x", "x"], "b": 2.5}"#))));
    let want = [
        (
            "spec.b",
            "FieldValueTypeInvalid",
            r#"Invalid value: "number": spec.b in body must be of type integer: "number""#,
        ),
        (
            "<nil>",
            "FieldValueInvalid",
            r#"Invalid value: "": Checked value must be of type integer (default format) in spec.b"#,
        ),
        (
            "spec.b",
            "FieldValueInvalid",
            "Invalid value: 2.5: spec.b in body should be less than or equal to 1",
        ),
        ("spec.z", "FieldValueRequired", "Required value"),
        ("spec.a[1]", "FieldValueDuplicate", r#"Duplicate value: "x""#),
    ];
    let want: Vec<(String, String, String)> = want
        .iter()
        .map(|(f, r, m)| (f.to_string(), r.to_string(), m.to_string()))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn host_fields_are_left_out() {
    // The plugin's schema knows nothing of apiVersion, kind and metadata: they are neither validated nor counted.
    let schema = j(r#"{"type": "object", "additionalProperties": false, "maxProperties": 1,
        "properties": {"spec": {"type": "object"}, "metadata": {"type": "string"}}}"#);
    assert_eq!(validate(&schema, &resource(json!({}))), vec![]);
    let with_extra = json!({"apiVersion": "v1", "kind": "K", "metadata": {}, "spec": {}, "extra": 1});
    assert_eq!(
        causes(&validate(&schema, &with_extra)),
        vec![
            (
                "<nil>".into(),
                "FieldValueTooMany".into(),
                "Too many: 2: must have at most 1 item".into()
            ),
            (
                "<nil>".into(),
                "FieldValueInvalid".into(),
                r#"Invalid value: "extra": .extra in body is a forbidden property"#.into()
            ),
        ]
    );
    // Defaulting and null pruning leave them alone too.
    let schema = j(
        r#"{"type": "object", "properties": {"metadata": {"type": "object", "default": {"x": 1}},
        "kind": {"type": "string"}, "spec": {"type": "object", "default": {}}}}"#,
    );
    let mut obj = json!({"kind": null, "apiVersion": "v1"});
    prune_nulls(&schema, &mut obj);
    default(&schema, &mut obj);
    assert_eq!(obj, json!({"kind": null, "apiVersion": "v1", "spec": {}}));
}

#[test]
fn required_at_the_root() {
    // A root property's path starts with "." in kube-openapi, which kube trims.
    let schema = j(r#"{"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}"#);
    assert_eq!(
        causes(&validate(
            &schema,
            &json!({"apiVersion": "v1", "kind": "K", "metadata": {}})
        )),
        vec![("spec".into(), "FieldValueRequired".into(), "Required value".into())]
    );
}

#[test]
fn pipeline_prunes_non_nullable_nulls_before_validating() {
    // As kube decodes then validates: a null where the schema allows none is dropped (and so is reported only if the
    // field is required), or defaulted when the schema has a default; a null in a list stays and fails.
    let schema = root_schema(j(r#"{"type": "object", "required": ["name"], "properties": {
        "name": {"type": "string"}, "size": {"type": "integer"}, "mode": {"type": "string", "default": "auto"},
        "list": {"type": "array", "items": {"type": "string"}}}}"#));
    let mut obj = resource(j(r#"{"name": null, "size": null, "mode": null, "list": ["a", null]}"#));
    prune_nulls(&schema, &mut obj);
    default(&schema, &mut obj);
    assert_eq!(obj["spec"], j(r#"{"mode": "auto", "list": ["a", null]}"#));
    assert_eq!(
        causes(&validate(&schema, &obj)),
        vec![
            (
                "spec.list[1]".into(),
                "FieldValueTypeInvalid".into(),
                r#"Invalid value: "null": spec.list[1] in body must be of type string: "null""#.into()
            ),
            ("spec.name".into(), "FieldValueRequired".into(), "Required value".into()),
        ]
    );
}

#[test]
fn invalid_pattern() {
    // kube answers `Invalid value: "x": spec.p in body should match '(, but pattern is invalid: error parsing regexp:
    // missing closing ): `(`'`: the same but for the reason after "error parsing regexp:", which is the regex crate's
    // (Go's reasons are not reproduced).
    let schema = root_schema(j(
        r#"{"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}}"#,
    ));
    assert_eq!(
        causes(&validate(&schema, &resource(json!({"p": "x"})))),
        vec![(
            "spec.p".into(),
            "FieldValueInvalid".into(),
            r#"Invalid value: "x": spec.p in body should match '(, but pattern is invalid: error parsing regexp: unclosed group'"#.into()
        )]
    );
}

#[test]
fn go_renderings() {
    // Go's %v of float64, strconv.FormatFloat('f', -1) and encoding/json, as printed by Go 1.26.
    for (f, v, fixed) in [
        (1e6, "1e+06", "1000000"),
        (123456789.0, "1.23456789e+08", "123456789"),
        (1e20, "1e+20", "100000000000000000000"),
        (1e21, "1e+21", "1000000000000000000000"),
        (0.0001, "0.0001", "0.0001"),
        (0.00001, "1e-05", "0.00001"),
        (1.5, "1.5", "1.5"),
        (100000.0, "100000", "100000"),
        (2.5e-5, "2.5e-05", "0.000025"),
        (1e100, "1e+100", &format!("1{}", "0".repeat(100))),
        (-3e7, "-3e+07", "-30000000"),
        (-0.0, "-0", "-0"),
        (
            1.7976931348623157e308,
            "1.7976931348623157e+308",
            &format!("17976931348623157{}", "0".repeat(292)),
        ),
    ] {
        assert_eq!(gofmt::float_v(f), v, "%v of {f}");
        assert_eq!(gofmt::float_f(f), fixed, "FormatFloat of {f}");
    }
    for (value, go) in [
        (json!(1e21), "1e+21"),
        (json!(1e-7), "1e-7"),
        (json!(0.000025), "0.000025"),
        (json!(123456789.0), "123456789"),
        (
            json!({"b": [1, 2.5], "a": "<&>\u{8}\u{c}\n\u{1}\u{2028}é"}),
            r#"{"a":"\u003c\u0026\u003e\b\f\n\u0001\u2028é","b":[1,2.5]}"#,
        ),
    ] {
        assert_eq!(gofmt::json(&value), go, "json of {value}");
    }
}

#[test]
fn integral_floats_are_written_as_integers_like_go_writes_float64() {
    let mut obj = serde_json::json!({"a": 2.0, "b": [-0.0, 1.5, 1e300, 3], "c": {"d": 1e19}});
    super::canonical_numbers(&mut obj);
    assert_eq!(
        obj.to_string(),
        r#"{"a":2,"b":[0,1.5,1e+300,3],"c":{"d":10000000000000000000}}"#
    );
}

#[test]
fn updates_ratchet_unchanged_values_as_kube_does() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "range": {"type": "integer", "maximum": 5},
        "len": {"type": "string", "maxLength": 3},
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}}}}});
    let old = json!({"metadata": {"resourceVersion": "1"}, "spec": {"range": 8, "set": ["a", "a"]}});
    let fields = |errs: Vec<FieldError>| errs.into_iter().map(|e| e.field).collect::<Vec<_>>();
    // The unchanged invalid value is forgiven, a new one is not; duplicates the stored object had are forgiven.
    let new =
        json!({"metadata": {"resourceVersion": "2"}, "spec": {"range": 8, "len": "abcd", "set": ["a", "a", "b"]}});
    assert_eq!(fields(validate_update(&schema, &new, Some(&old))), ["spec.len"]);
    // A changed value is checked; without an old object everything is.
    let changed = json!({"metadata": {}, "spec": {"range": 9, "set": ["a", "a"]}});
    assert_eq!(fields(validate_update(&schema, &changed, Some(&old))), ["spec.range"]);
    assert_eq!(fields(validate(&schema, &changed)), ["spec.range", "spec.set[1]"]);
}
