//! Defaulting and null pruning, as apiextensions-apiserver's `defaulting.Default` and
//! `PruneNonNullableNullsWithoutDefaults` leave the same objects.

use super::super::{default, prune_nulls};
use super::j;

fn check(apply: fn(&serde_json::Value, &mut serde_json::Value), schema: &str, cases: &[(&str, &str)]) {
    let schema = j(schema);
    for (input, want) in cases {
        let mut obj = j(input);
        apply(&schema, &mut obj);
        assert_eq!(obj, j(want), "from {input}");
    }
}
#[test]
fn defaults() {
    // Missing and non-nullable null fields of existing objects get their default, recursively (in list items and
    // additionalProperties values too); status, absent and without a default, is not created.
    check(
        default,
        r#"{"type": "object", "properties": {"spec": {"type": "object", "default": {}, "properties": {"replicas": {"type": "integer", "default": 1}, "mode": {"type": "string", "default": "auto"}, "nested": {"type": "object", "properties": {"a": {"type": "string", "default": "x"}}}, "created": {"type": "object", "default": {}, "properties": {"b": {"type": "integer", "default": 2}}}, "items": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer", "default": 80}}}}, "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string", "default": "d"}}}}, "nulls": {"type": "string", "default": "n"}, "nullableNull": {"type": "string", "nullable": true, "default": "n"}, "list": {"type": "array", "items": {"type": "string", "default": "i"}}, "mapNull": {"type": "object", "additionalProperties": {"type": "string", "default": "m"}}, "ratio": {"type": "number", "default": 0.5}, "obj": {"type": "object", "default": {"x": [1, {"y": true}]}, "x-kubernetes-preserve-unknown-fields": true}}}, "status": {"type": "object", "properties": {"phase": {"type": "string", "default": "Pending"}}}}}"#,
        &[
            (
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}}"#,
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"created": {"b": 2}, "mode": "auto", "nullableNull": "n", "nulls": "n", "obj": {"x": [1, {"y": true}]}, "ratio": 0.5, "replicas": 1}}"#,
            ),
            (
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {}}"#,
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"created": {"b": 2}, "mode": "auto", "nullableNull": "n", "nulls": "n", "obj": {"x": [1, {"y": true}]}, "ratio": 0.5, "replicas": 1}}"#,
            ),
            (
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"replicas": 3, "nested": {}, "items": [{}, {"port": 8080}, null], "labels": {"a": {}, "b": null}, "nulls": null, "nullableNull": null, "list": [null, "x"], "mapNull": {"k": null, "l": "v"}, "obj": {}}}"#,
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"created": {"b": 2}, "items": [{"port": 80}, {"port": 8080}, null], "labels": {"a": {"v": "d"}, "b": null}, "list": ["i", "x"], "mapNull": {"k": "m", "l": "v"}, "mode": "auto", "nested": {"a": "x"}, "nullableNull": null, "nulls": "n", "obj": {}, "ratio": 0.5, "replicas": 3}}"#,
            ),
            (
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"nested": {"a": null}, "created": null}}"#,
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"created": {"b": 2}, "mode": "auto", "nested": {"a": "x"}, "nullableNull": "n", "nulls": "n", "obj": {"x": [1, {"y": true}]}, "ratio": 0.5, "replicas": 1}}"#,
            ),
            (
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "status": {}}"#,
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"created": {"b": 2}, "mode": "auto", "nullableNull": "n", "nulls": "n", "obj": {"x": [1, {"y": true}]}, "ratio": 0.5, "replicas": 1}, "status": {"phase": "Pending"}}"#,
            ),
            (
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "status": {"phase": null}}"#,
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"created": {"b": 2}, "mode": "auto", "nullableNull": "n", "nulls": "n", "obj": {"x": [1, {"y": true}]}, "ratio": 0.5, "replicas": 1}, "status": {"phase": "Pending"}}"#,
            ),
        ],
    );
}

#[test]
fn prune_nulls_drops_non_nullable_nulls_without_defaults() {
    // Nulls stay where the schema allows them, has a default for them, has no schema for them, or in lists.
    check(
        prune_nulls,
        r#"{"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string", "nullable": true}, "c": {"type": "string", "default": "x"}, "d": {"type": "array", "items": {"type": "string"}}, "e": {"type": "object", "additionalProperties": {"type": "string"}}, "f": {"x-kubernetes-preserve-unknown-fields": true}, "g": {"type": "object", "properties": {"h": {"type": "integer"}}}, "t": {"type": "object", "additionalProperties": true}}}}}"#,
        &[
            (
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"a": null, "b": null, "c": null, "d": [null], "e": {"k": null, "l": "v"}, "f": {"z": null}, "g": {"h": null}, "t": {"u": null}, "unknown": null}}"#,
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"b": null, "c": null, "d": [null], "e": {"l": "v"}, "f": {"z": null}, "g": {}, "t": {"u": null}, "unknown": null}}"#,
            ),
            (
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}, "spec": null}"#,
                r#"{"apiVersion": "g/v1", "kind": "K", "metadata": {"name": "a"}}"#,
            ),
        ],
    );
}
