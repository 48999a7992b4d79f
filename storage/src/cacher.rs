//! The watch cache ("cacher"): an in-memory copy of one resource's keys in front of a [`Storage`], serving watches
//! and reads that need not be the latest, like k8s.io/apiserver's `Cacher`.
//!
//! # Design
//! [`Cacher::start`] spawns one feeder task. It lists the upstream under the resource prefix at a revision R (page
//! by page, every page at R), then follows it with ONE upstream watch from R, applying every event to an ordered
//! set of the objects, the cache's revision, and a bounded history of recent events (a ring buffer). If the
//! upstream watch fails or ends, the feeder resumes it from the cache's revision (with backoff); if the upstream has
//! compacted that revision away, it lists again. The cache never goes back in time: a list older than the cache's
//! revision is refused and retried.
//!
//! Each object is held once, as an `Arc<KeyValue>` (its JSON bytes) shared by the object set, the history and the
//! watchers' queues; readers get copies, or share the objects ([`Cacher::list_shared`], [`Cacher::get_shared`]) to write them out as they
//! are stored, with the resourceVersion spliced in at the place the cache found for it ([`Splice`]).
//!
//! # Reads
//! - [`Cacher::get`] and [`Cacher::list`] with a minimum revision (Kubernetes' `resourceVersion="0"`, or a
//!   `NotOlderThan` match) answer from memory once the cache's revision reaches it. A revision the upstream
//!   already has but the cache has not seen within [`CacherOptions::catch_up_timeout`] is read from the upstream
//!   instead (the cache only learns that nothing changed under its prefix from events or progress
//!   notifications); a revision newer than the upstream's fails with [`StorageError::TooLargeRevision`] after
//!   [`CacherOptions::wait_timeout`] (Kubernetes' 504 "Too large resource version").
//! - [`Cacher::consistent_list`] asks the upstream for its current revision and answers from memory once the cache
//!   has caught up to it; otherwise it falls back to the upstream, as Kubernetes' consistent reads from cache do.
//!   [`Cacher::consistent_get`] waits only for this host's own latest write, and reads the upstream when the cache
//!   is otherwise behind, asking it for this cache's own progress notification so that the next gets need not.
//!
//! # Watches
//! [`Cacher::watch_events`] replays the events after the requested revision from the history, then streams live events:
//! the feeder queues each event to every watcher of its key without waiting, so a watcher whose queue is full is
//! ended (its stream just ends, as kube's cacher terminates it) instead of slowing the others down. A revision older than the history
//! window fails with [`StorageError::Compacted`] (the API's 410 Expired). A watcher that has sent nothing for
//! [`CacherOptions::bookmark_interval`] gets a [`Progress`](crate::WatchEvent::Progress) event at the
//! cache's revision (a bookmark). When the cache lists again, every watcher ends with [`StorageError::Compacted`],
//! as it may have missed events.

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

use crate::{EventStream, KeyValue, ListOptions, ListResult, Result, Revision, Storage, StorageError};

mod feeder;
pub mod splice;
mod state;
#[cfg(test)]
mod tests;
mod watcher;

use splice::Splice;
use state::State;
use watcher::Watcher;

/// The capacity of a watch's output stream.
const OUTPUT_CAPACITY: usize = 64;

/// An object of a list, shared with the cache rather than copied.
#[derive(Clone, Debug)]
pub struct SharedObject {
    /// The object's key and stored JSON.
    pub kv: Arc<KeyValue>,
    /// Where its resourceVersion goes in its JSON; `None` when the JSON is not in the stored form (see [`Splice`]).
    pub splice: Option<Splice>,
}

/// A list whose objects are shared with the cache (or, when the cache could not serve it, read from the upstream).
#[derive(Clone, Debug, Default)]
pub struct SharedList {
    /// The objects, in key order.
    pub items: Vec<SharedObject>,
    /// The revision the list was read at.
    pub revision: Revision,
    /// How many more objects come after the last one (with a limit).
    pub remaining: u64,
}

impl SharedObject {
    /// An object read from storage, with its splice found.
    pub fn located(kv: KeyValue) -> SharedObject {
        SharedObject {
            splice: Splice::locate(&kv.value),
            kv: Arc::new(kv),
        }
    }
}

impl SharedList {
    /// A list read from storage, with each object's splice found.
    pub fn located(result: ListResult) -> SharedList {
        SharedList {
            items: result.items.into_iter().map(SharedObject::located).collect(),
            revision: result.revision,
            remaining: result.remaining,
        }
    }
}

/// A list as read: shared with the cache, or from the upstream.
enum Listed {
    /// From the cache.
    Cached(SharedList),
    /// From the upstream.
    Upstream(ListResult),
}

impl Listed {
    /// The list with copies of the objects.
    fn owned(self) -> ListResult {
        match self {
            Listed::Upstream(result) => result,
            Listed::Cached(list) => ListResult {
                items: list.items.iter().map(|o| KeyValue::clone(&o.kv)).collect(),
                revision: list.revision,
                remaining: list.remaining,
            },
        }
    }

    /// The list with shared objects.
    fn shared(self) -> SharedList {
        match self {
            Listed::Cached(list) => list,
            Listed::Upstream(result) => SharedList::located(result),
        }
    }
}

/// Settings of a [`Cacher`].
#[derive(Clone, Debug)]
pub struct CacherOptions {
    /// How many recent events the history keeps for watches that start in the past.
    pub history: usize,
    /// How long a watcher may receive nothing before it gets a bookmark; zero disables bookmarks.
    pub bookmark_interval: Duration,
    /// How long a read waits for the cache to reach a revision newer than the upstream's before failing with
    /// [`StorageError::TooLargeRevision`]; also how long a watch waits for the first list.
    pub wait_timeout: Duration,
    /// How long a read waits for the cache to reach a revision the upstream already has, before reading the
    /// upstream instead.
    pub catch_up_timeout: Duration,
    /// How many events may wait for a watcher before it is ended as too slow.
    pub watcher_queue: usize,
    /// The page size of the lists of the upstream.
    pub page_size: usize,
}

impl Default for CacherOptions {
    fn default() -> Self {
        CacherOptions {
            history: 10_000,
            bookmark_interval: Duration::from_secs(60),
            wait_timeout: Duration::from_secs(3),
            catch_up_timeout: Duration::from_millis(100),
            watcher_queue: 1024,
            page_size: 1000,
        }
    }
}

/// A snapshot of a [`Cacher`]'s state and counters, for metrics and tests.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacherStats {
    /// The cache's revision (0 before the first list).
    pub revision: Revision,
    /// The oldest revision a watch can start after.
    pub oldest: Revision,
    /// The number of cached objects.
    pub objects: usize,
    /// The sum of the key and value lengths of the cached objects.
    pub bytes: usize,
    /// The number of events in the history.
    pub events: usize,
    /// The number of active watchers.
    pub watchers: usize,
    /// How many times the cache listed the upstream again after the first list.
    pub relists: u64,
    /// How many times the upstream watch was resumed after an error.
    pub resumes: u64,
    /// How many reads went to the upstream because the cache had not caught up.
    pub upstream_reads: u64,
}

/// Counters of a [`Cacher`].
#[derive(Default)]
struct Counters {
    /// See [`CacherStats::relists`].
    relists: AtomicU64,
    /// See [`CacherStats::resumes`].
    resumes: AtomicU64,
    /// See [`CacherStats::upstream_reads`].
    upstream_reads: AtomicU64,
}

/// State shared by the cacher and its feeder task.
struct Shared {
    /// The store the cache follows.
    upstream: Arc<dyn Storage>,
    /// The resource prefix.
    prefix: String,
    /// Settings.
    options: CacherOptions,
    /// The cache.
    state: RwLock<State>,
    /// The cache's revision, published by the feeder after it has queued the events up to it to the watchers.
    revision: watch::Sender<Revision>,
    /// The revision of the latest write under the prefix made through this host (see [`Cacher::note_write`]).
    written: AtomicI64,
    /// Counters.
    stats: Counters,
    /// The revision of the cache's first list: its history never reaches further back.
    first_list: std::sync::OnceLock<Revision>,
    /// The highest revision a consistent get asked the upstream to bring this cache to (see [`Cacher::nudge`]).
    nudged: AtomicI64,
    /// Whether the feeder follows the upstream's watch (its list is loaded and its watch open).
    following: watch::Sender<bool>,
}

impl Shared {
    /// Locks the state for reading.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Locks the state for writing.
    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a read is served from.
enum Source {
    /// The cache.
    Cache,
    /// The upstream, at its latest revision.
    Upstream,
}

/// The watch cache of one resource. See the [module documentation](self).
pub struct Cacher {
    /// State shared with the feeder.
    shared: Arc<Shared>,
    /// The feeder task, aborted on drop.
    feeder: JoinHandle<()>,
}

impl fmt::Debug for Cacher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cacher")
            .field("prefix", &self.shared.prefix)
            .field("revision", &self.revision())
            .finish_non_exhaustive()
    }
}

impl Drop for Cacher {
    /// Stops the feeder; the watches end with [`StorageError::Unavailable`].
    fn drop(&mut self) {
        self.feeder.abort();
    }
}

impl Cacher {
    /// Starts caching the keys under `resource_prefix` of `upstream`. Must be called within a tokio runtime. The
    /// cache fills in the background; reads made before it is ready go to the upstream.
    pub fn start(upstream: Arc<dyn Storage>, resource_prefix: String, options: CacherOptions) -> Arc<Cacher> {
        let (revision, _) = watch::channel(0);
        let state = RwLock::new(State::new(options.history, &resource_prefix));
        let shared = Arc::new(Shared {
            upstream,
            prefix: resource_prefix,
            state,
            options,
            revision,
            written: AtomicI64::new(0),
            stats: Counters::default(),
            first_list: std::sync::OnceLock::new(),
            nudged: AtomicI64::new(0),
            following: watch::Sender::new(false),
        });
        let feeder = tokio::spawn(feeder::run(shared.clone()));
        Arc::new(Cacher { shared, feeder })
    }

    /// The resource prefix.
    pub fn prefix(&self) -> &str {
        &self.shared.prefix
    }

    /// The store the cache follows (for writes and for reads the cache cannot serve).
    pub fn upstream(&self) -> &Arc<dyn Storage> {
        &self.shared.upstream
    }

    /// The cache's revision: 0 until the first list is loaded.
    pub fn revision(&self) -> Revision {
        *self.shared.revision.borrow()
    }

    /// Waits up to `timeout` for the first list to be loaded; returns the cache's revision, or
    /// [`StorageError::Unavailable`].
    pub async fn ready(&self, timeout: Duration) -> Result<Revision> {
        if self.wait_for(1, timeout).await {
            Ok(self.revision())
        } else {
            Err(self.not_ready())
        }
    }

    /// A snapshot of the cache's state and counters.
    pub fn stats(&self) -> CacherStats {
        let state = self.shared.read();
        let counters = &self.shared.stats;
        CacherStats {
            revision: state.revision(),
            oldest: state.oldest(),
            objects: state.len(),
            bytes: state.bytes(),
            events: state.history_len(),
            watchers: state.watcher_count(),
            relists: counters.relists.load(Ordering::Relaxed),
            resumes: counters.resumes.load(Ordering::Relaxed),
            upstream_reads: counters.upstream_reads.load(Ordering::Relaxed),
        }
    }

    /// Reads `key` at a revision not older than `min_revision` (0: any). See the [module documentation](self) for
    /// when it waits, reads the upstream, or fails with [`StorageError::TooLargeRevision`].
    pub async fn get(&self, key: &str, min_revision: Revision) -> Result<Option<KeyValue>> {
        self.check(key)?;
        match self.source(min_revision).await? {
            Source::Cache => {
                let kv = self.shared.read().get(key);
                Ok(kv.map(|kv| KeyValue::clone(&kv)))
            }
            Source::Upstream => self.shared.upstream.get(key).await,
        }
    }

    /// [`Cacher::get`], with the object shared with the cache instead of copied (and its splice found when read
    /// from the upstream).
    pub async fn get_shared(&self, key: &str, min_revision: Revision) -> Result<Option<SharedObject>> {
        self.check(key)?;
        let span = tracing::info_span!(target: component_base::trace::TARGET, "watch cache", operation = "get", key, from = tracing::field::Empty);
        let answer = async {
            match self.source(min_revision).await? {
                Source::Cache => {
                    span.record("from", "cache");
                    Ok(self.shared.read().get_shared(key))
                }
                Source::Upstream => {
                    span.record("from", "upstream");
                    Ok(self.shared.upstream.get(key).await?.map(SharedObject::located))
                }
            }
        };
        tracing::Instrument::instrument(answer, span.clone()).await
    }

    /// Lists the keys under `prefix` (the resource prefix or a longer one, such as a namespace's) at a revision not
    /// older than `min_revision` (0: any), with `options.limit` and `options.start_after` applied at the cache's
    /// revision. A non-zero `options.revision` asks for exactly that revision instead: it is served from memory
    /// when it is the cache's, from the upstream otherwise (for continuing a paginated list).
    pub async fn list(&self, prefix: &str, options: ListOptions, min_revision: Revision) -> Result<ListResult> {
        Ok(self.list_any(prefix, options, min_revision).await?.owned())
    }

    /// [`Cacher::list`], with the objects shared with the cache instead of copied.
    pub async fn list_shared(&self, prefix: &str, options: ListOptions, min_revision: Revision) -> Result<SharedList> {
        Ok(self.list_any(prefix, options, min_revision).await?.shared())
    }

    async fn list_any(&self, prefix: &str, options: ListOptions, min_revision: Revision) -> Result<Listed> {
        let span =
            tracing::info_span!(target: component_base::trace::TARGET, "watch cache", operation = "list", prefix);
        tracing::Instrument::instrument(self.list_spanned(prefix, options, min_revision), span).await
    }

    async fn list_spanned(&self, prefix: &str, options: ListOptions, min_revision: Revision) -> Result<Listed> {
        self.check(prefix)?;
        if options.revision > 0 {
            if let Some(result) = self.list_cached(prefix, &options, Some(options.revision)) {
                return Ok(Listed::Cached(result));
            }
            self.shared.stats.upstream_reads.fetch_add(1, Ordering::Relaxed);
            return Ok(Listed::Upstream(self.shared.upstream.list(prefix, options).await?));
        }
        if let Source::Cache = self.source(min_revision).await? {
            if let Some(result) = self.list_cached(prefix, &options, None) {
                return Ok(Listed::Cached(result));
            }
        }
        Ok(Listed::Upstream(self.shared.upstream.list(prefix, options).await?))
    }

    /// Reads `key` at the upstream's current revision or later (a consistent read, as a GET without resourceVersion
    /// asks): from memory when the cache has that revision already, or will have it in a moment because it is this
    /// host's own latest write; from the upstream otherwise. Unlike a list, it does not wait for a progress round:
    /// a point read costs the upstream less; but it asks for this cache's own notification where the upstream can
    /// give one cheaply ([`Cacher::nudge`]), so that the gets after it are served from memory.
    pub async fn consistent_get(&self, key: &str) -> Result<Option<KeyValue>> {
        Ok(self
            .consistent_get_any(key, false)
            .await?
            .map(|object| Arc::try_unwrap(object.kv).unwrap_or_else(|kv| KeyValue::clone(&kv))))
    }

    /// [`Cacher::consistent_get`], with the object shared with the cache instead of copied (and its splice found
    /// when read from the upstream).
    pub async fn consistent_get_shared(&self, key: &str) -> Result<Option<SharedObject>> {
        self.consistent_get_any(key, true).await
    }

    /// A consistent read of `key`: shared from the cache (with its splice), or read from the upstream (with its
    /// splice found when `locate`).
    async fn consistent_get_any(&self, key: &str, locate: bool) -> Result<Option<SharedObject>> {
        self.check(key)?;
        let target = self.shared.upstream.current_revision().await?;
        let current = self.revision() >= target
            || (self.last_write() >= target && self.wait_for(target, self.shared.options.catch_up_timeout).await);
        if current {
            if let Some(object) = self.cached_get(key) {
                return Ok(object);
            }
        } else {
            self.nudge(target).await;
        }
        self.shared.stats.upstream_reads.fetch_add(1, Ordering::Relaxed);
        Ok(self.shared.upstream.get(key).await?.map(|kv| {
            if locate {
                SharedObject::located(kv)
            } else {
                SharedObject {
                    kv: Arc::new(kv),
                    splice: None,
                }
            }
        }))
    }

    /// Lists the keys under `prefix` at the upstream's current revision or later (a consistent read): from memory
    /// once the cache has caught up with the upstream, from the upstream otherwise. `options.revision` is ignored.
    pub async fn consistent_list(&self, prefix: &str, options: ListOptions) -> Result<ListResult> {
        Ok(self.consistent_list_any(prefix, options).await?.owned())
    }

    /// [`Cacher::consistent_list`], with the objects shared with the cache instead of copied.
    pub async fn consistent_list_shared(&self, prefix: &str, options: ListOptions) -> Result<SharedList> {
        Ok(self.consistent_list_any(prefix, options).await?.shared())
    }

    async fn consistent_list_any(&self, prefix: &str, options: ListOptions) -> Result<Listed> {
        self.check(prefix)?;
        let options = ListOptions { revision: 0, ..options };
        let target = self.shared.upstream.current_revision().await?;
        if self.catch_up(target).await {
            if let Some(result) = self.list_cached(prefix, &options, None) {
                return Ok(Listed::Cached(result));
            }
        }
        self.shared.stats.upstream_reads.fetch_add(1, Ordering::Relaxed);
        Ok(Listed::Upstream(self.shared.upstream.list(prefix, options).await?))
    }

    /// Watches the keys under `prefix` (the resource prefix or a longer one) for changes after revision `after`
    /// (0: from the cache's revision on), in revision order with no gaps. Fails with [`StorageError::Compacted`]
    /// when `after` is older than the history window, and with [`StorageError::Unavailable`] when the first list
    /// is not loaded within [`CacherOptions::wait_timeout`]. The stream ends without an error when the
    /// watcher is too slow, with [`StorageError::Compacted`] when the cache listed again. The events' key-values
    /// are copies, for the tests; the server uses [`Self::watch_events`], which shares them with the cache.
    #[cfg(test)]
    pub async fn watch(&self, prefix: &str, after: Revision) -> Result<crate::WatchStream> {
        Ok(match self.watch_events(prefix, after).await? {
            EventStream::Owned(stream) => stream,
            EventStream::Shared(stream) => crate::owned_watch(stream),
        })
    }

    /// `watch`, the events' key-values shared with the cache (a watch older than the cache is the
    /// upstream's own).
    pub async fn watch_events(&self, prefix: &str, after: Revision) -> Result<EventStream> {
        self.check(prefix)?;
        if !self.wait_for(1, self.shared.options.wait_timeout).await {
            return Err(self.not_ready());
        }
        if self
            .shared
            .first_list
            .get()
            .is_some_and(|&first| after > 0 && after < first)
        {
            // Older than the cache itself (started on first use, after that revision): the upstream's history may
            // still have it, as it would have had the cache been running then.
            return Ok(EventStream::Owned(self.shared.upstream.watch(prefix, after).await?));
        }
        let registration = self
            .shared
            .write()
            .register(prefix, after, self.shared.options.watcher_queue)?;
        let (output, stream) = mpsc::channel(OUTPUT_CAPACITY);
        let watcher = Watcher {
            replay: registration.replay,
            input: registration.input,
            closing: registration.closing,
            output,
            revision: self.shared.revision.subscribe(),
            last: registration.after,
            bookmark_interval: self.shared.options.bookmark_interval,
        };
        tokio::spawn(watcher.run());
        Ok(EventStream::Shared(stream))
    }

    /// Fails unless `key` lies under the resource prefix.
    fn check(&self, key: &str) -> Result<()> {
        if key.starts_with(self.shared.prefix.as_str()) {
            Ok(())
        } else {
            Err(StorageError::Internal(format!(
                "{key:?} is outside the watch cache of {:?}",
                self.shared.prefix
            )))
        }
    }

    /// The error of a cache that has not loaded its first list.
    fn not_ready(&self) -> StorageError {
        StorageError::Unavailable(format!("the watch cache of {:?} is not ready", self.shared.prefix))
    }

    /// Brings the cache up to `target`, a revision the upstream has reached: if it is behind, asks the upstream
    /// for a progress notification (its own where the upstream can give it, every watch's otherwise) and waits up
    /// to [`CacherOptions::catch_up_timeout`] for it. A cache that does not follow the upstream yet (its first list
    /// loading, its watch being opened again) asks for none, which would not reach it: its list or its watch brings
    /// it on, and it waits for those within the same time. Without progress notifications the cache learns of
    /// newer revisions only from the events of its own prefix, so it waits only when a write through
    /// [`Cacher::note_write`] at `target` or later is still on its way; otherwise the caller reads the upstream at
    /// once. Returns whether the cache reached `target`.
    async fn catch_up(&self, target: Revision) -> bool {
        if self.revision() >= target {
            return true;
        }
        let deadline = tokio::time::Instant::now() + self.shared.options.catch_up_timeout;
        let mut following = self.shared.following.subscribe();
        // Asking every watch of the store (thousands of tenants' caches) for progress for the sake of a cache that
        // is loading made each cache started under writes cost them all a wake-up.
        if !matches!(
            tokio::time::timeout_at(deadline, following.wait_for(|f| *f)).await,
            Ok(Ok(_))
        ) {
            return self.revision() >= target;
        }
        if self.revision() >= target {
            return true;
        }
        let timeout = deadline.saturating_duration_since(tokio::time::Instant::now());
        // This cache's own notification first: where the upstream can give it at once, no other watch is woken.
        if self.request_own_progress(target).await {
            return self.wait_for(target, timeout).await;
        }
        match self.shared.upstream.request_progress().await {
            Ok(true) => self.wait_for(target, timeout).await,
            Ok(false) => self.shared.written.load(Ordering::Acquire) >= target && self.wait_for(target, timeout).await,
            Err(e) => {
                tracing::debug!(prefix = %self.shared.prefix, error = %e, "watch cache: requesting progress failed");
                false
            }
        }
    }

    /// Asks the upstream, until it did for `target` or a newer revision, to tell this cache alone that nothing under
    /// its prefix changed up to `target` or later, where it can do so cheaply ([`Storage::request_progress_of`]): a
    /// consistent get that found the cache behind (another tenant's write moved the store's revision on) reads the
    /// upstream, and the gets after it are served from memory again. Without it, a tenant's cache fell behind at
    /// every other tenant's write and stayed behind until a write of its own, and each of its gets read the store
    /// meanwhile.
    async fn nudge(&self, target: Revision) {
        if self.shared.nudged.load(Ordering::Acquire) < target {
            self.request_own_progress(target).await;
        }
    }

    /// Asks the upstream for a progress notification to this cache alone at `target` or later
    /// ([`Storage::request_progress_of`]); returns whether it will come, and records it for [`Cacher::nudge`]. When
    /// it will not (nobody watches the prefix: the cache's watch is being opened; or an upstream that cannot tell),
    /// the next read asks again.
    async fn request_own_progress(&self, target: Revision) -> bool {
        match self
            .shared
            .upstream
            .request_progress_of(&self.shared.prefix, target)
            .await
        {
            Ok(true) => {
                self.shared.nudged.fetch_max(target, Ordering::AcqRel);
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::debug!(prefix = %self.shared.prefix, error = %e, "watch cache: requesting its progress failed");
                false
            }
        }
    }

    /// Records a write under the prefix at `revision` made through this host: the cache will see its event, and
    /// reads at that revision may wait for it instead of reading the upstream.
    pub fn note_write(&self, revision: Revision) {
        self.shared.written.fetch_max(revision, Ordering::AcqRel);
    }

    /// The revision of the latest write recorded by [`Cacher::note_write`] (0: none): reads at it or later see
    /// this host's own writes.
    pub fn last_write(&self) -> Revision {
        self.shared.written.load(Ordering::Acquire)
    }

    /// Waits up to `timeout` for the cache's revision to reach `target`; returns whether it did.
    async fn wait_for(&self, target: Revision, timeout: Duration) -> bool {
        let mut revision = self.shared.revision.subscribe();
        let reached = tokio::time::timeout(timeout, revision.wait_for(|r| *r >= target)).await;
        matches!(reached, Ok(Ok(_)))
    }

    /// Decides where a read at a revision not older than `min_revision` is served from.
    async fn source(&self, min_revision: Revision) -> Result<Source> {
        let target = min_revision.max(1);
        if self.revision() >= target {
            return Ok(Source::Cache);
        }
        let options = &self.shared.options;
        let current = self.shared.upstream.current_revision().await?;
        let cached = if current >= target {
            self.catch_up(target).await
        } else {
            self.wait_for(target, options.wait_timeout).await
        };
        if cached {
            return Ok(Source::Cache);
        }
        let current = if current >= target {
            current
        } else {
            self.shared.upstream.current_revision().await?
        };
        if current < target {
            return Err(StorageError::TooLargeRevision {
                requested: min_revision,
                current,
            });
        }
        self.shared.stats.upstream_reads.fetch_add(1, Ordering::Relaxed);
        Ok(Source::Upstream)
    }

    /// The cached value of `key` (`Some(None)`: absent), shared, or `None` while the cache has not listed yet.
    fn cached_get(&self, key: &str) -> Option<Option<SharedObject>> {
        let state = self.shared.read();
        if state.revision() == 0 {
            return None;
        }
        Some(state.get_shared(key))
    }

    /// A page of the cached keys under `prefix`, if the cache is ready and, when `exact` is given, at that
    /// revision.
    fn list_cached(&self, prefix: &str, options: &ListOptions, exact: Option<Revision>) -> Option<SharedList> {
        let state = self.shared.read();
        let revision = state.revision();
        if revision == 0 || exact.is_some_and(|exact| exact != revision) {
            return None;
        }
        let (items, remaining) = state.list(prefix, options);
        Some(SharedList {
            items,
            revision,
            remaining,
        })
    }
}
