//! Auditing (kube's `WithAudit` and the log backend): one `audit.k8s.io/v1` Event per stage of each request the
//! policy selects, as JSON lines, written without blocking requests ([`writer`]).
//!
//! Stages: `RequestReceived` once the user is known; `ResponseStarted` when a long-running request (a watch) starts
//! streaming, and for requests refused by authentication (their user is unknown, as kube logs them);
//! `ResponseComplete` when the response is done (for a watch, when its stream ends).

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

use std::sync::Arc;

use http_body_util::BodyExt as _;
use hyper::Response;
use serde_json::{json, Map, Value};

use authn::UserInfo;
use endpoints::context::RequestContext;
use endpoints::response::Body;

pub mod options;
pub mod policy;
pub mod writer;

use policy::{Level, Policy};
use writer::AuditLog;

/// The largest response body kept for an event (larger ones are not logged as objects).
const MAX_LOGGED_BODY: usize = 1 << 20;

/// The policy and the backend.
pub struct Auditor {
    policy: Policy,
    log: AuditLog,
}

fn user_json(user: &UserInfo) -> Value {
    let mut u = Map::new();
    u.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        u.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        u.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        u.insert("extra".into(), json!(user.extra));
    }
    Value::Object(u)
}

fn timestamp(t: std::time::SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t)
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// A JSON body, if it is one and not too large.
fn json_body(bytes: &[u8]) -> Option<Value> {
    if bytes.is_empty() || bytes.len() > MAX_LOGGED_BODY {
        return None;
    }
    serde_json::from_slice(bytes).ok()
}

/// One request's audit: its level and the stages it omits.
pub struct RequestAudit {
    auditor: Arc<Auditor>,
    level: Level,
    omit: Vec<String>,
}

impl Auditor {
    /// An auditor writing `log` as `policy` says.
    pub fn new(policy: Policy, log: AuditLog) -> Auditor {
        Auditor { policy, log }
    }

    /// The audit of a request whose user is known (authenticated, before impersonation), or `None` when the
    /// policy logs nothing of it.
    pub fn begin(self: &Arc<Self>, ctx: &RequestContext) -> Option<RequestAudit> {
        let (level, omit) = self.policy.evaluate(&ctx.user, &ctx.info);
        (level != Level::None).then(|| RequestAudit {
            auditor: self.clone(),
            level,
            omit,
        })
    }
}

impl RequestAudit {
    /// Whether the policy logs the request body (the handlers then leave it in the context).
    pub fn wants_request_body(&self) -> bool {
        self.level >= Level::Request
    }

    fn emit(&self, stage: &str, ctx: &RequestContext, status: Option<&Value>, response_object: Option<Value>) {
        if self.omit.iter().any(|s| s == stage) {
            return;
        }
        let info = &ctx.info;
        let mut e = Map::new();
        e.insert("kind".into(), json!("Event"));
        e.insert("apiVersion".into(), json!("audit.k8s.io/v1"));
        e.insert("level".into(), json!(self.level.as_str()));
        e.insert("auditID".into(), json!(ctx.audit_id));
        e.insert("stage".into(), json!(stage));
        e.insert("requestURI".into(), json!(ctx.request_uri));
        e.insert("verb".into(), json!(info.verb));
        match &ctx.impersonator {
            Some(real) => {
                e.insert("user".into(), user_json(real));
                e.insert("impersonatedUser".into(), user_json(&ctx.user));
            }
            None => {
                e.insert("user".into(), user_json(&ctx.user));
            }
        }
        e.insert("sourceIPs".into(), json!([ctx.peer.ip().to_string()]));
        if !ctx.user_agent.is_empty() {
            e.insert("userAgent".into(), json!(ctx.user_agent));
        }
        if info.resource_request {
            let mut o = Map::new();
            o.insert("resource".into(), json!(info.resource));
            if let Some(ns) = &info.namespace {
                o.insert("namespace".into(), json!(ns));
            }
            if let Some(name) = info.name.as_ref().or(info.selected_name.as_ref()) {
                o.insert("name".into(), json!(name));
            }
            o.insert("apiGroup".into(), json!(info.group));
            o.insert("apiVersion".into(), json!(info.version));
            if let Some(sub) = &info.subresource {
                o.insert("subresource".into(), json!(sub));
            }
            e.insert("objectRef".into(), Value::Object(o));
        }
        if let Some(status) = status {
            e.insert("responseStatus".into(), status.clone());
        }
        if self.level >= Level::Request {
            let body = ctx
                .audit_body
                .as_ref()
                .and_then(|b| b.lock().ok().and_then(|b| b.clone()));
            if let Some(obj) = body.as_deref().and_then(json_body) {
                e.insert("requestObject".into(), obj);
            }
        }
        if let Some(obj) = response_object {
            e.insert("responseObject".into(), obj);
        }
        e.insert("requestReceivedTimestamp".into(), json!(timestamp(ctx.received)));
        e.insert("stageTimestamp".into(), json!(timestamp(std::time::SystemTime::now())));
        let mut a = Map::new();
        if let Some((decision, reason)) = &ctx.authorization {
            a.insert("authorization.k8s.io/decision".into(), json!(decision));
            a.insert("authorization.k8s.io/reason".into(), json!(reason));
        }
        for (key, value) in ctx.audit_annotations.iter().flat_map(|a| a.list()) {
            a.entry(key).or_insert(Value::String(value));
        }
        if !a.is_empty() {
            e.insert("annotations".into(), Value::Object(a));
        }
        if let Ok(line) = serde_json::to_vec(&Value::Object(e)) {
            self.auditor.log.write(line);
        }
    }

    /// The `RequestReceived` event.
    pub fn request_received(&self, ctx: &RequestContext) {
        self.emit("RequestReceived", ctx, None, None);
    }

    /// Logs the end of a request refused before it was served (authentication): one `ResponseStarted` event, as
    /// kube's failed-authentication audit.
    pub fn refused(&self, ctx: &RequestContext, code: u16) {
        let status = json!({"metadata": {}, "status": "Failure", "reason": "Unauthorized", "message": "Unauthorized", "code": code});
        self.emit("ResponseStarted", ctx, Some(&status), None);
    }

    /// Logs the response: `ResponseComplete` now, or for a streaming (long-running) success `ResponseStarted` now
    /// and `ResponseComplete` when its body ends. Returns the response (with its body read and replaced when it
    /// had to be logged).
    pub async fn respond(self, ctx: &RequestContext, resp: Response<Body>) -> Response<Body> {
        let code = resp.status().as_u16();
        let mut status = json!({"metadata": {}, "code": code});
        if ctx.info.long_running() && code < 300 {
            self.emit("ResponseStarted", ctx, Some(&status), None);
            let done = Completion {
                audit: self,
                ctx: ctx.clone(),
                status,
            };
            return resp.map(|body| endpoints::response::guarded(body, done));
        }
        let (parts, body) = resp.into_parts();
        let wants_body = code >= 400 || self.level >= Level::RequestResponse;
        let (body, response_object) = if wants_body {
            let bytes = body.collect().await.map(|c| c.to_bytes()).unwrap_or_default();
            let parsed = json_body(&bytes);
            if let Some(Value::Object(s)) = &parsed {
                if code >= 400 && s.get("kind").and_then(Value::as_str) == Some("Status") {
                    for field in ["status", "message", "reason", "details"] {
                        if let Some(v) = s.get(field) {
                            status[field] = v.clone();
                        }
                    }
                }
            }
            let logged = if self.level >= Level::RequestResponse {
                parsed
            } else {
                None
            };
            (endpoints::response::full(bytes), logged)
        } else {
            (body, None)
        };
        self.emit("ResponseComplete", ctx, Some(&status), response_object);
        Response::from_parts(parts, body)
    }
}

/// The `ResponseComplete` event of a streaming response, written when it is dropped with the response's body.
struct Completion {
    audit: RequestAudit,
    ctx: RequestContext,
    status: Value,
}

impl Drop for Completion {
    fn drop(&mut self) {
        self.audit.emit("ResponseComplete", &self.ctx, Some(&self.status), None);
    }
}
