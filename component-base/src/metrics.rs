//! Metrics in Prometheus text (`/metrics`): the apiserver's request counters and per-plugin call metrics.
//!
//! One process-wide registry, like Kubernetes' `legacyregistry`: the plugin runtime and the handler chain record into
//! it without plumbing.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// Labels naming a plugin.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginLabels {
    /// The plugin's name (its file name without `.wasm`).
    pub plugin: String,
}

/// Labels of a failed plugin call.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PluginErrorLabels {
    /// The plugin's name.
    pub plugin: String,
    /// `error` (the plugin returned an error), `trap` (it trapped or misbehaved) or `timeout`.
    pub kind: String,
}

/// Labels of a plugin file.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FileLabels {
    /// The file name.
    pub file: String,
}

/// What an API request was, as kube-apiserver labels its request metrics: a resource request of a served resource
/// names it; anything else (discovery, OpenAPI, health, unknown paths) has only its verb, the HTTP method.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestKind {
    /// `LIST` and `WATCH` for those reads, else the HTTP method (`GET`, `POST`, `PUT`, `PATCH`, `DELETE`).
    pub verb: &'static str,
    /// The API group.
    pub group: String,
    /// The API version.
    pub version: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource.
    pub subresource: String,
    /// `resource` (one object), `namespace` (a namespace's collection) or `cluster` (across namespaces).
    pub scope: &'static str,
}

impl RequestKind {
    /// A request that is not a resource request.
    pub fn other(method: &http::Method) -> RequestKind {
        RequestKind {
            verb: method_label(method),
            ..RequestKind::default()
        }
    }
}

/// An HTTP method as a metric label: the standard methods by name, any other as `OTHER` (a label set per made-up
/// method would let clients grow the metrics without bound).
pub fn method_label(method: &http::Method) -> &'static str {
    use http::Method;
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "OTHER",
    }
}

/// Labels of a finished API request: what it was and its response code.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// What the request was.
    #[prometheus(flatten)]
    pub kind: RequestKind,
    /// The response code.
    pub code: u16,
}

/// Labels of a storage request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct StorageLabels {
    /// `get`, `list`, `create`, `update`, `delete`, `watch`, `current_revision`, `compact` or `request_progress`.
    pub operation: String,
    /// The resource, as `<resource>.<group>` (empty for requests about no one resource).
    pub r#type: String,
}

/// Labels of watch events, as kube-apiserver's `apiserver_watch_events_*`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct WatchEventLabels {
    /// The API group.
    pub group: String,
    /// The API version the events are in.
    pub version: String,
    /// The kind of the objects.
    pub kind: String,
}

/// Labels of a resource's watch cache.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResourceLabels {
    /// The group.
    pub group: String,
    /// The resource (plural).
    pub resource: String,
}

/// Labels of the in-flight limit's metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct InflightLabels {
    /// `readOnly` or `mutating`.
    pub request_kind: String,
}

/// The labels of a tenant limit's rejections: the limit, never the tenant (so the series do not grow with tenants).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LimitLabels {
    /// `objects`, `storageBytes`, `maxInflight`, `requestsPerSecond` or `pluginCpu`.
    pub limit: String,
}

/// The labels of API Priority and Fairness's metrics of a flow schema's requests at its level.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FlowLabels {
    /// The FlowSchema.
    pub flow_schema: String,
    /// The PriorityLevelConfiguration.
    pub priority_level: String,
}

/// [`FlowLabels`] and whether the request went on to execute.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FlowWaitLabels {
    /// The FlowSchema.
    pub flow_schema: String,
    /// The PriorityLevelConfiguration.
    pub priority_level: String,
    /// `true` or `false`.
    pub execute: String,
}

/// [`FlowLabels`] and why the request was refused.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct FlowRejectionLabels {
    /// The FlowSchema.
    pub flow_schema: String,
    /// The PriorityLevelConfiguration.
    pub priority_level: String,
    /// `queue-full`, `concurrency-limit` or `time-out`.
    pub reason: String,
}

/// The label of a priority level's metrics.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LevelLabels {
    /// The PriorityLevelConfiguration.
    pub priority_level: String,
}

/// Every metric the server records.
pub struct Metrics {
    registry: Registry,
    /// `wasm_apiserver_plugin_calls_total`.
    pub plugin_calls: Family<PluginLabels, Counter>,
    /// `wasm_apiserver_plugin_call_errors_total` by kind.
    pub plugin_errors: Family<PluginErrorLabels, Counter>,
    /// `wasm_apiserver_plugin_call_duration_seconds`.
    pub plugin_call_duration: Family<PluginLabels, Histogram, fn() -> Histogram>,
    /// `wasm_apiserver_plugin_instances`: live instances (pooled or in a call).
    pub plugin_instances: Family<PluginLabels, Gauge>,
    /// `wasm_apiserver_plugin_instantiations_total`.
    pub plugin_instantiations: Family<PluginLabels, Counter>,
    /// `wasm_apiserver_plugin_memory_bytes`: the linear memory of the live instances.
    pub plugin_memory: Family<PluginLabels, Gauge>,
    /// `wasm_apiserver_plugin_instances_retired_total`: instances dropped after a call because their memory grew.
    pub plugin_instances_retired: Family<PluginLabels, Counter>,
    /// `wasm_apiserver_plugin_load_failures`: 1 for each plugin file that currently fails to load.
    pub plugin_load_failures: Family<FileLabels, Gauge>,
    /// `wasm_apiserver_plugin_components_loaded`: components whose code is in memory (an idle one is unloaded).
    pub plugin_components_loaded: Gauge,
    /// `wasm_apiserver_plugin_pooled_memory_bytes`: the linear memory of the idle (pooled) instances of every plugin.
    pub plugin_pooled_memory: Gauge,
    /// `wasm_apiserver_plugin_instances_not_pooled_total`: instances dropped after a call, not kept idle, because they
    /// did not fit in the host-wide bound of idle instances' memory (`--plugin-pool-memory`) even with the others
    /// dropped.
    pub plugin_instances_not_pooled: Counter,
    /// `wasm_apiserver_plugin_components_compiled_total`: components compiled (not found shared in memory or in the
    /// compile cache) by the optimizing compiler, Cranelift.
    pub plugin_components_compiled: Counter,
    /// `wasm_apiserver_plugin_components_compiled_baseline_total`: components compiled by the baseline compiler,
    /// Winch, to be served while Cranelift compiles them.
    pub plugin_components_compiled_baseline: Counter,
    /// `wasm_apiserver_plugin_artifacts_pulled_total`: plugin artifacts downloaded from registries (once per digest
    /// and host, whatever tenants name it).
    pub plugin_artifacts_pulled: Counter,
    /// `apiserver_request_total` by method and code.
    pub requests: Family<RequestLabels, Counter>,
    /// `apiserver_request_duration_seconds` (for a watch: until its stream starts).
    pub request_duration: Family<RequestKind, Histogram, fn() -> Histogram>,
    /// `wasm_apiserver_storage_request_duration_seconds`.
    pub storage_request_duration: Family<StorageLabels, Histogram, fn() -> Histogram>,
    /// `wasm_apiserver_storage_request_errors_total`: requests that failed in storage (unreachable, refused, broken).
    pub storage_request_errors: Family<StorageLabels, Counter>,
    /// `apiserver_longrunning_requests`: watches being served, by what they watch.
    pub longrunning_requests: Family<RequestKind, Gauge>,
    /// `apiserver_watch_events_total`: events sent to watchers.
    pub watch_events: Family<WatchEventLabels, Counter>,
    /// `apiserver_watch_events_sizes`: the size of each event sent, in bytes.
    pub watch_event_sizes: Family<WatchEventLabels, Histogram, fn() -> Histogram>,
    /// `apiserver_terminated_watchers_total`: watchers ended by the watch cache for being too slow.
    pub terminated_watchers: Family<ResourceLabels, Counter>,
    /// `wasm_apiserver_watch_cache_objects`, set when scraped.
    pub watch_cache_objects: Family<ResourceLabels, Gauge>,
    /// `wasm_apiserver_watch_cache_bytes`: keys and JSON held, set when scraped.
    pub watch_cache_bytes: Family<ResourceLabels, Gauge>,
    /// `wasm_apiserver_watch_cache_watchers`, set when scraped.
    pub watch_cache_watchers: Family<ResourceLabels, Gauge>,
    /// `wasm_apiserver_watch_cache_upstream_reads`: reads the cache passed to storage, set when scraped.
    pub watch_cache_upstream_reads: Family<ResourceLabels, Gauge>,
    /// `apiserver_current_inflight_requests`: requests being served under the in-flight limit, by kind.
    pub inflight_requests: Family<InflightLabels, Gauge>,
    /// `apiserver_dropped_requests_total`: requests refused with 429 by the in-flight limit, by kind.
    pub dropped_requests: Family<InflightLabels, Counter>,
    /// `apiserver_request_timeouts_total`: requests answered 504 because they ran past their deadline.
    pub request_timeouts: Counter,
    /// `wasm_apiserver_tenant_rejections_total`: requests and writes refused by a tenant's limits, by limit.
    pub tenant_rejections: Family<LimitLabels, Counter>,
    /// `wasm_apiserver_tenants`: the tenants served (besides the default one).
    pub tenants: Gauge,
    /// `wasm_apiserver_tenants_in_memory`: the served tenants built in memory (besides the default one); a tenant
    /// created through the API is built on its first request and dropped when idle.
    pub tenants_in_memory: Gauge,
    /// `wasm_apiserver_registries`: the registries in memory (the default tenant's, each served tenant's, and any a
    /// removed tenant's requests in flight still hold): more than the tenants served for long means a leak.
    pub registries: Gauge,
    /// `authentication_failures_total`: requests answered 401 (kube-apiserver's
    /// `authentication_attempts{result="failure"}`).
    pub authentication_failures: Counter,
    /// `apiserver_audit_event_total`: audit events produced.
    pub audit_events: Counter,
    /// `apiserver_audit_error_total{plugin="log"}`: audit events that could not be written (a full buffer or a
    /// failing file).
    pub audit_errors: Family<AuditLabels, Counter>,
    /// `apiserver_flowcontrol_dispatched_requests_total`.
    pub flowcontrol_dispatched_requests: Family<FlowLabels, Counter>,
    /// `apiserver_flowcontrol_rejected_requests_total`.
    pub flowcontrol_rejected_requests: Family<FlowRejectionLabels, Counter>,
    /// `apiserver_flowcontrol_current_inqueue_requests`.
    pub flowcontrol_current_inqueue_requests: Family<FlowLabels, Gauge>,
    /// `apiserver_flowcontrol_current_executing_requests`.
    pub flowcontrol_current_executing_requests: Family<FlowLabels, Gauge>,
    /// `apiserver_flowcontrol_current_executing_seats`.
    pub flowcontrol_current_executing_seats: Family<FlowLabels, Gauge>,
    /// `apiserver_flowcontrol_request_wait_duration_seconds`.
    pub flowcontrol_request_wait_duration: Family<FlowWaitLabels, Histogram, fn() -> Histogram>,
    /// `apiserver_flowcontrol_nominal_limit_seats`.
    pub flowcontrol_nominal_limit_seats: Family<LevelLabels, Gauge>,
    /// `apiserver_flowcontrol_current_limit_seats`.
    pub flowcontrol_current_limit_seats: Family<LevelLabels, Gauge>,
    /// `apiserver_flowcontrol_lower_limit_seats`.
    pub flowcontrol_lower_limit_seats: Family<LevelLabels, Gauge>,
    /// `apiserver_flowcontrol_upper_limit_seats`.
    pub flowcontrol_upper_limit_seats: Family<LevelLabels, Gauge>,
}

/// The labels of audit errors: the backend (`log`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AuditLabels {
    /// The audit backend.
    pub plugin: String,
}

fn request_histogram() -> Histogram {
    // 100 µs .. ~26 s.
    Histogram::new(exponential_buckets(1e-4, 4.0, 10))
}

fn size_histogram() -> Histogram {
    // 1 KiB .. 128 MiB, as kube-apiserver's.
    Histogram::new(exponential_buckets(1024.0, 2.0, 18))
}

fn wait_histogram() -> Histogram {
    // kube's buckets of apiserver_flowcontrol_request_wait_duration_seconds.
    Histogram::new([0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0])
}

fn call_histogram() -> Histogram {
    // 1 µs .. ~4 s.
    Histogram::new(exponential_buckets(1e-6, 4.0, 12))
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::default();
        let m = Metrics {
            plugin_calls: Family::default(),
            plugin_errors: Family::default(),
            plugin_call_duration: Family::new_with_constructor(call_histogram as fn() -> Histogram),
            plugin_instances: Family::default(),
            plugin_instantiations: Family::default(),
            plugin_memory: Family::default(),
            plugin_instances_retired: Family::default(),
            plugin_load_failures: Family::default(),
            plugin_components_loaded: Gauge::default(),
            plugin_pooled_memory: Gauge::default(),
            plugin_instances_not_pooled: Counter::default(),
            plugin_components_compiled: Counter::default(),
            plugin_components_compiled_baseline: Counter::default(),
            plugin_artifacts_pulled: Counter::default(),
            requests: Family::default(),
            request_duration: Family::new_with_constructor(request_histogram as fn() -> Histogram),
            longrunning_requests: Family::default(),
            watch_events: Family::default(),
            watch_event_sizes: Family::new_with_constructor(size_histogram as fn() -> Histogram),
            terminated_watchers: Family::default(),
            storage_request_duration: Family::new_with_constructor(call_histogram as fn() -> Histogram),
            storage_request_errors: Family::default(),
            watch_cache_objects: Family::default(),
            watch_cache_bytes: Family::default(),
            watch_cache_watchers: Family::default(),
            watch_cache_upstream_reads: Family::default(),
            inflight_requests: Family::default(),
            dropped_requests: Family::default(),
            request_timeouts: Counter::default(),
            tenant_rejections: Family::default(),
            tenants: Gauge::default(),
            tenants_in_memory: Gauge::default(),
            registries: Gauge::default(),
            authentication_failures: Counter::default(),
            audit_events: Counter::default(),
            audit_errors: Family::default(),
            flowcontrol_dispatched_requests: Family::default(),
            flowcontrol_rejected_requests: Family::default(),
            flowcontrol_current_inqueue_requests: Family::default(),
            flowcontrol_current_executing_requests: Family::default(),
            flowcontrol_current_executing_seats: Family::default(),
            flowcontrol_request_wait_duration: Family::new_with_constructor(wait_histogram as fn() -> Histogram),
            flowcontrol_nominal_limit_seats: Family::default(),
            flowcontrol_current_limit_seats: Family::default(),
            flowcontrol_lower_limit_seats: Family::default(),
            flowcontrol_upper_limit_seats: Family::default(),
            registry: Registry::default(),
        };
        registry.register(
            "wasm_apiserver_plugin_calls",
            "Calls into plugins",
            m.plugin_calls.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_call_errors",
            "Plugin calls that returned an error, trapped or timed out",
            m.plugin_errors.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_call_duration_seconds",
            "Time spent inside plugin calls, instantiation included",
            m.plugin_call_duration.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_instances",
            "Live plugin instances",
            m.plugin_instances.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_instantiations",
            "Plugin instances created",
            m.plugin_instantiations.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_memory_bytes",
            "Linear memory of the live plugin instances (pooled or in a call), in bytes",
            m.plugin_memory.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_instances_retired",
            "Plugin instances dropped after a call because their linear memory had grown well past its size when they \
             were made (a fresh instance serves the next call)",
            m.plugin_instances_retired.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_pooled_memory_bytes",
            "Linear memory of the idle (pooled) instances of every plugin, in bytes",
            m.plugin_pooled_memory.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_instances_not_pooled",
            "Plugin instances dropped after a call instead of kept idle: they did not fit in the host-wide bound of idle instances' memory",
            m.plugin_instances_not_pooled.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_components_compiled",
            "Plugin components compiled by the optimizing compiler: not found shared in memory or in the compile cache",
            m.plugin_components_compiled.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_components_compiled_baseline",
            "Plugin components compiled by the baseline compiler, served while the optimizing compiler compiles them",
            m.plugin_components_compiled_baseline.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_artifacts_pulled",
            "Plugin artifacts downloaded from OCI registries: once per digest and host, whatever tenants name it",
            m.plugin_artifacts_pulled.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_components_loaded",
            "Plugin components whose code is in memory: an idle one is unloaded, and loaded again on its next call",
            m.plugin_components_loaded.clone(),
        );
        registry.register(
            "wasm_apiserver_plugin_load_failures",
            "Plugin files that currently fail to load",
            m.plugin_load_failures.clone(),
        );
        registry.register(
            "apiserver_request",
            "API requests by verb, group, version, resource, subresource, scope and code",
            m.requests.clone(),
        );
        registry.register(
            "apiserver_request_duration_seconds",
            "API request latency by verb, group, version, resource, subresource and scope (watches: until the stream starts)",
            m.request_duration.clone(),
        );
        registry.register(
            "apiserver_longrunning_requests",
            "Watches being served, by verb, group, version, resource, subresource and scope",
            m.longrunning_requests.clone(),
        );
        registry.register(
            "apiserver_watch_events",
            "Events sent to watchers, by group, version and kind",
            m.watch_events.clone(),
        );
        registry.register(
            "apiserver_watch_events_sizes",
            "Sizes in bytes of the events sent to watchers, by group, version and kind",
            m.watch_event_sizes.clone(),
        );
        registry.register(
            "apiserver_terminated_watchers",
            "Watchers ended by the watch cache because they could not keep up, by group and resource",
            m.terminated_watchers.clone(),
        );
        registry.register(
            "wasm_apiserver_storage_request_duration_seconds",
            "Storage (etcd or embedded) request latency by operation and resource",
            m.storage_request_duration.clone(),
        );
        registry.register(
            "wasm_apiserver_storage_request_errors",
            "Storage requests that failed: store unreachable, request refused, or store broken",
            m.storage_request_errors.clone(),
        );
        registry.register(
            "wasm_apiserver_watch_cache_objects",
            "Objects held by each resource's watch cache",
            m.watch_cache_objects.clone(),
        );
        registry.register(
            "wasm_apiserver_watch_cache_bytes",
            "Bytes of keys and JSON held by each resource's watch cache",
            m.watch_cache_bytes.clone(),
        );
        registry.register(
            "wasm_apiserver_watch_cache_watchers",
            "Watches served by each resource's watch cache",
            m.watch_cache_watchers.clone(),
        );
        registry.register(
            "wasm_apiserver_watch_cache_upstream_reads",
            "Reads each resource's watch cache passed to storage because it had not caught up",
            m.watch_cache_upstream_reads.clone(),
        );
        registry.register(
            "apiserver_current_inflight_requests",
            "Requests being served under the in-flight limit, by kind (readOnly or mutating)",
            m.inflight_requests.clone(),
        );
        registry.register(
            "apiserver_dropped_requests",
            "Requests refused with 429 by the in-flight limit, by kind",
            m.dropped_requests.clone(),
        );
        registry.register(
            "wasm_apiserver_tenant_rejections",
            "Requests and writes refused by a tenant's limits, by limit",
            m.tenant_rejections.clone(),
        );
        registry.register(
            "wasm_apiserver_tenants",
            "The tenants served, besides the default one",
            m.tenants.clone(),
        );
        registry.register(
            "wasm_apiserver_tenants_in_memory",
            "The served tenants built in memory, besides the default one (the others are built on their next request)",
            m.tenants_in_memory.clone(),
        );
        registry.register(
            "wasm_apiserver_registries",
            "The tenants' registries in memory (a removed tenant's goes once its last request ends)",
            m.registries.clone(),
        );
        registry.register(
            "apiserver_request_timeouts",
            "Requests answered 504 because they ran past their deadline",
            m.request_timeouts.clone(),
        );
        registry.register(
            "authentication_failures",
            "Requests refused with 401 Unauthorized",
            m.authentication_failures.clone(),
        );
        registry.register("apiserver_audit_event", "Audit events produced", m.audit_events.clone());
        registry.register(
            "apiserver_audit_error",
            "Audit events that could not be written, by backend",
            m.audit_errors.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_dispatched_requests",
            "Requests executed by API Priority and Fairness",
            m.flowcontrol_dispatched_requests.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_rejected_requests",
            "Requests refused by API Priority and Fairness",
            m.flowcontrol_rejected_requests.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_inqueue_requests",
            "Requests waiting in API Priority and Fairness's queues",
            m.flowcontrol_current_inqueue_requests.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_executing_requests",
            "Requests executing in API Priority and Fairness",
            m.flowcontrol_current_executing_requests.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_executing_seats",
            "Seats taken by executing requests",
            m.flowcontrol_current_executing_seats.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_request_wait_duration_seconds",
            "How long requests waited in their queue",
            m.flowcontrol_request_wait_duration.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_nominal_limit_seats",
            "Each priority level's seats by its shares",
            m.flowcontrol_nominal_limit_seats.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_limit_seats",
            "Each priority level's seats now, after lending and borrowing",
            m.flowcontrol_current_limit_seats.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_lower_limit_seats",
            "The fewest seats a priority level may have",
            m.flowcontrol_lower_limit_seats.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_upper_limit_seats",
            "The most seats a priority level may have",
            m.flowcontrol_upper_limit_seats.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The metrics in Prometheus text format.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

/// The process-wide metrics.
pub fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The standard methods label requests by name; any other method shares one label, so made-up methods cannot
    /// grow the request metrics.
    #[test]
    fn request_metrics_label_standard_methods_by_name_and_others_alike() {
        assert_eq!(method_label(&http::Method::GET), "GET");
        assert_eq!(method_label(&http::Method::PATCH), "PATCH");
        for made_up in ["FOO", "BREW", "PROPFIND"] {
            let method = http::Method::from_bytes(made_up.as_bytes()).expect("a method token");
            assert_eq!(method_label(&method), "OTHER", "{made_up}");
            assert_eq!(RequestKind::other(&method).verb, "OTHER");
        }
    }
}
