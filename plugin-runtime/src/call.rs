//! A call into a component: it takes an instance from the pool (or makes one), runs on the async worker or on a
//! lane of the fair share ([`super::fair`]) by how long the component's calls take on average, within the tenant's
//! CPU budget and the call's deadline, and returns the instance to the pool only if the call completed: after a trap,
//! a deadline or an out-of-memory the instance is dropped, so no state survives a failure.

use std::sync::atomic::Ordering;
use std::time::Instant;

use wasmtime::{Store, Trap};

use super::bindings::wasm_apiserver::plugin::types as wit;
use super::client_message;
use super::component::PluginComponent;
use super::contract::error_from_wit;
use super::fair::INLINE_CALL_NANOS;
use super::host::HostState;
use super::linking::Guests;
use apimachinery::plugin::PluginError;
use component_base::metrics::{metrics, PluginErrorLabels};

impl PluginComponent {
    /// Calls the plugin through a pooled instance. `call` names the function for errors and logs.
    ///
    /// A plugin whose calls are short on average (under [`INLINE_CALL_NANOS`] of CPU) runs right on the async
    /// worker, as any short computation would: handing the worker over to another thread (`block_in_place`) costs
    /// more than such a call, and cut creates/s by a third at 32 concurrent requests in the etcd benchmark. A slower
    /// plugin (a loop up to its deadline, a heavy guest) takes a lane of the fair share ([`super::fair`]) and hands
    /// its worker over meanwhile, so that it holds up neither other requests nor other tenants. Host imports that
    /// must wait on storage say so themselves.
    pub fn call<R: Send>(
        &self,
        call: &'static str,
        f: impl FnOnce(&Guests, &mut Store<HostState>) -> wasmtime::Result<R> + Send,
    ) -> Result<R, PluginError> {
        // The call's span of its trace; its CPU time is recorded by `run`.
        let span = tracing::info_span!(
            target: component_base::trace::TARGET,
            "plugin call",
            plugin = %self.name,
            tenant = %self.budget.tenant(),
            hook = call,
            cpu_us = tracing::field::Empty,
        );
        let _entered = span.enter();
        let short = self.average_call_nanos.load(Ordering::Relaxed) < INLINE_CALL_NANOS;
        match tokio::runtime::Handle::try_current() {
            Ok(h) if !short && h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
                let fair = &self.runtime.fair;
                if fair.lanes() == 0 {
                    tokio::task::block_in_place(|| self.run(call, f).0)
                } else {
                    tokio::task::block_in_place(|| self.call_in_lane(fair, &h, call, f))
                }
            }
            _ => self.run(call, f).0,
        }
    }

    /// A slow call: it waits for a lane of the fair share ([`super::fair`]), fairly among every tenant's and plugin's
    /// slow calls, then runs on a lane's thread at the lanes' lower priority, and charges its CPU to the lane.
    fn call_in_lane<R: Send>(
        &self,
        fair: &super::fair::FairShare,
        runtime: &tokio::runtime::Handle,
        call: &'static str,
        f: impl FnOnce(&Guests, &mut Store<HostState>) -> wasmtime::Result<R> + Send,
    ) -> Result<R, PluginError> {
        let tenant = self.budget.tenant();
        let mut lane = match fair.acquire(&tenant, &self.name) {
            Ok(lane) => lane,
            Err(refused) => {
                metrics()
                    .plugin_errors
                    .get_or_create(&PluginErrorLabels {
                        plugin: self.labels.plugin.clone(),
                        kind: "throttled".to_string(),
                    })
                    .inc();
                let why = match refused {
                    super::fair::Refused::QueueFull => "too many of its slow plugin calls are waiting",
                    super::fair::Refused::Waited => "its slow plugin call waited too long for a turn",
                };
                return Err(PluginError::Throttled {
                    plugin: self.name.to_string(),
                    message: format!(
                        "tenant {tenant}: {why}; plugin {:?} was not called: try again later",
                        &*self.name
                    ),
                    retry_after: 1,
                });
            }
        };
        let span = tracing::Span::current();
        let ran = fair.run_on_lane(|| {
            let _runtime = runtime.enter();
            let _entered = span.enter();
            self.run(call, f)
        });
        let (result, cpu) = ran.unwrap_or_else(|e| {
            (
                Err(PluginError::Failed {
                    plugin: self.name.to_string(),
                    call,
                    message: format!("no thread to run the call on: {e}"),
                }),
                std::time::Duration::ZERO,
            )
        });
        lane.charge(cpu);
        result
    }

    /// Runs one call on the calling thread, within its tenant's budget, and records its metrics. Returns the result
    /// and the CPU time the call used.
    fn run<R>(
        &self,
        call: &'static str,
        f: impl FnOnce(&Guests, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> (Result<R, PluginError>, std::time::Duration) {
        if let Err(spent) = self.budget.admit(&self.name) {
            return (
                Err(PluginError::Throttled {
                    plugin: self.name.to_string(),
                    message: spent.message,
                    retry_after: spent.retry_after,
                }),
                std::time::Duration::ZERO,
            );
        }
        let started = Instant::now();
        let cpu_before = super::budget::thread_cpu_time();
        let result = self.call_once(call, f);
        let cpu = super::budget::thread_cpu_time().saturating_sub(cpu_before);
        self.budget.charge(cpu);
        let span = tracing::Span::current();
        if !span.is_disabled() {
            span.record("cpu_us", u64::try_from(cpu.as_micros()).unwrap_or(u64::MAX));
        }
        let elapsed = started.elapsed();
        // An exponential moving average over about eight calls of the CPU time they used (not their wall time,
        // which a busy machine stretches: a short call must stay short under load); races between threads only
        // blur it.
        let nanos = u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX);
        let average = self.average_call_nanos.load(Ordering::Relaxed);
        self.average_call_nanos
            .store(average - average / 8 + nanos / 8, Ordering::Relaxed);
        let m = metrics();
        m.plugin_calls.get_or_create(&self.labels).inc();
        m.plugin_call_duration
            .get_or_create(&self.labels)
            .observe(elapsed.as_secs_f64());
        let kind = match &result {
            Ok(_) => None,
            Err(PluginError::Rejected(_)) => Some("error"),
            Err(PluginError::Timeout { .. }) => Some("timeout"),
            Err(PluginError::Failed { .. }) => Some("trap"),
            Err(PluginError::Throttled { .. }) => Some("throttled"),
            Err(PluginError::Storage { .. }) => Some("storage"),
        };
        if let Some(kind) = kind {
            let labels = PluginErrorLabels {
                plugin: self.labels.plugin.clone(),
                kind: kind.to_string(),
            };
            m.plugin_errors.get_or_create(&labels).inc();
        }
        (result, cpu)
    }

    fn call_once<R>(
        &self,
        call: &'static str,
        f: impl FnOnce(&Guests, &mut Store<HostState>) -> wasmtime::Result<R>,
    ) -> Result<R, PluginError> {
        {
            self.linked.touch();
            let generation = self.budget.generation();
            // An instance made under another memory limit is discarded.
            let mut inst = match self.pool.take(generation) {
                Some(inst) => inst,
                None => {
                    metrics().plugin_instantiations.get_or_create(&self.labels).inc();
                    self.instantiate().map_err(|e| self.failure(call, e, None))?
                }
            };
            inst.store.data_mut().start_call();
            inst.store.data_mut().timeout = self.budget.call_timeout();
            inst.store.set_epoch_deadline(1);
            let running = self.runtime.epoch.running();
            let result = f(&inst.guests, &mut inst.store);
            drop(running);
            match result {
                Ok(r) => {
                    let import_failure = inst.store.data_mut().import_failure.take();
                    inst.last_used = Instant::now();
                    if inst.outgrown() {
                        metrics().plugin_instances_retired.get_or_create(&self.labels).inc();
                        tracing::debug!(plugin = %self.name, call, "instance retired: its memory grew");
                        drop(inst);
                    } else {
                        self.pool.keep(inst, &self.runtime.pool_budget);
                    }
                    match import_failure {
                        // The plugin read storage and storage failed: the call fails with that, not with however
                        // the plugin reported it.
                        Some(error) => Err(PluginError::Storage {
                            plugin: self.name.to_string(),
                            call,
                            error,
                        }),
                        None => Ok(r),
                    }
                }
                // The instance is dropped: nothing survives a trap.
                Err(e) => {
                    let logged = inst.store.data_mut().last_error_log.take();
                    Err(self.failure(call, e.into(), logged))
                }
            }
        }
    }

    /// The error for a call that failed in wasmtime; `logged` is the last error the plugin logged during it.
    fn failure(&self, call: &'static str, e: anyhow::Error, logged: Option<String>) -> PluginError {
        let plugin = self.name.to_string();
        if matches!(e.downcast_ref::<Trap>(), Some(Trap::Interrupt)) {
            return PluginError::Timeout { plugin, call };
        }
        tracing::warn!(plugin = %plugin, call, error = format!("{e:#}"), "plugin call failed; instance discarded");
        let mut message = client_message(&e);
        if let Some(logged) = logged {
            message = format!("{message}; the plugin's last error log: {logged}");
        }
        PluginError::Failed { plugin, call, message }
    }

    /// Maps the guest `result` of `call` into ours. A guest's `internal` error (an exception or bug the SDK caught)
    /// becomes a failure naming the plugin and the call, as a trap does, and is logged; its details (a traceback) are
    /// in the plugin's own log lines just before.
    pub fn guest<T>(
        &self,
        call: &'static str,
        r: Result<Result<T, wit::Error>, PluginError>,
    ) -> Result<T, PluginError> {
        r?.map_err(|e| self.guest_error(call, e))
    }

    /// A guest's error returned by `call`, as [`PluginComponent::guest`] maps it.
    pub fn guest_error(&self, call: &'static str, e: wit::Error) -> PluginError {
        error_from_wit(&self.name, call, e)
    }
}

#[cfg(test)]
mod tests;
