//! The ConfigMap type's rules, as kube's `ValidateConfigMap` and `ValidateConfigMapUpdate` have them: the keys of
//! `data` and `binaryData` are config keys, none in both, their values at most 1 MiB together; an `immutable`
//! ConfigMap keeps its data, its binary data and its immutability.

use serde_json::{json, Map, Value};

use super::secret::MAX_SIZE;
use apimachinery::field_error::FieldError;
use apimachinery::validation::is_config_map_key;

/// The problems of a ConfigMap.
pub fn validate(cm: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let empty = Map::new();
    let data = cm.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let binary = cm.get("binaryData").and_then(Value::as_object).unwrap_or(&empty);
    let mut total = 0;
    for (key, value) in data {
        let field = format!("data[{key}]");
        for problem in is_config_map_key(key) {
            errors.push(FieldError::invalid(field.clone(), key, &problem));
        }
        if binary.contains_key(key) {
            errors.push(FieldError::invalid(
                field,
                key,
                "duplicate of key present in binaryData",
            ));
        }
        total += value.as_str().map_or(0, str::len);
    }
    for (key, value) in binary {
        for problem in is_config_map_key(key) {
            errors.push(FieldError::invalid(format!("binaryData[{key}]"), key, &problem));
        }
        // Base64 in JSON (the schema checks it): the bytes are three quarters of the text.
        total += value.as_str().map_or(0, |v| v.trim_end_matches('=').len() * 3 / 4);
    }
    if total > MAX_SIZE {
        errors.push(FieldError::too_long("", MAX_SIZE));
    }
    errors
}

/// The problems of an update: an immutable ConfigMap's data, binary data or immutability changed, then those of
/// the new ConfigMap.
pub fn validate_update(cm: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if old.get("immutable") == Some(&json!(true)) {
        if cm.get("immutable") != Some(&json!(true)) {
            errors.push(FieldError::forbidden(
                "immutable",
                "field is immutable when `immutable` is set",
            ));
        }
        for field in ["data", "binaryData"] {
            if empty_as_none(cm.get(field)) != empty_as_none(old.get(field)) {
                errors.push(FieldError::forbidden(
                    field,
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    errors.extend(validate(cm));
    errors
}

/// A map, with an empty or null one read as none (as Go's `reflect.DeepEqual` of two decoded nil maps).
fn empty_as_none(v: Option<&Value>) -> Option<&Value> {
    v.filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
}

/// How many entries the ConfigMap holds (`kubectl get configmaps`' DATA column).
pub fn entries(cm: &Value) -> usize {
    ["data", "binaryData"]
        .iter()
        .map(|f| cm.get(*f).and_then(Value::as_object).map_or(0, Map::len))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields of the errors, in order (a map's keys come in its order).
    fn fields(errors: Vec<FieldError>) -> Vec<String> {
        let mut fields: Vec<String> = errors.into_iter().map(|e| e.field).collect();
        fields.sort();
        fields
    }

    #[test]
    fn keys_duplicates_and_size_are_checked() {
        assert!(validate(&json!({"data": {"a.conf": "x", "B_2": "y"}, "binaryData": {"c": "AAE="}})).is_empty());
        assert_eq!(
            fields(validate(
                &json!({"data": {"a b": "x", "dup": "y", "..x": "z"}, "binaryData": {"dup": "AA==", "/": "AA=="}})
            )),
            ["binaryData[/]", "data[..x]", "data[a b]", "data[dup]"]
        );
        let big = "x".repeat(MAX_SIZE);
        assert_eq!(fields(validate(&json!({"data": {"a": big, "b": "y"}}))), [""]);
        let message = &validate(&json!({"data": {"a b": "x"}}))[0].message;
        assert_eq!(
            message,
            "Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
             (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        );
    }

    #[test]
    fn an_immutable_config_map_keeps_its_data() {
        let old = json!({"immutable": true, "data": {"a": "x"}});
        assert!(validate_update(&json!({"immutable": true, "data": {"a": "x"}, "metadata": {}}), &old).is_empty());
        assert_eq!(
            fields(validate_update(
                &json!({"data": {"a": "y"}, "binaryData": {"b": "AA=="}}),
                &old
            )),
            ["binaryData", "data", "immutable"]
        );
        // A mutable one changes freely, and may become immutable.
        let mutable = json!({"data": {"a": "x"}});
        assert!(validate_update(&json!({"immutable": true, "data": {"b": "y"}}), &mutable).is_empty());
        assert_eq!(entries(&json!({"data": {"a": "x"}, "binaryData": {"b": "AA=="}})), 2);
    }
}
