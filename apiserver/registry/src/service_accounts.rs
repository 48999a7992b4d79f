//! What kube-controller-manager keeps in every namespace for its workloads' identities, kept here by the server
//! itself: a `default` ServiceAccount (kube's `serviceaccounts-controller`) and the `kube-root-ca.crt` ConfigMap with
//! the CA bundle that verifies the server (kube's `root-ca-cert-publisher`). Each is made in every active namespace,
//! made again when deleted, and the ConfigMap's bundle is put back when changed. A Terminating namespace is left
//! alone (the namespace controller is emptying it).
//!
//! One task a registry (a tenant's, once it is built) follows the namespaces, the service accounts and the ConfigMaps
//! with three storage watches; its writes go through the registry as the server's own.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::store::{FieldValidation, WriteOptions};
use super::Registry;
use storage::keys::{key_prefix, object_key};
use storage::{ListOptions, WatchEvent};

/// The service account every namespace has.
pub const DEFAULT_ACCOUNT: &str = "default";
/// The ConfigMap every namespace has, with the server's CA bundle under `ca.crt`.
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The ConfigMap's key holding the bundle.
pub const ROOT_CA_KEY: &str = "ca.crt";
/// kube's description of the ConfigMap (its `kubernetes.io/description` annotation).
const ROOT_CA_DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The storage keys of what the controller makes in `namespace`: the default service account, and the root CA's
/// ConfigMap.
pub fn keys_in(namespace: &str) -> [String; 2] {
    [
        object_key("", "serviceaccounts", Some(namespace), DEFAULT_ACCOUNT),
        object_key("", "configmaps", Some(namespace), ROOT_CA_CONFIG_MAP),
    ]
}

/// The names the controller makes in every namespace, by the key prefix of their resource: objects the host owns.
pub fn owned_names() -> Vec<(String, String)> {
    vec![
        (key_prefix("", "serviceaccounts", None), DEFAULT_ACCOUNT.to_owned()),
        (key_prefix("", "configmaps", None), ROOT_CA_CONFIG_MAP.to_owned()),
    ]
}

/// Starts the controller for as long as the registry lives; `root_ca` is the bundle published (none: no ConfigMap).
pub fn start_controller(registry: &Arc<Registry>, root_ca: Option<Arc<str>>) {
    let weak = Arc::downgrade(registry);
    tokio::spawn(async move {
        loop {
            let Some(registry) = weak.upgrade() else {
                return;
            };
            match registry.until_closed(follow(&registry, root_ca.as_deref())).await {
                None => return,
                Some(Err(e)) => tracing::warn!(error = %e, "service account controller: restarting"),
                Some(Ok(())) => {}
            }
            drop(registry);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}

async fn follow(registry: &Registry, root_ca: Option<&str>) -> anyhow::Result<()> {
    let (namespaces, accounts, config_maps) = (
        super::namespaces::prefix(),
        key_prefix("", "serviceaccounts", None),
        key_prefix("", "configmaps", None),
    );
    let list = registry.storage.list(&namespaces, ListOptions::default()).await?;
    let mut namespace_events = registry.storage.watch(&namespaces, list.revision).await?;
    let mut account_events = registry.storage.watch(&accounts, list.revision).await?;
    let mut config_map_events = registry.storage.watch(&config_maps, list.revision).await?;
    for kv in &list.items {
        if let Some(name) = active_namespace(&kv.value) {
            reconcile(registry, &name, root_ca).await;
        }
    }
    loop {
        tokio::select! {
            event = namespace_events.recv() => {
                if let WatchEvent::Put { kv, .. } = event.ok_or_else(|| anyhow::anyhow!("the namespace watch ended"))?? {
                    if let Some(name) = active_namespace(&kv.value) {
                        reconcile(registry, &name, root_ca).await;
                    }
                }
            }
            event = account_events.recv() => {
                if let WatchEvent::Delete { prev, .. } = event.ok_or_else(|| anyhow::anyhow!("the service account watch ended"))?? {
                    if let Some(namespace) = namespace_of(&prev.key, &accounts, DEFAULT_ACCOUNT) {
                        if is_active(registry, namespace).await? {
                            reconcile(registry, namespace, None).await;
                        }
                    }
                }
            }
            event = config_map_events.recv() => {
                let event = event.ok_or_else(|| anyhow::anyhow!("the ConfigMap watch ended"))??;
                let key = match &event {
                    WatchEvent::Put { kv, .. } if !publishes(&kv.value, root_ca) => &kv.key,
                    WatchEvent::Delete { prev, .. } => &prev.key,
                    _ => continue,
                };
                if let (Some(namespace), Some(ca)) = (namespace_of(key, &config_maps, ROOT_CA_CONFIG_MAP), root_ca) {
                    if is_active(registry, namespace).await? {
                        publish_root_ca(registry, namespace, ca).await;
                    }
                }
            }
        }
    }
}

/// The name of a namespace that is neither Terminating nor being deleted.
fn active_namespace(value: &[u8]) -> Option<String> {
    let ns: Value = serde_json::from_slice(value).ok()?;
    let deleting = ns.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    let terminating = ns.pointer("/status/phase").and_then(Value::as_str) == Some("Terminating");
    if deleting || terminating {
        return None;
    }
    ns.pointer("/metadata/name").and_then(Value::as_str).map(str::to_owned)
}

/// Whether the namespace exists and is active (not being emptied by the namespace controller).
async fn is_active(registry: &Registry, namespace: &str) -> anyhow::Result<bool> {
    let kv = registry.storage.get(&super::namespaces::key(namespace)).await?;
    Ok(kv.is_some_and(|kv| active_namespace(&kv.value).is_some()))
}

/// The namespace of `key` when it is that of the object `name` under `prefix`.
fn namespace_of<'a>(key: &'a str, prefix: &str, name: &str) -> Option<&'a str> {
    let (namespace, object) = key.strip_prefix(prefix)?.split_once('/')?;
    (object == name).then_some(namespace)
}

/// Whether a stored ConfigMap holds the bundle (or there is none to publish).
fn publishes(value: &[u8], root_ca: Option<&str>) -> bool {
    let Some(ca) = root_ca else {
        return true;
    };
    serde_json::from_slice::<Value>(value)
        .ok()
        .and_then(|cm| cm.pointer(&format!("/data/{ROOT_CA_KEY}")).cloned())
        .is_some_and(|v| v == ca)
}

fn options() -> WriteOptions {
    WriteOptions {
        dry_run: false,
        field_validation: FieldValidation::Strict,
    }
}

/// Makes the namespace's default service account (and with `root_ca`, its ConfigMap) where missing.
async fn reconcile(registry: &Registry, namespace: &str, root_ca: Option<&str>) {
    if let Some(store) = registry.system_store("", "serviceaccounts") {
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace}});
        match store.create(Some(namespace), account, options()).await {
            Ok(_) => tracing::debug!(namespace, "created the default service account"),
            Err(e) if e.reason == "AlreadyExists" => {}
            // A namespace being deleted refuses it (its next event says so).
            Err(e) => tracing::debug!(namespace, error = %e.message, "creating the default service account"),
        }
    }
    if let Some(ca) = root_ca {
        publish_root_ca(registry, namespace, ca).await;
    }
}

/// Makes the namespace's root CA ConfigMap, or puts its bundle back.
async fn publish_root_ca(registry: &Registry, namespace: &str, ca: &str) {
    let Some(store) = registry.system_store("", "configmaps") else {
        return;
    };
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION}},
        "data": {ROOT_CA_KEY: ca}});
    let result = match store.create(Some(namespace), config_map, options()).await {
        Err(e) if e.reason == "AlreadyExists" => {
            // Changed by someone: the bundle is put back (the rest of the object kept).
            let current = store
                .get(Some(namespace), ROOT_CA_CONFIG_MAP, super::read::ReadAt::Latest)
                .await;
            match current {
                Ok(cm) if cm.pointer(&format!("/data/{ROOT_CA_KEY}")).is_some_and(|v| v == ca) => Ok(()),
                Ok(mut cm) => {
                    if !cm.get("data").is_some_and(Value::is_object) {
                        cm["data"] = json!({});
                    }
                    cm["data"][ROOT_CA_KEY] = json!(ca);
                    store
                        .update(Some(namespace), ROOT_CA_CONFIG_MAP, cm, options())
                        .await
                        .map(drop)
                }
                Err(e) => Err(e),
            }
        }
        other => other.map(drop),
    };
    if let Err(e) = result {
        tracing::debug!(namespace, error = %e.message, "publishing the root CA");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_name_their_namespace() {
        let prefix = key_prefix("", "serviceaccounts", None);
        assert_eq!(
            namespace_of("/registry/core/serviceaccounts/team-a/default", &prefix, "default"),
            Some("team-a")
        );
        assert_eq!(
            namespace_of("/registry/core/serviceaccounts/team-a/builder", &prefix, "default"),
            None
        );
        assert_eq!(
            namespace_of("/registry/core/configmaps/team-a/default", &prefix, "default"),
            None
        );
        assert_eq!(
            keys_in("team-a")[1],
            "/registry/core/configmaps/team-a/kube-root-ca.crt"
        );
    }

    #[test]
    fn only_active_namespaces_get_accounts() {
        let ns = |v: Value| serde_json::to_vec(&v).unwrap();
        assert_eq!(
            active_namespace(&ns(json!({"metadata": {"name": "a"}, "status": {"phase": "Active"}}))),
            Some("a".to_owned())
        );
        assert_eq!(
            active_namespace(&ns(
                json!({"metadata": {"name": "a"}, "status": {"phase": "Terminating"}})
            )),
            None
        );
        assert_eq!(
            active_namespace(&ns(
                json!({"metadata": {"name": "a", "deletionTimestamp": "2026-12-07T10:00:00Z"}})
            )),
            None
        );
        assert!(publishes(&ns(json!({"data": {"ca.crt": "PEM"}})), Some("PEM")));
        assert!(!publishes(&ns(json!({"data": {"ca.crt": "other"}})), Some("PEM")));
        assert!(!publishes(&ns(json!({})), Some("PEM")));
        assert!(publishes(&ns(json!({})), None));
    }
}
