//! A bounded memo of a plugin's conversions of stored objects.
//!
//! A stored object at a revision never changes, so its conversion to a version need not be computed twice: lists
//! and watches in a version other than the storage version (kubectl asks for the preferred version) would otherwise
//! call the plugin once per item, per request and per watcher. Conversions are assumed to be functions of the object
//! and the target version, as Kubernetes conversion webhooks are; the memo belongs to one loaded plugin, so a new
//! version of the plugin starts with an empty one.
//!
//! Entries are kept as JSON text and parsed again when used (a few microseconds, against tens for a plugin call):
//! a parsed `serde_json::Value` takes about ten times the memory of its text. Two generations bound the memory:
//! entries go into the current one; when it holds its share of the budget it becomes the previous one (the older
//! previous one is dropped), and a hit in the previous generation moves the entry back into the current one.
//! Recently used conversions stay; the memo never holds more text than the budget.
//!
//! It holds one conversion per object and version: that of the newest revision seen. An update's conversion replaces
//! the previous revision's (which only a watch replaying history or a list at an old revision would ask for again,
//! and have converted anew), so that the memo grows with the objects, not with the writes: a 10-minute soak of
//! updates grew the server's memory steadily while each revision's conversion stayed until its generation was dropped.
//!
//! Keys are the server's storage keys: with one store per server, a key and a revision name one stored object.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

/// A stored object (by key) converted to a version.
type Key = (String, String);

/// A conversion: the revision of the object converted, and the converted object's JSON text.
type Entry = (i64, Arc<str>);

/// The memo. See the [module documentation](self).
pub struct ConversionMemo {
    /// The bytes each generation may hold.
    generation_budget: usize,
    generations: Mutex<Generations>,
}

#[derive(Default)]
struct Generations {
    current: HashMap<Key, Entry>,
    current_bytes: usize,
    previous: HashMap<Key, Entry>,
    /// When a conversion was last looked up or remembered.
    last_used: Option<std::time::Instant>,
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
        serde_json::from_str(&self.get_text(key, revision, version)?).ok()
    }

    /// The conversion of the object stored under `key` at `revision` to `version`, if remembered, as the JSON
    /// text it is kept as (shared, not copied): what a list writes as it is.
    pub fn get_text(&self, key: &str, revision: i64, version: &str) -> Option<Arc<str>> {
        if self.generation_budget == 0 {
            return None;
        }
        let lookup = (key.to_owned(), version.to_owned());
        let text = {
            let mut g = self.generations.lock().unwrap_or_else(PoisonError::into_inner);
            g.last_used = Some(std::time::Instant::now());
            match g.current.get(&lookup) {
                Some((r, text)) if *r == revision => text.clone(),
                Some(_) => return None,
                None => {
                    let (r, text) = g.previous.remove(&lookup).filter(|(r, _)| *r == revision)?;
                    g.insert(lookup, (r, text.clone()), self.generation_budget);
                    text
                }
            }
        };
        Some(text)
    }

    /// The remembered conversions to `version` of the objects stored under the keys at the revisions `objects`
    /// gives, as text, in order (`None` where not remembered): [`ConversionMemo::get_text`] for a whole list, with
    /// the lock taken once and no allocation per object.
    pub fn get_texts<'a>(
        &self,
        objects: impl IntoIterator<Item = (&'a str, i64)>,
        version: &str,
    ) -> Vec<Option<Arc<str>>> {
        let objects = objects.into_iter();
        if self.generation_budget == 0 {
            return objects.map(|_| None).collect();
        }
        let mut lookup: Key = (String::new(), version.to_owned());
        let mut g = self.generations.lock().unwrap_or_else(PoisonError::into_inner);
        g.last_used = Some(std::time::Instant::now());
        objects
            .map(|(key, revision)| {
                lookup.0.clear();
                lookup.0.push_str(key);
                match g.current.get(&lookup) {
                    Some((r, text)) if *r == revision => return Some(text.clone()),
                    Some(_) => return None,
                    None => {}
                }
                let (r, text) = g.previous.remove(&lookup).filter(|(r, _)| *r == revision)?;
                g.insert(lookup.clone(), (r, text.clone()), self.generation_budget);
                Some(text)
            })
            .collect()
    }

    /// Remembers `converted`, the conversion to `version` of the object stored under `key` at `revision`.
    pub fn insert(&self, key: &str, revision: i64, version: &str, converted: &Value) {
        if self.generation_budget == 0 {
            return;
        }
        let text: Arc<str> = converted.to_string().into();
        if text.len() > self.generation_budget {
            return;
        }
        let mut g = self.generations.lock().unwrap_or_else(PoisonError::into_inner);
        g.insert(
            (key.to_owned(), version.to_owned()),
            (revision, text),
            self.generation_budget,
        );
    }

    /// The remembered conversion to `version` of the object stored under `key` at `revision`, or `convert`'s
    /// result, remembered when it succeeds.
    pub fn get_or_insert_with<E>(
        &self,
        key: &str,
        revision: i64,
        version: &str,
        convert: impl FnOnce() -> Result<Value, E>,
    ) -> Result<Value, E> {
        if let Some(remembered) = self.get(key, revision, version) {
            return Ok(remembered);
        }
        let converted = convert()?;
        self.insert(key, revision, version, &converted);
        Ok(converted)
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

    /// Forgets every conversion if none was looked up or remembered for `idle` (its plugin is idle: the memory goes
    /// back); returns whether it did.
    pub fn forget_if_unused(&self, idle: std::time::Duration) -> bool {
        let mut g = self.generations.lock().unwrap_or_else(PoisonError::into_inner);
        if g.last_used.is_some_and(|t| t.elapsed() < idle) || g.current.is_empty() && g.previous.is_empty() {
            return false;
        }
        *g = Generations::default();
        true
    }
}

impl Generations {
    /// Remembers a conversion, unless one of a newer revision of the object is remembered: it replaces an older one.
    fn insert(&mut self, key: Key, entry: Entry, budget: usize) {
        self.last_used = Some(std::time::Instant::now());
        let newer = |e: Option<&Entry>| e.is_some_and(|(r, _)| *r > entry.0);
        if newer(self.current.get(&key)) || newer(self.previous.get(&key)) {
            return;
        }
        self.previous.remove(&key);
        let size = entry.1.len();
        if let Some((_, old)) = self.current.remove(&key) {
            self.current_bytes -= old.len();
        }
        if self.current_bytes + size > budget {
            self.previous = std::mem::take(&mut self.current);
            self.current_bytes = 0;
        }
        self.current_bytes += size;
        self.current.insert(key, entry);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn remembers_by_key_revision_and_version() {
        let memo = ConversionMemo::new(1000);
        memo.insert("/a", 5, "v1", &json!({"v": 1}));
        assert_eq!(memo.get("/a", 5, "v1"), Some(json!({"v": 1})));
        assert_eq!(memo.get("/a", 6, "v1"), None);
        assert_eq!(memo.get("/a", 5, "v2"), None);
        assert_eq!(memo.get("/b", 5, "v1"), None);

        // Converted once; a failure is not remembered.
        let mut calls = 0;
        for _ in 0..2 {
            let got = memo.get_or_insert_with("/c", 1, "v1", || {
                calls += 1;
                Ok::<_, ()>(json!("c"))
            });
            assert_eq!(got, Ok(json!("c")));
        }
        assert_eq!(calls, 1);
        assert_eq!(memo.get_or_insert_with("/d", 1, "v1", || Err("no")), Err("no"));
        assert_eq!(memo.get("/d", 1, "v1"), None);
    }

    #[test]
    fn holds_one_conversion_per_object_and_version_the_newest() {
        let memo = ConversionMemo::new(1000);
        for revision in 1..=50 {
            memo.insert("/a", revision, "v1", &json!({"rv": revision}));
        }
        memo.insert("/a", 50, "v2", &json!("v2"));
        assert_eq!(memo.len(), 2);
        assert_eq!(memo.get("/a", 50, "v1"), Some(json!({"rv": 50})));
        assert_eq!(memo.get("/a", 49, "v1"), None);
        // An older revision's conversion (a watch replaying history) does not replace the newest.
        memo.insert("/a", 3, "v1", &json!({"rv": 3}));
        assert_eq!(memo.get("/a", 50, "v1"), Some(json!({"rv": 50})));
        assert_eq!(memo.get("/a", 3, "v1"), None);
        assert_eq!(memo.len(), 2);
    }

    #[test]
    fn wire_list_texts_are_looked_up_together() {
        let memo = ConversionMemo::new(1000);
        memo.insert("/a", 5, "v1", &json!({"v": 1}));
        memo.insert("/b", 6, "v2", &json!({"v": 2}));
        let texts = memo.get_texts([("/a", 5), ("/b", 6), ("/a", 6), ("/c", 1)], "v1");
        assert_eq!(texts, [Some(Arc::from(r#"{"v":1}"#)), None, None, None]);
        assert_eq!(ConversionMemo::new(0).get_texts([("/a", 5)], "v1"), [None]);
    }

    #[test]
    fn stays_within_its_budget_keeping_what_is_used() {
        // Entries of 10 bytes of text, generations of 100 bytes: ten entries each.
        let entry = |i: usize| json!(format!("{i:08}"));
        assert_eq!(entry(0).to_string().len(), 10);
        let memo = ConversionMemo::new(200);
        for i in 0..10 {
            memo.insert(&format!("/{i}"), 1, "v1", &entry(i));
        }
        // The eleventh starts a new generation; the first ten are the previous one.
        memo.insert("/10", 1, "v1", &entry(10));
        assert_eq!(memo.len(), 11);
        // Using /0 brings it into the current generation.
        assert_eq!(memo.get("/0", 1, "v1"), Some(entry(0)));
        for i in 11..21 {
            memo.insert(&format!("/{i}"), 1, "v1", &entry(i));
        }
        // Filling the current generation again dropped the oldest one; /0 survived, as it was used.
        assert_eq!(memo.get("/0", 1, "v1"), Some(entry(0)));
        assert_eq!(memo.get("/1", 1, "v1"), None);
        assert!(memo.len() <= 20, "{}", memo.len());
    }

    #[test]
    fn a_zero_budget_or_an_oversized_object_is_not_remembered() {
        let off = ConversionMemo::new(0);
        off.insert("/a", 1, "v1", &json!(1));
        assert_eq!(off.get("/a", 1, "v1"), None);
        let small = ConversionMemo::new(20);
        small.insert("/big", 1, "v1", &json!("more than ten bytes"));
        assert!(small.is_empty());
    }

    /// Why entries are kept as text: the resident memory of parsed flunders per byte of their JSON.
    #[test]
    #[ignore = "measurement: run with --ignored --nocapture"]
    fn parsed_objects_take_several_times_their_text() {
        const OBJECTS: usize = 20_000;
        let texts: Vec<String> = (0..OBJECTS)
            .map(|i| {
                json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
                    "metadata": {"name": format!("flunder-{i:05}"), "namespace": "default",
                        "uid": format!("{:032x}", i * 7919), "resourceVersion": (1000 + i).to_string(),
                        "generation": 1, "creationTimestamp": "2026-11-23T02:49:08Z",
                        "labels": {"app": "demo", "tier": "backend"}},
                    "spec": {"flunderReference": format!("reference-{i}"), "referenceType": "Flunder"},
                    "status": {}})
                .to_string()
            })
            .collect();
        let json: usize = texts.iter().map(String::len).sum();
        let resident = || {
            let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
            statm
                .split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<usize>().ok())
                .unwrap_or(0)
                * 4096
        };
        let before = resident();
        let parsed: Vec<Value> = texts.iter().map(|t| serde_json::from_str(t).unwrap()).collect();
        let grown = resident().saturating_sub(before);
        println!(
            "{OBJECTS} objects of {} bytes of JSON: {} bytes resident each when parsed, {:.1}x",
            json / OBJECTS,
            grown / OBJECTS,
            grown as f64 / json as f64
        );
        assert_eq!(parsed.len(), OBJECTS);
    }
}
