//! Fair share of the cores among slow plugin calls, as kube's API Priority and Fairness shares seats among
//! flows: a plugin call that runs long (its average over [`INLINE_CALL_NANOS`]) takes one of a few
//! *lanes* (as many as the machine has cores) before it runs, and while every lane is taken, calls wait in queues per
//! tenant and, within a tenant, per plugin. A freed lane goes to the tenant that has used the least plugin CPU so
//! far among those waiting (start-time fair queuing, charged with each call's measured thread CPU time), and within
//! it to the plugin that has used the least. A flow that comes back after being idle starts at the current virtual
//! time, so idleness earns no credit.
//!
//! Lanes run at a lower scheduling priority than the threads that serve requests ([`LANE_NICE`]): a flood of
//! deadline-long calls takes the CPU the server does not need, rather than the CPU of other tenants' requests, whose
//! short plugin calls run inline on the async workers. How many calls may wait is bounded per tenant
//! ([`MAX_QUEUED_PER_TENANT`]) and so is the wait ([`MAX_WAIT`]); beyond either a call is refused (429).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Plugins whose calls take less than this on average (nanoseconds) run on the async worker, and the others on a
/// lane; see [`crate::component::PluginComponent::call`].
pub const INLINE_CALL_NANOS: u64 = 250_000;

/// The nice value lanes run at (the serving threads run at the process's own, usually 0): with the scheduler's
/// weights a lane gets about a tenth of a core that a serving thread also wants, so a slow call is slowed, never
/// starved (the idle scheduling class, tried, starves them under load, and nice 19 gained nothing measurable).
pub const LANE_NICE: i32 = 10;

/// The most calls of one tenant that may wait for a lane.
pub const MAX_QUEUED_PER_TENANT: usize = 128;

/// The longest a call waits for a lane.
pub const MAX_WAIT: Duration = Duration::from_secs(10);

/// The lanes and their queues, shared by every tenant's plugins.
pub struct FairShare {
    lanes: usize,
    state: Mutex<State>,
    /// The lanes' threads, started on the first slow call and kept: a thread per call would cost its start, and each
    /// such thread's allocator heap is left behind when it ends with whatever objects it made that outlive the call
    /// (instances, cached conversions), so that memory freed later cannot be given back.
    threads: std::sync::OnceLock<std::io::Result<Arc<rayon::ThreadPool>>>,
}

#[derive(Default)]
struct State {
    /// Lanes in use.
    busy: usize,
    /// The virtual time: the least CPU used among the flows that wait or run, in seconds.
    now: f64,
    tenants: HashMap<Arc<str>, Flow>,
    /// Calls refused because their tenant's queue was full or their wait too long.
    refused: u64,
}

/// A tenant's flow, or a plugin's within it.
#[derive(Default)]
struct Flow {
    /// CPU seconds used (its virtual finish time).
    used: f64,
    /// Its calls running or waiting.
    active: usize,
    /// Waiting calls (for a plugin's flow) in arrival order.
    waiting: VecDeque<Arc<Waiter>>,
    /// Its plugins' flows (for a tenant's).
    plugins: HashMap<Arc<str>, Flow>,
}

#[derive(Default)]
struct Waiter {
    granted: Mutex<bool>,
    wake: Condvar,
}

/// Why a call got no lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Too many of its tenant's calls wait already.
    QueueFull,
    /// It waited [`MAX_WAIT`] without getting a lane.
    Waited,
}

/// A lane held by a call; charge it with the call's CPU time and drop it to hand the lane over.
pub struct Lane<'a> {
    share: &'a FairShare,
    tenant: Arc<str>,
    plugin: Arc<str>,
    cpu: Duration,
}

impl Lane<'_> {
    /// Charges the call's CPU time to its tenant and plugin.
    pub fn charge(&mut self, cpu: Duration) {
        self.cpu += cpu;
    }
}

impl Drop for Lane<'_> {
    fn drop(&mut self) {
        let mut state = self.share.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.busy -= 1;
        let cpu = self.cpu.as_secs_f64();
        if let Some(tenant) = state.tenants.get_mut(&self.tenant) {
            tenant.used += cpu;
            tenant.active -= 1;
            if let Some(plugin) = tenant.plugins.get_mut(&self.plugin) {
                plugin.used += cpu;
                plugin.active -= 1;
                if plugin.active == 0 {
                    tenant.plugins.remove(&self.plugin);
                }
            }
            if tenant.active == 0 {
                state.tenants.remove(&self.tenant);
            }
        }
        state.dispatch(self.share.lanes);
    }
}

impl FairShare {
    /// Lanes for `lanes` concurrent slow calls; 0: none (slow calls run where they are made, unqueued).
    pub fn new(lanes: usize) -> FairShare {
        FairShare {
            lanes,
            state: Mutex::default(),
            threads: std::sync::OnceLock::new(),
        }
    }

    /// Runs `f` on a lane's thread (at the lanes' lower priority) and waits for it; the caller holds a [`Lane`]. A
    /// panic in `f` is resumed on the caller. Fails only when the lanes' threads cannot be started.
    pub fn run_on_lane<R: Send>(&self, f: impl FnOnce() -> R + Send) -> std::io::Result<R> {
        let threads = self.threads.get_or_init(|| {
            let threads = rayon::ThreadPoolBuilder::new()
                .num_threads(self.lanes.max(1))
                .thread_name(|i| format!("plugin-lane-{i}"))
                .start_handler(|_| lower_thread_priority())
                .build()
                .map(Arc::new)
                .map_err(std::io::Error::other)?;
            component_base::memory::collect_every_second(&threads, "plugin-lane-collect")?;
            Ok(threads)
        });
        match threads {
            Ok(threads) => Ok(threads.install(f)),
            Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
        }
    }

    /// How many lanes there are (0: slow calls are not queued).
    pub fn lanes(&self) -> usize {
        self.lanes
    }

    /// How many calls were refused a lane.
    pub fn refused(&self) -> u64 {
        self.state.lock().unwrap_or_else(PoisonError::into_inner).refused
    }

    /// Waits (blocking the thread) for a lane for a call of `plugin` in `tenant`, served fairly among the waiting.
    pub fn acquire(&self, tenant: &Arc<str>, plugin: &Arc<str>) -> Result<Lane<'_>, Refused> {
        let waiter = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let now = state.now;
            let lanes = self.lanes;
            let t = state.tenants.entry(tenant.clone()).or_insert_with(|| Flow {
                used: now,
                ..Flow::default()
            });
            // A flow is removed as soon as it has nothing waiting or running, so a returning one starts at `now`.
            if t.active >= MAX_QUEUED_PER_TENANT + lanes {
                state.refused += 1;
                return Err(Refused::QueueFull);
            }
            t.active += 1;
            let t_used = t.used;
            let p = t.plugins.entry(plugin.clone()).or_insert_with(|| Flow {
                used: t_used,
                ..Flow::default()
            });
            p.active += 1;
            let waiter = Arc::new(Waiter::default());
            p.waiting.push_back(waiter.clone());
            state.dispatch(lanes);
            waiter
        };
        let lane = Lane {
            share: self,
            tenant: tenant.clone(),
            plugin: plugin.clone(),
            cpu: Duration::ZERO,
        };
        let deadline = Instant::now() + MAX_WAIT;
        let mut granted = waiter.granted.lock().unwrap_or_else(PoisonError::into_inner);
        loop {
            if *granted {
                return Ok(lane);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            granted = waiter
                .wake
                .wait_timeout(granted, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        // Timed out: leave the queue (unless a lane was granted meanwhile, in which case it is taken and handed on).
        drop(granted);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if *waiter.granted.lock().unwrap_or_else(PoisonError::into_inner) {
            drop(state);
            return Ok(lane);
        }
        state.refused += 1;
        if let Some(t) = state.tenants.get_mut(tenant) {
            if let Some(p) = t.plugins.get_mut(plugin) {
                p.waiting.retain(|w| !Arc::ptr_eq(w, &waiter));
            }
        }
        // Not running: undo the count without charging or taking a lane back.
        state.busy += 1;
        drop(state);
        drop(lane);
        Err(Refused::Waited)
    }
}

impl State {
    /// Grants free lanes to the waiting calls, least-served tenant first, and within it the least-served plugin.
    fn dispatch(&mut self, lanes: usize) {
        while self.busy < lanes {
            let Some((tenant, _)) = self
                .tenants
                .iter()
                .filter(|(_, t)| t.plugins.values().any(|p| !p.waiting.is_empty()))
                .min_by(|a, b| a.1.used.total_cmp(&b.1.used))
            else {
                break;
            };
            let tenant = tenant.clone();
            let t = self.tenants.get_mut(&tenant).expect("just found");
            let Some(p) = t
                .plugins
                .values_mut()
                .filter(|p| !p.waiting.is_empty())
                .min_by(|a, b| a.used.total_cmp(&b.used))
            else {
                break;
            };
            let waiter = p.waiting.pop_front().expect("not empty");
            *waiter.granted.lock().unwrap_or_else(PoisonError::into_inner) = true;
            waiter.wake.notify_one();
            self.busy += 1;
        }
        // The virtual time follows the least-served active flow.
        if let Some(least) = self.tenants.values().map(|t| t.used).min_by(f64::total_cmp) {
            self.now = self.now.max(least);
        }
    }
}

/// The default number of lanes: one per two cores (at least one), so slow calls never hold every core.
pub fn default_lanes() -> usize {
    (std::thread::available_parallelism().map_or(2, usize::from) / 2).max(1)
}

/// Lowers the calling thread's scheduling priority to [`LANE_NICE`] (Linux: nice values are per thread). Raising a
/// nice value needs no privilege; failing to is logged once and otherwise ignored.
pub fn lower_thread_priority() {
    if let Err(e) = rustix::process::setpriority_process(Some(rustix::thread::gettid()), LANE_NICE) {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| tracing::warn!(error = %e, "could not lower the priority of a plugin lane"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn name(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    /// With one lane held, waiting calls are granted in fair order: a tenant that has used more CPU waits behind one
    /// that has used less, whatever the arrival order.
    #[test]
    fn lanes_go_to_the_least_served_tenant_first() {
        let share = Arc::new(FairShare::new(1));
        let (a, b, p) = (name("a"), name("b"), name("p"));
        let mut held = share.acquire(&a, &p).unwrap();
        held.charge(Duration::from_millis(100));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        // Two more calls of a (which used 100 ms), then one of b, queued while the lane is held.
        for (i, tenant) in [a.clone(), a.clone(), b.clone()].into_iter().enumerate() {
            let (shared, order, p) = (share.clone(), order.clone(), p.clone());
            threads.push(std::thread::spawn(move || {
                let mut lane = shared.acquire(&tenant, &p).unwrap();
                lane.charge(Duration::from_millis(50));
                order.lock().unwrap().push(tenant.to_string());
            }));
            // Each waits before the next arrives, so arrival order is a, a, b.
            let deadline = Instant::now() + Duration::from_secs(5);
            while waiting(&share) < i + 1 {
                assert!(Instant::now() < deadline, "call {i} never queued");
                std::thread::yield_now();
            }
        }
        drop(held);
        for t in threads {
            t.join().unwrap();
        }
        let order = order.lock().unwrap().clone();
        assert_eq!(order[0], "b", "b has used the least: {order:?}");
    }

    fn waiting(share: &FairShare) -> usize {
        let state = share.state.lock().unwrap();
        state
            .tenants
            .values()
            .flat_map(|t| t.plugins.values())
            .map(|p| p.waiting.len())
            .sum()
    }

    /// Within a tenant, plugins share the same way.
    #[test]
    fn within_a_tenant_lanes_go_to_the_least_served_plugin() {
        let share = Arc::new(FairShare::new(1));
        let (t, noisy, quiet) = (name("t"), name("noisy"), name("quiet"));
        let mut held = share.acquire(&t, &noisy).unwrap();
        held.charge(Duration::from_millis(100));
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for (i, plugin) in [noisy.clone(), quiet.clone()].into_iter().enumerate() {
            let (shared, order, t) = (share.clone(), order.clone(), t.clone());
            threads.push(std::thread::spawn(move || {
                let _lane = shared.acquire(&t, &plugin).unwrap();
                order.lock().unwrap().push(plugin.to_string());
            }));
            let deadline = Instant::now() + Duration::from_secs(5);
            while waiting(&share) < i + 1 {
                assert!(Instant::now() < deadline, "call {i} never queued");
                std::thread::yield_now();
            }
        }
        drop(held);
        for th in threads {
            th.join().unwrap();
        }
        assert_eq!(order.lock().unwrap()[0], "quiet");
    }

    /// No more calls run at once than there are lanes, and every call gets one in the end; the state is empty after.
    #[test]
    fn at_most_lanes_calls_run_at_once() {
        let share = Arc::new(FairShare::new(2));
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..16)
            .map(|i| {
                let (share, running, most) = (share.clone(), running.clone(), most.clone());
                std::thread::spawn(move || {
                    let tenant = name(if i % 2 == 0 { "a" } else { "b" });
                    let _lane = share.acquire(&tenant, &name("p")).unwrap();
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(2));
                    running.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert!(most.load(Ordering::SeqCst) <= 2);
        let state = share.state.lock().unwrap();
        assert_eq!(state.busy, 0);
        assert!(state.tenants.is_empty());
    }

    /// A tenant with a full queue is refused at once; another tenant is not.
    #[test]
    fn a_full_queue_refuses_its_tenant_only() {
        let share = Arc::new(FairShare::new(1));
        let (a, b, p) = (name("a"), name("b"), name("p"));
        let held = share.acquire(&a, &p).unwrap();
        let threads: Vec<_> = (0..MAX_QUEUED_PER_TENANT)
            .map(|_| {
                let (share, a, p) = (share.clone(), a.clone(), p.clone());
                std::thread::spawn(move || share.acquire(&a, &p).map(|_| ()))
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        while waiting(&share) < MAX_QUEUED_PER_TENANT {
            assert!(Instant::now() < deadline, "the calls never queued");
            std::thread::yield_now();
        }
        assert_eq!(share.acquire(&a, &p).err(), Some(Refused::QueueFull));
        let b_share = share.clone();
        let b_call = std::thread::spawn(move || b_share.acquire(&b, &p).map(|_| ()));
        drop(held);
        assert_eq!(b_call.join().unwrap(), Ok(()));
        for t in threads {
            assert_eq!(t.join().unwrap(), Ok(()));
        }
        assert_eq!(share.refused(), 1);
    }
}
