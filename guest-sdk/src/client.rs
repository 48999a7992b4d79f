//! Typed access to the host's imports: reading objects the plugin declared in `scheme.info().reads`, the user an
//! admission call admits for, and logging.

use serde::de::DeserializeOwned;

use crate::host::{self, LogLevel};
use crate::types::Error;

/// Reads one object (in its storage version) of a declared resource; `None` when it does not exist.
///
/// The host refuses resources the plugin did not declare with a `forbidden` error. An object that does not decode
/// as `T` is an `internal` error.
pub fn get<T: DeserializeOwned>(
    group: &str,
    resource: &str,
    namespace: Option<&str>,
    name: &str,
) -> Result<Option<T>, Error> {
    host::get(group, resource, namespace, name)?
        .map(|json| decode_stored(&json))
        .transpose()
}

/// Lists the objects (in their storage version) of a declared resource in a namespace, or in all namespaces when
/// `namespace` is `None`, that match a label selector (empty for all).
pub fn list<T: DeserializeOwned>(
    group: &str,
    resource: &str,
    namespace: Option<&str>,
    label_selector: &str,
) -> Result<Vec<T>, Error> {
    host::list(group, resource, namespace, label_selector)?
        .iter()
        .map(|json| decode_stored(json))
        .collect()
}

/// The user whose request the current admission call admits, in full: name, uid, groups and extra (the
/// [`AdmissionRequest`](crate::AdmissionRequest)'s `user` has the name and groups only). `None` outside
/// `mutating-admission.admit`, `validating-admission.validate` and a create pipeline's admission step. Needs a host
/// serving contract 0.1.1 or later.
pub fn request_user() -> Option<crate::User> {
    host::request_user()
}

fn decode_stored<T: DeserializeOwned>(json: &str) -> Result<T, Error> {
    serde_json::from_str(json).map_err(|e| Error::Internal(format!("cannot decode a stored object: {e}")))
}

/// Writes a line to the server's log at `debug` level.
pub fn log_debug(message: &str) {
    host::log(LogLevel::Debug, message);
}

/// Writes a line to the server's log at `info` level.
pub fn log_info(message: &str) {
    host::log(LogLevel::Info, message);
}

/// Writes a line to the server's log at `warn` level.
pub fn log_warn(message: &str) {
    host::log(LogLevel::Warn, message);
}

/// Writes a line to the server's log at `error` level.
pub fn log_error(message: &str) {
    host::log(LogLevel::Error, message);
}
