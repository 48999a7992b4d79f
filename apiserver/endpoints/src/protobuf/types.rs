//! The field tables of the built-in types' protobuf messages: numbers and JSON names from k8s.io/api's and
//! k8s.io/apimachinery's `generated.proto` (v0.37), for the kinds [`message_of`] names.

use super::{Field, Kind};

/// `runtime.TypeMeta` (not meta/v1's: apiVersion comes first here).
pub(super) const TYPE_META: &[Field] = &[(1, "apiVersion", Kind::String), (2, "kind", Kind::String)];
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

const CONFIG_MAP: &[Field] = &[
    META,
    (2, "data", Kind::StringMap),
    (3, "binaryData", Kind::BytesMap),
    (4, "immutable", Kind::Bool),
];

const OBJECT_REFERENCE: &[Field] = &[
    (1, "kind", Kind::String),
    (2, "namespace", Kind::String),
    (3, "name", Kind::String),
    (4, "uid", Kind::String),
    (5, "apiVersion", Kind::String),
    (6, "resourceVersion", Kind::String),
    (7, "fieldPath", Kind::String),
];
const SERVICE_ACCOUNT: &[Field] = &[
    META,
    (2, "secrets", Kind::Messages(OBJECT_REFERENCE)),
    (3, "imagePullSecrets", Kind::Messages(NAMED)),
    (4, "automountServiceAccountToken", Kind::Bool),
];

const EVENT: &[Field] = &[
    META,
    (2, "involvedObject", Kind::Message(OBJECT_REFERENCE)),
    (3, "reason", Kind::String),
    (4, "message", Kind::String),
    (
        5,
        "source",
        Kind::Message(&[(1, "component", Kind::String), (2, "host", Kind::String)]),
    ),
    (6, "firstTimestamp", Kind::Time),
    (7, "lastTimestamp", Kind::Time),
    (8, "count", Kind::Int),
    (9, "type", Kind::String),
    (10, "eventTime", Kind::MicroTime),
    (
        11,
        "series",
        Kind::Message(&[(1, "count", Kind::Int), (2, "lastObservedTime", Kind::MicroTime)]),
    ),
    (12, "action", Kind::String),
    (13, "related", Kind::Message(OBJECT_REFERENCE)),
    (14, "reportingComponent", Kind::String),
    (15, "reportingInstance", Kind::String),
];

const RESOURCE_QUOTA: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (1, "hard", Kind::QuantityMap),
            (2, "scopes", Kind::Strings),
            (
                3,
                "scopeSelector",
                Kind::Message(&[(
                    1,
                    "matchExpressions",
                    Kind::Messages(&[
                        (1, "scopeName", Kind::String),
                        (2, "operator", Kind::String),
                        (3, "values", Kind::Strings),
                    ]),
                )]),
            ),
        ]),
    ),
    (
        3,
        "status",
        Kind::Message(&[(1, "hard", Kind::QuantityMap), (2, "used", Kind::QuantityMap)]),
    ),
];

// authentication.k8s.io/v1.
const TOKEN_REQUEST: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (1, "audiences", Kind::Strings),
            (4, "expirationSeconds", Kind::Int),
            (
                3,
                "boundObjectRef",
                Kind::Message(&[
                    (1, "kind", Kind::String),
                    (2, "apiVersion", Kind::String),
                    (3, "name", Kind::String),
                    (4, "uid", Kind::String),
                ]),
            ),
        ]),
    ),
    (
        3,
        "status",
        Kind::Message(&[(1, "token", Kind::String), (2, "expirationTimestamp", Kind::Time)]),
    ),
];

const TOKEN_REVIEW: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[(1, "token", Kind::String), (2, "audiences", Kind::Strings)]),
    ),
    (
        3,
        "status",
        Kind::Message(&[
            (1, "authenticated", Kind::Bool),
            (
                2,
                "user",
                Kind::Message(&[
                    (1, "username", Kind::String),
                    (2, "uid", Kind::String),
                    (3, "groups", Kind::Strings),
                    (4, "extra", Kind::ExtraMap),
                ]),
            ),
            (4, "audiences", Kind::Strings),
            (3, "error", Kind::String),
        ]),
    ),
];

// coordination.k8s.io/v1.
const LEASE: &[Field] = &[
    META,
    (
        2,
        "spec",
        Kind::Message(&[
            (1, "holderIdentity", Kind::String),
            (2, "leaseDurationSeconds", Kind::Int),
            (3, "acquireTime", Kind::MicroTime),
            (4, "renewTime", Kind::MicroTime),
            (5, "leaseTransitions", Kind::Int),
            (6, "strategy", Kind::String),
            (7, "preferredHolder", Kind::String),
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
pub(super) fn message_of(api_version: &str, kind: &str) -> Option<&'static [Field]> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "Secret") => SECRET,
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "ServiceAccount") => SERVICE_ACCOUNT,
        ("v1", "Event") => EVENT,
        ("v1", "ResourceQuota") => RESOURCE_QUOTA,
        ("coordination.k8s.io/v1", "Lease") => LEASE,
        ("rbac.authorization.k8s.io/v1", "Role") => ROLE,
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => CLUSTER_ROLE,
        ("rbac.authorization.k8s.io/v1", "RoleBinding" | "ClusterRoleBinding") => BINDING,
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview") => SELF_SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SubjectAccessReview" | "LocalSubjectAccessReview") => SUBJECT_ACCESS_REVIEW,
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview") => SELF_SUBJECT_RULES_REVIEW,
        ("authentication.k8s.io/v1", "SelfSubjectReview") => SELF_SUBJECT_REVIEW,
        ("authentication.k8s.io/v1", "TokenRequest") => TOKEN_REQUEST,
        ("authentication.k8s.io/v1", "TokenReview") => TOKEN_REVIEW,
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
