//! Fuzz targets for the request path's decoders: request info from any path and query, request
//! bodies in every accepted content type, and continue tokens. The engine is [`crate::fuzzing`].

use std::collections::HashMap;

use base64::Engine as _;
use hyper::Method;

use crate::fuzzing::fuzz;
use crate::negotiate::decode_object;
use crate::request_info::{parse_query, RequestInfo};
use registry::store::{decode_continue, encode_continue};

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
