//! `/scale`: an object's replica counts as an `autoscaling/v1` `Scale`, read from and written to the paths the
//! plugin's `scaler` names, as kube-apiserver serves the scale subresource of a custom resource.

use super::{ResourceStore, Written};
use crate::read::ReadAt;
use crate::write_options::WriteOptions;
use apimachinery::object::{self, meta_mut, meta_str};
use apimachinery::scheme::{json_path_fields, ScalePaths};
use apimachinery::status::{ApiError, Cause};
use serde_json::{json, Value};

/// The group version of `Scale`.
pub const SCALE_API_VERSION: &str = "autoscaling/v1";

impl ResourceStore {
    fn scale_paths(&self) -> Result<&ScalePaths, ApiError> {
        self.resource
            .subresources(&self.version)
            .scale
            .as_ref()
            .ok_or_else(|| ApiError::internal(format!("{} has no scale subresource", self.plural())))
    }

    /// The `Scale` of an object (in the request's version): its name, namespace, uid, resourceVersion and creation
    /// time, the desired replicas (0 when absent), the observed ones (0 when absent) and the selector, if any.
    pub fn scale_of(&self, obj: &Value) -> Result<Value, ApiError> {
        let paths = self.scale_paths()?;
        let replicas = |path: &str| {
            json_path_fields(path)
                .and_then(|f| object::at_path(obj, &f).and_then(Value::as_i64))
                .unwrap_or(0)
        };
        let mut meta = serde_json::Map::new();
        for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
            if let Some(v) = obj.get("metadata").and_then(|m| m.get(field)).filter(|v| !v.is_null()) {
                meta.insert(field.into(), v.clone());
            }
        }
        let mut status = json!({"replicas": replicas(&paths.status_replicas)});
        let selector = paths
            .label_selector
            .as_deref()
            .and_then(json_path_fields)
            .and_then(|f| object::at_path(obj, &f).and_then(Value::as_str).map(str::to_owned));
        if let Some(selector) = selector.filter(|s| !s.is_empty()) {
            status["selector"] = json!(selector);
        }
        Ok(json!({
            "kind": "Scale",
            "apiVersion": SCALE_API_VERSION,
            "metadata": meta,
            "spec": {"replicas": replicas(&paths.spec_replicas)},
            "status": status,
        }))
    }

    /// Reads an object's `Scale`.
    pub async fn get_scale(&self, namespace: Option<&str>, name: &str, at: ReadAt) -> Result<Value, ApiError> {
        let obj = self.get(namespace, name, at).await?;
        self.scale_of(&obj)
    }

    /// Writes the replicas of the `Scale` that `scale` makes of the current one (the request's body for a PUT, the
    /// patched current `Scale` for a PATCH) into the object, through the object's update strategy; returns the
    /// object's new `Scale`. A `resourceVersion` in the written `Scale` that is not the current one is a conflict; a
    /// write without one is retried on conflicts.
    pub async fn write_scale(
        &self,
        namespace: Option<&str>,
        name: &str,
        scale: impl Fn(&Value) -> Result<Value, ApiError>,
        opts: WriteOptions,
    ) -> Result<Written, ApiError> {
        let paths = self.scale_paths()?;
        let spec_path = json_path_fields(&paths.spec_replicas)
            .ok_or_else(|| ApiError::internal(format!("bad spec replicas path {:?}", paths.spec_replicas)))?;
        // A patch of the object: the current object's Scale goes through `scale`, its replicas into the object; a
        // resourceVersion the Scale names pins the object's (the patch then does not retry).
        let to_object = |old: &Value| -> Result<Value, ApiError> {
            let new_scale = scale(&self.scale_of(old)?)?;
            let replicas = validate_scale(&new_scale, name)?;
            let mut obj = old.clone();
            object::set_at_path(&mut obj, &spec_path, json!(replicas));
            if let Some(rv) = meta_str(&new_scale, "resourceVersion").filter(|s| !s.is_empty()) {
                meta_mut(&mut obj).insert("resourceVersion".into(), json!(rv));
            }
            Ok(obj)
        };
        let w = self.patch(namespace, name, to_object, opts).await?;
        Ok(Written {
            object: self.scale_of(&w.object)?,
            warnings: w.warnings,
            created: false,
        })
    }
}

/// Checks a `Scale` written by a client as kube's ValidateScale and the decoding of `autoscaling/v1` do; returns
/// its desired replicas.
fn validate_scale(scale: &Value, name: &str) -> Result<i64, ApiError> {
    if !scale.is_object() {
        return Err(ApiError::bad_request("the body is not a Scale object"));
    }
    match scale.get("apiVersion").and_then(Value::as_str) {
        None | Some(SCALE_API_VERSION) => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({other}) does not match the expected API version ({SCALE_API_VERSION})"
            )))
        }
    }
    match scale.get("kind").and_then(Value::as_str) {
        None | Some("Scale") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({other}) does not match the expected kind (Scale)"
            )))
        }
    }
    let invalid = |field: &str, message: String| {
        ApiError::invalid(
            "autoscaling",
            "Scale",
            name,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message,
                field: field.into(),
            }],
        )
    };
    if let Some(n) = meta_str(scale, "name").filter(|n| !n.is_empty() && *n != name) {
        return Err(invalid(
            "metadata.name",
            format!("Invalid value: \"{n}\": must match the name in the URL ({name})"),
        ));
    }
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(v) => v.as_i64().filter(|r| i32::try_from(*r).is_ok()).ok_or_else(|| {
            ApiError::bad_request(format!("unable to decode Scale: spec.replicas: {v} is not an int32"))
        })?,
    };
    if replicas < 0 {
        return Err(invalid(
            "spec.replicas",
            format!("Invalid value: {replicas}: must be greater than or equal to 0"),
        ));
    }
    Ok(replicas)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_are_checked_as_kube_checks_them() {
        let ok = json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "a"},
            "spec": {"replicas": 3}});
        assert_eq!(validate_scale(&ok, "a").expect("valid"), 3);
        assert_eq!(validate_scale(&json!({"spec": {}}), "a").expect("valid"), 0);
        let negative = validate_scale(&json!({"spec": {"replicas": -1}}), "a").expect_err("negative");
        assert_eq!(negative.code, 422);
        assert_eq!(negative.reason, "Invalid");
        let other_name = validate_scale(&json!({"metadata": {"name": "b"}}), "a").expect_err("name");
        assert_eq!(other_name.code, 422);
        let big = validate_scale(&json!({"spec": {"replicas": 1_i64 << 40}}), "a").expect_err("int32");
        assert_eq!(big.code, 400);
        let kind = validate_scale(&json!({"kind": "Flunder"}), "a").expect_err("kind");
        assert_eq!(kind.code, 400);
        let version = validate_scale(&json!({"apiVersion": "autoscaling/v2"}), "a").expect_err("version");
        assert_eq!(version.code, 400);
    }
}
