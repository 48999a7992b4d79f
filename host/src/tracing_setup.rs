//! The log and, with `--tracing-config-file`, traces: kube-apiserver's `TracingConfiguration`
//! (`apiserver.config.k8s.io/v1`, also v1beta1 and v1alpha1: `endpoint`, the OTLP gRPC collector, `localhost:4317`
//! by default; `samplingRatePerMillion`, 0 by default), exported with the OpenTelemetry SDK as kube-apiserver
//! exports its traces: OTLP over gRPC without TLS, batched, sampled by the caller's decision when a request carries
//! a W3C `traceparent` and else at the configured rate (kube's ParentBased(TraceIDRatioBased), decided once per
//! request before its spans are made: a request not sampled makes none), service name
//! `wasm-apiserver`.
//!
//! The spans are the `tracing` spans of target [`component_base::trace::TARGET`], which the log never shows; without
//! a configuration no layer wants them and they are not made.

use std::path::Path;

use anyhow::{bail, Context as _};
use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator as _};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry_otlp::WithExportConfig as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use serde_json::Value;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

/// A tracing configuration, as read from its file.
#[derive(Debug, Clone, PartialEq)]
pub struct TracingConfig {
    /// The collector's gRPC endpoint, `host:port`.
    pub endpoint: String,
    /// The share of new traces sampled, per million.
    pub sampling_rate_per_million: u32,
}

impl TracingConfig {
    /// Reads a TracingConfiguration file (YAML or JSON).
    pub fn read(path: &Path) -> anyhow::Result<TracingConfig> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let doc: Value = yaml_serde::from_str(&text).context("the tracing configuration is not valid YAML")?;
        let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        if !matches!(
            api_version,
            "apiserver.config.k8s.io/v1" | "apiserver.config.k8s.io/v1beta1" | "apiserver.config.k8s.io/v1alpha1"
        ) || kind != "TracingConfiguration"
        {
            bail!("expected apiVersion apiserver.config.k8s.io/v1 and kind TracingConfiguration, got {api_version:?} and {kind:?}");
        }
        let endpoint = match doc.get("endpoint") {
            None | Some(Value::Null) => "localhost:4317".to_owned(),
            Some(Value::String(e)) if !e.is_empty() => e.clone(),
            Some(other) => bail!("endpoint: must be host:port, got {other}"),
        };
        let rate = match doc.get("samplingRatePerMillion") {
            None | Some(Value::Null) => 0,
            Some(v) => match v.as_u64() {
                Some(r) if r <= 1_000_000 => r as u32,
                _ => bail!("samplingRatePerMillion: must be between 0 and 1000000, got {v}"),
            },
        };
        Ok(TracingConfig {
            endpoint,
            sampling_rate_per_million: rate,
        })
    }
}

/// What must outlive the server for its last spans to be sent: flushed when dropped.
pub struct Tracing(Option<SdkTracerProvider>);

impl Drop for Tracing {
    fn drop(&mut self) {
        if let Some(provider) = self.0.take() {
            let _ = provider.shutdown();
        }
    }
}

/// The log's filter: `RUST_LOG`, else info (requests at warn), never the trace spans.
fn log_filter() -> tracing_subscriber::EnvFilter {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,wasm_apiserver::http=warn"));
    match format!("{}=off", component_base::trace::TARGET).parse() {
        Ok(directive) => filter.add_directive(directive),
        Err(_) => filter,
    }
}

/// Installs the log (to standard error) and, with a configuration, the trace exporter; call it within the tokio
/// runtime the exporter is to run on.
pub fn init(config: Option<&TracingConfig>) -> anyhow::Result<Tracing> {
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(log_filter());
    let Some(config) = config else {
        tracing_subscriber::registry().with(log).try_init()?;
        return Ok(Tracing(None));
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(format!("http://{}", config.endpoint))
        .build()
        .context("the OTLP exporter")?;
    let rate = config.sampling_rate_per_million;
    let batches = opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
        exporter,
        opentelemetry_sdk::runtime::Tokio,
    )
    .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(batches)
        // The decision is made once per request, before its spans (`sampled`); the spans made are then kept.
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::AlwaysOn)))
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("wasm-apiserver")
                .build(),
        )
        .build();
    let tracer = provider.tracer("wasm-apiserver");
    // A trace span is made only as a request's span (when the request is sampled) or below one: a request not
    // sampled makes none.
    // Each span pays only for what a trace shows: no source location, thread, target or idle time; and its
    // OpenTelemetry context is not made current at every entry (each poll of an instrumented future enters all
    // the spans around it): the hooks below read a span's context from the span itself, and nothing in the server
    // asks OpenTelemetry for the current one.
    let traces = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_location(false)
        .with_threads(false)
        .with_target(false)
        .with_tracked_inactivity(false)
        .with_context_activation(false)
        .with_filter(
            tracing_subscriber::filter::DynFilterFn::new(|meta, cx| {
                meta.target() == component_base::trace::TARGET
                    && (meta.name() == "KubernetesAPI" || cx.lookup_current().is_some())
            })
            // Decided once per callsite for every other target (the log's events, hyper's), which then cost
            // nothing more than without tracing: otherwise each of them asks both filters at every use.
            .with_callsite_filter(|meta| {
                if meta.target() == component_base::trace::TARGET {
                    tracing::subscriber::Interest::sometimes()
                } else {
                    tracing::subscriber::Interest::never()
                }
            }),
        );
    tracing_subscriber::registry().with(log).with(traces).try_init()?;
    RATE.store(rate, std::sync::atomic::Ordering::Relaxed);
    component_base::trace::install(component_base::trace::Hooks {
        trace_id,
        traceparent,
        adopt,
        sampled,
    });
    Ok(Tracing(Some(provider)))
}

/// The sampling rate per million of requests without a `traceparent`.
static RATE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// kube's ParentBased(TraceIDRatioBased): a caller's `traceparent` decides by its sampled flag; else the rate.
fn sampled(traceparent: Option<&str>) -> bool {
    if let Some(flags) = traceparent.and_then(traceparent_flags) {
        return flags & 1 == 1;
    }
    let rate = RATE.load(std::sync::atomic::Ordering::Relaxed);
    rate >= 1_000_000 || (rate > 0 && random_below(1_000_000) < u64::from(rate))
}

/// The flags of a W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), if it is well formed.
fn traceparent_flags(header: &str) -> Option<u8> {
    let parts: Vec<&str> = header.trim().split('-').collect();
    match parts.as_slice() {
        [version, trace, span, flags, ..]
            if version.len() == 2 && *version != "ff" && trace.len() == 32 && span.len() == 16 && flags.len() == 2 =>
        {
            let hex = |s: &str| s.chars().all(|c| c.is_ascii_hexdigit());
            if !hex(trace) || !hex(span) || trace.chars().all(|c| c == '0') || span.chars().all(|c| c == '0') {
                return None;
            }
            u8::from_str_radix(flags, 16).ok()
        }
        _ => None,
    }
}

/// A pseudo-random number below `n` (xorshift per thread, seeded from the clock and the thread): for sampling only.
fn random_below(n: u64) -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
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
        x % n
    })
}

fn trace_id() -> Option<String> {
    let context = tracing::Span::current().context();
    let span = context.span();
    let span_context = span.span_context();
    (span_context.is_valid() && span_context.is_sampled()).then(|| span_context.trace_id().to_string())
}

struct Headers(Vec<(String, String)>);

impl Injector for Headers {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}

fn traceparent() -> Option<String> {
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut headers = Headers(Vec::new());
    TraceContextPropagator::new().inject_context(&context, &mut headers);
    headers.0.into_iter().find(|(k, _)| k == "traceparent").map(|(_, v)| v)
}

struct Traceparent<'a>(&'a str);

impl Extractor for Traceparent<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        (key == "traceparent").then_some(self.0)
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent"]
    }
}

fn adopt(span: &tracing::Span, traceparent: &str) {
    let parent = TraceContextPropagator::new().extract(&Traceparent(traceparent));
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tracing_configuration_is_read_with_kubes_defaults_and_checks() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("tracing.yaml");
        std::fs::write(
            &file,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 250000\n",
        )
        .unwrap();
        let config = TracingConfig::read(&file).unwrap();
        assert_eq!(config.endpoint, "localhost:4317");
        assert_eq!(config.sampling_rate_per_million, 250_000);
        std::fs::write(
            &file,
            "apiVersion: apiserver.config.k8s.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 2000000\n",
        )
        .unwrap();
        let err = TracingConfig::read(&file).unwrap_err().to_string();
        assert!(err.contains("between 0 and 1000000"), "{err}");
        std::fs::write(&file, "apiVersion: v1\nkind: Config\n").unwrap();
        let err = TracingConfig::read(&file).unwrap_err().to_string();
        assert!(err.contains("TracingConfiguration"), "{err}");
    }

    #[test]
    fn a_callers_traceparent_decides_and_malformed_ones_are_ignored() {
        let id = "4bf92f3577b34da6a3ce929d0e0e4736";
        assert_eq!(traceparent_flags(&format!("00-{id}-00f067aa0ba902b7-01")), Some(1));
        assert_eq!(traceparent_flags(&format!("00-{id}-00f067aa0ba902b7-00")), Some(0));
        assert_eq!(traceparent_flags(&format!("00-{id}-0000000000000000-01")), None);
        assert_eq!(traceparent_flags("00-xyz-00f067aa0ba902b7-01"), None);
        assert_eq!(traceparent_flags("garbage"), None);
        RATE.store(0, std::sync::atomic::Ordering::Relaxed);
        assert!(sampled(Some(&format!("00-{id}-00f067aa0ba902b7-01"))));
        assert!(!sampled(Some(&format!("00-{id}-00f067aa0ba902b7-00"))));
        assert!(!sampled(None));
        RATE.store(1_000_000, std::sync::atomic::Ordering::Relaxed);
        assert!(sampled(None));
        assert!(!sampled(Some(&format!("00-{id}-00f067aa0ba902b7-00"))));
    }
}
