//! The request timeout (kube's `WithRequestDeadline` and `WithTimeoutForNonLongRunningRequests`): a request that
//! is not long-running gets `--request-timeout`, or the shorter `?timeout=` it asks for, and answers 504 Timeout
//! when it takes longer.

use std::future::Future;
use std::time::Duration;

use hyper::Response;

use apimachinery::status::ApiError;
use endpoints::context::RequestContext;
use endpoints::response::{self, Body};

/// Runs the handler within the request's deadline.
pub async fn run(
    limit: Duration,
    ctx: &RequestContext,
    handler: impl Future<Output = Response<Body>>,
) -> Response<Body> {
    if ctx.info.long_running() || limit.is_zero() {
        return handler.await;
    }
    let asked = ctx
        .query
        .get("timeout")
        .and_then(|t| storage::compactor::parse_duration(t).ok())
        .filter(|t| !t.is_zero());
    let limit = asked.map_or(limit, |t| t.min(limit));
    match tokio::time::timeout(limit, handler).await {
        Ok(resp) => resp,
        Err(_) => {
            component_base::metrics::metrics().request_timeouts.inc();
            response::error(&timeout_error(limit), None)
        }
    }
}

/// kube's 504 for a request past its deadline.
fn timeout_error(limit: Duration) -> ApiError {
    let mut e = ApiError::timeout(format!(
        "Timeout: request did not complete within requested timeout - context deadline exceeded ({limit:?})"
    ));
    e.retry_after = None;
    e
}
