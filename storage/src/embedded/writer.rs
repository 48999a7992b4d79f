//! The writer thread of the embedded store: group commit of writes, and compaction in bounded steps.

use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;

use redb::{Database, ReadableTable, Table, WriteTransaction};
use tokio::sync::{oneshot, watch};

use super::{
    internal, Outcome, Request, Shared, Version, WriteOp, CURRENT, HISTORY, INITIAL_REVISION, LOG, META,
    META_COMPACTED, META_COMPACT_CURSOR, META_REVISION,
};
use crate::{KeyValue, Result, Revision, StorageError};

/// The most requests applied in one write transaction.
const MAX_BATCH: usize = 1024;
/// The most revisions of history removed in one compaction transaction.
const COMPACT_CHUNK: i64 = 4096;

/// The persistent counters, as read when opening the store.
pub(super) struct InitialState {
    /// The current revision.
    pub(super) revision: Revision,
    /// The compaction revision.
    pub(super) compacted: Revision,
    /// The revision up to which history has been removed.
    pub(super) compact_cursor: Revision,
}

/// Creates the tables if missing and reads the persistent counters.
pub(super) fn initialize(db: &Database) -> Result<InitialState> {
    let txn = db.begin_write().map_err(internal)?;
    let state = {
        let mut meta = txn.open_table(META).map_err(internal)?;
        txn.open_table(CURRENT).map_err(internal)?;
        txn.open_table(HISTORY).map_err(internal)?;
        txn.open_table(LOG).map_err(internal)?;
        let get = |meta: &Table<&str, i64>, key: &str| -> Result<Option<i64>> {
            Ok(meta.get(key).map_err(internal)?.map(|v| v.value()))
        };
        let revision = match get(&meta, META_REVISION)? {
            Some(revision) => revision,
            None => {
                meta.insert(META_REVISION, INITIAL_REVISION).map_err(internal)?;
                INITIAL_REVISION
            }
        };
        InitialState {
            revision,
            compacted: get(&meta, META_COMPACTED)?.unwrap_or(0),
            compact_cursor: get(&meta, META_COMPACT_CURSOR)?.unwrap_or(0),
        }
    };
    txn.commit().map_err(internal)?;
    Ok(state)
}

/// The tables a write transaction changes.
struct Tables<'txn> {
    current: Table<'txn, &'static str, (i64, i64)>,
    history: Table<'txn, (&'static str, i64), &'static [u8]>,
    log: Table<'txn, i64, &'static str>,
}

impl<'txn> Tables<'txn> {
    /// Opens the tables in `txn`.
    fn open(txn: &'txn WriteTransaction) -> Result<Self, redb::Error> {
        Ok(Tables {
            current: txn.open_table(CURRENT)?,
            history: txn.open_table(HISTORY)?,
            log: txn.open_table(LOG)?,
        })
    }

    /// Records a new version of `key` at `revision`.
    fn record(&mut self, key: &str, revision: Revision, version: &[u8]) -> Result<(), redb::Error> {
        self.history.insert((key, revision), version)?;
        self.log.insert(revision, key)?;
        Ok(())
    }

    /// Applies one write at the next revision after `*revision`, advancing it on success. The outer error is a
    /// failure of the transaction; the inner one a failed precondition of this write alone.
    fn apply(&mut self, revision: &mut Revision, op: WriteOp) -> Result<Result<Outcome>, redb::Error> {
        let next = *revision + 1;
        match op {
            WriteOp::Create { key, value } => {
                if self.current.get(key.as_str())?.is_some() {
                    return Ok(Err(StorageError::AlreadyExists { key }));
                }
                self.current.insert(key.as_str(), (next, next))?;
                self.record(&key, next, &Version::encode_put(next, &value))?;
                *revision = next;
                Ok(Ok(Outcome::Put(KeyValue {
                    key,
                    value,
                    create_revision: next,
                    mod_revision: next,
                })))
            }
            WriteOp::Update { key, value, expected } => {
                let Some((create_revision, actual)) = self.current.get(key.as_str())?.map(|v| v.value()) else {
                    return Ok(Err(StorageError::NotFound { key }));
                };
                if actual != expected {
                    return Ok(Err(StorageError::Conflict { key, expected, actual }));
                }
                self.current.insert(key.as_str(), (create_revision, next))?;
                self.record(&key, next, &Version::encode_put(create_revision, &value))?;
                *revision = next;
                Ok(Ok(Outcome::Put(KeyValue {
                    key,
                    value,
                    create_revision,
                    mod_revision: next,
                })))
            }
            WriteOp::Delete { key, expected } => {
                let Some((_, actual)) = self.current.get(key.as_str())?.map(|v| v.value()) else {
                    return Ok(Err(StorageError::NotFound { key }));
                };
                if let Some(expected) = expected.filter(|&expected| expected != actual) {
                    return Ok(Err(StorageError::Conflict { key, expected, actual }));
                }
                let prev = self
                    .history
                    .get((key.as_str(), actual))?
                    .map(|v| Version::decode(v.value()));
                let prev = match prev {
                    Some(Ok(version)) => version.into_key_value(&key, actual),
                    Some(Err(e)) => return Ok(Err(e)),
                    None => None,
                };
                let Some(prev) = prev else {
                    return Ok(Err(StorageError::Internal(format!(
                        "no live version of {key:?} at {actual}"
                    ))));
                };
                self.current.remove(key.as_str())?;
                self.record(&key, next, &Version::encode_tombstone())?;
                *revision = next;
                Ok(Ok(Outcome::Deleted(prev, next)))
            }
        }
    }

    /// Removes the history made obsolete by a compaction at `target`, for the log entry (`revision`, `key`) with
    /// `revision <= target`: every older version of the key (the version at `revision` is newer and at or below
    /// the target), and the version at `revision` itself if it is a tombstone with no newer version up to the
    /// target. Together over every log entry up to the target, this leaves exactly the latest live version of
    /// each key at the target, even when the target grew while a compaction was under way.
    fn compact_entry(&mut self, key: &str, revision: Revision, target: Revision) -> Result<(), redb::Error> {
        let older = (Bound::Included((key, i64::MIN)), Bound::Excluded((key, revision)));
        self.history.retain_in(older, |_, _| false)?;
        let tombstone = self
            .history
            .get((key, revision))?
            .is_some_and(|v| Version::is_tombstone(v.value()));
        if tombstone {
            let newer = (Bound::Excluded((key, revision)), Bound::Included((key, target)));
            if self.history.range(newer)?.next().is_none() {
                self.history.remove((key, revision))?;
            }
        }
        Ok(())
    }
}

/// The writer: the only thread that writes to the database.
pub(super) struct Writer {
    shared: Arc<Shared>,
    /// Publishes the latest committed revision.
    committed: watch::Sender<Revision>,
    /// The current revision (the writer is the only one to change it).
    revision: Revision,
    /// The compaction revision.
    compacted: Revision,
    /// The revision up to which history has been removed; below `compacted` while a compaction is under way.
    compact_cursor: Revision,
    /// Callers waiting for the compaction under way.
    compaction_waiters: Vec<oneshot::Sender<Result<()>>>,
    /// The last compaction step failed: retry after the next batch of requests rather than at once.
    compaction_stalled: bool,
}

impl Writer {
    /// A writer for a store in `state`.
    pub(super) fn new(shared: Arc<Shared>, committed: watch::Sender<Revision>, state: InitialState) -> Self {
        Writer {
            shared,
            committed,
            revision: state.revision,
            compacted: state.compacted,
            compact_cursor: state.compact_cursor.min(state.compacted),
            compaction_waiters: Vec::new(),
            compaction_stalled: false,
        }
    }

    /// Serves requests until every sender is gone. Each round takes all pending requests (waiting for one when
    /// idle), commits their writes in one transaction, then does one step of a compaction under way.
    pub(super) fn run(mut self, requests: Receiver<Request>) {
        loop {
            let mut batch = Vec::new();
            let mut disconnected = false;
            if self.compact_cursor >= self.compacted || self.compaction_stalled {
                // Idle, it gives back the pages of what it made and other threads have freed since (committed
                // values, events); only this thread can.
                match component_base::memory::recv_collecting(&requests) {
                    Some(request) => batch.push(request),
                    None => return,
                }
            }
            while batch.len() < MAX_BATCH {
                match requests.try_recv() {
                    Ok(request) => batch.push(request),
                    Err(TryRecvError::Empty) => break,
                    Err(TryRecvError::Disconnected) => {
                        disconnected = true;
                        break;
                    }
                }
            }
            self.serve(batch);
            if disconnected {
                // An unfinished compaction resumes when the store is next opened.
                return;
            }
            if self.compact_cursor < self.compacted {
                self.compact_step();
            }
        }
    }

    /// Serves one batch: its writes in one transaction, then its compaction requests.
    fn serve(&mut self, batch: Vec<Request>) {
        let mut ops = Vec::new();
        let mut replies = Vec::new();
        let mut compactions = Vec::new();
        for request in batch {
            match request {
                Request::Write(op, reply) => {
                    ops.push(op);
                    replies.push(reply);
                }
                Request::Compact(revision, reply) => compactions.push((revision, reply)),
            }
        }
        if !ops.is_empty() {
            let outcomes = self.commit_writes(ops);
            match outcomes {
                Ok(outcomes) => {
                    for (reply, outcome) in replies.into_iter().zip(outcomes) {
                        // The caller may have gone away; its write stands.
                        let _ = reply.send(outcome);
                    }
                }
                Err(e) => {
                    for reply in replies {
                        let _ = reply.send(Err(e.clone()));
                    }
                }
            }
        }
        for (revision, reply) in compactions {
            self.schedule_compaction(revision, reply);
        }
    }

    /// Applies `ops` in one transaction and commits it durably (or aborts it when nothing changed), then publishes
    /// the new revision. Returns each write's outcome.
    fn commit_writes(&mut self, ops: Vec<WriteOp>) -> Result<Vec<Result<Outcome>>> {
        let txn = self.shared.db.begin_write().map_err(internal)?;
        let mut revision = self.revision;
        let outcomes = (|| -> Result<Vec<Result<Outcome>>, redb::Error> {
            let mut tables = Tables::open(&txn)?;
            let outcomes = ops
                .into_iter()
                .map(|op| tables.apply(&mut revision, op))
                .collect::<Result<_, _>>()?;
            if revision != self.revision {
                txn.open_table(META)?.insert(META_REVISION, revision)?;
            }
            Ok(outcomes)
        })()
        .map_err(internal)?;
        if revision == self.revision {
            txn.abort().map_err(internal)?;
            return Ok(outcomes);
        }
        txn.commit().map_err(internal)?;
        self.shared.transactions.fetch_add(1, Ordering::Relaxed);
        self.revision = revision;
        self.committed.send_replace(revision);
        Ok(outcomes)
    }

    /// Validates a compaction request and records its revision, so that reads below it fail from now on; the
    /// caller is answered once the history is removed.
    fn schedule_compaction(&mut self, revision: Revision, reply: oneshot::Sender<Result<()>>) {
        if revision > self.revision {
            let _ = reply.send(Err(StorageError::TooLargeRevision {
                requested: revision,
                current: self.revision,
            }));
            return;
        }
        if revision <= self.compacted {
            let _ = reply.send(Err(StorageError::Compacted {
                requested: revision,
                compacted: self.compacted,
            }));
            return;
        }
        let recorded = (|| -> Result<(), redb::Error> {
            let txn = self.shared.db.begin_write()?;
            txn.open_table(META)?.insert(META_COMPACTED, revision)?;
            txn.commit()?;
            Ok(())
        })();
        match recorded {
            Ok(()) => {
                self.shared.transactions.fetch_add(1, Ordering::Relaxed);
                self.compacted = revision;
                self.shared.compacted.store(revision, Ordering::Release);
                self.compaction_waiters.push(reply);
            }
            Err(e) => {
                let _ = reply.send(Err(internal(e)));
            }
        }
    }

    /// Removes the history of the next chunk of revisions of the compaction under way, in one transaction. On
    /// failure the waiters get the error and the next round retries.
    fn compact_step(&mut self) {
        let target = self.compacted;
        let end = self.compact_cursor.saturating_add(COMPACT_CHUNK).min(target);
        let step = (|| -> Result<(), redb::Error> {
            let txn = self.shared.db.begin_write()?;
            {
                let mut tables = Tables::open(&txn)?;
                let mut entries = Vec::new();
                for entry in tables.log.range((self.compact_cursor + 1)..=end)? {
                    let (revision, key) = entry?;
                    entries.push((revision.value(), key.value().to_owned()));
                }
                for (revision, key) in &entries {
                    tables.compact_entry(key, *revision, target)?;
                    tables.log.remove(*revision)?;
                }
                txn.open_table(META)?.insert(META_COMPACT_CURSOR, end)?;
            }
            txn.commit()?;
            Ok(())
        })();
        match step {
            Ok(()) => {
                self.shared.transactions.fetch_add(1, Ordering::Relaxed);
                self.compact_cursor = end;
                self.compaction_stalled = false;
                if end >= target {
                    for waiter in self.compaction_waiters.drain(..) {
                        let _ = waiter.send(Ok(()));
                    }
                }
            }
            Err(e) => {
                let error = internal(e);
                self.compaction_stalled = true;
                for waiter in self.compaction_waiters.drain(..) {
                    let _ = waiter.send(Err(error.clone()));
                }
            }
        }
    }
}
