//! The root's admission check of Tenant writes: the default tenant and the tenant directories are the host's own,
//! stored for every host to list and watch, and read-only to users. Creating a Tenant named `default` or after a
//! tenant directory, claiming `status.source: Directory`, or changing or deleting a directory's tenant is 403 with
//! the reason; the host itself (`system:apiserver`) writes them.

use std::path::PathBuf;

use crate::api::{DEFAULT_TENANT, GROUP, RESOURCE, SOURCE_DIRECTORY};
use admission::{Attributes, Check};
use apimachinery::plugin::Operation;
use apimachinery::status::ApiError;
use storage::BoxFuture;

/// Keeps users' writes off the default tenant and the tenant directories' tenants.
pub struct DirectoryTenants {
    /// The plugin directory, whose subdirectories are tenants.
    pub dir: PathBuf,
}

impl Check for DirectoryTenants {
    fn name(&self) -> &'static str {
        "DirectoryTenants"
    }

    fn validate<'a>(&'a self, r: &'a Attributes<'a>) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
        Box::pin(async move { self.check(r).await.map(|()| Vec::new()) })
    }
}

impl DirectoryTenants {
    async fn check(&self, r: &Attributes<'_>) -> Result<(), ApiError> {
        if r.group != GROUP || r.resource != RESOURCE || r.user.name == apimachinery::user::SYSTEM_APISERVER {
            return Ok(());
        }
        let forbid = |why: &str| Err(ApiError::forbidden(GROUP, RESOURCE, r.name, why));
        if r.name == DEFAULT_TENANT {
            return forbid("the default tenant is the host's own (served at the root), not an API object");
        }
        match r.operation {
            Operation::Create => {
                if r.object.is_some_and(|o| crate::api::source(o) == SOURCE_DIRECTORY) {
                    return forbid("status.source Directory is set by the host for its tenant directories");
                }
                let dir = self.dir.join(r.name);
                if tokio::fs::metadata(&dir).await.is_ok_and(|m| m.is_dir()) {
                    return forbid(&format!(
                        "a tenant directory of the host is named {:?}; the name is its own",
                        r.name
                    ));
                }
            }
            Operation::Update | Operation::Delete => {
                if r.old.is_some_and(|o| crate::api::source(o) == SOURCE_DIRECTORY) {
                    return forbid(
                        "the tenant is defined by a tenant directory of the host: change its tenant.yaml there",
                    );
                }
            }
        }
        Ok(())
    }
}
