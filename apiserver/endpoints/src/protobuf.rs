//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for the built-in types,
//! decoded to JSON. kubectl's typed clients (`kubectl create namespace`, `create rolebinding`, `auth can-i`,
//! `auth whoami`) send their bodies this way and do not fall back to JSON; responses stay JSON, which they accept.
//!
//! The body is the 4-byte magic `k8s\0` and a `runtime.Unknown` {typeMeta, raw}; `raw` is the object's message,
//! decoded with a table of its fields (numbers from k8s.io/api's `generated.proto`) into the JSON kube would take.

use serde_json::{json, Map, Value};

use apimachinery::status::ApiError;

/// The media type.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

const MAGIC: &[u8] = b"k8s\0";

/// How a field is decoded.
#[derive(Clone, Copy)]
enum Kind {
    String,
    Bool,
    Int,
    Time,
    Strings,
    StringMap,
    /// `map<string, bytes>`, as JSON `{key: base64}`.
    BytesMap,
    Message(&'static [Field]),
    Messages(&'static [Field]),
    /// `map<string, ExtraValue>` (ExtraValue: `repeated string items = 1`), as JSON `{key: [values]}`.
    ExtraMap,
}

/// One field of a message: its number, JSON name and kind.
type Field = (u32, &'static str, Kind);

/// `runtime.TypeMeta` (not meta/v1's: apiVersion comes first here).
const TYPE_META: &[Field] = &[(1, "apiVersion", Kind::String), (2, "kind", Kind::String)];
const OWNER_REFERENCE: &[Field] = &[
    (1, "kind", Kind::String),
    (3, "name", Kind::String),
    (4, "uid", Kind::String),
    (5, "apiVersion", Kind::String),
    (6, "controller", Kind::Bool),
    (7, "blockOwnerDeletion", Kind::Bool),
];
const OBJECT_META: &[Field] = &[
    (1, "name", Kind::String),
    (2, "generateName", Kind::String),
    (3, "namespace", Kind::String),
    (5, "uid", Kind::String),
    (6, "resourceVersion", Kind::String),
    (7, "generation", Kind::Int),
    (8, "creationTimestamp", Kind::Time),
    (9, "deletionTimestamp", Kind::Time),
    (10, "deletionGracePeriodSeconds", Kind::Int),
    (11, "labels", Kind::StringMap),
    (12, "annotations", Kind::StringMap),
    (13, "ownerReferences", Kind::Messages(OWNER_REFERENCE)),
    (14, "finalizers", Kind::Strings),
];
const META: Field = (1, "metadata", Kind::Message(OBJECT_META));

const NAMESPACE: &[Field] = &[
    META,
    (2, "spec", Kind::Message(&[(1, "finalizers", Kind::Strings)])),
    (3, "status", Kind::Message(&[(1, "phase", Kind::String)])),
];

const SECRET: &[Field] = &[
    META,
    (2, "data", Kind::BytesMap),
    (3, "type", Kind::String),
    (4, "stringData", Kind::StringMap),
    (5, "immutable", Kind::Bool),
];

const POLICY_RULE: &[Field] = &[
    (1, "verbs", Kind::Strings),
    (2, "apiGroups", Kind::Strings),
    (3, "resources", Kind::Strings),
    (4, "resourceNames", Kind::Strings),
    (5, "nonResourceURLs", Kind::Strings),
];
const LABEL_SELECTOR: &[Field] = &[
    (1, "matchLabels", Kind::StringMap),
    (
        2,
        "matchExpressions",
        Kind::Messages(&[
            (1, "key", Kind::String),
            (2, "operator", Kind::String),
            (3, "values", Kind::Strings),
        ]),
    ),
];
const ROLE: &[Field] = &[META, (2, "rules", Kind::Messages(POLICY_RULE))];
const CLUSTER_ROLE: &[Field] = &[
    META,
    (2, "rules", Kind::Messages(POLICY_RULE)),
    (
        3,
        "aggregationRule",
        Kind::Message(&[(1, "clusterRoleSelectors", Kind::Messages(LABEL_SELECTOR))]),
    ),
];
const BINDING: &[Field] = &[
    META,
    (
        2,
        "subjects",
        Kind::Messages(&[
            (1, "kind", Kind::String),
            (2, "apiGroup", Kind::String),
            (3, "name", Kind::String),
            (4, "namespace", Kind::String),
        ]),
    ),
    (
        3,
        "roleRef",
        Kind::Message(&[
            (1, "apiGroup", Kind::String),
            (2, "kind", Kind::String),
            (3, "name", Kind::String),
        ]),
    ),
];

const RESOURCE_ATTRIBUTES: &[Field] = &[
    (1, "namespace", Kind::String),
    (2, "verb", Kind::String),
    (3, "group", Kind::String),
    (4, "version", Kind::String),
    (5, "resource", Kind::String),
    (6, "subresource", Kind::String),
    (7, "name", Kind::String),
];
const NON_RESOURCE_ATTRIBUTES: &[Field] = &[(1, "path", Kind::String), (2, "verb", Kind::String)];
const SELF_SUBJECT_ACCESS_REVIEW: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (1, "resourceAttributes", Kind::Message(RESOURCE_ATTRIBUTES)),
            (2, "nonResourceAttributes", Kind::Message(NON_RESOURCE_ATTRIBUTES)),
        ]),
    ),
];
const SUBJECT_ACCESS_REVIEW: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (1, "resourceAttributes", Kind::Message(RESOURCE_ATTRIBUTES)),
            (2, "nonResourceAttributes", Kind::Message(NON_RESOURCE_ATTRIBUTES)),
            (3, "user", Kind::String),
            (4, "groups", Kind::Strings),
            (5, "extra", Kind::ExtraMap),
            (6, "uid", Kind::String),
        ]),
    ),
];
const SELF_SUBJECT_RULES_REVIEW: &[Field] = &[META, (2, "spec", Kind::Message(&[(1, "namespace", Kind::String)]))];
const SELF_SUBJECT_REVIEW: &[Field] = &[META];
const DELETE_OPTIONS: &[Field] = &[
    (1, "gracePeriodSeconds", Kind::Int),
    (
        2,
        "preconditions",
        Kind::Message(&[(1, "uid", Kind::String), (2, "resourceVersion", Kind::String)]),
    ),
    (3, "orphanDependents", Kind::Bool),
    (4, "propagationPolicy", Kind::String),
    (5, "dryRun", Kind::Strings),
];

/// The message of a kind, by `apiVersion` and `kind`.
fn message_of(api_version: &str, kind: &str) -> Option<&'static [Field]> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "Secret") => SECRET,
        ("rbac.authorization.k8s.io/v1", "Role") => ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => CLUSTER_ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => BINDING,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SubjectAccessReview" | "LocalSubjectAccessReview") => SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => SELF_SUBJECT_RULES_REVIEW,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => SELF_SUBJECT_REVIEW,
        ("meta.k8s.io/v1" | "v1", "DeleteOptions") => DELETE_OPTIONS,
        _ => return None,
    })
}

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

fn time(bytes: &[u8]) -> Result<Value, ApiError> {
    let mut r = Reader { bytes };
    let mut seconds = 0i64;
    while let Some((n, v)) = r.field()? {
        if let (1, Some(Wire::Varint(s))) = (n, v) {
            seconds = s as i64;
        }
    }
    let t = chrono::DateTime::from_timestamp(seconds, 0).ok_or_else(malformed)?;
    Ok(json!(t.format("%Y-%m-%dT%H:%M:%SZ").to_string()))
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
                out.insert(name.into(), time(b)?);
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
            (Kind::Message(inner), Wire::Bytes(b)) => {
                out.insert(name.into(), message(b, inner)?);
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
