//! The compactor: forgets old history on a schedule, as kube-apiserver does with `--etcd-compaction-interval`.
//!
//! Several servers may share one store (hosts on one etcd cluster); as in kube-apiserver, they take turns through a
//! key of their own, [`COMPACT_KEY`], so that the history is compacted once per interval, not once per server. Every
//! interval each server writes that key, on the condition that it is as the server last saw it. The one whose write
//! succeeds compacts at the revision of the previous successful write (one interval earlier), so a watcher or a
//! continue token is only expired once it is at least one interval old; the others learn the key's new revision and
//! compact only if a later turn is theirs (when the server that compacted is gone).

use std::sync::Arc;
use std::time::Duration;

use super::{Revision, Storage, StorageError};

pub use apimachinery::duration::parse_duration;

/// The key the servers sharing a store take turns through. Outside `/registry/`, so no resource (or watch cache)
/// sees it.
pub const COMPACT_KEY: &str = "/compact_rev_key";

/// One server's view of the turns: the revision of [`COMPACT_KEY`] it last saw (0: absent), which is also where it
/// compacts if its next write wins.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Turns {
    seen: Revision,
}

impl Turns {
    /// One interval's turn: writes [`COMPACT_KEY`] if it is as last seen and, if so, compacts at the revision of the
    /// previous successful write (none on the first). Returns the revision compacted at, if any.
    pub async fn take(&mut self, storage: &dyn Storage) -> Result<Option<Revision>, StorageError> {
        let written = if self.seen == 0 {
            storage.create(COMPACT_KEY, Vec::new()).await
        } else {
            storage.update(COMPACT_KEY, Vec::new(), self.seen).await
        };
        match written {
            Ok(kv) => {
                let previous = std::mem::replace(&mut self.seen, kv.mod_revision);
                if previous == 0 {
                    return Ok(None);
                }
                match storage.compact(previous).await {
                    // Compacted further already (by hand, or by a server that does not take turns).
                    Ok(()) | Err(StorageError::Compacted { .. }) => Ok(Some(previous)),
                    Err(e) => Err(e),
                }
            }
            // Another server's turn: remember where the key is now.
            Err(StorageError::AlreadyExists { .. } | StorageError::Conflict { .. } | StorageError::NotFound { .. }) => {
                self.seen = storage.get(COMPACT_KEY).await?.map_or(0, |kv| kv.mod_revision);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}

/// Starts compacting `storage` every `interval` (nothing when it is zero), until the runtime shuts down.
pub fn start(storage: Arc<dyn Storage>, interval: Duration) {
    if interval.is_zero() {
        return;
    }
    tokio::spawn(async move {
        let mut turns = Turns::default();
        let mut ticker = tokio::time::interval(interval);
        loop {
            ticker.tick().await;
            match turns.take(storage.as_ref()).await {
                Ok(Some(revision)) => tracing::info!(revision, "compacted storage history"),
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "compaction failed"),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::EmbeddedStorage;

    /// Two servers on one store, taking turns in a fixed order: the first to write each interval compacts at the
    /// revision of the interval before; the other never compacts while the first is there, and takes over when it
    /// is gone.
    #[tokio::test]
    async fn servers_on_one_store_compact_once_per_interval() {
        let dir = tempfile::tempdir().unwrap();
        let store = EmbeddedStorage::open(dir.path()).unwrap();
        let (mut a, mut b) = (Turns::default(), Turns::default());
        let object = |i: usize| format!("/registry/g/r/o{i}");

        // The first interval: a's write is the first, nothing is compacted.
        assert_eq!(a.take(&store).await, Ok(None));
        assert_eq!(b.take(&store).await, Ok(None));
        let mut previous_turn = a.seen;
        for i in 0..3 {
            store.create(&object(i), b"x".to_vec()).await.unwrap();
            // Each later interval: a compacts at the revision of its previous turn; b only follows.
            assert_eq!(a.take(&store).await, Ok(Some(previous_turn)));
            assert_eq!(b.take(&store).await, Ok(None));
            assert_eq!(b.seen, a.seen);
            previous_turn = a.seen;
        }
        // History before the last compaction is gone.
        let listed = store
            .list(
                "/registry/",
                crate::ListOptions {
                    revision: 1,
                    ..Default::default()
                },
            )
            .await;
        assert!(matches!(listed, Err(StorageError::Compacted { .. })), "{listed:?}");

        // a is gone: b's next turn is its own, and compacts at the last turn's revision.
        store.create(&object(9), b"x".to_vec()).await.unwrap();
        assert_eq!(b.take(&store).await, Ok(Some(previous_turn)));
    }
}
