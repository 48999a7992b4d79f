//! Request bodies: decoded in every content type a client may send, and encoded back.

use crate::client_error;
use endpoints::negotiate::{decode_object, decode_yaml, encode, Encoding, Output};
use serde_json::{json, Value};

/// The Content-Types a request body may come with: the accepted ones, variants of them, and others.
const CONTENT_TYPES: [Option<&str>; 14] = [
    None,
    Some("application/json"),
    Some("application/yaml"),
    Some("application/json; charset=utf-8"),
    Some("APPLICATION/YAML;;;"),
    Some("application/x-yaml"),
    Some("text/yaml"),
    Some("application/vnd.kubernetes.protobuf"),
    Some("application/merge-patch+json"),
    Some("application/json-patch+json"),
    Some("application/strategic-merge-patch+json"),
    Some("application/apply-patch+yaml"),
    Some("text/plain"),
    Some(""),
];

/// The object patches are applied to.
pub(crate) fn current_object() -> Value {
    json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": "f1", "namespace": "default", "labels": {"a": "b"}, "finalizers": ["x"]},
        "spec": {"reference": "r", "list": [1, 2, {"k": "v"}]},
        "status": {}
    })
}

/// A request body: a Content-Type (the first byte), then the body. It decodes to an object (which encodes to
/// JSON and YAML that decode to it again) or is refused with a client error; patches apply or are refused so; a
/// body of DeleteOptions decodes to an object or is refused so.
pub fn request_body(data: &[u8]) {
    let Some((&c, body)) = data.split_first() else { return };
    let content_type = CONTENT_TYPES[c as usize % CONTENT_TYPES.len()];
    match decode_object(content_type, body) {
        Ok(value) => {
            assert!(value.is_object(), "{content_type:?}");
            let json = encode(Output::JSON, &value, false);
            let back: Value = serde_json::from_slice(&json).expect("the server's JSON decodes");
            assert_eq!(back, value, "{content_type:?}: JSON round trip");
            let yaml = encode(
                Output {
                    encoding: Encoding::Yaml,
                    table: None,
                },
                &value,
                false,
            );
            assert!(!yaml.is_empty(), "{value}: no YAML");
            match decode_yaml(&yaml) {
                Ok(back) => assert_eq!(back, value, "{content_type:?}: YAML round trip of {value}"),
                // Only what nests past the YAML parser's depth limit cannot be read back.
                Err(e) => assert!(depth(&value) > 100, "the server's YAML of {value} does not decode: {e}"),
            }
        }
        Err(e) => client_error(&e, "request body"),
    }
    // As for a built-in type, so that strategic merge patches are parsed and applied too.
    match endpoints::resource::parse_patch(content_type, body, true) {
        Ok(apply) => match apply(&current_object()) {
            Ok(_) => {}
            Err(e) => client_error(&e, "patch"),
        },
        Err(e) => client_error(&e, "patch body"),
    }
    match endpoints::resource::delete_options_body(body) {
        Ok(v) => assert!(v.is_object()),
        Err(e) => client_error(&e, "DeleteOptions"),
    }
}

/// How deep arrays and objects nest in a value.
fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}
