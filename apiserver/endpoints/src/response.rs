//! Building HTTP responses: bodies, JSON/YAML objects, Status errors, warnings.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{combinators::BoxBody, BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::Value;

use super::negotiate::{encode, Output};
use apimachinery::status::ApiError;

/// The response body type of the server: whole or streamed.
pub type Body = BoxBody<Bytes, Infallible>;

/// A whole body.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

/// A response with an encoded object.
pub fn object(code: StatusCode, output: Output, value: &Value, pretty: bool) -> Response<Body> {
    let mut resp = Response::new(full(encode(output, value, pretty)));
    *resp.status_mut() = code;
    if let Ok(ct) = HeaderValue::from_str(&output.content_type()) {
        resp.headers_mut().insert(CONTENT_TYPE, ct);
    }
    resp
}

/// A `Status` error response (JSON, or YAML when the client asked for it).
pub fn error(e: &ApiError, output: Option<Output>) -> Response<Body> {
    let output = output.map(|o| Output { table: None, ..o }).unwrap_or(Output::JSON);
    let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut resp = object(code, output, &e.to_status(), false);
    if let Some(secs) = e.retry_after {
        resp.headers_mut().insert("Retry-After", HeaderValue::from(secs));
    }
    resp
}

/// A plain-text response.
pub fn text(code: StatusCode, body: impl Into<String>) -> Response<Body> {
    let mut resp = Response::new(full(body.into()));
    *resp.status_mut() = code;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    resp
}

/// Adds `Warning: 299 - "<text>"` headers.
pub fn add_warnings(resp: &mut Response<Body>, warnings: &[String]) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        let clean: String = escaped.chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{clean}\"")) {
            resp.headers_mut().append("Warning", v);
        }
    }
}

/// A response body that holds `guard` until the body is dropped: sent to the end, or its client gone (a watch's
/// place in a limit, the audit event of its completion).
pub struct Guarded<G> {
    inner: Body,
    _guard: G,
}

/// `body`, holding `guard` for as long as it lives.
pub fn guarded<G: Send + Sync + Unpin + 'static>(body: Body, guard: G) -> Body {
    Guarded {
        inner: body,
        _guard: guard,
    }
    .boxed()
}

impl<G: Unpin> hyper::body::Body for Guarded<G> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}
