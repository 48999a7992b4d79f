//! Storage request metrics, as kube-apiserver's `etcd_request_duration_seconds`: a [`Storage`] that times every
//! request of the store it wraps, by operation and by the resource its key belongs to, and counts failures.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use futures_util::future::BoxFuture;

use super::{KeyValue, ListOptions, ListResult, Result, Revision, Storage, StorageError, WatchStream};
use crate::keys::resource_of_key;
use component_base::metrics::{metrics, StorageLabels};

/// A store whose requests are timed and counted on `/metrics`.
pub struct Metered {
    inner: Arc<dyn Storage>,
}

impl Metered {
    /// Meters `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> Metered {
        Metered { inner }
    }
}

/// Runs one request, recording its duration and, when it fails for a reason other than the answer itself (a
/// conflict, a missing or existing key, a compacted or future revision), an error.
async fn timed<T>(operation: &'static str, key: &str, request: impl Future<Output = Result<T>>) -> Result<T> {
    let started = Instant::now();
    let span = tracing::info_span!(target: component_base::trace::TARGET, "storage", operation, key);
    let result = tracing::Instrument::instrument(request, span).await;
    let labels = StorageLabels {
        operation: operation.to_owned(),
        r#type: resource_of_key(key),
    };
    let m = metrics();
    m.storage_request_duration
        .get_or_create(&labels)
        .observe(started.elapsed().as_secs_f64());
    if let Err(StorageError::TooLarge(_) | StorageError::Unavailable(_) | StorageError::Internal(_)) = &result {
        m.storage_request_errors.get_or_create(&labels).inc();
    }
    result
}

impl Storage for Metered {
    // Not timed: the shared watch below answers it, asking the backend at most once for many such requests
    // (see crate::shared_watch::SharedWatch).
    crate::pass_through!(request_progress_of);

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(timed("get", key, self.inner.get(key)))
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(timed("list", prefix, self.inner.list(prefix, options)))
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(timed("create", key, self.inner.create(key, value)))
    }

    fn update<'a>(&'a self, key: &'a str, value: Vec<u8>, expected: Revision) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(timed("update", key, self.inner.update(key, value, expected)))
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> BoxFuture<'a, Result<(KeyValue, Revision)>> {
        Box::pin(timed("delete", key, self.inner.delete(key, expected)))
    }

    fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(timed("watch", prefix, self.inner.watch(prefix, after)))
    }

    fn current_revision(&self) -> BoxFuture<'_, Result<Revision>> {
        Box::pin(timed("current_revision", "", self.inner.current_revision()))
    }

    fn compact(&self, revision: Revision) -> BoxFuture<'_, Result<()>> {
        Box::pin(timed("compact", "", self.inner.compact(revision)))
    }

    fn request_progress(&self) -> BoxFuture<'_, Result<bool>> {
        Box::pin(timed("request_progress", "", self.inner.request_progress()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::EmbeddedStorage;

    #[tokio::test]
    async fn requests_are_timed_and_failures_counted_by_operation_and_type() {
        let dir = tempfile::tempdir().unwrap();
        let store = Metered::new(Arc::new(EmbeddedStorage::open(dir.path()).unwrap()));
        // A resource no other test uses: the metrics are process-wide.
        let key = "/registry/metered.example.com/things/a";
        let labels = |operation: &str| StorageLabels {
            operation: operation.to_owned(),
            r#type: "things.metered.example.com".to_owned(),
        };
        let count = |operation: &str| {
            let text = metrics().encode();
            let series = format!(
                "wasm_apiserver_storage_request_duration_seconds_count{{operation=\"{operation}\",type=\"things.metered.example.com\"}} "
            );
            text.lines()
                .find_map(|l| l.strip_prefix(&series))
                .map_or(0, |v| v.parse::<u64>().unwrap())
        };
        let kv = store.create(key, b"1".to_vec()).await.unwrap();
        store.update(key, b"2".to_vec(), kv.mod_revision).await.unwrap();
        // A conflict is an answer, not a failure of storage.
        assert!(store.update(key, b"3".to_vec(), kv.mod_revision).await.is_err());
        store.get(key).await.unwrap();
        assert_eq!((count("create"), count("update"), count("get")), (1, 2, 1));
        assert_eq!(
            metrics().storage_request_errors.get_or_create(&labels("update")).get(),
            0
        );

        // A store that cannot be reached: its failures are counted.
        let down = Metered::new(Arc::new(Unreachable));
        assert!(down.get(key).await.is_err());
        assert!(down.get(key).await.is_err());
        assert_eq!(
            (
                count("get"),
                metrics().storage_request_errors.get_or_create(&labels("get")).get()
            ),
            (3, 2)
        );
    }

    /// A store that is never reachable.
    struct Unreachable;

    impl Unreachable {
        fn down<'a, T: Send + 'a>() -> BoxFuture<'a, Result<T>> {
            Box::pin(async { Err(StorageError::Unavailable("down".into())) })
        }
    }

    impl Storage for Unreachable {
        fn get<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
            Self::down()
        }
        fn list<'a>(&'a self, _: &'a str, _: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
            Self::down()
        }
        fn create<'a>(&'a self, _: &'a str, _: Vec<u8>) -> BoxFuture<'a, Result<KeyValue>> {
            Self::down()
        }
        fn update<'a>(&'a self, _: &'a str, _: Vec<u8>, _: Revision) -> BoxFuture<'a, Result<KeyValue>> {
            Self::down()
        }
        fn delete<'a>(&'a self, _: &'a str, _: Option<Revision>) -> BoxFuture<'a, Result<(KeyValue, Revision)>> {
            Self::down()
        }
        fn watch<'a>(&'a self, _: &'a str, _: Revision) -> BoxFuture<'a, Result<WatchStream>> {
            Self::down()
        }
        fn current_revision(&self) -> BoxFuture<'_, Result<Revision>> {
            Self::down()
        }
        fn compact(&self, _: Revision) -> BoxFuture<'_, Result<()>> {
            Self::down()
        }
    }
}
