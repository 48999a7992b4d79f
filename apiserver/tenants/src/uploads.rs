//! Uploaded plugin components: the bytes PUT to a Plugin's `content` subresource (`spec.source.upload`), for a host
//! without a registry. They are stored in the tenant's storage by content hash, in chunks small enough for etcd
//! (`/registry/tenancy.wasm-apiserver.io/plugincontents/<sha256>/chunk-NNNNN`, then a `manifest` written last), so
//! that every host sharing the store reads them: an upload is never served by the host that took it alone. The
//! Plugin's `status.resolved.digest` then names them, and every host's controller ([`super::plugins`]) loads them.

use std::sync::{Arc, Weak};

use bytes::Bytes;
use serde_json::{json, Value};

use crate::api::plugins as objects;
use crate::api::GROUP;
use apimachinery::status::ApiError;
use registry::Registry;
use storage::{BoxFuture, Storage, StorageError};

/// The media type of an upload.
pub const CONTENT_TYPE: &str = "application/wasm";
/// The resource (in key paths only) the chunks are stored under.
pub const CONTENTS: &str = "plugincontents";
/// The size of one chunk: well under etcd's default request limit (1.5 MiB).
const CHUNK: usize = 512 * 1024;

/// The key prefix of the tenant's stored components.
pub fn contents_prefix() -> String {
    storage::keys::key_prefix(GROUP, CONTENTS, None)
}

fn content_prefix(digest: &str) -> String {
    format!("{}{}/", contents_prefix(), digest.trim_start_matches("sha256:"))
}

/// Takes the uploads of one tenant's Plugins.
pub struct Uploads {
    /// The tenant's registry.
    pub registry: Weak<Registry>,
    /// The most bytes an upload may have.
    pub max_bytes: u64,
}

impl endpoints::Uploads for Uploads {
    fn max_bytes(&self) -> usize {
        usize::try_from(self.max_bytes).unwrap_or(usize::MAX)
    }

    fn resource(&self) -> (&str, &str) {
        (GROUP, objects::RESOURCE)
    }

    fn put<'a>(
        &'a self,
        name: &'a str,
        content_type: Option<&'a str>,
        body: Bytes,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        Box::pin(async move {
            let registry = self
                .registry
                .upgrade()
                .ok_or_else(|| ApiError::internal("the tenant is not served"))?;
            let media_type = content_type.map(|c| c.split(';').next().unwrap_or("").trim());
            if media_type != Some(CONTENT_TYPE) {
                return Err(ApiError::new(
                    415,
                    "UnsupportedMediaType",
                    format!(
                        "the body of plugins/content must be {CONTENT_TYPE} (a WebAssembly component), not {:?}",
                        content_type.unwrap_or("")
                    ),
                ));
            }
            if !oci::is_component(&body) {
                return Err(ApiError::bad_request(
                    "the body is not a WebAssembly component (it does not begin with the component header)",
                ));
            }
            let key = storage::keys::object_key(GROUP, objects::RESOURCE, None, name);
            let Some(kv) = registry.storage.get(&key).await.map_err(storage_error(name))? else {
                return Err(ApiError::not_found(GROUP, objects::RESOURCE, name));
            };
            let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| ApiError::internal(e.to_string()))?;
            if obj.pointer("/spec/source/upload").is_none() {
                return Err(ApiError::bad_request(format!(
                    "plugin {name:?} takes no upload: its spec.source is not upload (set spec.source.upload: {{}} to \
                     upload its component, or push it to a registry and name it in spec.source.oci)"
                )));
            }
            let digest = oci::sha256_digest(&body);
            store(&registry, name, &digest, &body).await?;
            record(&registry, name, &digest).await
        })
    }
}

/// A storage failure about the Plugin `name`, as the store answers it.
fn storage_error(name: &str) -> impl Fn(StorageError) -> ApiError + '_ {
    move |e| registry::errors::from_storage(e, GROUP, objects::RESOURCE, name)
}

/// Stores `bytes` (whose digest is `digest`), the upload of the Plugin `name`, in chunks, unless they are stored
/// already; counted in the tenant's `storageBytes` (refused with 403 over it).
async fn store(registry: &Registry, name: &str, digest: &str, bytes: &[u8]) -> Result<(), ApiError> {
    let prefix = content_prefix(digest);
    let manifest_key = format!("{prefix}manifest");
    if registry
        .storage
        .get(&manifest_key)
        .await
        .map_err(storage_error(name))?
        .is_some()
    {
        return Ok(());
    }
    let chunks: Vec<&[u8]> = bytes.chunks(CHUNK).collect();
    let reservation = registry.quota.reserve(
        &manifest_key,
        GROUP,
        objects::RESOURCE,
        digest,
        0,
        bytes.len() as i64,
        false,
    )?;
    for (i, chunk) in chunks.iter().enumerate() {
        let key = format!("{prefix}chunk-{i:05}");
        match registry.storage.create(&key, chunk.to_vec()).await {
            Ok(_) | Err(StorageError::AlreadyExists { .. }) => {}
            Err(e) => return Err(storage_error(name)(e)),
        }
    }
    let manifest = json!({"digest": digest, "size": bytes.len(), "chunks": chunks.len()});
    match registry
        .storage
        .create(&manifest_key, manifest.to_string().into_bytes())
        .await
    {
        Ok(_) => {}
        // Stored meanwhile by another upload of the same bytes (the room it took is given back).
        Err(StorageError::AlreadyExists { .. }) => return Ok(()),
        Err(e) => return Err(storage_error(name)(e)),
    }
    reservation.commit();
    Ok(())
}

/// Records in the Plugin's `status.resolved` the digest of its uploaded component, and answers with the Plugin.
async fn record(registry: &Registry, name: &str, digest: &str) -> Result<Value, ApiError> {
    let key = storage::keys::object_key(GROUP, objects::RESOURCE, None, name);
    for _ in 0..5 {
        let Some(kv) = registry.storage.get(&key).await.map_err(storage_error(name))? else {
            return Err(ApiError::not_found(GROUP, objects::RESOURCE, name));
        };
        let mut obj: Value = serde_json::from_slice(&kv.value).map_err(|e| ApiError::internal(e.to_string()))?;
        let previous = resolved_upload(&obj).map(str::to_owned);
        if !obj.get("status").is_some_and(Value::is_object) {
            obj["status"] = json!({});
        }
        obj["status"]["resolved"] = json!({"digest": digest, "uploaded": apimachinery::object::now_rfc3339()});
        match registry.update_around_store(&kv, &obj).await {
            Ok(stored) => {
                obj["metadata"]["resourceVersion"] = json!(stored.mod_revision.to_string());
                if let Some(previous) = previous.filter(|p| p != digest) {
                    forget_unused(registry, &previous).await;
                }
                return Ok(obj);
            }
            Err(StorageError::Conflict { .. }) => continue,
            Err(StorageError::NotFound { .. }) => return Err(ApiError::not_found(GROUP, objects::RESOURCE, name)),
            Err(e) => return Err(storage_error(name)(e)),
        }
    }
    Err(ApiError::conflict(
        GROUP,
        objects::RESOURCE,
        name,
        "the plugin kept changing while its upload was recorded; try again",
    ))
}

/// The digest of the uploaded component a Plugin's status names, if its source is an upload.
pub fn resolved_upload(obj: &Value) -> Option<&str> {
    obj.pointer("/spec/source/upload")?;
    let resolved = obj.pointer("/status/resolved")?;
    if resolved.get("reference").is_some() {
        return None;
    }
    resolved.get("digest").and_then(Value::as_str)
}

/// Reads the uploaded component `digest` back from storage, checking its digest.
pub async fn read(storage: &dyn Storage, digest: &str) -> anyhow::Result<Vec<u8>> {
    let prefix = content_prefix(digest);
    let manifest = storage
        .get(&format!("{prefix}manifest"))
        .await?
        .ok_or_else(|| anyhow::anyhow!("the uploaded component {digest} is not stored (upload it again)"))?;
    let manifest: Value = serde_json::from_slice(&manifest.value)?;
    let chunks = manifest.get("chunks").and_then(Value::as_u64).unwrap_or(0);
    let mut bytes = Vec::with_capacity(manifest.get("size").and_then(Value::as_u64).unwrap_or(0) as usize);
    for i in 0..chunks {
        let chunk = storage
            .get(&format!("{prefix}chunk-{i:05}"))
            .await?
            .ok_or_else(|| anyhow::anyhow!("chunk {i} of the uploaded component {digest} is missing"))?;
        bytes.extend_from_slice(&chunk.value);
    }
    let actual = oci::sha256_digest(&bytes);
    anyhow::ensure!(
        actual == digest,
        "the stored component has digest {actual}, not {digest}"
    );
    Ok(bytes)
}

/// Deletes the stored component `digest` unless a Plugin of the tenant still names it.
pub async fn forget_unused(registry: &Registry, digest: &str) {
    let plugins = storage::keys::key_prefix(GROUP, objects::RESOURCE, None);
    let Ok(list) = registry.storage.list(&plugins, storage::ListOptions::default()).await else {
        return;
    };
    let used = list.items.iter().any(|kv| {
        serde_json::from_slice::<Value>(&kv.value)
            .ok()
            .is_some_and(|o| resolved_upload(&o) == Some(digest))
    });
    if used {
        return;
    }
    let prefix = content_prefix(digest);
    let Ok(stored) = registry.storage.list(&prefix, storage::ListOptions::default()).await else {
        return;
    };
    // The manifest first, so that no reader takes the chunks for whole meanwhile.
    let mut keys: Vec<_> = stored.items.into_iter().map(|kv| (kv.key, kv.value.len())).collect();
    keys.sort_by_key(|(k, _)| !k.ends_with("/manifest"));
    for (key, size) in keys {
        if registry.storage.delete(&key, None).await.is_ok() {
            let bytes = if key.ends_with("/manifest") { 0 } else { size as i64 };
            registry.quota.record(&key, 0, -bytes);
        }
    }
}

/// The uploads of a tenant's registry.
pub fn for_registry(registry: &Arc<Registry>, max_bytes: u64) -> Arc<dyn endpoints::Uploads> {
    Arc::new(Uploads {
        registry: Arc::downgrade(registry),
        max_bytes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn components_are_stored_in_chunks_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = Arc::new(storage::embedded::EmbeddedStorage::open(dir.path()).unwrap());
        let registry = Registry::new(storage.clone());
        let bytes: Vec<u8> = (0..CHUNK * 2 + 100).map(|i| (i % 251) as u8).collect();
        let digest = oci::sha256_digest(&bytes);
        store(&registry, "p", &digest, &bytes).await.unwrap();
        let prefix = content_prefix(&digest);
        let keys = || async {
            let list = storage.list(&prefix, storage::ListOptions::default()).await.unwrap();
            list.items
                .into_iter()
                .map(|kv| kv.key.rsplit('/').next().unwrap().to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(keys().await, ["chunk-00000", "chunk-00001", "chunk-00002", "manifest"]);
        assert_eq!(read(storage.as_ref(), &digest).await.unwrap(), bytes);
        assert_eq!(registry.quota.usage().1, bytes.len() as i64);
        // The same bytes again: stored once, counted once.
        store(&registry, "p", &digest, &bytes).await.unwrap();
        assert_eq!(registry.quota.usage().1, bytes.len() as i64);
        // No Plugin names them: they go.
        forget_unused(&registry, &digest).await;
        assert!(keys().await.is_empty());
        assert_eq!(registry.quota.usage().1, 0);
        let e = read(storage.as_ref(), &digest).await.unwrap_err();
        assert!(e.to_string().contains("is not stored"), "{e}");
    }
}
