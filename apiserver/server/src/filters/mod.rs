//! The handler chain, listed in one place in Kubernetes' order (`DefaultBuildHandlerChain`), outermost first:
//!
//! panic guard → request info → authentication → audit ([`audit`]) → impersonation → max-in-flight (and the
//! watch cap) → authorization → timeout → routing (the tenant's [`endpoints::Api`]); large responses are
//! compressed on the way out ([`compression`]).
//!
//! Each filter is a small module; the handlers read the user and the request info from the [`RequestContext`].
//! Request bodies are read only by the handlers, after authentication and authorization.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body as _, Incoming};
use hyper::header::{HeaderValue, CONNECTION};
use hyper::{Request, Response, Version};

use authn::authenticator::Authenticator;
use component_base::metrics;
use endpoints::context::{Connection, RequestContext};
use endpoints::response::{self, Body};
use endpoints::BodyRead;

pub mod authentication;
pub mod authorization;
pub mod compression;
pub mod impersonation;
pub mod max_inflight;
pub mod panic_guard;
pub mod request_info;
pub mod timeout;
pub mod watch_limit;

/// Everything the filters need, built once at start.
pub struct Chain {
    /// The tenants, each with its API and authorizer.
    pub tenants: Arc<tenants::Tenants>,
    /// Who makes a request.
    pub authenticator: Authenticator,
    /// How many requests are served at once.
    pub max_in_flight: max_inflight::MaxInFlight,
    /// The deadline of requests that are not long-running (0: none).
    pub request_timeout: Duration,
    /// The cap on each user's concurrent watches.
    pub watch_limit: Arc<watch_limit::WatchLimit>,
    /// The audit policy and log, when auditing.
    pub auditor: Option<Arc<audit::Auditor>>,
}

/// Serves one request through the chain, and records its metrics and log line.
pub async fn handle(chain: Arc<Chain>, connection: Arc<Connection>, mut req: Request<Incoming>) -> Response<Body> {
    let mut ctx = request_info::resolve(&req, connection.peer);
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
    let resp = panic_guard::recover(&what, serve(&chain, &connection, &mut ctx, req)).await;
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
                peer = %connection.peer, user = %ctx.user.name, audit_id = %audit_id,
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

/// The filters after the panic guard and request info.
async fn serve(
    chain: &Chain,
    connection: &Connection,
    ctx: &mut RequestContext,
    req: Request<Incoming>,
) -> Response<Body> {
    match authentication::authenticate(&chain.authenticator, connection, req.headers()).await {
        Ok(user) => ctx.user = user,
        Err(e) => {
            if let Some(audit) = chain.auditor.as_ref().and_then(|a| a.begin(ctx)) {
                audit.refused(ctx, e.code);
            }
            return response::error(&e, None);
        }
    }
    // Audit: the policy is asked with the authenticated user, before impersonation (as kube's filter order).
    let audit = chain.auditor.as_ref().and_then(|a| a.begin(ctx));
    if let Some(audit) = &audit {
        if audit.wants_request_body() {
            ctx.audit_body = Some(Arc::default());
        }
        audit.request_received(ctx);
    }
    let Some(tenant) = chain.tenants.get(ctx.info.tenant.as_deref()) else {
        let name = ctx.info.tenant.clone().unwrap_or_default();
        let mut e = apimachinery::status::ApiError::new(404, "NotFound", format!("tenants \"{name}\" not found"));
        e.name = Some(name);
        e.kind = Some("tenants".into());
        let resp = response::error(&e, None);
        return match audit {
            Some(audit) => audit.respond(ctx, resp).await,
            None => resp,
        };
    };
    let resp = authorized(chain, &tenant, ctx, req).await;
    match audit {
        Some(audit) => audit.respond(ctx, resp).await,
        None => resp,
    }
}

/// The filters after authentication and audit.
async fn authorized(
    chain: &Chain,
    tenant: &tenants::Tenant,
    ctx: &mut RequestContext,
    req: Request<Incoming>,
) -> Response<Body> {
    match impersonation::impersonate(tenant.authorizer.as_ref(), &ctx.user, req.headers()).await {
        Ok(Some(user)) => ctx.impersonator = Some(std::mem::replace(&mut ctx.user, user)),
        Ok(None) => {}
        Err(e) => return response::error(&e, None),
    }
    let _permit = match chain.max_in_flight.admit(ctx).await {
        Ok(permit) => permit,
        Err(e) => return response::error(&e, None),
    };
    let _tenant_permit = match tenant.limiter.admit(tenant.display_name(), &tenant.limits(), ctx) {
        Ok(permit) => permit,
        Err(e) => return response::error(&e, None),
    };
    let watch_permit = match chain.watch_limit.admit(ctx) {
        Ok(permit) => permit,
        Err(e) => return response::error(&e, None),
    };
    let attributes = authorization::attributes(&ctx.user, &ctx.info);
    match authorization::authorize(tenant.authorizer.as_ref(), &attributes).await {
        Ok(reason) => ctx.authorization = Some(("allow", reason)),
        Err(e) => {
            ctx.authorization = Some(("forbid", String::new()));
            return response::error(&e, None);
        }
    }
    let ctx: &RequestContext = ctx;
    let resp = timeout::run(chain.request_timeout, ctx, tenant.api.serve(req, ctx)).await;
    match watch_permit {
        // The watch keeps its place while its body streams.
        Some(permit) => resp.map(|body| response::guarded(body, permit)),
        None => resp,
    }
}
