//! The encoded watch events of a plugin's stored objects, shared by the watchers (Kubernetes' `cachingObject`).
//!
//! An event of the watch cache reaches every watcher of its resource; those that ask for the same version and format
//! would each decode the stored object, convert it and serialize it again. Instead the first watcher to handle an
//! event encodes its whole line (`{"type":"ADDED","object":{...}}` and the newline) and the others take the same
//! bytes: a reference count, not a copy. A stored object at a revision never changes, so an event is named by its
//! key, revision and type; the format names the rest (the version and the encoding).
//!
//! Memory is bounded as the conversion memo's is: two generations of at most half the budget each. Watchers keep up
//! with one another within a few events, so the lines they share are the recent ones; a watcher further behind than
//! the budget encodes its events itself, as it would without this memo. The memo is emptied when its plugin idles.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;

/// The encoded lines a plugin's watchers may share: 8 MiB (about 8,000 events of 1 KiB).
pub const WATCH_ENCODINGS_BYTES: usize = 8 << 20;

/// What names one encoded line, besides its revision.
struct Name {
    key: Box<str>,
    kind: &'static str,
    format: Box<str>,
}

impl Name {
    fn is(&self, key: &str, kind: &str, format: &str) -> bool {
        self.kind == kind && &*self.key == key && &*self.format == format
    }
}

/// Hashes a revision (an `i64`) by one multiplication: revisions are distinct numbers, and hashing the keys and
/// formats (strings) would cost more than the rest of a lookup.
#[derive(Default)]
struct RevisionHasher(u64);

impl Hasher for RevisionHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// The lines of one generation, by revision (one store revision is one event, though it may be encoded in several
/// formats, and as DELETED for a watcher whose selector the object left).
type Lines = HashMap<i64, Vec<(Name, Bytes)>, BuildHasherDefault<RevisionHasher>>;

/// The memo. See the [module documentation](self).
pub struct WatchEncodings {
    /// The bytes each generation may hold.
    generation_budget: usize,
    generations: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    current: Lines,
    current_bytes: usize,
    previous: Lines,
    last_used: Option<Instant>,
    hits: u64,
    misses: u64,
}

impl Generations {
    fn find(&mut self, revision: i64, key: &str, kind: &str, format: &str) -> Option<Bytes> {
        if let Some(lines) = self.current.get(&revision) {
            if let Some((_, line)) = lines.iter().find(|(n, _)| n.is(key, kind, format)) {
                return Some(line.clone());
            }
        }
        let lines = self.previous.get_mut(&revision)?;
        let at = lines.iter().position(|(n, _)| n.is(key, kind, format))?;
        let (name, line) = lines.swap_remove(at);
        let found = line.clone();
        self.current_bytes += line.len();
        self.current.entry(revision).or_default().push((name, line));
        Some(found)
    }

    fn insert(&mut self, revision: i64, name: Name, line: Bytes, budget: usize) {
        if self.current_bytes + line.len() > budget {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
        }
        self.current_bytes += line.len();
        let lines = self.current.entry(revision).or_default();
        if let Some(at) = lines.iter().position(|(n, _)| n.is(&name.key, name.kind, &name.format)) {
            self.current_bytes -= lines.swap_remove(at).1.len();
        }
        lines.push((name, line));
    }
}

impl WatchEncodings {
    /// A memo of at most `budget` bytes of lines (0 disables it).
    pub fn new(budget: usize) -> WatchEncodings {
        WatchEncodings {
            generation_budget: budget / 2,
            generations: Mutex::default(),
        }
    }

    /// The line of the `kind` event of the object stored under `key` at `revision`, in `format` (the version and
    /// encoding the watcher asked for): the remembered one, or `encode`'s, remembered when it succeeds. `encode`
    /// runs without the memo's lock, so two watchers missing the same line at once may both encode it.
    pub fn get_or_try_insert_with<E>(
        &self,
        key: &str,
        revision: i64,
        kind: &'static str,
        format: &str,
        encode: impl FnOnce() -> Result<Bytes, E>,
    ) -> Result<Bytes, E> {
        if self.generation_budget == 0 {
            return encode();
        }
        {
            let mut g = self.lock();
            if let Some(line) = g.find(revision, key, kind, format) {
                g.hits += 1;
                return Ok(line);
            }
            g.misses += 1;
        }
        let line = encode()?;
        if line.len() <= self.generation_budget {
            let name = Name {
                key: key.into(),
                kind,
                format: format.into(),
            };
            let mut g = self.lock();
            // The clock is read when a line is encoded, not at each of its watchers.
            g.last_used = Some(Instant::now());
            g.insert(revision, name, line.clone(), self.generation_budget);
        }
        Ok(line)
    }

    /// How many lines were found (encoded once, sent again) and how many were encoded, since the start.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        let g = self.lock();
        (g.hits, g.misses)
    }

    /// The bytes of the lines remembered.
    pub fn bytes(&self) -> usize {
        let g = self.lock();
        g.current_bytes + g.previous.values().flatten().map(|(_, l)| l.len()).sum::<usize>()
    }

    /// Forgets every line if none was encoded for `idle`; returns whether it did.
    pub fn forget_if_unused(&self, idle: Duration) -> bool {
        let mut g = self.lock();
        if g.last_used.is_some_and(|t| t.elapsed() < idle) || g.current.is_empty() && g.previous.is_empty() {
            return false;
        }
        g.current = Lines::default();
        g.previous = Lines::default();
        g.current_bytes = 0;
        true
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations> {
        self.generations.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Result<Bytes, ()> {
        Ok(Bytes::copy_from_slice(text.as_bytes()))
    }

    #[test]
    fn fanout_a_line_is_encoded_once_and_shared() {
        let memo = WatchEncodings::new(1 << 20);
        let first = memo
            .get_or_try_insert_with("/k/a", 5, "ADDED", "v1", || line("a5"))
            .unwrap();
        let again = memo
            .get_or_try_insert_with("/k/a", 5, "ADDED", "v1", || -> Result<Bytes, ()> {
                panic!("encoded twice")
            })
            .unwrap();
        assert_eq!(first, again);
        assert_eq!(first.as_ptr(), again.as_ptr(), "the same bytes, not a copy");
        assert_eq!(memo.hits_and_misses(), (1, 1));
    }

    #[test]
    fn fanout_lines_differ_by_revision_type_and_format() {
        let memo = WatchEncodings::new(1 << 20);
        let cases = [
            ("/k/a", 5, "ADDED", "v1"),
            ("/k/a", 6, "ADDED", "v1"),
            ("/k/a", 5, "DELETED", "v1"),
            ("/k/a", 5, "ADDED", "v2"),
            ("/k/b", 5, "ADDED", "v1"),
        ];
        for (key, rev, kind, format) in cases {
            let text = format!("{key} {rev} {kind} {format}");
            let got = memo
                .get_or_try_insert_with(key, rev, kind, format, || line(&text))
                .unwrap();
            assert_eq!(got, text.as_bytes());
        }
        for (key, rev, kind, format) in cases {
            let got = memo
                .get_or_try_insert_with(key, rev, kind, format, || line("wrong"))
                .unwrap();
            assert_eq!(got, format!("{key} {rev} {kind} {format}").as_bytes());
        }
    }

    #[test]
    fn fanout_memory_stays_within_the_budget() {
        let memo = WatchEncodings::new(10_000);
        let text = "x".repeat(1000);
        for rev in 0..100 {
            memo.get_or_try_insert_with("/k/a", rev, "MODIFIED", "v1", || line(&text))
                .unwrap();
            assert!(memo.bytes() <= 10_000, "{} bytes", memo.bytes());
        }
        // The most recent lines are still there.
        memo.get_or_try_insert_with("/k/a", 99, "MODIFIED", "v1", || line("again"))
            .unwrap();
        assert_eq!(memo.hits_and_misses().0, 1);
    }

    #[test]
    fn fanout_a_failed_encoding_is_not_remembered() {
        let memo = WatchEncodings::new(1 << 20);
        assert_eq!(
            memo.get_or_try_insert_with("/k/a", 1, "ADDED", "v1", || Err("no")),
            Err("no")
        );
        assert_eq!(
            memo.get_or_try_insert_with("/k/a", 1, "ADDED", "v1", || line("yes")),
            Ok(Bytes::from_static(b"yes"))
        );
    }

    #[test]
    fn fanout_an_idle_memo_is_emptied() {
        let memo = WatchEncodings::new(1 << 20);
        memo.get_or_try_insert_with("/k/a", 1, "ADDED", "v1", || line("a"))
            .unwrap();
        assert!(!memo.forget_if_unused(Duration::from_secs(60)));
        assert!(memo.forget_if_unused(Duration::ZERO));
        assert_eq!(memo.bytes(), 0);
    }
}
