//! Tenants (issue 11, part 1): the `.wasm` files directly in the plugin directory form the default tenant, served at
//! the root; each subdirectory `DIR/<tenant>/` (a DNS-1123 label) is a tenant served under `/tenants/<tenant>/`, with
//! its own registry on its own key prefix (`/tenants/<tenant>` in storage), its own plugins, namespaces, RBAC
//! objects and authorizer. Identities are host-wide; rights are per tenant (`system:masters` everywhere).
//!
//! Tenants are found when the server starts; adding or removing a tenant directory while it runs is not followed yet.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use crate::authz::Authorizer;
use crate::endpoints::Api;

/// One tenant's API and authorizer.
pub struct Tenant {
    /// Its API (registry, plugins, access reviews).
    pub api: Arc<Api>,
    /// Its authorizer (system:masters, then its RBAC).
    pub authorizer: Arc<dyn Authorizer>,
    /// Its plugin directory's watcher: hot reload stops when it is dropped.
    pub watcher: Option<notify::RecommendedWatcher>,
}

/// The served tenants.
pub struct Tenants {
    /// The default tenant, at the root.
    pub root: Tenant,
    /// The tenants by name.
    pub named: BTreeMap<String, Tenant>,
}

impl Tenants {
    /// The tenant of a request: the root for `None`, else the named one if it is served.
    pub fn get(&self, name: Option<&str>) -> Option<&Tenant> {
        match name {
            None => Some(&self.root),
            Some(name) => self.named.get(name),
        }
    }
}

/// The storage key prefix of a tenant's objects.
pub fn key_prefix(tenant: &str) -> String {
    format!("/tenants/{tenant}")
}

/// The tenant directories under a plugin directory: subdirectories named by a DNS-1123 label, in name order. Other
/// subdirectories are reported and skipped.
pub fn tenant_dirs(plugin_dir: &Path) -> Vec<(String, std::path::PathBuf)> {
    let Ok(entries) = std::fs::read_dir(plugin_dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, std::path::PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_owned();
            if name.starts_with('.') {
                return None;
            }
            let problems = crate::apimachinery::validation::NameRule::Dns1123Label.validate(&name, false);
            if !problems.is_empty() {
                tracing::warn!(dir = %p.display(), problem = %problems.join("; "), "not a tenant: skipped");
                return None;
            }
            Some((name, p))
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_directories_are_dns_labels() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["t1", "team-b", "Bad_Name", ".hidden"] {
            std::fs::create_dir(dir.path().join(name)).unwrap();
        }
        std::fs::write(dir.path().join("wardle.wasm"), b"").unwrap();
        let names: Vec<String> = tenant_dirs(dir.path()).into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["t1", "team-b"]);
    }
}
