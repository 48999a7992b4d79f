//! Request bodies in Kubernetes' protobuf encoding (`application/vnd.kubernetes.protobuf`) for the built-in types,
//! decoded to JSON. kubectl's typed clients (`kubectl create namespace`, `create rolebinding`, `auth can-i`,
//! `auth whoami`) and client-go's (kube's controllers, Kubernetes' e2e tests: FlowSchemas, webhooks, policies)
//! send their bodies this way and do not fall back to JSON.
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
    /// `bytes`, as JSON base64.
    Bytes,
    /// An embedded struct (Go's `json:",inline"` or `json:""`): its fields are the parent's in JSON.
    Inline(&'static [Field]),
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
    (
        3,
        "status",
        Kind::Message(&[
            (1, "phase", Kind::String),
            (
                2,
                "conditions",
                Kind::Messages(&[
                    (1, "type", Kind::String),
                    (2, "status", Kind::String),
                    (4, "lastTransitionTime", Kind::Time),
                    (5, "reason", Kind::String),
                    (6, "message", Kind::String),
                ]),
            ),
        ]),
    ),
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

/// meta/v1 `Condition`.
const CONDITION: &[Field] = &[
    (1, "type", Kind::String),
    (2, "status", Kind::String),
    (3, "observedGeneration", Kind::Int),
    (4, "lastTransitionTime", Kind::Time),
    (5, "reason", Kind::String),
    (6, "message", Kind::String),
];
/// The conditions of flowcontrol's types (meta/v1 `Condition` without `observedGeneration`).
const FLOWCONTROL_CONDITION: &[Field] = &[
    (1, "type", Kind::String),
    (2, "status", Kind::String),
    (3, "lastTransitionTime", Kind::Time),
    (4, "reason", Kind::String),
    (5, "message", Kind::String),
];
const NAMED: &[Field] = &[(1, "name", Kind::String)];

// flowcontrol.apiserver.k8s.io/v1 (k8s.io/api/flowcontrol/v1/generated.proto).
const FLOW_SCHEMA: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (1, "priorityLevelConfiguration", Kind::Message(NAMED)),
            (2, "matchingPrecedence", Kind::Int),
            (3, "distinguisherMethod", Kind::Message(&[(1, "type", Kind::String)])),
            (
                4,
                "rules",
                Kind::Messages(&[
                    (
                        1,
                        "subjects",
                        Kind::Messages(&[
                            (1, "kind", Kind::String),
                            (2, "user", Kind::Message(NAMED)),
                            (3, "group", Kind::Message(NAMED)),
                            (
                                4,
                                "serviceAccount",
                                Kind::Message(&[(1, "namespace", Kind::String), (2, "name", Kind::String)]),
                            ),
                        ]),
                    ),
                    (
                        2,
                        "resourceRules",
                        Kind::Messages(&[
                            (1, "verbs", Kind::Strings),
                            (2, "apiGroups", Kind::Strings),
                            (3, "resources", Kind::Strings),
                            (4, "clusterScope", Kind::Bool),
                            (5, "namespaces", Kind::Strings),
                        ]),
                    ),
                    (
                        3,
                        "nonResourceRules",
                        Kind::Messages(&[(1, "verbs", Kind::Strings), (6, "nonResourceURLs", Kind::Strings)]),
                    ),
                ]),
            ),
        ]),
    ),
    (
        3,
        "status",
        Kind::Message(&[(1, "conditions", Kind::Messages(FLOWCONTROL_CONDITION))]),
    ),
];
const PRIORITY_LEVEL_CONFIGURATION: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (1, "type", Kind::String),
            (
                2,
                "limited",
                Kind::Message(&[
                    (1, "nominalConcurrencyShares", Kind::Int),
                    (
                        2,
                        "limitResponse",
                        Kind::Message(&[
                            (1, "type", Kind::String),
                            (
                                2,
                                "queuing",
                                Kind::Message(&[
                                    (1, "queues", Kind::Int),
                                    (2, "handSize", Kind::Int),
                                    (3, "queueLengthLimit", Kind::Int),
                                ]),
                            ),
                        ]),
                    ),
                    (3, "lendablePercent", Kind::Int),
                    (4, "borrowingLimitPercent", Kind::Int),
                ]),
            ),
            (
                3,
                "exempt",
                Kind::Message(&[
                    (1, "nominalConcurrencyShares", Kind::Int),
                    (2, "lendablePercent", Kind::Int),
                ]),
            ),
        ]),
    ),
    (
        3,
        "status",
        Kind::Message(&[(1, "conditions", Kind::Messages(FLOWCONTROL_CONDITION))]),
    ),
];

// admissionregistration.k8s.io/v1 (k8s.io/api/admissionregistration/v1/generated.proto).
const RULE: &[Field] = &[
    (1, "apiGroups", Kind::Strings),
    (2, "apiVersions", Kind::Strings),
    (3, "resources", Kind::Strings),
    (4, "scope", Kind::String),
];
const RULE_WITH_OPERATIONS: &[Field] = &[(1, "operations", Kind::Strings), (2, "rule", Kind::Inline(RULE))];
const NAMED_RULE_WITH_OPERATIONS: &[Field] = &[
    (1, "resourceNames", Kind::Strings),
    (2, "ruleWithOperations", Kind::Inline(RULE_WITH_OPERATIONS)),
];
const MATCH_CONDITION: &[Field] = &[(1, "name", Kind::String), (2, "expression", Kind::String)];
const WEBHOOK_CLIENT_CONFIG: &[Field] = &[
    (3, "url", Kind::String),
    (
        1,
        "service",
        Kind::Message(&[
            (1, "namespace", Kind::String),
            (2, "name", Kind::String),
            (3, "path", Kind::String),
            (4, "port", Kind::Int),
        ]),
    ),
    (2, "caBundle", Kind::Bytes),
];
/// A validating webhook's fields; a mutating webhook has these and `reinvocationPolicy` (10), with its
/// `objectSelector` and `matchConditions` one number on (11, 12).
const VALIDATING_WEBHOOK: &[Field] = &[
    (1, "name", Kind::String),
    (2, "clientConfig", Kind::Message(WEBHOOK_CLIENT_CONFIG)),
    (3, "rules", Kind::Messages(RULE_WITH_OPERATIONS)),
    (4, "failurePolicy", Kind::String),
    (9, "matchPolicy", Kind::String),
    (5, "namespaceSelector", Kind::Message(LABEL_SELECTOR)),
    (10, "objectSelector", Kind::Message(LABEL_SELECTOR)),
    (6, "sideEffects", Kind::String),
    (7, "timeoutSeconds", Kind::Int),
    (8, "admissionReviewVersions", Kind::Strings),
    (11, "matchConditions", Kind::Messages(MATCH_CONDITION)),
];
const MUTATING_WEBHOOK: &[Field] = &[
    (1, "name", Kind::String),
    (2, "clientConfig", Kind::Message(WEBHOOK_CLIENT_CONFIG)),
    (3, "rules", Kind::Messages(RULE_WITH_OPERATIONS)),
    (4, "failurePolicy", Kind::String),
    (9, "matchPolicy", Kind::String),
    (5, "namespaceSelector", Kind::Message(LABEL_SELECTOR)),
    (11, "objectSelector", Kind::Message(LABEL_SELECTOR)),
    (6, "sideEffects", Kind::String),
    (7, "timeoutSeconds", Kind::Int),
    (8, "admissionReviewVersions", Kind::Strings),
    (10, "reinvocationPolicy", Kind::String),
    (12, "matchConditions", Kind::Messages(MATCH_CONDITION)),
];
const VALIDATING_WEBHOOK_CONFIGURATION: &[Field] = &[META, (2, "webhooks", Kind::Messages(VALIDATING_WEBHOOK))];
const MUTATING_WEBHOOK_CONFIGURATION: &[Field] = &[META, (2, "webhooks", Kind::Messages(MUTATING_WEBHOOK))];
const MATCH_RESOURCES: &[Field] = &[
    (1, "namespaceSelector", Kind::Message(LABEL_SELECTOR)),
    (2, "objectSelector", Kind::Message(LABEL_SELECTOR)),
    (3, "resourceRules", Kind::Messages(NAMED_RULE_WITH_OPERATIONS)),
    (4, "excludeResourceRules", Kind::Messages(NAMED_RULE_WITH_OPERATIONS)),
    (7, "matchPolicy", Kind::String),
];
const PARAM_REF: &[Field] = &[
    (1, "name", Kind::String),
    (2, "namespace", Kind::String),
    (3, "selector", Kind::Message(LABEL_SELECTOR)),
    (4, "parameterNotFoundAction", Kind::String),
];
const VALIDATING_ADMISSION_POLICY: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (
                1,
                "paramKind",
                Kind::Message(&[(1, "apiVersion", Kind::String), (2, "kind", Kind::String)]),
            ),
            (2, "matchConstraints", Kind::Message(MATCH_RESOURCES)),
            (
                3,
                "validations",
                Kind::Messages(&[
                    (1, "expression", Kind::String),
                    (2, "message", Kind::String),
                    (3, "reason", Kind::String),
                    (4, "messageExpression", Kind::String),
                ]),
            ),
            (4, "failurePolicy", Kind::String),
            (
                5,
                "auditAnnotations",
                Kind::Messages(&[(1, "key", Kind::String), (2, "valueExpression", Kind::String)]),
            ),
            (6, "matchConditions", Kind::Messages(MATCH_CONDITION)),
            (
                7,
                "variables",
                Kind::Messages(&[(1, "name", Kind::String), (2, "expression", Kind::String)]),
            ),
        ]),
    ),
    (
        3,
        "status",
        Kind::Message(&[
            (1, "observedGeneration", Kind::Int),
            (
                2,
                "typeChecking",
                Kind::Message(&[(
                    1,
                    "expressionWarnings",
                    Kind::Messages(&[(2, "fieldRef", Kind::String), (3, "warning", Kind::String)]),
                )]),
            ),
            (3, "conditions", Kind::Messages(CONDITION)),
        ]),
    ),
];
const VALIDATING_ADMISSION_POLICY_BINDING: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (1, "policyName", Kind::String),
            (2, "paramRef", Kind::Message(PARAM_REF)),
            (3, "matchResources", Kind::Message(MATCH_RESOURCES)),
            (4, "validationActions", Kind::Strings),
        ]),
    ),
];

// storagemigration.k8s.io/v1beta1.
const STORAGE_VERSION_MIGRATION: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[(
            1,
            "resource",
            Kind::Message(&[(1, "group", Kind::String), (2, "resource", Kind::String)]),
        )]),
    ),
    (
        3,
        "status",
        Kind::Message(&[
            (1, "conditions", Kind::Messages(CONDITION)),
            (2, "resourceVersion", Kind::String),
        ]),
    ),
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
        ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema") => FLOW_SCHEMA,
        ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration") => PRIORITY_LEVEL_CONFIGURATION,
        ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") => VALIDATING_WEBHOOK_CONFIGURATION,
        ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") => MUTATING_WEBHOOK_CONFIGURATION,
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => VALIDATING_ADMISSION_POLICY,
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") => VALIDATING_ADMISSION_POLICY_BINDING,
        ("storagemigration.k8s.io/v1beta1", "StorageVersionMigration") => STORAGE_VERSION_MIGRATION,
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

/// A meta/v1 Time; `None` for the zero time, written as an empty message (its Size is 0), which JSON leaves out.
fn time(bytes: &[u8]) -> Result<Option<Value>, ApiError> {
    if bytes.is_empty() {
        return Ok(None);
    }
    let mut r = Reader { bytes };
    let mut seconds = 0i64;
    while let Some((n, v)) = r.field()? {
        if let (1, Some(Wire::Varint(s))) = (n, v) {
            seconds = s as i64;
        }
    }
    let t = chrono::DateTime::from_timestamp(seconds, 0).ok_or_else(malformed)?;
    Ok(Some(json!(t.format("%Y-%m-%dT%H:%M:%SZ").to_string())))
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
                if let Some(t) = time(b)? {
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
