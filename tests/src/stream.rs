//! Reading a stream of JSON values (watch events) with a deadline.

use std::io::Read;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A stream of JSON values read on a background thread from any reader: one value per line (an HTTP watch) or
/// pretty-printed values one after another (`kubectl get -w -o json`).
pub struct JsonStream {
    receiver: Receiver<Result<Value, String>>,
    ended: Option<String>,
}

impl JsonStream {
    /// Starts reading `reader` on a background thread. The thread ends at end of input or at the first decoding
    /// error; both are reported by [`JsonStream::next`] as the end of the stream.
    pub fn spawn(reader: impl Read + Send + 'static) -> JsonStream {
        let (sender, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            let values = serde_json::Deserializer::from_reader(reader).into_iter::<Value>();
            for value in values {
                let item = value.map_err(|e| format!("invalid JSON in the stream: {e}"));
                let failed = item.is_err();
                if sender.send(item).is_err() || failed {
                    return;
                }
            }
            let _ = sender.send(Err("end of stream".to_owned()));
        });
        JsonStream { receiver, ended: None }
    }

    /// The next value, waiting at most `timeout`. `None` when nothing arrived in time or the stream ended (see
    /// [`JsonStream::end_reason`]).
    pub fn next(&mut self, timeout: Duration) -> Option<Value> {
        if self.ended.is_some() {
            return None;
        }
        match self.receiver.recv_timeout(timeout) {
            Ok(Ok(value)) => Some(value),
            Ok(Err(reason)) => {
                self.ended = Some(reason);
                None
            }
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => {
                self.ended = Some("reader thread ended".to_owned());
                None
            }
        }
    }

    /// Why the stream ended, if it did (end of input or a decoding error).
    pub fn end_reason(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// Reads values until `done` returns true for the values read so far, or `timeout` passes, or the stream ends.
    /// Returns every value read; the caller asserts on them (and gets all of them in its failure message).
    pub fn collect_until(&mut self, timeout: Duration, mut done: impl FnMut(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + timeout;
        let mut values = Vec::new();
        while !done(&values) {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            match self.next(left) {
                Some(value) => values.push(value),
                None => break,
            }
        }
        values
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lines_and_pretty_printed_values_then_reports_the_end() {
        let input = "{\"type\":\"ADDED\"}\n{\n  \"type\": \"MODIFIED\"\n}\n";
        let mut stream = JsonStream::spawn(std::io::Cursor::new(input.as_bytes().to_vec()));
        let values = stream.collect_until(Duration::from_secs(5), |v| v.len() == 2);
        assert_eq!(values[0]["type"], "ADDED");
        assert_eq!(values[1]["type"], "MODIFIED");
        assert_eq!(stream.next(Duration::from_secs(5)), None);
        assert_eq!(stream.end_reason(), Some("end of stream"));
    }
}
