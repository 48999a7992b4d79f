//! Where the authenticator of service account tokens finds the accounts (and Secrets) a token names: in the
//! storage of the tenant the request addresses, built first if it is not in memory.

use serde_json::Value;

use super::Tenants;
use authn::service_accounts::{Accounts, Lookup};
use storage::keys::object_key;

impl Accounts for Tenants {
    fn uid<'a>(&'a self, tenant: Option<&'a str>, resource: &'a str, namespace: &'a str, name: &'a str) -> Lookup<'a> {
        Box::pin(async move {
            let Some((tenant, _in_use)) = self.enter(tenant).await.map_err(anyhow::Error::msg)? else {
                return Ok(None);
            };
            let key = object_key("", resource, Some(namespace), name);
            let Some(kv) = tenant.api.registry.storage.get(&key).await? else {
                return Ok(None);
            };
            let object: Value = serde_json::from_slice(&kv.value)?;
            // An account being deleted no longer authenticates (kube's lookup).
            if object
                .pointer("/metadata/deletionTimestamp")
                .is_some_and(|t| !t.is_null())
            {
                return Ok(None);
            }
            Ok(object
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .map(str::to_owned))
        })
    }
}
