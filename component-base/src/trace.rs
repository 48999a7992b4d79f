//! Distributed tracing, as kube-apiserver's `--tracing-config-file` (`k8s.io/component-base/tracing`): the parts
//! of the server make `tracing` spans with the target [`TARGET`]; the binary, when tracing is configured, exports
//! them over OTLP and installs the [`Hooks`] through which the other crates, which know nothing of OpenTelemetry,
//! read the current trace (for log lines and outgoing requests) and adopt a caller's. Without a configuration the
//! spans are disabled where they are made (one atomic load each) and the hooks answer nothing; with one, only the
//! spans of a sampled request are made (below its request span: [`sampled`]).

use std::sync::OnceLock;

/// The target of every span meant for traces (and for nothing else: the log leaves it out).
pub const TARGET: &str = "wasm_apiserver::trace";

/// What the tracing backend answers about the current span.
pub struct Hooks {
    /// The current span's trace id (32 hex digits), if it is sampled.
    pub trace_id: fn() -> Option<String>,
    /// The W3C `traceparent` header of the current span, for a request made within it.
    pub traceparent: fn() -> Option<String>,
    /// Makes a span the child of the remote span a request's `traceparent` header names.
    pub adopt: fn(&tracing::Span, &str),
    /// Whether a request (with its `traceparent`, if any) is traced: its caller's decision, else the sampling rate.
    pub sampled: fn(Option<&str>) -> bool,
}

static HOOKS: OnceLock<Hooks> = OnceLock::new();

/// Installs the backend's hooks (once, at start).
pub fn install(hooks: Hooks) {
    let _ = HOOKS.set(hooks);
}

/// The current trace's id, when tracing.
pub fn trace_id() -> Option<String> {
    HOOKS.get().and_then(|h| (h.trace_id)())
}

/// The `traceparent` to send with a request made now, when tracing.
pub fn traceparent() -> Option<String> {
    HOOKS.get().and_then(|h| (h.traceparent)())
}

/// Whether a request with this `traceparent` (if any) is traced: never without tracing. A request not traced makes
/// no spans at all (those below it are not made either), so that tracing costs little at a low sampling rate.
pub fn sampled(traceparent: Option<&str>) -> bool {
    HOOKS.get().is_some_and(|h| (h.sampled)(traceparent))
}

/// Makes `span` the child of the caller's span named by `traceparent`, when tracing.
pub fn adopt(span: &tracing::Span, traceparent: &str) {
    if let Some(h) = HOOKS.get() {
        (h.adopt)(span, traceparent);
    }
}
