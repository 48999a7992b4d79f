//! The `/status` and `/scale` subresources of flunders: the status a controller reports (observed replicas, the
//! generation it acted on, the selector of its replicas) and where `/scale` finds the replica counts.

use serde_json::Value;
use wasm_apiserver_guest::field::{self, ErrorList, FieldPath};
use wasm_apiserver_guest::{Error, Validation};

use crate::exports::wasm_apiserver::plugin::scaler::ReplicaPaths;
use crate::FLUNDERS;

/// The resources with a `/status`.
pub fn resources() -> Vec<String> {
    vec![FLUNDERS.to_owned()]
}

/// Where flunders keep their replica counts.
pub fn scale_paths(resource: &str) -> Option<ReplicaPaths> {
    (resource == FLUNDERS).then(|| ReplicaPaths {
        spec_replicas_path: ".spec.replicas".to_owned(),
        status_replicas_path: ".status.replicas".to_owned(),
        label_selector_path: Some(".status.selector".to_owned()),
    })
}

/// Prepares a status update: nothing to add, the host keeps only the status.
pub fn prepare(resource: &str, object: String) -> Result<String, Error> {
    match resource {
        FLUNDERS => Ok(object),
        other => Err(crate::unknown_resource(other)),
    }
}

/// Validates a flunder's status: counts are non-negative integers, `observedGeneration` is at most the object's
/// generation (a controller reports the generation it acted on, never a future one), the selector is a string.
pub fn validate(resource: &str, object: &str) -> Validation {
    if resource != FLUNDERS {
        return Validation::from(vec![field::internal(
            &FieldPath::default(),
            crate::unknown_resource(resource).message(),
        )]);
    }
    let object: Value = match serde_json::from_str(object) {
        Ok(v) => v,
        Err(e) => return Validation::from(vec![field::internal(&FieldPath::default(), e.to_string())]),
    };
    validate_status(&object).into()
}

fn validate_status(object: &Value) -> ErrorList {
    let mut errors = ErrorList::new();
    let path = FieldPath::new("status");
    let status = &object["status"];
    if status.is_null() {
        return errors;
    }
    if !status.is_object() {
        errors.push(field::invalid(&path, status, "must be an object"));
        return errors;
    }
    for name in ["replicas", "observedGeneration"] {
        match &status[name] {
            Value::Null => {}
            v if v.as_i64().is_some_and(|n| n >= 0) => {}
            v => errors.push(field::invalid(
                &path.child(name),
                v,
                "must be an integer greater than or equal to 0",
            )),
        }
    }
    let generation = object["metadata"]["generation"].as_i64().unwrap_or(0);
    if let Some(observed) = status["observedGeneration"].as_i64().filter(|o| *o > generation) {
        errors.push(field::invalid(
            &path.child("observedGeneration"),
            observed,
            &format!("must not be greater than metadata.generation ({generation})"),
        ));
    }
    if !status["selector"].is_null() && !status["selector"].is_string() {
        errors.push(field::invalid(
            &path.child("selector"),
            &status["selector"],
            "must be a string",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errors_of(status: Value, generation: i64) -> Vec<String> {
        let object = json!({"metadata": {"generation": generation}, "status": status});
        validate_status(&object).into_iter().map(|e| e.field).collect()
    }

    #[test]
    fn status_counts_and_observed_generation_are_checked() {
        assert!(errors_of(json!({"replicas": 2, "observedGeneration": 3, "selector": "a=b"}), 3).is_empty());
        assert!(errors_of(Value::Null, 1).is_empty());
        assert_eq!(errors_of(json!({"replicas": -1}), 1), ["status.replicas"]);
        assert_eq!(
            errors_of(json!({"observedGeneration": 4}), 3),
            ["status.observedGeneration"]
        );
        assert_eq!(errors_of(json!({"selector": 1}), 1), ["status.selector"]);
        assert_eq!(errors_of(json!("x"), 1), ["status"]);
        assert_eq!(validate("widgets", "{}").errors.len(), 1);
    }

    #[test]
    fn only_flunders_have_subresources() {
        assert_eq!(resources(), [FLUNDERS]);
        let paths = scale_paths(FLUNDERS).expect("flunders scale");
        assert_eq!(paths.spec_replicas_path, ".spec.replicas");
        assert!(scale_paths("fischers").is_none());
    }
}
