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

use std::sync::Arc;

use anyhow::{bail, Context as _};
use opentelemetry_otlp::WithExportConfig as _;
use serde_json::Value;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

use crate::trace_layer;

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

/// What must outlive the server for its last spans to be sent: they are, when it is dropped (for up to five
/// seconds).
pub struct Tracing(Option<Exporting>);

struct Exporting {
    runtime: tokio::runtime::Handle,
    stop: Arc<tokio::sync::Notify>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Tracing {
    fn drop(&mut self) {
        if let Some(exporting) = self.0.take() {
            exporting.stop.notify_one();
            let flushed = tokio::time::timeout(std::time::Duration::from_secs(5), exporting.task);
            let _ = exporting.runtime.block_on(flushed);
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
/// runtime the exporter is to run on (and drop the answer outside it).
pub fn init(config: Option<&TracingConfig>) -> anyhow::Result<Tracing> {
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_filter(log_filter());
    let Some(config) = config else {
        tracing_subscriber::registry().with(log).try_init()?;
        return Ok(Tracing(None));
    };
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(format!("http://{}", config.endpoint))
        .build()
        .context("the OTLP exporter")?;
    opentelemetry_sdk::trace::SpanExporter::set_resource(
        &mut exporter,
        &opentelemetry_sdk::Resource::builder()
            .with_service_name("wasm-apiserver")
            .build(),
    );
    let queue = Arc::new(trace_layer::Queue::default());
    // A trace span is made only as a request's span (when the request is sampled) or below one: a request not
    // sampled makes none.
    let traces = trace_layer::SpanLayer::new(queue.clone(), "wasm-apiserver").with_filter(
        tracing_subscriber::filter::DynFilterFn::new(|meta, cx| {
            meta.target() == component_base::trace::TARGET
                && (meta.name() == "KubernetesAPI" || cx.lookup_current().is_some())
        })
        // Decided once per callsite for every other target (the log's events, hyper's), which then cost nothing
        // more than without tracing: otherwise each of them asks both filters at every use.
        .with_callsite_filter(|meta| {
            if meta.target() == component_base::trace::TARGET {
                tracing::subscriber::Interest::sometimes()
            } else {
                tracing::subscriber::Interest::never()
            }
        }),
    );
    tracing_subscriber::registry().with(log).with(traces).try_init()?;
    RATE.store(config.sampling_rate_per_million, std::sync::atomic::Ordering::Relaxed);
    component_base::trace::install(component_base::trace::Hooks {
        trace_id,
        traceparent,
        adopt,
        sampled,
    });
    let stop = Arc::new(tokio::sync::Notify::new());
    let task = tokio::spawn(trace_layer::export(queue, exporter, stop.clone()));
    Ok(Tracing(Some(Exporting {
        runtime: tokio::runtime::Handle::current(),
        stop,
        task,
    })))
}

/// The sampling rate per million of requests without a `traceparent`.
static RATE: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// kube's ParentBased(TraceIDRatioBased): a caller's `traceparent` decides by its sampled flag; else the rate.
fn sampled(traceparent: Option<&str>) -> bool {
    if let Some(caller) = traceparent.and_then(parse_traceparent) {
        return caller.flags & 1 == 1;
    }
    let rate = RATE.load(std::sync::atomic::Ordering::Relaxed);
    rate >= 1_000_000 || (rate > 0 && trace_layer::random_nonzero() % 1_000_000 < u64::from(rate))
}

/// A W3C `traceparent` (`00-<32 hex>-<16 hex>-<2 hex>`), read.
#[derive(Debug, PartialEq)]
struct Traceparent {
    trace: u128,
    span: u64,
    flags: u8,
}

/// Reads a `traceparent`, if it is well formed (version not ff, ids not all zeros; a later version may add fields).
fn parse_traceparent(header: &str) -> Option<Traceparent> {
    let mut parts = header.trim().split('-');
    let (version, trace, span, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    let hex = |s: &str, len: usize| s.len() == len && s.chars().all(|c| c.is_ascii_hexdigit());
    if !hex(version, 2) || version == "ff" || !hex(trace, 32) || !hex(span, 16) || !hex(flags, 2) {
        return None;
    }
    if version == "00" && parts.next().is_some() {
        return None;
    }
    let parsed = Traceparent {
        trace: u128::from_str_radix(trace, 16).ok()?,
        span: u64::from_str_radix(span, 16).ok()?,
        flags: u8::from_str_radix(flags, 16).ok()?,
    };
    (parsed.trace != 0 && parsed.span != 0).then_some(parsed)
}

fn trace_id() -> Option<String> {
    trace_layer::current().map(|ids| format!("{:032x}", ids.trace))
}

fn traceparent() -> Option<String> {
    trace_layer::current().map(|ids| ids.traceparent())
}

fn adopt(span: &tracing::Span, traceparent: &str) {
    if let Some(caller) = parse_traceparent(traceparent) {
        trace_layer::adopt(span, caller.trace, caller.span);
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
        let flags = |header: &str| parse_traceparent(header).map(|t| t.flags);
        assert_eq!(
            parse_traceparent(&format!("00-{id}-00f067aa0ba902b7-01")),
            Some(Traceparent {
                trace: 0x4bf92f3577b34da6a3ce929d0e0e4736,
                span: 0x00f067aa0ba902b7,
                flags: 1
            })
        );
        assert_eq!(flags(&format!("00-{id}-00f067aa0ba902b7-00")), Some(0));
        assert_eq!(flags(&format!("01-{id}-00f067aa0ba902b7-01-later")), Some(1));
        assert_eq!(flags(&format!("00-{id}-00f067aa0ba902b7-01-later")), None);
        assert_eq!(flags(&format!("ff-{id}-00f067aa0ba902b7-01")), None);
        assert_eq!(flags(&format!("00-{id}-0000000000000000-01")), None);
        assert_eq!(flags("00-00000000000000000000000000000000-00f067aa0ba902b7-01"), None);
        assert_eq!(flags("00-xyz-00f067aa0ba902b7-01"), None);
        assert_eq!(flags(&format!("00-{id}-+0f067aa0ba902b7-01")), None);
        assert_eq!(flags("garbage"), None);
        RATE.store(0, std::sync::atomic::Ordering::Relaxed);
        assert!(sampled(Some(&format!("00-{id}-00f067aa0ba902b7-01"))));
        assert!(!sampled(Some(&format!("00-{id}-00f067aa0ba902b7-00"))));
        assert!(!sampled(None));
        RATE.store(1_000_000, std::sync::atomic::Ordering::Relaxed);
        assert!(sampled(None));
        assert!(!sampled(Some(&format!("00-{id}-00f067aa0ba902b7-00"))));
    }
}
