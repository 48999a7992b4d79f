//! Watch: initial events, then the cache's or storage's events translated for the client, with bookmarks.

use super::*;

/// How long before a watch's deadline its last BOOKMARK is sent (kube's cacher: 2 s).
const PRE_TIMEOUT_BOOKMARK: std::time::Duration = std::time::Duration::from_secs(2);

fn watch_error(e: StorageError) -> ApiError {
    match e {
        StorageError::Compacted { requested, compacted } => {
            ApiError::expired(format!("too old resource version: {requested} ({compacted})"))
        }
        other => ApiError::from_storage(other, "", "", ""),
    }
}

impl ResourceStore {
    /// Watches objects from where the parameters say (see [`WatchFrom`]): with the watch cache, all of it is
    /// served from memory. Progress notifications become BOOKMARK events when the client allows them.
    pub async fn watch(
        self: Arc<Self>,
        namespace: Option<String>,
        params: ListParams,
        deadline: Option<tokio::time::Instant>,
    ) -> Result<mpsc::Receiver<WatchOut>, ApiError> {
        let prefix = key_prefix(self.group(), self.plural(), namespace.as_deref());
        let from = WatchFrom::parse(
            params.resource_version.as_deref(),
            params.resource_version_match.as_deref(),
            params.send_initial_events,
            params.allow_bookmarks,
        )?;
        let mut initial = Vec::new();
        let mut initial_events_end = None;
        let after = match from {
            WatchFrom::Initial {
                at,
                initial_events_end: end,
            } => {
                let list = self
                    .read_list(&prefix, ListOptions::default(), at)
                    .await
                    .map_err(|e| self.storage_err(e, ""))?;
                initial = self.selected(&list.items, &params)?;
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
            Some(cache) => cache.watch(&prefix, after).await,
            None => self.storage.watch(&prefix, after).await,
        };
        let (tx, rx) = mpsc::channel(256);
        tokio::spawn(async move {
            let events = initial
                .into_iter()
                .map(|object| WatchOut { kind: "ADDED", object })
                .chain(initial_events_end.map(|revision| self.bookmark(revision, true)));
            for event in events {
                if tx.send(event).await.is_err() {
                    return;
                }
            }
            match upstream {
                Ok(upstream) => self.forward(upstream, &params, after, deadline, &tx).await,
                Err(e) => {
                    let err = watch_error(e);
                    let _ = tx
                        .send(WatchOut {
                            kind: "ERROR",
                            object: err.to_status(),
                        })
                        .await;
                }
            }
        });
        Ok(rx)
    }

    /// Forwards storage events to the client until either side ends; an error is the last event. When bookmarks
    /// are allowed and the watch has a deadline, a BOOKMARK goes out 2 s before it (as kube's cacher sends one), at
    /// the revision of the last event received, so that the client resumes from there.
    async fn forward(
        &self,
        mut upstream: WatchStream,
        params: &ListParams,
        after: Revision,
        deadline: Option<tokio::time::Instant>,
        tx: &mpsc::Sender<WatchOut>,
    ) {
        let mut last = after;
        let pre_timeout = deadline
            .and_then(|d| d.checked_sub(PRE_TIMEOUT_BOOKMARK))
            .filter(|_| params.allow_bookmarks);
        let mut bookmark_due = pre_timeout.is_some();
        let sleep = tokio::time::sleep_until(pre_timeout.unwrap_or_else(tokio::time::Instant::now));
        tokio::pin!(sleep);
        loop {
            let event = tokio::select! {
                event = upstream.recv() => match event {
                    Some(event) => event,
                    None => return,
                },
                () = &mut sleep, if bookmark_due => {
                    bookmark_due = false;
                    if upstream.is_empty() && tx.send(self.bookmark(last, false)).await.is_err() {
                        return;
                    }
                    continue;
                }
                // The client has gone: let go of the upstream watch now, not at its next event (which for an idle
                // resource may never come, and meanwhile the watcher keeps its cache from being evicted).
                () = tx.closed() => return,
            };
            if let Ok(ev) = &event {
                last = last.max(ev.revision());
            }
            let out = match event {
                Ok(WatchEvent::Progress { revision }) if params.allow_bookmarks => {
                    Ok(Some(self.bookmark(revision, false)))
                }
                Ok(ev) => self.translate(ev, params),
                Err(e) => Err(watch_error(e)),
            };
            match out {
                Ok(Some(o)) => {
                    if tx.send(o).await.is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = tx
                        .send(WatchOut {
                            kind: "ERROR",
                            object: e.to_status(),
                        })
                        .await;
                    return;
                }
            }
        }
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

    /// Turns a storage event into a client event, applying the selectors as Kubernetes does: an object leaving
    /// the selection is DELETED, one entering it is ADDED.
    fn translate(&self, ev: WatchEvent, params: &ListParams) -> Result<Option<WatchOut>, ApiError> {
        // The event's object is the stored one under `key`, with `revision` as its resourceVersion.
        let (kind, obj, key, revision) = match ev {
            WatchEvent::Put { kv, prev } => {
                let obj = self.parse_stored(&kv)?;
                let now = self.matches(&obj, params)?;
                let before = match &prev {
                    Some(p) => self.matches(&self.parse_stored(p)?, params)?,
                    None => false,
                };
                let kind = match (prev.is_some(), before, now) {
                    (false, _, true) => "ADDED",
                    (true, true, true) => "MODIFIED",
                    (true, false, true) => "ADDED",
                    (true, true, false) => "DELETED",
                    _ => return Ok(None),
                };
                (kind, obj, kv.key, kv.mod_revision)
            }
            WatchEvent::Delete { prev, revision } => {
                let mut obj = self.parse_stored(&prev)?;
                if !self.matches(&obj, params)? {
                    return Ok(None);
                }
                object::set_resource_version(&mut obj, revision);
                ("DELETED", obj, prev.key, revision)
            }
            WatchEvent::Progress { .. } => return Ok(None),
        };
        Ok(Some(WatchOut {
            kind,
            object: self.stored_to_request_version(&key, revision, obj)?,
        }))
    }
}
