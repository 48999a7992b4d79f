//! A tenant's storage quota: how many objects and bytes it stores, and its `objects` and `storageBytes` limits.
//!
//! Usage is counted from the tenant's keys when it starts, and every minute after while a limit is set (so writes
//! made by other hosts on the same etcd, and the host's own writes around the registry, are caught up with), and
//! kept current by every write through the registry. A write that would take usage over a limit is refused with 403 Forbidden and kube's
//! ResourceQuota message ("exceeded quota: ..., requested: ..., used: ..., limited: ..."); the room is reserved
//! atomically, so concurrent writes cannot overshoot. The host's own writes (`system:apiserver`: default roles,
//! namespaces) are never refused, only counted.
//!
//! The objects the host makes in every tenant (its initial namespaces and default RBAC objects: the keys given to
//! [`Quota::set_host_owned`]) take no room under the `objects` limit, whoever writes them, so that a limit counts what
//! the tenant's users create; their bytes count under `storageBytes` as every stored byte does.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{PoisonError, RwLock};

use apimachinery::status::ApiError;
use storage::{ListOptions, Storage};

/// The prefix of every object key of a registry (a tenant's keys, seen through its prefixed storage).
const OBJECTS: &str = "/registry/";

/// One tenant's quota.
#[derive(Debug, Default)]
pub struct Quota {
    /// The quota's name in messages (`tenant-<name>`, or `tenant-default`).
    name: RwLock<String>,
    objects: AtomicI64,
    bytes: AtomicI64,
    limits: RwLock<(Option<u64>, Option<u64>)>,
    /// The keys of the objects the host makes in every tenant, which the `objects` limit does not count.
    host_owned: RwLock<HashSet<String>>,
    /// Key prefixes of the objects the host keeps (the root's Tenant objects), which it does not count either.
    host_owned_prefixes: RwLock<Vec<String>>,
    /// The objects the host makes in every namespace (a resource's key prefix and the object's name), not counted.
    host_owned_names: RwLock<Vec<(String, String)>>,
    /// Writes refused for the `objects` limit.
    pub rejected_objects: AtomicU64,
    /// Writes refused for the `storageBytes` limit.
    pub rejected_storage_bytes: AtomicU64,
}

/// A limit a write would pass: its name, what the write asks, what is used, and the limit.
type Over<'a> = (&'a str, i64, i64, u64);

/// Room taken for a write: given back when dropped, unless the write is committed.
#[must_use]
pub struct Reservation<'a> {
    quota: &'a Quota,
    objects: i64,
    bytes: i64,
}

impl Reservation<'_> {
    /// The write is stored: the room stays taken.
    pub fn commit(mut self) {
        self.objects = 0;
        self.bytes = 0;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.quota.add(-self.objects, -self.bytes);
    }
}

impl Quota {
    /// Names the quota (`tenant-<name>`) for messages.
    pub fn set_name(&self, name: &str) {
        *self.name.write().unwrap_or_else(PoisonError::into_inner) = name.to_owned();
    }

    /// Sets the limits (`None`: none).
    pub fn set_limits(&self, objects: Option<u64>, bytes: Option<u64>) {
        *self.limits.write().unwrap_or_else(PoisonError::into_inner) = (objects, bytes);
    }

    /// The limits.
    pub fn limits(&self) -> (Option<u64>, Option<u64>) {
        *self.limits.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sets the keys of the objects the host makes in every tenant (relative to the tenant's storage): they take no
    /// room under the `objects` limit.
    pub fn set_host_owned(&self, keys: impl IntoIterator<Item = String>) {
        *self.host_owned.write().unwrap_or_else(PoisonError::into_inner) = keys.into_iter().collect();
    }

    /// Sets the key prefixes of objects the host keeps (such as the root's Tenant objects, one per tenant): they take
    /// no room under the `objects` limit either.
    pub fn set_host_owned_prefixes(&self, prefixes: impl IntoIterator<Item = String>) {
        *self.host_owned_prefixes.write().unwrap_or_else(PoisonError::into_inner) = prefixes.into_iter().collect();
    }

    /// Sets the objects the host makes in every namespace (their resource's key prefix and their name, such as each
    /// namespace's default service account): they take no room under the `objects` limit either.
    pub fn set_host_owned_names(&self, names: impl IntoIterator<Item = (String, String)>) {
        *self.host_owned_names.write().unwrap_or_else(PoisonError::into_inner) = names.into_iter().collect();
    }

    /// The objects a write of `key` counts for: none for an object the host owns.
    fn counted(&self, key: &str, objects: i64) -> i64 {
        let host_owned = objects != 0
            && (self
                .host_owned
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(key)
                || self
                    .host_owned_prefixes
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .any(|p| key.starts_with(p.as_str()))
                || self
                    .host_owned_names
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .any(|(prefix, name)| {
                        key.strip_prefix(prefix.as_str())
                            .and_then(|rest| rest.split_once('/'))
                            .is_some_and(|(_, object)| object == name)
                    }));
        if host_owned {
            0
        } else {
            objects
        }
    }

    /// The objects (the host's own left out) and bytes stored.
    pub fn usage(&self) -> (i64, i64) {
        (self.objects.load(Ordering::Acquire), self.bytes.load(Ordering::Acquire))
    }

    fn add(&self, objects: i64, bytes: i64) {
        if objects != 0 {
            self.objects.fetch_add(objects, Ordering::AcqRel);
        }
        if bytes != 0 {
            self.bytes.fetch_add(bytes, Ordering::AcqRel);
        }
    }

    /// Counts a change of `key` made without a reservation (a deletion).
    pub fn record(&self, key: &str, objects: i64, bytes: i64) {
        self.add(self.counted(key, objects), bytes);
    }

    /// Takes room for a write of `key` (`resource`, group-qualified, `name`) of `objects` more objects and `bytes`
    /// more bytes, or refuses it with 403 when a limit would be passed (unless `exempt`). Shrinking never fails.
    #[allow(clippy::too_many_arguments)]
    pub fn reserve(
        &self,
        key: &str,
        group: &str,
        resource: &str,
        name: &str,
        objects: i64,
        bytes: i64,
        exempt: bool,
    ) -> Result<Reservation<'_>, ApiError> {
        let objects = self.counted(key, objects);
        let (max_objects, max_bytes) = self.limits();
        let used_objects = self.objects.fetch_add(objects, Ordering::AcqRel);
        let used_bytes = self.bytes.fetch_add(bytes, Ordering::AcqRel);
        let reservation = Reservation {
            quota: self,
            objects,
            bytes,
        };
        if exempt {
            return Ok(reservation);
        }
        let mut over = Vec::new();
        if let Some(max) = max_objects {
            if objects > 0 && used_objects + objects > max as i64 {
                over.push(("objects", objects, used_objects, max));
            }
        }
        if let Some(max) = max_bytes {
            if bytes > 0 && used_bytes + bytes > max as i64 {
                over.push(("storageBytes", bytes, used_bytes, max));
            }
        }
        if over.is_empty() {
            return Ok(reservation);
        }
        drop(reservation);
        for (limit, ..) in &over {
            let counter = match *limit {
                "objects" => &self.rejected_objects,
                _ => &self.rejected_storage_bytes,
            };
            counter.fetch_add(1, Ordering::Relaxed);
        }
        component_base::metrics::metrics()
            .tenant_rejections
            .get_or_create(&component_base::metrics::LimitLabels {
                limit: over[0].0.to_owned(),
            })
            .inc();
        let list = |f: &dyn Fn(&Over) -> String| over.iter().map(f).collect::<Vec<_>>().join(",");
        let why = format!(
            "exceeded quota: {}, requested: {}, used: {}, limited: {}",
            self.name.read().unwrap_or_else(PoisonError::into_inner),
            list(&|(n, r, _, _)| format!("{n}={r}")),
            list(&|(n, _, u, _)| format!("{n}={}", u.max(&0))),
            list(&|(n, _, _, l)| format!("{n}={l}")),
        );
        Err(ApiError::forbidden(group, resource, name, &why))
    }

    /// Counts the objects and bytes stored under `storage`'s object keys, page by page, and makes that the usage.
    pub async fn recount(&self, storage: &dyn Storage) -> storage::Result<()> {
        let (mut objects, mut bytes) = (0i64, 0i64);
        let mut options = ListOptions {
            limit: 1000,
            ..ListOptions::default()
        };
        loop {
            let page = storage.list(OBJECTS, options.clone()).await?;
            objects += page.items.iter().map(|kv| self.counted(&kv.key, 1)).sum::<i64>();
            bytes += page.items.iter().map(|kv| kv.value.len() as i64).sum::<i64>();
            match page.items.last() {
                Some(last) if page.remaining > 0 => {
                    options.start_after = Some(last.key.clone());
                    options.revision = page.revision;
                }
                _ => break,
            }
        }
        self.objects.store(objects, Ordering::Release);
        self.bytes.store(bytes, Ordering::Release);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_refuse_past_a_limit_and_give_back_room() {
        let q = Quota::default();
        q.set_name("tenant-t1");
        q.set_limits(Some(2), Some(100));
        q.reserve("/k", "wardle.example.com", "flunders", "a", 1, 40, false)
            .unwrap()
            .commit();
        // A failed write gives its room back.
        drop(
            q.reserve("/k", "wardle.example.com", "flunders", "b", 1, 40, false)
                .unwrap(),
        );
        assert_eq!(q.usage(), (1, 40));
        q.reserve("/k", "wardle.example.com", "flunders", "b", 1, 40, false)
            .unwrap()
            .commit();
        let e = q
            .reserve("/k", "wardle.example.com", "flunders", "c", 1, 10, false)
            .err()
            .unwrap();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "flunders.wardle.example.com \"c\" is forbidden: exceeded quota: tenant-t1, requested: objects=1, used: \
             objects=2, limited: objects=2"
        );
        assert_eq!(q.usage(), (2, 80));
        let e = q
            .reserve("/k", "wardle.example.com", "flunders", "a", 0, 30, false)
            .err()
            .unwrap();
        assert!(e
            .message
            .ends_with("requested: storageBytes=30, used: storageBytes=80, limited: storageBytes=100"));
        // Shrinking, and the host's own writes, always pass.
        q.reserve("/k", "wardle.example.com", "flunders", "a", 0, -10, false)
            .unwrap()
            .commit();
        q.reserve(
            "/registry/namespaces/kube-system",
            "",
            "namespaces",
            "kube-system",
            1,
            50,
            true,
        )
        .unwrap()
        .commit();
        assert_eq!(q.usage(), (3, 120));
        // The objects the host makes in every tenant take no room under the objects limit (here full); their bytes
        // count.
        q.set_limits(Some(3), Some(1000));
        q.set_host_owned(["/registry/namespaces/default".to_string()]);
        q.reserve(
            "/registry/namespaces/default",
            "",
            "namespaces",
            "default",
            1,
            30,
            false,
        )
        .unwrap()
        .commit();
        assert_eq!(q.usage(), (3, 150));
        q.record("/registry/namespaces/default", -1, -30);
        assert_eq!(q.usage(), (3, 120));
        q.set_host_owned_prefixes(["/registry/tenancy.wasm-apiserver.io/tenants/".to_string()]);
        q.reserve(
            "/registry/tenancy.wasm-apiserver.io/tenants/t1",
            "tenancy.wasm-apiserver.io",
            "tenants",
            "t1",
            1,
            10,
            false,
        )
        .unwrap()
        .commit();
        assert_eq!(q.usage(), (3, 130));
        // So do those it makes in every namespace, by name; the same name elsewhere counts.
        q.set_host_owned_names([("/registry/core/serviceaccounts/".to_string(), "default".to_string())]);
        q.reserve(
            "/registry/core/serviceaccounts/team/default",
            "",
            "serviceaccounts",
            "default",
            1,
            10,
            false,
        )
        .unwrap()
        .commit();
        assert_eq!(q.usage(), (3, 140));
        assert!(q
            .reserve(
                "/registry/core/serviceaccounts/team/builder",
                "",
                "serviceaccounts",
                "builder",
                1,
                10,
                false
            )
            .is_err());
        assert_eq!(q.rejected_objects.load(Ordering::Relaxed), 2);
        assert_eq!(q.rejected_storage_bytes.load(Ordering::Relaxed), 1);
    }
}
