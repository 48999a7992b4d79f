//! Watch: initial events, then the cache's or storage's events translated for the client, with bookmarks.
//!
//! A watch is a [`WatchEvents`] the HTTP handler pulls from as it writes: nothing is read ahead of the client, so
//! a watcher that does not read holds no more than its cache queue (bounded) and what the connection buffers. The
//! events of stored objects come out as [`StoredEvent`]s, still in their stored form: a watcher without selectors
//! neither decodes nor converts them when another watcher already encoded the same event in the same version and
//! format (see [`rest::watch_encodings`]).

use std::pin::Pin;

use tokio::sync::mpsc::error::TryRecvError;
use tokio::time::Sleep;

use super::list::WireItem;
use super::{ListParams, ResourceStore, WatchOut};
use crate::read::WatchFrom;
use apimachinery::object::{self};
use apimachinery::status::ApiError;
use serde_json::{json, Value};
use std::sync::Arc;
use storage::cacher::splice::Splice;
use storage::keys::key_prefix;
use storage::{EventStream, SharedEvent};
use storage::{KeyValue, ListOptions, Revision, StorageError};

/// How long before a watch's deadline its last BOOKMARK is sent (kube's cacher: 2 s).
const PRE_TIMEOUT_BOOKMARK: std::time::Duration = std::time::Duration::from_secs(2);

fn watch_error(e: StorageError) -> ApiError {
    match e {
        StorageError::Compacted { requested, compacted } => {
            ApiError::expired(format!("too old resource version: {requested} ({compacted})"))
        }
        other => crate::errors::from_storage(other, "", "", ""),
    }
}

/// One event of a watch.
pub enum WatchItem {
    /// An event whose object is at hand: an initial event, a BOOKMARK or an ERROR.
    Object(WatchOut),
    /// A change of a stored object.
    Stored(StoredEvent),
    /// An initial ADDED event whose object is written as it is, from its stored bytes or remembered conversion
    /// (only for a watch that asked for them: see [`ResourceStore::watch`]).
    Added(WireItem),
}

/// A change of a stored object, as the watcher sees it (its type decided by the watcher's selectors), with the
/// object still in its stored form.
pub struct StoredEvent {
    /// ADDED, MODIFIED or DELETED.
    pub kind: &'static str,
    /// The event's revision: the object's resourceVersion in the event.
    pub revision: Revision,
    /// The stored object the event carries (shared with the watch cache).
    kv: Arc<KeyValue>,
    /// The object already parsed (with its resourceVersion set), when the selectors needed it.
    parsed: Option<Value>,
}

impl StoredEvent {
    /// The object's storage key.
    pub fn key(&self) -> &str {
        &self.kv.key
    }

    /// The event's object in the request's version.
    pub fn object(&self, store: &ResourceStore) -> Result<Value, ApiError> {
        let mut obj = match &self.parsed {
            Some(obj) => obj.clone(),
            None => store.parse_stored(&self.kv)?,
        };
        object::set_resource_version(&mut obj, self.revision);
        store.stored_to_request_version(&self.kv.key, self.revision, obj)
    }

    /// The length of the stored object's JSON (about that of the event's object).
    pub fn stored_len(&self) -> usize {
        self.kv.value.len()
    }

    /// Appends the event's object in the request's version to `out` as JSON without parsing it, when it can be:
    /// the stored bytes with the event's revision spliced in as the resourceVersion when the object is stored in
    /// the request's version (and in the stored form), else the plugin's remembered conversion, as text. Returns
    /// false, having written nothing, when the object must be parsed (schema defaults applied on read, a strategy
    /// that decorates, a conversion not remembered, an object the selectors parsed already).
    pub fn write_json(&self, store: &ResourceStore, out: &mut Vec<u8>) -> bool {
        if self.parsed.is_some() || !store.reads_from_bytes() {
            return false;
        }
        let value = &self.kv.value;
        let in_request_version = format!("{{\"apiVersion\":{},", Value::from(store.api_version()));
        if value.starts_with(in_request_version.as_bytes()) {
            let Some(splice) = Splice::locate(value) else {
                return false;
            };
            let mut digits = [0u8; 20];
            splice.write(value, super::list::decimal(self.revision, &mut digits), out);
            return true;
        }
        match store
            .plugin
            .conversions
            .get_text(&self.kv.key, self.revision, &store.version)
        {
            Some(text) => {
                out.extend_from_slice(text.as_bytes());
                true
            }
            None => false,
        }
    }

    /// The event with its object in the request's version.
    pub fn to_watch_out(&self, store: &ResourceStore) -> Result<WatchOut, ApiError> {
        Ok(WatchOut {
            kind: self.kind,
            object: self.object(store)?,
        })
    }
}

/// The events of one watch, pulled by the HTTP handler. See the [module documentation](self).
pub struct WatchEvents {
    store: Arc<ResourceStore>,
    params: ListParams,
    /// Whether the watch has label or field selectors: then each event's object is decoded to decide its type.
    selective: bool,
    /// The initial events not sent yet.
    initial: std::vec::IntoIter<WatchItem>,
    initial_events_end: Option<Revision>,
    /// The storage events, or the error that ends the watch after the initial events.
    upstream: Result<EventStream, Option<ApiError>>,
    /// The revision of the last event received: the pre-timeout bookmark's.
    last: Revision,
    /// When the pre-timeout bookmark is due, until it is sent.
    pre_timeout: Option<Pin<Box<Sleep>>>,
    done: bool,
}

impl ResourceStore {
    /// Watches objects from where the parameters say (see [`WatchFrom`]): with the watch cache, all of it is
    /// served from memory. Progress notifications become BOOKMARK events when the client allows them. With
    /// `wire` (the client takes plain JSON), the initial events of a watch without selectors come as
    /// [`WatchItem::Added`], their objects not parsed (as [`ResourceStore::list_wire`] writes a list).
    pub async fn watch(
        self: Arc<Self>,
        namespace: Option<String>,
        params: ListParams,
        deadline: Option<tokio::time::Instant>,
        wire: bool,
    ) -> Result<WatchEvents, ApiError> {
        let prefix = key_prefix(self.group(), self.plural(), namespace.as_deref());
        let from = WatchFrom::parse(
            params.resource_version.as_deref(),
            params.resource_version_match.as_deref(),
            params.send_initial_events,
            params.allow_bookmarks,
        )?;
        let mut initial: Vec<WatchItem> = Vec::new();
        let mut initial_events_end = None;
        let after = match from {
            WatchFrom::Initial {
                at,
                initial_events_end: end,
            } if wire && !super::list::selective(&params) && self.reads_from_bytes() => {
                let list = self
                    .read_list_shared(&prefix, ListOptions::default(), at)
                    .await
                    .map_err(|e| self.storage_err(e, ""))?;
                initial = self
                    .wire_items(&list.items)?
                    .into_iter()
                    .map(WatchItem::Added)
                    .collect();
                if end {
                    initial_events_end = Some(list.revision);
                }
                list.revision
            }
            WatchFrom::Initial {
                at,
                initial_events_end: end,
            } => {
                let list = self
                    .read_list(&prefix, ListOptions::default(), at)
                    .await
                    .map_err(|e| self.storage_err(e, ""))?;
                initial = self
                    .selected(&list.items, &params)?
                    .into_iter()
                    .map(|object| WatchItem::Object(WatchOut { kind: "ADDED", object }))
                    .collect();
                if end {
                    initial_events_end = Some(list.revision);
                }
                list.revision
            }
            WatchFrom::Now => self
                .storage
                .current_revision()
                .await
                .map_err(|e| self.storage_err(e, ""))?,
            WatchFrom::After(revision) => revision,
        };
        let upstream = match &self.cache {
            Some(cache) => cache.watch_events(&prefix, after).await,
            None => self.storage.watch(&prefix, after).await.map(EventStream::Owned),
        };
        // When bookmarks are allowed and the watch has a deadline, a BOOKMARK goes out 2 s before it (as kube's
        // cacher sends one), at the revision of the last event received, so that the client resumes from there.
        let pre_timeout = deadline
            .and_then(|d| d.checked_sub(PRE_TIMEOUT_BOOKMARK))
            .filter(|_| params.allow_bookmarks)
            .map(|at| Box::pin(tokio::time::sleep_until(at)));
        Ok(WatchEvents {
            selective: params.labels.is_some() || params.fields.is_some(),
            params,
            initial: initial.into_iter(),
            initial_events_end,
            upstream: upstream.map_err(|e| Some(watch_error(e))),
            last: after,
            pre_timeout,
            done: false,
            store: self,
        })
    }

    /// A BOOKMARK event at `revision`: an object of the resource's kind with only its resourceVersion (and the
    /// `k8s.io/initial-events-end` annotation after the initial events).
    pub(super) fn bookmark(&self, revision: Revision, initial_events_end: bool) -> WatchOut {
        let mut metadata = json!({"resourceVersion": revision.to_string()});
        if initial_events_end {
            metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        WatchOut {
            kind: "BOOKMARK",
            object: json!({"kind": self.resource.kind, "apiVersion": self.api_version(), "metadata": metadata}),
        }
    }
}

impl WatchEvents {
    /// The next event, waiting for it; `None` when the watch has ended (after an ERROR event, or when the
    /// upstream ends, as the watch cache ends a watcher too slow to keep up).
    pub async fn next(&mut self) -> Option<WatchItem> {
        if let Some(item) = self.next_initial() {
            return Some(item);
        }
        loop {
            let upstream = match &mut self.upstream {
                Ok(upstream) => upstream,
                Err(error) => {
                    self.done = true;
                    return error.take().map(error_event);
                }
            };
            let pre_timeout = &mut self.pre_timeout;
            let bookmark_due = async {
                match pre_timeout {
                    Some(sleep) => sleep.as_mut().await,
                    None => std::future::pending().await,
                }
            };
            let event = tokio::select! {
                event = upstream.recv() => match event {
                    Some(event) => event,
                    None => {
                        self.done = true;
                        return None;
                    }
                },
                () = bookmark_due => {
                    self.pre_timeout = None;
                    if upstream.is_empty() {
                        return Some(WatchItem::Object(self.store.bookmark(self.last, false)));
                    }
                    continue;
                }
            };
            if let Some(item) = self.handle(event) {
                return Some(item);
            }
        }
    }

    /// The next event if one is ready now (for writing several at once); `None` when none is, or the watch ended.
    pub fn try_next(&mut self) -> Option<WatchItem> {
        if let Some(item) = self.next_initial() {
            return Some(item);
        }
        loop {
            let event = match &mut self.upstream {
                Ok(upstream) => match upstream.try_recv() {
                    Ok(event) => event,
                    // The end is reported by `next`.
                    Err(TryRecvError::Empty | TryRecvError::Disconnected) => return None,
                },
                Err(_) => return None,
            };
            if let Some(item) = self.handle(event) {
                return Some(item);
            }
        }
    }

    /// The initial events, then the bookmark that ends them; `None` after them, and once the watch has ended.
    fn next_initial(&mut self) -> Option<WatchItem> {
        if self.done {
            return None;
        }
        if let Some(item) = self.initial.next() {
            return Some(item);
        }
        let revision = self.initial_events_end.take()?;
        Some(WatchItem::Object(self.store.bookmark(revision, true)))
    }

    /// What the client gets of a storage event, if anything; an error ends the watch.
    fn handle(&mut self, event: storage::Result<SharedEvent>) -> Option<WatchItem> {
        if let Ok(ev) = &event {
            self.last = self.last.max(ev.revision());
        }
        let out = match event {
            Ok(SharedEvent::Progress { revision }) if self.params.allow_bookmarks => {
                return Some(WatchItem::Object(self.store.bookmark(revision, false)));
            }
            Ok(ev) => self.translate(ev),
            Err(e) => Err(watch_error(e)),
        };
        match out {
            Ok(stored) => stored.map(WatchItem::Stored),
            Err(e) => {
                self.done = true;
                self.upstream = Err(None);
                Some(error_event(e))
            }
        }
    }

    /// Turns a storage event into a client event, applying the selectors as Kubernetes does: an object leaving
    /// the selection is DELETED, one entering it is ADDED. Without selectors nothing is decoded here.
    fn translate(&self, ev: SharedEvent) -> Result<Option<StoredEvent>, ApiError> {
        let store = &self.store;
        let params = &self.params;
        let (kind, kv, revision, parsed) = match ev {
            SharedEvent::Put { kv, prev } if !self.selective => {
                let kind = if prev.is_some() { "MODIFIED" } else { "ADDED" };
                let revision = kv.mod_revision;
                (kind, kv, revision, None)
            }
            SharedEvent::Put { kv, prev } => {
                let obj = store.parse_stored(&kv)?;
                let now = store.matches(&obj, params)?;
                let before = match &prev {
                    Some(p) => store.matches(&store.parse_stored(p)?, params)?,
                    None => false,
                };
                let kind = match (prev.is_some(), before, now) {
                    (false, _, true) => "ADDED",
                    (true, true, true) => "MODIFIED",
                    (true, false, true) => "ADDED",
                    (true, true, false) => "DELETED",
                    _ => return Ok(None),
                };
                let revision = kv.mod_revision;
                (kind, kv, revision, Some(obj))
            }
            SharedEvent::Delete { prev, revision } if !self.selective => ("DELETED", prev, revision, None),
            SharedEvent::Delete { prev, revision } => {
                let obj = store.parse_stored(&prev)?;
                if !store.matches(&obj, params)? {
                    return Ok(None);
                }
                ("DELETED", prev, revision, Some(obj))
            }
            SharedEvent::Progress { .. } => return Ok(None),
        };
        Ok(Some(StoredEvent {
            kind,
            revision,
            kv,
            parsed,
        }))
    }
}

/// The ERROR event of `e`.
fn error_event(e: ApiError) -> WatchItem {
    WatchItem::Object(WatchOut {
        kind: "ERROR",
        object: e.to_status(),
    })
}
