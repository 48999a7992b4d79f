//! A store seen under a key prefix: every key its users name is stored as `<prefix><key>`, and comes back without
//! the prefix (in values, list items, watch events and errors). A scope's registry (a tenant's) sees the same
//! `/registry/...` keys as the root's, while its objects live under its own prefix of two segments (see
//! [`super::keys`]) in the embedded store and in etcd, where nothing of another scope is within reach of its lists
//! and watches.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::{KeyValue, ListOptions, ListResult, Result, Revision, Storage, StorageError, WatchStream};

/// A store under a key prefix.
pub struct Prefixed {
    inner: Arc<dyn Storage>,
    prefix: String,
}

impl Prefixed {
    /// `inner`'s keys under `prefix` (such as `/tenants/t1`; no trailing `/`: keys start with one).
    pub fn new(inner: Arc<dyn Storage>, prefix: impl Into<String>) -> Prefixed {
        Prefixed {
            inner,
            prefix: prefix.into(),
        }
    }

    fn inner_key(&self, key: &str) -> String {
        format!("{}{key}", self.prefix)
    }

    /// A list or watch prefix: keys start with `/`, so an empty prefix (everything) stays within this store's keys
    /// (`/tenants/t1/`, not also `/tenants/t10/...`).
    fn inner_prefix(&self, prefix: &str) -> String {
        if prefix.is_empty() {
            format!("{}/", self.prefix)
        } else {
            self.inner_key(prefix)
        }
    }

    fn outer_key(&self, key: String) -> String {
        match key.strip_prefix(&self.prefix) {
            Some(rest) => rest.to_owned(),
            None => key,
        }
    }

    fn outer(&self, mut kv: KeyValue) -> KeyValue {
        kv.key = self.outer_key(std::mem::take(&mut kv.key));
        kv
    }

    fn outer_error(&self, e: StorageError) -> StorageError {
        match e {
            StorageError::NotFound { key } => StorageError::NotFound {
                key: self.outer_key(key),
            },
            StorageError::AlreadyExists { key } => StorageError::AlreadyExists {
                key: self.outer_key(key),
            },
            StorageError::Conflict { key, expected, actual } => StorageError::Conflict {
                key: self.outer_key(key),
                expected,
                actual,
            },
            other => other,
        }
    }
}

impl Storage for Prefixed {
    crate::pass_through!(current_revision, compact, request_progress);

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(async move {
            let kv = self
                .inner
                .get(&self.inner_key(key))
                .await
                .map_err(|e| self.outer_error(e))?;
            Ok(kv.map(|kv| self.outer(kv)))
        })
    }

    fn list<'a>(&'a self, prefix: &'a str, mut options: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(async move {
            options.start_after = options.start_after.map(|k| self.inner_key(&k));
            let mut list = self
                .inner
                .list(&self.inner_prefix(prefix), options)
                .await
                .map_err(|e| self.outer_error(e))?;
            list.items = list.items.into_iter().map(|kv| self.outer(kv)).collect();
            Ok(list)
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            let kv = self
                .inner
                .create(&self.inner_key(key), value)
                .await
                .map_err(|e| self.outer_error(e))?;
            Ok(self.outer(kv))
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Vec<u8>, expected: Revision) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            let kv = self
                .inner
                .update(&self.inner_key(key), value, expected)
                .await
                .map_err(|e| self.outer_error(e))?;
            Ok(self.outer(kv))
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> BoxFuture<'a, Result<(KeyValue, Revision)>> {
        Box::pin(async move {
            let (kv, revision) = self
                .inner
                .delete(&self.inner_key(key), expected)
                .await
                .map_err(|e| self.outer_error(e))?;
            Ok((self.outer(kv), revision))
        })
    }

    fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let upstream = self
                .inner
                .watch(&self.inner_prefix(prefix), after)
                .await
                .map_err(|e| self.outer_error(e))?;
            let strip = self.prefix.clone();
            Ok(super::map_watch(upstream, move |mut kv| {
                if let Some(rest) = kv.key.strip_prefix(&strip) {
                    kv.key = rest.to_owned();
                }
                Ok(kv)
            }))
        })
    }

    fn request_progress_of<'a>(&'a self, prefix: &'a str, revision: Revision) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            self.inner
                .request_progress_of(&self.inner_prefix(prefix), revision)
                .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance;
    use crate::embedded::EmbeddedStorage;
    use crate::WatchEvent;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_prefixed_store_passes_the_conformance_suite() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).expect("open"));
        conformance::run_all(Arc::new(Prefixed::new(inner, "/tenants/t1"))).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_prefixes_never_see_each_other() {
        let dir = tempfile::tempdir().expect("tempdir");
        let inner: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).expect("open"));
        let t1 = Prefixed::new(inner.clone(), "/tenants/t1");
        let t2 = Prefixed::new(inner.clone(), "/tenants/t2");
        let key = "/registry/wardle.example.com/flunders/default/a";
        let mut watch2 = t2.watch("/registry/", 0).await.expect("watch");
        t1.create(key, b"{\"t\":1}".to_vec()).await.expect("create in t1");
        assert_eq!(t2.get(key).await.expect("get"), None);
        let created = t2
            .create(key, b"{\"t\":2}".to_vec())
            .await
            .expect("the same name in t2");
        assert_eq!(created.key, key);
        // t2's watch sees only t2's write, with t2's key.
        match conformance::next_event(&mut watch2).await {
            WatchEvent::Put { kv, .. } => assert_eq!((kv.key.as_str(), kv.value.as_slice()), (key, &b"{\"t\":2}"[..])),
            other => panic!("unexpected event {other:?}"),
        }
        let listed = t1.list("/registry/", ListOptions::default()).await.expect("list");
        assert_eq!(listed.items.len(), 1);
        // Everything of t1 is not also t10's.
        let t10 = Prefixed::new(inner.clone(), "/tenants/t10");
        t10.create(key, b"{\"t\":10}".to_vec()).await.expect("create in t10");
        assert_eq!(
            t1.list("", ListOptions::default()).await.expect("list all").items.len(),
            1
        );
        assert_eq!(listed.items[0].value, b"{\"t\":1}");
        // Underneath, each lives under its own prefix.
        let raw = inner.list("/tenants/", ListOptions::default()).await.expect("raw list");
        let keys: Vec<&str> = raw.items.iter().map(|kv| kv.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "/tenants/t1/registry/wardle.example.com/flunders/default/a",
                "/tenants/t10/registry/wardle.example.com/flunders/default/a",
                "/tenants/t2/registry/wardle.example.com/flunders/default/a"
            ]
        );
    }
}
