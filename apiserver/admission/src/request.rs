//! One write as the webhooks' and policies' dispatchers see it: its attributes, its AdmissionReview uid, and what
//! they read of it once (its namespace), with the AdmissionRequest and the objects in another version they are sent.

use serde_json::{json, Value};

use crate::attributes::Attributes;
use crate::objects::{Freshness, Reader};
use apimachinery::plugin::Operation;
use apimachinery::status::ApiError;

/// One write as the dispatchers see it.
pub struct Request<'a> {
    /// The write.
    pub attributes: &'a Attributes<'a>,
    /// The AdmissionReview uid, one per write.
    pub uid: &'a str,
    /// The namespace's object, read once when a selector or a policy needs it.
    namespace: tokio::sync::OnceCell<Option<Value>>,
    /// The tenant's objects.
    pub(crate) objects: &'a dyn Reader,
}

impl<'a> Request<'a> {
    /// The write of `attributes`, reviewed as `uid`, its namespace read from `objects`.
    pub(crate) fn new(attributes: &'a Attributes<'a>, uid: &'a str, objects: &'a dyn Reader) -> Request<'a> {
        Request {
            attributes,
            uid,
            namespace: tokio::sync::OnceCell::new(),
            objects,
        }
    }

    /// The same write with other attributes (its object as a webhook changed it): the namespace read once serves
    /// both.
    pub(crate) fn with_attributes<'b>(&'b self, attributes: &'b Attributes<'b>) -> Request<'b> {
        Request {
            attributes,
            uid: self.uid,
            namespace: self.namespace.clone(),
            objects: self.objects,
        }
    }

    /// The object of the write's namespace (`None` for a cluster-scoped write, or a namespace not found).
    pub(crate) async fn namespace_object(&self) -> Option<&Value> {
        self.namespace
            .get_or_init(|| async {
                let ns = self.attributes.namespace?;
                let kv = self
                    .objects
                    .get("", "namespaces", None, ns, Freshness::Cached)
                    .await
                    .ok()
                    .flatten()?;
                serde_json::from_slice(&kv.value).ok()
            })
            .await
            .as_ref()
    }

    /// The AdmissionRequest of the write with its objects in `version` (kube's `request` of admission CEL, and
    /// the body of an AdmissionReview with `object` and `oldObject`).
    pub(crate) fn review_request(&self, version: &str, object: Option<&Value>, old: Option<&Value>) -> Value {
        let a = self.attributes;
        let (operation, options) = match a.operation {
            Operation::Create => ("CREATE", "CreateOptions"),
            Operation::Update => ("UPDATE", "UpdateOptions"),
            Operation::Delete => ("DELETE", "DeleteOptions"),
        };
        let mut request = json!({
            "uid": self.uid,
            "kind": {"group": a.group, "version": version, "kind": a.kind},
            "resource": {"group": a.group, "version": version, "resource": a.resource},
            "requestKind": {"group": a.group, "version": a.version, "kind": a.kind},
            "requestResource": {"group": a.group, "version": a.version, "resource": a.resource},
            "name": a.name,
            "operation": operation,
            "userInfo": {
                "username": a.user.name,
                "uid": a.user.uid,
                "groups": a.user.groups,
                "extra": a.user.extra,
            },
            "object": object,
            "oldObject": old,
            "dryRun": a.dry_run,
            "options": {"apiVersion": "meta.k8s.io/v1", "kind": options},
        });
        if !a.subresource.is_empty() {
            request["subResource"] = json!(a.subresource);
            request["requestSubResource"] = json!(a.subresource);
        }
        if let Some(ns) = a.namespace {
            request["namespace"] = json!(ns);
        }
        request
    }

    /// The write's object and old object in `version`.
    pub(crate) fn objects_in(&self, version: &str) -> Result<(Option<Value>, Option<Value>), ApiError> {
        let a = self.attributes;
        let convert = |o: Option<&Value>| -> Result<Option<Value>, ApiError> {
            o.map(|o| self.convert(o.clone(), version)).transpose()
        };
        Ok((convert(a.object)?, convert(a.old)?))
    }

    /// `obj` with the plugin's defaults set, as kube's scheme defaults an object a mutating webhook patched.
    pub(crate) fn default(&self, obj: Value) -> Result<Value, ApiError> {
        let a = self.attributes;
        a.plugin
            .strategy
            .default(a.resource, obj)
            .map_err(|e| ApiError::internal(format!("defaulting the object a webhook patched: {e}")))
    }

    /// `obj` converted to `version` of the written resource; a subresource's object of a kind of its own (a
    /// TokenRequest) as it is.
    pub(crate) fn convert(&self, obj: Value, version: &str) -> Result<Value, ApiError> {
        let a = self.attributes;
        if obj
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|kind| kind != a.info.kind)
        {
            return Ok(obj);
        }
        a.plugin
            .convert(a.resource, obj, version)
            .map_err(|e| ApiError::internal(format!("converting the object to {version} for admission: {e}")))
    }
}
