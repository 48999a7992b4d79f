//! One watch of the whole store, shared by every watcher: a [`Storage`] whose `watch` does not open a
//! watch on its inner store per call, but subscribes to a single watch of every key and receives the events under its
//! prefix. Each tenant's watch caches, RBAC index and namespace controller watch their own prefixes, so without this
//! the number of etcd watches would grow with the number of tenants; with it, the server holds one (kcp shares its
//! informers across logical clusters the same way).
//!
//! The shared watch keeps the most recent [`RECENT`] events, so a watcher that listed a moment ago and watches after
//! the list's revision is served from them (then live) with no gap. Once no event has come for a while (two
//! [`PRUNE_EVERY`] ticks) it lets them go: a watcher that listed since has nothing to replay, and the events' bytes,
//! allocated among those of tenants removed since, would otherwise keep the allocator's pages resident. A watch from
//! an older revision than those (or from below a compaction made through this store) is opened on the inner store as
//! it would have been, on its own.
//!
//! A watcher too slow to take its events (its queue of [`QUEUE`] events full) has its stream ended, as kube ends a
//! watch that falls behind: it lists and watches again, and the others are never held up by it. When the shared
//! watch fails (a compaction it fell behind, the store unreachable), every watcher's stream ends with that error and
//! the next watch opens a new one.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::future::BoxFuture;
use tokio::sync::mpsc;

use super::{Result, Revision, Storage, StorageError, WatchEvent, WatchStream};

/// How many recent events the shared watch keeps to start new watchers from.
pub const RECENT: usize = 1024;

/// How many events a watcher's queue holds before it counts as too slow.
pub const QUEUE: usize = 2 * RECENT;

/// A store whose watches share one watch of the inner store.
pub struct SharedWatch {
    inner: Arc<dyn Storage>,
    state: Arc<Mutex<State>>,
    /// Serializes opening the shared watch.
    opening: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    /// Whether the shared watch runs.
    running: bool,
    /// The revision of the last event (or progress) fanned out.
    head: Revision,
    /// Recent events, oldest first.
    recent: VecDeque<WatchEvent>,
    /// The revision after which `recent` holds every event.
    recent_after: Revision,
    /// Watchers by prefix, for prefixes that are empty or end with '/' (looked up by the key's own prefixes).
    watchers: BTreeMap<String, Vec<Watcher>>,
    /// Watchers of other prefixes (such as one key's), matched one by one.
    odd: BTreeMap<String, Vec<Watcher>>,
    /// The highest compaction made through this store: older watches go to the inner store, which refuses them.
    compacted: Revision,
    /// A progress notification is owed to every watcher once the shared watch has delivered up to this revision
    /// (0: none): the inner store's own notifications may not come, an event of another prefix having told it.
    progress_owed: Revision,
    /// Progress notifications owed to the watchers of one prefix ([`SharedWatch::request_progress_of`]) once the
    /// shared watch has delivered up to a revision: the first revision asked for, and the latest.
    progress_owed_to: BTreeMap<String, (Revision, Revision)>,
    /// The highest revision the inner store was asked for a progress notification at, on behalf of single
    /// prefixes, and when: a request at or below it made since [`ASK_AGAIN_AFTER`] waits for that answer instead of
    /// asking again (one request for many reads); an answer lost with a broken stream is asked for again after it.
    progress_asked: Option<(Revision, std::time::Instant)>,
    /// Whether the inner store answers progress requests reliably, once it has been asked.
    inner_answers: Option<bool>,
    /// Prune ticks in a row with no event: at [`QUIET_TICKS`] the recent events are let go of.
    quiet_ticks: u32,
}

/// How long a progress request of the inner store is waited for before another one is sent.
const ASK_AGAIN_AFTER: std::time::Duration = std::time::Duration::from_millis(50);

/// Prune ticks without an event after which the recent events are let go of.
const QUIET_TICKS: u32 = 2;

struct Watcher {
    /// Events at or below this revision are not for it.
    after: Revision,
    tx: mpsc::Sender<Result<WatchEvent>>,
}

impl SharedWatch {
    /// Shares the watches of `inner`.
    pub fn new(inner: Arc<dyn Storage>) -> SharedWatch {
        SharedWatch {
            inner,
            state: Arc::default(),
            opening: tokio::sync::Mutex::new(()),
        }
    }

    /// How many watchers are subscribed now.
    pub fn watchers(&self) -> usize {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.watchers.values().chain(state.odd.values()).map(Vec::len).sum()
    }

    /// Opens the shared watch from `after` unless it runs.
    async fn ensure_running(&self, after: Revision) -> Result<()> {
        let _opening = self.opening.lock().await;
        if self.lock().running {
            return Ok(());
        }
        let upstream = self.inner.watch("", after).await?;
        {
            let mut state = self.lock();
            state.running = true;
            state.head = after;
            state.recent.clear();
            state.recent_after = after;
            state.progress_owed_to.clear();
            state.progress_asked = None;
        }
        let state = self.state.clone();
        tokio::spawn(fan_out(upstream, state));
        Ok(())
    }

    /// Subscribes a watcher of `prefix` after revision `after` to the running shared watch, replaying the recent
    /// events it needs; `None` when the shared watch does not run or its recent events do not reach back to `after`.
    fn subscribe(&self, prefix: &str, after: Revision) -> Option<WatchStream> {
        let mut state = self.lock();
        if !state.running || after < state.recent_after {
            return None;
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        for event in &state.recent {
            let key = match event {
                WatchEvent::Put { kv, .. } | WatchEvent::Delete { prev: kv, .. } => &kv.key,
                WatchEvent::Progress { .. } => continue,
            };
            if event.revision() > after && key.starts_with(prefix) {
                let _ = tx.try_send(Ok(event.clone()));
            }
        }
        state
            .watchers_of(prefix)
            .entry(prefix.to_owned())
            .or_default()
            .push(Watcher { after, tx });
        Some(rx)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// How often watchers whose streams were dropped are let go of, when no event of theirs came to show it.
const PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// Delivers the shared watch's events to the watchers of their keys, until it ends.
async fn fan_out(mut upstream: WatchStream, state: Arc<Mutex<State>>) {
    let mut prune = tokio::time::interval(PRUNE_EVERY);
    prune.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let error = loop {
        tokio::select! {
            item = upstream.recv() => match item {
                Some(Ok(event)) => {
                    state.lock().unwrap_or_else(PoisonError::into_inner).deliver(event);
                }
                Some(Err(e)) => break e,
                None => break StorageError::Unavailable("the shared watch ended".into()),
            },
            _ = prune.tick() => state.lock().unwrap_or_else(PoisonError::into_inner).prune(),
        }
    };
    let mut s = state.lock().unwrap_or_else(PoisonError::into_inner);
    s.running = false;
    s.recent.clear();
    s.progress_owed_to.clear();
    s.progress_asked = None;
    let all = std::mem::take(&mut s.watchers)
        .into_iter()
        .chain(std::mem::take(&mut s.odd));
    for (_, watchers) in all {
        for w in watchers {
            let _ = w.tx.try_send(Err(error.clone()));
        }
    }
}

impl State {
    /// The map that holds the watchers of `prefix`: [`State::watchers`] for a prefix that is empty or ends with
    /// '/', [`State::odd`] for any other.
    fn watchers_of(&mut self, prefix: &str) -> &mut BTreeMap<String, Vec<Watcher>> {
        match looked_up_by_key(prefix) {
            true => &mut self.watchers,
            false => &mut self.odd,
        }
    }

    /// Lets go of the watchers whose streams were dropped (a removed tenant's, an evicted cache's): a watcher is
    /// otherwise only found gone when an event of its prefix comes, which for a removed tenant is never, and it
    /// would hold its queue and its mapping task forever.
    /// Also lets go of the recent events once none has come for [`QUIET_TICKS`] ticks.
    fn prune(&mut self) {
        for map in [&mut self.watchers, &mut self.odd] {
            map.retain(|_, watchers| {
                watchers.retain(|w| !w.tx.is_closed());
                !watchers.is_empty()
            });
        }
        self.quiet_ticks = self.quiet_ticks.saturating_add(1);
        if self.quiet_ticks >= QUIET_TICKS && !self.recent.is_empty() {
            // Every event up to the head was fanned out: a watch from an older revision opens its own, as it
            // would once the events had been pushed out by newer ones.
            self.recent = VecDeque::new();
            self.recent_after = self.head;
        }
    }

    /// Fans an event out to the watchers of its key and keeps it among the recent ones. A progress notification of
    /// the inner store only advances the head: what is owed is paid below (to every watcher after
    /// [`SharedWatch::request_progress`], to single prefixes after [`SharedWatch::request_progress_of`]), and no
    /// other watcher is woken by it.
    fn deliver(&mut self, event: WatchEvent) {
        let revision = event.revision();
        match &event {
            WatchEvent::Progress { .. } => {
                if self.progress_asked.is_some_and(|(asked, _)| revision >= asked) {
                    self.progress_asked = None;
                }
            }
            WatchEvent::Put { kv, .. } | WatchEvent::Delete { prev: kv, .. } => {
                let key = kv.key.as_str();
                let deliver_to = |map: &mut BTreeMap<String, Vec<Watcher>>, prefix: &str| {
                    if let Some(watchers) = map.get_mut(prefix) {
                        watchers.retain(|w| revision <= w.after || send(w, &event));
                        if watchers.is_empty() {
                            map.remove(prefix);
                        }
                    }
                };
                for prefix in prefixes_of(key) {
                    deliver_to(&mut self.watchers, prefix);
                }
                if !self.odd.is_empty() {
                    let odd: Vec<String> = self
                        .odd
                        .keys()
                        .filter(|p| key.starts_with(p.as_str()))
                        .cloned()
                        .collect();
                    for prefix in odd {
                        deliver_to(&mut self.odd, &prefix);
                    }
                }
                self.quiet_ticks = 0;
                self.recent.push_back(event);
                if self.recent.len() > RECENT {
                    if let Some(old) = self.recent.pop_front() {
                        self.recent_after = old.revision();
                    }
                }
            }
        }
        self.head = self.head.max(revision);
        if self.progress_owed > 0 && self.head >= self.progress_owed {
            self.progress_owed = 0;
            self.notify_progress(self.head);
        }
        if !self.progress_owed_to.is_empty() {
            self.pay_progress_owed_to();
        }
    }

    /// Sends the progress notifications owed to single prefixes whose first revision the head has reached; one
    /// asked for a later revision since stays owed at that revision.
    fn pay_progress_owed_to(&mut self) {
        let head = self.head;
        let due: Vec<String> = self
            .progress_owed_to
            .iter()
            .filter(|(_, (first, _))| *first <= head)
            .map(|(prefix, _)| prefix.clone())
            .collect();
        for prefix in due {
            let Some((_, last)) = self.progress_owed_to.remove(&prefix) else {
                continue;
            };
            if self.notify_progress_of(&prefix, head) && last > head {
                self.progress_owed_to.insert(prefix, (last, last));
            }
        }
    }

    /// Owes the watchers of exactly `prefix` a progress notification once the head reaches `revision` (a later
    /// revision asked meanwhile stays owed after it).
    fn owe_progress_to(&mut self, prefix: &str, revision: Revision) {
        self.progress_owed_to
            .entry(prefix.to_owned())
            .and_modify(|(_, last)| *last = (*last).max(revision))
            .or_insert((revision, revision));
    }

    /// Whether `prefix` (exactly) has watchers.
    fn is_watched(&mut self, prefix: &str) -> bool {
        self.watchers_of(prefix).get(prefix).is_some_and(|w| !w.is_empty())
    }

    /// Sends every watcher a progress notification at `revision` (the events up to it delivered), but those that
    /// watch from a later revision.
    fn notify_progress(&mut self, revision: Revision) {
        let event = WatchEvent::Progress { revision };
        for map in [&mut self.watchers, &mut self.odd] {
            for watchers in map.values_mut() {
                watchers.retain(|w| revision < w.after || send(w, &event));
            }
            map.retain(|_, w| !w.is_empty());
        }
    }

    /// Sends the watchers of exactly `prefix` a progress notification at `revision` (the events up to it
    /// delivered), but those that watch from a later revision. Returns whether a watcher of it took one.
    fn notify_progress_of(&mut self, prefix: &str, revision: Revision) -> bool {
        let event = WatchEvent::Progress { revision };
        let map = self.watchers_of(prefix);
        let Some(watchers) = map.get_mut(prefix) else {
            return false;
        };
        let mut sent = false;
        watchers.retain(|w| {
            if revision < w.after {
                return true;
            }
            let kept = send(w, &event);
            sent |= kept;
            kept
        });
        if watchers.is_empty() {
            map.remove(prefix);
        }
        sent
    }
}

/// Whether the watchers of `prefix` are found from an event's key ([`prefixes_of`]): the prefix is empty or ends
/// with a '/'.
fn looked_up_by_key(prefix: &str) -> bool {
    prefix.is_empty() || prefix.ends_with('/')
}

/// The prefixes of `key` that are empty or end with a '/': the fan-out looks its watchers up by these.
fn prefixes_of(key: &str) -> impl Iterator<Item = &str> {
    std::iter::once("").chain(key.match_indices('/').map(move |(i, _)| &key[..=i]))
}

/// Sends an event to a watcher; false when it is gone or too slow (its stream then ends).
fn send(w: &Watcher, event: &WatchEvent) -> bool {
    w.tx.try_send(Ok(event.clone())).is_ok()
}

impl Storage for SharedWatch {
    crate::pass_through!(get, list, create, update, delete, current_revision);

    fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let after = if after <= 0 {
                self.inner.current_revision().await?
            } else {
                after
            };
            let compacted = self.lock().compacted;
            if after < compacted {
                return self.inner.watch(prefix, after).await;
            }
            self.ensure_running(after).await?;
            match self.subscribe(prefix, after) {
                Some(rx) => Ok(rx),
                // Older than the recent events (or the shared watch just ended): a watch of its own.
                None => self.inner.watch(prefix, after).await,
            }
        })
    }

    fn compact(&self, revision: Revision) -> BoxFuture<'_, Result<()>> {
        Box::pin(async move {
            self.inner.compact(revision).await?;
            let mut state = self.lock();
            state.compacted = state.compacted.max(revision);
            Ok(())
        })
    }

    fn request_progress(&self) -> BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            // A store known not to answer is not asked (nor is its revision read for nothing).
            if self.lock().inner_answers == Some(false) {
                return Ok(false);
            }
            // The revision to reach is read first: the inner store's answer comes at it or later.
            let current = self.inner.current_revision().await?;
            let answers = self.inner.request_progress().await?;
            let mut state = self.lock();
            state.inner_answers = Some(answers);
            if !answers {
                return Ok(false);
            }
            if state.running {
                if state.head >= current {
                    let head = state.head;
                    state.notify_progress(head);
                } else {
                    state.progress_owed = state.progress_owed.max(current);
                }
            }
            Ok(true)
        })
    }

    /// Sends the watchers of exactly `prefix` a progress notification once the shared watch has delivered every
    /// event up to `revision`: at once when it has, else as soon as it has. The shared watch sees only the keys of
    /// its inner store, while the revision counts every write to the backend (another client of the same etcd
    /// writing outside this server's prefix moves it on), so the events up to `revision` may never come: the inner
    /// store is asked for a progress notification of its own (one for many such requests), whose answer advances
    /// the head. No other watcher (thousands of other tenants' caches) is woken. `false` when nobody watches
    /// `prefix`, the shared watch does not run, or the inner store cannot answer progress requests reliably (etcd
    /// before 3.4.31 and 3.5.13): the caller then reads the store, and the notification is still sent should
    /// another prefix's event bring the head to `revision` (a cache behind a foreign write catches up at the next
    /// write of this server).
    fn request_progress_of<'a>(&'a self, prefix: &'a str, revision: Revision) -> BoxFuture<'a, Result<bool>> {
        Box::pin(async move {
            let ask = {
                let mut state = self.lock();
                if !state.running {
                    return Ok(false);
                }
                if state.head >= revision {
                    let head = state.head;
                    return Ok(state.notify_progress_of(prefix, head));
                }
                if !state.is_watched(prefix) {
                    return Ok(false);
                }
                match (state.inner_answers, state.progress_asked) {
                    (Some(false), _) => {
                        state.owe_progress_to(prefix, revision);
                        return Ok(false);
                    }
                    (Some(true), Some((asked, at))) if asked >= revision && at.elapsed() < ASK_AGAIN_AFTER => false,
                    (_, asked) => {
                        let highest = asked.map_or(revision, |(asked, _)| asked.max(revision));
                        state.progress_asked = Some((highest, std::time::Instant::now()));
                        true
                    }
                }
            };
            let mut state = if ask {
                let answers = self.inner.request_progress().await?;
                let mut state = self.lock();
                state.inner_answers = Some(answers);
                state
            } else {
                self.lock()
            };
            if !state.running {
                return Ok(false);
            }
            if state.head >= revision {
                let head = state.head;
                return Ok(state.notify_progress_of(prefix, head));
            }
            state.owe_progress_to(prefix, revision);
            // Without the inner store's answer, the events up to `revision` come only if they are of keys this watch
            // sees, which cannot be told from here: the notification is sent if they do (another prefix's write
            // brings the head there), but the caller must not wait for it.
            Ok(state.inner_answers == Some(true))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance;
    use crate::embedded::EmbeddedStorage;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn passes_the_conformance_suite_over_the_embedded_store() {
        let dir = tempfile::tempdir().unwrap();
        let inner: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        conformance::run_all(Arc::new(SharedWatch::new(inner))).await;
    }

    /// Any number of watchers, of any prefixes, share one watch of the inner store; each gets only its own keys.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn watchers_share_one_inner_watch_and_get_their_own_keys() {
        let (_dir, counted, shared) = counted_shared_watch();
        let mut streams = Vec::new();
        for t in 0..50 {
            let prefix = format!("/tenants/t{t}/registry/g/r/");
            streams.push((t, shared.watch(&prefix, 0).await.unwrap()));
        }
        for t in 0..50 {
            shared
                .create(&format!("/tenants/t{t}/registry/g/r/x"), format!("{t}").into_bytes())
                .await
                .unwrap();
        }
        for (t, stream) in &mut streams {
            match conformance::next_event(stream).await {
                WatchEvent::Put { kv, .. } => {
                    assert_eq!(kv.key, format!("/tenants/t{t}/registry/g/r/x"));
                    assert_eq!(kv.value, format!("{t}").into_bytes());
                }
                other => panic!("{other:?}"),
            }
            assert!(stream.try_recv().is_err(), "t{t} got another tenant's event");
        }
        assert_eq!(counted.watches.load(std::sync::atomic::Ordering::SeqCst), 1);
        assert_eq!(shared.watchers(), 50);
        // A dropped watcher is forgotten at its next event (the last ten are kept: once they have their events, every
        // earlier one was fanned out).
        streams.drain(..40);
        for t in 0..50 {
            shared
                .delete(&format!("/tenants/t{t}/registry/g/r/x"), None)
                .await
                .unwrap();
        }
        for (_, stream) in &mut streams {
            assert!(matches!(
                conformance::next_event(stream).await,
                WatchEvent::Delete { .. }
            ));
        }
        assert_eq!(shared.watchers(), 10);
    }

    /// A progress request of one prefix reaches that prefix's watchers alone, at once, once every event up to the
    /// store's revision has been fanned out; no other watcher is woken.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_progress_request_of_one_prefix_reaches_its_watchers_alone() {
        let dir = tempfile::tempdir().unwrap();
        let inner: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let shared = SharedWatch::new(inner);
        let mut quiet = shared.watch("/tenants/a/registry/g/r/", 0).await.unwrap();
        let mut busy = shared.watch("/tenants/b/registry/g/r/", 0).await.unwrap();
        let kv = shared.create("/tenants/b/registry/g/r/x", b"x".to_vec()).await.unwrap();
        assert!(matches!(
            conformance::next_event(&mut busy).await,
            WatchEvent::Put { .. }
        ));
        assert!(shared
            .request_progress_of("/tenants/a/registry/g/r/", kv.mod_revision)
            .await
            .unwrap());
        match tokio::time::timeout(std::time::Duration::from_secs(10), quiet.recv()).await {
            Ok(Some(Ok(WatchEvent::Progress { revision }))) => {
                assert!(revision >= kv.mod_revision, "{revision} < {}", kv.mod_revision)
            }
            other => panic!("{other:?}"),
        }
        assert!(busy.try_recv().is_err(), "another prefix's watcher was woken");

        // A revision whose events are still on their way: the notification is owed, and sent once they are
        // fanned out (here, a write of the other prefix), behind them.
        let ahead = kv.mod_revision + 1;
        assert!(shared
            .request_progress_of("/tenants/a/registry/g/r/", ahead)
            .await
            .unwrap());
        assert!(
            quiet.try_recv().is_err(),
            "sent before the events up to it were fanned out"
        );
        let later = shared.create("/tenants/b/registry/g/r/y", b"y".to_vec()).await.unwrap();
        assert_eq!(later.mod_revision, ahead);
        match tokio::time::timeout(std::time::Duration::from_secs(10), quiet.recv()).await {
            Ok(Some(Ok(WatchEvent::Progress { revision }))) => assert!(revision >= ahead, "{revision} < {ahead}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            conformance::next_event(&mut busy).await,
            WatchEvent::Put { .. }
        ));
        assert!(busy.try_recv().is_err(), "another prefix's watcher was woken");
        assert!(
            !shared
                .request_progress_of("/tenants/c/registry/g/r/", kv.mod_revision)
                .await
                .unwrap(),
            "a prefix nobody watches"
        );
    }

    /// Writes the shared watch never sees (another client of the same etcd, outside this server's prefix) move the
    /// store's revision on: a progress request of one prefix at that revision is answered through the inner store's
    /// own progress notification, to that prefix's watchers alone. Before, it was owed until an event of a key the
    /// shared watch sees came, which under foreign writes alone was never, and every consistent read of a watch
    /// cache waited out its timeout before reading the store.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_progress_request_at_a_revision_of_foreign_writes_is_answered() {
        let dir = tempfile::tempdir().unwrap();
        let embedded = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let shared = SharedWatch::new(Arc::new(HidesForeignKeys::new(embedded.clone())));
        let mut quiet = shared.watch("/tenants/a/registry/g/r/", 0).await.unwrap();
        let mut other = shared.watch("/tenants/b/registry/g/r/", 0).await.unwrap();
        let mut last = 0;
        for i in 0..3 {
            last = embedded
                .create(&format!("/foreign/k{i}"), b"x".to_vec())
                .await
                .unwrap()
                .mod_revision;
        }
        assert!(shared
            .request_progress_of("/tenants/a/registry/g/r/", last)
            .await
            .unwrap());
        match tokio::time::timeout(std::time::Duration::from_secs(10), quiet.recv()).await {
            Ok(Some(Ok(WatchEvent::Progress { revision }))) => assert!(revision >= last, "{revision} < {last}"),
            other => panic!("no progress notification at a revision of foreign writes: {other:?}"),
        }
        // The inner store's answer reached no other watcher: the next event of the other prefix is its own write.
        let written = shared.create("/tenants/b/registry/g/r/x", b"x".to_vec()).await.unwrap();
        assert_eq!(
            conformance::next_event(&mut other).await,
            WatchEvent::Put {
                kv: written,
                prev: None
            }
        );
    }

    /// A progress request of the inner store whose answer is lost (a broken stream) is sent again, so a later
    /// request of one prefix is answered: before, the first request stayed "asked" and every later one was promised
    /// a notification that never came.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_lost_progress_answer_is_asked_for_again() {
        let dir = tempfile::tempdir().unwrap();
        let embedded = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let store = Arc::new(HidesForeignKeys::new(embedded.clone()));
        store.lose.store(1, std::sync::atomic::Ordering::SeqCst);
        let shared = SharedWatch::new(store);
        let mut quiet = shared.watch("/tenants/a/registry/g/r/", 0).await.unwrap();
        let last = embedded.create("/foreign/k", b"x".to_vec()).await.unwrap().mod_revision;
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            assert!(shared
                .request_progress_of("/tenants/a/registry/g/r/", last)
                .await
                .unwrap());
            match tokio::time::timeout(std::time::Duration::from_millis(100), quiet.recv()).await {
                Ok(Some(Ok(WatchEvent::Progress { revision }))) => {
                    assert!(revision >= last, "{revision} < {last}");
                    break;
                }
                Err(_) => assert!(
                    tokio::time::Instant::now() < deadline,
                    "the lost answer was never asked for again"
                ),
                other => panic!("{other:?}"),
            }
        }
    }

    /// A store whose watches do not see the keys under `/foreign/`, as an etcd prefix hides other clients' writes
    /// while they still move the revision on; like etcd, it answers a progress request with the store's current
    /// revision, once its watches have passed it.
    struct HidesForeignKeys {
        inner: Arc<EmbeddedStorage>,
        progress: tokio::sync::watch::Sender<u64>,
        /// How many progress requests to lose (accepted, never answered), as a broken stream loses one.
        lose: std::sync::atomic::AtomicUsize,
    }

    impl HidesForeignKeys {
        fn new(inner: Arc<EmbeddedStorage>) -> HidesForeignKeys {
            HidesForeignKeys {
                inner,
                progress: tokio::sync::watch::channel(0).0,
                lose: Default::default(),
            }
        }
    }

    impl Storage for HidesForeignKeys {
        crate::pass_through!(get, list, create, update, delete, current_revision, compact);
        fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
            Box::pin(async move {
                let mut seen = self.inner.watch(prefix, after).await?;
                let mut requests = self.progress.subscribe();
                let inner = self.inner.clone();
                let (tx, rx) = mpsc::channel(QUEUE);
                tokio::spawn(async move {
                    let mut passed = after;
                    let mut owed: Option<Revision> = None;
                    loop {
                        if let Some(current) = owed.filter(|current| passed >= *current) {
                            owed = None;
                            if tx.send(Ok(WatchEvent::Progress { revision: current })).await.is_err() {
                                return;
                            }
                        }
                        tokio::select! {
                            item = seen.recv() => {
                                let Some(item) = item else { return };
                                let foreign = match &item {
                                    Ok(WatchEvent::Put { kv, .. } | WatchEvent::Delete { prev: kv, .. }) => {
                                        kv.key.starts_with("/foreign/")
                                    }
                                    _ => false,
                                };
                                if let Ok(event) = &item {
                                    passed = passed.max(event.revision());
                                }
                                if !foreign && tx.send(item).await.is_err() {
                                    return;
                                }
                            }
                            changed = requests.changed() => {
                                if changed.is_err() {
                                    return;
                                }
                                owed = Some(inner.current_revision().await.unwrap());
                            }
                        }
                    }
                });
                Ok(rx)
            })
        }
        fn request_progress(&self) -> BoxFuture<'_, Result<bool>> {
            use std::sync::atomic::Ordering::SeqCst;
            let lost = self.lose.fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1)).is_ok();
            if !lost {
                self.progress.send_modify(|requests| *requests += 1);
            }
            Box::pin(async { Ok(true) })
        }
    }

    /// A watcher dropped while no event of its prefix comes (a removed tenant's) is let go of all the same, with its
    /// queue: before, it was held until an event of its prefix came, which for a removed tenant is never.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_dropped_watcher_is_let_go_of_with_no_event_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let inner: Arc<dyn Storage> = Arc::new(EmbeddedStorage::open(dir.path()).unwrap());
        let shared = SharedWatch::new(inner);
        let kept = shared.watch("/tenants/a/", 0).await.unwrap();
        let dropped = shared.watch("/tenants/b/", 0).await.unwrap();
        assert_eq!(shared.watchers(), 2);
        drop(dropped);
        let deadline = tokio::time::Instant::now() + PRUNE_EVERY * 4;
        while shared.watchers() != 1 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the dropped watcher is still held"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert!(!kept.is_closed());
    }

    /// After a quiet while the recent events are let go of: a watch from after the head still shares the watch,
    /// one from before them opens its own on the inner store, and both get every event.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn recent_events_are_let_go_of_when_quiet_and_older_watches_still_get_every_event() {
        let (_dir, counted, shared) = counted_shared_watch();
        let mut first = shared.watch("/a/", 0).await.unwrap();
        let created = shared.create("/a/x", b"1".to_vec()).await.unwrap();
        assert!(matches!(
            conformance::next_event(&mut first).await,
            WatchEvent::Put { .. }
        ));
        assert_eq!(shared.lock().recent.len(), 1);
        {
            let mut state = shared.lock();
            for _ in 0..QUIET_TICKS {
                state.prune();
            }
            assert!(state.recent.is_empty());
            assert_eq!(state.recent_after, created.mod_revision);
        }
        let mut from_head = shared.watch("/a/", created.mod_revision).await.unwrap();
        assert_eq!(counted.watches.load(std::sync::atomic::Ordering::SeqCst), 1);
        let mut from_before = shared.watch("/a/", created.mod_revision - 1).await.unwrap();
        assert_eq!(counted.watches.load(std::sync::atomic::Ordering::SeqCst), 2);
        match conformance::next_event(&mut from_before).await {
            WatchEvent::Put { kv, .. } => assert_eq!(kv.key, "/a/x"),
            other => panic!("{other:?}"),
        }
        shared.create("/a/y", b"2".to_vec()).await.unwrap();
        for stream in [&mut first, &mut from_head, &mut from_before] {
            match conformance::next_event(stream).await {
                WatchEvent::Put { kv, .. } => assert_eq!(kv.key, "/a/y"),
                other => panic!("{other:?}"),
            }
        }
        // An event makes the shared watch keep recent events again.
        assert_eq!(shared.lock().recent.len(), 1);
    }

    /// A shared watch over an embedded store (in the returned directory) that counts the watches opened on it.
    fn counted_shared_watch() -> (tempfile::TempDir, Arc<CountWatches>, SharedWatch) {
        let dir = tempfile::tempdir().unwrap();
        let counted = Arc::new(CountWatches {
            inner: Arc::new(EmbeddedStorage::open(dir.path()).unwrap()),
            watches: Default::default(),
        });
        let shared = SharedWatch::new(counted.clone());
        (dir, counted, shared)
    }

    /// A store that counts the watches opened on it.
    struct CountWatches {
        inner: Arc<EmbeddedStorage>,
        watches: std::sync::atomic::AtomicUsize,
    }

    impl Storage for CountWatches {
        crate::pass_through!(get, list, create, update, delete, current_revision, compact);
        fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
            self.watches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            self.inner.watch(prefix, after)
        }
    }
}
