//! The task behind one watch of the cache: it replays the history, then forwards the live events queued by the
//! feeder, and sends bookmarks when idle.
//!
//! A watcher whose queue the feeder found full is too slow (its consumer does not read, or reads slower than the
//! events come). As kube-apiserver's cacher terminates such a watcher, this one stops at once: the events still
//! queued are dropped, its stream ends without an error (the client sees the response end, lists or watches again
//! from the last resourceVersion it has, as client-go's reflector does), and
//! `apiserver_terminated_watchers_total` counts it. It learns of its end even while waiting for a consumer that does
//! not read, because the feeder publishes a new revision after each event it queues.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::state::CachedEvent;
use crate::{Result, Revision, SharedEvent, StorageError};
use component_base::metrics::{metrics, ResourceLabels};

/// One watcher: its queues and its position.
pub(super) struct Watcher {
    /// The events to send first.
    pub(super) replay: Vec<CachedEvent>,
    /// The live events, queued by the feeder.
    pub(super) input: mpsc::Receiver<CachedEvent>,
    /// Why the feeder closed `input`, if it did.
    pub(super) closing: Arc<OnceLock<StorageError>>,
    /// The consumer's stream: the events' key-values shared with the cache.
    pub(super) output: mpsc::Sender<Result<SharedEvent>>,
    /// The cache's revision, published by the feeder after it has queued the events up to it.
    pub(super) revision: watch::Receiver<Revision>,
    /// The revision of the last event or bookmark sent (at first, the revision the watch starts after).
    pub(super) last: Revision,
    /// How long without sending anything before a bookmark; zero disables bookmarks.
    pub(super) bookmark_interval: Duration,
}

/// Why a send did not go through.
enum Stop {
    /// The consumer is gone.
    Gone,
    /// The feeder ended the watcher as too slow.
    TooSlow,
}

impl Watcher {
    /// Runs until the consumer goes away, the watcher is too slow (its stream then just ends), or the feeder closes
    /// the input for another reason; in the latter case the stream ends with the reason (or
    /// [`StorageError::Unavailable`] when the cache stopped).
    pub(super) async fn run(mut self) {
        if let Err(Stop::TooSlow) = self.serve().await {
            self.terminated();
        }
    }

    async fn serve(&mut self) -> Result<(), Stop> {
        for event in std::mem::take(&mut self.replay) {
            self.send(&event).await?;
        }
        let bookmarks = !self.bookmark_interval.is_zero();
        let next_bookmark = tokio::time::sleep(self.bookmark_interval);
        tokio::pin!(next_bookmark);
        // Whether an event went out since the bookmark timer was last set: the timer is not moved at each event
        // (reading the clock per event per watcher costs more than the rest of a send), but when it fires after
        // events, it is set again for a whole interval from then.
        let mut sent = false;
        loop {
            tokio::select! {
                event = self.input.recv() => match event {
                    Some(event) => {
                        self.send(&event).await?;
                        sent = true;
                    }
                    None => {
                        if self.too_slow() {
                            return Err(Stop::TooSlow);
                        }
                        let reason = self.closing.get().cloned().unwrap_or_else(|| {
                            StorageError::Unavailable("the watch cache stopped".into())
                        });
                        // The consumer may be gone already; the watch ends either way.
                        let _ = self.output.send(Err(reason)).await;
                        return Ok(());
                    }
                },
                () = &mut next_bookmark, if bookmarks => {
                    if !std::mem::take(&mut sent) {
                        self.bookmark().await?;
                    }
                    next_bookmark.as_mut().reset(Instant::now() + self.bookmark_interval);
                }
                () = self.output.closed() => return Err(Stop::Gone),
            }
        }
    }

    /// Whether the feeder ended this watcher as too slow (the only reason it gives as
    /// [`StorageError::Unavailable`]).
    fn too_slow(&self) -> bool {
        matches!(self.closing.get(), Some(StorageError::Unavailable(_)))
    }

    /// Sends an event unless it is at or below the last revision sent.
    async fn send(&mut self, event: &CachedEvent) -> Result<(), Stop> {
        let revision = event.revision();
        if revision <= self.last {
            return Ok(());
        }
        self.last = revision;
        self.deliver(Ok(event.to_shared())).await
    }

    /// Waits for room in the consumer's stream and sends `item`; gives up when the consumer is gone or when the
    /// feeder ends the watcher as too slow meanwhile (noticed at each revision it publishes).
    async fn deliver(&mut self, item: Result<SharedEvent>) -> Result<(), Stop> {
        if self.too_slow() {
            return Err(Stop::TooSlow);
        }
        let mut feeder_alive = true;
        let permit = loop {
            tokio::select! {
                biased;
                permit = self.output.reserve() => break permit.map_err(|_| Stop::Gone)?,
                changed = self.revision.changed(), if feeder_alive => {
                    feeder_alive = changed.is_ok();
                    if self.too_slow() {
                        return Err(Stop::TooSlow);
                    }
                }
            }
        };
        permit.send(item);
        Ok(())
    }

    /// Sends a bookmark at the cache's revision when the input queue is empty and open. The feeder publishes a
    /// revision only after queueing the events up to it (or closing the queue), so then every event up to that
    /// revision has been sent.
    async fn bookmark(&mut self) -> Result<(), Stop> {
        let revision = *self.revision.borrow();
        if !self.input.is_empty() || self.input.is_closed() || revision < self.last {
            return Ok(());
        }
        self.last = revision;
        self.deliver(Ok(SharedEvent::Progress { revision })).await
    }

    /// Counts this watcher in `apiserver_terminated_watchers_total`, under the resource of the events it was
    /// given, and drops the events still queued.
    fn terminated(&mut self) {
        let key = self
            .input
            .try_recv()
            .ok()
            .map(|e| e.key().to_owned())
            .unwrap_or_default();
        self.input.close();
        tracing::debug!(key = %key, "watch cache: a watcher too slow to keep up was terminated");
        metrics()
            .terminated_watchers
            .get_or_create(&resource_labels(&key))
            .inc();
    }
}

/// The group and resource of a storage key ([`crate::keys::group_resource_of_key`]), the core group's as `""`.
fn resource_labels(key: &str) -> ResourceLabels {
    let (group, resource) = crate::keys::group_resource_of_key(key).unwrap_or_default();
    ResourceLabels {
        group: if group == "core" {
            String::new()
        } else {
            group.to_owned()
        },
        resource: resource.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fanout_terminated_watchers_are_labelled_by_resource() {
        let labels = resource_labels("/tenants/t1/registry/wardle.example.com/flunders/default/a");
        assert_eq!(
            (labels.group.as_str(), labels.resource.as_str()),
            ("wardle.example.com", "flunders")
        );
        let labels = resource_labels("/registry/core/namespaces/default");
        assert_eq!((labels.group.as_str(), labels.resource.as_str()), ("", "namespaces"));
    }
}
