//! The cluster's admission policies, as kube-apiserver's MutatingAdmissionWebhook, ValidatingAdmissionPolicy and
//! ValidatingAdmissionWebhook admission plugins run them (`k8s.io/apiserver/pkg/admission/plugin/webhook` and
//! `.../policy/validating`), over the `admissionregistration.k8s.io/v1` objects of the tenant
//! (`builtin::admissionregistration`) and, with `--kubeconfig`, those of the cluster behind the server
//! ([`crate::remote`]), as an aggregated server built on k8s.io/apiserver reads them from its cluster.
//!
//! [`ClusterAdmission`] is the last check of the chain ([`crate::Chain`]):
//!
//! - **mutating**: after the plugins' mutating admission, each matching mutating webhook in order (configurations
//!   by name, their webhooks in order) is sent an `admission.k8s.io/v1` AdmissionReview and its JSON Patch
//!   applied; webhooks with `reinvocationPolicy: IfNeeded` are called once more when a later one changed the
//!   object ([`crate::webhook`]);
//! - **validating**, after the host's other checks: the bindings' ValidatingAdmissionPolicies ([`crate::policy`]), then
//!   every matching validating webhook, called concurrently.
//!
//! A webhook or policy matches a write by its rules (with `matchPolicy: Equivalent`, a rule naming another
//! served version of the resource matches, and the webhook sees the object converted to that version), its
//! namespace selector (the namespace's labels; a Namespace's own labels for a Namespace) and object selector (the
//! object's or the old object's labels), then its `matchConditions` (CEL). A failure to call a webhook or to
//! evaluate a condition follows its `failurePolicy`: `Fail` refuses the write with kube's InternalError,
//! `Ignore` lets it through (logged).
//!
//! The configuration is read on each write from the tenant's watch caches (a few shared reads; the compiled
//! snapshot is kept until an object changes), so a configuration written through this host applies to the next
//! write, and one written through another host as soon as its watch cache has it.
//!
//! Not done (kube has them): the `authorizer` CEL variable; audit annotations (`auditAnnotations`, the webhooks'
//! and the failed-open ones); webhook calls without a `caBundle` trust no root (this server has no system trust
//! store), so a webhook needs its `caBundle`.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::attributes::Attributes;
use crate::chain::{Check, Mutated, Mutates};
use crate::config::{self, Snapshot};
use crate::objects::{Freshness, Reader};
use crate::request::Request;
use crate::{policy, remote, webhook};
use apimachinery::plugin::Operation;
use apimachinery::status::ApiError;
use builtin::admissionregistration::{BINDINGS, GROUP, MUTATING_WEBHOOKS, POLICIES, VALIDATING_WEBHOOKS};
use storage::BoxFuture;

/// How long a snapshot read from storage (without watch caches) is used before reading again.
const UNCACHED_TTL: Duration = Duration::from_secs(1);
/// How long a write waits for the cluster's configuration to be first listed (kube's webhook plugins' 10 s).
const REMOTE_READY_TIMEOUT: Duration = Duration::from_secs(10);

/// The admission webhooks and policies of one tenant (and of the cluster behind the server).
pub struct ClusterAdmission {
    objects: Arc<dyn Reader>,
    remote: Option<Arc<remote::Remote>>,
    state: Mutex<State>,
    clients: webhook::Clients,
}

/// A resource's objects as seen: their count, and the sum and the largest of their revisions.
type Print = (usize, i64, i64);

#[derive(Default)]
struct State {
    /// What the snapshot was compiled from: per local resource its count of objects and the sum and the largest of
    /// their revisions (a create, update or delete changes one), and the remote generation.
    fingerprint: Option<([Print; 4], u64)>,
    read_at: Option<Instant>,
    snapshot: Arc<Snapshot>,
}

impl ClusterAdmission {
    /// The admission of a tenant's writes, its configuration read from `objects`, and the cluster's by `remote`
    /// too.
    pub fn new(objects: Arc<dyn Reader>, remote: Option<Arc<remote::Remote>>) -> ClusterAdmission {
        ClusterAdmission {
            objects,
            remote,
            state: Mutex::default(),
            clients: webhook::Clients::default(),
        }
    }

    /// The configuration as it is now, once the cluster's has been listed (kube's `WaitForReady`: up to 10 s, then
    /// 403 "not yet ready to handle request", as a webhook plugin refuses writes until its informers have synced).
    async fn ready_snapshot(&self, a: &Attributes<'_>) -> Result<Arc<Snapshot>, ApiError> {
        if let Some(remote) = &self.remote {
            if !remote.ready(REMOTE_READY_TIMEOUT).await {
                return Err(ApiError::forbidden(
                    a.group,
                    a.resource,
                    a.name,
                    "not yet ready to handle request",
                ));
            }
        }
        Ok(self.snapshot().await)
    }

    /// The configuration as it is now, compiled again only when an object changed.
    async fn snapshot(&self) -> Arc<Snapshot> {
        let objects = self.objects.as_ref();
        if !config::RESOURCES.iter().all(|r| objects.cached(GROUP, r)) {
            let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.read_at.is_some_and(|t| t.elapsed() < UNCACHED_TTL) {
                return state.snapshot.clone();
            }
        }
        let mut listed = Vec::with_capacity(4);
        for resource in config::RESOURCES {
            let items = objects.list(GROUP, resource, None, Freshness::Cached).await;
            match items {
                Ok(items) => listed.push(items),
                Err(e) => {
                    // The last snapshot stays (kube's informers keep theirs while the store is away).
                    tracing::warn!(error = %e.message, resource, "reading the admission configuration failed");
                    return self
                        .state
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .snapshot
                        .clone();
                }
            }
        }
        let remote_generation = self.remote.as_ref().map_or(0, |r| r.generation());
        let mut local = [(0, 0, 0); 4];
        for (print, items) in local.iter_mut().zip(&listed) {
            *print = (
                items.len(),
                items.iter().map(|kv| kv.mod_revision).sum(),
                items.iter().map(|kv| kv.mod_revision).max().unwrap_or(0),
            );
        }
        let fingerprint = (local, remote_generation);
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.read_at = Some(Instant::now());
            if state.fingerprint.as_ref() == Some(&fingerprint) {
                return state.snapshot.clone();
            }
        }
        let mut objects = config::Objects::default();
        for (resource, items) in config::RESOURCES.into_iter().zip(&listed) {
            for kv in items {
                if let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) {
                    let name = apimachinery::object::name(&obj).to_owned();
                    objects.of_mut(resource).insert(name, obj);
                }
            }
        }
        // The cluster's configuration and the tenant's are compiled apart: a tenant's object named as one of the
        // cluster's does not replace it, and a tenant's binding binds the tenant's policies only.
        let mut snapshot = match &self.remote {
            Some(remote) => Snapshot::compile(&remote.objects(), true),
            None => Snapshot::default(),
        };
        snapshot.append(Snapshot::compile(&objects, false));
        let snapshot = Arc::new(snapshot);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.fingerprint = Some(fingerprint);
        state.snapshot = snapshot.clone();
        snapshot
    }

    /// Whether the write is of a webhook configuration, which webhooks do not see (kube's exemption, so that a
    /// broken webhook can always be removed).
    fn exempt_from_webhooks(a: &Attributes<'_>) -> bool {
        a.group == GROUP && matches!(a.resource, MUTATING_WEBHOOKS | VALIDATING_WEBHOOKS)
    }

    /// Whether the write is of a policy or binding, which policies do not see.
    fn exempt_from_policies(a: &Attributes<'_>) -> bool {
        a.group == GROUP && matches!(a.resource, POLICIES | BINDINGS)
    }
}

impl Check for ClusterAdmission {
    fn name(&self) -> &'static str {
        "ClusterAdmission"
    }

    fn validate<'a>(&'a self, a: &'a Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
        Box::pin(async move {
            let snapshot = self.ready_snapshot(a).await?;
            let bindings: &[Arc<config::BoundPolicy>] = if Self::exempt_from_policies(a) {
                &[]
            } else {
                &snapshot.bindings
            };
            let webhooks: &[Arc<config::Webhook>] = if Self::exempt_from_webhooks(a) {
                &[]
            } else {
                &snapshot.validating
            };
            if bindings.is_empty() && webhooks.is_empty() {
                return Ok(Vec::new());
            }
            let uid = uuid::Uuid::new_v4().to_string();
            let request = Request::new(a, &uid, self.objects.as_ref());
            let mut warnings = policy::validate(bindings, &request).await?;
            warnings.extend(webhook::validate(&self.clients, webhooks, &request).await?);
            Ok(warnings)
        })
    }

    fn mutates<'a>(&'a self, a: &'a Attributes<'a>) -> BoxFuture<'a, Mutates> {
        Box::pin(async move {
            if Self::exempt_from_webhooks(a) || a.operation == Operation::Delete {
                return Mutates::No;
            }
            // Until the cluster's configuration is listed, a write may have webhooks to meet: mutate waits for it.
            if self.remote.as_ref().is_some_and(|r| !r.is_ready()) {
                return Mutates::Yes;
            }
            let snapshot = self.snapshot().await;
            let uid = String::new();
            let request = Request::new(a, &uid, self.objects.as_ref());
            let matched = snapshot
                .mutating
                .iter()
                .any(|w| w.constraints.matching_version(&request, false).is_some());
            if matched {
                Mutates::Yes
            } else {
                Mutates::No
            }
        })
    }

    /// Of the webhooks' changes, the object's identity (apiVersion, kind, name, namespace) and the host's own
    /// metadata (uid, resourceVersion, timestamps, generation, managed fields) are not kept.
    fn mutate<'a>(&'a self, a: &'a Attributes<'a>) -> BoxFuture<'a, Result<Option<Mutated>, ApiError>> {
        Box::pin(async move {
            let Some(object) = a.object else {
                return Ok(None);
            };
            let snapshot = self.ready_snapshot(a).await?;
            let uid = uuid::Uuid::new_v4().to_string();
            let request = Request::new(a, &uid, self.objects.as_ref());
            let mutated = webhook::mutate(&self.clients, &snapshot.mutating, &request, object.clone()).await?;
            Ok(Some(Mutated {
                object: keep_identity(object, mutated.object),
                warnings: mutated.warnings,
            }))
        })
    }
}

/// `after` with the identity and the host's metadata of `before`.
fn keep_identity(before: &Value, mut after: Value) -> Value {
    const HOSTS: [&str; 9] = [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "deletionTimestamp",
        "managedFields",
    ];
    if !after.is_object() {
        return after;
    }
    if !after.get("metadata").is_some_and(Value::is_object) {
        after["metadata"] = serde_json::json!({});
    }
    let empty = serde_json::Map::new();
    let old = before.get("metadata").and_then(Value::as_object).unwrap_or(&empty);
    if let Some(meta) = after["metadata"].as_object_mut() {
        for field in HOSTS {
            match old.get(field) {
                Some(v) => meta.insert(field.to_owned(), v.clone()),
                None => meta.remove(field),
            };
        }
    }
    for field in ["apiVersion", "kind"] {
        if let Some(v) = before.get(field) {
            after[field] = v.clone();
        }
    }
    after
}
