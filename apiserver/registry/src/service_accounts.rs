//! What kube-controller-manager keeps in every namespace for its workloads' identities, kept here by the server
//! itself: a `default` ServiceAccount (kube's `serviceaccounts-controller`) and the `kube-root-ca.crt` ConfigMap with
//! the CA bundle that verifies the server (kube's `root-ca-cert-publisher`). Each is made in every active namespace,
//! made again when deleted, and the ConfigMap's data and description are put back when changed. A Terminating
//! namespace is left alone (the namespace controller is emptying it).
//!
//! One task a registry (a tenant's, once it is built) follows the namespaces, the service accounts and the ConfigMaps
//! with three storage watches, and looks at every namespace again every [`RESYNC`]; its writes go through the
//! registry as the server's own, on the host that leads only (hosts sharing a store may have bundles of their own).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::controllers::Leading;
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
/// The annotation describing the ConfigMap.
const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
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

/// How often every namespace is looked at again while this host leads: what failed is retried, and what changed
/// while another host led is caught up with.
const RESYNC: Duration = Duration::from_secs(60);
/// How often a host that does not lead looks whether it leads now.
const FOLLOWER_CHECK: Duration = Duration::from_secs(10);

/// Starts the controller for as long as the registry lives; `root_ca` is the bundle published (none: no ConfigMap).
/// Any host that has the tenant makes what is missing (at start, and as namespaces come and objects go); only the
/// host that leads puts back a changed bundle (hosts sharing a store may have bundles of their own) and looks at
/// every namespace again every [`RESYNC`].
pub fn start_controller(registry: &Arc<Registry>, root_ca: Option<Arc<str>>, leading: Leading) {
    super::controllers::run(registry, "service accounts", move |registry| {
        let (root_ca, leading) = (root_ca.clone(), leading.clone());
        Box::pin(async move { follow(registry, root_ca.as_deref(), &leading).await })
    });
}

async fn follow(registry: &Registry, root_ca: Option<&str>, leading: &Leading) -> anyhow::Result<()> {
    let (namespaces, accounts, config_maps) = (
        super::namespaces::prefix(),
        key_prefix("", "serviceaccounts", None),
        key_prefix("", "configmaps", None),
    );
    let revision = registry
        .storage
        .list(
            &namespaces,
            ListOptions {
                limit: 1,
                ..ListOptions::default()
            },
        )
        .await?
        .revision;
    let mut namespace_events = registry.storage.watch(&namespaces, revision).await?;
    let mut account_events = registry.storage.watch(&accounts, revision).await?;
    let mut config_map_events = registry.storage.watch(&config_maps, revision).await?;
    // What is missing, on any host, at once.
    reconcile_all(registry, root_ca, false).await?;
    let mut next_resync = tokio::time::Instant::now();
    loop {
        tokio::select! {
            () = tokio::time::sleep_until(next_resync) => {
                let leads = leading();
                if leads {
                    reconcile_all(registry, root_ca, true).await?;
                }
                next_resync = tokio::time::Instant::now() + if leads { RESYNC } else { FOLLOWER_CHECK };
            }
            event = namespace_events.recv() => {
                if let WatchEvent::Put { kv, .. } = event.ok_or_else(|| anyhow::anyhow!("the namespace watch ended"))?? {
                    if let Some(name) = active_namespace(&kv.value) {
                        reconcile(registry, &name, root_ca, leading()).await;
                    }
                }
            }
            event = account_events.recv() => {
                if let WatchEvent::Delete { prev, .. } = event.ok_or_else(|| anyhow::anyhow!("the service account watch ended"))?? {
                    if let Some(namespace) = namespace_of(&prev.key, &accounts, DEFAULT_ACCOUNT) {
                        if is_active(registry, namespace).await? {
                            reconcile(registry, namespace, None, false).await;
                        }
                    }
                }
            }
            event = config_map_events.recv() => {
                let event = event.ok_or_else(|| anyhow::anyhow!("the ConfigMap watch ended"))??;
                // Gone: made again by any host; changed: put back by the host that leads.
                let (key, gone) = match &event {
                    WatchEvent::Put { kv, .. } if !publishes(&kv.value, root_ca) => (&kv.key, false),
                    WatchEvent::Delete { prev, .. } => (&prev.key, true),
                    _ => continue,
                };
                let namespace = namespace_of(key, &config_maps, ROOT_CA_CONFIG_MAP).filter(|_| gone || leading());
                if let (Some(namespace), Some(ca)) = (namespace, root_ca) {
                    if is_active(registry, namespace).await? {
                        publish_root_ca(registry, namespace, ca, !gone).await;
                    }
                }
            }
        }
    }
}

/// Looks at every active namespace (`repair`: a changed ConfigMap is put back too).
async fn reconcile_all(registry: &Registry, root_ca: Option<&str>, repair: bool) -> anyhow::Result<()> {
    let mut after = None;
    loop {
        let page = registry
            .storage
            .list(
                &super::namespaces::prefix(),
                ListOptions {
                    limit: 500,
                    start_after: after.take(),
                    ..ListOptions::default()
                },
            )
            .await?;
        for kv in &page.items {
            if let Some(name) = active_namespace(&kv.value) {
                reconcile(registry, &name, root_ca, repair).await;
            }
        }
        match page.items.last() {
            Some(last) if page.remaining > 0 => after = Some(last.key.clone()),
            _ => return Ok(()),
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

/// Whether a stored ConfigMap is as the publisher makes it: the bundle alone in its data, kube's description (or
/// there is none to publish).
fn publishes(value: &[u8], root_ca: Option<&str>) -> bool {
    let Some(ca) = root_ca else {
        return true;
    };
    serde_json::from_slice::<Value>(value).is_ok_and(|cm| {
        cm.get("data") == Some(&json!({ROOT_CA_KEY: ca}))
            && cm
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
                == Some(&json!(ROOT_CA_DESCRIPTION))
    })
}

fn options() -> WriteOptions {
    WriteOptions {
        dry_run: false,
        field_validation: FieldValidation::Strict,
    }
}

/// Makes the namespace's default service account (and with `root_ca`, its ConfigMap) where missing, and with
/// `repair` puts a changed ConfigMap back.
async fn reconcile(registry: &Registry, namespace: &str, root_ca: Option<&str>, repair: bool) {
    let [account_key, config_map_key] = keys_in(namespace);
    let missing = matches!(registry.storage.get(&account_key).await, Ok(None));
    if let Some(store) = registry.background_store("", "serviceaccounts").filter(|_| missing) {
        let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": DEFAULT_ACCOUNT, "namespace": namespace}});
        match store.create(Some(namespace), account, options()).await {
            Ok(_) => tracing::debug!(namespace, "created the default service account"),
            Err(e) if e.reason == "AlreadyExists" => {}
            // Tried again by the next resync (a namespace being deleted refuses it for good).
            Err(e) => tracing::info!(namespace, error = %e.message, "creating the default service account"),
        }
    }
    if let Some(ca) = root_ca {
        let to_do = match registry.storage.get(&config_map_key).await {
            Ok(None) => true,
            Ok(Some(kv)) => repair && !publishes(&kv.value, root_ca),
            Err(_) => false,
        };
        if to_do {
            publish_root_ca(registry, namespace, ca, repair).await;
        }
    }
}

/// Makes the namespace's root CA ConfigMap, or with `repair` puts its data and description back as kube's publisher
/// does (its data is the bundle alone; its other metadata is kept).
async fn publish_root_ca(registry: &Registry, namespace: &str, ca: &str, repair: bool) {
    let Some(store) = registry.background_store("", "configmaps") else {
        return;
    };
    let config_map = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": namespace,
            "annotations": {DESCRIPTION_ANNOTATION: ROOT_CA_DESCRIPTION}},
        "data": {ROOT_CA_KEY: ca}});
    let result = match store.create(Some(namespace), config_map, options()).await {
        Err(e) if e.reason == "AlreadyExists" && !repair => Ok(()),
        Err(e) if e.reason == "AlreadyExists" => {
            match store
                .get(Some(namespace), ROOT_CA_CONFIG_MAP, super::read::ReadAt::Latest)
                .await
            {
                Ok(cm) if publishes(&serde_json::to_vec(&cm).unwrap_or_default(), Some(ca)) => Ok(()),
                Ok(mut cm) => {
                    cm["data"] = json!({ROOT_CA_KEY: ca});
                    if !cm["metadata"]["annotations"].is_object() {
                        cm["metadata"]["annotations"] = json!({});
                    }
                    cm["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!(ROOT_CA_DESCRIPTION);
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
        tracing::info!(namespace, error = %e.message, "publishing the root CA");
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
        let described = json!({"kubernetes.io/description": ROOT_CA_DESCRIPTION});
        assert!(publishes(
            &ns(json!({"metadata": {"annotations": described}, "data": {"ca.crt": "PEM"}})),
            Some("PEM")
        ));
        assert!(!publishes(
            &ns(json!({"metadata": {"annotations": described}, "data": {"ca.crt": "PEM", "x": "y"}})),
            Some("PEM")
        ));
        assert!(!publishes(&ns(json!({"data": {"ca.crt": "PEM"}})), Some("PEM")));
        assert!(!publishes(&ns(json!({"data": {"ca.crt": "other"}})), Some("PEM")));
        assert!(!publishes(&ns(json!({})), Some("PEM")));
        assert!(publishes(&ns(json!({})), None));
    }
}
