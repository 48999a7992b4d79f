//! The host side of the `wasm-apiserver:plugin/host` imports: logging and read-only access to declared resources.
//!
//! Deny by default: a plugin reads only the resources it declared in `scheme.info().reads`, through a [`HostReads`]
//! given to it when it is registered; before that, every read is forbidden.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use wasmtime::StoreLimits;

use apimachinery::plugin::{HostReads, ReadError};
use apimachinery::status::ApiError;

use super::bindings::wasm_apiserver::plugin::host::{Host, LogLevel};
use super::bindings::wasm_apiserver::plugin::types::{Error as GuestError, Host as TypesHost, User};

/// What a plugin may read: the declared resources, and where to read them from once the plugin is registered.
#[derive(Default)]
pub struct ReadGrant {
    /// (group, plural) pairs the plugin declared.
    pub declared: Vec<(String, String)>,
    /// The reader, set once when the plugin is registered with a server.
    pub reader: OnceLock<Arc<dyn HostReads>>,
}

impl ReadGrant {
    fn check(&self, group: &str, resource: &str) -> Result<&Arc<dyn HostReads>, GuestError> {
        if !self.declared.iter().any(|(g, r)| g == group && r == resource) {
            return Err(GuestError::Forbidden(format!(
                "the plugin did not declare that it reads {resource}.{group} (scheme.info().reads)"
            )));
        }
        self.reader
            .get()
            .ok_or_else(|| GuestError::Internal("reads are not available while loading".into()))
    }
}

/// A store's limits ([`StoreLimits`]), counting the linear memory its instance holds into a gauge
/// (`wasm_apiserver_plugin_memory_bytes`) while the instance lives.
pub struct Limiter {
    limits: StoreLimits,
    gauge: prometheus_client::metrics::gauge::Gauge,
    /// The bytes of linear memory counted into the gauge.
    memory_bytes: usize,
    /// The growth allowed last, taken back if the growth then fails.
    growing: usize,
}

impl Limiter {
    /// Limits counting into `gauge`.
    pub fn new(limits: StoreLimits, gauge: prometheus_client::metrics::gauge::Gauge) -> Limiter {
        Limiter {
            limits,
            gauge,
            memory_bytes: 0,
            growing: 0,
        }
    }

    /// The instance's linear memory, in bytes.
    pub fn memory_bytes(&self) -> usize {
        self.memory_bytes
    }
}

impl wasmtime::ResourceLimiter for Limiter {
    fn memory_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            // Also called for each memory as the instance is made (from 0).
            self.growing = desired.saturating_sub(current);
            self.memory_bytes += self.growing;
            self.gauge.inc_by(i64::try_from(self.growing).unwrap_or(i64::MAX));
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.memory_bytes -= self.growing;
        self.gauge.dec_by(i64::try_from(self.growing).unwrap_or(i64::MAX));
        self.growing = 0;
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(&mut self, current: usize, desired: usize, maximum: Option<usize>) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

impl Drop for Limiter {
    fn drop(&mut self) {
        self.gauge.dec_by(i64::try_from(self.memory_bytes).unwrap_or(i64::MAX));
    }
}

/// The data of one plugin instance's store.
pub struct HostState {
    /// The plugin's name, for logs.
    pub plugin: Arc<str>,
    /// Memory and instance limits.
    pub limits: Limiter,
    /// The plugin's read grant.
    pub reads: Arc<ReadGrant>,
    /// When the current call started.
    pub call_started: Instant,
    /// Time the current call spent in host imports (storage reads), which does not count against its deadline.
    pub in_imports: Duration,
    /// The thread's CPU time when the current call started.
    pub cpu_started: Duration,
    /// CPU time the current call spent in host imports.
    pub cpu_in_imports: Duration,
    /// The CPU deadline of one call.
    pub timeout: Duration,
    /// A storage failure met by a host read during the current call.
    pub import_failure: Option<Box<ApiError>>,
    /// The user whose request the current call admits (`host.request-user`): set for admission calls only.
    pub request_user: Option<User>,
    /// The last error the plugin logged during the current call (at most [`LAST_ERROR_LOG_BYTES`]): when the call
    /// traps, it says why (the Rust SDK logs a panic's message before the panic traps).
    pub last_error_log: Option<String>,
    /// What the plugin wrote to its standard error during the current call (at most [`LAST_ERROR_LOG_BYTES`]): a Go
    /// runtime writes a panic's message and stack there in pieces before it ends the instance. It becomes the call's
    /// last error log.
    pub stderr: String,
    /// The line the plugin is writing to its standard error, logged when it ends (at most [`STDERR_LINE_BYTES`]).
    pub stderr_line: String,
}

/// The longest line of a plugin's standard error or output that is logged as it is (longer ones are cut).
pub const STDERR_LINE_BYTES: usize = 4096;

/// How many times its CPU deadline a call may last in wall time (a call starved of CPU still ends).
pub const WALL_DEADLINE_FACTOR: u32 = 20;

/// How much of the last error log of a call is kept for the client's message.
pub const LAST_ERROR_LOG_BYTES: usize = 1024;

impl HostState {
    /// Starts the clock of a new call.
    pub fn start_call(&mut self) {
        self.call_started = Instant::now();
        self.in_imports = Duration::ZERO;
        self.cpu_started = super::budget::thread_cpu_time();
        self.cpu_in_imports = Duration::ZERO;
        self.import_failure = None;
        self.last_error_log = None;
        self.stderr.clear();
        self.stderr_line.clear();
        self.request_user = None;
    }

    /// Runs a host import, keeping its time out of the call's deadline. A storage failure is remembered, so the
    /// call fails with it whatever the plugin makes of the error it gets.
    fn in_import<T>(&mut self, f: impl FnOnce() -> Result<T, ReadError>) -> Result<T, GuestError> {
        let started = Instant::now();
        let cpu = super::budget::thread_cpu_time();
        let result = f().map_err(|e| match e {
            ReadError::Invalid(m) => GuestError::BadRequest(m),
            ReadError::Storage(e) => {
                let message = e.message.clone();
                self.import_failure = Some(e);
                GuestError::Internal(message)
            }
        });
        self.in_imports += started.elapsed();
        self.cpu_in_imports += super::budget::thread_cpu_time().saturating_sub(cpu);
        result
    }

    /// Whether the current call has used up its deadline: the CPU time its thread spent in it (host imports
    /// excluded), so a call that runs at a lane's lower priority on a busy machine gets the CPU it is allowed, however
    /// long that takes; and, as a backstop, [`WALL_DEADLINE_FACTOR`] times the deadline in wall time.
    pub fn deadline_passed(&self) -> bool {
        let cpu = super::budget::thread_cpu_time()
            .saturating_sub(self.cpu_started)
            .saturating_sub(self.cpu_in_imports);
        let wall = self.call_started.elapsed().saturating_sub(self.in_imports);
        cpu >= self.timeout || wall >= self.timeout.saturating_mul(WALL_DEADLINE_FACTOR)
    }
}

/// `s` on one line, cut to at most `max` bytes (at a character boundary, with an ellipsis).
pub(crate) fn truncate(s: &str, max: usize) -> String {
    let line = super::one_line(s);
    if line.len() <= max {
        return line;
    }
    let end = line.floor_char_boundary(max.saturating_sub('…'.len_utf8()));
    format!("{}…", &line[..end])
}

impl TypesHost for HostState {}

impl Host for HostState {
    /// A plugin's log line, with the trace id of the request it serves when that request is traced.
    fn log(&mut self, level: LogLevel, message: String) {
        let plugin = &*self.plugin;
        let trace_id = component_base::trace::trace_id();
        macro_rules! line {
            ($level:ident) => {
                match trace_id.as_deref() {
                    Some(id) => tracing::$level!(plugin, trace_id = %id, "{message}"),
                    None => tracing::$level!(plugin, "{message}"),
                }
            };
        }
        match level {
            LogLevel::Trace => line!(trace),
            LogLevel::Debug => line!(debug),
            LogLevel::Info => line!(info),
            LogLevel::Warn => line!(warn),
            LogLevel::Error => {
                line!(error);
                self.last_error_log = Some(truncate(&message, LAST_ERROR_LOG_BYTES));
            }
        }
    }

    fn get(
        &mut self,
        group: String,
        resource: String,
        namespace: Option<String>,
        name: String,
    ) -> Result<Option<String>, GuestError> {
        let reader = self.reads.check(&group, &resource)?.clone();
        self.in_import(|| reader.get(&group, &resource, namespace.as_deref(), &name))
    }

    fn list(
        &mut self,
        group: String,
        resource: String,
        namespace: Option<String>,
        label_selector: String,
    ) -> Result<Vec<String>, GuestError> {
        let reader = self.reads.check(&group, &resource)?.clone();
        self.in_import(|| reader.list(&group, &resource, namespace.as_deref(), &label_selector))
    }

    fn request_user(&mut self) -> Option<User> {
        self.request_user.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::truncate;

    #[test]
    fn error_logs_are_kept_on_one_line_and_bounded() {
        assert_eq!(
            truncate("panicked at src/lib.rs:1:2:\n  boom", 100),
            "panicked at src/lib.rs:1:2: boom"
        );
        let long = "é".repeat(600);
        let cut = truncate(&long, 1024);
        assert!(cut.len() <= 1024, "{}", cut.len());
        assert!(cut.ends_with('…'));
        assert!(cut.starts_with("éé"));
    }
}
