//! `pattern` as kube-openapi matches it: Go's `regexp` (RE2 syntax, unanchored search), here on the `regex` crate,
//! which implements the same RE2 family of syntax and semantics (no look-around, no backreferences, linear time).
//!
//! The two differ in a few places; [`translate`] rewrites a Go pattern so that the `regex` crate reads it as Go does:
//! - `\d`, `\w`, `\s`, `\b` and `\B` are ASCII-only in Go and Unicode-aware in `regex`; they become explicit ASCII
//!   classes (`\s` is Go's `[\t\n\f\r ]`, without `\v`).
//! - `\Q...\E` (a literal text) is Go-only; it becomes the escaped text.
//! - `\<` and `\>` are literal `<` and `>` in Go but word boundaries in `regex`.
//! - A brace that does not start a repetition (`x{,3}`, `{a}`) is a literal in Go; it is escaped.
//! - Inside a class, `[` is a literal in Go but opens a nested class in `regex`, and `&&` and `~~` are literals in Go
//!   but set operations in `regex`; they are escaped.
//!
//! Left as they are (rare in schemas): repetition counts above 1000 (an error in Go, allowed here), `--` in a class
//! (a range ending in `-` in Go, a set difference in `regex`), `\C`, and the reason given for an invalid pattern
//! (`error parsing regexp: unclosed group` where Go says `error parsing regexp: missing closing ): `(``).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, PoisonError};

use regex::Regex;

/// The most compiled patterns kept; past that the cache starts over (kube-openapi keeps every pattern it has seen).
const CACHE_LIMIT: usize = 512;

static CACHE: LazyLock<Mutex<HashMap<String, Result<Regex, String>>>> = LazyLock::new(Mutex::default);

/// The compiled form of a Go pattern, or the reason it does not compile. Compiled patterns are cached.
pub(super) fn compile(pattern: &str) -> Result<Regex, String> {
    let mut cache = CACHE.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = cache.get(pattern) {
        return found.clone();
    }
    let compiled = Regex::new(&translate(pattern)).map_err(|e| {
        let reason = match e {
            regex::Error::Syntax(text) => {
                let last = text.lines().last().unwrap_or_default().trim();
                last.strip_prefix("error: ").unwrap_or(last).to_string()
            }
            other => other.to_string(),
        };
        format!("error parsing regexp: {reason}")
    });
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    cache.insert(pattern.to_string(), compiled.clone());
    compiled
}

/// Go's ASCII classes, as the body of a class (`[...]`).
fn ascii_class(c: char) -> Option<&'static str> {
    match c {
        'd' | 'D' => Some("0-9"),
        'w' | 'W' => Some("0-9A-Za-z_"),
        's' | 'S' => Some("\\t\\n\\x0C\\r "),
        _ => None,
    }
}

/// Rewrites a Go (RE2) pattern for the `regex` crate (see the module documentation).
pub(super) fn translate(pattern: &str) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                let next = chars[i + 1];
                i += 2;
                match next {
                    'd' | 'w' | 's' => out.push_str(&format!("[{}]", ascii_class(next).unwrap_or_default())),
                    'D' | 'W' | 'S' => out.push_str(&format!("[^{}]", ascii_class(next).unwrap_or_default())),
                    'b' => out.push_str("(?-u:\\b)"),
                    'B' => out.push_str("(?-u:\\B)"),
                    '<' | '>' => out.push(next),
                    'Q' => {
                        let rest: String = chars[i..].iter().collect();
                        let (literal, after) = match rest.find("\\E") {
                            Some(end) => (rest[..end].to_string(), end + 2),
                            None => (rest.clone(), rest.len()),
                        };
                        out.push_str(&regex::escape(&literal));
                        i += rest[..after].chars().count();
                    }
                    other => {
                        out.push('\\');
                        out.push(other);
                        // \p{Greek}, \x{263a}: the braces belong to the escape.
                        if matches!(other, 'p' | 'P' | 'x') && chars.get(i) == Some(&'{') {
                            while i < chars.len() {
                                out.push(chars[i]);
                                i += 1;
                                if chars[i - 1] == '}' {
                                    break;
                                }
                            }
                        }
                    }
                }
            }
            '[' => {
                i = translate_class(&chars, i, &mut out);
            }
            '{' => match repeat_len(&chars[i..]) {
                // A repetition such as {2}, {2,} or {2,5}.
                Some(len) => {
                    out.extend(&chars[i..i + len]);
                    i += len;
                }
                // Go reads any other brace as a literal.
                None => {
                    out.push_str("\\{");
                    i += 1;
                }
            },
            '}' => {
                out.push_str("\\}");
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

/// The length of a Go repetition (`{n}`, `{n,}` or `{n,m}`) at the start of `chars`, if there is one there.
fn repeat_len(chars: &[char]) -> Option<usize> {
    let digits = |from: usize| chars[from..].iter().take_while(|c| c.is_ascii_digit()).count();
    let min = digits(1);
    if min == 0 {
        return None;
    }
    let mut i = 1 + min;
    if chars.get(i) == Some(&',') {
        i += 1 + digits(i + 1);
    }
    (chars.get(i) == Some(&'}')).then_some(i + 1)
}

/// Copies the class starting at `chars[start]` (a `[`), returning the index after it.
fn translate_class(chars: &[char], start: usize, out: &mut String) -> usize {
    let mut i = start + 1;
    out.push('[');
    if chars.get(i) == Some(&'^') {
        out.push('^');
        i += 1;
    }
    // A `]` first in the class is a literal.
    if chars.get(i) == Some(&']') {
        out.push_str("\\]");
        i += 1;
    }
    while i < chars.len() {
        let c = chars[i];
        match c {
            ']' => {
                out.push(']');
                return i + 1;
            }
            '[' if chars.get(i + 1) == Some(&':') => {
                // A POSIX class such as [:alpha:], copied as it is.
                let rest: String = chars[i..].iter().collect();
                match rest.find(":]") {
                    Some(end) => {
                        out.push_str(&rest[..end + 2]);
                        i += rest[..end + 2].chars().count();
                    }
                    None => {
                        out.push_str("\\[");
                        i += 1;
                    }
                }
            }
            '[' | '&' | '~' => {
                out.push('\\');
                out.push(c);
                i += 1;
            }
            '\\' if i + 1 < chars.len() => {
                let next = chars[i + 1];
                i += 2;
                match next {
                    'd' | 'w' | 's' => out.push_str(ascii_class(next).unwrap_or_default()),
                    'D' | 'W' | 'S' => out.push_str(&format!("[^{}]", ascii_class(next).unwrap_or_default())),
                    other => {
                        out.push('\\');
                        out.push(other);
                    }
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    i
}
