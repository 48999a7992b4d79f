//! The contract's `create-pipeline`, derived from a plugin's own strategy: one call runs the defaulter, the plugin's
//! mutating admission, `prepare-for-create` and `validate` in the order and with the host's changes in between that
//! the separate calls would have (see `create-pipeline` in `wit/strategies.wit`), so the object crosses the component
//! boundary once each way instead of up to four times.
//!
//! [`bindings!`](crate::bindings) exports it for the ready worlds `crud-plugin` and `full-plugin`; a plugin with a
//! world of its own exports `wasm-apiserver:plugin/create-pipeline@0.1.1` in it and invokes
//! [`create_pipeline!`](crate::create_pipeline) once, next to `bindings!`.

use apimachinery::object::{keep_host_metadata, meta_mut};
use serde_json::Value;

use crate::{AdmissionRequest, Error, Validation};

/// The step of a create that failed (the contract's `create-step`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// The defaulter.
    Default,
    /// The mutating admission.
    Admit,
    /// `prepare-for-create`.
    Prepare,
}

/// A create's input (the contract's `create-request`).
#[derive(Clone, Debug)]
pub struct Request {
    /// The resource's plural name.
    pub resource: String,
    /// The decoded object, before defaulting.
    pub object: String,
    /// A JSON object of the metadata fields the host sets after defaulting; `null` members are removed.
    pub metadata: String,
    /// Whether `status` is removed after defaulting.
    pub clear_status: bool,
    /// The mutating admission to run, without its `object` and `name`.
    pub admission: Option<AdmissionRequest>,
}

/// A function of a resource and an object returning an object (`default`, `prepare-for-create`).
pub type ObjectFn = fn(String, String) -> Result<String, Error>;

/// `mutating-admission.admit`.
pub type AdmitFn = fn(AdmissionRequest) -> Result<Option<String>, Error>;

/// A plugin's strategy functions, as its exported interfaces have them.
pub struct Strategy {
    /// `defaulter.default`, when the plugin has one.
    pub default: Option<ObjectFn>,
    /// `mutating-admission.admit`, when the plugin has one.
    pub admit: Option<AdmitFn>,
    /// `create-strategy.prepare-for-create`.
    pub prepare: ObjectFn,
    /// `create-strategy.validate`.
    pub validate: fn(String, String) -> Validation,
}

/// Runs a create's steps: the prepared object (JSON text) and its validation, or the step that failed and its error.
pub fn create(strategy: &Strategy, request: Request) -> Result<(String, Validation), (Step, Error)> {
    let Request {
        resource,
        object,
        metadata,
        clear_status,
        admission,
    } = request;
    let defaulted = match strategy.default {
        Some(default) => default(resource.clone(), object).map_err(|e| (Step::Default, e))?,
        None => object,
    };
    let mut obj = parse_object(&defaulted).map_err(|e| (Step::Default, e))?;
    let host_metadata = match serde_json::from_str::<Value>(&metadata) {
        Ok(Value::Object(m)) => m,
        _ => {
            let message = "the host's metadata for the create is not a JSON object";
            return Err((Step::Default, Error::Internal(message.into())));
        }
    };
    {
        let meta = meta_mut(&mut obj);
        for (field, value) in host_metadata {
            if value.is_null() {
                meta.remove(&field);
            } else {
                meta.insert(field, value);
            }
        }
    }
    if clear_status {
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
        }
    }
    if let (Some(admit), Some(mut request)) = (strategy.admit, admission) {
        request.name = obj
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        request.object = Some(obj.to_string());
        if let Some(mutated) = admit(request).map_err(|e| (Step::Admit, e))? {
            let mutated = parse_object(&mutated).map_err(|e| (Step::Admit, e))?;
            obj = keep_host_metadata(&obj, mutated);
        }
    }
    let prepared = (strategy.prepare)(resource.clone(), obj.to_string()).map_err(|e| (Step::Prepare, e))?;
    let prepared = parse_object(&prepared).map_err(|e| (Step::Prepare, e))?;
    let text = keep_host_metadata(&obj, prepared).to_string();
    let validation = (strategy.validate)(resource, text.clone());
    Ok((text, validation))
}

/// A step's result, which must be a JSON object; the error is the one the host gives for a separate call's.
fn parse_object(text: &str) -> Result<Value, Error> {
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.is_object() => Ok(v),
        Ok(_) => Err(Error::Internal("the plugin returned JSON that is not an object".into())),
        Err(e) => Err(Error::Internal(format!("the plugin returned invalid JSON: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn default(_resource: String, object: String) -> Result<String, Error> {
        let mut v: Value = serde_json::from_str(&object).expect("json");
        v["spec"]["defaulted"] = json!(true);
        v["status"] = json!({"set": "by the defaulter"});
        Ok(v.to_string())
    }

    fn prepare(_resource: String, object: String) -> Result<String, Error> {
        let mut v: Value = serde_json::from_str(&object).expect("json");
        v["metadata"]["uid"] = json!("changed by the plugin");
        v["metadata"]["labels"] = json!({"prepared": "yes"});
        v["kind"] = json!("Other");
        Ok(v.to_string())
    }

    fn validate(_resource: String, object: String) -> Validation {
        let v: Value = serde_json::from_str(&object).expect("json");
        Validation {
            errors: Vec::new(),
            warnings: vec![v["metadata"]["uid"].as_str().unwrap_or("").to_owned()],
        }
    }

    fn admit(request: AdmissionRequest) -> Result<Option<String>, Error> {
        if request.name == "banned" {
            return Err(Error::Forbidden("banned".into()));
        }
        Ok(None)
    }

    fn request(name: &str) -> Request {
        Request {
            resource: "widgets".into(),
            object: json!({"apiVersion": "g/v1", "kind": "Widget", "metadata": {"name": name, "selfLink": "x"}})
                .to_string(),
            metadata: json!({"uid": "u1", "generation": 1, "selfLink": null}).to_string(),
            clear_status: true,
            admission: Some(AdmissionRequest {
                operation: crate::Operation::Create,
                group: "g".into(),
                version: "v1".into(),
                resource: "widgets".into(),
                subresource: String::new(),
                namespace: None,
                name: String::new(),
                object: None,
                old_object: None,
                dry_run: false,
                user: crate::UserInfo {
                    name: "u".into(),
                    groups: Vec::new(),
                },
            }),
        }
    }

    const STRATEGY: Strategy = Strategy {
        default: Some(default),
        admit: Some(admit),
        prepare,
        validate,
    };

    #[test]
    fn steps_run_in_order_with_the_host_changes_between() {
        let (text, validation) = create(&STRATEGY, request("a")).expect("created");
        let v: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            v,
            json!({
                "apiVersion": "g/v1",
                "kind": "Widget",
                "metadata": {"name": "a", "uid": "u1", "generation": 1, "labels": {"prepared": "yes"}},
                "spec": {"defaulted": true},
            })
        );
        // Validation sees the prepared object with the host's metadata restored.
        assert_eq!(validation.warnings, ["u1"]);
    }

    #[test]
    fn a_failing_step_is_named() {
        let err = create(&STRATEGY, request("banned")).expect_err("forbidden");
        assert_eq!(err.0, Step::Admit);
        let bad = Strategy {
            prepare: |_, _| Ok("[1]".into()),
            ..STRATEGY
        };
        let err = create(&bad, request("a")).expect_err("not an object");
        assert_eq!(err.0, Step::Prepare);
        assert!(matches!(err.1, Error::Internal(m) if m.contains("not an object")));
    }
}
