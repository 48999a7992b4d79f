//! The fuzz targets on their seeds, the mutation engine on them where cargo-fuzz cannot run, and the request path's
//! decoders (request info, bodies, continue tokens) under the mutation engine.

use base64::Engine as _;
use endpoints::negotiate::decode_object;
use endpoints::request_info::{parse_query, RequestInfo};
use hyper::Method;
use registry::store::{decode_continue, encode_continue};
use std::collections::HashMap;
use std::path::PathBuf;

use super::*;
use crate::mutation::fuzz;

/// The seed directory of a target: `fuzz/seeds/<target>/` of the repository.
fn seeds_dir(target: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../seeds").join(target)
}

fn seeds(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = seeds_dir(target);
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().expect("a name").to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("readable"))
        })
        .collect();
    out.sort();
    out
}

/// Every target passes on its seeds: the examples it starts from and the inputs of the bugs it found.
#[test]
fn fuzz_targets_pass_on_their_seeds() {
    for (target, body) in TARGETS {
        let seeds = seeds(target);
        assert!(!seeds.is_empty(), "{target} has no seeds");
        for (name, input) in seeds {
            let ran = std::panic::catch_unwind(|| body(&input));
            assert!(ran.is_ok(), "fuzz target {target} fails on its seed {name}");
        }
    }
}

/// The fuzz targets on stable Rust: seeded mutations of their seeds ([`crate::mutation`]), for
/// where cargo-fuzz cannot run (no nightly toolchain). `FUZZ_SECONDS` bounds each target's time.
#[test]
#[ignore = "run by scripts/test.sh when cargo-fuzz cannot be used"]
fn fuzz_targets_on_mutated_seeds() {
    for (target, body) in TARGETS {
        let seeds: Vec<String> = seeds(target)
            .into_iter()
            .map(|(_, input)| String::from_utf8_lossy(&input).into_owned())
            .collect();
        let corpus: Vec<&str> = seeds.iter().map(String::as_str).collect();
        fuzz(target, &corpus, body);
    }
}

/// A target's checks are real: they fail on an input that breaks what they check.
#[test]
fn a_target_fails_on_a_broken_property() {
    // A Status error without a message breaks `status_holds`.
    let broken = std::panic::catch_unwind(|| status_holds(&ApiError::new(400, "BadRequest", "")));
    assert!(broken.is_err());
}

#[test]
fn fuzz_request_info_and_query() {
    let corpus = [
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/f1",
        "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders/f1/status",
        "/api/v1/namespaces/kube-system",
        "/tenants/t1/apis/wardle.example.com/v1beta1/fischers?watch=true&labelSelector=a%3Db",
        "/apis/wardle.example.com/v1alpha1/watch/namespaces/default/flunders?resourceVersion=0",
        "/openapi/v3/apis/wardle.example.com/v1alpha1?timeout=32s",
        "/healthz/ping",
    ];
    let methods = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
    ];
    let mut n = 0;
    fuzz("request info", &corpus, |input| {
        let text = String::from_utf8_lossy(input);
        let (path, query) = text.split_once('?').map_or((&*text, None), |(p, q)| (p, Some(q)));
        let query: HashMap<String, String> = parse_query(query);
        n += 1;
        let info = RequestInfo::resolve(&methods[n % methods.len()], path, &query);
        // A tenant's prefix is taken off the path; any other path is kept as it came.
        match &info.tenant {
            Some(_) => assert!(info.path.starts_with('/'), "{path:?} -> {:?}", info.path),
            None => assert_eq!(info.path, path),
        }
    });
}

#[test]
fn fuzz_request_bodies() {
    let corpus = [
        r#"{"apiVersion":"wardle.example.com/v1alpha1","kind":"Flunder","metadata":{"name":"f1","labels":{"a":"b"}},"spec":{"reference":"x"}}"#,
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: n1\n  annotations: {a: b}\n",
        "a: &x [1, 2]\nb: *x\nc: !!binary aGk=\nd: 1e999999\ne: 123456789012345678901234567890\n",
        r#"[{"op":"add","path":"/metadata/labels/a","value":"b"}]"#,
        "{}",
    ];
    let content_types = [
        None,
        Some("application/json"),
        Some("application/yaml"),
        Some("application/json; charset=utf-8"),
        Some("application/vnd.kubernetes.protobuf"),
        Some("text/plain"),
        Some("application/yaml;;;"),
    ];
    let mut n = 0;
    fuzz("request bodies", &corpus, |body| {
        n += 1;
        let content_type = content_types[n % content_types.len()];
        match decode_object(content_type, body) {
            Ok(value) => assert!(value.is_object()),
            Err(e) => assert!(
                (400..500).contains(&e.code),
                "{content_type:?}: a {} for a bad body: {e:?}",
                e.code
            ),
        }
    });
}

#[test]
fn fuzz_continue_tokens() {
    let valid = encode_continue(42, "/registry/wardle.example.com/flunders/default/f1");
    let plain = r#"{"v":"meta.k8s.io/v1","rv":-1,"start":"x"}"#;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(plain);
    let corpus = [valid.as_str(), encoded.as_str(), plain, "e30", ""];
    fuzz("continue tokens", &corpus, |input| {
        let text = String::from_utf8_lossy(input);
        match decode_continue(&text) {
            // A token that decodes encodes back to one that decodes the same.
            Ok((rv, start)) => assert_eq!(decode_continue(&encode_continue(rv, &start)).ok(), Some((rv, start))),
            Err(e) => assert_eq!(e.code, 400, "{e:?}"),
        }
        // Tokens made from the JSON text as a key round-trip too.
        let token = encode_continue(7, &text);
        assert_eq!(decode_continue(&token).ok(), Some((7, text.to_string())));
    });
}
