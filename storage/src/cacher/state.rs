//! The cache's in-memory state: the objects, the window of recent events, and the registered watchers.
//!
//! Every object is held once, in an [`Arc<KeyValue>`], keyed by the key inside it (so the key is not stored twice);
//! the history and the watchers' queues share those `Arc`s instead of copying the JSON. Beside each object the set
//! keeps where its resourceVersion goes in its JSON ([`Splice`]), found when the object enters the cache, so that
//! lists can be written from the stored bytes.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc::{self, error::TrySendError};

use super::splice::Splice;
use super::SharedObject;
use crate::{KeyValue, ListOptions, Revision, SharedEvent, StorageError, WatchEvent};

/// A cached object, ordered and looked up by its key.
#[derive(Clone, Debug)]
struct Entry(SharedObject);

impl Entry {
    /// The entry of `kv`, with its splice found.
    fn new(kv: Arc<KeyValue>) -> Entry {
        let splice = Splice::locate(&kv.value);
        Entry(SharedObject { kv, splice })
    }

    fn key(&self) -> &str {
        &self.0.kv.key
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(other.key())
    }
}

impl Borrow<str> for Entry {
    fn borrow(&self) -> &str {
        self.key()
    }
}

/// The first string after every string that starts with `prefix`, when its last byte is ASCII (as a key prefix's
/// `/` is): the prefix with that byte incremented.
fn successor(prefix: &str) -> Option<String> {
    let (&last, rest) = prefix.as_bytes().split_last()?;
    if last >= 0x7F {
        return None;
    }
    let mut end = rest.to_vec();
    end.push(last + 1);
    String::from_utf8(end).ok()
}

/// An event kept in the history and queued to watchers; it shares the objects with the cache.
#[derive(Clone, Debug)]
pub(super) enum CachedEvent {
    /// A key was created (`prev` is `None`) or updated.
    Put {
        /// The new key-value.
        kv: Arc<KeyValue>,
        /// The value before the write, for updates.
        prev: Option<Arc<KeyValue>>,
    },
    /// A key was deleted.
    Delete {
        /// The value before the deletion.
        prev: Arc<KeyValue>,
        /// The revision of the deletion.
        revision: Revision,
    },
}

impl CachedEvent {
    /// The revision of the event.
    pub(super) fn revision(&self) -> Revision {
        match self {
            CachedEvent::Put { kv, .. } => kv.mod_revision,
            CachedEvent::Delete { revision, .. } => *revision,
        }
    }

    /// The key the event is about.
    pub(super) fn key(&self) -> &str {
        match self {
            CachedEvent::Put { kv, .. } => &kv.key,
            CachedEvent::Delete { prev, .. } => &prev.key,
        }
    }

    /// The event for a watcher, its key-values shared with the cache.
    pub(super) fn to_shared(&self) -> SharedEvent {
        match self {
            CachedEvent::Put { kv, prev } => SharedEvent::Put {
                kv: kv.clone(),
                prev: prev.clone(),
            },
            CachedEvent::Delete { prev, revision } => SharedEvent::Delete {
                prev: prev.clone(),
                revision: *revision,
            },
        }
    }
}

/// The feeder's side of one watcher.
struct WatcherHandle {
    /// The watcher's key prefix.
    prefix: String,
    /// The watcher's input queue.
    input: mpsc::Sender<CachedEvent>,
    /// Why the feeder closed the watcher's input, if it did.
    closing: Arc<OnceLock<StorageError>>,
}

/// A new watcher, as returned by [`State::register`].
pub(super) struct Registration {
    /// The revision the watcher starts after.
    pub(super) after: Revision,
    /// The events to replay from the history, in order.
    pub(super) replay: Vec<CachedEvent>,
    /// The live events.
    pub(super) input: mpsc::Receiver<CachedEvent>,
    /// Why the input was closed, set before the feeder closes it.
    pub(super) closing: Arc<OnceLock<StorageError>>,
}

/// Adds (or, with `add` false, removes) one object at `key` to the count of each `/`-terminated prefix of the key
/// at least `from` bytes long.
fn count_prefixes(counts: &mut HashMap<Box<str>, u64>, from: usize, key: &str, add: bool) {
    for (end, _) in key.match_indices('/').filter(|&(end, _)| end + 1 >= from) {
        let prefix = &key[..=end];
        if add {
            match counts.get_mut(prefix) {
                Some(n) => *n += 1,
                None => {
                    counts.insert(prefix.into(), 1);
                }
            }
        } else if let Some(n) = counts.get_mut(prefix) {
            *n -= 1;
            if *n == 0 {
                counts.remove(prefix);
            }
        }
    }
}

/// The cache: objects, revision, history window and watchers.
pub(super) struct State {
    /// The objects, by key.
    objects: BTreeSet<Entry>,
    /// The sum of the key and value lengths of the objects.
    bytes: usize,
    /// How many objects are under each `/`-terminated prefix of their keys at least `counted_from` bytes long (the
    /// cache's own prefix, `/registry/g/r/`, and the namespaces' under it): a first page's remaining count without
    /// walking the rest of the collection.
    prefix_counts: HashMap<Box<str>, u64>,
    /// The length of the shortest prefix counted.
    counted_from: usize,
    /// The most recent events, oldest first.
    history: VecDeque<CachedEvent>,
    /// The number of events the history keeps.
    capacity: usize,
    /// The revision the objects are at; 0 until the first list.
    revision: Revision,
    /// Every event after this revision is in the history.
    oldest: Revision,
    /// The watchers, by id.
    watchers: HashMap<u64, WatcherHandle>,
    /// The id of the next watcher.
    next_watcher: u64,
}

impl State {
    /// An empty, not yet ready state keeping `capacity` events, for the keys under `prefix`.
    pub(super) fn new(capacity: usize, prefix: &str) -> Self {
        State {
            objects: BTreeSet::new(),
            bytes: 0,
            prefix_counts: HashMap::new(),
            counted_from: prefix.len(),
            history: VecDeque::with_capacity(capacity.min(1024)),
            capacity,
            revision: 0,
            oldest: 0,
            watchers: HashMap::new(),
            next_watcher: 0,
        }
    }

    /// The revision of the cache (0 before the first list).
    pub(super) fn revision(&self) -> Revision {
        self.revision
    }

    /// The oldest revision a watch can start after.
    pub(super) fn oldest(&self) -> Revision {
        self.oldest
    }

    /// The number of objects.
    pub(super) fn len(&self) -> usize {
        self.objects.len()
    }

    /// The sum of the key and value lengths of the objects.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The number of events in the history.
    pub(super) fn history_len(&self) -> usize {
        self.history.len()
    }

    /// The number of watchers still consuming.
    pub(super) fn watcher_count(&self) -> usize {
        self.watchers.values().filter(|w| !w.input.is_closed()).count()
    }

    /// Replaces the whole state by a list of `items` read at `revision`. A list older than the state is refused
    /// (the cache never goes back in time); one at the state's own revision changes nothing. Otherwise the history
    /// restarts at `revision` and every watcher ends with [`StorageError::Compacted`], as it may have missed
    /// events. Returns whether the list was accepted.
    pub(super) fn replace(&mut self, items: Vec<KeyValue>, revision: Revision) -> bool {
        if revision < self.revision {
            return false;
        }
        if revision == self.revision {
            return true;
        }
        let previous = self.revision;
        self.bytes = items.iter().map(|kv| kv.key.len() + kv.value.len()).sum();
        self.objects = items.into_iter().map(|kv| Entry::new(Arc::new(kv))).collect();
        self.prefix_counts.clear();
        for Entry(object) in &self.objects {
            count_prefixes(&mut self.prefix_counts, self.counted_from, &object.kv.key, true);
        }
        self.history.clear();
        self.revision = revision;
        self.oldest = revision;
        if previous > 0 {
            for (_, watcher) in self.watchers.drain() {
                let _ = watcher.closing.set(StorageError::Compacted {
                    requested: previous,
                    compacted: revision,
                });
            }
        }
        true
    }

    /// Applies one upstream event: updates the objects, the revision and the history, and queues the event to the
    /// watchers of its key. Events at or below the cache's revision are ignored.
    pub(super) fn apply(&mut self, event: WatchEvent) {
        if event.revision() <= self.revision {
            return;
        }
        let cached = match event {
            WatchEvent::Progress { revision } => {
                self.revision = revision;
                return;
            }
            WatchEvent::Put { kv, prev: _ } => {
                let kv = Arc::new(kv);
                self.bytes += kv.key.len() + kv.value.len();
                let prev = self.objects.replace(Entry::new(kv.clone())).map(|Entry(prev)| prev.kv);
                match &prev {
                    Some(prev) => self.bytes -= prev.key.len() + prev.value.len(),
                    None => count_prefixes(&mut self.prefix_counts, self.counted_from, &kv.key, true),
                }
                CachedEvent::Put { kv, prev }
            }
            WatchEvent::Delete { prev, revision } => {
                let prev = match self.objects.take(prev.key.as_str()) {
                    Some(Entry(cached)) => {
                        self.bytes -= cached.kv.key.len() + cached.kv.value.len();
                        count_prefixes(&mut self.prefix_counts, self.counted_from, &cached.kv.key, false);
                        cached.kv
                    }
                    // The upstream deleted a key the cache does not hold: pass its value on.
                    None => Arc::new(prev),
                };
                CachedEvent::Delete { prev, revision }
            }
        };
        self.revision = cached.revision();
        self.fan_out(&cached);
        self.remember(cached);
    }

    /// Adds an event to the history, dropping the oldest one when it is full.
    fn remember(&mut self, event: CachedEvent) {
        if self.capacity == 0 {
            self.oldest = event.revision();
            return;
        }
        if self.history.len() >= self.capacity {
            if let Some(dropped) = self.history.pop_front() {
                self.oldest = dropped.revision();
            }
        }
        self.history.push_back(event);
    }

    /// Queues an event to the watchers of its key, without waiting: a watcher whose queue is full is too slow, and
    /// is closed with an error; a watcher whose consumer is gone is removed.
    fn fan_out(&mut self, event: &CachedEvent) {
        let key = event.key();
        self.watchers.retain(|_, watcher| {
            if !key.starts_with(watcher.prefix.as_str()) {
                return !watcher.input.is_closed();
            }
            match watcher.input.try_send(event.clone()) {
                Ok(()) => true,
                Err(TrySendError::Closed(_)) => false,
                Err(TrySendError::Full(_)) => {
                    let _ = watcher.closing.set(StorageError::Unavailable(format!(
                        "the watcher of {:?} is too slow: it fell behind at revision {}",
                        watcher.prefix,
                        event.revision()
                    )));
                    false
                }
            }
        });
    }

    /// The object at `key`.
    pub(super) fn get(&self, key: &str) -> Option<Arc<KeyValue>> {
        self.objects.get(key).map(|Entry(object)| object.kv.clone())
    }

    /// The object at `key` with its splice, shared.
    pub(super) fn get_shared(&self, key: &str) -> Option<SharedObject> {
        self.objects.get(key).map(|Entry(object)| object.clone())
    }

    /// A page of the objects under `prefix` (in key order, after `options.start_after`, at most `options.limit`
    /// of them when it is not 0) and how many more come after it.
    pub(super) fn list(&self, prefix: &str, options: &ListOptions) -> (Vec<SharedObject>, u64) {
        let start = match options.start_after.as_deref() {
            Some(after) if after >= prefix => Bound::Excluded(after),
            _ => Bound::Included(prefix),
        };
        let limit = if options.limit == 0 { usize::MAX } else { options.limit };
        // The keys under the prefix end before its successor: with that bound, counting what remains after a page
        // compares no keys. A first page of a collection takes its count from the prefix counts instead.
        if let Some(end) = successor(prefix) {
            let mut keys = self.objects.range::<str, _>((start, Bound::Excluded(end.as_str())));
            let items: Vec<_> = keys.by_ref().take(limit).map(|Entry(object)| object.clone()).collect();
            let first_page = matches!(start, Bound::Included(_));
            let counted = first_page && prefix.ends_with('/') && prefix.len() >= self.counted_from;
            let remaining = match self.prefix_counts.get(prefix) {
                Some(&total) if counted => total.saturating_sub(items.len() as u64),
                // Every object under a counted prefix is counted: none is.
                None if counted => 0,
                _ => keys.count() as u64,
            };
            return (items, remaining);
        }
        let mut keys = self
            .objects
            .range::<str, _>((start, Bound::Unbounded))
            .take_while(|entry| entry.key().starts_with(prefix));
        let items: Vec<_> = keys.by_ref().take(limit).map(|Entry(object)| object.clone()).collect();
        let remaining = keys.count() as u64;
        (items, remaining)
    }

    /// Registers a watcher of `prefix` for the events after `after` (0: from now on), with an input queue of
    /// `queue` events. Fails with [`StorageError::Compacted`] when `after` is older than the history window.
    pub(super) fn register(
        &mut self,
        prefix: &str,
        after: Revision,
        queue: usize,
    ) -> Result<Registration, StorageError> {
        let after = if after <= 0 { self.revision } else { after };
        if after < self.oldest {
            return Err(StorageError::Compacted {
                requested: after,
                compacted: self.oldest,
            });
        }
        let first = self.history.partition_point(|event| event.revision() <= after);
        let replay = self
            .history
            .range(first..)
            .filter(|event| event.key().starts_with(prefix))
            .cloned()
            .collect();
        self.watchers.retain(|_, watcher| !watcher.input.is_closed());
        let (tx, input) = mpsc::channel(queue.max(1));
        let closing = Arc::new(OnceLock::new());
        self.next_watcher += 1;
        self.watchers.insert(
            self.next_watcher,
            WatcherHandle {
                prefix: prefix.to_owned(),
                input: tx,
                closing: closing.clone(),
            },
        );
        Ok(Registration {
            after,
            replay,
            input,
            closing,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, revision: Revision) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: b"{}".to_vec(),
            create_revision: revision,
            mod_revision: revision,
        }
    }

    /// A first page's remaining count (from the prefix counts) is what walking the collection counts, through
    /// a list, creates, updates and deletes, for collections that are empty, partly read or read whole.
    #[test]
    fn first_pages_count_what_remains_as_walking_would() {
        let mut state = State::new(16, "/r/g/");
        let keys = [
            "/r/g/fs/a/x",
            "/r/g/fs/a/y",
            "/r/g/fs/ab/x",
            "/r/g/fs/b/x",
            "/r/g/other/a/x",
        ];
        assert!(state.replace(keys.iter().map(|k| kv(k, 1)).collect(), 2));
        let mut revision = 2;
        let check = |state: &State| {
            for prefix in [
                "/r/g/fs/",
                "/r/g/fs/a/",
                "/r/g/fs/ab/",
                "/r/g/fs/c/",
                "/r/g/",
                "/r/g/other/a/",
            ] {
                let total = state.objects.iter().filter(|e| e.key().starts_with(prefix)).count();
                for limit in [0, 1, 2, 10] {
                    let options = ListOptions {
                        limit,
                        ..ListOptions::default()
                    };
                    let (items, remaining) = state.list(prefix, &options);
                    assert_eq!(items.len() + remaining as usize, total, "{prefix} limit {limit}");
                }
            }
        };
        check(&state);
        // A create, an update and a create in a new namespace.
        for key in ["/r/g/fs/a/z", "/r/g/fs/a/x", "/r/g/fs/c/x"] {
            revision += 1;
            let prev = state.get(key).map(|kv| (*kv).clone());
            state.apply(WatchEvent::Put {
                kv: kv(key, revision),
                prev,
            });
            check(&state);
        }
        // Deletes, the last of a key the cache does not hold.
        for key in ["/r/g/fs/a/y", "/r/g/fs/c/x", "/r/g/fs/nothing/x"] {
            revision += 1;
            state.apply(WatchEvent::Delete {
                prev: kv(key, 1),
                revision,
            });
            check(&state);
        }
        assert!(
            !state.prefix_counts.contains_key("/r/g/fs/c/"),
            "an emptied prefix is forgotten"
        );
    }
}
