//! Giving back memory that other threads freed into a thread's allocator heap.
//!
//! mimalloc (the binary's allocator) gives each thread a heap of its own. A block freed by another thread goes onto
//! its page's list of remote frees, and only the owning thread folds those in, when it allocates from that page or
//! collects its heap; until then the page counts the blocks as used and stays resident even when all of them are
//! free. A thread that made long-lived objects (a tenant's registry and plugins, a watch cache's initial list) and
//! then waits for work thus keeps the pages of those objects after another thread dropped them: after 300 tenants
//! were removed, 17 MiB of blocks were still counted as used against 7 MiB live (issue 11's reclaim). Threads that
//! wait for work call [`collect`] (or [`collect_if_due`]) before they wait.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How the calling thread collects its allocator heap, set once by the binary for its allocator. Unset (in tests,
/// in a library user with another allocator), collecting does nothing.
pub static THREAD_COLLECT: OnceLock<fn()> = OnceLock::new();

/// The least time between two collections by one thread in [`collect_if_due`].
pub const COLLECT_EVERY: Duration = Duration::from_secs(1);

/// Collects the calling thread's heap now: frees its empty pages, those emptied by other threads' frees included.
pub fn collect() {
    if let Some(collect) = THREAD_COLLECT.get() {
        collect();
    }
    LAST.set(Some(Instant::now()));
}

thread_local! {
    static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Collects the calling thread's heap unless it did within [`COLLECT_EVERY`]: for threads that go idle often (the
/// async workers when they run out of tasks, the blocking pool's threads after each task), where collecting at each
/// pause would cost more than the memory it gives back.
pub fn collect_if_due() {
    if LAST.get().is_some_and(|last| last.elapsed() < COLLECT_EVERY) {
        return;
    }
    collect();
}
