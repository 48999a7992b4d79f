//! The log and, with `--tracing-config-file`, traces: kube-apiserver's `TracingConfiguration`
//! (`apiserver.config.k8s.io/v1`, also v1beta1 and v1alpha1: `endpoint`, the OTLP gRPC collector, `localhost:4317`
//! by default; `samplingRatePerMillion`, 0 by default), exported with the OpenTelemetry SDK as kube-apiserver
//! exports its traces: OTLP over gRPC without TLS, batched, sampled by the caller's decision when a request carries
//! a W3C `traceparent` and else at the configured rate (ParentBased(TraceIdRatioBased)), service name
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
    let ratio = f64::from(config.sampling_rate_per_million) / 1_000_000.0;
    let batches = opentelemetry_sdk::trace::span_processor_with_async_runtime::BatchSpanProcessor::builder(
        exporter,
        opentelemetry_sdk::runtime::Tokio,
    )
    .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(batches)
        .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio))))
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name("wasm-apiserver")
                .build(),
        )
        .build();
    let tracer = provider.tracer("wasm-apiserver");
    let traces = tracing_opentelemetry::layer().with_tracer(tracer).with_filter(
        tracing_subscriber::filter::Targets::new().with_target(component_base::trace::TARGET, tracing::Level::TRACE),
    );
    tracing_subscriber::registry().with(log).with(traces).try_init()?;
    component_base::trace::install(component_base::trace::Hooks {
        trace_id,
        traceparent,
        adopt,
    });
    Ok(Tracing(Some(provider)))
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
}
