//! Storage: a key-value store with etcd3 semantics, behind one trait, with several backends.
//!
//! Keys are `/registry/<group>/<resource>/[<namespace>/]<name>`; values are the object's JSON in its storage version.
//! Every write gets a new, strictly increasing revision for the whole store; an object's `resourceVersion` is the
//! revision of its last write (its mod revision), and a list's is the store's revision the list was read at.
//!
//! The storage layer knows nothing of HTTP; the registry translates [`StorageError`] into a Kubernetes `Status`.

use std::future::Future;
use std::pin::Pin;

use tokio::sync::mpsc;

pub mod cacher;
pub mod compactor;
#[cfg(test)]
mod conformance;
pub mod embedded;
pub mod encryption;
pub mod etcd;
pub mod keys;
pub mod metered;
pub mod prefixed;
pub mod shared_watch;

/// A revision of the store: etcd's `int64` revision. Revision 0 means "none" or "latest", as in etcd.
pub type Revision = i64;

/// A boxed future, for an object-safe async trait.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The result of a storage operation.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;

/// One stored key and its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    /// The key.
    pub key: String,
    /// The value: the object's JSON.
    pub value: Vec<u8>,
    /// The revision at which the key was created.
    pub create_revision: Revision,
    /// The revision of the last write to the key (the object's `resourceVersion`).
    pub mod_revision: Revision,
}

/// Options for [`Storage::list`].
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Read at this revision; 0 reads the latest. A revision older than the last compaction fails with
    /// [`StorageError::Compacted`]; a revision newer than the current one fails with
    /// [`StorageError::TooLargeRevision`].
    pub revision: Revision,
    /// Return at most this many items (0: no limit).
    pub limit: usize,
    /// Start strictly after this key (for continue tokens); it must lie under the prefix.
    pub start_after: Option<String>,
}

/// The result of [`Storage::list`].
#[derive(Clone, Debug, Default)]
pub struct ListResult {
    /// The items, in key order.
    pub items: Vec<KeyValue>,
    /// The revision the list was read at (the store's current revision when `ListOptions::revision` was 0).
    pub revision: Revision,
    /// How many more keys under the prefix come after the last returned item at that revision.
    pub remaining: u64,
}

/// A change to a key, delivered by [`Storage::watch`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WatchEvent {
    /// A key was created (`prev` is `None`) or updated (`prev` is the value before).
    Put {
        /// The new key-value; its `mod_revision` is the event's revision.
        kv: KeyValue,
        /// The value before the write, for updates.
        prev: Option<KeyValue>,
    },
    /// A key was deleted.
    Delete {
        /// The value before the deletion (its `mod_revision` is the revision of its last write).
        prev: KeyValue,
        /// The revision of the deletion.
        revision: Revision,
    },
    /// Nothing changed under the prefix up to this revision (a progress notification, for bookmarks).
    Progress {
        /// The store's revision.
        revision: Revision,
    },
}

impl WatchEvent {
    /// The revision of the event.
    pub fn revision(&self) -> Revision {
        match self {
            WatchEvent::Put { kv, .. } => kv.mod_revision,
            WatchEvent::Delete { revision, .. } => *revision,
            WatchEvent::Progress { revision } => *revision,
        }
    }
}

/// A stream of watch events. The stream ends when the watch ends; an `Err` item (such as
/// [`StorageError::Compacted`]) is the last one.
pub type WatchStream = mpsc::Receiver<Result<WatchEvent>>;

/// A watch event whose key-values are shared, as the watch cache hands the same event to each of its watchers
/// (copying an object for every watcher of it would cost more than the rest of a delivery).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SharedEvent {
    /// A key was created (`prev` is `None`) or updated.
    Put {
        /// The new key-value.
        kv: std::sync::Arc<KeyValue>,
        /// The value before the write, for updates.
        prev: Option<std::sync::Arc<KeyValue>>,
    },
    /// A key was deleted.
    Delete {
        /// The value before the deletion.
        prev: std::sync::Arc<KeyValue>,
        /// The revision of the deletion.
        revision: Revision,
    },
    /// A progress notification.
    Progress {
        /// The store's revision.
        revision: Revision,
    },
}

impl SharedEvent {
    /// The revision of the event.
    pub fn revision(&self) -> Revision {
        match self {
            SharedEvent::Put { kv, .. } => kv.mod_revision,
            SharedEvent::Delete { revision, .. } | SharedEvent::Progress { revision } => *revision,
        }
    }

    /// The event with key-values of its own (copied when they are still shared).
    pub fn into_owned(self) -> WatchEvent {
        match self {
            SharedEvent::Put { kv, prev } => WatchEvent::Put {
                kv: std::sync::Arc::unwrap_or_clone(kv),
                prev: prev.map(std::sync::Arc::unwrap_or_clone),
            },
            SharedEvent::Delete { prev, revision } => WatchEvent::Delete {
                prev: std::sync::Arc::unwrap_or_clone(prev),
                revision,
            },
            SharedEvent::Progress { revision } => WatchEvent::Progress { revision },
        }
    }
}

impl From<WatchEvent> for SharedEvent {
    fn from(event: WatchEvent) -> SharedEvent {
        match event {
            WatchEvent::Put { kv, prev } => SharedEvent::Put {
                kv: kv.into(),
                prev: prev.map(Into::into),
            },
            WatchEvent::Delete { prev, revision } => SharedEvent::Delete {
                prev: prev.into(),
                revision,
            },
            WatchEvent::Progress { revision } => SharedEvent::Progress { revision },
        }
    }
}

/// A watch's events: shared ones from the watch cache, or a store's own.
pub enum EventStream {
    /// The watch cache's watcher.
    Shared(mpsc::Receiver<Result<SharedEvent>>),
    /// A store's watch.
    Owned(WatchStream),
}

impl EventStream {
    /// The next event, waiting for it; `None` when the stream has ended.
    pub async fn recv(&mut self) -> Option<Result<SharedEvent>> {
        match self {
            EventStream::Shared(rx) => rx.recv().await,
            EventStream::Owned(rx) => Some(rx.recv().await?.map(SharedEvent::from)),
        }
    }

    /// The next event if one is ready.
    pub fn try_recv(&mut self) -> std::result::Result<Result<SharedEvent>, mpsc::error::TryRecvError> {
        match self {
            EventStream::Shared(rx) => rx.try_recv(),
            EventStream::Owned(rx) => rx.try_recv().map(|item| item.map(SharedEvent::from)),
        }
    }

    /// Whether no event is ready.
    pub fn is_empty(&self) -> bool {
        match self {
            EventStream::Shared(rx) => rx.is_empty(),
            EventStream::Owned(rx) => rx.is_empty(),
        }
    }
}

/// A watch stream of the events of `shared` with key-values of their own, forwarded by a task (for tests that read
/// a cache's watch as a store's); it ends when `shared` does or the receiver is dropped.
#[cfg(test)]
pub fn owned_watch(shared: mpsc::Receiver<Result<SharedEvent>>) -> WatchStream {
    // One event in hand at most: a consumer that does not read still fills the watch cache's queue as soon.
    forward(shared, 1, |item| item.map(SharedEvent::into_owned))
}

/// A watch stream whose key-values (the event's and its previous one) pass through `map`, forwarded by a task: how
/// a storage wrapper (encryption, a key prefix) presents its inner store's watch. A failing `map` ends the stream
/// with its error; the stream ends when `upstream` does or the receiver is dropped.
pub fn map_watch(upstream: WatchStream, map: impl Fn(KeyValue) -> Result<KeyValue> + Send + 'static) -> WatchStream {
    forward(upstream, 256, move |item| {
        item.and_then(|event| {
            Ok(match event {
                WatchEvent::Put { kv, prev } => WatchEvent::Put {
                    kv: map(kv)?,
                    prev: prev.map(&map).transpose()?,
                },
                WatchEvent::Delete { prev, revision } => WatchEvent::Delete {
                    prev: map(prev)?,
                    revision,
                },
                progress => progress,
            })
        })
    })
}

/// The items of `upstream` passed through `item` into a watch stream of `capacity`, by a task that ends when
/// `upstream` does, after an error (the last item of a watch), or as soon as the receiver is dropped: not at the
/// next item, which may never come, as the task and its upstream watch would otherwise outlive the watcher.
fn forward<T: Send + 'static>(
    mut upstream: mpsc::Receiver<T>,
    capacity: usize,
    item: impl Fn(T) -> Result<WatchEvent> + Send + 'static,
) -> WatchStream {
    let (tx, rx) = mpsc::channel(capacity);
    tokio::spawn(async move {
        loop {
            let next = tokio::select! {
                next = upstream.recv() => match next {
                    Some(next) => item(next),
                    None => return,
                },
                () = tx.closed() => return,
            };
            let last = next.is_err();
            if tx.send(next).await.is_err() || last {
                return;
            }
        }
    });
    rx
}

/// Storage failures. They know nothing of HTTP; the registry maps them to `Status` reasons.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum StorageError {
    /// The key does not exist.
    #[error("key {key:?} not found")]
    NotFound {
        /// The key.
        key: String,
    },
    /// `create` found the key already present.
    #[error("key {key:?} already exists")]
    AlreadyExists {
        /// The key.
        key: String,
    },
    /// A compare-and-swap failed: the key's mod revision is not the expected one.
    #[error("key {key:?} was modified: expected revision {expected}, found {actual}")]
    Conflict {
        /// The key.
        key: String,
        /// The mod revision the caller expected.
        expected: Revision,
        /// The key's current mod revision (0 when it no longer exists).
        actual: Revision,
    },
    /// The requested revision has been compacted away.
    #[error("revision {requested} has been compacted (oldest available: {compacted})")]
    Compacted {
        /// The requested revision.
        requested: Revision,
        /// The compaction revision: history at or below it is gone, except each key's latest version at it (a
        /// list at exactly this revision still works, as in etcd).
        compacted: Revision,
    },
    /// The requested revision is newer than the store's current one.
    #[error("revision {requested} is newer than the current revision {current}")]
    TooLargeRevision {
        /// The requested revision.
        requested: Revision,
        /// The current revision.
        current: Revision,
    },
    /// The store refused a write as too large (etcd's `--max-request-bytes`, 1.5 MiB by default).
    #[error("too large to store: {0}")]
    TooLarge(String),
    /// The store cannot be reached.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// The store failed.
    #[error("storage error: {0}")]
    Internal(String),
}

/// A key-value store with etcd3 semantics. Every method is atomic; a write returns only once it is durable.
pub trait Storage: Send + Sync + 'static {
    /// Reads one key at the latest revision.
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>>;

    /// Lists the keys under `prefix` (a plain string prefix), in key order.
    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListResult>>;

    /// Creates a key that must not exist ([`StorageError::AlreadyExists`] otherwise). Returns the stored key-value.
    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<KeyValue>>;

    /// Replaces a key's value if its mod revision is `expected` ([`StorageError::Conflict`] otherwise,
    /// [`StorageError::NotFound`] when it does not exist). Returns the stored key-value.
    fn update<'a>(&'a self, key: &'a str, value: Vec<u8>, expected: Revision) -> BoxFuture<'a, Result<KeyValue>>;

    /// Deletes a key, if its mod revision is `expected` when one is given. Returns the deleted key-value
    /// and the revision of the deletion.
    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> BoxFuture<'a, Result<(KeyValue, Revision)>>;

    /// Watches the keys under `prefix` for changes made after revision `after` (0: from now on), in revision order,
    /// with no gaps. Fails with [`StorageError::Compacted`] when `after` is older than the last compaction.
    fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>>;

    /// The store's current revision.
    fn current_revision(&self) -> BoxFuture<'_, Result<Revision>>;

    /// Forgets the history at and below `revision`, except each key's latest version at `revision` (as in etcd, a
    /// list at `revision` still works; below it, lists and watches fail with [`StorageError::Compacted`]). Fails
    /// with [`StorageError::Compacted`] when `revision` is at or below the last compaction, and with
    /// [`StorageError::TooLargeRevision`] when it is newer than the current revision.
    fn compact(&self, revision: Revision) -> BoxFuture<'_, Result<()>>;

    /// Asks every open watch for a progress notification: each watch delivers the events up to the store's current
    /// revision (as of this call or later), then a [`WatchEvent::Progress`] at the revision it has delivered up to,
    /// unless an event already told that. Returns `false` when the backend cannot do so reliably (the default), in
    /// which case watches may never report progress and callers must not wait for it.
    fn request_progress(&self) -> BoxFuture<'_, Result<bool>> {
        Box::pin(async { Ok(false) })
    }

    /// Asks the watches of exactly `prefix`, and no others, for a progress notification at `revision` (one the
    /// store has reached) or later, when the store can give it without a request of its own: a store that shares
    /// one watch among many prefixes (one tenant's watch cache among thousands) knows what it has delivered to
    /// each, and sends it once it has delivered up to `revision`. Returns whether the notification will come;
    /// `false` (the default) means that none will, and [`Storage::request_progress`] is the way to ask for one.
    fn request_progress_of<'a>(&'a self, prefix: &'a str, revision: Revision) -> BoxFuture<'a, Result<bool>> {
        let _ = (prefix, revision);
        Box::pin(async { Ok(false) })
    }
}

/// Writes [`Storage`] methods that hand the call to `self.inner` unchanged, for a decorator (a store wrapping
/// another) that changes only some: `pass_through!(get, list, current_revision);` inside its `impl Storage`.
#[macro_export]
macro_rules! pass_through {
    ($($method:ident),+ $(,)?) => { $($crate::pass_through!(@ $method);)+ };
    (@ get) => {
        fn get<'a>(&'a self, key: &'a str) -> $crate::BoxFuture<'a, $crate::Result<Option<$crate::KeyValue>>> {
            self.inner.get(key)
        }
    };
    (@ list) => {
        fn list<'a>(
            &'a self,
            prefix: &'a str,
            options: $crate::ListOptions,
        ) -> $crate::BoxFuture<'a, $crate::Result<$crate::ListResult>> {
            self.inner.list(prefix, options)
        }
    };
    (@ create) => {
        fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> $crate::BoxFuture<'a, $crate::Result<$crate::KeyValue>> {
            self.inner.create(key, value)
        }
    };
    (@ update) => {
        fn update<'a>(
            &'a self,
            key: &'a str,
            value: Vec<u8>,
            expected: $crate::Revision,
        ) -> $crate::BoxFuture<'a, $crate::Result<$crate::KeyValue>> {
            self.inner.update(key, value, expected)
        }
    };
    (@ delete) => {
        fn delete<'a>(
            &'a self,
            key: &'a str,
            expected: Option<$crate::Revision>,
        ) -> $crate::BoxFuture<'a, $crate::Result<($crate::KeyValue, $crate::Revision)>> {
            self.inner.delete(key, expected)
        }
    };
    (@ watch) => {
        fn watch<'a>(
            &'a self,
            prefix: &'a str,
            after: $crate::Revision,
        ) -> $crate::BoxFuture<'a, $crate::Result<$crate::WatchStream>> {
            self.inner.watch(prefix, after)
        }
    };
    (@ current_revision) => {
        fn current_revision(&self) -> $crate::BoxFuture<'_, $crate::Result<$crate::Revision>> {
            self.inner.current_revision()
        }
    };
    (@ compact) => {
        fn compact(&self, revision: $crate::Revision) -> $crate::BoxFuture<'_, $crate::Result<()>> {
            self.inner.compact(revision)
        }
    };
    (@ request_progress) => {
        fn request_progress(&self) -> $crate::BoxFuture<'_, $crate::Result<bool>> {
            self.inner.request_progress()
        }
    };
    (@ request_progress_of) => {
        fn request_progress_of<'a>(
            &'a self,
            prefix: &'a str,
            revision: $crate::Revision,
        ) -> $crate::BoxFuture<'a, $crate::Result<bool>> {
            self.inner.request_progress_of(prefix, revision)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The forwarding task of a mapped watch ends, dropping its upstream, as soon as the mapped stream is dropped, not
    /// at the upstream's next event (which for a removed tenant's prefix never comes).
    #[tokio::test]
    async fn a_mapped_watch_lets_go_of_its_upstream_when_dropped() {
        let (upstream_tx, upstream) = mpsc::channel(4);
        let mapped = map_watch(upstream, Ok);
        drop(mapped);
        tokio::time::timeout(std::time::Duration::from_secs(10), upstream_tx.closed())
            .await
            .expect("the mapped watch's task still holds its upstream");
    }
}
