//! A bounded memo of a plugin's conversions of stored objects.
//!
//! A stored object at a revision never changes, so its conversion to a version need not be computed twice: lists
//! and watches in a version other than the storage version (kubectl asks for the preferred version) would otherwise
//! call the plugin once per item, per request and per watcher. Conversions are assumed to be functions of the object
//! and the target version, as Kubernetes conversion webhooks are; the memo belongs to one loaded plugin, so a new
//! version of the plugin starts with an empty one.
//!
//! Two generations bound the memory: entries go into the current one; when it holds its share of the budget it
//! becomes the previous one (the older previous one is dropped), and a hit in the previous generation moves the
//! entry back into the current one. Recently used conversions stay; the memo never holds more than the budget,
//! counted as the stored objects' sizes.
//!
//! Keys are the server's storage keys: with one store per server, a key and a revision name one stored object.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

/// A stored object (by key and the revision its `resourceVersion` says) converted to a version.
type Key = (String, i64, String);

/// The memo. See the [module documentation](self).
pub struct ConversionMemo {
    /// The bytes each generation may hold.
    generation_budget: usize,
    generations: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    current: HashMap<Key, (Arc<Value>, usize)>,
    current_bytes: usize,
    previous: HashMap<Key, (Arc<Value>, usize)>,
}

impl ConversionMemo {
    /// A memo of at most `budget` bytes (0 disables it).
    pub fn new(budget: usize) -> ConversionMemo {
        ConversionMemo {
            generation_budget: budget / 2,
            generations: Mutex::default(),
        }
    }

    /// The conversion of the object stored under `key` at `revision` to `version`, if remembered.
    pub fn get(&self, key: &str, revision: i64, version: &str) -> Option<Value> {
        if self.generation_budget == 0 {
            return None;
        }
        let lookup = (key.to_owned(), revision, version.to_owned());
        let mut g = self.generations.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((value, _)) = g.current.get(&lookup) {
            return Some(Value::clone(value));
        }
        let (value, size) = g.previous.remove(&lookup)?;
        let out = Value::clone(&value);
        g.insert(lookup, value, size, self.generation_budget);
        Some(out)
    }

    /// Remembers `converted`, the conversion to `version` of the object stored under `key` at `revision`, whose
    /// stored form takes `size` bytes.
    pub fn insert(&self, key: &str, revision: i64, version: &str, converted: &Value, size: usize) {
        if self.generation_budget == 0 || size > self.generation_budget {
            return;
        }
        let mut g = self.generations.lock().unwrap_or_else(PoisonError::into_inner);
        g.insert(
            (key.to_owned(), revision, version.to_owned()),
            Arc::new(converted.clone()),
            size,
            self.generation_budget,
        );
    }

    /// How many conversions are remembered.
    pub fn len(&self) -> usize {
        let g = self.generations.lock().unwrap_or_else(PoisonError::into_inner);
        g.current.len() + g.previous.len()
    }

    /// Whether nothing is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Generations {
    fn insert(&mut self, key: Key, value: Arc<Value>, size: usize, budget: usize) {
        if self.current_bytes + size > budget {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
        }
        self.current_bytes += size;
        if let Some((_, old)) = self.current.insert(key, (value, size)) {
            self.current_bytes -= old;
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn remembers_by_key_revision_and_version() {
        let memo = ConversionMemo::new(1000);
        memo.insert("/a", 5, "v1", &json!({"v": 1}), 10);
        assert_eq!(memo.get("/a", 5, "v1"), Some(json!({"v": 1})));
        assert_eq!(memo.get("/a", 6, "v1"), None);
        assert_eq!(memo.get("/a", 5, "v2"), None);
        assert_eq!(memo.get("/b", 5, "v1"), None);
    }

    #[test]
    fn stays_within_its_budget_keeping_what_is_used() {
        // Generations of 100 bytes: ten 10-byte entries each.
        let memo = ConversionMemo::new(200);
        for i in 0..10 {
            memo.insert(&format!("/{i}"), 1, "v1", &json!(i), 10);
        }
        // The eleventh starts a new generation; the first ten are the previous one.
        memo.insert("/10", 1, "v1", &json!(10), 10);
        assert_eq!(memo.len(), 11);
        // Using /0 brings it into the current generation.
        assert_eq!(memo.get("/0", 1, "v1"), Some(json!(0)));
        for i in 11..20 {
            memo.insert(&format!("/{i}"), 1, "v1", &json!(i), 10);
        }
        // Filling the current generation again drops the oldest one; /0 survives, as it was used.
        memo.insert("/20", 1, "v1", &json!(20), 10);
        assert_eq!(memo.get("/0", 1, "v1"), Some(json!(0)));
        assert_eq!(memo.get("/1", 1, "v1"), None);
        assert!(memo.len() <= 20, "{}", memo.len());
    }

    #[test]
    fn a_zero_budget_or_an_oversized_object_is_not_remembered() {
        let off = ConversionMemo::new(0);
        off.insert("/a", 1, "v1", &json!(1), 1);
        assert_eq!(off.get("/a", 1, "v1"), None);
        let small = ConversionMemo::new(100);
        small.insert("/big", 1, "v1", &json!(1), 51);
        assert!(small.is_empty());
    }
}
