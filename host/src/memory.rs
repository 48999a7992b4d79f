//! Giving back memory that other threads freed into a thread's allocator heap.
//!
//! mimalloc (the binary's allocator) gives each thread a heap of its own. A block freed by another thread goes onto
//! its page's list of remote frees, and only the owning thread folds those in, when it allocates from that page or
//! collects its heap; until then the page counts the blocks as used and stays resident even when all of them are
//! free. A thread that made long-lived objects (a tenant's registry and plugins, a watch cache's initial list) and
//! then waits for work thus keeps the pages of those objects after another thread dropped them: after 300 tenants
//! were removed, 17 MiB of blocks were still counted as used against 7 MiB live (issue 11's reclaim). So a thread
//! that waits for work collects its heap: after a second without work (the plugin directory's thread, the embedded
//! store's writer: [`recv_collecting`]), every second from a thread of the pool's own (the plugin lanes, and the
//! [`KeptThreads`] that the store reads on: [`collect_every_second`]), or when it runs out of work at most once a
//! second (the async workers: [`collect_if_due`]). And the store's reads run on few threads that are kept rather
//! than on tokio's blocking pool, whose threads end after 10 s idle and leave their heaps' partly used pages behind:
//! a burst of tenant creates read on ~50 of them.

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
/// async workers when they run out of tasks), where collecting at each pause would cost more than the memory it
/// gives back.
pub fn collect_if_due() {
    if LAST.get().is_some_and(|last| last.elapsed() < COLLECT_EVERY) {
        return;
    }
    collect();
}

/// Waits for the next message of `rx`, collecting the calling thread's heap after each [`COLLECT_EVERY`] without one:
/// how a thread that waits for work on a channel gives back what other threads freed meanwhile. `None` once every
/// sender is gone.
pub fn recv_collecting<T>(rx: &std::sync::mpsc::Receiver<T>) -> Option<T> {
    loop {
        match rx.recv_timeout(COLLECT_EVERY) {
            Ok(message) => return Some(message),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => collect(),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
}

/// Makes each thread of `pool` collect its heap every [`COLLECT_EVERY`], busy or idle, from a thread of its own named
/// `name`, for as long as the pool lives (a pool's threads have no hook for when they idle). Nothing when no collect
/// hook is set. Fails only when the thread cannot be started.
pub fn collect_every_second(pool: &std::sync::Arc<rayon::ThreadPool>, name: &str) -> std::io::Result<()> {
    if THREAD_COLLECT.get().is_none() {
        return Ok(());
    }
    let pool = std::sync::Arc::downgrade(pool);
    std::thread::Builder::new().name(name.into()).spawn(move || {
        while let Some(threads) = pool.upgrade() {
            threads.broadcast(|_| collect());
            drop(threads);
            std::thread::sleep(COLLECT_EVERY);
        }
    })?;
    Ok(())
}

/// A few threads kept for blocking work, each collecting its heap every second ([`collect_every_second`]): in place
/// of tokio's blocking pool for work that makes long-lived objects (see the module documentation).
pub struct KeptThreads {
    pool: std::sync::Arc<rayon::ThreadPool>,
}

/// The error of work on [`KeptThreads`] that panicked.
#[derive(Debug)]
pub struct Panicked;

impl std::fmt::Display for Panicked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the task panicked")
    }
}

impl std::error::Error for Panicked {}

impl KeptThreads {
    /// Starts `threads` threads named `name-N` (and `name-collect`, which makes them collect).
    pub fn start(name: &'static str, threads: usize) -> std::io::Result<KeptThreads> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(move |i| format!("{name}-{i}"))
            .build()
            .map(std::sync::Arc::new)
            .map_err(std::io::Error::other)?;
        collect_every_second(&pool, &format!("{name}-collect"))?;
        Ok(KeptThreads { pool })
    }

    /// Runs `f` on one of the threads and waits for it without blocking the caller's thread. A panic in `f` is
    /// [`Panicked`]; the thread lives on.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, Panicked> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.pool.spawn(move || {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        });
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(_)) | Err(_) => Err(Panicked),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn kept_threads_run_work_and_outlive_a_panic() {
        let threads = KeptThreads::start("kept-threads-test", 2).unwrap();
        let name = threads
            .run(|| std::thread::current().name().map(str::to_owned))
            .await
            .unwrap();
        assert!(name.is_some_and(|n| n.starts_with("kept-threads-test-")));
        let panicked = threads.run(|| -> u32 { panic!("a task that panics") }).await;
        assert!(panicked.is_err());
        assert_eq!(threads.run(|| 40 + 2).await.unwrap(), 42);
    }

    #[test]
    fn recv_collecting_passes_messages_on_and_ends_with_the_senders() {
        let (tx, rx) = std::sync::mpsc::channel();
        tx.send(1).unwrap();
        tx.send(2).unwrap();
        assert_eq!(recv_collecting(&rx), Some(1));
        assert_eq!(recv_collecting(&rx), Some(2));
        drop(tx);
        assert_eq!(recv_collecting(&rx), None);
    }
}
