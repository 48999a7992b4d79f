//! Where an object's `metadata.resourceVersion` goes in its stored JSON.
//!
//! Objects are stored without `metadata.resourceVersion`: it is the storage revision, set on the way out. A list
//! written from the stored bytes (see `endpoints::wire_list`) splices `"resourceVersion":"<revision>"` into each
//! object instead of parsing and serializing it again. The cache finds the place once, when an object enters it, and
//! keeps it beside the object (a few bytes, not a second copy of the JSON).
//!
//! The place is found only in the form the server itself stores, `serde_json`'s compact output of a
//! `serde_json::Value`: valid JSON whose object keys are unique and in byte order, so that `resourceVersion` goes
//! right where serializing the object with it would put it, and the spliced bytes equal what parsing, setting the
//! resourceVersion and serializing produce. Anything else (whitespace, escaped keys, a `resourceVersion` already
//! there, no `metadata` object, invalid JSON) has no place, and is written the slow way.

use serde::de::IgnoredAny;

/// The key spliced in.
const KEY: &[u8] = b"resourceVersion";

/// Where and how `"resourceVersion":"<revision>"` is spliced into an object's stored JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Splice {
    /// The byte offset to insert at.
    at: u32,
    /// What separates the inserted member from its neighbours.
    comma: Comma,
    /// Where the metadata object begins (its `{`) and ends (after its `}`).
    metadata: (u32, u32),
}

/// Where the comma goes around a spliced member.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Comma {
    /// Another member follows: `"resourceVersion":"1",`.
    After,
    /// It is the last of several members: `,"resourceVersion":"1"`.
    Before,
    /// It is the only member.
    None,
}

impl Splice {
    /// The place in `json`, an object's stored JSON, or `None` when it is not in the stored form (see the
    /// [module documentation](self)).
    pub fn locate(json: &[u8]) -> Option<Splice> {
        if json.len() > u32::MAX as usize || serde_json::from_slice::<IgnoredAny>(json).is_err() {
            return None;
        }
        let mut scan = Scanner { json, at: 0 };
        let mut found = None;
        scan.object(|scan, key| {
            if key == b"metadata" {
                found = Some(scan.metadata()?);
                Some(())
            } else {
                scan.value()
            }
        })?;
        if scan.at != json.len() {
            return None;
        }
        found
    }

    /// The length of `json` (`json_len` bytes) with a resourceVersion of `rv_len` bytes spliced in.
    pub fn spliced_len(&self, json_len: usize, rv_len: usize) -> usize {
        // `"resourceVersion":"` and `"`, and the comma.
        json_len + KEY.len() + 5 + rv_len + usize::from(self.comma != Comma::None)
    }

    /// Writes `json` (the object's stored JSON, as given to [`Splice::locate`]) to `out` with
    /// `"resourceVersion":"<rv>"` spliced in (`rv`: decimal digits).
    pub fn write(&self, json: &[u8], rv: &[u8], out: &mut Vec<u8>) {
        let at = self.at as usize;
        out.extend_from_slice(&json[..at]);
        if self.comma == Comma::Before {
            out.push(b',');
        }
        out.extend_from_slice(b"\"resourceVersion\":\"");
        out.extend_from_slice(rv);
        out.push(b'"');
        if self.comma == Comma::After {
            out.push(b',');
        }
        out.extend_from_slice(&json[at..]);
    }

    /// Writes the metadata object of `json` (the object's stored JSON, as given to [`Splice::locate`]) to `out`
    /// with `"resourceVersion":"<rv>"` spliced in.
    pub fn write_metadata(&self, json: &[u8], rv: &[u8], out: &mut Vec<u8>) {
        let (start, end) = (self.metadata.0 as usize, self.metadata.1 as usize);
        let inner = Splice {
            at: self.at - self.metadata.0,
            ..*self
        };
        inner.write(&json[start..end], rv, out);
    }
}

/// A cursor over JSON already known to be valid, that gives up (`None`) on anything but the stored form.
struct Scanner<'a> {
    json: &'a [u8],
    at: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.json.get(self.at).copied()
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        (self.peek()? == byte).then(|| self.at += 1)
    }

    /// Walks an object whose keys are plain (no escapes), unique and in byte order, calling `member` with the
    /// cursor on each value, which it must skip.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<()> {
        self.expect(b'{')?;
        if self.peek()? == b'}' {
            self.at += 1;
            return Some(());
        }
        let mut previous: Option<&[u8]> = None;
        loop {
            let key = self.plain_key()?;
            if previous.is_some_and(|p| p >= key) {
                return None;
            }
            previous = Some(key);
            self.expect(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Skips the metadata object; returns where `resourceVersion` goes in it: before the first key after it in
    /// byte order, or last.
    fn metadata(&mut self) -> Option<Splice> {
        let start = self.at;
        let mut splice = self.metadata_splice()?;
        splice.metadata = (u32::try_from(start).ok()?, u32::try_from(self.at).ok()?);
        Some(splice)
    }

    /// [`Scanner::metadata`], but the metadata's span.
    fn metadata_splice(&mut self) -> Option<Splice> {
        let mut found: Option<Splice> = None;
        let mut members = 0;
        self.object(|scan, key| {
            members += 1;
            if key == KEY {
                return None;
            }
            if found.is_none() && key > KEY {
                // At the key's opening quote: the cursor is after `"<key>":`.
                found = Some(Splice {
                    at: u32::try_from(scan.at - key.len() - 3).ok()?,
                    comma: Comma::After,
                    metadata: (0, 0),
                });
            }
            scan.value()
        })?;
        if let Some(found) = found {
            return Some(found);
        }
        // Before the closing brace.
        Some(Splice {
            at: u32::try_from(self.at - 1).ok()?,
            comma: if members == 0 { Comma::None } else { Comma::Before },
            metadata: (0, 0),
        })
    }

    /// A string without escapes, as a key; the cursor moves past it.
    fn plain_key(&mut self) -> Option<&'a [u8]> {
        self.expect(b'"')?;
        let start = self.at;
        let len = self.json[start..].iter().position(|&b| b == b'"' || b == b'\\')?;
        if self.json[start + len] != b'"' {
            return None;
        }
        self.at = start + len + 1;
        Some(&self.json[start..start + len])
    }

    /// Skips a string (escapes allowed).
    fn string(&mut self) -> Option<()> {
        self.expect(b'"')?;
        loop {
            let len = self.json[self.at..].iter().position(|&b| b == b'"' || b == b'\\')?;
            self.at += len + 1;
            if self.json[self.at - 1] == b'"' {
                return Some(());
            }
            // A backslash: skip the escaped byte (a `u` escape's hex digits are plain bytes).
            self.at += 1;
        }
    }

    /// Skips one value.
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'{' => self.object(|scan, _| scan.value()),
            b'[' => {
                self.at += 1;
                if self.peek()? == b']' {
                    self.at += 1;
                    return Some(());
                }
                loop {
                    self.value()?;
                    match self.peek()? {
                        b',' => self.at += 1,
                        b']' => {
                            self.at += 1;
                            return Some(());
                        }
                        _ => return None,
                    }
                }
            }
            b'"' => self.string(),
            // Numbers, true, false, null: up to the next delimiter (whitespace is not in the stored form).
            _ => {
                let len = self.json[self.at..]
                    .iter()
                    .position(|&b| matches!(b, b',' | b'}' | b']'))
                    .unwrap_or(self.json.len() - self.at);
                if len == 0 || self.json[self.at..self.at + len].iter().any(u8::is_ascii_whitespace) {
                    return None;
                }
                self.at += len;
                Some(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;

    /// The stored form of `obj` (no resourceVersion), spliced, against `obj` with its resourceVersion serialized.
    fn assert_splices(obj: Value) {
        let stored = serde_json::to_vec(&obj).unwrap();
        let splice = Splice::locate(&stored).unwrap_or_else(|| panic!("no place in {obj}"));
        let mut spliced = Vec::new();
        splice.write(&stored, b"12345", &mut spliced);
        let mut expected = obj.clone();
        expected["metadata"]["resourceVersion"] = json!("12345");
        assert_eq!(
            String::from_utf8_lossy(&spliced),
            serde_json::to_string(&expected).unwrap(),
            "{obj}"
        );
        assert_eq!(splice.spliced_len(stored.len(), 5), spliced.len());
        let mut metadata = Vec::new();
        splice.write_metadata(&stored, b"12345", &mut metadata);
        assert_eq!(
            String::from_utf8_lossy(&metadata),
            serde_json::to_string(&expected["metadata"]).unwrap(),
            "{obj}"
        );
    }

    #[test]
    fn wire_list_splice_gives_the_serialized_bytes() {
        assert_splices(json!({"metadata": {}}));
        assert_splices(json!({"metadata": {"name": "a"}}));
        assert_splices(json!({"metadata": {"uid": "u"}}));
        assert_splices(json!({"metadata": {"name": "a", "uid": "u"}, "spec": [1, 2.5, null, true, {"b": []}]}));
        assert_splices(json!({
            "apiVersion": "shop.example.com/v1", "kind": "Gadget",
            "metadata": {
                "annotations": {"note": "}{\"resourceVersion\":\"1\",\\", "z": "\u{1}é✓"},
                "creationTimestamp": "2026-11-26T00:00:00Z",
                "finalizers": ["a/b"],
                "generation": 1,
                "labels": {"app": "shop"},
                "managedFields": [{"apiVersion": "shop.example.com/v1", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {}},
                    "manager": "kubectl", "operation": "Update", "time": "2026-11-26T00:00:00Z"}],
                "name": "g", "namespace": "a",
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "1"}],
                "uid": "1234"
            },
            "spec": {"resourceVersion": "not this one", "n": -1.5e-7},
            "status": {}
        }));
    }

    #[test]
    fn wire_list_splice_refuses_what_is_not_the_stored_form() {
        for text in [
            r#"{ "metadata": {"name": "a"} }"#,
            r#"{"metadata":{"name":"a", "uid":"b"}}"#,
            r#"{"metadata":{"uid":"b","name":"a"}}"#,
            r#"{"metadata":{"name":"a","name":"b"}}"#,
            r#"{"metadata":{"na\u006de":"a"}}"#,
            r#"{"metadata":{"name":"a","resourceVersion":"1"}}"#,
            r#"{"spec":{},"metadata":{}}"#,
            r#"{"metadata":{"name":"a"},"metadata":{}}"#,
            r#"{"metadata":"a"}"#,
            r#"{"spec":{}}"#,
            r#"{"metadata":{"name":"a"}"#,
            r#"{"metadata":{"name":"a"}}x"#,
            r#"[{"metadata":{}}]"#,
            r#"{"metadata":{"labels":{"b":"1","a":"2"}}}"#,
            "",
        ] {
            assert_eq!(Splice::locate(text.as_bytes()), None, "{text}");
        }
    }
}
