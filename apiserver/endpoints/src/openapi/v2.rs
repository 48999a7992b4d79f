//! Swagger 2.0 specifics: converting v3 schemas the way kube-apiserver publishes custom resources in
//! `/openapi/v2`, and a minimal protobuf document for clients that only accept protobuf.

use serde_json::{json, Map, Value};

use super::{V2_REFS, V3_REFS};
use crate::discovery::KUBERNETES_VERSION;

/// A protobuf OpenAPI v2 document holding only `swagger` and `info`, for requests that accept nothing but
/// protobuf ([`super::OPENAPI_V2_PROTOBUF_ACCEPT`] or [`super::OPENAPI_V2_PROTOBUF_CONTENT_TYPE`]). kubectl
/// downloads it to validate `kind: List` files and kinds that have no PATCH operation in the v3 document; finding
/// no schema for a kind, it leaves validation to the server (which it asks for with `fieldValidation`).
pub fn openapi_v2_protobuf_stub() -> Vec<u8> {
    let (major, minor) = KUBERNETES_VERSION;
    let mut info = Vec::new();
    proto_string(&mut info, 1, "wasm-apiserver");
    proto_string(&mut info, 2, &format!("v{major}.{minor}.0"));
    let mut doc = Vec::new();
    proto_string(&mut doc, 1, "2.0");
    proto_bytes(&mut doc, 2, &info);
    doc
}

/// Converts a v3 schema to Swagger 2.0, as kube-apiserver publishes custom resources there: references point to
/// `#/definitions/`, a lone wrapped reference becomes a plain `$ref`, the junctors (`allOf`, `anyOf`, `oneOf`,
/// `not`) are dropped, `nullable` fields lose their type, and fields that preserve unknown fields lose their
/// properties, so that old clients do not reject what the server accepts.
pub(super) fn schema_v2(schema: &Value) -> Value {
    let Value::Object(obj) = schema else {
        return schema.clone();
    };
    if let Some([only]) = obj.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
        if let Some(Value::String(r)) = only.get("$ref") {
            let mut out = Map::new();
            out.insert("$ref".into(), json!(r.replacen(V3_REFS, V2_REFS, 1)));
            if let Some(d) = obj.get("description") {
                out.insert("description".into(), d.clone());
            }
            return Value::Object(out);
        }
    }
    let mut out = Map::new();
    for (key, value) in obj {
        let converted = match key.as_str() {
            "allOf" | "anyOf" | "oneOf" | "not" | "nullable" => continue,
            "$ref" => json!(value.as_str().unwrap_or_default().replacen(V3_REFS, V2_REFS, 1)),
            "properties" => match value {
                Value::Object(props) => Value::Object(props.iter().map(|(k, v)| (k.clone(), schema_v2(v))).collect()),
                other => other.clone(),
            },
            "items" | "additionalProperties" => schema_v2(value),
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    let preserve = flag(obj, "x-kubernetes-preserve-unknown-fields");
    if flag(obj, "nullable") || preserve {
        out.remove("items");
        out.remove("properties");
        if !preserve || out.get("type").and_then(Value::as_str) == Some("object") {
            out.remove("type");
        }
    }
    if out.get("type").and_then(Value::as_str) == Some("array") && !out.contains_key("items") {
        out.remove("type");
    }
    // A nullable property may be sent as null, which v2 clients would count as missing.
    if let (Some(Value::Object(props)), Some(Value::Array(required))) = (obj.get("properties"), out.get_mut("required"))
    {
        required.retain(|name| {
            !name
                .as_str()
                .and_then(|n| props.get(n))
                .and_then(Value::as_object)
                .is_some_and(|p| flag(p, "nullable"))
        });
    }
    Value::Object(out)
}

/// Whether a boolean keyword of a schema is true.
fn flag(schema: &Map<String, Value>, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn proto_string(out: &mut Vec<u8>, field: u32, value: &str) {
    proto_bytes(out, field, value.as_bytes());
}

/// Appends a length-delimited protobuf field.
fn proto_bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    proto_varint(out, u64::from(field << 3 | 2));
    proto_varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn proto_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_schema_drops_what_v2_clients_misread() {
        let v3 = json!({"type": "object", "required": ["a", "b"], "properties": {
            "a": {"type": "string", "nullable": true},
            "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"c": {"type": "string"}}},
            "d": {"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true},
            "nullable": {"type": "string"},
        }});
        let v2 = schema_v2(&v3);
        assert_eq!(v2["properties"]["a"], json!({}));
        assert_eq!(
            v2["properties"]["b"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(v2["properties"]["d"], json!({"x-kubernetes-int-or-string": true}));
        assert_eq!(v2["properties"]["nullable"], json!({"type": "string"}));
        assert_eq!(v2["required"], json!(["b"]));
    }

    #[test]
    fn protobuf_stub_is_a_document_with_swagger_and_info() {
        let bytes = openapi_v2_protobuf_stub();
        assert_eq!(&bytes[..5], b"\x0a\x032.0");
        assert_eq!(bytes[5], 0x12);
        assert_eq!(usize::from(bytes[6]), bytes.len() - 7);
        assert_eq!(&bytes[7..9], b"\x0a\x0e");
        assert_eq!(&bytes[9..23], b"wasm-apiserver");
    }
}
