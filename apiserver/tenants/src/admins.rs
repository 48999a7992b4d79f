//! A tenant's admins (`admins` in its `tenant.yaml` or its Tenant object's spec): bound to `cluster-admin` inside the
//! tenant by a ClusterRoleBinding the host keeps in line with its configuration.

use serde_json::{json, Value};

use builtin::rbac::GROUP;
use registry::Registry;

/// The ClusterRoleBinding that binds a tenant's admins (its `tenant.yaml`) to cluster-admin inside it.
pub const TENANT_ADMINS: &str = "wasm-apiserver:tenant-admins";

/// Brings the tenant admins' ClusterRoleBinding in line with `users` and `groups`: created or updated when there are
/// admins, deleted when there are none. It is brought back in line at start and whenever `tenant.yaml` changes.
pub async fn ensure(registry: &Registry, users: &[String], groups: &[String]) -> anyhow::Result<()> {
    let key = binding_key();
    let stored = registry.storage.get(&key).await?;
    if users.is_empty() && groups.is_empty() {
        if let Some(kv) = stored {
            registry.storage.delete(&key, Some(kv.mod_revision)).await?;
            tracing::info!("removed the tenant admins binding");
        }
        return Ok(());
    }
    let subjects: Vec<Value> = users
        .iter()
        .map(|u| json!({"apiGroup": GROUP, "kind": "User", "name": u}))
        .chain(
            groups
                .iter()
                .map(|g| json!({"apiGroup": GROUP, "kind": "Group", "name": g})),
        )
        .collect();
    let roleref = json!({"apiGroup": GROUP, "kind": "ClusterRole", "name": "cluster-admin"});
    match stored {
        None => {
            use registry::store::{FieldValidation, WriteOptions};
            let object = json!({
                "apiVersion": format!("{GROUP}/v1"), "kind": "ClusterRoleBinding",
                "metadata": {"name": TENANT_ADMINS, "labels": {"app.kubernetes.io/managed-by": "wasm-apiserver"}},
                "roleRef": roleref,
                "subjects": subjects
            });
            let store = registry
                .system_store(GROUP, "clusterrolebindings")
                .ok_or_else(|| anyhow::anyhow!("clusterrolebindings are not served"))?;
            let opts = WriteOptions {
                dry_run: false,
                field_validation: FieldValidation::Strict,
            };
            store
                .create(None, object, opts)
                .await
                .map_err(|e| anyhow::anyhow!("creating {TENANT_ADMINS}: {}", e.message))?;
        }
        Some(kv) => {
            let mut object: Value = serde_json::from_slice(&kv.value)?;
            if object["subjects"] == json!(subjects) && object["roleRef"] == roleref {
                return Ok(());
            }
            object["subjects"] = json!(subjects);
            object["roleRef"] = roleref;
            registry
                .storage
                .update(&key, object.to_string().into_bytes(), kv.mod_revision)
                .await?;
        }
    }
    tracing::info!(?users, ?groups, "bound the tenant admins to cluster-admin");
    Ok(())
}

/// The storage key of the tenant admins' ClusterRoleBinding (the host's: it takes no room under the tenant's objects
/// limit).
pub fn binding_key() -> String {
    storage::keys::object_key(GROUP, "clusterrolebindings", None, TENANT_ADMINS)
}
