//! Giving back memory that other threads freed into a thread's allocator heap.
//!
//! mimalloc (the binary's allocator) gives each thread a heap of its own. A block freed by another thread goes onto
//! its page's list of remote frees, and only the owning thread folds those in, when it allocates from that page or
//! collects its heap; until then the page counts the blocks as used and stays resident even when all of them are
//! free. A thread that made long-lived objects (a tenant's registry and plugins, a watch cache's initial list) and
//! then waits for work thus keeps the pages of those objects after another thread dropped them: after 300 tenants
//! were removed, 17 MiB of blocks were still counted as used against 7 MiB live. So a thread
//! that waits for work collects its heap: after a second without work (the plugin directory's thread, the embedded
//! store's writer: [`recv_collecting`]; the [`KeptThreads`] that the store reads on), every second from a thread of
//! the pool's own (the plugin lanes: [`collect_every_second`]), or when it runs out of work at most once a second
//! (the async workers: [`collect_if_due`]; the [`KeptThreads`] after a job). And the store's reads run on few
//! threads that are kept rather than on tokio's blocking pool, whose threads end after 10 s idle and leave their
//! heaps' partly used pages behind: a burst of tenant creates read on ~50 of them.

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

/// A few threads kept for blocking work, each collecting its heap at most once a second while busy and after each
/// second without work: in place of tokio's blocking pool for work that makes long-lived objects (see the module
/// documentation). The threads wait on a condition variable, without spinning: a rayon pool (as before) has each
/// idle thread call `sched_yield` 32 times before it sleeps, after every job; with the store's reads a few µs each
/// and the cores shared with the async workers, that spinning and the context switches it caused were ~10% of the
/// server's CPU in a run of creates.
pub struct KeptThreads {
    queue: std::sync::Arc<Queue>,
}

type Job = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    state: std::sync::Mutex<QueueState>,
    ready: std::sync::Condvar,
}

#[derive(Default)]
struct QueueState {
    jobs: std::collections::VecDeque<Job>,
    /// Set when the [`KeptThreads`] is dropped: the threads finish the queued jobs and end.
    closed: bool,
}

impl Queue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The next job, waiting for one (and collecting the thread's heap after each second without); `None` once
    /// closed and empty.
    fn next(&self) -> Option<Job> {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.jobs.pop_front() {
                return Some(job);
            }
            if state.closed {
                return None;
            }
            let (guard, waited) = self
                .ready
                .wait_timeout(state, COLLECT_EVERY)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            state = guard;
            if waited.timed_out() && state.jobs.is_empty() {
                drop(state);
                collect();
                state = self.lock();
            }
        }
    }
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
    /// Starts `threads` threads named `name-N`.
    pub fn start(name: &str, threads: usize) -> std::io::Result<KeptThreads> {
        let queue = std::sync::Arc::new(Queue::default());
        for i in 0..threads.max(1) {
            let queue = queue.clone();
            std::thread::Builder::new().name(format!("{name}-{i}")).spawn(move || {
                while let Some(job) = queue.next() {
                    job();
                    collect_if_due();
                }
            })?;
        }
        Ok(KeptThreads { queue })
    }

    /// Runs `f` on one of the threads and waits for it without blocking the caller's thread. A panic in `f` is
    /// [`Panicked`]; the thread lives on.
    pub async fn run<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T, Panicked> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.queue.lock().jobs.push_back(Box::new(move || {
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        }));
        self.queue.ready.notify_one();
        match rx.await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(_)) | Err(_) => Err(Panicked),
        }
    }
}

impl Drop for KeptThreads {
    fn drop(&mut self) {
        self.queue.lock().closed = true;
        self.queue.ready.notify_all();
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

    #[tokio::test]
    async fn kept_threads_share_the_work_and_end_when_dropped() {
        // Thread names are cut to 15 bytes in /proc: "kept-drop-test-N" shows as "kept-drop-test-".
        let alive = || {
            std::fs::read_dir("/proc/self/task")
                .unwrap()
                .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .filter(|comm| comm.starts_with("kept-drop-test"))
                .count()
        };
        let threads = KeptThreads::start("kept-drop-test", 2).unwrap();
        // Two jobs that each wait for the other can only finish on two threads at once.
        let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
        let (a, b) = (barrier.clone(), barrier);
        let (first, second) = tokio::join!(
            threads.run(move || a.wait().is_leader()),
            threads.run(move || b.wait().is_leader())
        );
        assert_ne!(first.unwrap(), second.unwrap(), "one of the two jobs leads the barrier");
        // Each thread names itself as it starts; both have run a job by now.
        assert_eq!(alive(), 2);
        drop(threads);
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while alive() > 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "the threads still run 10 s after the drop"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
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
