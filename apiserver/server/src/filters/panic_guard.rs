//! Panic recovery (kube's `WithPanicRecovery`): a bug answers 500 and never takes the server down.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures_util::FutureExt as _;
use hyper::Response;

use apimachinery::status::ApiError;
use endpoints::response::{self, Body};

/// Runs the rest of the chain; a panic becomes a 500 `InternalError` Status (and an error log naming the request).
pub async fn recover<T>(what: &impl std::fmt::Display, rest: impl Future<Output = T>) -> Result<T, Response<Body>> {
    match AssertUnwindSafe(rest).catch_unwind().await {
        Ok(answered) => Ok(answered),
        Err(panic) => {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!(request = %what, panic = %message, "request handler panicked");
            Err(response::error(
                &ApiError::internal(format!("the server panicked: {message}")),
                None,
            ))
        }
    }
}
