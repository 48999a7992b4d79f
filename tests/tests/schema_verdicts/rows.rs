//! The table: objects created (and some then updated) on both servers. Each row names what it exercises; values
//! sit on, just inside and just past each bound, and include wrong types and nulls.

use serde_json::{json, Value};

/// One object to create on both servers, and optionally the update to send after it was created.
pub struct Row {
    /// What the row exercises, for the report.
    pub label: String,
    /// The plural of the CRD it is created in (`keywords` or `rules`).
    pub plural: &'static str,
    /// The object's fields besides `apiVersion`, `kind` and `metadata` (usually just `spec`).
    pub fields: Value,
    /// The fields to PUT after a successful create (the verdict compared is then the update's).
    pub update: Option<Value>,
}

fn keyword(label: &str, spec: Value) -> Row {
    Row {
        label: label.to_owned(),
        plural: "keywords",
        fields: json!({ "spec": spec }),
        update: None,
    }
}

fn rule(label: &str, spec: Value) -> Row {
    Row {
        label: label.to_owned(),
        plural: "rules",
        fields: json!({ "spec": spec }),
        update: None,
    }
}

fn rule_update(label: &str, spec: Value, updated: Value) -> Row {
    Row {
        update: Some(json!({ "spec": updated })),
        ..rule(label, spec)
    }
}

fn keyword_update(label: &str, spec: Value, updated: Value) -> Row {
    Row {
        update: Some(json!({ "spec": updated })),
        ..keyword(label, spec)
    }
}

/// A row per value of one field of the `keywords` spec.
fn values(rows: &mut Vec<Row>, field: &str, values: &[Value]) {
    for v in values {
        rows.push(keyword(&format!("{field} = {v}"), json!({ field: v })));
    }
}

/// A row per value of one format.
fn formats(rows: &mut Vec<Row>, format: &str, values: &[Value]) {
    for v in values {
        rows.push(keyword(
            &format!("format {format} = {v}"),
            json!({"formats": { format: v }}),
        ));
    }
}

/// Every row, in a stable order.
pub fn rows() -> Vec<Row> {
    let mut rows = Vec::new();
    structure(&mut rows);
    bounds(&mut rows);
    string_formats(&mut rows);
    collections(&mut rows);
    pruning_and_defaults(&mut rows);
    cel(&mut rows);
    rows
}

fn structure(rows: &mut Vec<Row>) {
    rows.push(keyword("empty spec", json!({})));
    rows.push(Row {
        label: "no spec at all".into(),
        plural: "keywords",
        fields: json!({}),
        update: None,
    });
    rows.push(Row {
        label: "spec is a string".into(),
        plural: "keywords",
        fields: json!({"spec": "x"}),
        update: None,
    });
    rows.push(Row {
        label: "spec is null".into(),
        plural: "keywords",
        fields: json!({"spec": null}),
        update: None,
    });
    values(
        rows,
        "str",
        &[
            json!("s"),
            json!(""),
            json!(1),
            json!(true),
            json!(null),
            json!({}),
            json!([]),
        ],
    );
    values(
        rows,
        "int",
        &[
            json!(1),
            json!(-7),
            json!(1.5),
            json!(2.0),
            json!("1"),
            json!(null),
            json!(9_007_199_254_740_993_i64),
        ],
    );
    values(
        rows,
        "num",
        &[
            json!(1),
            json!(1.25),
            json!(-0.0),
            json!("1.0"),
            json!(false),
            json!(null),
        ],
    );
    values(rows, "bool", &[json!(true), json!("true"), json!(0), json!(null)]);
    values(
        rows,
        "obj",
        &[
            json!({"a": "x"}),
            json!({"a": 1}),
            json!([]),
            json!("o"),
            json!(null),
            json!({"a": null}),
        ],
    );
    values(
        rows,
        "arr",
        &[
            json!(["a"]),
            json!([]),
            json!([1, "b", null]),
            json!({"0": "a"}),
            json!("a"),
            json!(null),
        ],
    );
    values(
        rows,
        "req",
        &[
            json!({"a": "x", "b": 1}),
            json!({"a": "x"}),
            json!({}),
            json!({"a": null, "b": null}),
            json!({"c": "z"}),
        ],
    );
    values(rows, "nullStr", &[json!(null), json!("s"), json!(1)]);
    values(rows, "nullObj", &[json!(null), json!({"a": "x"}), json!({"a": null})]);
    values(rows, "nullArr", &[json!(null), json!([1]), json!([null])]);
    values(rows, "nullItems", &[json!(["a", null]), json!([null]), json!([1])]);
    values(
        rows,
        "ios",
        &[
            json!(1),
            json!("1"),
            json!("50%"),
            json!(1.5),
            json!(true),
            json!(null),
            json!({}),
        ],
    );
    values(
        rows,
        "iosBounded",
        &[json!(0), json!(-1), json!("10%"), json!("10"), json!("%"), json!(2.5)],
    );
    values(
        rows,
        "embedded",
        &[
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": {"a": "b"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            json!({"kind": "ConfigMap"}),
            json!({"apiVersion": "v1"}),
            json!({}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Bad_Name"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "unknown": 1}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "labels": {"a": "b"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a/b", "labels": {"-bad": "x"}}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "Not_A_Label", "name": ""}}),
            json!({"apiVersion": "a/b/c", "kind": "Config_Map"}),
            json!({"apiVersion": 1, "kind": "ConfigMap"}),
            json!({"apiVersion": "", "kind": ""}),
        ],
    );
    values(
        rows,
        "embeddedTyped",
        &[
            json!({"apiVersion": "v1", "kind": "K", "spec": {"x": 1, "y": 2}}),
            json!({"apiVersion": "v1", "kind": "K", "spec": {"x": "1"}, "other": 1}),
            json!({"spec": {"x": 1}}),
        ],
    );
    values(
        rows,
        "oneOf",
        &[
            json!({"a": "x"}),
            json!({"b": "y"}),
            json!({"a": "x", "b": "y"}),
            json!({}),
        ],
    );
    values(rows, "anyOf", &[json!("longer"), json!("x"), json!("ab")]);
    values(rows, "allOf", &[json!(0), json!(100), json!(101), json!(-1)]);
    values(rows, "not", &[json!("allowed"), json!("forbidden")]);
}

fn bounds(rows: &mut Vec<Row>) {
    values(
        rows,
        "range",
        &[
            json!(1),
            json!(10),
            json!(0),
            json!(11),
            json!(5),
            json!(-2_147_483_649_i64),
        ],
    );
    values(
        rows,
        "exRange",
        &[json!(1), json!(2), json!(9), json!(10), json!(0), json!(11)],
    );
    values(
        rows,
        "numRange",
        &[json!(0.5), json!(2.5), json!(0.49), json!(2.51), json!(1), json!(3)],
    );
    values(
        rows,
        "numExRange",
        &[json!(-1.5), json!(1.5), json!(-1.49), json!(1.49), json!(0), json!(2)],
    );
    values(rows, "mult", &[json!(0), json!(3), json!(-9), json!(4), json!(1)]);
    values(rows, "multNum", &[json!(1.5), json!(2), json!(0.25), json!(1.1)]);
    values(
        rows,
        "len",
        &[
            json!("ab"),
            json!("abcd"),
            json!("a"),
            json!("abcde"),
            json!(""),
            json!("héé"),
            json!("日本語の"),
        ],
    );
    values(
        rows,
        "pattern",
        &[
            json!("abc"),
            json!("abc123"),
            json!("ABC"),
            json!("1abc"),
            json!(""),
            json!("abc-1"),
        ],
    );
    values(rows, "unanchored", &[json!("abba"), json!("aaa"), json!("b")]);
    values(
        rows,
        "enumStr",
        &[json!("a"), json!("c d"), json!("e"), json!(""), json!(1), json!(null)],
    );
    values(rows, "enumInt", &[json!(1), json!(3), json!(4), json!("1"), json!(1.0)]);
    values(rows, "enumNullable", &[json!("x"), json!(null), json!("z")]);
}

fn string_formats(rows: &mut Vec<Row>) {
    formats(
        rows,
        "bsonobjectid",
        &[json!("507f1f77bcf86cd799439011"), json!("507f1f77bcf86cd79943901z")],
    );
    formats(
        rows,
        "uri",
        &[
            json!("https://example.com/a?b=c"),
            json!("/relative"),
            json!("::bad"),
            json!("http://[::1"),
        ],
    );
    formats(
        rows,
        "email",
        &[
            json!("a@example.com"),
            json!("A B <a@example.com>"),
            json!("not-an-email"),
            json!("a@"),
        ],
    );
    formats(
        rows,
        "hostname",
        &[
            json!("example.com"),
            json!("a-b.c"),
            json!("-bad.com"),
            json!("under_score.com"),
            json!("x".repeat(64)),
        ],
    );
    formats(
        rows,
        "ipv4",
        &[json!("10.0.0.1"), json!("256.0.0.1"), json!("010.0.0.1"), json!("::1")],
    );
    formats(
        rows,
        "ipv6",
        &[
            json!("::1"),
            json!("fe80::1%eth0"),
            json!("1.2.3.4"),
            json!("::ffff:1.2.3.4"),
            json!("gg::1"),
        ],
    );
    formats(
        rows,
        "cidr",
        &[
            json!("10.0.0.0/8"),
            json!("10.0.0.1/33"),
            json!("::/0"),
            json!("10.0.0.1"),
        ],
    );
    formats(
        rows,
        "mac",
        &[
            json!("01:23:45:67:89:ab"),
            json!("01-23-45-67-89-AB"),
            json!("0123.4567.89ab"),
            json!("01:23:45"),
        ],
    );
    formats(
        rows,
        "uuid",
        &[
            json!("123e4567-e89b-12d3-a456-426614174000"),
            json!("123E4567E89B12D3A456426614174000"),
            json!("123e4567"),
        ],
    );
    formats(
        rows,
        "uuid3",
        &[
            json!("a3bb189e-8bf9-3888-9912-ace4e6543002"),
            json!("a3bb189e-8bf9-4888-9912-ace4e6543002"),
        ],
    );
    formats(
        rows,
        "uuid4",
        &[
            json!("a3bb189e-8bf9-4888-9912-ace4e6543002"),
            json!("a3bb189e-8bf9-4888-c912-ace4e6543002"),
        ],
    );
    formats(
        rows,
        "uuid5",
        &[
            json!("a3bb189e-8bf9-5888-9912-ace4e6543002"),
            json!("a3bb189e-8bf9-5888-7912-ace4e6543002"),
        ],
    );
    formats(
        rows,
        "isbn",
        &[
            json!("978-3-16-148410-0"),
            json!("0-306-40615-2"),
            json!("978-3-16-148410-1"),
        ],
    );
    formats(rows, "isbn10", &[json!("0306406152"), json!("0306406153")]);
    formats(rows, "isbn13", &[json!("9783161484100"), json!("0306406152")]);
    formats(
        rows,
        "creditcard",
        &[json!("4111111111111111"), json!("4111111111111112")],
    );
    formats(
        rows,
        "ssn",
        &[json!("123-45-6789"), json!("123456789"), json!("123-45-678")],
    );
    formats(
        rows,
        "hexcolor",
        &[json!("#fff"), json!("#A1B2C3"), json!("fff"), json!("#ggg")],
    );
    formats(
        rows,
        "rgbcolor",
        &[
            json!("rgb(0,0,0)"),
            json!("rgb(255, 255, 255)"),
            json!("rgb(256,0,0)"),
            json!("rgb(1,2)"),
        ],
    );
    formats(
        rows,
        "byte",
        &[json!("aGVsbG8="), json!("aGVsbG8"), json!("!!!"), json!("")],
    );
    formats(rows, "password", &[json!("anything goes")]);
    formats(
        rows,
        "date",
        &[
            json!("2024-02-29"),
            json!("2023-02-29"),
            json!("2024-1-1"),
            json!("2024-01-01T00:00:00Z"),
        ],
    );
    formats(
        rows,
        "duration",
        &[
            json!("1h2m3s"),
            json!("3 days"),
            json!("1d"),
            json!("-5m"),
            json!("1.5h"),
            json!("5"),
        ],
    );
    for format in ["datetime", "date-time"] {
        formats(
            rows,
            format,
            &[
                json!("2024-01-01T00:00:00Z"),
                json!("2024-01-01T00:00:00.123+02:00"),
                json!("2024-01-01 00:00:00Z"),
                json!("2024-01-01T00:00:00"),
                json!("2024-13-01T00:00:00Z"),
            ],
        );
    }
    formats(
        rows,
        "k8s-short-name",
        &[json!("abc-1"), json!("Abc"), json!("a.b"), json!("x".repeat(64))],
    );
    formats(
        rows,
        "k8s-long-name",
        &[json!("a.b-c"), json!("a..b"), json!("A.b"), json!("x".repeat(254))],
    );
    formats(rows, "no-such-format", &[json!("anything")]);
    formats(
        rows,
        "int32",
        &[
            json!(2_147_483_647),
            json!(2_147_483_648_i64),
            json!(-2_147_483_649_i64),
        ],
    );
    formats(rows, "int64", &[json!(9_223_372_036_854_775_807_i64), json!(1)]);
    formats(rows, "float", &[json!(1.5), json!(3.5e38), json!(1e39)]);
    formats(rows, "double", &[json!(1e308), json!(-1.5)]);
    formats(rows, "intAsDate", &[json!(20240101)]);
}

fn collections(rows: &mut Vec<Row>) {
    values(
        rows,
        "items",
        &[
            json!([1]),
            json!([1, 2, 3]),
            json!([]),
            json!([1, 2, 3, 4]),
            json!([6]),
            json!([1, 6, 7, 8]),
        ],
    );
    values(
        rows,
        "props",
        &[
            json!({"a": "1"}),
            json!({"a": "1", "b": "2"}),
            json!({}),
            json!({"a": "1", "b": "2", "c": "3"}),
            json!({"a": 1}),
        ],
    );
    values(
        rows,
        "set",
        &[
            json!(["a", "b"]),
            json!(["a", "a"]),
            json!(["a", "b", "a", "b"]),
            json!([]),
        ],
    );
    values(rows, "intSet", &[json!([1, 2]), json!([1, 1]), json!([1, 1.0])]);
    values(
        rows,
        "map",
        &[
            json!([{"name": "a", "port": 1}, {"name": "a", "port": 2}]),
            json!([{"name": "a", "port": 1}, {"name": "a", "port": 1, "value": "x"}]),
            json!([{"name": "a"}, {"name": "a", "port": 80}]),
            json!([{"name": "a"}, {"name": "b"}]),
            json!([{"port": 1}]),
            json!([{"name": "a", "port": "80"}]),
        ],
    );
    values(rows, "atomic", &[json!(["a", "a"])]);
    values(
        rows,
        "addl",
        &[
            json!({"a": 1, "b": 0}),
            json!({"a": -1}),
            json!({"a": "x", "b": -2}),
            json!({"a": null}),
        ],
    );
    values(
        rows,
        "addlObj",
        &[json!({"k": {}}), json!({"k": {"a": "x", "z": 1}}), json!({"k": null})],
    );
}

fn pruning_and_defaults(rows: &mut Vec<Row>) {
    rows.push(keyword("unknown spec field", json!({"unknown": 1, "str": "s"})));
    rows.push(Row {
        label: "unknown top-level field".into(),
        plural: "keywords",
        fields: json!({"spec": {}, "status": {"a": 1}, "extra": true}),
        update: None,
    });
    values(
        rows,
        "preserve",
        &[json!({"anything": {"goes": [1, null]}}), json!({"n": null}), json!("x")],
    );
    values(
        rows,
        "preserveProps",
        &[
            json!({"a": 1, "b": 2}),
            json!({"a": "x"}),
            json!({"inner": {"b": "y", "c": 3}}),
        ],
    );
    values(rows, "nested", &[json!({"inner": {"keep": "k", "drop": 1}, "drop": 2})]);
    values(rows, "listOfObj", &[json!([{"keep": "k", "drop": 1}, {}])]);
    values(
        rows,
        "defaults",
        &[
            json!({}),
            json!(null),
            json!({"a": null, "b": null, "nullDefault": null}),
            json!({"a": "given", "obj": {}}),
            json!({"obj": null}),
            json!({"list": [{}, {"e": "given"}, {"e": null}]}),
            json!({"objDefault": {}}),
            json!({"b": "wrong"}),
        ],
    );
    rows.push(keyword("map defaults its key", json!({"map": [{"name": "a"}]})));
    rows.push(keyword_update(
        "update to an invalid value",
        json!({"range": 5}),
        json!({"range": 50}),
    ));
    rows.push(keyword_update(
        "update adds a field that fails and one that prunes",
        json!({"str": "a"}),
        json!({"str": "a", "len": "x", "unknown": 1}),
    ));
    rows.push(keyword_update(
        "update removes a defaulted field",
        json!({"defaults": {"a": "given"}}),
        json!({}),
    ));
}

fn cel(rows: &mut Vec<Row>) {
    let r = |label: &str, spec: Value| rule(label, spec);
    rows.push(r("cel: nothing set", json!({})));
    rows.push(r("cel: min <= max", json!({"min": 1, "max": 2})));
    rows.push(r("cel: min > max (message)", json!({"min": 3, "max": 2})));
    rows.push(r("cel: max 100 (messageExpression)", json!({"max": 100})));
    rows.push(r("cel: max 99", json!({"max": 99})));
    rows.push(r("cel: max 2000 (messageExpression)", json!({"max": 2000})));
    rows.push(r("cel: min 13 (root rule)", json!({"min": 13})));
    rows.push(r("cel: fieldPath and reason Forbidden", json!({"name": "forbidden"})));
    rows.push(r("cel: reason Required, no message", json!({"name": "required"})));
    rows.push(r("cel: reason Duplicate", json!({"tags": ["a", "b", "c", "d"]})));
    rows.push(r("cel: division by zero", json!({"divisor": 0})));
    rows.push(r("cel: division ok", json!({"divisor": 2})));
    rows.push(r("cel: rule on a defaulted field", json!({"defaulted": "maybe"})));
    rows.push(r(
        "cel: several rules fail",
        json!({"min": 200, "max": 150, "name": "forbidden"}),
    ));
    rows.push(r("cel: list all()", json!({"tags": ["short", "toolong"]})));
    rows.push(r("cel: list index", json!({"tags": ["bad"]})));
    rows.push(r("cel: map keys", json!({"labels": {"la": "x", "b": "y"}})));
    rows.push(r(
        "cel: list-map item messageExpression",
        json!({"entries": [{"key": "k", "value": -1}]}),
    ));
    rows.push(r("cel: matches()", json!({"email": "a@b.com"})));
    rows.push(r("cel: matches() fails", json!({"email": "a@b.org"})));
    rows.push(r("cel: isURL", json!({"url": "https://example.com/x"})));
    rows.push(r("cel: isURL fails", json!({"url": "not a url"})));
    rows.push(r("cel: quantity", json!({"quantity": "512Mi"})));
    rows.push(r("cel: quantity too big", json!({"quantity": "2Gi"})));
    rows.push(r("cel: not a quantity", json!({"quantity": "lots"})));
    for text in [
        "1",
        "1000m",
        "1Ki",
        "-1.5",
        "0.5Ki",
        "1e3",
        "1.",
        "8Ei",
        "+.5",
        "0.1n",
        "12345678901Gi",
        "1E",
        "10E",
    ] {
        rows.push(r(
            &format!("cel: quantity facts of {text}"),
            json!({"quantityFacts": text}),
        ));
    }
    rows.push(r("cel: number rule", json!({"ratio": 0.5})));
    rows.push(r("cel: number rule with an integer", json!({"ratio": 1})));
    rows.push(r("cel: number rule fails", json!({"ratio": 1.5})));
    rows.push(r("cel: int-or-string as int", json!({"ios": 3})));
    rows.push(r("cel: int-or-string as int fails", json!({"ios": 30})));
    rows.push(r("cel: int-or-string as string", json!({"ios": "50%"})));
    rows.push(r("cel: int-or-string as string fails", json!({"ios": "50"})));
    rows.push(r("cel: fieldPath in an object", json!({"obj": {"a": 1}})));
    rows.push(r("cel: optionalOldSelf on create", json!({"optionalOld": "new"})));
    rows.push(r(
        "cel: schema error and rule error",
        json!({"name": "x".repeat(21), "min": 5, "max": 1}),
    ));
    rows.push(rule_update(
        "cel: immutable kept",
        json!({"immutable": "a"}),
        json!({"immutable": "a"}),
    ));
    rows.push(rule_update(
        "cel: immutable changed",
        json!({"immutable": "a"}),
        json!({"immutable": "b"}),
    ));
    rows.push(rule_update(
        "cel: immutable added",
        json!({}),
        json!({"immutable": "b"}),
    ));
    rows.push(rule_update(
        "cel: immutable removed",
        json!({"immutable": "a"}),
        json!({}),
    ));
    rows.push(rule_update(
        "cel: replicas grow",
        json!({"replicas": 1}),
        json!({"replicas": 2}),
    ));
    rows.push(rule_update(
        "cel: replicas shrink",
        json!({"replicas": 2}),
        json!({"replicas": 1}),
    ));
    rows.push(rule_update(
        "cel: optionalOldSelf on update",
        json!({"optionalOld": "locked"}),
        json!({"optionalOld": "a"}),
    ));
    rows.push(rule_update(
        "cel: optionalOldSelf on update ok",
        json!({"optionalOld": "a"}),
        json!({"optionalOld": "new"}),
    ));
    rows.push(rule_update(
        "cel: list-map item transition",
        json!({"entries": [{"key": "a", "value": 1}, {"key": "b", "value": 2}]}),
        json!({"entries": [{"key": "b", "value": 3}, {"key": "a", "value": 1}, {"key": "c", "value": 5}]}),
    ));
    rows.push(rule_update(
        "cel: update with a new violation",
        json!({"min": 1}),
        json!({"min": 1, "max": 0}),
    ));
}

/// Objects valid under the first `Keyword` schema, updated after it was tightened (see `crds::tighten`): kube
/// ratchets (an update may keep a value the new schema refuses, as long as it does not change it).
pub fn ratcheting_rows() -> Vec<Row> {
    let row = |label: &str, spec: Value, updated: Value| Row {
        label: format!("ratcheting: {label}"),
        ..keyword_update("", spec, updated)
    };
    vec![
        row(
            "unchanged invalid value, another field changes",
            json!({"range": 8, "str": "a"}),
            json!({"range": 8, "str": "b"}),
        ),
        row(
            "invalid value changed to another invalid one",
            json!({"range": 8}),
            json!({"range": 9}),
        ),
        row(
            "invalid value changed to a valid one",
            json!({"range": 8}),
            json!({"range": 4}),
        ),
        row(
            "unchanged too long string",
            json!({"len": "abcd"}),
            json!({"len": "abcd", "int": 1}),
        ),
        row(
            "unchanged unsupported enum value",
            json!({"enumStr": "c d", "range": 1}),
            json!({"enumStr": "c d", "range": 2}),
        ),
        row(
            "unchanged object, nothing else",
            json!({"range": 8, "len": "abcd"}),
            json!({"range": 8, "len": "abcd"}),
        ),
        row(
            "a new invalid value beside an unchanged one",
            json!({"range": 8}),
            json!({"range": 8, "len": "abcd"}),
        ),
    ]
}
