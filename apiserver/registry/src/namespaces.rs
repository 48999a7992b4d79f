//! Namespace lifecycle (kube's namespace controller; its admission check is `admission::namespace`): the initial
//! namespaces exist from the first start; a deleted namespace (marked Terminating by its graceful delete) is
//! emptied of every object of every served namespaced resource, then removed.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::Registry;
use builtin::core::{self, FINALIZER};
use storage::keys::{key_prefix, object_key};
use storage::{ListOptions, WatchEvent};

/// The namespaces' storage prefix.
pub fn prefix() -> String {
    key_prefix("", "namespaces", None)
}

/// A namespace's storage key.
pub fn key(name: &str) -> String {
    object_key("", "namespaces", None, name)
}

/// The storage keys of the namespaces the host makes in every tenant.
pub fn initial_keys() -> Vec<String> {
    core::INITIAL_NAMESPACES.iter().map(|name| key(name)).collect()
}

/// Creates the initial namespaces that do not exist yet.
pub async fn ensure_initial(registry: &Registry) -> anyhow::Result<()> {
    let Some(store) = registry.system_store("", "namespaces") else {
        anyhow::bail!("namespaces are not served");
    };
    let opts = super::store::WriteOptions {
        dry_run: false,
        field_validation: super::store::FieldValidation::Strict,
    };
    // Concurrently, so that the store commits them together.
    let created = futures_util::future::join_all(
        core::INITIAL_NAMESPACES
            .iter()
            .map(|name| async { (*name, store.create(None, core::namespace(name), opts).await) }),
    )
    .await;
    for (name, result) in created {
        match result {
            Ok(_) => tracing::info!(namespace = name, "created namespace"),
            Err(e) if e.reason == "AlreadyExists" => {}
            Err(e) => anyhow::bail!("creating namespace {name}: {}", e.message),
        }
    }
    Ok(())
}

/// The namespace controller: follows the namespaces and finalizes those marked Terminating, for as long as the
/// registry lives.
pub fn start_controller(registry: &Arc<Registry>) {
    super::controllers::run(registry, "namespaces", |registry| Box::pin(follow(registry)));
}

async fn follow(registry: &Arc<Registry>) -> anyhow::Result<()> {
    let prefix = prefix();
    let list = registry.storage.list(&prefix, ListOptions::default()).await?;
    for kv in &list.items {
        finalize_if_terminating(registry, &kv.value).await;
    }
    let mut watch = registry.storage.watch(&prefix, list.revision).await?;
    while let Some(event) = watch.recv().await {
        if let WatchEvent::Put { kv, .. } = event? {
            finalize_if_terminating(registry, &kv.value).await;
        }
    }
    anyhow::bail!("the namespace watch ended")
}

async fn finalize_if_terminating(registry: &Arc<Registry>, value: &[u8]) {
    let Ok(ns) = serde_json::from_slice::<Value>(value) else {
        return;
    };
    if ns.pointer("/status/phase").and_then(Value::as_str) != Some("Terminating") {
        return;
    }
    let name = ns
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    let registry = registry.clone();
    // Emptying a namespace may take a while: the watch goes on meanwhile.
    tokio::spawn(async move {
        let mut delay = Duration::from_millis(100);
        loop {
            match registry.until_closed(finalize(&registry, &name)).await {
                None | Some(Ok(())) => return,
                Some(Err(e)) => {
                    tracing::warn!(namespace = %name, error = %e, "namespace controller: finalizing failed; retrying")
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
        }
    });
}

/// Deletes every object in the namespace, of every served namespaced resource, then the namespace itself.
async fn finalize(registry: &Registry, name: &str) -> anyhow::Result<()> {
    let apis = registry.apis();
    for plugin in apis.plugins() {
        for resource in plugin.group.resources.iter().filter(|r| r.namespaced) {
            let prefix = key_prefix(&plugin.group.group, &resource.plural, Some(name));
            loop {
                let page = registry
                    .storage
                    .list(
                        &prefix,
                        ListOptions {
                            limit: 500,
                            ..ListOptions::default()
                        },
                    )
                    .await?;
                if page.items.is_empty() {
                    break;
                }
                for kv in page.items {
                    // One written meanwhile is read again by the next page.
                    registry
                        .delete_stored(&plugin.group.group, &resource.plural, &kv.key, kv.mod_revision)
                        .await?;
                }
            }
        }
    }
    // The namespace goes once empty: its finalizer is done (kube removes `kubernetes` from spec.finalizers, then
    // the object, having no finalizers left, is deleted).
    let key = key(name);
    match registry.storage.get(&key).await? {
        Some(kv) => {
            let ns: Value = serde_json::from_slice(&kv.value)?;
            let others = ns
                .pointer("/spec/finalizers")
                .and_then(Value::as_array)
                .is_some_and(|f| f.iter().any(|x| x != FINALIZER));
            // As kube's namespace storage: the object's own finalizers (metadata.finalizers) hold it too; the update
            // that removes the last of them brings the controller back here.
            if others || !apimachinery::object::finalizers(&ns).is_empty() {
                tracing::info!(namespace = %name, "namespace emptied; other finalizers remain");
                return Ok(());
            }
            // Changed meanwhile (a finalizer added): its update brings the controller back.
            if !registry.delete_stored("", "namespaces", &key, kv.mod_revision).await? {
                return Ok(());
            }
            // Objects elsewhere may name the namespace as their owner.
            if let Some(uid) = ns.pointer("/metadata/uid").and_then(Value::as_str) {
                registry.gc.enqueue([super::gc::Work::Gone {
                    uid: uid.to_owned(),
                    namespace: None,
                }]);
            }
            tracing::info!(namespace = %name, "namespace deleted");
            Ok(())
        }
        None => Ok(()),
    }
}
