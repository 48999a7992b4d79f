//! The trace layer: turns the server's trace spans (target [`component_base::trace::TARGET`]) into OTLP spans and
//! sends them in batches from a task of their own.
//!
//! Made for a request path that pays little for its spans. At a span's start the layer keeps its ids, its start
//! time and its fields beside it (an extension of the span in the subscriber's registry); at its close it moves
//! them, as the OpenTelemetry SDK's [`SpanData`], into a queue; the export task takes the queue in batches and
//! hands them to the OTLP exporter, which encodes and sends them. There is no SDK span, span builder or context per
//! span and no message per span: the costs that made a request traced at every span about 4 µs a span dearer
//! (BENCHMARKS.md). Every span made is sampled: a request not sampled makes none (`component_base::trace`).

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{InstrumentationScope, Key, KeyValue, Value};
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter, SpanLinks};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::Subscriber;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// A span's id and its trace's, as the layer keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ids {
    /// The trace's id (never 0).
    pub trace: u128,
    /// The span's id (never 0).
    pub span: u64,
}

impl Ids {
    /// The W3C `traceparent` header naming this span (sampled: every span made is).
    pub fn traceparent(&self) -> String {
        format!("00-{:032x}-{:016x}-01", self.trace, self.span)
    }
}

/// What an open span's close makes into an OTLP span.
struct Open {
    ids: Ids,
    /// The parent span's id; 0 for the request's span, unless a caller's `traceparent` named one.
    parent: u64,
    parent_is_remote: bool,
    start: SystemTime,
    attributes: Vec<KeyValue>,
}

/// How many spans go in one export (the SDK's batch processor's default).
const BATCH: usize = 512;
/// How many closed spans may wait for the export task; beyond, spans are dropped (and counted) rather than held.
const MAX_QUEUED: usize = 4 * BATCH;
/// How long a span that does not fill a batch waits to be sent.
const DELAY: Duration = Duration::from_secs(1);

/// Closed spans not yet exported.
#[derive(Default)]
pub struct Queue {
    spans: Mutex<Vec<SpanData>>,
    /// Woken when a batch is full.
    full: tokio::sync::Notify,
    dropped: AtomicU64,
}

impl Queue {
    fn push(&self, span: SpanData) {
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        if spans.len() >= MAX_QUEUED {
            drop(spans);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        spans.push(span);
        let full = spans.len() == BATCH;
        drop(spans);
        if full {
            self.full.notify_one();
        }
    }

    fn take(&self) -> Vec<SpanData> {
        let mut spans = self.spans.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *spans, Vec::with_capacity(BATCH))
    }
}

/// The layer; filtered to the trace spans of sampled requests where it is installed.
pub struct SpanLayer {
    queue: Arc<Queue>,
    scope: InstrumentationScope,
}

impl SpanLayer {
    /// A layer filling `queue`; its spans are those of the instrumentation scope `scope`.
    pub fn new(queue: Arc<Queue>, scope: &'static str) -> SpanLayer {
        SpanLayer {
            queue,
            scope: InstrumentationScope::builder(scope).build(),
        }
    }
}

impl<S> tracing_subscriber::Layer<S> for SpanLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else {
            return;
        };
        let parent = span.parent().and_then(|p| p.extensions().get::<Open>().map(|o| o.ids));
        let (trace, parent) = match parent {
            Some(p) => (p.trace, p.span),
            None => (random_trace_id(), 0),
        };
        let mut open = Open {
            ids: Ids {
                trace,
                span: random_nonzero(),
            },
            parent,
            parent_is_remote: false,
            start: SystemTime::now(),
            attributes: Vec::with_capacity(attrs.fields().len()),
        };
        attrs.record(&mut Fields(&mut open.attributes));
        span.extensions_mut().insert(open);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            if let Some(open) = span.extensions_mut().get_mut::<Open>() {
                values.record(&mut Fields(&mut open.attributes));
            }
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else {
            return;
        };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        // The request's span serves a caller; the others are the server's own work within it.
        let kind = match open.parent == 0 || open.parent_is_remote {
            true => SpanKind::Server,
            false => SpanKind::Internal,
        };
        self.queue.push(SpanData {
            span_context: SpanContext::new(
                TraceId::from(open.ids.trace),
                SpanId::from(open.ids.span),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::from(open.parent),
            parent_span_is_remote: open.parent_is_remote,
            span_kind: kind,
            name: Cow::Borrowed(span.metadata().name()),
            start_time: open.start,
            end_time: SystemTime::now(),
            attributes: open.attributes,
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: self.scope.clone(),
        });
    }
}

/// Records a span's fields as OTLP attributes (a field recorded again replaces its value).
struct Fields<'a>(&'a mut Vec<KeyValue>);

impl Fields<'_> {
    fn put(&mut self, field: &Field, value: Value) {
        let key = Key::from_static_str(field.name());
        match self.0.iter_mut().find(|kv| kv.key == key) {
            Some(kv) => kv.value = value,
            None => self.0.push(KeyValue::new(key, value)),
        }
    }
}

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, Value::from(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::from(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::I64(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::I64(i64::try_from(value).unwrap_or(i64::MAX)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::F64(value));
    }
}

/// Applies `f` to the layer's record of a span, if the layer has one (the span is a trace span being made).
fn with_open<T>(dispatch: &tracing::Dispatch, id: &Id, f: impl FnOnce(&mut Open) -> T) -> Option<T> {
    let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
    let span = registry.span(id)?;
    let mut extensions = span.extensions_mut();
    extensions.get_mut::<Open>().map(f)
}

/// The ids of the innermost trace span around the current point, if any.
pub fn current() -> Option<Ids> {
    tracing::dispatcher::get_default(|dispatch| {
        let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
        let current = dispatch.current_span();
        let span = registry.span(current.id()?)?;
        span.scope().find_map(|s| s.extensions().get::<Open>().map(|o| o.ids))
    })
}

/// Makes `span` (a request's span, before any span below it is made) the child of a caller's span: trace `trace`,
/// span `parent`.
pub fn adopt(span: &tracing::Span, trace: u128, parent: u64) {
    span.with_subscriber(|(id, dispatch)| {
        with_open(dispatch, id, |open| {
            open.ids.trace = trace;
            open.parent = parent;
            open.parent_is_remote = true;
        })
    });
}

/// Sends the queue's spans with `exporter`: a batch when one is full, else what there is every [`DELAY`]; until
/// `stop` is notified, when it sends what is left and returns.
pub async fn export(queue: Arc<Queue>, exporter: impl SpanExporter, stop: Arc<tokio::sync::Notify>) {
    let mut reported = 0;
    loop {
        let stopping = tokio::select! {
            _ = queue.full.notified() => false,
            _ = tokio::time::sleep(DELAY) => false,
            _ = stop.notified() => true,
        };
        let mut spans = queue.take();
        while !spans.is_empty() {
            let rest = spans.split_off(spans.len().min(BATCH));
            if let Err(e) = exporter.export(spans).await {
                tracing::warn!(error = %e, "cannot export spans");
            }
            spans = rest;
        }
        let dropped = queue.dropped.load(Ordering::Relaxed);
        if dropped > reported {
            tracing::warn!(
                dropped = dropped - reported,
                "spans dropped: more were made than the collector took"
            );
            reported = dropped;
        }
        if stopping {
            let _ = exporter.shutdown();
            return;
        }
    }
}

/// A pseudo-random number, never 0 (xorshift per thread, seeded from the clock and the thread): for span and trace
/// ids and sampling, where it need not be unpredictable, only spread.
pub fn random_nonzero() -> u64 {
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let nanos = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64);
            let here = &nanos as *const u64 as u64;
            (nanos ^ here.rotate_left(32)) | 1
        });
    }
    STATE.with(|s| {
        let mut x = s.get();
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.set(x);
        x
    })
}

fn random_trace_id() -> u128 {
    (u128::from(random_nonzero()) << 64) | u128::from(random_nonzero())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt as _;

    const TARGET: &str = component_base::trace::TARGET;

    fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
        span.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| &kv.value)
    }

    #[test]
    fn spans_become_otlp_spans_of_one_trace_with_their_fields_parents_and_a_callers_parent() {
        let queue = Arc::new(Queue::default());
        let subscriber = tracing_subscriber::registry().with(SpanLayer::new(queue.clone(), "test"));
        let (caller_trace, caller_span) = (0x4bf92f3577b34da6a3ce929d0e0e4736_u128, 0x00f067aa0ba902b7_u64);
        let (inside, outside) = tracing::subscriber::with_default(subscriber, || {
            let request =
                tracing::info_span!(target: TARGET, "request", method = %"POST", code = tracing::field::Empty);
            adopt(&request, caller_trace, caller_span);
            let inside = request.in_scope(|| {
                let call = tracing::info_span!(target: TARGET, "call", hook = "create", cpu_us = tracing::field::Empty);
                let ids = call.in_scope(|| {
                    tracing::info_span!(target: TARGET, "storage", ok = true).in_scope(|| {});
                    current()
                });
                call.record("cpu_us", 42_u64);
                call.record("cpu_us", 43_u64);
                ids
            });
            request.record("code", 201_i64);
            drop(request);
            (inside, current())
        });
        assert_eq!(outside, None, "no span is current after the request");
        let spans = queue.take();
        let names: Vec<&str> = spans.iter().map(|s| s.name.as_ref()).collect();
        assert_eq!(names, ["storage", "call", "request"], "closed innermost first");
        let (storage, call, request) = (&spans[0], &spans[1], &spans[2]);
        for span in &spans {
            assert_eq!(span.span_context.trace_id(), TraceId::from(caller_trace));
            assert!(span.span_context.is_sampled());
            assert!(span.start_time <= span.end_time);
        }
        assert_eq!(request.parent_span_id, SpanId::from(caller_span));
        assert!(request.parent_span_is_remote);
        assert_eq!(request.span_kind, SpanKind::Server);
        assert_eq!(call.parent_span_id, request.span_context.span_id());
        assert_eq!(call.span_kind, SpanKind::Internal);
        assert!(!call.parent_span_is_remote);
        assert_eq!(storage.parent_span_id, call.span_context.span_id());
        assert_eq!(
            inside,
            Some(Ids {
                trace: caller_trace,
                span: u64::from_be_bytes(call.span_context.span_id().to_bytes())
            }),
            "the current span within the call"
        );
        assert_eq!(attribute(request, "method"), Some(&Value::from("POST")));
        assert_eq!(attribute(request, "code"), Some(&Value::I64(201)));
        assert_eq!(attribute(call, "hook"), Some(&Value::from("create")));
        assert_eq!(
            attribute(call, "cpu_us"),
            Some(&Value::I64(43)),
            "recorded again: replaced"
        );
        assert_eq!(call.attributes.len(), 2);
        assert_eq!(attribute(storage, "ok"), Some(&Value::Bool(true)));
        let ids = inside.unwrap();
        assert_eq!(
            ids.traceparent(),
            format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{:016x}-01", ids.span)
        );
    }

    #[test]
    fn a_request_without_a_caller_starts_a_trace_of_its_own() {
        let queue = Arc::new(Queue::default());
        let subscriber = tracing_subscriber::registry().with(SpanLayer::new(queue.clone(), "test"));
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..2 {
                tracing::info_span!(target: TARGET, "request").in_scope(|| {});
            }
        });
        let spans = queue.take();
        assert_eq!(spans.len(), 2);
        assert_ne!(spans[0].span_context.trace_id(), spans[1].span_context.trace_id());
        for span in &spans {
            assert!(span.span_context.is_valid());
            assert_eq!(span.parent_span_id, SpanId::INVALID);
            assert!(!span.parent_span_is_remote);
        }
    }

    /// An exporter that keeps what it is given.
    #[derive(Debug, Default, Clone)]
    struct Kept(Arc<Mutex<Vec<usize>>>);

    impl SpanExporter for Kept {
        async fn export(&self, batch: Vec<SpanData>) -> opentelemetry_sdk::error::OTelSdkResult {
            self.0.lock().unwrap().push(batch.len());
            Ok(())
        }
    }

    #[tokio::test]
    async fn the_queue_is_sent_in_batches_and_what_is_left_when_stopped_and_overflow_is_dropped() {
        let queue = Arc::new(Queue::default());
        let subscriber = tracing_subscriber::registry().with(SpanLayer::new(queue.clone(), "test"));
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..MAX_QUEUED + 10 {
                tracing::info_span!(target: TARGET, "request").in_scope(|| {});
            }
        });
        assert_eq!(queue.dropped.load(Ordering::Relaxed), 10);
        let kept = Kept::default();
        let stop = Arc::new(tokio::sync::Notify::new());
        stop.notify_one();
        export(queue.clone(), kept.clone(), stop).await;
        assert_eq!(*kept.0.lock().unwrap(), vec![BATCH; MAX_QUEUED / BATCH]);
        assert!(queue.take().is_empty());
    }
}
