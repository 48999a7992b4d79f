//! The registry's lower layers' failures as an [`ApiError`]: a storage error and a plugin's error (its field errors
//! among them) for an object, as kube's registry maps storage errors (`pkg/storage/errors`) onto API errors.

use crate::plugins::bindings::wasm_apiserver::plugin::types::{Error as GuestError, FieldError, FieldErrorKind};
use crate::plugins::plugin::PluginError;
use apimachinery::status::{ApiError, Cause};
use apimachinery::FieldErrorReason;
use storage::StorageError;

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
        PluginError::Storage { error, .. } => from_storage(error, group, resource, name),
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
