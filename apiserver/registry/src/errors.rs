//! Storage's failures as an [`ApiError`] for an object, as kube's registry maps storage errors
//! (`pkg/storage/errors`) onto API errors (a plugin's failures map by `PluginError::into_api_error`).

use apimachinery::status::{ApiError, Cause};
use storage::StorageError;

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
