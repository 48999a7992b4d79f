//! The garbage collector of one registry (one tenant): kube-controller-manager's garbage collector, driven by the
//! registry's own writes instead of a watch of every resource.
//!
//! Every write through the registry's store tells the collector what it changed ([`refs::work_for_write`]): an
//! object removed (its dependents may now be garbage), an object marked for deletion with the `orphan` or
//! `foregroundDeletion` finalizer (an owner to process), an object written with new owner references (a dependent
//! whose owners may be absent). The work is queued for a worker task, started on the first work and ended when the
//! queue is empty (or the registry is closed), so an idle tenant costs nothing. The worker takes the whole queue at
//! once: the dependents of every owner in it are found by one scan of the tenant's stored objects (the served
//! resources, read by key prefix from storage, not through watch caches), then each candidate is decided on a live
//! read of it and of its owners, as kube's `attemptToDeleteItem` decides ([`collect`]). Its writes (deletes,
//! references and finalizers removed) go through the registry's stores as the server itself, so admission,
//! finalizers, watch events and quota accounting apply, and they make further work the same way: a cascade proceeds
//! one level per round.
//!
//! Hosts that share an etcd each collect after their own writes: a write and the collector's later read of the
//! other side are ordered by storage, so a dependent created on one host while its owner is deleted on another is
//! seen by one of them; no periodic resync is needed for that. What is queued is lost if the process stops: the
//! first work of a tenant after a start comes with a resync of that tenant ([`Work::Resync`], one scan), which
//! finishes what was left undone; a tenant with no write since the start waits for its first (a DELETE of an owner
//! left waiting is one).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::time::Instant;

use super::Registry;

mod collect;
pub mod refs;
#[cfg(test)]
mod tests;

pub use refs::Propagation;

/// An object the collector looks at: its resource, place and uid (it must still have that uid to be acted on).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Item {
    /// The API group (`""` for the core group).
    pub group: String,
    /// The resource's plural.
    pub resource: String,
    /// The namespace of a namespaced object.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
    /// The uid.
    pub uid: String,
}

/// One piece of work for the collector.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Work {
    /// An object was removed: the objects that name its uid as an owner are looked at. A namespaced owner's
    /// dependents are in its namespace; a cluster-scoped owner's anywhere.
    Gone {
        /// The removed object's uid.
        uid: String,
        /// Its namespace, if it was namespaced.
        namespace: Option<String>,
    },
    /// An object that may be an owner being deleted with `orphan` or `foregroundDeletion`.
    Owner(Item),
    /// An object whose owner references are checked: it goes when none of its owners is left.
    Dependent(Item),
    /// Every object of the tenant with owner references is checked, and every owner being deleted with a garbage
    /// collection finalizer is processed: what a previous process left undone (queued work is not stored).
    Resync,
}

/// The first wait before a failed piece of work is tried again; it doubles on each failure.
const FIRST_RETRY: Duration = Duration::from_millis(100);
/// The longest wait between tries.
const MAX_RETRY: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Queue {
    /// Work to do now.
    ready: BTreeSet<Work>,
    /// Work to try again later.
    later: Vec<(Instant, Work)>,
    /// How many times in a row each piece of work failed.
    failures: BTreeMap<Work, u32>,
    /// Work that names a kind this tenant does not serve: tried again when its served resources change.
    parked: BTreeSet<Work>,
    /// Whether a worker task is running.
    running: bool,
    /// Whether the tenant was resynced since the process started (on its first work).
    resynced: bool,
}

/// The garbage collector of one registry.
pub struct GarbageCollector {
    registry: Weak<Registry>,
    queue: Mutex<Queue>,
    wake: Arc<tokio::sync::Notify>,
}

/// What processing a piece of work came to.
#[derive(Debug, PartialEq, Eq)]
enum Outcome {
    /// Done (or nothing to do).
    Done,
    /// Failed for now: to be tried again later.
    Retry,
    /// Names a kind not served: to be tried again when the served resources change.
    Park,
}

impl GarbageCollector {
    /// The collector of `registry` (its worker starts with the first work).
    pub fn new(registry: Weak<Registry>) -> GarbageCollector {
        GarbageCollector {
            registry,
            queue: Mutex::default(),
            wake: Arc::default(),
        }
    }

    /// Queues work, starting the worker if none runs (outside a tokio runtime the work waits for the next call
    /// made inside one).
    pub fn enqueue(&self, work: impl IntoIterator<Item = Work>) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let before = queue.ready.len();
        queue.ready.extend(work);
        if queue.ready.len() == before {
            return;
        }
        if !queue.resynced {
            queue.resynced = true;
            queue.ready.insert(Work::Resync);
        }
        if queue.running {
            drop(queue);
            self.wake.notify_one();
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        queue.running = true;
        runtime.spawn(run(self.registry.clone()));
    }

    /// The tenant's served resources changed: the work that named a kind it did not serve is tried again.
    pub fn resources_changed(&self) {
        let parked = std::mem::take(&mut self.queue.lock().unwrap_or_else(PoisonError::into_inner).parked);
        if !parked.is_empty() {
            self.enqueue(parked);
        }
    }

    /// Whether there is work queued, waiting or in progress (not counting parked work).
    pub fn busy(&self) -> bool {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner).running
    }

    /// Takes the work that is due; `Err` with the time of the next due work when none is, `Ok(empty)` when there
    /// is none at all (the worker then ends).
    fn take_due(&self) -> Result<BTreeSet<Work>, Instant> {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut queue.later)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        queue.later = later;
        let mut ready = std::mem::take(&mut queue.ready);
        ready.extend(due.into_iter().map(|(_, work)| work));
        if ready.is_empty() {
            if let Some(next) = queue.later.iter().map(|(at, _)| *at).min() {
                return Err(next);
            }
            queue.running = false;
        }
        Ok(ready)
    }

    /// Records how each piece of work came out.
    fn settle(&self, results: Vec<(Work, Outcome)>) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        for (work, outcome) in results {
            match outcome {
                Outcome::Done => {
                    queue.failures.remove(&work);
                }
                Outcome::Park => {
                    queue.failures.remove(&work);
                    queue.parked.insert(work);
                }
                Outcome::Retry => {
                    let failures = queue.failures.entry(work.clone()).or_default();
                    let delay = FIRST_RETRY.saturating_mul(1 << (*failures).min(16)).min(MAX_RETRY);
                    *failures += 1;
                    if !queue.later.iter().any(|(_, w)| *w == work) {
                        queue.later.push((now + delay, work));
                    }
                }
            }
        }
    }

    /// Forgets everything queued (the registry was closed).
    fn stop(&self) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        *queue = Queue {
            resynced: true,
            ..Queue::default()
        };
    }
}

/// The worker: processes the queued work in rounds until the queue is empty or the registry is closed. It holds
/// the registry only during a round.
async fn run(registry: Weak<Registry>) {
    loop {
        let Some(strong) = registry.upgrade() else {
            return;
        };
        if strong.is_closed() {
            strong.gc.stop();
            return;
        }
        let work = match strong.gc.take_due() {
            Ok(work) if work.is_empty() => return,
            Ok(work) => work,
            Err(next) => {
                let wake = strong.gc.wake.clone();
                drop(strong);
                // Woken by new work or when the next retry is due (at most MAX_RETRY: a closed registry is
                // noticed then).
                tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep_until(next) => {}
                }
                continue;
            }
        };
        match strong.until_closed(collect::round(&strong, work)).await {
            Some(results) => strong.gc.settle(results),
            None => {
                strong.gc.stop();
                return;
            }
        }
    }
}
