//! The registry: the served API groups (one plugin each) and the generic store that serves a resource through its
//! plugin's strategy and the storage (like `k8s.io/apiserver`'s `genericregistry.Store`).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::plugins::host::{HostReads, ReadError};
use crate::plugins::plugin::Plugin;
use crate::storage::{Storage, StorageError};

pub mod object;
pub mod schema;
pub mod store;
pub mod strategy;

/// The set of served plugins, by API group. Replaced as a whole when plugins change, so a request sees one
/// consistent set from start to end.
#[derive(Default)]
pub struct Apis {
    /// Plugins by group name.
    pub groups: BTreeMap<String, Arc<Plugin>>,
    /// The OpenAPI v3 root document, built on first use (it hashes every group-version document).
    openapi_v3_root: std::sync::OnceLock<serde_json::Value>,
}

impl Apis {
    /// The schemes of the served groups, in group order.
    pub fn group_infos(&self) -> Vec<crate::plugins::scheme::GroupInfo> {
        self.groups.values().map(|p| p.group.clone()).collect()
    }

    /// The OpenAPI v3 root for this set of plugins, computed once.
    pub fn openapi_v3_root(&self) -> &serde_json::Value {
        self.openapi_v3_root
            .get_or_init(|| crate::endpoints::openapi::openapi_v3_root(&self.group_infos()))
    }

    /// The plugins in group order.
    pub fn plugins(&self) -> impl Iterator<Item = &Arc<Plugin>> {
        self.groups.values()
    }
}

/// The storage key prefix of a resource: `/registry/<group>/<resource>/`, plus `<namespace>/` when given.
pub fn key_prefix(group: &str, resource: &str, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("/registry/{group}/{resource}/{ns}/"),
        None => format!("/registry/{group}/{resource}/"),
    }
}

/// The storage key of an object.
pub fn object_key(group: &str, resource: &str, namespace: Option<&str>, name: &str) -> String {
    format!("{}{name}", key_prefix(group, resource, namespace))
}

/// The registry: storage plus the current set of plugins.
pub struct Registry {
    /// The storage backend.
    pub storage: Arc<dyn Storage>,
    apis: RwLock<Arc<Apis>>,
}

impl Registry {
    /// A registry over a storage backend, with no plugins yet.
    pub fn new(storage: Arc<dyn Storage>) -> Arc<Registry> {
        Arc::new(Registry {
            storage,
            apis: RwLock::new(Arc::new(Apis::default())),
        })
    }

    /// The current set of plugins.
    pub fn apis(&self) -> Arc<Apis> {
        self.apis.read().map(|a| a.clone()).unwrap_or_default()
    }

    /// Replaces the set of plugins atomically, granting each its reads.
    pub fn set_plugins(self: &Arc<Self>, plugins: Vec<Arc<Plugin>>) {
        let reader: Arc<dyn HostReads> = Arc::new(StorageReads {
            storage: self.storage.clone(),
        });
        let mut apis = Apis::default();
        for p in plugins {
            p.grant_reads(reader.clone());
            apis.groups.insert(p.group.group.clone(), p);
        }
        if let Ok(mut slot) = self.apis.write() {
            *slot = Arc::new(apis);
        }
    }
}

/// The host imports' reads, served from storage.
struct StorageReads {
    storage: Arc<dyn Storage>,
}

impl HostReads for StorageReads {
    fn get(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<String>, ReadError> {
        let key = object_key(group, resource, namespace, name);
        let kv = block_on(self.storage.get(&key))?;
        Ok(kv.map(|kv| stored_text(&kv)))
    }

    fn list(
        &self,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        selector: &str,
    ) -> Result<Vec<String>, ReadError> {
        let selector = crate::apimachinery::labels::LabelSelector::parse(selector)
            .map_err(|e| ReadError::Invalid(e.to_string()))?;
        let prefix = key_prefix(group, resource, namespace);
        let list = block_on(self.storage.list(&prefix, Default::default()))?;
        let mut out = Vec::new();
        for kv in list.items {
            let text = stored_text(&kv);
            if selector.is_empty() {
                out.push(text);
            } else if let Ok(obj) = serde_json::from_str::<serde_json::Value>(&text) {
                if selector.matches(&object::labels(&obj)) {
                    out.push(text);
                }
            }
        }
        Ok(out)
    }
}

/// Waits for a storage future from the blocking context a plugin call runs in.
fn block_on<T>(f: impl std::future::Future<Output = Result<T, StorageError>>) -> Result<T, ReadError> {
    let handle = tokio::runtime::Handle::try_current()
        .map_err(|e| ReadError::Storage(StorageError::Internal(format!("no runtime for a host read: {e}"))))?;
    handle.block_on(f).map_err(ReadError::Storage)
}

/// A stored value as JSON text with its resourceVersion set.
fn stored_text(kv: &crate::storage::KeyValue) -> String {
    match serde_json::from_slice::<serde_json::Value>(&kv.value) {
        Ok(mut obj) => {
            object::set_resource_version(&mut obj, kv.mod_revision);
            obj.to_string()
        }
        Err(_) => String::from_utf8_lossy(&kv.value).into_owned(),
    }
}
