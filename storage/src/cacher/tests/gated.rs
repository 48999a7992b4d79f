//! A test upstream: the embedded store behind gates that pause its watches, hold its lists, and inject progress
//! notifications or errors into its watches.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::sync::{broadcast, mpsc, watch};

use crate::embedded::EmbeddedStorage;
use crate::{BoxFuture, ListOptions, ListResult, Result, Revision, Storage, StorageError, WatchEvent, WatchStream};

/// The embedded store behind test gates.
pub(super) struct Gated {
    /// The store.
    inner: Arc<EmbeddedStorage>,
    /// While true, watches forward nothing from the store (injected items still pass).
    paused: watch::Sender<bool>,
    /// While true, paginated lists (the cache's own) wait.
    lists_held: watch::Sender<bool>,
    /// Items to inject into every live watch; an error ends the watch.
    inject: broadcast::Sender<Result<WatchEvent>>,
    /// Watches opened.
    watches: AtomicUsize,
    /// Whether progress requests are passed on to the store (otherwise they are refused, as an old etcd's).
    progress_requests: AtomicBool,
}

impl Gated {
    /// Wraps `inner`, with every gate open.
    pub(super) fn new(inner: Arc<EmbeddedStorage>) -> Arc<Self> {
        Arc::new(Gated {
            inner,
            paused: watch::Sender::new(false),
            lists_held: watch::Sender::new(false),
            inject: broadcast::Sender::new(16),
            watches: AtomicUsize::new(0),
            progress_requests: AtomicBool::new(true),
        })
    }

    /// Refuses progress requests from now on.
    pub(super) fn refuse_progress_requests(&self) {
        self.progress_requests.store(false, Ordering::SeqCst);
    }

    /// Pauses or resumes the forwarding of the store's events to the watches.
    pub(super) fn pause(&self, paused: bool) {
        self.paused.send_replace(paused);
    }

    /// Holds or releases the paginated lists (those with a limit: the cache's own, not its fallback reads).
    pub(super) fn hold_lists(&self, held: bool) {
        self.lists_held.send_replace(held);
    }

    /// Sends `item` to every live watch, after what they have forwarded so far.
    pub(super) fn inject(&self, item: Result<WatchEvent>) {
        // No live watch is not an error: the test checks the effects.
        let _ = self.inject.send(item);
    }

    /// The number of watches opened so far.
    pub(super) fn watches(&self) -> usize {
        self.watches.load(Ordering::SeqCst)
    }
}

/// Forwards a store watch to `tx`, honouring the pause gate and the injected items.
async fn forward(
    mut inner: WatchStream,
    tx: mpsc::Sender<Result<WatchEvent>>,
    mut paused: watch::Receiver<bool>,
    mut inject: broadcast::Receiver<Result<WatchEvent>>,
) {
    loop {
        let open = !*paused.borrow_and_update();
        tokio::select! {
            biased;
            injected = inject.recv() => match injected {
                Ok(item) => {
                    let last = item.is_err();
                    if tx.send(item).await.is_err() || last {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            },
            changed = paused.changed() => {
                if changed.is_err() {
                    return;
                }
            }
            item = inner.recv(), if open => match item {
                Some(item) => {
                    if tx.send(item).await.is_err() {
                        return;
                    }
                }
                None => return,
            },
            () = tx.closed() => return,
        }
    }
}

impl Storage for Gated {
    crate::pass_through!(get, create, update, delete, current_revision, compact);

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(async move {
            if options.limit > 0 {
                let mut held = self.lists_held.subscribe();
                held.wait_for(|held| !*held)
                    .await
                    .map_err(|_| StorageError::Unavailable("gate closed".into()))?;
            }
            self.inner.list(prefix, options).await
        })
    }

    fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let inject = self.inject.subscribe();
            let inner = self.inner.watch(prefix, after).await?;
            let (tx, rx) = mpsc::channel(256);
            tokio::spawn(forward(inner, tx, self.paused.subscribe(), inject));
            self.watches.fetch_add(1, Ordering::SeqCst);
            Ok(rx)
        })
    }

    fn request_progress(&self) -> BoxFuture<'_, Result<bool>> {
        if self.progress_requests.load(Ordering::SeqCst) {
            self.inner.request_progress()
        } else {
            Box::pin(async { Ok(false) })
        }
    }
}
