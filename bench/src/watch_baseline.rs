//! watch-baseline: the least a server must do to fan events out to many watchers, as a baseline for `watch-bench`
//!: a hyper server that answers the calls watch-bench makes (`/readyz`, a list, watches, creates),
//! with no storage, plugin, authorization or encoding work: a create takes the next resourceVersion, serializes its
//! event once and hands the same bytes to every watcher's queue; each watcher's response writes what its queue holds.
//! Run it in place of the server, on the same client and the same cores, to see what the machine allows:
//!
//! `watch-bench --server target/release/watch-baseline --rows 1000x1000 --slow ""`
//!
//! It takes the server's command line (`serve ... --insecure-port PORT ...`) and ignores all but the port. The event
//! lines have the shape and about the size of the server's (metadata with a uid, timestamps, managed fields).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use anyhow::Context as _;
use bytes::{Bytes, BytesMut};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Frame;
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{json, Value};

/// Events queued for one watcher before it is ended as too slow (as the server's cache queue).
const QUEUE: usize = 1024;

/// The watchers and the last resourceVersion; one lock, so every watcher gets the events in resourceVersion order.
struct State {
    watchers: Mutex<(u64, Vec<tokio::sync::mpsc::Sender<Bytes>>)>,
}

/// A watch response: writes every event its queue holds at once, in one frame.
struct WatchBody(tokio::sync::mpsc::Receiver<Bytes>);

impl hyper::body::Body for WatchBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let first = match self.0.poll_recv(cx) {
            Poll::Ready(Some(event)) => event,
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => return Poll::Pending,
        };
        let Ok(second) = self.0.try_recv() else {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        };
        let mut batch = BytesMut::from(&first[..]);
        batch.extend_from_slice(&second);
        while let Ok(more) = self.0.try_recv() {
            batch.extend_from_slice(&more);
        }
        Poll::Ready(Some(Ok(Frame::data(batch.freeze()))))
    }
}

type Body = BoxBody<Bytes, Infallible>;

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut resp = json(Full::new(body.into()).boxed());
    *resp.status_mut() = status;
    resp
}

/// A 200 response of JSON.
fn json(body: Body) -> Response<Body> {
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    resp
}

async fn handle(state: Arc<State>, req: Request<hyper::body::Incoming>) -> Response<Body> {
    let watch = req.uri().query().is_some_and(|q| q.split('&').any(|p| p == "watch=1"));
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/readyz" | "/metrics") => full(StatusCode::OK, ""),
        (&Method::GET, _) if watch => {
            let (tx, rx) = tokio::sync::mpsc::channel(QUEUE);
            state.watchers.lock().unwrap().1.push(tx);
            json(WatchBody(rx).boxed())
        }
        (&Method::GET, _) => {
            let rv = state.watchers.lock().unwrap().0;
            let list = json!({"kind": "FlunderList", "apiVersion": "wardle.example.com/v1alpha1",
                "metadata": {"resourceVersion": rv.to_string()}, "items": []});
            full(StatusCode::OK, list.to_string())
        }
        (&Method::POST, _) => {
            let Ok(body) = req.into_body().collect().await.map(|b| b.to_bytes()) else {
                return full(StatusCode::BAD_REQUEST, "");
            };
            let Ok(mut obj) = serde_json::from_slice::<Value>(&body) else {
                return full(StatusCode::BAD_REQUEST, "");
            };
            let now = "2026-11-26T00:00:00Z";
            let mut watchers = state.watchers.lock().unwrap();
            watchers.0 += 1;
            let rv = watchers.0;
            let meta = &mut obj["metadata"];
            meta["namespace"] = json!("default");
            // Unique as the resourceVersion is.
            meta["uid"] = json!(format!("00000000-0000-4000-8000-{rv:012}"));
            meta["resourceVersion"] = json!(rv.to_string());
            meta["generation"] = json!(1);
            meta["creationTimestamp"] = json!(now);
            meta["managedFields"] = json!([{"apiVersion": "wardle.example.com/v1alpha1", "fieldsType": "FieldsV1",
                "fieldsV1": {"f:spec": {".": {}, "f:reference": {}, "f:referenceType": {}}},
                "manager": "watch-bench", "operation": "Update", "time": now}]);
            obj["spec"]["referenceType"] = json!("Flunder");
            obj["status"] = json!({});
            let mut line = serde_json::to_vec(&json!({"type": "ADDED", "object": &obj})).unwrap_or_default();
            line.push(b'\n');
            let line = Bytes::from(line);
            // A watcher whose queue is full, or gone, is dropped (its stream ends).
            watchers.1.retain(|w| w.try_send(line.clone()).is_ok());
            drop(watchers);
            full(StatusCode::CREATED, obj.to_string())
        }
        _ => full(StatusCode::METHOD_NOT_ALLOWED, ""),
    }
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut port = None;
    while let Some(a) = args.next() {
        if a == "--insecure-port" {
            port = args.next();
        }
    }
    let port: u16 = port
        .context("usage: watch-baseline [serve ...] --insecure-port PORT")?
        .parse()?;
    // As the server: a multi-threaded runtime with one worker per core.
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        let state = Arc::new(State {
            watchers: Mutex::new((1, Vec::new())),
        });
        bench::serve_http1(listener, move |req| handle(state.clone(), req)).await?;
        Ok(())
    })
}
