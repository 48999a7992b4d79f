//! The embedded backend: a durable, single-process store with etcd3 semantics on [redb], a pure-Rust ACID B-tree
//! (the role bbolt plays inside etcd).
//!
//! # Data model
//! Four redb tables hold an MVCC revision log:
//! - `meta`: the store's current revision, the compaction revision, and the compaction cursor;
//! - `current`: every live key → its create and mod revisions (the latest state, for fast gets and lists);
//! - `history`: `(key, revision)` → the version of the key written at that revision (a value, or a tombstone for a
//!   deletion); values are stored here only, once per write;
//! - `log`: revision → the key written at that revision (every write touches exactly one key), for watches.
//!
//! # Revisions
//! As in etcd, an empty store is at revision 1 and the first write gets revision 2; every successful write gets
//! the next revision. A failed precondition consumes no revision. A list at revision 0 (or below) reads the latest
//! state; a list at a revision newer than the current one fails with [`StorageError::TooLargeRevision`].
//!
//! # Writes and group commit
//! One dedicated writer thread owns all write transactions. Callers send requests over a channel; the thread takes
//! every pending request into one redb transaction, applies them in arrival order (a failed precondition answers
//! only its own request), commits with [`redb::Durability::Immediate`], publishes the new revision, and only then
//! answers the callers. Reads run on tokio's blocking pool, never on the async worker threads.
//!
//! # Watches
//! A watch task reads the log from `after + 1` up to the latest committed revision in bounded chunks, then waits for
//! the writer to announce a newer revision, and repeats: replay and live events come from the same log, so there is
//! neither a gap nor a duplicate. A slow consumer only slows its own watch (the task waits for room in its channel
//! and reads on later from the durable log); if compaction overtakes it, its stream ends with
//! [`StorageError::Compacted`]. A watch emits [`super::WatchEvent::Progress`] only when asked to, by
//! [`Storage::request_progress`]: it catches up with the latest committed revision, then reports it.
//!
//! # Compaction
//! Compaction follows etcd: `compact(c)` removes every version at or below `c` that is not the latest version of
//! its key at `c` (a latest version that is a tombstone is removed too), and the log at or below `c`. Afterwards a
//! list at a revision below `c` fails with [`StorageError::Compacted`] (a list at `c` itself still works), and so
//! does a watch with `after < c` (a watch with `after == c` replays from `c + 1`). Compacting at or below the
//! current compaction revision fails with [`StorageError::Compacted`]; above the current revision with
//! [`StorageError::TooLargeRevision`]. The work is done in bounded transactions interleaved with write batches, and
//! resumes after a restart if it was interrupted. Compact at a revision some time in the past (as kube-apiserver's
//! compactor does): a watch that has not yet read the events up to the compaction revision ends with
//! [`StorageError::Compacted`], even if it is only milliseconds behind.

use std::path::Path;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc as std_mpsc, Arc};
use std::thread::JoinHandle;

use redb::{Database, TableDefinition};
use tokio::sync::{oneshot, watch};

use super::{BoxFuture, KeyValue, ListOptions, ListResult, Result, Revision, Storage, StorageError, WatchStream};

mod read;
pub mod snapshot;
#[cfg(test)]
mod tests;
mod writer;

/// Store-wide counters and settings: key → value.
const META: TableDefinition<&str, i64> = TableDefinition::new("meta");
/// Live keys: key → (create revision, mod revision).
const CURRENT: TableDefinition<&str, (i64, i64)> = TableDefinition::new("current");
/// Versions: (key, mod revision) → encoded [`Version`].
const HISTORY: TableDefinition<(&str, i64), &[u8]> = TableDefinition::new("history");
/// The revision log: revision → the key written at that revision.
const LOG: TableDefinition<i64, &str> = TableDefinition::new("log");

/// `META` key: the store's current revision.
const META_REVISION: &str = "revision";
/// `META` key: the compaction revision (0 when never compacted).
const META_COMPACTED: &str = "compacted";
/// `META` key: the revision up to which compaction has removed history (below `compacted` while it runs).
const META_COMPACT_CURSOR: &str = "compact_cursor";

/// The revision of an empty store, as in etcd.
const INITIAL_REVISION: Revision = 1;
/// The capacity of a watch's channel.
const WATCH_CHANNEL_CAPACITY: usize = 256;

/// The store's page cache by default. redb's default (1 GiB) kept the whole database in the heap, next to the watch
/// caches that serve most reads anyway and the OS's page cache that serves redb's misses: after 1,000 tenants were
/// removed, it was most of what stayed allocated. 1 MiB rather than 4 or 16: creates, GETs and lists of
/// 10,000 objects ran as fast, and 300 removed tenants left 34 MiB resident instead of 38 (its 4 KiB pages, read and
/// written on many threads, are spread over many of the allocator's pages; BENCHMARKS.md). Half of it at most holds a
/// transaction's written pages before they go to the file.
pub const DEFAULT_CACHE_BYTES: usize = 1 << 20;

/// A durable, embedded [`Storage`] backend on redb. See the [module documentation](self) for its design.
pub struct EmbeddedStorage {
    /// State shared with the writer thread and the read tasks.
    shared: Arc<Shared>,
    /// Requests to the writer thread; `None` only while dropping.
    requests: Option<std_mpsc::Sender<Request>>,
    /// The latest committed revision, published by the writer thread after each commit.
    committed: watch::Receiver<Revision>,
    /// The writer thread, joined on drop.
    writer: Option<JoinHandle<()>>,
    /// Watch tasks alive.
    watchers: Arc<AtomicUsize>,
    /// Progress requests: a counter bumped by [`Storage::request_progress`], observed by every watch task.
    progress: watch::Sender<u64>,
}

/// State shared by the store, its writer thread, and its read tasks.
struct Shared {
    /// The database.
    db: Database,
    /// The compaction revision, mirrored from `META` by the writer thread for cheap checks.
    compacted: AtomicI64,
    /// Write transactions committed (a diagnostic for group commit).
    transactions: AtomicU64,
    /// Requests sent to the writer thread (a diagnostic for group commit).
    submitted: AtomicU64,
}

/// A request to the writer thread.
enum Request {
    /// A write, answered once committed.
    Write(WriteOp, oneshot::Sender<Result<Outcome>>),
    /// A compaction, answered once its history is removed.
    Compact(Revision, oneshot::Sender<Result<()>>),
}

/// One write.
enum WriteOp {
    /// Create a key that must not exist.
    Create { key: String, value: Vec<u8> },
    /// Replace a key's value if its mod revision is `expected`.
    Update {
        key: String,
        value: Vec<u8>,
        expected: Revision,
    },
    /// Delete a key, if its mod revision is `expected` when given.
    Delete { key: String, expected: Option<Revision> },
}

/// The result of a successful write.
enum Outcome {
    /// The stored key-value of a create or update.
    Put(KeyValue),
    /// The deleted key-value and the revision of the deletion.
    Deleted(KeyValue, Revision),
}

/// One stored version of a key: its value, or a tombstone.
#[derive(Debug, PartialEq, Eq)]
struct Version {
    /// The key's create revision (0 for tombstones).
    create_revision: Revision,
    /// The value; `None` for a tombstone.
    value: Option<Vec<u8>>,
}

impl Version {
    /// Tag byte of a live value.
    const PUT: u8 = 1;
    /// Tag byte of a tombstone.
    const TOMBSTONE: u8 = 0;

    /// Encodes a value: tag, create revision (little-endian), value bytes.
    fn encode_put(create_revision: Revision, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(9 + value.len());
        out.push(Self::PUT);
        out.extend_from_slice(&create_revision.to_le_bytes());
        out.extend_from_slice(value);
        out
    }

    /// Encodes a tombstone.
    fn encode_tombstone() -> Vec<u8> {
        let mut out = vec![Self::TOMBSTONE];
        out.extend_from_slice(&0i64.to_le_bytes());
        out
    }

    /// Whether an encoded version is a tombstone.
    fn is_tombstone(bytes: &[u8]) -> bool {
        bytes.first() == Some(&Self::TOMBSTONE)
    }

    /// Decodes a version; corrupt data is an internal error.
    fn decode(bytes: &[u8]) -> Result<Self> {
        let corrupt = || StorageError::Internal(format!("corrupt history record of {} bytes", bytes.len()));
        let (&tag, rest) = bytes.split_first().ok_or_else(corrupt)?;
        let (revision, value) = rest.split_at_checked(8).ok_or_else(corrupt)?;
        let create_revision = Revision::from_le_bytes(revision.try_into().map_err(|_| corrupt())?);
        match tag {
            Self::PUT => Ok(Version {
                create_revision,
                value: Some(value.to_vec()),
            }),
            Self::TOMBSTONE => Ok(Version {
                create_revision,
                value: None,
            }),
            _ => Err(corrupt()),
        }
    }

    /// The key-value of a live version, `None` for a tombstone.
    fn into_key_value(self, key: &str, mod_revision: Revision) -> Option<KeyValue> {
        let value = self.value?;
        Some(KeyValue {
            key: key.to_owned(),
            value,
            create_revision: self.create_revision,
            mod_revision,
        })
    }
}

/// Maps any redb error to [`StorageError::Internal`].
fn internal(error: impl Into<redb::Error>) -> StorageError {
    StorageError::Internal(error.into().to_string())
}

impl EmbeddedStorage {
    /// Opens the store in `dir` (file `store.redb`), creating the directory and the store if missing, and starts its
    /// writer thread. A compaction interrupted by a crash resumes in the background.
    ///
    /// This does blocking file I/O: call it before starting the async runtime or from a blocking task.
    pub fn open(dir: &Path) -> Result<Self> {
        Self::open_with_cache(dir, DEFAULT_CACHE_BYTES)
    }

    /// Opens the store as [`EmbeddedStorage::open`] does, with a page cache of `cache_bytes`.
    pub fn open_with_cache(dir: &Path, cache_bytes: usize) -> Result<Self> {
        std::fs::create_dir_all(dir)
            .map_err(|e| StorageError::Unavailable(format!("cannot create {}: {e}", dir.display())))?;
        let path = dir.join("store.redb");
        let db = redb::Builder::new()
            .set_cache_size(cache_bytes)
            .create(&path)
            .map_err(|e| StorageError::Unavailable(format!("cannot open {}: {e}", path.display())))?;
        let state = writer::initialize(&db)?;
        let shared = Arc::new(Shared {
            db,
            compacted: AtomicI64::new(state.compacted),
            transactions: AtomicU64::new(0),
            submitted: AtomicU64::new(0),
        });
        let (committed_tx, committed) = watch::channel(state.revision);
        let (requests, requests_rx) = std_mpsc::channel();
        let writer = writer::Writer::new(shared.clone(), committed_tx, state);
        let handle = std::thread::Builder::new()
            .name("embedded-storage-writer".into())
            .spawn(move || writer.run(requests_rx))
            .map_err(|e| StorageError::Internal(format!("cannot start the writer thread: {e}")))?;
        Ok(EmbeddedStorage {
            shared,
            requests: Some(requests),
            committed,
            writer: Some(handle),
            watchers: Arc::default(),
            progress: watch::channel(0).0,
        })
    }

    /// Writes a snapshot of the store to `out`: everything it holds at the revision one read transaction sees, while
    /// writes go on ([`snapshot`]). Blocking file and database I/O: call it from a blocking task.
    pub fn snapshot(&self, out: impl std::io::Write) -> snapshot::Result<snapshot::SnapshotStatus> {
        snapshot::save(&self.shared.db, out)
    }

    /// Sends a request to the writer thread.
    fn send(&self, request: Request) -> Result<()> {
        let requests = self.requests.as_ref().ok_or_else(closed)?;
        requests.send(request).map_err(|_| closed())?;
        self.shared.submitted.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Sends a write to the writer thread and waits for its commit.
    async fn write(&self, op: WriteOp) -> Result<Outcome> {
        let (tx, rx) = oneshot::channel();
        self.send(Request::Write(op, tx))?;
        rx.await.map_err(|_| closed())?
    }

    /// Runs a read on the blocking pool.
    async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Database) -> Result<T> + Send + 'static,
    {
        read::blocking(self.shared.clone(), f).await
    }
}

/// The error of a request to a closed store.
fn closed() -> StorageError {
    StorageError::Unavailable("the embedded store is closed".into())
}

impl Drop for EmbeddedStorage {
    /// Stops the writer thread once it has finished the pending requests. Watches end with
    /// [`StorageError::Unavailable`].
    fn drop(&mut self) {
        self.requests = None;
        if let Some(handle) = self.writer.take() {
            // A panic of the writer thread has already answered its callers with errors; nothing is left to do.
            let _ = handle.join();
        }
    }
}

impl Storage for EmbeddedStorage {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        let key = key.to_owned();
        Box::pin(self.read(move |db| read::get(db, &key)))
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        let prefix = prefix.to_owned();
        Box::pin(self.read(move |db| read::list(db, &prefix, &options)))
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            match self
                .write(WriteOp::Create {
                    key: key.to_owned(),
                    value,
                })
                .await?
            {
                Outcome::Put(kv) => Ok(kv),
                Outcome::Deleted(..) => Err(StorageError::Internal("create answered as a delete".into())),
            }
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Vec<u8>, expected: Revision) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            match self
                .write(WriteOp::Update {
                    key: key.to_owned(),
                    value,
                    expected,
                })
                .await?
            {
                Outcome::Put(kv) => Ok(kv),
                Outcome::Deleted(..) => Err(StorageError::Internal("update answered as a delete".into())),
            }
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> BoxFuture<'a, Result<(KeyValue, Revision)>> {
        Box::pin(async move {
            match self
                .write(WriteOp::Delete {
                    key: key.to_owned(),
                    expected,
                })
                .await?
            {
                Outcome::Deleted(kv, revision) => Ok((kv, revision)),
                Outcome::Put(_) => Err(StorageError::Internal("delete answered as a put".into())),
            }
        })
    }

    /// Watches from `after` (0 or below: from the current revision). A revision newer than the current one is
    /// allowed: the watch waits for it, as in etcd. Fails with [`StorageError::Compacted`] when
    /// `after` is below the compaction revision.
    fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let mut committed = self.committed.clone();
            let current = *committed.borrow_and_update();
            let after = if after <= 0 { current } else { after };
            let compacted = self.shared.compacted.load(Ordering::Acquire);
            if after < compacted {
                return Err(StorageError::Compacted {
                    requested: after,
                    compacted,
                });
            }
            let (tx, rx) = tokio::sync::mpsc::channel(WATCH_CHANNEL_CAPACITY);
            let task = read::WatchTask {
                shared: Arc::downgrade(&self.shared),
                prefix: prefix.into(),
                after,
                committed,
                progress: self.progress.subscribe(),
                tx,
                _guard: read::WatcherGuard::new(self.watchers.clone()),
            };
            tokio::spawn(task.run());
            Ok(rx)
        })
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<Revision>> {
        let revision = *self.committed.borrow();
        Box::pin(async move { Ok(revision) })
    }

    fn compact(&self, revision: Revision) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            self.send(Request::Compact(revision, tx))?;
            rx.await.map_err(|_| closed())?
        })
    }

    fn request_progress(&self) -> BoxFuture<'_, Result<bool>> {
        self.progress.send_modify(|requests| *requests += 1);
        Box::pin(async { Ok(true) })
    }
}
