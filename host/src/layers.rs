//! The gate on the crate's layer order (see the crate documentation): every `.rs` file under `src/` is read, each
//! path to another top-level module (`crate::registry::..`, the items of a `use crate::{a::.., b::..}` group, and
//! `super::` paths that climb out of their top-level module) is an edge, and an edge to a module of a higher layer,
//! or to another module of the same layer, fails the test with its file, line and modules. Comments, doc comments,
//! strings and character literals are not code and are skipped; test code is code and is checked like the rest.

use std::path::{Path, PathBuf};

/// The top-level modules, bottom up: a module may use those of the layers below its own, never one of its own
/// layer or above. Keep in step with the list in the crate documentation (lib.rs).
const LAYERS: &[&[&str]] = &[
    &["authn"],
    &["rest"],
    &["builtin"],
    &["registry"],
    &["authz", "loader"],
    &["endpoints"],
    &["audit", "tenants"],
    &["server"],
    &["options", "kubeconfig", "scaffold"],
];

/// Files under `src/` that are not modules of the library: the binary's root (it reaches the library as
/// `wasm_apiserver::`, not `crate::`) and the sources `plugin new` writes out for a new plugin crate.
const NOT_LIBRARY: &[&str] = &["main.rs", "scaffold/templates/"];

/// One use of another top-level module.
#[derive(Debug)]
struct Edge {
    file: String,
    line: usize,
    from: String,
    to: String,
}

fn layer(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The source with comments, strings and character literals blanked out (newlines kept, so lines still count).
fn code_only(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut i = 0;
    while i < b.len() {
        let starts = |s: &str| b[i..].starts_with(s.as_bytes());
        if starts("//") {
            let end = b[i..].iter().position(|&c| c == b'\n').map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if starts("/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if (b[i] == b'r' || starts("br")) && (i == 0 || !ident(b[i - 1])) && raw_string_start(&b[i..]).is_some()
        {
            let (open, hashes) = raw_string_start(&b[i..]).unwrap();
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            let body = i + open;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            let end = (j + 1).min(b.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'\'' {
            // A character literal ('a', '\n', '\u{1F600}', '"'), not a lifetime ('a without a closing quote).
            let end = if b.get(i + 1) == Some(&b'\\') {
                b[i + 2..].iter().position(|&c| c == b'\'').map(|p| i + 2 + p + 1)
            } else {
                let len = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                (b.get(i + 1 + len) == Some(&b'\'')).then_some(i + 1 + len + 1)
            };
            match end {
                Some(end) => {
                    blank(&mut out, i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8(out).expect("blanking keeps UTF-8: only whole comments and literals are replaced")
}

/// For `r"`, `r#"`, `br##"`...: the length of the opening and the number of `#`.
fn raw_string_start(b: &[u8]) -> Option<(usize, usize)> {
    let mut i = if b.starts_with(b"br") { 2 } else { 1 };
    let hashes = b[i..].iter().take_while(|&&c| c == b'#').count();
    i += hashes;
    (b.get(i) == Some(&b'"')).then_some((i + 1, hashes))
}

/// A token: an identifier or keyword, `::`, or one punctuation character; with its line.
fn tokens(code: &str) -> Vec<(&str, usize)> {
    let mut out = Vec::new();
    let mut line = 1;
    let mut chars = code.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c == '\n' {
            line += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') {
                    break;
                }
                end = j + d.len_utf8();
                chars.next();
            }
            out.push((&code[i..end], line));
        } else if c == ':' && chars.peek().is_some_and(|&(_, d)| d == ':') {
            chars.next();
            out.push(("::", line));
        } else if !c.is_whitespace() {
            out.push((&code[i..i + c.len_utf8()], line));
        }
    }
    out
}

/// The module path of a file under `src/`: `registry/store/mod.rs` is `registry::store`, `tenants.rs` is `tenants`.
fn module_path(relative: &str) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|p| p == "mod" || p == "lib") {
        parts.pop();
    }
    parts
}

/// The top-level modules a path starting at `tokens[i]` reaches, when it starts at the crate root (`crate::`, or
/// enough `super::` to climb there from `module`); `module` is the module the path is written in.
fn targets(tokens: &[(&str, usize)], i: usize, module: &[String]) -> Vec<String> {
    let (root, mut j): (Vec<String>, usize) = match tokens[i].0 {
        "crate" => (Vec::new(), i + 1),
        "super" => {
            let mut path = module.to_vec();
            let mut j = i;
            while tokens.get(j).is_some_and(|t| t.0 == "super") && tokens.get(j + 1).is_some_and(|t| t.0 == "::") {
                path.pop();
                j += 2;
            }
            (path, j - 1)
        }
        _ => return Vec::new(),
    };
    if !root.is_empty() || tokens.get(j).is_none_or(|t| t.0 != "::") {
        // Within a top-level module, or `crate` not starting a path (`pub(crate)`).
        return match root.first() {
            Some(top) => vec![top.clone()],
            None => Vec::new(),
        };
    }
    j += 1;
    match tokens.get(j).map(|t| t.0) {
        Some("{") => group_heads(tokens, j),
        Some(name) if name.starts_with(|c: char| c.is_alphabetic() || c == '_') => vec![name.to_string()],
        _ => Vec::new(),
    }
}

/// The first segment of each item of the `{ .. }` group opening at `tokens[open]`.
fn group_heads(tokens: &[(&str, usize)], open: usize) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for &(t, _) in &tokens[open..] {
        match t {
            "{" => {
                depth += 1;
                if depth == 1 {
                    item_start = true;
                }
            }
            "}" => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            "," if depth == 1 => item_start = true,
            _ if item_start && depth == 1 => {
                if t != "self" && t.starts_with(|c: char| c.is_alphabetic() || c == '_') {
                    heads.push(t.to_string());
                }
                item_start = false;
            }
            _ => {}
        }
    }
    heads
}

/// Every use of another top-level module in one file (`relative` to `src/`).
fn edges(relative: &str, src: &str) -> Vec<Edge> {
    let code = code_only(src);
    let tokens = tokens(&code);
    let file_module = module_path(relative);
    let Some(from) = file_module.first().cloned() else {
        return Vec::new();
    };
    // The inline modules (`mod tests { .. }`) open at each brace depth, for `super::` paths written in them.
    let mut scopes: Vec<Option<String>> = Vec::new();
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        let (t, line) = tokens[i];
        match t {
            "{" => {
                let inline_mod = (i >= 2 && tokens[i - 2].0 == "mod").then(|| tokens[i - 1].0.to_string());
                scopes.push(inline_mod);
            }
            "}" => {
                scopes.pop();
            }
            "crate" | "super" if i == 0 || !matches!(tokens[i - 1].0, "::" | "$") => {
                let module: Vec<String> = file_module
                    .iter()
                    .cloned()
                    .chain(scopes.iter().flatten().cloned())
                    .collect();
                for to in targets(&tokens, i, &module) {
                    if to != from {
                        out.push(Edge {
                            file: relative.to_string(),
                            line,
                            from: from.clone(),
                            to,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn layers_import_only_downward() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    let mut downward = 0;
    for path in files {
        let relative = path.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if NOT_LIBRARY.iter().any(|p| relative.starts_with(p)) || relative == "lib.rs" || relative == "layers.rs" {
            continue;
        }
        let module = &module_path(&relative)[0];
        if layer(module).is_none() {
            problems.push(format!("src/{relative}: module `{module}` is in no layer"));
        }
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        for e in edges(&relative, &text) {
            match (layer(&e.from), layer(&e.to)) {
                (Some(from), Some(to)) if to < from => downward += 1,
                (None, _) => {}
                (_, None) => problems.push(format!("src/{}:{}: `{}` is in no layer", e.file, e.line, e.to)),
                (Some(from), Some(to)) => problems.push(format!(
                    "src/{}:{}: {} -> {} ({})",
                    e.file,
                    e.line,
                    e.from,
                    e.to,
                    if to == from { "same layer" } else { "upward" }
                )),
            }
        }
    }
    problems.dedup();
    // The walk found the crate: the registry alone uses storage in dozens of places.
    assert!(downward > 100, "only {downward} imports found under {}", src.display());
    assert!(
        problems.is_empty(),
        "{} imports break the layer order (see LAYERS in src/layers.rs):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn edges_are_found_in_code_only() {
    let src = r#"
//! See [`crate::server`].
use crate::{apimachinery::labels, storage::{self, Storage}};
use super::plugin::Plugin;
/* crate::endpoints in a comment */
fn f<'a>(x: &'a str) -> char {
    let _ = "crate::tenants in a string";
    let _ = r"crate::audit";
    crate::registry::strategy::name(x);
    '"'
}
pub(crate) fn g() {}
mod tests {
    use super::super::super::authz::Rbac;
}
"#;
    let found: Vec<(usize, String)> = edges("builtin/core.rs", src)
        .into_iter()
        .map(|e| (e.line, e.to))
        .collect();
    assert_eq!(
        found,
        [
            (3, "apimachinery".to_string()),
            (3, "storage".to_string()),
            (9, "registry".to_string()),
            (14, "authz".to_string())
        ]
    );
}
