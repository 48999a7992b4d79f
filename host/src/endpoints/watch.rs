//! Watch: a chunked stream of JSON watch events (`{"type": "ADDED", "object": {...}}`, one per line), as Tables
//! when the client asked for them.

use std::time::Duration;

use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};
use serde_json::{json, Value};

use super::negotiate::{encode, Encoding, Output};
use super::resource::Scope;
use super::response::Body;
use crate::apimachinery::status::ApiError;
use crate::metrics::{metrics, RequestKind, WatchEventLabels};
use crate::registry::store::WatchOut;

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

/// Serves `?watch=true`.
pub async fn serve(s: &Scope) -> Result<Response<Body>, ApiError> {
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
        .watch(s.info.namespace.clone(), params, deadline)
        .await?;
    // Rows are rendered here, as events arrive, because a Table row needs the plugin.
    let table = s.table()?.map(|t| (t.table_version, t.include));
    let store = s.store.clone();
    let output = Output {
        encoding: Encoding::Json,
        ..s.output
    };
    let labels = WatchEventLabels {
        group: s.info.group.clone(),
        version: s.info.version.clone(),
        kind: s.store.resource.kind.clone(),
    };
    let serving = Serving::start(s.info.metric_kind(&hyper::Method::GET));
    let state = (events, deadline, true);
    let body_stream = stream::unfold(state, move |(mut events, deadline, first)| {
        let (store, labels) = (store.clone(), labels.clone());
        // Held by the stream: the watch counts as served until the client goes or the stream ends.
        let _serving = &serving;
        async move {
            let next = match deadline {
                Some(d) => tokio::time::timeout_at(d, events.recv()).await.ok().flatten(),
                None => events.recv().await,
            };
            let ev = next?;
            let object = match table {
                Some((table_version, _)) if ev.kind == "BOOKMARK" => bookmark_table(table_version, &ev.object),
                Some((table_version, include)) if ev.kind != "ERROR" => {
                    render_row(&store, table_version, include, &ev, first).unwrap_or_else(|e| e.to_status())
                }
                _ => ev.object,
            };
            let mut line = encode(output, &json!({"type": ev.kind, "object": object}), false);
            line.push(b'\n');
            let m = metrics();
            m.watch_events.get_or_create(&labels).inc();
            m.watch_event_sizes.get_or_create(&labels).observe(line.len() as f64);
            Some((
                Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from(line))),
                (events, deadline, false),
            ))
        }
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
    store: &crate::registry::store::ResourceStore,
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
