//! Reads of the embedded store: get, list at a revision, and the watch task reading the revision log.

use std::ops::Bound;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use redb::{Database, ReadOnlyTable, ReadTransaction, ReadableDatabase};
use tokio::sync::{mpsc, watch};

use super::{closed, internal, Shared, Version, CURRENT, HISTORY, LOG, META, META_COMPACTED, META_REVISION};
use crate::{KeyValue, ListOptions, ListResult, Result, Revision, StorageError, WatchEvent};

/// The most events a watch reads in one read transaction.
const MAX_EVENTS_PER_READ: usize = 512;
/// The most log entries a watch scans in one read transaction.
const MAX_SCAN_PER_READ: i64 = 8192;

/// The history table, opened for reading.
type History = ReadOnlyTable<(&'static str, i64), &'static [u8]>;

/// Runs `f` on the database on the store's reader threads ([`readers`]).
pub(super) async fn blocking<T, F>(shared: Arc<Shared>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce(&Database) -> Result<T> + Send + 'static,
{
    readers()?
        .run(move || f(&shared.db))
        .await
        .map_err(|_| StorageError::Internal("storage read task failed".into()))?
}

/// The threads every embedded store reads on ([`KeptThreads`](component_base::memory::KeptThreads)): reads on tokio's
/// blocking pool ran on up to ~50 threads in a burst of tenant creates. As many threads as cores, 2 to 8: a read is
/// CPU work on pages mostly in memory.
fn readers() -> Result<&'static component_base::memory::KeptThreads> {
    static READERS: OnceLock<std::result::Result<component_base::memory::KeptThreads, String>> = OnceLock::new();
    let readers = READERS.get_or_init(|| {
        let threads = std::thread::available_parallelism().map_or(2, |n| n.get().clamp(2, 8));
        component_base::memory::KeptThreads::start("embedded-storage-reader", threads).map_err(|e| e.to_string())
    });
    readers
        .as_ref()
        .map_err(|e| StorageError::Unavailable(format!("cannot start the store's reader threads: {e}")))
}

/// Reads one `META` counter (0 when absent).
fn meta(txn: &ReadTransaction, key: &str) -> Result<i64> {
    let table = txn.open_table(META).map_err(internal)?;
    let value = table.get(key).map_err(internal)?.map(|v| v.value());
    Ok(value.unwrap_or(0))
}

/// The key-value of `key` at `revision`, which must be a live version.
fn live_version(history: &History, key: &str, revision: Revision) -> Result<KeyValue> {
    let version = history.get((key, revision)).map_err(internal)?;
    let version = version.ok_or_else(|| StorageError::Internal(format!("no version of {key:?} at {revision}")))?;
    Version::decode(version.value())?
        .into_key_value(key, revision)
        .ok_or_else(|| StorageError::Internal(format!("version of {key:?} at {revision} is a tombstone")))
}

/// Reads one key at the latest revision.
pub(super) fn get(db: &Database, key: &str) -> Result<Option<KeyValue>> {
    let txn = db.begin_read().map_err(internal)?;
    let current = txn.open_table(CURRENT).map_err(internal)?;
    let Some((_, mod_revision)) = current.get(key).map_err(internal)?.map(|v| v.value()) else {
        return Ok(None);
    };
    let history = txn.open_table(HISTORY).map_err(internal)?;
    live_version(&history, key, mod_revision).map(Some)
}

/// Where a list starts: at the prefix, or strictly after a key at or past it.
fn list_start(prefix: &str, start_after: Option<&str>) -> (String, bool) {
    match start_after {
        Some(after) if after >= prefix => (after.to_owned(), true),
        _ => (prefix.to_owned(), false),
    }
}

/// A page of a list being filled.
struct Page {
    items: Vec<KeyValue>,
    limit: usize,
    remaining: u64,
}

impl Page {
    /// Whether the page is full, so that further keys only count as remaining.
    fn full(&self) -> bool {
        self.items.len() >= self.limit
    }
}

/// Lists the keys under `prefix` at a revision, with pagination.
pub(super) fn list(db: &Database, prefix: &str, options: &ListOptions) -> Result<ListResult> {
    let txn = db.begin_read().map_err(internal)?;
    let current = meta(&txn, META_REVISION)?;
    let compacted = meta(&txn, META_COMPACTED)?;
    let revision = if options.revision <= 0 {
        current
    } else {
        options.revision
    };
    if revision > current {
        return Err(StorageError::TooLargeRevision {
            requested: revision,
            current,
        });
    }
    if revision < compacted {
        return Err(StorageError::Compacted {
            requested: revision,
            compacted,
        });
    }
    let limit = if options.limit == 0 { usize::MAX } else { options.limit };
    let mut page = Page {
        items: Vec::new(),
        limit,
        remaining: 0,
    };
    let start = list_start(prefix, options.start_after.as_deref());
    let history = txn.open_table(HISTORY).map_err(internal)?;
    if revision == current {
        list_latest(&txn, &history, prefix, start, &mut page)?;
    } else {
        list_at(&history, prefix, start, revision, &mut page)?;
    }
    Ok(ListResult {
        items: page.items,
        revision,
        remaining: page.remaining,
    })
}

/// Fills `page` from the live keys.
fn list_latest(
    txn: &ReadTransaction,
    history: &History,
    prefix: &str,
    (start, exclusive): (String, bool),
    page: &mut Page,
) -> Result<()> {
    let current = txn.open_table(CURRENT).map_err(internal)?;
    let lower = if exclusive {
        Bound::Excluded(start.as_str())
    } else {
        Bound::Included(start.as_str())
    };
    for entry in current.range::<&str>((lower, Bound::Unbounded)).map_err(internal)? {
        let (key, revisions) = entry.map_err(internal)?;
        let key = key.value();
        if !key.starts_with(prefix) {
            break;
        }
        if page.full() {
            page.remaining += 1;
        } else {
            let (_, mod_revision) = revisions.value();
            page.items.push(live_version(history, key, mod_revision)?);
        }
    }
    Ok(())
}

/// Fills `page` from the history at an older `revision`: for each key under the prefix, its latest version at or
/// below the revision, if live. Seeks from key to key, so the cost is per key, not per version.
fn list_at(
    history: &History,
    prefix: &str,
    (mut cursor, mut exclusive): (String, bool),
    revision: Revision,
    page: &mut Page,
) -> Result<()> {
    loop {
        let lower = if exclusive {
            Bound::Excluded((cursor.as_str(), i64::MAX))
        } else {
            Bound::Included((cursor.as_str(), i64::MIN))
        };
        let next = history
            .range::<(&str, i64)>((lower, Bound::Unbounded))
            .map_err(internal)?
            .next();
        let Some(entry) = next else { break };
        let key = entry.map_err(internal)?.0.value().0.to_owned();
        if !key.starts_with(prefix) {
            break;
        }
        let versions = (
            Bound::Included((key.as_str(), i64::MIN)),
            Bound::Included((key.as_str(), revision)),
        );
        if let Some(entry) = history.range::<(&str, i64)>(versions).map_err(internal)?.next_back() {
            let (id, version) = entry.map_err(internal)?;
            if !Version::is_tombstone(version.value()) {
                if page.full() {
                    page.remaining += 1;
                } else if let Some(kv) = Version::decode(version.value())?.into_key_value(&key, id.value().1) {
                    page.items.push(kv);
                }
            }
        }
        cursor = key;
        exclusive = true;
    }
    Ok(())
}

/// Reads the events under `prefix` after revision `after`, up to `upto` at most (in bounded amounts). Returns
/// them and the revision up to which the log was read.
fn read_events(db: &Database, prefix: &str, after: Revision, upto: Revision) -> Result<(Vec<WatchEvent>, Revision)> {
    let txn = db.begin_read().map_err(internal)?;
    let compacted = meta(&txn, META_COMPACTED)?;
    if after < compacted {
        return Err(StorageError::Compacted {
            requested: after,
            compacted,
        });
    }
    let log = txn.open_table(LOG).map_err(internal)?;
    let history = txn.open_table(HISTORY).map_err(internal)?;
    let mut events = Vec::new();
    let upto = upto.min(after.saturating_add(MAX_SCAN_PER_READ));
    for entry in log.range(after.saturating_add(1)..=upto).map_err(internal)? {
        let (revision, key) = entry.map_err(internal)?;
        let (revision, key) = (revision.value(), key.value());
        if key.starts_with(prefix) {
            events.push(event(&history, key, revision)?);
            if events.len() >= MAX_EVENTS_PER_READ {
                return Ok((events, revision));
            }
        }
    }
    Ok((events, upto))
}

/// The event of the write of `key` at `revision`, with the version before it.
fn event(history: &History, key: &str, revision: Revision) -> Result<WatchEvent> {
    let version = history.get((key, revision)).map_err(internal)?;
    let version = version.ok_or_else(|| StorageError::Internal(format!("no version of {key:?} at {revision}")))?;
    let version = Version::decode(version.value())?;
    let older = (Bound::Included((key, i64::MIN)), Bound::Excluded((key, revision)));
    let prev = match history.range::<(&str, i64)>(older).map_err(internal)?.next_back() {
        Some(entry) => {
            let (id, prev) = entry.map_err(internal)?;
            Version::decode(prev.value())?.into_key_value(key, id.value().1)
        }
        None => None,
    };
    match version.into_key_value(key, revision) {
        Some(kv) => Ok(WatchEvent::Put { kv, prev }),
        None => {
            let prev = prev.ok_or_else(|| {
                StorageError::Internal(format!("delete of {key:?} at {revision} has no prior version"))
            })?;
            Ok(WatchEvent::Delete { prev, revision })
        }
    }
}

/// Counts a live watch task while it exists.
pub(super) struct WatcherGuard(Arc<AtomicUsize>);

impl WatcherGuard {
    /// Counts one more watch task in `count`.
    pub(super) fn new(count: Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        WatcherGuard(count)
    }
}

impl Drop for WatcherGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The task behind one watch: it reads the log after `after` up to the latest committed revision, then waits for
/// the writer to commit more, until the receiver is dropped or the store closes.
pub(super) struct WatchTask {
    /// The store; weak, so that a watch does not keep a dropped store's database open.
    pub(super) shared: Weak<Shared>,
    pub(super) prefix: Arc<str>,
    /// The revision of the last event delivered (or skipped as outside the prefix).
    pub(super) after: Revision,
    /// The latest committed revision.
    pub(super) committed: watch::Receiver<Revision>,
    /// Progress requests (see [`Storage::request_progress`](crate::Storage::request_progress)).
    pub(super) progress: watch::Receiver<u64>,
    pub(super) tx: mpsc::Sender<Result<WatchEvent>>,
    pub(super) _guard: WatcherGuard,
}

impl WatchTask {
    /// Streams events until the receiver is dropped, the store closes, or reading fails.
    pub(super) async fn run(mut self) {
        if let Err(e) = self.stream().await {
            // The receiver may be gone already; the watch ends either way.
            let _ = self.tx.send(Err(e)).await;
        }
    }

    /// Streams events; `Ok` when the receiver is gone.
    async fn stream(&mut self) -> Result<()> {
        // The revision of the last event or progress notification sent.
        let mut reported = self.after;
        let mut progress_requested = false;
        loop {
            let latest = *self.committed.borrow_and_update();
            while self.after < latest {
                let shared = self.shared.upgrade().ok_or_else(closed)?;
                let (prefix, after) = (self.prefix.clone(), self.after);
                let (events, read_to) = blocking(shared, move |db| read_events(db, &prefix, after, latest)).await?;
                for event in events {
                    reported = event.revision();
                    if self.tx.send(Ok(event)).await.is_err() {
                        return Ok(());
                    }
                }
                self.after = read_to;
            }
            // The writer publishes a revision before answering the write, so `latest` is at least the revision
            // current when the progress request was made.
            if progress_requested && reported < self.after {
                if self
                    .tx
                    .send(Ok(WatchEvent::Progress { revision: self.after }))
                    .await
                    .is_err()
                {
                    return Ok(());
                }
                reported = self.after;
            }
            progress_requested = false;
            tokio::select! {
                changed = self.committed.changed() => changed.map_err(|_| closed())?,
                changed = self.progress.changed() => {
                    changed.map_err(|_| closed())?;
                    self.progress.borrow_and_update();
                    progress_requested = true;
                }
                () = self.tx.closed() => return Ok(()),
            }
        }
    }
}
