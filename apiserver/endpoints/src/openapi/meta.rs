//! The apimachinery schemas the OpenAPI documents refer to (`ObjectMeta`, `ListMeta`, `Status`,
//! `DeleteOptions`...), in OpenAPI v3 form, with the descriptions `kubectl explain` shows, and the descriptions of
//! the standard query parameters. The shapes (types, formats, list and map extensions) follow what kube-apiserver
//! publishes, so that clients treat `metadata` exactly as they do for built-in kinds. The autoscaling/v1 `Scale`
//! schemas, which `/scale` subresources read and write, are here too, with kube's own descriptions.

use serde_json::{json, Map, Value};

use super::wrap_ref;

/// The prefix of the apimachinery `meta/v1` schema names.
pub(super) const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";

const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";

/// The name of the autoscaling/v1 `Scale` schema, which `/scale` subresources read and write.
pub(super) const SCALE: &str = "io.k8s.api.autoscaling.v1.Scale";

/// The `apiVersion` and `kind` properties every object and list has.
pub(super) fn object_properties() -> (Value, Value) {
    (
        string("The versioned schema of this representation of an object, as <group>/<version>. Servers convert recognized schemas to the latest internal value and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"),
        string("The REST resource this object represents, in CamelCase. Servers may infer it from the endpoint the client submits requests to. Cannot be updated. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
    )
}

/// The description of a standard query parameter (empty for unknown names).
pub(super) fn param_description(name: &str) -> &'static str {
    match name {
        "pretty" => "If 'true', the output is pretty printed.",
        "dryRun" => "When present, the modifications are not persisted. An invalid or unrecognized directive fails the request. The only valid value is All: every dry-run stage is processed.",
        "fieldManager" => "The name of the actor or entity making these changes: at most 128 printable characters. Required for apply patches (application/apply-patch+yaml), optional otherwise.",
        "fieldValidation" => "How to treat unknown or duplicate fields in the request body. Ignore drops them silently and keeps the last of duplicates; Warn (the default) does the same and sends a warning header for each; Strict fails the request with BadRequest, listing all of them.",
        "force" => "Force an apply request: the caller takes over the fields other managers own. Must be unset for other patch types.",
        "gracePeriodSeconds" => "Seconds before the object should be deleted: a non-negative integer, zero for immediately. Defaults to the resource's own grace period.",
        "ignoreStoreReadErrorWithClusterBreakingPotential" => "If true, delete the object even when it cannot be read from storage (it fails to decrypt or decode), ignoring finalizers and preconditions. Unsafe; false by default.",
        "orphanDependents" => "Deprecated: use propagationPolicy. Whether the dependents are orphaned: true adds the \"orphan\" finalizer, false removes it. Cannot be set together with propagationPolicy.",
        "propagationPolicy" => "Whether and how garbage collection is performed: Orphan leaves the dependents, Background deletes them in the background, Foreground deletes them before the owner. Cannot be set together with orphanDependents.",
        "allowWatchBookmarks" => "Ask for watch events of type BOOKMARK. Servers send them at their discretion; clients may not rely on their timing. Ignored unless watch is set.",
        "continue" => "The continue token of a previous list with a limit and the same query, to fetch the next page. An expired token yields 410 ResourceExpired. Not supported with watch.",
        "fieldSelector" => "A selector to restrict the returned objects by their fields. Defaults to everything.",
        "labelSelector" => "A selector to restrict the returned objects by their labels. Defaults to everything.",
        "limit" => "The maximum number of items to return. When more exist, the list's metadata.continue is set to fetch the rest; the pages together form a consistent snapshot. Not supported with watch.",
        "resourceVersion" => "A constraint on the resource versions the request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details. Defaults to unset.",
        "resourceVersionMatch" => "How resourceVersion applies to list calls: NotOlderThan or Exact. Recommended whenever resourceVersion is set. Defaults to unset.",
        "sendInitialEvents" => "With watch=true, start the stream with synthetic events for the current objects, followed by a BOOKMARK event annotated \"k8s.io/initial-events-end\": \"true\". Requires resourceVersionMatch=NotOlderThan.",
        "timeoutSeconds" => "A limit on the duration of the list or watch call, regardless of activity.",
        "watch" => "Watch for changes to the described resources and return them as a stream of add, update and remove notifications. Specify resourceVersion.",
        _ => "",
    }
}

/// The apimachinery schemas, keyed by name. `DeleteOptions` and `WatchEvent` name every given group version in
/// `x-kubernetes-group-version-kind`, as they are registered in each.
pub(super) fn meta_schemas(group_versions: &[(String, String)]) -> Map<String, Value> {
    let (api_version, kind) = object_properties();
    let gvks = |kind: &str| -> Value {
        group_versions
            .iter()
            .map(|(g, v)| json!({"group": g, "version": v, "kind": kind}))
            .collect()
    };
    let mut m = Map::new();
    let mut put = |name: &str, schema: Value| {
        m.insert(format!("{META}{name}"), schema);
    };
    put(
        "ObjectMeta",
        object(
            "Metadata that every persisted resource has, including every object users create.",
            json!({
                "annotations": string_map("An unstructured key-value map stored with a resource that tools may set to store and retrieve arbitrary metadata. Not queryable; preserve it when modifying objects. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/annotations"),
                "creationTimestamp": meta_ref("Time", "The server time when this object was created, in RFC 3339 form and UTC. Set by the system; clients may not set it. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
                "deletionGracePeriodSeconds": typed("integer", "int64", "Seconds allowed for this object to terminate gracefully before it is removed. Only set together with deletionTimestamp; may only be shortened. Read-only."),
                "deletionTimestamp": meta_ref("Time", "The RFC 3339 time at which this resource will be deleted, set by the server when a graceful deletion is requested. The object is removed once its finalizers list is empty; the time may be shortened but never unset or extended. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"),
                "finalizers": {
                    "description": "Must be empty before the object is deleted from the registry. Each entry names the component responsible for removing it. Once deletionTimestamp is set, entries may only be removed. Finalizers may be processed in any order.",
                    "type": "array", "items": {"type": "string", "default": ""},
                    "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge",
                },
                "generateName": string("An optional prefix the server uses to generate a unique name when name is not set: a random suffix is appended, and the prefix follows the rules of name. If the generated name exists, the server returns 409. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#idempotency"),
                "generation": typed("integer", "int64", "A sequence number representing a specific generation of the desired state. Set by the system. Read-only."),
                "labels": string_map("Map of string keys and values to organize, categorize and select objects. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels"),
                "managedFields": {
                    "description": "Maps each workflow (field manager) and API version to the set of fields it manages. Mostly for internal housekeeping: users typically need not set or read it.",
                    "type": "array", "items": item_ref("ManagedFieldsEntry"), "x-kubernetes-list-type": "atomic",
                },
                "name": string("Unique within a namespace. Required when creating resources unless generateName is used. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
                "namespace": string("The namespace within which the name must be unique; empty means \"default\" for namespaced resources, and cluster-scoped objects have none. Must be a DNS label. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/namespaces"),
                "ownerReferences": {
                    "description": "The objects this object depends on. When all of them are deleted, this object is garbage-collected. At most one entry may be the managing controller (controller: true).",
                    "type": "array", "items": item_ref("OwnerReference"),
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["uid"],
                    "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge",
                },
                "resourceVersion": string("An opaque value representing the internal version of this object, for optimistic concurrency, change detection and watches. Clients pass it back unmodified. Set by the system. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
                "selfLink": string("Deprecated: a legacy read-only field that the system no longer sets."),
                "uid": string("Unique in time and space for this object; generated by the server on creation and never changed. Read-only. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
            }),
        ),
    );
    put(
        "ListMeta",
        object(
            "Metadata of synthetic resources such as lists and status objects.",
            json!({
                "continue": string("Set when the request had a limit and more items are available: an opaque token to pass as the continue parameter to fetch the next page."),
                "remainingItemCount": typed("integer", "int64", "The number of items after this page, when known: absent with label or field selectors and on the last page. An estimate only."),
                "resourceVersion": string("The server's internal version of this list, to start a watch from. Opaque; set by the system. Read-only. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#concurrency-control-and-consistency"),
                "selfLink": string("Deprecated: a legacy read-only field that the system no longer sets."),
            }),
        ),
    );
    put(
        "ManagedFieldsEntry",
        object(
            "A field manager, the set of fields it manages and the version of the resource they apply to.",
            json!({
                "apiVersion": string("The group/version of the resource the field set applies to; field sets cannot be converted automatically between versions."),
                "fieldsType": string("The format of the field set; the only value is \"FieldsV1\"."),
                "fieldsV1": meta_ref("FieldsV1", "The field set, in the FieldsV1 format."),
                "manager": string("The identifier of the workflow managing these fields."),
                "operation": string("The operation that created this entry: \"Apply\" or \"Update\"."),
                "subresource": string("The subresource used to update the object, or empty for the main resource."),
                "time": meta_ref("Time", "When the entry was added, or last changed by its manager."),
            }),
        ),
    );
    let mut owner = object(
        "Identifies an owning object, which must be in the same namespace as the dependent or cluster-scoped.",
        json!({
            "apiVersion": with_default(string("API version of the referent.")),
            "blockOwnerDeletion": typed("boolean", "", "If true and the owner has the \"foregroundDeletion\" finalizer, the owner cannot be deleted from storage until this reference is removed. Setting it requires permission to delete the owner. Defaults to false."),
            "controller": typed("boolean", "", "If true, this reference points to the managing controller."),
            "kind": with_default(string("Kind of the referent. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")),
            "name": with_default(string("Name of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names")),
            "uid": with_default(string("UID of the referent. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids")),
        }),
    );
    owner["required"] = json!(["apiVersion", "kind", "name", "uid"]);
    owner["x-kubernetes-map-type"] = json!("atomic");
    put("OwnerReference", owner);
    put(
        "Time",
        json!({"type": "string", "format": "date-time", "description": "A timestamp in RFC 3339 form, in UTC, with second precision."}),
    );
    put(
        "FieldsV1",
        json!({"type": "object", "description": "A set of fields as a trie in JSON: each key is a field (\"f:<name>\"), a map key (\"k:<json>\"), a list value (\"v:<json>\") or an index (\"i:<n>\"), and \".\" marks the field itself."}),
    );
    let mut status = object(
        "The result of a call that does not return another object.",
        json!({
            "apiVersion": api_version.clone(),
            "code": typed("integer", "int32", "The suggested HTTP status code; 0 if not set."),
            "details": meta_ref("StatusDetails", "Extended data associated with the reason; its content depends on the reason."),
            "kind": kind.clone(),
            "message": string("A human-readable description of the status of this operation."),
            "metadata": with_object_default(meta_ref("ListMeta", "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")),
            "reason": string("A machine-readable description of why the operation is in the Failure status, such as NotFound. It clarifies the HTTP code but does not override it."),
            "status": string("The status of the operation: \"Success\" or \"Failure\". More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status"),
        }),
    );
    status["x-kubernetes-group-version-kind"] = json!([{"group": "", "version": "v1", "kind": "Status"}]);
    put("Status", status);
    put(
        "StatusDetails",
        object(
            "Additional information a server may set on a Status; the reason decides which fields are set.",
            json!({
                "causes": {
                    "description": "More details of the failure, such as each invalid field. Not every reason provides causes.",
                    "type": "array", "items": item_ref("StatusCause"), "x-kubernetes-list-type": "atomic",
                },
                "group": string("The group of the resource the status is about."),
                "kind": string("The kind of the resource the status is about; on some operations it differs from the requested kind. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"),
                "name": string("The name of the resource the status is about, when there is one."),
                "retryAfterSeconds": typed("integer", "int32", "If set, the seconds to wait before retrying the operation."),
                "uid": string("The UID of the resource the status is about, when there is one. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#uids"),
            }),
        ),
    );
    put(
        "StatusCause",
        object(
            "One cause of a Status failure, such as an invalid field.",
            json!({
                "field": string("The field that caused the error, named as in its JSON serialization, with dots and zero-based indexes for nested fields, such as items[0].name."),
                "message": string("A human-readable description of the cause, which may be shown as is."),
                "reason": string("A machine-readable description of the cause, such as FieldValueRequired."),
            }),
        ),
    );
    let mut delete = object(
        "Options for deleting an object.",
        json!({
            "apiVersion": api_version,
            "dryRun": {"description": param_description("dryRun"), "type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "atomic"},
            "gracePeriodSeconds": typed("integer", "int64", param_description("gracePeriodSeconds")),
            "ignoreStoreReadErrorWithClusterBreakingPotential": typed("boolean", "", param_description("ignoreStoreReadErrorWithClusterBreakingPotential")),
            "kind": kind,
            "orphanDependents": typed("boolean", "", param_description("orphanDependents")),
            "preconditions": meta_ref("Preconditions", "Conditions that must hold for the deletion to proceed; otherwise the server returns 409 Conflict."),
            "propagationPolicy": string(param_description("propagationPolicy")),
        }),
    );
    delete["x-kubernetes-group-version-kind"] = gvks("DeleteOptions");
    put("DeleteOptions", delete);
    put(
        "Preconditions",
        object(
            "Conditions that must hold before an operation (update, delete) is carried out.",
            json!({
                "resourceVersion": string("The resourceVersion the object must have."),
                "uid": string("The UID the object must have."),
            }),
        ),
    );
    put(
        "Patch",
        json!({"type": "object", "description": "The body of a PATCH request, in the format its Content-Type names."}),
    );
    let mut event = object(
        "An event of a watch stream.",
        json!({
            "object": with_object_default(json!({"allOf": [{"$ref": format!("#/components/schemas/{RAW_EXTENSION}")}], "description": "The object: its new state for ADDED and MODIFIED, its last state for DELETED, a Status for ERROR and an object carrying only metadata.resourceVersion for BOOKMARK."})),
            "type": with_default(string("ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.")),
        }),
    );
    event["required"] = json!(["type", "object"]);
    event["x-kubernetes-group-version-kind"] = gvks("WatchEvent");
    put("WatchEvent", event);
    m.insert(
        RAW_EXTENSION.into(),
        json!({"type": "object", "description": "An embedded object in its serialized form."}),
    );
    m
}

/// The autoscaling/v1 `Scale`, `ScaleSpec` and `ScaleStatus` schemas, keyed by name, as kube-openapi generates
/// them from `k8s.io/api/autoscaling/v1` (descriptions, defaults and the `Scale` GVK included). `Scale` refers to
/// `ObjectMeta`, which [`meta_schemas`] provides.
pub(super) fn scale_schemas() -> Map<String, Value> {
    let (api_version, kind) = object_properties();
    let reference = |name: &str, description: &str| with_object_default(wrap_ref(name, description));
    let mut scale = object(
        "Scale represents a scaling request for a resource.",
        json!({
            "apiVersion": api_version,
            "kind": kind,
            "metadata": reference(&format!("{META}ObjectMeta"), "metadata is the standard object metadata; More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata."),
            "spec": reference(&format!("{SCALE}Spec"), "spec defines the behavior of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status."),
            "status": reference(&format!("{SCALE}Status"), "status is the current status of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status. Read-only."),
        }),
    );
    scale["x-kubernetes-group-version-kind"] = json!([{"group": "autoscaling", "version": "v1", "kind": "Scale"}]);
    let replicas = |description: &str| {
        let mut v = typed("integer", "int32", description);
        v["default"] = json!(0);
        v
    };
    let spec = object(
        "ScaleSpec describes the attributes of a scale subresource.",
        json!({"replicas": replicas("replicas is the desired number of instances for the scaled object.")}),
    );
    let mut status = object(
        "ScaleStatus represents the current status of a scale subresource.",
        json!({
            "replicas": replicas("replicas is the actual number of observed instances of the scaled object."),
            "selector": string("selector is the label query over pods that should match the replicas count. This is same as the label selector but in the string format to avoid introspection by clients. The string will be in the same format as the query-param syntax. More info about label selectors: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"),
        }),
    );
    status["required"] = json!(["replicas"]);
    let mut m = Map::new();
    m.insert(SCALE.into(), scale);
    m.insert(format!("{SCALE}Spec"), spec);
    m.insert(format!("{SCALE}Status"), status);
    m
}

fn object(description: &str, properties: Value) -> Value {
    json!({"type": "object", "description": description, "properties": properties})
}

fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

fn typed(ty: &str, format: &str, description: &str) -> Value {
    let mut v = json!({"type": ty, "description": description});
    if !format.is_empty() {
        v["format"] = json!(format);
    }
    v
}

fn string_map(description: &str) -> Value {
    json!({"type": "object", "description": description, "additionalProperties": {"type": "string", "default": ""}})
}

fn meta_ref(name: &str, description: &str) -> Value {
    wrap_ref(&format!("{META}{name}"), description)
}

/// An array item referring to a meta type, as kube-openapi writes it.
fn item_ref(name: &str) -> Value {
    json!({"allOf": [{"$ref": format!("#/components/schemas/{META}{name}")}], "default": {}})
}

fn with_default(mut v: Value) -> Value {
    v["default"] = json!("");
    v
}

fn with_object_default(mut v: Value) -> Value {
    v["default"] = json!({});
    v
}
