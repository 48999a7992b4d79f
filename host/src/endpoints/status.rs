//! The one error type of the request path, [`ApiError`], rendered as a Kubernetes `Status`.
//!
//! Every failure a client sees goes through here, so reasons, codes and messages match kube-apiserver's
//! (`k8s.io/apimachinery/pkg/api/errors`).

use serde_json::{json, Value};

use crate::apimachinery::{FieldError as HostFieldError, FieldErrorReason};
use crate::plugins::bindings::wasm_apiserver::plugin::types::{Error as GuestError, FieldError, FieldErrorKind};
use crate::plugins::plugin::PluginError;
use crate::storage::StorageError;

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
        let mut e = ApiError::new(
            422,
            "Invalid",
            format!("{kind}.{group} \"{name}\" is invalid: {summary}"),
        )
        .with_details(group, kind, name);
        e.causes = causes;
        e
    }

    /// 403 Forbidden.
    pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
        ApiError::new(
            403,
            "Forbidden",
            format!("{} \"{name}\" is forbidden: {why}", qualified(group, resource)),
        )
        .with_details(group, resource, name)
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

    /// Maps a plugin failure for an object: `group`, `resource` (plural), `kind` and `name` fill the message.
    pub fn from_plugin(e: PluginError, group: &str, resource: &str, kind: &str, name: &str) -> ApiError {
        match e {
            PluginError::Guest(g) => match g {
                GuestError::Invalid(errs) => ApiError::invalid(group, kind, name, causes_from(&errs)),
                GuestError::Forbidden(m) => ApiError::forbidden(group, resource, name, &m),
                GuestError::BadRequest(m) => ApiError::bad_request(m),
                GuestError::Conflict(m) => ApiError::conflict(group, resource, name, &m),
                GuestError::NotFound(m) => ApiError::new(404, "NotFound", m),
                GuestError::Internal(m) => ApiError::internal(m),
            },
            PluginError::Timeout { plugin, call } => ApiError::timeout(format!(
                "the plugin {plugin:?} did not answer {call} within its deadline"
            )),
            PluginError::Storage { error, .. } => ApiError::from_storage(error, group, resource, name),
            PluginError::Throttled {
                message, retry_after, ..
            } => {
                let mut e = ApiError::new(429, "TooManyRequests", message);
                e.retry_after = Some(retry_after);
                e
            }
            PluginError::Failed { plugin, call, message } => {
                ApiError::internal(format!("plugin {plugin:?} failed in {call}: {message}"))
            }
        }
    }

    /// Maps a storage failure for an object.
    pub fn from_storage(e: StorageError, group: &str, resource: &str, name: &str) -> ApiError {
        match e {
            StorageError::NotFound { .. } => ApiError::not_found(group, resource, name),
            StorageError::AlreadyExists { .. } => ApiError::already_exists(group, resource, name),
            StorageError::Conflict { .. } => ApiError::modified(group, resource, name),
            StorageError::Compacted { requested, compacted } => {
                ApiError::expired(format!("too old resource version: {requested} ({compacted})"))
            }
            StorageError::TooLargeRevision { requested, current } => {
                // kube's NewTooLargeResourceVersionError: a Timeout with a cause clients (reflectors) look for.
                let mut e = ApiError::timeout(format!(
                    "Timeout: Too large resource version: {requested}, current: {current}"
                ));
                e.retry_after = Some(1);
                e.causes = vec![Cause {
                    reason: "ResourceVersionTooLarge".into(),
                    message: "Too large resource version".into(),
                    field: String::new(),
                }];
                e
            }
            StorageError::TooLarge(m) => ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!("{resource}.{group} {name:?} is too large to store: {m}"),
            ),
            StorageError::Unavailable(m) => ApiError::unavailable(m),
            StorageError::Internal(m) => ApiError::internal(m),
        }
    }
}

/// The one table of field error kinds: a plugin's WIT kind is the host's [`FieldErrorReason`], which names the
/// `StatusCause.reason` and the words an error body starts with.
impl From<FieldErrorKind> for FieldErrorReason {
    fn from(kind: FieldErrorKind) -> Self {
        match kind {
            FieldErrorKind::Required => FieldErrorReason::Required,
            FieldErrorKind::Invalid => FieldErrorReason::Invalid,
            FieldErrorKind::NotSupported => FieldErrorReason::NotSupported,
            FieldErrorKind::Duplicate => FieldErrorReason::Duplicate,
            FieldErrorKind::Forbidden => FieldErrorReason::Forbidden,
            FieldErrorKind::TooLong => FieldErrorReason::TooLong,
            FieldErrorKind::TooMany => FieldErrorReason::TooMany,
            FieldErrorKind::Internal => FieldErrorReason::Internal,
        }
    }
}

/// The Kubernetes reason of a WIT field error kind.
pub fn field_reason(kind: FieldErrorKind) -> &'static str {
    FieldErrorReason::from(kind).as_str()
}

fn field_prefix(kind: FieldErrorKind) -> &'static str {
    FieldErrorReason::from(kind).description()
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

/// Causes from a plugin's field errors.
pub fn causes_from(errors: &[FieldError]) -> Vec<Cause> {
    errors
        .iter()
        .map(|e| {
            let prefix = field_prefix(e.kind);
            let message = if e.detail.is_empty() {
                prefix.to_string()
            } else if e.detail.starts_with(prefix) {
                e.detail.clone()
            } else {
                format!("{prefix}: {}", e.detail)
            };
            Cause {
                reason: field_reason(e.kind).to_string(),
                message,
                field: e.field.clone(),
            }
        })
        .collect()
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

    #[test]
    fn invalid_lists_causes_and_names_the_kind() {
        let causes = causes_from(&[FieldError {
            kind: FieldErrorKind::Required,
            field: "spec.text".into(),
            detail: String::new(),
        }]);
        let s = ApiError::invalid("partial.example.com", "Note", "n", causes).to_status();
        assert_eq!(s["code"], 422);
        assert_eq!(s["details"]["kind"], "Note");
        assert_eq!(s["details"]["causes"][0]["field"], "spec.text");
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
        assert_eq!(
            s["message"],
            "Note.partial.example.com \"n\" is invalid: spec.text: Required value"
        );
    }
}
