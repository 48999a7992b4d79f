//! The one error type of the request path, [`ApiError`], and the Kubernetes `Status` it is answered as.
//!
//! Every failure a client sees is one, so reasons, codes and messages match kube-apiserver's
//! (`k8s.io/apimachinery/pkg/api/errors`). The server's registry maps storage and plugin failures onto it, and its
//! endpoints write it as a response.

use serde_json::{json, Value};

use super::FieldError as HostFieldError;

/// One cause of an error, such as a field that failed validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// A machine-readable reason, such as `FieldValueInvalid`.
    pub reason: String,
    /// The full message, such as `Invalid value: "x": must be ...`.
    pub message: String,
    /// The field path, such as `metadata.name`.
    pub field: String,
}

/// An error answered to the client as a `Status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status code.
    pub code: u16,
    /// The `Status` reason, such as `NotFound`.
    pub reason: &'static str,
    /// The human-readable message.
    pub message: String,
    /// `details.name`.
    pub name: Option<String>,
    /// `details.group`.
    pub group: Option<String>,
    /// `details.kind`: the plural resource for most errors, the Kind for Invalid.
    pub kind: Option<String>,
    /// `details.causes`.
    pub causes: Vec<Cause>,
    /// `details.retryAfterSeconds`.
    pub retry_after: Option<u32>,
    /// `metadata.continue`: for an expired continue token, one that continues the list at the latest revision.
    pub continue_token: Option<String>,
}

/// A (group, resource) pair as errors name it: `flunders.wardle.example.com`.
pub fn qualified(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

impl ApiError {
    /// A bare error with a code, reason and message.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            code,
            reason,
            message: message.into(),
            name: None,
            group: None,
            kind: None,
            causes: Vec::new(),
            retry_after: None,
            continue_token: None,
        }
    }

    fn with_details(mut self, group: &str, kind: &str, name: &str) -> ApiError {
        self.group = Some(group.to_string());
        self.kind = Some(kind.to_string());
        if !name.is_empty() {
            self.name = Some(name.to_string());
        }
        self
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "BadRequest", message)
    }

    /// 404 NotFound for an object.
    pub fn not_found(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 404 NotFound for a path that is not served.
    pub fn path_not_found() -> ApiError {
        ApiError::new(404, "NotFound", "the server could not find the requested resource")
    }

    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, resource)),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict.
    pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        ApiError::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, resource)
            ),
        )
        .with_details(group, resource, name)
    }

    /// 409 Conflict for a stale resourceVersion.
    pub fn modified(group: &str, resource: &str, name: &str) -> ApiError {
        ApiError::conflict(
            group,
            resource,
            name,
            "the object has been modified; please apply your changes to the latest version and try again",
        )
    }

    /// 422 Invalid with field causes.
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> ApiError {
        let list = causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect::<Vec<_>>();
        let summary = if list.len() == 1 {
            list[0].clone()
        } else {
            format!("[{}]", list.join(", "))
        };
        // The qualified kind, as Go's GroupKind prints it: the core group's kinds alone.
        let qualified = if group.is_empty() {
            kind.to_owned()
        } else {
            format!("{kind}.{group}")
        };
        let mut e = ApiError::new(422, "Invalid", format!("{qualified} \"{name}\" is invalid: {summary}"))
            .with_details(group, kind, name);
        e.causes = causes;
        e
    }

    /// 403 Forbidden (of no name: a create with `generateName`, a list).
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        let message = match (resource, name) {
            ("", _) => format!("forbidden: {why}"),
            (_, "") => format!("{} is forbidden: {why}", qualified(group, resource)),
            (_, name) => format!("{} \"{name}\" is forbidden: {why}", qualified(group, resource)),
        };
        ApiError::new(403, "Forbidden", message).with_details(group, resource, name)
    }

    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(verb: &str, group: &str, resource: &str) -> ApiError {
        ApiError::new(
            405,
            "MethodNotAllowed",
            format!(
                "the server does not allow this method on the requested resource ({verb} {})",
                qualified(group, resource)
            ),
        )
    }

    /// 406 NotAcceptable.
    pub fn not_acceptable(accept: &str) -> ApiError {
        ApiError::new(
            406,
            "NotAcceptable",
            format!("the server was unable to respond with a content type that the client supports ({accept})"),
        )
    }

    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> ApiError {
        ApiError::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {content_type:?})"))
    }

    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> ApiError {
        ApiError::new(
            413,
            "RequestEntityTooLarge",
            format!("the request body is too large: the limit is {limit} bytes"),
        )
    }

    /// 410 Expired.
    pub fn expired(message: impl Into<String>) -> ApiError {
        ApiError::new(410, "Expired", message)
    }

    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {}", message.into()),
        )
    }

    /// 503 ServiceUnavailable.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        let mut e = ApiError::new(503, "ServiceUnavailable", message);
        e.retry_after = Some(1);
        e
    }

    /// 504 Timeout.
    pub fn timeout(message: impl Into<String>) -> ApiError {
        ApiError::new(504, "Timeout", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut details = serde_json::Map::new();
        if let Some(n) = &self.name {
            details.insert("name".into(), json!(n));
        }
        if let Some(g) = &self.group {
            details.insert("group".into(), json!(g));
        }
        if let Some(k) = &self.kind {
            details.insert("kind".into(), json!(k));
        }
        if !self.causes.is_empty() {
            let causes: Vec<Value> = self
                .causes
                .iter()
                .map(|c| {
                    let mut cause = json!({"reason": c.reason, "message": c.message});
                    if !c.field.is_empty() {
                        cause["field"] = json!(c.field);
                    }
                    cause
                })
                .collect();
            details.insert("causes".into(), Value::Array(causes));
        }
        if let Some(r) = self.retry_after {
            details.insert("retryAfterSeconds".into(), json!(r));
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        if let Some(token) = &self.continue_token {
            status["metadata"] = json!({"continue": token});
        }
        status
    }
}

/// A host field error (metadata, schema, CEL) as a Status cause.
impl From<HostFieldError> for Cause {
    fn from(e: HostFieldError) -> Self {
        Cause {
            reason: e.reason.as_str().to_string(),
            message: e.message,
            field: e.field,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_status_names_the_plural_resource() {
        let s = ApiError::not_found("wardle.example.com", "flunders", "x").to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["message"], "flunders.wardle.example.com \"x\" not found");
        assert_eq!(s["details"]["kind"], "flunders");
        assert_eq!(s["details"]["name"], "x");
    }
}
