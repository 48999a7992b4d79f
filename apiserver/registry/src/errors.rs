//! The registry's lower layers' failures as an [`ApiError`]: a storage error and a plugin's error (its field errors
//! among them) for an object, as kube's registry maps storage errors (`pkg/storage/errors`) onto API errors.

use apimachinery::plugin::{PluginError, Rejection};
use apimachinery::status::{ApiError, Cause};
use storage::StorageError;

/// Maps a plugin failure for an object: `group`, `resource` (plural), `kind` and `name` fill the message.
pub fn from_plugin(e: PluginError, group: &str, resource: &str, kind: &str, name: &str) -> ApiError {
    match e {
        PluginError::Rejected(r) => match r {
            Rejection::Invalid(errs) => {
                ApiError::invalid(group, kind, name, errs.into_iter().map(Cause::from).collect())
            }
            Rejection::Forbidden(m) => ApiError::forbidden(group, resource, name, &m),
            Rejection::BadRequest(m) => ApiError::bad_request(m),
            Rejection::Conflict(m) => ApiError::conflict(group, resource, name, &m),
            Rejection::NotFound(m) => ApiError::new(404, "NotFound", m),
        },
        PluginError::Timeout { plugin, call } => ApiError::timeout(format!(
            "the plugin {plugin:?} did not answer {call} within its deadline"
        )),
        PluginError::Storage { error, .. } => *error,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_lists_causes_and_names_the_kind() {
        let e = PluginError::Rejected(Rejection::Invalid(vec![apimachinery::FieldError::reported(
            apimachinery::FieldErrorReason::Required,
            "spec.text",
            "",
        )]));
        let causes = from_plugin(e, "partial.example.com", "notes", "Note", "n").causes;
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
