//! The Secret type's rules, as kube's `pkg/registry/core/secret` strategy and `ValidateSecret` have them: on every
//! write `stringData` is merged into `data` (base64-encoded, overwriting) and dropped; `type` defaults to `Opaque`
//! and cannot change; the keys are config keys; the values are base64 and at most 1 MiB together; the well-known
//! types have the keys they need; an `immutable` secret keeps its data.

use base64::Engine as _;
use serde_json::{json, Map, Value};

use apimachinery::field_error::FieldError;
use apimachinery::validation::is_config_map_key;

/// The type of a secret without one.
pub const OPAQUE: &str = "Opaque";
/// A `~/.docker/config.json`-style secret: `.dockerconfigjson`.
pub const DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";
/// A secret of a user name and password: `username`, `password`.
pub const BASIC_AUTH: &str = "kubernetes.io/basic-auth";
/// The most bytes a secret's values may hold together (kube's `MaxSecretSize`).
pub const MAX_SIZE: usize = 1024 * 1024;

/// The secret's type (`Opaque` when unset).
pub fn type_of(secret: &Value) -> &str {
    match secret.get("type").and_then(Value::as_str) {
        Some(t) if !t.is_empty() => t,
        _ => OPAQUE,
    }
}

/// The decoded value of `key`, if the secret has one that is base64.
pub fn value(secret: &Value, key: &str) -> Option<Vec<u8>> {
    let encoded = secret.get("data")?.get(key)?.as_str()?;
    base64::engine::general_purpose::STANDARD.decode(encoded).ok()
}

/// The secret as stored: `stringData` merged into `data`, the type defaulted.
pub fn prepare(obj: &Value) -> Value {
    let mut obj = obj.clone();
    if let Some(Value::Object(strings)) = obj.as_object_mut().and_then(|o| o.remove("stringData")) {
        let mut data = obj.get("data").and_then(Value::as_object).cloned().unwrap_or_default();
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            data.insert(key, json!(base64::engine::general_purpose::STANDARD.encode(text)));
        }
        obj["data"] = Value::Object(data);
    }
    if obj.get("type").and_then(Value::as_str).is_none_or(str::is_empty) {
        obj["type"] = json!(OPAQUE);
    }
    obj
}

/// The problems of a secret.
pub fn validate(secret: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let empty = Map::new();
    let data = secret.get("data").and_then(Value::as_object).unwrap_or(&empty);
    let mut total = 0;
    for (key, value) in data {
        let field = format!("data[{key}]");
        for problem in is_config_map_key(key) {
            errors.push(FieldError::invalid(field.clone(), key, &problem));
        }
        match value
            .as_str()
            .map(|v| base64::engine::general_purpose::STANDARD.decode(v))
        {
            Some(Ok(bytes)) => total += bytes.len(),
            _ => errors.push(FieldError::invalid(
                field,
                "<secret contents redacted>",
                "must be base64 data",
            )),
        }
    }
    if total > MAX_SIZE {
        errors.push(FieldError::too_long("data", MAX_SIZE));
    }
    let required = |errors: &mut Vec<FieldError>, key: &str| {
        if !data.contains_key(key) {
            errors.push(FieldError::required(format!("data[{key}]"), ""));
        }
    };
    match type_of(secret) {
        DOCKER_CONFIG_JSON => {
            required(&mut errors, ".dockerconfigjson");
            if let Some(bytes) = value(secret, ".dockerconfigjson") {
                if serde_json::from_slice::<Value>(&bytes).map_or(true, |v| !v.is_object()) {
                    errors.push(FieldError::invalid(
                        "data[.dockerconfigjson]",
                        "<secret contents redacted>",
                        "must be a JSON object",
                    ));
                }
            }
        }
        BASIC_AUTH if !data.contains_key("username") && !data.contains_key("password") => {
            errors.push(FieldError::required("data[username]", ""));
            errors.push(FieldError::required("data[password]", ""));
        }
        "kubernetes.io/ssh-auth" => required(&mut errors, "ssh-privatekey"),
        "kubernetes.io/tls" => {
            required(&mut errors, "tls.crt");
            required(&mut errors, "tls.key");
        }
        _ => {}
    }
    errors
}

/// The problems of an update: those of the new secret, a changed type, changed data of an immutable one.
pub fn validate_update(secret: &Value, old: &Value) -> Vec<FieldError> {
    let mut errors = validate(secret);
    if type_of(secret) != type_of(old) {
        errors.push(FieldError::invalid("type", type_of(secret), "field is immutable"));
    }
    if old.get("immutable") == Some(&json!(true)) {
        if secret.get("data") != old.get("data") {
            errors.push(FieldError::forbidden(
                "data",
                "field is immutable when `immutable` is set",
            ));
        }
        if secret.get("immutable") != Some(&json!(true)) {
            errors.push(FieldError::forbidden(
                "immutable",
                "field is immutable when `immutable` is set",
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_data_is_merged_into_data_and_the_type_defaults() {
        let s = prepare(&json!({"data": {"a": "eA=="}, "stringData": {"a": "yes", "b": "no"}}));
        assert_eq!(s, json!({"data": {"a": "eWVz", "b": "bm8="}, "type": "Opaque"}));
        assert_eq!(value(&s, "b").unwrap(), b"no");
        assert!(validate(&s).is_empty());
    }

    #[test]
    fn problems_are_named() {
        let fields = |v: &Value| validate(v).into_iter().map(|e| e.field).collect::<Vec<_>>();
        assert_eq!(
            fields(&json!({"data": {"a b": "eA==", "c": "%%"}})),
            ["data[a b]", "data[c]"]
        );
        assert_eq!(
            fields(&json!({"type": DOCKER_CONFIG_JSON})),
            ["data[.dockerconfigjson]"]
        );
        assert_eq!(
            fields(&json!({"type": DOCKER_CONFIG_JSON, "data": {".dockerconfigjson": "WzFd"}})),
            ["data[.dockerconfigjson]"]
        );
        assert_eq!(
            fields(&json!({"type": BASIC_AUTH})),
            ["data[username]", "data[password]"]
        );
        let old = json!({"type": "Opaque", "immutable": true, "data": {"a": "eA=="}});
        let new = json!({"type": BASIC_AUTH, "immutable": true, "data": {"a": "eQ==", "username": "eA=="}});
        let errors: Vec<String> = validate_update(&new, &old).into_iter().map(|e| e.field).collect();
        assert_eq!(errors, ["type", "data"]);
    }
}
