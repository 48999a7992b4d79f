//! kube's NamespaceLifecycle admission plugin: objects are created only in namespaces that exist and are not
//! terminating. (The namespace controller that empties a terminating namespace is the registry's.)

use std::sync::Arc;

use crate::attributes::Attributes;
use crate::chain::Check;
use crate::objects::{Freshness, Reader};
use apimachinery::plugin::Operation;
use apimachinery::status::ApiError;
use storage::BoxFuture;

/// The NamespaceLifecycle check.
pub struct NamespaceLifecycle {
    objects: Arc<dyn Reader>,
}

impl NamespaceLifecycle {
    /// The check reading the namespaces of `objects`.
    pub fn new(objects: Arc<dyn Reader>) -> NamespaceLifecycle {
        NamespaceLifecycle { objects }
    }

    /// Whether the namespace exists and whether it is terminating: from the watch cache when the cache has it,
    /// else from storage (a namespace just created may not have reached the cache yet).
    async fn namespace(&self, name: &str) -> Result<Option<NamespacePhase>, ApiError> {
        let kv = self
            .objects
            .get("", "namespaces", None, name, Freshness::Cached)
            .await?;
        Ok(kv.and_then(|kv| serde_json::from_slice(&kv.value).ok()))
    }

    async fn check(&self, r: &Attributes<'_>) -> Result<(), ApiError> {
        let Some(ns) = r.namespace else {
            return Ok(());
        };
        if r.operation != Operation::Create {
            return Ok(());
        }
        let Some(namespace) = self.namespace(ns).await? else {
            return Err(ApiError::not_found("", "namespaces", ns));
        };
        if namespace.terminating() {
            let mut e = ApiError::forbidden(
                r.group,
                r.resource,
                r.name,
                &format!("unable to create new content in namespace {ns} because it is being terminated"),
            );
            e.causes = vec![apimachinery::status::Cause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {ns} is being terminated"),
                field: "metadata.namespace".into(),
            }];
            return Err(e);
        }
        Ok(())
    }
}

/// The part of a stored namespace that admission reads (on every create of a namespaced object): read without
/// building the rest of the object.
#[derive(serde::Deserialize)]
struct NamespacePhase {
    #[serde(default)]
    status: NamespaceStatus,
}

#[derive(serde::Deserialize, Default)]
struct NamespaceStatus {
    #[serde(default)]
    phase: Option<String>,
}

impl NamespacePhase {
    fn terminating(&self) -> bool {
        self.status.phase.as_deref() == Some("Terminating")
    }
}

impl Check for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    fn validate<'a>(&'a self, r: &'a Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
        Box::pin(async move { self.check(r).await.map(|()| Vec::new()) })
    }

    /// kube's NamespaceLifecycle is the first mutating plugin too: a create in a missing or terminating namespace
    /// reaches no mutating webhook.
    fn precedes_mutation(&self) -> bool {
        true
    }
}
