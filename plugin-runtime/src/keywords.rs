//! The keywords a plugin's OpenAPI v3 schema may use: those of a CustomResourceDefinition's `openAPIV3Schema`
//! (apiextensions.k8s.io/v1 `JSONSchemaProps`). kube-apiserver refuses a CRD with any other field in its schema
//! (`unknown field "...maxLenght"`); a plugin's schema is held to the same, at load time and by `plugin check`, with
//! the keyword it probably meant: a misspelt keyword would otherwise be ignored, and its rule silently not enforced.

use serde_json::Value;

/// Every keyword of `JSONSchemaProps`.
const KEYWORDS: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// The unknown keywords of a schema, each as `` `keyword` at path `` (with the keyword it probably meant): empty
/// when every keyword is known. `path` names the schema's place, as a CRD's field path does
/// (`properties.spec.properties.name`).
pub fn unknown_keywords(schema: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, "", &mut found);
    found
}

fn walk(schema: &Value, path: &str, found: &mut Vec<String>) {
    let Value::Object(map) = schema else { return };
    let at = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    for (key, value) in map {
        if !KEYWORDS.contains(&key.as_str()) {
            let place = if path.is_empty() {
                "the root".to_owned()
            } else {
                path.to_owned()
            };
            let hint = KEYWORDS
                .iter()
                .map(|k| (strsim::levenshtein(k, key), k))
                .filter(|(d, _)| *d <= 2)
                .min()
                .map(|(_, k)| format!(" (did you mean `{k}`?)"))
                .unwrap_or_default();
            found.push(format!("`{key}` at {place}{hint}"));
            continue;
        }
        match key.as_str() {
            // Maps of schemas.
            "properties" | "patternProperties" | "definitions" => {
                if let Value::Object(children) = value {
                    for (name, child) in children {
                        walk(child, &format!("{}.{name}", at(key)), found);
                    }
                }
            }
            // A schema, or a list of them.
            "items" | "additionalItems" => match value {
                Value::Array(items) => {
                    for (i, item) in items.iter().enumerate() {
                        walk(item, &format!("{}[{i}]", at(key)), found);
                    }
                }
                other => walk(other, &at(key), found),
            },
            "allOf" | "oneOf" | "anyOf" => {
                if let Value::Array(items) = value {
                    for (i, item) in items.iter().enumerate() {
                        walk(item, &format!("{}[{i}]", at(key)), found);
                    }
                }
            }
            // A schema (a boolean for additionalProperties is no schema).
            "not" | "additionalProperties" => walk(value, &at(key), found),
            // Values of schemas: string lists, or schemas.
            "dependencies" => {
                if let Value::Object(children) = value {
                    for (name, child) in children {
                        walk(child, &format!("{}.{name}", at(key)), found);
                    }
                }
            }
            // Everything else holds values (default, example, enum, x-kubernetes-validations...), not schemas.
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_misspelt_keyword_is_named_with_its_place_and_the_keyword_meant() {
        let schema = json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "maxLenght": 10},
                        "tags": {"type": "array", "items": {"type": "string", "minLenght": 1}},
                        "mode": {"type": "string", "colour": "red"}
                    }
                }
            },
            "examples": []
        });
        let found: std::collections::BTreeSet<String> = unknown_keywords(&schema).into_iter().collect();
        let expected: std::collections::BTreeSet<String> = [
            "`examples` at the root (did you mean `example`?)",
            "`maxLenght` at properties.spec.properties.name (did you mean `maxLength`?)",
            "`colour` at properties.spec.properties.mode",
            "`minLenght` at properties.spec.properties.tags.items (did you mean `minLength`?)",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect();
        assert_eq!(found, expected);
    }

    #[test]
    fn values_are_not_read_as_schemas() {
        let schema = json!({
            "type": "object",
            "example": {"spec": {"anything": 1}},
            "properties": {
                "spec": {
                    "type": "object",
                    "default": {"replicaz": 1},
                    "x-kubernetes-validations": [{"rule": "self.a > 0", "message": "m"}],
                    "additionalProperties": true,
                    "properties": {"a": {"type": "integer", "enum": [1, 2]}}
                }
            }
        });
        assert!(unknown_keywords(&schema).is_empty(), "{:?}", unknown_keywords(&schema));
    }
}
