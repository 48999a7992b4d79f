//! The CustomResourceDefinitions both servers serve: `Keyword` exercises the structural schema's keywords (types,
//! bounds, formats, enums, list types, pruning, defaults, embedded resources, combinators), `Rule` the CEL
//! `x-kubernetes-validations`.

use serde_json::{json, Value};

/// The API group of a CRD: one each, as wasm-apiserver serves a group from one file only.
pub fn group(plural: &str) -> String {
    format!("{plural}.verdicts.example.com")
}

/// A cluster-scoped CRD `<plural>.<plural>.verdicts.example.com` with one version, `v1`, whose root schema has
/// `spec`.
fn crd(plural: &str, kind: &str, spec: Value, root_rules: Value) -> Value {
    let group = group(plural);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": "Cluster",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "x-kubernetes-validations": root_rules,
                    "properties": {"spec": spec}
                }}
            }]
        }
    })
}

fn string_format(format: &str) -> Value {
    json!({"type": "string", "format": format})
}

/// The structural keywords.
pub fn keywords() -> Value {
    let mut formats = serde_json::Map::new();
    for format in [
        "bsonobjectid",
        "uri",
        "email",
        "hostname",
        "ipv4",
        "ipv6",
        "cidr",
        "mac",
        "uuid",
        "uuid3",
        "uuid4",
        "uuid5",
        "isbn",
        "isbn10",
        "isbn13",
        "creditcard",
        "ssn",
        "hexcolor",
        "rgbcolor",
        "byte",
        "password",
        "date",
        "duration",
        "datetime",
        "date-time",
        "k8s-short-name",
        "k8s-long-name",
        "no-such-format",
    ] {
        formats.insert(format.to_owned(), string_format(format));
    }
    formats.insert("int32".into(), json!({"type": "integer", "format": "int32"}));
    formats.insert("int64".into(), json!({"type": "integer", "format": "int64"}));
    formats.insert("float".into(), json!({"type": "number", "format": "float"}));
    formats.insert("double".into(), json!({"type": "number", "format": "double"}));
    formats.insert("intAsDate".into(), json!({"type": "integer", "format": "date"}));
    let spec = json!({
        "type": "object",
        "properties": {
            // Types.
            "str": {"type": "string"},
            "int": {"type": "integer"},
            "num": {"type": "number"},
            "bool": {"type": "boolean"},
            "obj": {"type": "object", "properties": {"a": {"type": "string"}}},
            "arr": {"type": "array", "items": {"type": "string"}},
            // Required and nullable.
            "req": {"type": "object", "required": ["a", "b"],
                "properties": {"a": {"type": "string"}, "b": {"type": "integer"}, "c": {"type": "string"}}},
            "nullStr": {"type": "string", "nullable": true},
            "nullObj": {"type": "object", "nullable": true, "properties": {"a": {"type": "string"}}},
            "nullArr": {"type": "array", "nullable": true, "items": {"type": "integer"}},
            "nullItems": {"type": "array", "items": {"type": "string", "nullable": true}},
            // Numeric bounds.
            "range": {"type": "integer", "minimum": 1, "maximum": 10},
            "exRange": {"type": "integer", "minimum": 1, "maximum": 10,
                "exclusiveMinimum": true, "exclusiveMaximum": true},
            "numRange": {"type": "number", "minimum": 0.5, "maximum": 2.5},
            "numExRange": {"type": "number", "minimum": -1.5, "maximum": 1.5,
                "exclusiveMinimum": true, "exclusiveMaximum": true},
            "mult": {"type": "integer", "multipleOf": 3},
            "multNum": {"type": "number", "multipleOf": 0.5},
            // Strings.
            "len": {"type": "string", "minLength": 2, "maxLength": 4},
            "pattern": {"type": "string", "pattern": "^[a-z]+[0-9]*$"},
            "unanchored": {"type": "string", "pattern": "b+"},
            "formats": {"type": "object", "properties": Value::Object(formats)},
            // Enums.
            "enumStr": {"type": "string", "enum": ["a", "b", "c d"]},
            "enumInt": {"type": "integer", "enum": [1, 2, 3]},
            "enumNullable": {"type": "string", "nullable": true, "enum": ["x", "y"]},
            // Arrays and objects.
            "items": {"type": "array", "minItems": 1, "maxItems": 3, "items": {"type": "integer", "maximum": 5}},
            "props": {"type": "object", "minProperties": 1, "maxProperties": 2,
                "additionalProperties": {"type": "string"}},
            "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "intSet": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "integer"}},
            "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"},
                    "port": {"type": "integer", "default": 80},
                    "value": {"type": "string"}}}},
            "atomic": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}},
            "addl": {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}},
            "addlObj": {"type": "object", "additionalProperties": {"type": "object",
                "properties": {"a": {"type": "string", "default": "d"}}}},
            // Pruning.
            "preserve": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "preserveProps": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"a": {"type": "integer"}, "inner": {"type": "object",
                    "properties": {"b": {"type": "string"}}}}},
            "nested": {"type": "object", "properties": {"inner": {"type": "object",
                "properties": {"keep": {"type": "string"}}}}},
            "listOfObj": {"type": "array", "items": {"type": "object", "properties": {"keep": {"type": "string"}}}},
            // Int or string.
            "ios": {"x-kubernetes-int-or-string": true},
            "iosBounded": {"x-kubernetes-int-or-string": true, "anyOf": [
                {"minimum": 0}, {"pattern": "^[0-9]+%$"}]},
            // Embedded resources.
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true},
            "embeddedTyped": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object", "properties": {"x": {"type": "integer"}}}}},
            // Defaults.
            "defaults": {"type": "object", "default": {}, "properties": {
                "a": {"type": "string", "default": "x"},
                "b": {"type": "integer", "default": 3},
                "nullDefault": {"type": "string", "default": "n"},
                "obj": {"type": "object", "default": {"c": true}, "properties": {
                    "c": {"type": "boolean"}, "d": {"type": "string", "default": "dd"}}},
                "list": {"type": "array", "items": {"type": "object",
                    "properties": {"e": {"type": "string", "default": "ee"}}}},
                "objDefault": {"type": "object", "default": {"f": 1},
                    "properties": {"f": {"type": "integer"}}}}},
            // Combinators (value validations only, as structural schemas allow).
            "oneOf": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
                "oneOf": [{"required": ["a"]}, {"required": ["b"]}]},
            "anyOf": {"type": "string", "anyOf": [{"minLength": 5}, {"pattern": "^x"}]},
            "allOf": {"type": "integer", "allOf": [{"minimum": 0}, {"maximum": 100}]},
            "not": {"type": "string", "not": {"enum": ["forbidden"]}},
        }
    });
    crd("keywords", "Keyword", spec, json!([]))
}

/// The CEL rules.
pub fn rules() -> Value {
    let spec = json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "!has(self.min) || !has(self.max) || self.min <= self.max",
                "message": "min must not exceed max"},
            {"rule": "!has(self.max) || self.max < 100",
                "messageExpression": "self.max > 1000 ? 'max is far above 100' : 'max must be below 100'"},
            {"rule": "!has(self.name) || self.name != 'forbidden'", "fieldPath": ".name",
                "reason": "FieldValueForbidden", "message": "this name is forbidden"},
            {"rule": "!has(self.name) || self.name != 'required'", "fieldPath": ".name",
                "reason": "FieldValueRequired"},
            {"rule": "!has(self.tags) || self.tags.size() < 4", "fieldPath": ".tags",
                "reason": "FieldValueDuplicate", "message": "too many tags"},
            {"rule": "!has(self.divisor) || 10 / self.divisor > 1"},
            {"rule": "!has(self.replicas) || !has(oldSelf.replicas) || self.replicas >= oldSelf.replicas",
                "message": "replicas may only grow"},
            {"rule": "self.defaulted == 'on' || self.defaulted == 'off'"},
        ],
        "properties": {
            "min": {"type": "integer"},
            "max": {"type": "integer"},
            "name": {"type": "string", "maxLength": 20},
            "divisor": {"type": "integer"},
            "replicas": {"type": "integer"},
            "defaulted": {"type": "string", "default": "on", "maxLength": 5},
            "immutable": {"type": "string", "maxLength": 20,
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable is immutable"}]},
            "optionalOld": {"type": "string", "maxLength": 20, "x-kubernetes-validations": [
                {"rule": "oldSelf.hasValue() ? oldSelf.value() != 'locked' || self == 'locked' : self != 'new'",
                    "optionalOldSelf": true, "message": "optional old self"}]},
            "tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 20},
                "x-kubernetes-validations": [{"rule": "self.all(t, t.size() <= 5)"},
                    {"rule": "self.size() == 0 || self[0] != 'bad'", "message": "the first tag is bad"}]},
            "labels": {"type": "object", "maxProperties": 10,
                "additionalProperties": {"type": "string", "maxLength": 10},
                "x-kubernetes-validations": [{"rule": "self.all(k, k.startsWith('l'))",
                    "message": "keys start with l"}]},
            "entries": {"type": "array", "maxItems": 5, "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["key"],
                "items": {"type": "object", "required": ["key"], "properties": {
                    "key": {"type": "string", "maxLength": 10},
                    "value": {"type": "integer"}},
                    "x-kubernetes-validations": [
                        {"rule": "self.value >= 0",
                            "messageExpression": "'entry ' + self.key + ' has a negative value'"},
                        {"rule": "!has(oldSelf.value) || self.value == oldSelf.value",
                            "message": "an entry's value is immutable"}]}},
            "email": {"type": "string", "maxLength": 64,
                "x-kubernetes-validations": [{"rule": "self.matches('^[a-z]+@[a-z]+\\\\.com$')"}]},
            "url": {"type": "string", "maxLength": 100,
                "x-kubernetes-validations": [{"rule": "isURL(self)", "message": "not a URL"}]},
            "quantity": {"type": "string", "maxLength": 20,
                "x-kubernetes-validations": [{"rule": "isQuantity(self) && quantity(self).isLessThan(quantity('1Gi'))",
                    "message": "a quantity below 1Gi"}]},
            // Rules that each fail when the library finds a fact of a quantity, so the causes list the facts.
            "quantityFacts": {"type": "string", "maxLength": 20,
                "x-kubernetes-validations": [
                    {"rule": "!quantity(self).isInteger()", "message": "integer"},
                    {"rule": "sign(quantity(self)) != 1", "message": "positive"},
                    {"rule": "quantity(self).compareTo(quantity('1')) != 0", "message": "compares equal to 1"},
                    {"rule": "!quantity(self).add(1).sub(quantity('1m')).isInteger()", "message": "+1-1m integer"},
                    {"rule": "!quantity(self).sub(1).isInteger()", "message": "-1 integer"},
                    {"rule": "!quantity(self).isGreaterThan(quantity('1Ei'))", "message": "above 1Ei"},
                    {"rule": "!quantity(self).isLessThan(quantity('-1n'))", "message": "below -1n"}]},
            "ratio": {"type": "number",
                "x-kubernetes-validations": [{"rule": "self >= 0.0 && self <= 1.0"}]},
            "ios": {"x-kubernetes-int-or-string": true,
                "x-kubernetes-validations": [{"rule": "type(self) == int ? self < 10 : self.endsWith('%')",
                    "message": "int below 10 or a percentage"}]},
            "obj": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "has(self.a) == has(self.b)",
                    "message": "a and b go together", "fieldPath": ".b"}]},
        }
    });
    let root = json!([
        {"rule": "!has(self.spec) || !has(self.spec.min) || self.spec.min != 13", "message": "no 13 at the root"},
        {"rule": "self.metadata.name.size() < 60", "message": "short names"},
    ]);
    crd("rules", "Rule", spec, root)
}

/// Tightens the `Keyword` schema (in a CRD as written or as kube-apiserver returns it) for the ratcheting rows:
/// `range` at most 5 instead of 10, `len` at most 3 characters instead of 4, and `enumStr` without `c d`.
pub fn tighten(crd: &mut Value) {
    let spec = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"];
    spec["range"]["maximum"] = json!(5);
    spec["len"]["maxLength"] = json!(3);
    spec["enumStr"]["enum"] = json!(["a", "b"]);
}
