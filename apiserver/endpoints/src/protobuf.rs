//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for the built-in types,
//! decoded to JSON. kubectl's typed clients (`kubectl create namespace`, `create rolebinding`, `auth can-i`,
//! `auth whoami`) and client-go's (kube's controllers, Kubernetes' e2e tests: FlowSchemas, webhooks, policies)
//! send their bodies this way and do not fall back to JSON.
//!
//! The body is the 4-byte magic `k8s\0` and a `runtime.Unknown` {typeMeta, raw}; `raw` is the object's message,
//! decoded with a table of its fields (numbers from k8s.io/api's `generated.proto`) into the JSON kube would take.

use serde_json::{json, Map, Value};

use apimachinery::status::ApiError;
use types::{message_of, TYPE_META};

mod types;

/// The media type.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// How a field is decoded.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    String,
    Bool,
    Int,
    Time,
    /// meta/v1 `MicroTime`: a time to the microsecond.
    MicroTime,
    Strings,
    StringMap,
    /// `map<string, bytes>`, as JSON `{key: base64}`.
    BytesMap,
    /// `bytes`, as JSON base64.
    Bytes,
    /// An embedded struct (Go's `json:",inline"` or `json:""`): its fields are the parent's in JSON.
    Inline(&'static [Field]),
    Message(&'static [Field]),
    Messages(&'static [Field]),
    /// `map<string, ExtraValue>` (ExtraValue: `repeated string items = 1`), as JSON `{key: [values]}`.
    ExtraMap,
    /// `map<string, resource.Quantity>` (Quantity: `string string = 1`), as JSON `{key: "quantity"}`.
    QuantityMap,
}

/// One field of a message: its number, JSON name and kind.
pub(super) type Field = (u32, &'static str, Kind);

/// A protobuf wire-format reader.
struct Reader<'a> {
    bytes: &'a [u8],
}

/// A field's value on the wire.
enum Wire<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
}

fn malformed() -> ApiError {
    ApiError::bad_request("the protobuf body is malformed")
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, ApiError> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.bytes.split_first().ok_or_else(malformed)?;
            self.bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed())
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ApiError> {
        if n > self.bytes.len() {
            return Err(malformed());
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }

    /// The next field: its number and value; fixed-width fields are skipped (no field here uses them).
    fn field(&mut self) -> Result<Option<(u32, Option<Wire<'a>>)>, ApiError> {
        if self.bytes.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let number = u32::try_from(key >> 3).map_err(|_| malformed())?;
        let value = match key & 7 {
            0 => Some(Wire::Varint(self.varint()?)),
            1 => {
                self.take(8)?;
                None
            }
            2 => {
                let len = usize::try_from(self.varint()?).map_err(|_| malformed())?;
                Some(Wire::Bytes(self.take(len)?))
            }
            5 => {
                self.take(4)?;
                None
            }
            _ => return Err(malformed()),
        };
        Ok(Some((number, value)))
    }
}

fn text(bytes: &[u8]) -> Result<String, ApiError> {
    String::from_utf8(bytes.to_vec()).map_err(|_| ApiError::bad_request("a protobuf string is not UTF-8"))
}

/// A map entry (`key = 1`, `value = 2`).
fn entry(bytes: &[u8]) -> Result<(String, &[u8]), ApiError> {
    let mut r = Reader { bytes };
    let (mut key, mut value): (String, &[u8]) = (String::new(), &[]);
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (1, Some(Wire::Bytes(b))) => key = text(b)?,
            (2, Some(Wire::Bytes(b))) => value = b,
            _ => {}
        }
    }
    Ok((key, value))
}

/// A meta/v1 Time (to the second) or MicroTime (`micro`: to the microsecond, as its JSON has it); `None` for the zero
/// time, written as an empty message (its Size is 0), which JSON leaves out.
fn time(bytes: &[u8], micro: bool) -> Result<Option<Value>, ApiError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let mut r = Reader { bytes };
    let (mut seconds, mut nanos) = (0i64, 0u32);
    while let Some((n, v)) = r.field()? {
        match (n, v) {
            (1, Some(Wire::Varint(s))) => seconds = s as i64,
            (2, Some(Wire::Varint(n))) if micro => nanos = u32::try_from(n).map_err(|_| malformed())?,
            _ => {}
        }
    }
    let t = chrono::DateTime::from_timestamp(seconds, nanos).ok_or_else(malformed)?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Ok(Some(json!(t.format(format).to_string())))
}

/// Decodes a message with its field table.
fn message(bytes: &[u8], fields: &[Field]) -> Result<Value, ApiError> {
    let mut out = Map::new();
    let mut r = Reader { bytes };
    while let Some((number, wire)) = r.field()? {
        let Some(&(_, name, kind)) = fields.iter().find(|f| f.0 == number) else {
            continue;
        };
        let Some(wire) = wire else {
            continue;
        };
        match (kind, wire) {
            (Kind::String, Wire::Bytes(b)) => {
                out.insert(name.into(), json!(text(b)?));
            }
            (Kind::Bool, Wire::Varint(v)) => {
                out.insert(name.into(), json!(v != 0));
            }
            (Kind::Int, Wire::Varint(v)) => {
                out.insert(name.into(), json!(v as i64));
            }
            (Kind::Time, Wire::Bytes(b)) => {
                if let Some(t) = time(b, false)? {
                    out.insert(name.into(), t);
                }
            }
            (Kind::MicroTime, Wire::Bytes(b)) => {
                if let Some(t) = time(b, true)? {
                    out.insert(name.into(), t);
                }
            }
            (Kind::Strings, Wire::Bytes(b)) => {
                let list = out.entry(name).or_insert_with(|| json!([]));
                if let Some(a) = list.as_array_mut() {
                    a.push(json!(text(b)?));
                }
            }
            (Kind::StringMap, Wire::Bytes(b)) => {
                let (k, v) = entry(b)?;
                let map = out.entry(name).or_insert_with(|| json!({}));
                map[k] = json!(text(v)?);
            }
            (Kind::BytesMap, Wire::Bytes(b)) => {
                use base64::Engine as _;
                let (k, v) = entry(b)?;
                let map = out.entry(name).or_insert_with(|| json!({}));
                map[k] = json!(base64::engine::general_purpose::STANDARD.encode(v));
            }
            (Kind::ExtraMap, Wire::Bytes(b)) => {
                let (k, v) = entry(b)?;
                let items = message(v, &[(1, "items", Kind::Strings)])?;
                let map = out.entry(name).or_insert_with(|| json!({}));
                map[k] = items.get("items").cloned().unwrap_or_else(|| json!([]));
            }
            (Kind::QuantityMap, Wire::Bytes(b)) => {
                let (k, v) = entry(b)?;
                let quantity = message(v, &[(1, "string", Kind::String)])?;
                let map = out.entry(name).or_insert_with(|| json!({}));
                map[k] = quantity.get("string").cloned().unwrap_or_else(|| json!("0"));
            }
            (Kind::Bytes, Wire::Bytes(b)) => {
                use base64::Engine as _;
                out.insert(name.into(), json!(base64::engine::general_purpose::STANDARD.encode(b)));
            }
            (Kind::Message(inner), Wire::Bytes(b)) => {
                out.insert(name.into(), message(b, inner)?);
            }
            (Kind::Inline(inner), Wire::Bytes(b)) => {
                if let Value::Object(fields) = message(b, inner)? {
                    out.extend(fields);
                }
            }
            (Kind::Messages(inner), Wire::Bytes(b)) => {
                let item = message(b, inner)?;
                let list = out.entry(name).or_insert_with(|| json!([]));
                if let Some(a) = list.as_array_mut() {
                    a.push(item);
                }
            }
            _ => return Err(malformed()),
        }
    }
    Ok(Value::Object(out))
}

/// Decodes a protobuf request body into the JSON object it encodes. Kinds other than the built-in ones the host
/// serves answer 415, naming the media types that work.
pub fn decode(body: &[u8]) -> Result<Value, ApiError> {
    let rest = body
        .strip_prefix(MAGIC)
        .ok_or_else(|| ApiError::bad_request("the protobuf body does not start with the Kubernetes magic number"))?;
    let mut r = Reader { bytes: rest };
    let (mut type_meta, mut raw) = (Value::Null, None);
    while let Some((number, wire)) = r.field()? {
        match (number, wire) {
            (1, Some(Wire::Bytes(b))) => type_meta = message(b, TYPE_META)?,
            (2, Some(Wire::Bytes(b))) => raw = Some(b),
            _ => {}
        }
    }
    let api_version = type_meta.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = type_meta.get("kind").and_then(Value::as_str).unwrap_or("");
    let Some(fields) = message_of(api_version, kind) else {
        return Err(ApiError::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: \
                 application/json, application/yaml (got {CONTENT_TYPE:?} for {api_version:?} {kind:?}: protobuf \
                 is read for the built-in types only)"
            ),
        ));
    };
    let mut obj = message(raw.unwrap_or(&[]), fields)?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn bytes_field(n: u32, b: &[u8], out: &mut Vec<u8>) {
        varint(u64::from(n << 3 | 2), out);
        varint(b.len() as u64, out);
        out.extend_from_slice(b);
    }

    fn varint_field(n: u32, v: u64, out: &mut Vec<u8>) {
        varint(u64::from(n << 3), out);
        varint(v, out);
    }

    /// A body of `kind` in `api_version` whose object is `raw`.
    fn body(api_version: &[u8], kind: &[u8], raw: &[u8]) -> Vec<u8> {
        let mut type_meta = Vec::new();
        bytes_field(1, api_version, &mut type_meta);
        bytes_field(2, kind, &mut type_meta);
        let mut body = MAGIC.to_vec();
        bytes_field(1, &type_meta, &mut body);
        bytes_field(2, raw, &mut body);
        body
    }

    /// client-go's typed clients send the cluster's admission configuration in protobuf: a webhook's rule is
    /// embedded (its fields are the rule's in JSON), its CA bundle bytes (base64 in JSON); an unset time is left out.
    #[test]
    fn a_validating_webhook_configuration_decodes_with_its_inline_rules() {
        let mut rule = Vec::new();
        bytes_field(1, b"wardle.example.com", &mut rule);
        bytes_field(2, b"v1beta1", &mut rule);
        bytes_field(3, b"flunders", &mut rule);
        bytes_field(4, b"*", &mut rule);
        let mut with_operations = Vec::new();
        bytes_field(1, b"CREATE", &mut with_operations);
        bytes_field(2, &rule, &mut with_operations);
        let mut service = Vec::new();
        bytes_field(1, b"ns", &mut service);
        bytes_field(2, b"hook", &mut service);
        varint_field(4, 8443, &mut service);
        let mut client = Vec::new();
        bytes_field(1, &service, &mut client);
        bytes_field(2, b"\x00\x01ca", &mut client);
        let mut webhook = Vec::new();
        bytes_field(1, b"deny.example.com", &mut webhook);
        bytes_field(2, &client, &mut webhook);
        bytes_field(3, &with_operations, &mut webhook);
        varint_field(7, 5, &mut webhook);
        let mut meta = Vec::new();
        bytes_field(1, b"deny", &mut meta);
        bytes_field(8, b"", &mut meta);
        let mut raw = Vec::new();
        bytes_field(1, &meta, &mut raw);
        bytes_field(2, &webhook, &mut raw);
        let decoded = decode(&body(
            b"admissionregistration.k8s.io/v1",
            b"ValidatingWebhookConfiguration",
            &raw,
        ));
        assert_eq!(
            decoded.unwrap(),
            json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
                "metadata": {"name": "deny"},
                "webhooks": [{"name": "deny.example.com",
                    "clientConfig": {"service": {"namespace": "ns", "name": "hook", "port": 8443}, "caBundle": "AAFjYQ=="},
                    "rules": [{"operations": ["CREATE"], "apiGroups": ["wardle.example.com"], "apiVersions": ["v1beta1"],
                        "resources": ["flunders"], "scope": "*"}],
                    "timeoutSeconds": 5}]})
        );
    }

    /// A FlowSchema as client-go sends it: every non-pointer field present, zero or not.
    #[test]
    fn a_flow_schema_decodes() {
        let mut user = Vec::new();
        bytes_field(1, b"alice", &mut user);
        let mut subject = Vec::new();
        bytes_field(1, b"User", &mut subject);
        bytes_field(2, &user, &mut subject);
        let mut resource_rule = Vec::new();
        bytes_field(1, b"get", &mut resource_rule);
        bytes_field(2, b"*", &mut resource_rule);
        bytes_field(3, b"*", &mut resource_rule);
        varint_field(4, 1, &mut resource_rule);
        let mut rules = Vec::new();
        bytes_field(1, &subject, &mut rules);
        bytes_field(2, &resource_rule, &mut rules);
        let mut level = Vec::new();
        bytes_field(1, b"workload-low", &mut level);
        let mut spec = Vec::new();
        bytes_field(1, &level, &mut spec);
        varint_field(2, 0, &mut spec);
        bytes_field(4, &rules, &mut spec);
        let mut meta = Vec::new();
        bytes_field(1, b"alice", &mut meta);
        let mut raw = Vec::new();
        bytes_field(1, &meta, &mut raw);
        bytes_field(2, &spec, &mut raw);
        bytes_field(3, b"", &mut raw);
        let decoded = decode(&body(b"flowcontrol.apiserver.k8s.io/v1", b"FlowSchema", &raw)).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "alice"},
                "spec": {"priorityLevelConfiguration": {"name": "workload-low"}, "matchingPrecedence": 0,
                    "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                        "resourceRules": [{"verbs": ["get"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true}]}]},
                "status": {}})
        );
    }

    #[test]
    fn a_namespace_from_kubectl_create_namespace_decodes() {
        let mut meta = Vec::new();
        bytes_field(1, b"team-a", &mut meta);
        let mut entry = Vec::new();
        bytes_field(1, b"env", &mut entry);
        bytes_field(2, b"dev", &mut entry);
        bytes_field(11, &entry, &mut meta);
        let mut ns = Vec::new();
        bytes_field(1, &meta, &mut ns);
        let mut spec = Vec::new();
        bytes_field(1, b"kubernetes", &mut spec);
        bytes_field(2, &spec, &mut ns);
        let mut type_meta = Vec::new();
        bytes_field(1, b"v1", &mut type_meta);
        bytes_field(2, b"Namespace", &mut type_meta);
        let mut body = MAGIC.to_vec();
        bytes_field(1, &type_meta, &mut body);
        bytes_field(2, &ns, &mut body);
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team-a", "labels": {"env": "dev"}}, "spec": {"finalizers": ["kubernetes"]}})
        );
    }

    #[test]
    fn a_secret_from_kubectl_create_secret_decodes_its_bytes_as_base64() {
        let mut meta = Vec::new();
        bytes_field(1, b"regcred", &mut meta);
        let mut secret = Vec::new();
        bytes_field(1, &meta, &mut secret);
        let mut entry = Vec::new();
        bytes_field(1, b".dockerconfigjson", &mut entry);
        bytes_field(2, b"{\"auths\":{}}", &mut entry);
        bytes_field(2, &entry, &mut secret);
        bytes_field(3, b"kubernetes.io/dockerconfigjson", &mut secret);
        let mut type_meta = Vec::new();
        bytes_field(1, b"v1", &mut type_meta);
        bytes_field(2, b"Secret", &mut type_meta);
        let mut body = MAGIC.to_vec();
        bytes_field(1, &type_meta, &mut body);
        bytes_field(2, &secret, &mut body);
        assert_eq!(
            decode(&body).unwrap(),
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "regcred"},
                "data": {".dockerconfigjson": "eyJhdXRocyI6e319"}, "type": "kubernetes.io/dockerconfigjson"})
        );
    }

    #[test]
    fn garbage_and_unknown_kinds_are_clear_errors() {
        assert_eq!(decode(b"nope").unwrap_err().code, 400);
        assert_eq!(decode(b"k8s\0\x0a\xff").unwrap_err().code, 400);
        let mut type_meta = Vec::new();
        bytes_field(1, b"wardle.example.com/v1beta1", &mut type_meta);
        bytes_field(2, b"Flunder", &mut type_meta);
        let mut body = MAGIC.to_vec();
        bytes_field(1, &type_meta, &mut body);
        assert_eq!(decode(&body).unwrap_err().code, 415);
    }
}
