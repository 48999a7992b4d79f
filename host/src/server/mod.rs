//! The HTTP server: listener, the handler chain, graceful shutdown.
//!
//! The chain, outermost first, as in Kubernetes' `DefaultBuildHandlerChain`: panic recovery → request logging →
//! the API (request info, routing, REST handlers). Authentication, authorization and admission control of load come
//! with later work.

use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use futures_util::FutureExt as _;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;

use crate::endpoints::response::{self, Body};
use crate::endpoints::status::ApiError;
use crate::endpoints::Api;

pub mod metrics;

/// Serves the API on a bound listener until `shutdown` resolves, then stops accepting and lets open connections
/// finish their current request.
pub async fn serve(listener: TcpListener, api: Arc<Api>, shutdown: impl std::future::Future<Output = ()>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(a) => a,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        continue;
                    }
                };
                // As Go's net package does for kube-apiserver: without it, small writes (watch events, a response
                // whose body follows its head) wait for the previous segment's acknowledgement.
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!(error = %e, %peer, "cannot set TCP_NODELAY");
                }
                let api = api.clone();
                let service = service_fn(move |req| handle(api.clone(), peer, req));
                let builder = auto::Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service).into_owned();
                let conn = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = conn.await {
                        tracing::debug!(error = %e, %peer, "connection ended with an error");
                    }
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(std::time::Duration::from_secs(5)) => {
            tracing::info!("open connections (watches) did not finish within 5s; closing them");
        }
    }
}

/// The handler chain for one request.
async fn handle(
    api: Arc<Api>,
    peer: SocketAddr,
    req: Request<Incoming>,
) -> Result<Response<Body>, std::convert::Infallible> {
    let started = Instant::now();
    let method = req.method().clone();
    let uri = req.uri().clone();
    // Panic recovery: a bug answers 500 and never takes the server down.
    let resp = match AssertUnwindSafe(api.serve(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            tracing::error!(%method, %uri, panic = %what, "request handler panicked");
            response::error(&ApiError::internal(format!("the server panicked: {what}")), None)
        }
    };
    let m = metrics::metrics();
    let kind = resp
        .extensions()
        .get::<metrics::RequestKind>()
        .cloned()
        .unwrap_or_else(|| metrics::RequestKind::other(method.as_str()));
    m.request_duration
        .get_or_create(&kind)
        .observe(started.elapsed().as_secs_f64());
    let labels = metrics::RequestLabels {
        kind,
        code: resp.status().as_u16().to_string(),
    };
    m.requests.get_or_create(&labels).inc();
    tracing::info!(
        target: "wasm_apiserver::http",
        %method, %uri, status = resp.status().as_u16(), latency_us = started.elapsed().as_micros() as u64, %peer,
        "request"
    );
    Ok(resp)
}
