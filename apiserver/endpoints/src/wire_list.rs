//! Lists (and single objects) at wire speed: the JSON response of a list written from the objects' stored bytes
//! ([`WireList`](registry::store::WireList)) spliced into the list's envelope, streamed in chunks, with no
//! parse and no serialization of the objects; a GET's object written from its stored bytes the same way.
//!
//! The bytes are those the parsed path writes (`serde_json` output of the list as a `Value`, whose keys are in byte
//! order): `{"apiVersion":…,"items":[…],"kind":"<Kind>List","metadata":{"continue":…,"remainingItemCount":…,
//! "resourceVersion":"…"}}`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, SizeHint};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::Response;
use serde_json::Value;

use super::response::Body;
use registry::store::{WireItem, WireList};

/// About how many bytes each frame of the body holds (a frame ends after the item that reaches it), so that a long
/// list is never copied whole into one buffer.
const CHUNK: usize = 256 * 1024;

/// The response to a list: 200, `application/json`, the list written from `list`'s items.
pub fn response(api_version: &str, kind: &str, list: WireList) -> Response<Body> {
    let mut resp = Response::new(ListBody::new(api_version, kind, list).boxed());
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// The response to a GET: 200, `application/json`, the object written from `item`.
pub fn object_response(item: WireItem) -> Response<Body> {
    let mut bytes = Vec::with_capacity(item.len());
    item.write(&mut bytes);
    let mut resp = Response::new(super::response::full(bytes));
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// The body of a list: its envelope and items, written a chunk at a time as hyper asks for them.
pub struct ListBody {
    /// The envelope before the items; empty once written.
    head: Vec<u8>,
    /// The items not written yet.
    items: VecDeque<WireItem>,
    /// Whether an item was written (the next one needs a comma).
    first_written: bool,
    /// The envelope after the items.
    tail: Vec<u8>,
    /// The bytes not written yet.
    remaining: u64,
}

impl ListBody {
    /// The body of `list`, of `kind` in `api_version`.
    pub fn new(api_version: &str, kind: &str, list: WireList) -> ListBody {
        let json = |s: &str| Value::from(s).to_string();
        let head = format!("{{\"apiVersion\":{},\"items\":[", json(api_version)).into_bytes();
        let mut tail = format!("],\"kind\":{},\"metadata\":{{", json(kind));
        if let Some(token) = &list.continue_token {
            tail.push_str(&format!("\"continue\":{},", json(token)));
        }
        if let Some(remaining) = list.remaining {
            tail.push_str(&format!("\"remainingItemCount\":{remaining},"));
        }
        tail.push_str(&format!("\"resourceVersion\":\"{}\"}}}}", list.resource_version));
        let items: usize = list.items.iter().map(WireItem::len).sum();
        let commas = list.items.len().saturating_sub(1);
        let remaining = (head.len() + items + commas + tail.len()) as u64;
        ListBody {
            head,
            items: list.items.into(),
            first_written: false,
            tail: tail.into_bytes(),
            remaining,
        }
    }

    /// The next chunk: the head, items up to about [`CHUNK`] bytes, and the tail after the last item.
    fn next_chunk(&mut self) -> Option<Vec<u8>> {
        if self.remaining == 0 {
            return None;
        }
        // Measure first, so that the chunk is allocated once at its exact size.
        let mut len = self.head.len();
        let mut count = 0;
        for (i, item) in self.items.iter().enumerate() {
            if len >= CHUNK {
                break;
            }
            len += item.len() + usize::from(self.first_written || i > 0);
            count += 1;
        }
        let last = count == self.items.len();
        if last {
            len += self.tail.len();
        }
        let mut out = Vec::with_capacity(len);
        out.append(&mut self.head);
        for item in self.items.drain(..count) {
            if self.first_written {
                out.push(b',');
            }
            item.write(&mut out);
            self.first_written = true;
        }
        if last {
            out.append(&mut self.tail);
        }
        debug_assert_eq!(out.len(), len);
        self.remaining = self.remaining.saturating_sub(out.len() as u64);
        Some(out)
    }
}

impl hyper::body::Body for ListBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(
            self.get_mut()
                .next_chunk()
                .map(|chunk| Ok(Frame::data(Bytes::from(chunk)))),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

#[cfg(test)]
mod tests;
