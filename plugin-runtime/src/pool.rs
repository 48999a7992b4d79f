//! A component's idle instances: the pool its calls take an instance from and return it to, least recently used
//! first, within the host-wide bound of the memory of every plugin's idle instances ([`PoolBudget`]). An instance is
//! returned only after a call that completed, and not when its memory grew too much ([`PooledInstance::outgrown`]).

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use wasmtime::Store;

use super::host::HostState;
use super::linking::Guests;
use super::runtime::{IdlePool, Listing, PoolBudget, PoolCharge};
use component_base::metrics::{metrics, PluginLabels};

/// An instance of a component with its store (the sandbox's state and limits), ready to be called.
pub(super) struct PooledInstance {
    pub(super) store: Store<HostState>,
    pub(super) guests: Guests,
    pub(super) labels: PluginLabels,
    /// The budget's generation it was made under.
    pub(super) generation: u64,
    /// When it was last returned to the pool.
    pub(super) last_used: Instant,
    /// Its linear memory once made (start functions and scheme calls run).
    pub(super) memory_at_start: usize,
    /// Its memory in the host-wide bound of idle instances, while it is in the pool.
    pub(super) charge: Option<PoolCharge>,
}

/// How much an instance's linear memory may grow past its size when it was made before the instance is retired
/// after its call: a quarter more, and at least this many bytes. Linear memory never shrinks, and guests whose
/// heaps grow with use (a JavaScript engine's garbage-collected heap, a fragmented allocator) would otherwise keep
/// the high-water mark of every pooled instance resident for as long as it is used: in a 10-minute soak, the
/// JavaScript plugin's instances grew ~4 MiB a minute. A retired instance's memory goes back to the OS.
const RETIRE_GROWTH_MIN: usize = 4 << 20;

impl PooledInstance {
    /// Whether its memory grew enough since it was made that it should not serve another call.
    pub(super) fn outgrown(&self) -> bool {
        let now = self.store.data().limits.memory_bytes();
        now > self.memory_at_start + (self.memory_at_start / 4).max(RETIRE_GROWTH_MIN)
    }
}

/// A plugin's idle instances, in the order they were returned (the least recently used first), and whether it is
/// listed in the host-wide [`super::runtime::PoolBudget`] as holding some.
#[derive(Default)]
pub(super) struct InstancePool {
    idle: Mutex<Vec<PooledInstance>>,
    listing: Listing,
}

impl InstancePool {
    /// The most recently returned idle instance made under the budget's `generation` (one made under another
    /// memory limit is dropped), out of the host-wide bound.
    pub(super) fn take(&self, generation: u64) -> Option<PooledInstance> {
        let taken = self.idle.lock().ok().and_then(|mut p| p.pop())?;
        if taken.generation != generation {
            return None;
        }
        let mut taken = taken;
        taken.charge = None;
        Some(taken)
    }

    /// Puts an instance in the pool for the next call, within the host-wide bound of the idle instances' memory
    /// (`budget`: the least recently used idle instances of every plugin go to make room); an instance that cannot
    /// fit even then is dropped.
    pub(super) fn keep(self: &Arc<Self>, mut instance: PooledInstance, budget: &Arc<PoolBudget>) {
        let bytes = u64::try_from(instance.store.data().limits.memory_bytes()).unwrap_or(u64::MAX);
        match budget.charge(bytes) {
            Some(charge) => instance.charge = Some(charge),
            None => {
                metrics().plugin_instances_not_pooled.inc();
                return;
            }
        }
        let newly_listed = match self.idle.lock() {
            Ok(mut pool) => {
                pool.push(instance);
                self.listing.mark()
            }
            Err(_) => false,
        };
        if newly_listed {
            budget.list(Arc::downgrade(self) as Weak<dyn IdlePool>);
        }
    }

    /// Drops the idle instances returned longer than `idle` ago.
    pub(super) fn drop_unused_for(&self, idle: Duration) {
        let dropped: Vec<PooledInstance> = match self.idle.lock() {
            Ok(mut pool) => {
                let (kept, dropped) = pool.drain(..).partition(|i| i.last_used.elapsed() < idle);
                *pool = kept;
                dropped
            }
            Err(_) => Vec::new(),
        };
        // Dropped outside the lock.
        drop(dropped);
    }

    /// Drops every idle instance.
    pub(super) fn clear(&self) {
        let dropped = self
            .idle
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default();
        drop(dropped);
    }

    /// How many idle instances it holds.
    pub fn len(&self) -> usize {
        self.idle.lock().map(|p| p.len()).unwrap_or(0)
    }

    /// The linear memory of each idle instance, in bytes.
    pub fn memory(&self) -> Vec<usize> {
        self.idle
            .lock()
            .map(|p| p.iter().map(|i| i.store.data().limits.memory_bytes()).collect())
            .unwrap_or_default()
    }
}

impl IdlePool for InstancePool {
    fn least_recently_used(&self) -> Option<Instant> {
        let pool = self.idle.lock().ok()?;
        if pool.is_empty() {
            self.listing.unmark();
        }
        pool.first().map(|i| i.last_used)
    }

    fn drop_least_recently_used(&self) -> bool {
        let dropped = match self.idle.lock() {
            Ok(mut pool) if !pool.is_empty() => Some(pool.remove(0)),
            _ => None,
        };
        // Dropped outside the lock.
        dropped.is_some()
    }

    fn listing(&self) -> &Listing {
        &self.listing
    }
}

impl Drop for PooledInstance {
    fn drop(&mut self) {
        metrics().plugin_instances.get_or_create(&self.labels).dec();
    }
}

#[cfg(test)]
mod tests;
