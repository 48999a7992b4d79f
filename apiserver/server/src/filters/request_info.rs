//! The request info filter (kube's `WithRequestInfo`): resolves what every request is about once, and starts its
//! context.

use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

use hyper::header::USER_AGENT;
use hyper::Request;

use authn::UserInfo;
use endpoints::context::RequestContext;
use endpoints::request_info::{parse_query, RequestInfo};

/// The header a client (or a proxy in front of us) may set to name a request in audit logs.
pub const AUDIT_ID_HEADER: &str = "audit-id";

/// The context of a request before authentication.
pub fn resolve<B>(req: &Request<B>, peer: SocketAddr) -> RequestContext {
    let query = parse_query(req.uri().query());
    let info = RequestInfo::resolve(req.method(), req.uri().path(), &query);
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    let audit_id = header(AUDIT_ID_HEADER)
        .filter(|id| !id.is_empty() && id.len() <= 128)
        .map(str::to_owned)
        .unwrap_or_else(|| {
            let mut id = [0u8; uuid::fmt::Hyphenated::LENGTH];
            uuid::Uuid::new_v4().hyphenated().encode_lower(&mut id).to_owned()
        });
    RequestContext {
        info,
        query,
        user: UserInfo::default(),
        impersonator: None,
        audit_id,
        received: SystemTime::now(),
        started: Instant::now(),
        peer,
        user_agent: header(USER_AGENT.as_str()).unwrap_or_default().to_owned(),
        request_uri: req
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        authorization: None,
        audit_body: None,
        audit_annotations: None,
    }
}
