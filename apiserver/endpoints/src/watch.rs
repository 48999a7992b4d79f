//! Watch: a chunked stream of JSON watch events (`{"type": "ADDED", "object": {...}}`, one per line), as Tables
//! when the client asked for them.
//!
//! The events of stored objects in plain JSON are encoded once for every watcher of the same version (the plugin's
//! [`rest::watch_encodings`]); the events ready at once go out in one frame, so a watcher that fell a
//! little behind catches up with one write instead of one per event. The body is pulled by the connection: nothing
//! is read from the watch ahead of what the socket takes.

use std::time::Duration;

use std::pin::Pin;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};
use tokio::time::Sleep;

use super::negotiate::{encode, Encoding, Output};
use super::response::Body;
use super::scope::Scope;
use apimachinery::status::ApiError;
use component_base::metrics::{metrics, RequestKind, WatchEventLabels};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::histogram::Histogram;
use registry::store::{ResourceStore, WatchEvents, WatchItem, WatchOut, WireItem};

/// A watch being served, counted in `apiserver_longrunning_requests` until dropped.
struct Serving(RequestKind);

impl Serving {
    fn start(kind: RequestKind) -> Serving {
        metrics().longrunning_requests.get_or_create(&kind).inc();
        Serving(kind)
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        metrics().longrunning_requests.get_or_create(&self.0).dec();
    }
}

/// At most this many bytes of events that are ready at once go out in one frame (one write to the socket).
const BATCH_BYTES: usize = 64 << 10;

/// Serves `?watch=true`.
pub async fn serve(s: &Scope<'_>) -> Result<Response<Body>, ApiError> {
    let params = s.list_params()?;
    // An int64, as kube's ListOptions has it; one too large for a deadline means none.
    let timeout = match s.query.get("timeoutSeconds").filter(|t| !t.is_empty()) {
        Some(t) => match t.parse::<i64>() {
            Ok(n) if n >= 0 => Some(Duration::from_secs(n.unsigned_abs())),
            _ => return Err(ApiError::bad_request(format!("invalid timeoutSeconds {t:?}"))),
        },
        None => None,
    };
    let deadline = timeout.and_then(|t| tokio::time::Instant::now().checked_add(t));
    let events = s
        .store
        .clone()
        .watch(s.info.namespace.clone(), params, deadline, s.output.table.is_none())
        .await?;
    let output = Output {
        encoding: Encoding::Json,
        ..s.output
    };
    let labels = WatchEventLabels {
        group: s.info.group.clone(),
        version: s.info.version.clone(),
        kind: s.store.resource.kind.clone(),
    };
    let m = metrics();
    let body = WatchBody {
        events,
        deadline: deadline.map(|d| Box::pin(tokio::time::sleep_until(d))),
        // Rows are rendered here, as events arrive, because a Table row needs the plugin.
        table: s.table()?.map(|t| (t.table_version, t.include)),
        first: true,
        format: format!("json {}", s.store.api_version()),
        store: s.store.clone(),
        output,
        sent: m.watch_events.get_or_create(&labels).clone(),
        sizes: m.watch_event_sizes.get_or_create(&labels).clone(),
        ended: false,
        _serving: Serving::start(s.info.metric_kind(&hyper::Method::GET)),
    };
    let body_stream = stream::unfold(body, |mut body| async move {
        let frame = body.next_frame().await?;
        Some((Ok::<_, std::convert::Infallible>(Frame::data(frame)), body))
    });
    let mut resp = Response::new(StreamBody::new(body_stream).boxed());
    *resp.status_mut() = StatusCode::OK;
    let ct = output.content_type();
    if let Ok(v) = HeaderValue::from_str(&ct) {
        resp.headers_mut().insert(CONTENT_TYPE, v);
    }
    resp.headers_mut()
        .insert("Cache-Control", HeaderValue::from_static("no-cache, private"));
    Ok(resp)
}

/// The body of a watch response: pulls the events as the connection takes them, and writes those ready at once
/// in one frame.
struct WatchBody {
    events: WatchEvents,
    /// The end of the watch (`timeoutSeconds`), if it has one.
    deadline: Option<Pin<Box<Sleep>>>,
    /// The Table version and what each row includes, for a Table watch.
    table: Option<(&'static str, super::table::IncludeObject)>,
    /// Whether no event has been written yet (a Table's first row carries the column definitions).
    first: bool,
    /// What names the encoding of the events, for sharing it with the other watchers.
    format: String,
    store: Arc<ResourceStore>,
    output: Output,
    sent: Counter,
    sizes: Histogram,
    /// Set after an ERROR event made here: nothing more follows.
    ended: bool,
    /// Held by the body: the watch counts as served until the client goes or the stream ends.
    _serving: Serving,
}

impl WatchBody {
    /// The next frame: the next event, waited for, then the events ready after it.
    async fn next_frame(&mut self) -> Option<Bytes> {
        if self.ended {
            return None;
        }
        let item = match &mut self.deadline {
            // One timer for the whole watch, not one per event.
            Some(deadline) => tokio::select! {
                item = self.events.next() => item,
                () = deadline.as_mut() => None,
            },
            None => self.events.next().await,
        }?;
        let line = self.line(item);
        if self.ended {
            return Some(line);
        }
        let Some(item) = self.events.try_next() else {
            return Some(line);
        };
        let mut frame = BytesMut::with_capacity(line.len() * 4);
        frame.extend_from_slice(&line);
        let mut next = Some(item);
        while let Some(item) = next {
            frame.extend_from_slice(&self.line(item));
            if self.ended || frame.len() >= BATCH_BYTES {
                break;
            }
            next = self.events.try_next();
        }
        Some(frame.freeze())
    }

    /// One event's line (its JSON and a newline), counted in the watch metrics. An event of a stored object in
    /// plain JSON is encoded once for all the watchers of its version; a failure to convert it ends the watch with
    /// an ERROR event.
    fn line(&mut self, item: WatchItem) -> Bytes {
        let line = match (item, self.table) {
            (WatchItem::Stored(ev), None) if self.store.decorates() => {
                // Decorated objects are encoded for each watcher: their decorations change without a new revision.
                let output = self.output;
                ev.object(&self.store)
                    .map(|object| encode_line(output, ev.kind, object))
                    .unwrap_or_else(|e| {
                        self.ended = true;
                        encode_line(output, "ERROR", e.to_status())
                    })
            }
            (WatchItem::Stored(ev), None) => {
                let (store, output) = (&self.store, self.output);
                let encoded = store.plugin.watch_encodings.get_or_try_insert_with(
                    ev.key(),
                    ev.revision,
                    ev.kind,
                    &self.format,
                    || {
                        let mut line = Vec::with_capacity(ev.stored_len() + 64);
                        line.extend_from_slice(b"{\"object\":");
                        if ev.write_json(store, &mut line) {
                            return Ok(line_end(line, ev.kind));
                        }
                        ev.object(store).map(|object| encode_line(output, ev.kind, object))
                    },
                );
                encoded.unwrap_or_else(|e| {
                    self.ended = true;
                    encode_line(output, "ERROR", e.to_status())
                })
            }
            (WatchItem::Stored(ev), Some(_)) => match ev.to_watch_out(&self.store) {
                Ok(out) => self.plain_line(out),
                Err(e) => {
                    self.ended = true;
                    encode_line(self.output, "ERROR", e.to_status())
                }
            },
            (WatchItem::Object(ev), _) => self.plain_line(ev),
            (WatchItem::Added(item), _) => added_line(&item),
        };
        self.first = false;
        self.sent.inc();
        self.sizes.observe(line.len() as f64);
        line
    }

    /// The line of an event whose object is at hand (rendered as a Table row for a Table watch).
    fn plain_line(&self, ev: WatchOut) -> Bytes {
        let object = match self.table {
            Some((table_version, _)) if ev.kind == "BOOKMARK" => bookmark_table(table_version, &ev.object),
            Some((table_version, include)) if ev.kind != "ERROR" => {
                render_row(&self.store, table_version, include, &ev, self.first).unwrap_or_else(|e| e.to_status())
            }
            _ => ev.object,
        };
        encode_line(self.output, ev.kind, object)
    }
}

/// The line of an ADDED event whose object is written as it is: the bytes [`encode_line`] makes of it in JSON
/// (`serde_json` writes an object's keys in byte order).
pub(super) fn added_line(item: &WireItem) -> Bytes {
    let mut line = Vec::with_capacity(item.len() + 32);
    line.extend_from_slice(b"{\"object\":");
    item.write(&mut line);
    line_end(line, "ADDED")
}

/// Ends the line `{"object":<object>` of a `kind` event (a plain word: ADDED, MODIFIED, DELETED) as
/// [`encode_line`] would.
fn line_end(mut line: Vec<u8>, kind: &str) -> Bytes {
    line.extend_from_slice(b",\"type\":\"");
    line.extend_from_slice(kind.as_bytes());
    line.extend_from_slice(b"\"}\n");
    Bytes::from(line)
}

/// `{"type": kind, "object": object}` and a newline.
pub(super) fn encode_line(output: Output, kind: &str, object: Value) -> Bytes {
    let mut line = encode(output, &json!({"type": kind, "object": object}), false);
    line.push(b'\n');
    Bytes::from(line)
}

/// A BOOKMARK as a Table: no rows, the bookmark's metadata.
fn bookmark_table(table_version: &str, bookmark: &Value) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{table_version}"),
        "metadata": bookmark.get("metadata").cloned().unwrap_or_else(|| json!({})),
        "columnDefinitions": [],
        "rows": [],
    })
}

fn render_row(
    store: &registry::store::ResourceStore,
    table_version: &'static str,
    include: super::table::IncludeObject,
    ev: &WatchOut,
    first: bool,
) -> Result<Value, ApiError> {
    let builder = super::table::TableBuilder {
        plugin: &store.plugin,
        resource: &store.resource,
        version: &store.version,
        table_version,
        include,
    };
    let stored = store.stored_form(&ev.object)?;
    let row = builder.row(&stored, Some(&ev.object))?;
    let rv = ev
        .object
        .get("metadata")
        .and_then(|m| m.get("resourceVersion"))
        .cloned()
        .unwrap_or(json!(""));
    let mut table = builder.table(vec![row], json!({"resourceVersion": rv}));
    if !first {
        table["columnDefinitions"] = json!([]);
    }
    Ok(table)
}
