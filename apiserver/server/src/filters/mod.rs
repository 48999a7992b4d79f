//! The handler chain, listed in one place in Kubernetes' order (`DefaultBuildHandlerChain`), outermost first:
//!
//! panic guard → request info → authentication → audit ([`audit`]) → the tenant → impersonation → API Priority and
//! Fairness ([`priority_and_fairness`], or the fixed queues of [`max_inflight`]) → the tenant's limits → the watch cap → authorization → timeout → routing (the tenant's [`endpoints::Api`]); large
//! responses are compressed on the way out ([`compression`]).
//!
//! [`handle`] resolves the request info and guards against panics; the filters from authentication on are tower
//! [`Layer`](tower::Layer)s ([`layer`]), stacked once by [`Chain::new`]. Each takes the request on its way in with
//! what the filters learned of it ([`layer::Filtered`]: the [`RequestContext`](endpoints::context::RequestContext),
//! the tenant) and the rest of the chain, and gives back the response with the context ([`layer::Answered`]) for the
//! filters it passes back through (audit, the request log). Request bodies are read only by the handlers, after
//! authentication and authorization.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body as _, Incoming};
use hyper::header::{HeaderValue, CONNECTION};
use hyper::{Request, Response, Version};
use tower::ServiceBuilder;

use authn::authenticator::Authenticator;
use component_base::metrics;
use endpoints::context::Connection;
use endpoints::response::{self, Body};
use endpoints::BodyRead;
use layer::{filter, pass, Answered, Filtered, Next};

pub mod authentication;
pub mod authorization;
pub mod compression;
pub mod impersonation;
pub mod layer;
pub mod max_inflight;
pub mod panic_guard;
pub mod priority_and_fairness;
pub mod request_info;
pub mod timeout;
pub mod watch_limit;

/// How requests share the server's seats.
pub enum FlowControl {
    /// API Priority and Fairness (`--enable-priority-and-fairness`, the default).
    PriorityAndFairness(Arc<flowcontrol::PriorityAndFairness>),
    /// Fixed limits of read-only and mutating requests, with a queue per tenant.
    MaxInFlight(max_inflight::MaxInFlight),
}

/// The filters, stacked once at start.
pub struct Chain {
    /// The filters from authentication to the tenant's API.
    filters: Next,
}

/// What the filters need, built once at start.
pub struct Parts {
    /// The tenants, each with its API and authorizer.
    pub tenants: Arc<tenants::Tenants>,
    /// Who makes a request.
    pub authenticator: Arc<Authenticator>,
    /// How many requests are served at once, and which wait.
    pub flow_control: FlowControl,
    /// The deadline of requests that are not long-running (0: none).
    pub request_timeout: Duration,
    /// The cap on each user's concurrent watches.
    pub watch_limit: Arc<watch_limit::WatchLimit>,
    /// The audit policy and log, when auditing.
    pub auditor: Option<Arc<audit::Auditor>>,
}

impl Chain {
    /// Stacks the filters, in Kubernetes' order.
    pub fn new(parts: Parts) -> Chain {
        let Parts {
            tenants,
            authenticator,
            flow_control,
            request_timeout,
            watch_limit,
            auditor,
        } = parts;
        let flow_control = Arc::new(flow_control);
        let filters = ServiceBuilder::new()
            .layer(filter({
                let auditor = auditor.clone();
                move |f, next| authentication::filter(authenticator.clone(), auditor.clone(), f, next)
            }))
            .layer(filter(move |f, next| audit_filter(auditor.clone(), f, next)))
            .layer(filter(move |f, next| tenant_filter(tenants.clone(), f, next)))
            .layer(filter(impersonation::filter))
            .layer(filter(move |f, next| {
                let flow_control = flow_control.clone();
                async move {
                    match &*flow_control {
                        FlowControl::PriorityAndFairness(apf) => {
                            priority_and_fairness::filter(apf.clone(), f, next).await
                        }
                        FlowControl::MaxInFlight(limit) => max_inflight::filter(limit, f, next).await,
                    }
                }
            }))
            .layer(filter(tenant_limits_filter))
            .layer(filter(move |f, next| watch_limit::filter(watch_limit.clone(), f, next)))
            .layer(filter(authorization::filter))
            .service(layer::endpoint(request_timeout));
        Chain {
            filters: Next::new(filters),
        }
    }
}

/// Serves one request through the chain, and records its metrics and log line.
pub async fn handle(chain: Arc<Chain>, connection: Arc<Connection>, mut req: Request<Incoming>) -> Response<Body> {
    let ctx = request_info::resolve(&req, connection.peer);
    // An HTTP/1 request with a body to read learns whether a handler read it: when none did (an error answered
    // before it, such as 404, 403 or 413), what is left of the body still fills the connection, so the response
    // closes it. Without the header hyper would close the connection after the response all the same, and a client
    // that reuses it for its next request would see that request fail. Go's server (kube-apiserver) answers
    // `Connection: close` likewise.
    let http1_body = req.version() < Version::HTTP_2 && !req.body().is_end_stream();
    let body = http1_body.then(|| {
        let body = BodyRead::default();
        req.extensions_mut().insert(body.clone());
        body
    });
    let what = RequestLine(req.method().clone(), req.uri().clone());
    let audit_id = ctx.audit_id.clone();
    let started = ctx.started;
    let gzip = compression::accepts_gzip(req.headers());
    let filtered = Box::new(Filtered {
        req,
        ctx,
        connection: connection.clone(),
        tenant: None,
    });
    // The request's span of its trace (kube-apiserver's `KubernetesAPI`), a child of the caller's when it sent a
    // `traceparent`.
    let traceparent = filtered.req.headers().get("traceparent").and_then(|v| v.to_str().ok());
    let span = if component_base::trace::sampled(traceparent) {
        let span = tracing::info_span!(
            target: component_base::trace::TARGET,
            "KubernetesAPI",
            http.method = %what.0,
            http.target = %what.1,
            audit_id = %audit_id,
            user.name = tracing::field::Empty,
            http.status_code = tracing::field::Empty,
        );
        if let Some(parent) = traceparent {
            component_base::trace::adopt(&span, parent);
        }
        span
    } else {
        tracing::Span::none()
    };
    // A panic loses the request's context with the handler that held it: its log line names no user.
    let answered = tracing::Instrument::instrument(
        panic_guard::recover(&what, pass(chain.filters.clone(), filtered)),
        span.clone(),
    )
    .await;
    let (resp, user) = match answered {
        Ok(Answered { resp, ctx }) => (resp, ctx.user.name),
        Err(resp) => (resp, String::new()),
    };
    if !span.is_disabled() {
        span.record("user.name", user.as_str());
        span.record("http.status_code", resp.status().as_u16());
    }
    let mut resp = compression::gzip_if_large(gzip, resp).await;
    if body.is_some_and(|body| !body.is_read()) {
        resp.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
    }
    if let Ok(id) = HeaderValue::from_str(&audit_id) {
        resp.headers_mut().insert("Audit-Id", id);
    }

    let m = metrics::metrics();
    let kind = resp
        .extensions_mut()
        .remove::<metrics::RequestKind>()
        .unwrap_or_else(|| metrics::RequestKind::other(&what.0));
    m.request_duration
        .get_or_create(&kind)
        .observe(started.elapsed().as_secs_f64());
    let labels = metrics::RequestLabels {
        kind,
        code: resp.status().as_u16(),
    };
    m.requests.get_or_create(&labels).inc();
    // Every request at info, shown only when asked for (`RUST_LOG=info`; by default the target is at warn, as
    // kube-apiserver logs each request only at -v=3: a line per request cost 8% of a GET's server time); those the
    // server failed at warn, always shown.
    macro_rules! log_request {
        ($level:ident) => {
            tracing::$level!(
                target: "wasm_apiserver::http",
                request = %what, status = resp.status().as_u16(), latency_us = started.elapsed().as_micros() as u64,
                peer = %connection.peer, user = %user, audit_id = %audit_id,
                "request"
            )
        };
    }
    if resp.status().is_server_error() {
        log_request!(warn);
    } else {
        log_request!(info);
    }
    resp
}

/// A request's method and URI, written as `GET /path?query` only when a log line shows it.
pub struct RequestLine(pub hyper::Method, pub hyper::Uri);

impl std::fmt::Display for RequestLine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.0, self.1)
    }
}

/// Audit: the policy is asked with the authenticated user, before impersonation (as kube's filter order); the event
/// of the response is written on the way out.
async fn audit_filter(auditor: Option<Arc<audit::Auditor>>, mut f: Box<Filtered>, next: Next) -> Answered {
    let audit = auditor.as_ref().and_then(|a| a.begin(&f.ctx));
    let Some(audit) = audit else {
        return pass(next, f).await;
    };
    if audit.wants_request_body() {
        f.ctx.audit_body = Some(Arc::default());
    }
    audit.request_received(&f.ctx);
    // Admission's annotations (component_base::audit::annotate) reach the request's later events.
    let annotations = component_base::audit::Annotations::default();
    f.ctx.audit_annotations = Some(annotations.clone());
    let mut answered = annotations.scope(pass(next, f)).await;
    answered.resp = audit.respond(&answered.ctx, answered.resp).await;
    answered
}

/// The tenant the request addresses (`/tenants/<name>/...`, else the root), or 404.
/// A tenant created through the API is built on its first request, and its requests (to the end of their responses)
/// keep it from being dropped as idle.
async fn tenant_filter(tenants: Arc<tenants::Tenants>, mut f: Box<Filtered>, next: Next) -> Answered {
    let (tenant, in_use) = match tenants.enter_request(f.ctx.info.tenant.as_deref()).await {
        Ok(entered) => entered,
        Err(e) => return f.answer(response::error(&e, None)),
    };
    f.tenant = Some(tenant);
    let mut answered = pass(next, f).await;
    if let Some(in_use) = in_use {
        answered.resp = answered.resp.map(|body| response::guarded(body, in_use));
    }
    answered
}

/// The tenant's own limits (its share of requests in flight), held until the response.
async fn tenant_limits_filter(f: Box<Filtered>, next: Next) -> Answered {
    let _permit = match f.tenant().admit(&f.ctx) {
        Ok(permit) => permit,
        Err(e) => return f.answer(response::error(&e, None)),
    };
    pass(next, f).await
}
