//! The task behind one watch of the cache: it replays the history, then forwards the live events queued by the
//! feeder, and sends bookmarks when idle.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::state::CachedEvent;
use crate::storage::{Result, Revision, StorageError, WatchEvent};

/// One watcher: its queues and its position.
pub(super) struct Watcher {
    /// The events to send first.
    pub(super) replay: Vec<CachedEvent>,
    /// The live events, queued by the feeder.
    pub(super) input: mpsc::Receiver<CachedEvent>,
    /// Why the feeder closed `input`, if it did.
    pub(super) closing: Arc<OnceLock<StorageError>>,
    /// The consumer's stream.
    pub(super) output: mpsc::Sender<Result<WatchEvent>>,
    /// The cache's revision, published by the feeder after it has queued the events up to it.
    pub(super) revision: watch::Receiver<Revision>,
    /// The revision of the last event or bookmark sent (at first, the revision the watch starts after).
    pub(super) last: Revision,
    /// How long without sending anything before a bookmark; zero disables bookmarks.
    pub(super) bookmark_interval: Duration,
}

impl Watcher {
    /// Runs until the consumer goes away or the feeder closes the input; in the latter case the stream ends with
    /// the reason (or [`StorageError::Unavailable`] when the cache stopped).
    pub(super) async fn run(mut self) {
        for event in std::mem::take(&mut self.replay) {
            if !self.send(&event).await {
                return;
            }
        }
        let bookmarks = !self.bookmark_interval.is_zero();
        let next_bookmark = tokio::time::sleep(self.bookmark_interval);
        tokio::pin!(next_bookmark);
        loop {
            tokio::select! {
                event = self.input.recv() => match event {
                    Some(event) => {
                        if !self.send(&event).await {
                            return;
                        }
                        next_bookmark.as_mut().reset(Instant::now() + self.bookmark_interval);
                    }
                    None => {
                        let reason = self.closing.get().cloned().unwrap_or_else(|| {
                            StorageError::Unavailable("the watch cache stopped".into())
                        });
                        // The consumer may be gone already; the watch ends either way.
                        let _ = self.output.send(Err(reason)).await;
                        return;
                    }
                },
                () = &mut next_bookmark, if bookmarks => {
                    if !self.bookmark().await {
                        return;
                    }
                    next_bookmark.as_mut().reset(Instant::now() + self.bookmark_interval);
                }
                () = self.output.closed() => return,
            }
        }
    }

    /// Sends an event unless it is at or below the last revision sent. Returns `false` when the consumer is gone.
    async fn send(&mut self, event: &CachedEvent) -> bool {
        let revision = event.revision();
        if revision <= self.last {
            return true;
        }
        self.last = revision;
        self.output.send(Ok(event.to_watch_event())).await.is_ok()
    }

    /// Sends a bookmark at the cache's revision when the input queue is empty and open. The feeder publishes a
    /// revision only after queueing the events up to it (or closing the queue), so then every event up to that
    /// revision has been sent. Returns `false` when the consumer is gone.
    async fn bookmark(&mut self) -> bool {
        let revision = *self.revision.borrow();
        if !self.input.is_empty() || self.input.is_closed() || revision < self.last {
            return true;
        }
        self.last = revision;
        self.output.send(Ok(WatchEvent::Progress { revision })).await.is_ok()
    }
}
