//! What the filters learn about a request and hand on to the handlers (kube's `endpoints/request`): the connection it
//! came on, its request info, the user it is made by (and the user behind an impersonation), its audit id and when it
//! arrived.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

use crate::request_info::RequestInfo;
use authn::x509::PeerCertificate;
use authn::UserInfo;

/// A client connection, as accepted.
#[derive(Clone, Debug)]
pub struct Connection {
    /// The client's address.
    pub peer: SocketAddr,
    /// What the client certificate proves (empty without TLS or without a certificate).
    pub certificate: PeerCertificate,
    /// Whether this is the insecure development port, where every request is an administrator.
    pub insecure: bool,
}

/// One request's context, built by the filters in order.
#[derive(Clone, Debug)]
pub struct RequestContext {
    /// What the request is about.
    pub info: RequestInfo,
    /// The query parameters.
    pub query: HashMap<String, String>,
    /// The user the request acts as (the impersonated user, when it impersonates).
    pub user: UserInfo,
    /// The authenticated user behind an impersonation.
    pub impersonator: Option<UserInfo>,
    /// The audit id: the client's `Audit-ID` header, or a fresh UUID; echoed in the `Audit-Id` response header.
    pub audit_id: String,
    /// When the request arrived.
    pub received: SystemTime,
    /// When the request arrived, for latencies.
    pub started: Instant,
    /// The client's address.
    pub peer: SocketAddr,
    /// The client's `User-Agent`.
    pub user_agent: String,
    /// The request URI (path and query), for audit events.
    pub request_uri: String,
    /// The authorization decision (`allow` or `forbid`) and its reason, once made, for audit events.
    pub authorization: Option<(&'static str, String)>,
    /// Where the handlers leave the request body when the audit policy logs it.
    pub audit_body: Option<std::sync::Arc<std::sync::Mutex<Option<bytes::Bytes>>>>,
    /// What admission adds to the request's audit events, when it is audited.
    pub audit_annotations: Option<component_base::audit::Annotations>,
}
