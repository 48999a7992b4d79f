//! A tenant's plugin budget, shared by its plugins: the memory of one instance, the deadline of one call, and
//! `pluginCpu`, the CPU seconds per second of wall time its calls may use together.
//!
//! CPU is metered on real execution: each call is charged the CPU time its thread used while it ran
//! (`CLOCK_THREAD_CPUTIME_ID`: the guest's code and the host imports it called). The budget is a bucket holding one
//! second's worth, refilled at the rate; while it is empty, calls are refused with 429 TooManyRequests (and
//! `Retry-After`) instead of running, so a tenant whose plugins spin cannot take more than its share of the cores.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// One tenant's plugin limits and CPU meter.
#[derive(Debug)]
pub struct Budget {
    /// The tenant's name, for messages.
    tenant: Mutex<std::sync::Arc<str>>,
    memory_bytes: AtomicUsize,
    call_timeout_nanos: AtomicU64,
    cpu: Mutex<Cpu>,
    /// CPU time used by its calls, in nanoseconds.
    pub cpu_used_nanos: AtomicU64,
    /// Calls refused because the CPU budget was spent.
    pub rejected: AtomicU64,
    /// Changes with the memory limit: instances made under another are discarded.
    generation: AtomicU64,
}

#[derive(Debug)]
struct Cpu {
    /// CPU seconds per second; `None`: unlimited.
    rate: Option<f64>,
    /// CPU seconds available now (may go below zero: a call is charged after it ran).
    tokens: f64,
    at: Instant,
}

/// A call refused because the tenant's plugin CPU is spent.
#[derive(Debug, Clone)]
pub struct Spent {
    /// What to tell the client.
    pub message: String,
    /// When to try again, in seconds.
    pub retry_after: u32,
}

impl Budget {
    /// A budget with these limits and no CPU limit.
    pub fn new(memory_bytes: usize, call_timeout: Duration) -> Budget {
        Budget {
            tenant: Mutex::new("default".into()),
            memory_bytes: AtomicUsize::new(memory_bytes),
            call_timeout_nanos: AtomicU64::new(u64::try_from(call_timeout.as_nanos()).unwrap_or(u64::MAX)),
            cpu: Mutex::new(Cpu {
                rate: None,
                tokens: 0.0,
                at: Instant::now(),
            }),
            cpu_used_nanos: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            generation: AtomicU64::new(0),
        }
    }

    /// Sets the limits: instance memory and call deadline (for instances made and calls started from now on) and
    /// the CPU rate (`None`: unlimited).
    pub fn set(&self, tenant: &str, memory_bytes: usize, call_timeout: Duration, cpu: Option<f64>) {
        *self.tenant.lock().unwrap_or_else(PoisonError::into_inner) = tenant.into();
        if self.memory_bytes.swap(memory_bytes, Ordering::AcqRel) != memory_bytes {
            self.generation.fetch_add(1, Ordering::AcqRel);
        }
        self.call_timeout_nanos.store(
            u64::try_from(call_timeout.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Release,
        );
        let mut c = self.cpu.lock().unwrap_or_else(PoisonError::into_inner);
        if c.rate != cpu {
            c.rate = cpu;
            c.tokens = cpu.unwrap_or(0.0);
            c.at = Instant::now();
        }
    }

    /// The tenant's name.
    pub fn tenant(&self) -> std::sync::Arc<str> {
        self.tenant.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The memory one instance may use.
    pub fn memory_bytes(&self) -> usize {
        self.memory_bytes.load(Ordering::Acquire)
    }

    /// The memory limit's generation: an instance made under an older one is not reused.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The longest one call may run.
    pub fn call_timeout(&self) -> Duration {
        Duration::from_nanos(self.call_timeout_nanos.load(Ordering::Acquire))
    }

    /// The CPU rate, if limited.
    pub fn cpu_rate(&self) -> Option<f64> {
        self.cpu.lock().unwrap_or_else(PoisonError::into_inner).rate
    }

    /// Whether a call may start now.
    pub fn admit(&self, plugin: &str) -> Result<(), Spent> {
        let mut c = self.cpu.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(rate) = c.rate else { return Ok(()) };
        let now = Instant::now();
        c.tokens = (c.tokens + now.duration_since(c.at).as_secs_f64() * rate).min(rate);
        c.at = now;
        if c.tokens > 0.0 {
            return Ok(());
        }
        let retry_after = (-c.tokens / rate).ceil().max(1.0) as u32;
        drop(c);
        self.rejected.fetch_add(1, Ordering::Relaxed);
        component_base::metrics::metrics()
            .tenant_rejections
            .get_or_create(&component_base::metrics::LimitLabels {
                limit: "pluginCpu".to_owned(),
            })
            .inc();
        let tenant = self.tenant.lock().unwrap_or_else(PoisonError::into_inner).clone();
        Err(Spent {
            message: format!(
                "tenant {tenant} has used its plugin CPU ({}m CPU per second); plugin {plugin:?} was not called: try \
                 again later",
                (rate * 1000.0).round()
            ),
            retry_after,
        })
    }

    /// Charges a call's CPU time.
    pub fn charge(&self, cpu: Duration) {
        self.cpu_used_nanos
            .fetch_add(u64::try_from(cpu.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
        let mut c = self.cpu.lock().unwrap_or_else(PoisonError::into_inner);
        if c.rate.is_some() {
            c.tokens -= cpu.as_secs_f64();
        }
    }
}

/// The CPU time the calling thread has used.
pub fn thread_cpu_time() -> Duration {
    let ts = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spent_budget_refuses_until_refilled() {
        let b = Budget::new(1 << 20, Duration::from_millis(100));
        b.admit("p").expect("unlimited");
        b.set("t1", 1 << 20, Duration::from_millis(100), Some(0.5));
        b.admit("p").expect("a full bucket");
        b.charge(Duration::from_millis(700));
        let spent = b.admit("p").expect_err("spent");
        assert!(
            spent
                .message
                .starts_with("tenant t1 has used its plugin CPU (500m CPU per second)"),
            "{}",
            spent.message
        );
        assert_eq!(spent.retry_after, 1);
        assert_eq!(b.rejected.load(Ordering::Relaxed), 1);
        assert!(b.cpu_used_nanos.load(Ordering::Relaxed) >= 700_000_000);
    }

    #[test]
    fn thread_cpu_time_advances_with_work() {
        let before = thread_cpu_time();
        let mut x = 0u64;
        for i in 0..5_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(thread_cpu_time() > before);
    }
}
