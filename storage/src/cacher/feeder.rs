//! The feeder: the one task per cache that lists the upstream, then follows it with one watch, applying every
//! event to the state. It resumes the watch after an error and lists again when the upstream has compacted the
//! revisions it needs.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::Shared;
use crate::{KeyValue, ListOptions, Revision, StorageError, WatchStream};

/// The most events applied under one lock.
const MAX_BATCH: usize = 256;
/// The first delay before retrying a failed upstream call.
const INITIAL_BACKOFF: Duration = Duration::from_millis(50);
/// The longest delay between retries.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Exponential backoff between retries.
struct Backoff(Duration);

impl Backoff {
    /// Waits, then doubles the next delay.
    async fn wait(&mut self) {
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(MAX_BACKOFF);
    }

    /// Restarts from the first delay.
    fn reset(&mut self) {
        self.0 = INITIAL_BACKOFF;
    }
}

/// Feeds the cache until the task is aborted.
pub(super) async fn run(shared: Arc<Shared>) {
    let mut backoff = Backoff(INITIAL_BACKOFF);
    let mut relist = true;
    loop {
        if relist {
            match list(&shared).await {
                Ok(()) => relist = false,
                Err(e) => {
                    tracing::warn!(prefix = %shared.prefix, error = %e, "watch cache: listing the upstream failed");
                    backoff.wait().await;
                    continue;
                }
            }
        }
        let from = shared.read().revision();
        let mut stream = match shared.upstream.watch(&shared.prefix, from).await {
            Ok(stream) => stream,
            Err(StorageError::Compacted { .. }) => {
                relist = true;
                backoff.wait().await;
                continue;
            }
            Err(e) => {
                tracing::warn!(prefix = %shared.prefix, error = %e, "watch cache: watching the upstream failed");
                backoff.wait().await;
                continue;
            }
        };
        shared.following.send_replace(true);
        let error = follow(&shared, &mut stream, &mut backoff).await;
        shared.following.send_replace(false);
        if let StorageError::Compacted { .. } = error {
            tracing::info!(prefix = %shared.prefix, error = %error, "watch cache: listing again");
            relist = true;
        } else {
            tracing::warn!(prefix = %shared.prefix, error = %error, "watch cache: resuming the upstream watch");
            shared.stats.resumes.fetch_add(1, Ordering::Relaxed);
            backoff.wait().await;
        }
    }
}

/// Lists everything under the prefix, page by page at one revision, and replaces the state with it. A list older
/// than the state is an error (the cache never goes back in time).
async fn list(shared: &Shared) -> Result<(), StorageError> {
    let page_size = shared.options.page_size;
    let mut options = ListOptions {
        revision: 0,
        limit: page_size,
        start_after: None,
    };
    let mut items: Vec<KeyValue> = Vec::new();
    let revision: Revision = loop {
        let page = shared.upstream.list(&shared.prefix, options.clone()).await?;
        let got = page.items.len();
        items.extend(page.items);
        if page.remaining == 0 {
            break page.revision;
        }
        let last = items.last().filter(|_| got > 0).ok_or_else(|| {
            StorageError::Internal(format!(
                "the upstream returned an empty page with {} remaining",
                page.remaining
            ))
        })?;
        options = ListOptions {
            revision: page.revision,
            limit: page_size,
            start_after: Some(last.key.clone()),
        };
    };
    let mut state = shared.write();
    let current = state.revision();
    if !state.replace(items, revision) {
        return Err(StorageError::Internal(format!(
            "the upstream is at revision {revision}, older than the cache's {current}"
        )));
    }
    if current > 0 && revision > current {
        shared.stats.relists.fetch_add(1, Ordering::Relaxed);
    }
    let _ = shared.first_list.set(revision);
    shared.revision.send_replace(state.revision());
    Ok(())
}

/// Applies the events of an upstream watch until it fails or ends; returns why it did.
async fn follow(shared: &Shared, stream: &mut WatchStream, backoff: &mut Backoff) -> StorageError {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        let Some(first) = stream.recv().await else {
            return StorageError::Unavailable("the upstream watch ended".into());
        };
        backoff.reset();
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match stream.try_recv() {
                Ok(item) => batch.push(item),
                Err(_) => break,
            }
        }
        let mut state = shared.write();
        let mut failure = None;
        for item in batch.drain(..) {
            match item {
                Ok(event) => state.apply(event),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        shared.revision.send_replace(state.revision());
        if let Some(e) = failure {
            return e;
        }
    }
}
