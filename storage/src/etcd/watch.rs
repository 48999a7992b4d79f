//! Watches on etcd that survive broken connections.
//!
//! A [`Watcher`] opens an etcd watch on a key range with `prev_kv` and progress notifications, and a task forwards
//! its events, in revision order, into the watch's channel. The task remembers the last revision it delivered;
//! when the etcd stream breaks (a restarted member, a lost connection), it opens a new watch from there, retrying
//! with backoff for as long as the receiver lives, and drops what it had already delivered, so the consumer sees
//! neither a gap nor a duplicate. If a compaction overtook it meanwhile, the stream ends with
//! [`StorageError::Compacted`].
//!
//! etcd refuses a watch whose start revision is below its compaction revision, while the trait refuses a watch
//! with `after` below it. So a watch "after `after`" starts at `after` itself (not `after + 1`), which makes etcd's
//! check the trait's, and drops the events at `after`. Dropping on a resume works per revision: this assumes
//! each revision's events arrive in one response, which holds for the single-key writes of this backend.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::proto::PbEvent;
use etcd_client::{WatchClient, WatchOptions};
use tokio::sync::mpsc;

use super::{classify, header_revision, key_value, prefix_range, EtcdStorage};
use crate::{Result, Revision, StorageError, WatchEvent, WatchStream};

/// The capacity of a watch's channel.
const CHANNEL_CAPACITY: usize = 256;
/// The first delay before re-establishing a broken watch.
const INITIAL_BACKOFF: Duration = Duration::from_millis(100);
/// The longest delay between attempts to re-establish a broken watch.
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long [`compaction_revision`] waits for etcd's answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// `mvccpb.Event.EventType.PUT`.
const EVENT_PUT: i32 = 0;
/// `mvccpb.Event.EventType.DELETE`.
const EVENT_DELETE: i32 = 1;

/// The sending side of a watch's channel.
type Sender = mpsc::Sender<Result<WatchEvent>>;

/// One watch on a key prefix.
pub(super) struct Watcher {
    /// The watch client (clones share the connection).
    client: WatchClient,
    /// The etcd range watched: every key under the store's prefix followed by the watch's prefix.
    range: (Vec<u8>, Vec<u8>),
    /// The store's key prefix, removed from the keys delivered.
    store_prefix: String,
    /// The watched prefix, for logs.
    prefix: String,
    /// The deadline of establishing a watch.
    request_timeout: Duration,
    /// The store's count of running watch tasks.
    watchers: Arc<AtomicUsize>,
    /// The store's progress requests.
    progress: tokio::sync::watch::Receiver<u64>,
}

/// Counts a running watch task while it lives.
struct Running(Arc<AtomicUsize>);

impl Running {
    /// Counts one more task.
    fn new(watchers: &Arc<AtomicUsize>) -> Self {
        watchers.fetch_add(1, Ordering::AcqRel);
        Running(watchers.clone())
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Why forwarding from an etcd stream stopped.
enum Stopped {
    /// The receiver was dropped: the watch is over.
    ReceiverGone,
    /// The watch cannot continue: the error is its last item.
    Failed(StorageError),
    /// The etcd stream broke: re-establish it.
    Broken(String),
}

/// What the task has delivered.
struct Position {
    /// The last revision delivered (an event's, or a progress notification's).
    last: Revision,
    /// Events at or below this revision are being replayed by etcd after a (re)start, and were delivered already.
    skip_through: Revision,
}

impl Watcher {
    /// A watcher of the keys under `prefix` in `store`.
    pub(super) fn new(store: &EtcdStorage, prefix: &str) -> Self {
        Watcher {
            client: store.watch.clone(),
            range: prefix_range(&store.full_key(prefix)),
            store_prefix: store.prefix.clone(),
            prefix: prefix.to_owned(),
            request_timeout: store.request_timeout,
            watchers: store.watchers.clone(),
            progress: store.progress.subscribe(),
        }
    }

    /// Opens an etcd watch for the events after `after`, and waits until etcd has created it.
    ///
    /// Fails with [`StorageError::Compacted`] if etcd already says so, [`StorageError::Unavailable`] when etcd
    /// cannot be reached in time, and [`StorageError::Internal`] when etcd refuses the watch.
    pub(super) async fn open(&self, after: Revision) -> Result<etcd_client::WatchStream> {
        let options = WatchOptions::new()
            .with_range(self.range.1.clone())
            .with_start_revision(after.max(1))
            .with_prev_key()
            .with_progress_notify();
        let mut client = self.client.clone();
        let opening = async {
            let mut stream = client.watch(self.range.0.clone(), Some(options)).await?;
            let first = stream.message().await?;
            Ok((stream, first))
        };
        let (stream, first) = match tokio::time::timeout(self.request_timeout, opening).await {
            Ok(Ok(opened)) => opened,
            Ok(Err(e)) => return Err(classify(e).into_error()),
            Err(_) => {
                return Err(StorageError::Unavailable(format!(
                    "etcd did not start a watch within {:?}",
                    self.request_timeout
                )))
            }
        };
        match first {
            None => Err(StorageError::Unavailable("etcd closed the watch stream".into())),
            Some(response) if response.compact_revision() > 0 => Err(StorageError::Compacted {
                requested: after,
                compacted: response.compact_revision(),
            }),
            Some(response) if response.canceled() => Err(StorageError::Internal(format!(
                "etcd refused the watch: {}",
                response.cancel_reason()
            ))),
            Some(response) if response.created() => Ok(stream),
            Some(_) => Err(StorageError::Internal(
                "etcd answered a watch without creating it".into(),
            )),
        }
    }

    /// Starts the task forwarding the events of `stream` (opened with [`Watcher::open`] from `after`), and returns
    /// the watch's receiver.
    pub(super) fn spawn(self, stream: etcd_client::WatchStream, after: Revision) -> WatchStream {
        let (tx, rx) = mpsc::channel(CHANNEL_CAPACITY);
        let running = Running::new(&self.watchers);
        tokio::spawn(async move {
            let _running = running;
            self.run(stream, after, tx).await;
        });
        rx
    }

    /// Forwards the events of `stream` (opened from `after`) into `tx`, re-establishing the etcd watch whenever it
    /// breaks, until the receiver is dropped or the watch fails.
    async fn run(self, mut stream: etcd_client::WatchStream, after: Revision, tx: Sender) {
        let mut progress = Some(self.progress.clone());
        let mut position = Position {
            last: after,
            skip_through: after,
        };
        loop {
            let reason = match self.forward(&mut stream, &mut position, &mut progress, &tx).await {
                Stopped::ReceiverGone => return,
                Stopped::Failed(error) => {
                    // The receiver may be gone too; then nobody is left to tell.
                    let _ = tx.send(Err(error)).await;
                    return;
                }
                Stopped::Broken(reason) => reason,
            };
            tracing::warn!(
                prefix = %self.prefix,
                revision = position.last,
                "etcd watch broken ({reason}); re-establishing it"
            );
            stream = match self.reopen(position.last, &tx).await {
                Ok(stream) => stream,
                Err(Stopped::Failed(error)) => {
                    let _ = tx.send(Err(error)).await;
                    return;
                }
                Err(_) => return,
            };
            position.skip_through = position.last;
        }
    }

    /// Opens the watch again from `after`, with backoff, for as long as the receiver lives. Fails with
    /// [`Stopped::ReceiverGone`], or [`Stopped::Failed`] when etcd refuses it (such as after a compaction).
    async fn reopen(&self, after: Revision, tx: &Sender) -> Result<etcd_client::WatchStream, Stopped> {
        let mut delay = INITIAL_BACKOFF;
        loop {
            let opened = tokio::select! {
                opened = self.open(after) => opened,
                () = tx.closed() => return Err(Stopped::ReceiverGone),
            };
            match opened {
                Ok(stream) => {
                    tracing::info!(prefix = %self.prefix, revision = after, "etcd watch re-established");
                    return Ok(stream);
                }
                Err(StorageError::Unavailable(reason)) => {
                    tracing::debug!(prefix = %self.prefix, "cannot re-establish an etcd watch yet: {reason}");
                }
                Err(error) => return Err(Stopped::Failed(error)),
            }
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = tx.closed() => return Err(Stopped::ReceiverGone),
            }
            delay = (delay * 2).min(MAX_BACKOFF);
        }
    }

    /// Forwards events from `stream` into `tx` until the stream breaks, the watch fails, or the receiver is gone.
    /// Progress requests are passed on to etcd.
    async fn forward(
        &self,
        stream: &mut etcd_client::WatchStream,
        position: &mut Position,
        progress: &mut Option<tokio::sync::watch::Receiver<u64>>,
        tx: &Sender,
    ) -> Stopped {
        loop {
            let message = tokio::select! {
                message = stream.message() => message,
                requested = progress_requested(progress) => {
                    if !requested {
                        // The store is gone: no more requests.
                        *progress = None;
                    } else if let Err(e) = stream.request_progress().await {
                        return Stopped::Broken(e.to_string());
                    }
                    continue;
                }
                () = tx.closed() => return Stopped::ReceiverGone,
            };
            let response = match message {
                Ok(Some(response)) => response,
                Ok(None) => return Stopped::Broken("etcd closed the watch stream".into()),
                Err(e) => return Stopped::Broken(e.to_string()),
            };
            if response.compact_revision() > 0 {
                return Stopped::Failed(StorageError::Compacted {
                    requested: position.last,
                    compacted: response.compact_revision(),
                });
            }
            if response.canceled() {
                // Reopening tells a transient cancellation from a refusal.
                return Stopped::Broken(format!("etcd canceled the watch: {}", response.cancel_reason()));
            }
            if response.created() {
                continue;
            }
            let revision = header_revision(response.0.header.as_ref());
            if response.0.events.is_empty() {
                // A progress notification: nothing changed in the range up to `revision`.
                if revision > position.last {
                    if tx.send(Ok(WatchEvent::Progress { revision })).await.is_err() {
                        return Stopped::ReceiverGone;
                    }
                    position.last = revision;
                }
                continue;
            }
            for event in response.0.events {
                let event = match self.event(event) {
                    Ok(event) => event,
                    Err(error) => return Stopped::Failed(error),
                };
                let revision = event.revision();
                if revision <= position.skip_through {
                    continue;
                }
                if tx.send(Ok(event)).await.is_err() {
                    return Stopped::ReceiverGone;
                }
                position.last = revision;
            }
        }
    }

    /// Converts an etcd event.
    fn event(&self, event: PbEvent) -> Result<WatchEvent> {
        let invalid = |what: &str| StorageError::Internal(format!("etcd sent a watch event {what}"));
        let kv = event.kv.ok_or_else(|| invalid("without a key-value"))?;
        match event.r#type {
            EVENT_PUT => Ok(WatchEvent::Put {
                kv: key_value(&self.store_prefix, kv)?,
                prev: event
                    .prev_kv
                    .map(|prev| key_value(&self.store_prefix, prev))
                    .transpose()?,
            }),
            EVENT_DELETE => {
                let prev = event
                    .prev_kv
                    .ok_or_else(|| invalid("deleting a key without its previous value"))?;
                Ok(WatchEvent::Delete {
                    prev: key_value(&self.store_prefix, prev)?,
                    revision: kv.mod_revision,
                })
            }
            other => Err(invalid(&format!("of unknown type {other}"))),
        }
    }
}

/// Waits for the next progress request; `false` when no more can come. Never returns without a receiver.
async fn progress_requested(progress: &mut Option<tokio::sync::watch::Receiver<u64>>) -> bool {
    match progress {
        Some(receiver) => {
            let changed = receiver.changed().await.is_ok();
            receiver.borrow_and_update();
            changed
        }
        None => std::future::pending().await,
    }
}

/// The store's compaction revision, as etcd reports it to a watch from `below`, a revision known to be below it
/// (so etcd answers at once); `None` if etcd does not tell within [`PROBE_TIMEOUT`]. Only for error messages.
pub(super) async fn compaction_revision(store: &EtcdStorage, below: Revision) -> Option<Revision> {
    if below < 1 {
        return None;
    }
    let mut client = store.watch.clone();
    let probe = async {
        let options = WatchOptions::new().with_start_revision(below);
        let key = store.full_key("/\0compaction-probe");
        let mut stream = client.watch(key, Some(options)).await.ok()?;
        loop {
            let response = stream.message().await.ok()??;
            if response.compact_revision() > 0 {
                return Some(response.compact_revision());
            }
            if !response.created() || response.canceled() {
                return None;
            }
        }
    };
    tokio::time::timeout(PROBE_TIMEOUT.min(store.request_timeout), probe)
        .await
        .ok()
        .flatten()
}
