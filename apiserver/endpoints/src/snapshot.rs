//! `GET /snapshot`: a snapshot of the server's store, streamed as it is written. The store writes it on a blocking
//! thread into a channel of chunks, which the response's body sends as the client reads; the server holds a few
//! chunks of it at a time, never the whole (a store of 100,000 objects makes a snapshot of about 80 MB).
//!
//! A failure before the first chunk is the answer's error; a failure after it (the store's, rare) ends the body
//! early, and the snapshot is then refused where it is read, its digest missing (`snapshot status` and `restore`
//! check it). A client that goes away stops the writing, and so does one that reads nothing for [`STALLED`]: the
//! snapshot holds a read transaction of the store, which keeps the pages freed since from being used again.

use std::io::Write;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::Response;
use tokio::sync::mpsc;

use crate::response::Body;
use crate::Snapshots;
use apimachinery::status::ApiError;

/// The bytes of one chunk of the body.
const CHUNK_BYTES: usize = 256 * 1024;
/// How many chunks may wait for the client.
const CHUNKS_AHEAD: usize = 4;
/// How long a chunk may wait for room before the snapshot is given up (a client that stopped reading).
const STALLED: std::time::Duration = std::time::Duration::from_secs(60);

/// What the writing thread sends: a chunk, or why it stopped.
type Chunk = Result<Bytes, String>;

/// The answer to `GET /snapshot`.
pub(crate) async fn serve(snapshots: Arc<dyn Snapshots>) -> Result<Response<Body>, ApiError> {
    let (tx, mut rx) = mpsc::channel::<Chunk>(CHUNKS_AHEAD);
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let mut out = ChunkWriter {
            buffer: Vec::with_capacity(CHUNK_BYTES),
            tx: tx.clone(),
            runtime,
        };
        let written = snapshots
            .save(&mut out)
            .and_then(|()| out.flush().map_err(|e| e.to_string()));
        if let Err(e) = written {
            tracing::warn!(error = %e, "a snapshot was not sent whole");
            // Told to the answer when it has not started yet (else its body ends early); not waited for: the
            // channel may be full of chunks for a client that reads nothing.
            let _ = tx.try_send(Err(e));
        }
    });
    let first = match rx.recv().await {
        Some(Ok(chunk)) => chunk,
        Some(Err(e)) => return Err(ApiError::internal(format!("taking a snapshot: {e}"))),
        None => return Err(ApiError::internal("taking a snapshot: the snapshot task ended")),
    };
    let rest = futures_util::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await? {
            Ok(chunk) => Some((Ok(Frame::data(chunk)), rx)),
            // Logged by the writer: the body ends early.
            Err(_) => None,
        }
    });
    let body = futures_util::StreamExt::chain(
        futures_util::stream::once(async move { Ok::<_, std::convert::Infallible>(Frame::data(first)) }),
        rest,
    );
    let mut resp = Response::new(StreamBody::new(body).boxed());
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/octet-stream"));
    Ok(resp)
}

/// A writer sending what it is given in chunks of [`CHUNK_BYTES`], waiting while [`CHUNKS_AHEAD`] wait for the
/// client (up to [`STALLED`]).
struct ChunkWriter {
    buffer: Vec<u8>,
    tx: mpsc::Sender<Chunk>,
    /// The server's runtime, whose timer bounds the wait (the writer runs on a blocking thread).
    runtime: tokio::runtime::Handle,
}

impl ChunkWriter {
    fn send(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buffer, Vec::with_capacity(CHUNK_BYTES)));
        match self.runtime.block_on(self.tx.send_timeout(Ok(chunk), STALLED)) {
            Ok(()) => Ok(()),
            Err(mpsc::error::SendTimeoutError::Closed(_)) => Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the client went away",
            )),
            Err(mpsc::error::SendTimeoutError::Timeout(_)) => Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("the client read nothing for {} s", STALLED.as_secs()),
            )),
        }
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        if self.buffer.len() >= CHUNK_BYTES {
            self.send()?;
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send()
    }
}
