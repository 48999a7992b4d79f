//! One round of the collector: the owners' dependents found by one scan, then each owner and dependent decided on a
//! live read, as kube's `attemptToDeleteItem`, `processDeletingDependentsItem` and `attemptToOrphanWorker` decide.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use super::refs::{self, Propagation, FOREGROUND, ORPHAN};
use super::{Item, Outcome, Work};
use crate::write_options::{FieldValidation, WriteOptions};
use crate::Registry;
use apimachinery::object::meta_str;
use apimachinery::scheme::ResourceInfo;
use apimachinery::status::ApiError;
use storage::keys::{key_prefix, object_key};
use storage::{ListOptions, StorageError};

/// How many stored objects a scan reads at a time.
const SCAN_PAGE: usize = 500;

/// The dependents found by a scan, by owner uid.
type Dependents = BTreeMap<String, Vec<(Item, Value)>>;

/// Processes one round of work; returns how each piece came out.
pub(super) async fn round(registry: &Arc<Registry>, work: BTreeSet<Work>) -> Vec<(Work, Outcome)> {
    let mut results = Vec::new();
    let mut dependents: BTreeSet<Item> = BTreeSet::new();
    // The owners being deleted with a garbage collection finalizer, and the removed objects, whose dependents are
    // looked for.
    let mut orphaning = Vec::new();
    let mut foreground = Vec::new();
    let mut gone = Vec::new();
    let mut wanted: BTreeMap<String, Option<String>> = BTreeMap::new();
    for w in work {
        match &w {
            Work::Resync => {
                let outcome = match resync(registry).await {
                    Ok(()) => Outcome::Done,
                    Err(e) => {
                        tracing::warn!(error = %e, "garbage collector: resync failed");
                        Outcome::Retry
                    }
                };
                results.push((w, outcome));
            }
            Work::Gone { uid, namespace } => {
                wanted.insert(uid.clone(), namespace.clone());
                gone.push(w);
            }
            Work::Dependent(item) => {
                dependents.insert(item.clone());
            }
            Work::Owner(item) => match read(registry, item).await {
                Err(e) => {
                    tracing::warn!(error = %e, ?item, "garbage collector: reading an owner failed");
                    results.push((w, Outcome::Retry));
                }
                Ok(Some(obj)) if refs::deleting_with(&obj, ORPHAN) => {
                    wanted.insert(item.uid.clone(), item.namespace.clone());
                    orphaning.push(w);
                }
                Ok(Some(obj)) if refs::deleting_with(&obj, FOREGROUND) => {
                    wanted.insert(item.uid.clone(), item.namespace.clone());
                    foreground.push(w);
                }
                Ok(_) => results.push((w, Outcome::Done)),
            },
        }
    }
    let found = if wanted.is_empty() {
        Dependents::new()
    } else {
        match dependents_of(registry, &wanted).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "garbage collector: scanning for dependents failed");
                for w in gone.into_iter().chain(orphaning).chain(foreground) {
                    results.push((w, Outcome::Retry));
                }
                for item in dependents {
                    results.push((Work::Dependent(item), Outcome::Retry));
                }
                return results;
            }
        }
    };
    let of = |uid: &str| found.get(uid).map(Vec::as_slice).unwrap_or_default();
    for w in gone {
        if let Work::Gone { uid, .. } = &w {
            dependents.extend(of(uid).iter().map(|(item, _)| item.clone()));
        }
        results.push((w, Outcome::Done));
    }
    for w in orphaning {
        let Work::Owner(owner) = &w else { continue };
        let outcome = orphan(registry, owner, of(&owner.uid)).await;
        results.push((w, outcome));
    }
    for w in foreground {
        let Work::Owner(owner) = &w else { continue };
        // Every dependent is looked at (its owner now waits for it: kube deletes it, in foreground if it has
        // dependents of its own); the owner goes once no dependent blocks it.
        let deps = of(&owner.uid);
        dependents.extend(
            deps.iter()
                .filter(|(_, obj)| !refs::deleting_with(obj, FOREGROUND))
                .map(|(item, _)| item.clone()),
        );
        let blocking = deps.iter().any(|(_, obj)| {
            refs::owner_references(obj)
                .iter()
                .any(|r| r.uid == owner.uid && r.block_owner_deletion)
        });
        let outcome = if blocking {
            Outcome::Done
        } else {
            remove_finalizer(registry, owner, FOREGROUND).await
        };
        results.push((w, outcome));
    }
    for item in dependents {
        let outcome = attempt_to_delete(registry, &item).await;
        results.push((Work::Dependent(item), outcome));
    }
    results
}

/// The stored object of an item, if it still has the item's uid.
async fn read(registry: &Registry, item: &Item) -> Result<Option<Value>, StorageError> {
    let key = object_key(&item.group, &item.resource, item.namespace.as_deref(), &item.name);
    Ok(read_key(registry, &key)
        .await?
        .filter(|obj| meta_str(obj, "uid") == Some(item.uid.as_str())))
}

/// The stored object under a key, with its resourceVersion.
async fn read_key(registry: &Registry, key: &str) -> Result<Option<Value>, StorageError> {
    let Some(kv) = registry.storage.get(key).await? else {
        return Ok(None);
    };
    let mut obj: Value = serde_json::from_slice(&kv.value)
        .map_err(|e| StorageError::Internal(format!("stored object {key} is not JSON: {e}")))?;
    apimachinery::object::set_resource_version(&mut obj, kv.mod_revision);
    Ok(Some(obj))
}

/// Finds the objects that name one of these owner uids in their owner references: for an owner in a namespace,
/// in that namespace; for a cluster-scoped owner (`None`), anywhere. Every stored resource of the tenant that can
/// be deleted is read by key prefix, a page at a time; only values that mention a wanted uid (or, for many uids,
/// `ownerReferences`) are parsed.
async fn dependents_of(
    registry: &Registry,
    wanted: &BTreeMap<String, Option<String>>,
) -> Result<Dependents, StorageError> {
    let apis = registry.apis();
    let cluster_wide = wanted.values().any(Option::is_none);
    let namespaces: BTreeSet<&str> = wanted.values().flatten().map(String::as_str).collect();
    let mut found = Dependents::new();
    // Only stored values that mention a wanted uid can name it (for a few uids; else those with owner references).
    let needles: Vec<&[u8]> = if wanted.len() <= 8 {
        wanted.keys().map(|uid| uid.as_bytes()).collect()
    } else {
        vec![b"\"ownerReferences\""]
    };
    for plugin in apis.plugins() {
        let group = &plugin.group.group;
        for resource in &plugin.group.resources {
            let stored = plugin.strategy.stored(&resource.plural);
            if !stored || !resource.has_verb("delete") {
                continue;
            }
            let prefixes: Vec<String> = if cluster_wide {
                vec![key_prefix(group, &resource.plural, None)]
            } else if resource.namespaced {
                namespaces
                    .iter()
                    .map(|ns| key_prefix(group, &resource.plural, Some(ns)))
                    .collect()
            } else {
                Vec::new()
            };
            for prefix in prefixes {
                scan_matching(registry, &prefix, &needles, |obj| {
                    let namespace = meta_str(obj, "namespace").filter(|n| !n.is_empty());
                    for r in refs::owner_references(obj) {
                        let Some(scope) = wanted.get(&r.uid) else { continue };
                        if scope.is_some() && scope.as_deref() != namespace {
                            continue;
                        }
                        let item = item_of(group, resource, obj);
                        let list = found.entry(r.uid.clone()).or_default();
                        if !list.iter().any(|(i, _)| *i == item) {
                            list.push((item, obj.clone()));
                        }
                    }
                })
                .await?;
            }
        }
    }
    Ok(found)
}

/// The item a stored object of `resource` is.
fn item_of(group: &str, resource: &ResourceInfo, obj: &Value) -> Item {
    Item {
        group: group.to_owned(),
        resource: resource.plural.clone(),
        namespace: meta_str(obj, "namespace")
            .filter(|n| !n.is_empty() && resource.namespaced)
            .map(str::to_owned),
        name: meta_str(obj, "name").unwrap_or("").to_owned(),
        uid: meta_str(obj, "uid").unwrap_or("").to_owned(),
    }
}

/// Reads every object under a prefix, a page at a time, calling `visit` with those whose stored text mentions one
/// of `needles` (the others are not parsed).
async fn scan_matching(
    registry: &Registry,
    prefix: &str,
    needles: &[&[u8]],
    mut visit: impl FnMut(&Value),
) -> Result<(), StorageError> {
    let mut start_after = None;
    loop {
        let options = ListOptions {
            limit: SCAN_PAGE,
            start_after: start_after.take(),
            ..ListOptions::default()
        };
        let page = registry.storage.list(prefix, options).await?;
        for kv in &page.items {
            if !needles.iter().any(|n| mentions(&kv.value, n)) {
                continue;
            }
            if let Ok(mut obj) = serde_json::from_slice::<Value>(&kv.value) {
                apimachinery::object::set_resource_version(&mut obj, kv.mod_revision);
                visit(&obj);
            }
        }
        match page.items.last() {
            Some(last) if page.remaining > 0 => start_after = Some(last.key.clone()),
            _ => return Ok(()),
        }
    }
}

/// Queues every object of the tenant that has owner references (as a dependent) or is being deleted with a garbage
/// collection finalizer (as an owner).
async fn resync(registry: &Registry) -> Result<(), StorageError> {
    let apis = registry.apis();
    let mut work = Vec::new();
    for plugin in apis.plugins() {
        let group = &plugin.group.group;
        for resource in &plugin.group.resources {
            let stored = plugin.strategy.stored(&resource.plural);
            if !stored || !resource.has_verb("delete") {
                continue;
            }
            let prefix = key_prefix(group, &resource.plural, None);
            let needles: [&[u8]; 3] = [b"\"ownerReferences\"", b"\"orphan\"", b"\"foregroundDeletion\""];
            scan_matching(registry, &prefix, &needles, |obj| {
                let item = item_of(group, resource, obj);
                if refs::deleting_with(obj, ORPHAN) || refs::deleting_with(obj, FOREGROUND) {
                    work.push(Work::Owner(item.clone()));
                }
                if !refs::owner_references(obj).is_empty() {
                    work.push(Work::Dependent(item));
                }
            })
            .await?;
        }
    }
    registry.gc.enqueue(work);
    Ok(())
}

/// Whether `needle` occurs in `haystack`.
fn mentions(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A dependent: deleted when none of its owners is left (with its own `orphan` or `foregroundDeletion` finalizer
/// honoured), in foreground when an owner waits for it and it has dependents of its own; when some owner is left,
/// it only loses the references to the owners that are gone or wait for it.
async fn attempt_to_delete(registry: &Arc<Registry>, item: &Item) -> Outcome {
    let obj = match read(registry, item).await {
        Ok(Some(obj)) => obj,
        Ok(None) => return Outcome::Done,
        Err(e) => {
            tracing::warn!(error = %e, ?item, "garbage collector: reading a dependent failed");
            return Outcome::Retry;
        }
    };
    if refs::being_deleted(&obj) {
        if refs::deleting_with(&obj, FOREGROUND) {
            registry.gc.enqueue([Work::Owner(item.clone())]);
        }
        return Outcome::Done;
    }
    let owners = refs::owner_references(&obj);
    if owners.is_empty() {
        return Outcome::Done;
    }
    let apis = registry.apis();
    let (mut solid, mut dangling, mut waiting) = (0, Vec::new(), Vec::new());
    for r in &owners {
        let Some((group, resource, namespaced)) = refs::resolve(&apis, &r.api_version, &r.kind) else {
            // kube's REST mapping of the owner fails: the dependent is kept and tried again (here, when the
            // tenant's served resources change).
            tracing::debug!(?item, owner = ?r, "garbage collector: the owner's kind is not served");
            return Outcome::Park;
        };
        if namespaced && item.namespace.is_none() {
            tracing::warn!(?item, owner = ?r, "garbage collector: a cluster-scoped object refers to a namespaced owner");
            return Outcome::Done;
        }
        let namespace = item.namespace.as_deref().filter(|_| namespaced);
        let key = object_key(&group, &resource, namespace, &r.name);
        match read_key(registry, &key).await {
            Err(e) => {
                tracing::warn!(error = %e, ?item, "garbage collector: reading an owner failed");
                return Outcome::Retry;
            }
            Ok(Some(owner)) if meta_str(&owner, "uid") == Some(r.uid.as_str()) => {
                if refs::deleting_with(&owner, FOREGROUND) {
                    waiting.push(r.uid.as_str());
                } else {
                    solid += 1;
                }
            }
            Ok(_) => dangling.push(r.uid.as_str()),
        }
    }
    if solid > 0 {
        if dangling.is_empty() && waiting.is_empty() {
            return Outcome::Done;
        }
        let uids: Vec<&str> = dangling.iter().chain(&waiting).copied().collect();
        return update(registry, item, |obj| refs::remove_owner_references(obj, &uids)).await;
    }
    let policy = if !waiting.is_empty() {
        let wanted = BTreeMap::from([(item.uid.clone(), item.namespace.clone())]);
        let own = match dependents_of(registry, &wanted).await {
            Ok(found) => found.into_values().next().unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = %e, ?item, "garbage collector: scanning for dependents failed");
                return Outcome::Retry;
            }
        };
        if own.is_empty() {
            None
        } else {
            if own.iter().any(|(_, dep)| refs::deleting_with(dep, FOREGROUND)) {
                // A dependent of its own waits in foreground too: a cycle could hold both, so this object stops
                // blocking its owners (kube's rather cautious cycle breaking).
                if update(registry, item, refs::unblock_owner_references).await != Outcome::Done {
                    return Outcome::Retry;
                }
            }
            Some(Propagation::Foreground)
        }
    } else {
        None
    };
    let policy = policy.unwrap_or_else(|| {
        let finalizers = apimachinery::object::finalizers(&obj);
        if finalizers.contains(&ORPHAN) {
            Propagation::Orphan
        } else if finalizers.contains(&FOREGROUND) {
            Propagation::Foreground
        } else {
            Propagation::Background
        }
    });
    delete(registry, item, meta_str(&obj, "resourceVersion"), policy).await
}

/// An owner being deleted with `orphan`: its dependents lose their references to it, then it loses the finalizer.
async fn orphan(registry: &Arc<Registry>, owner: &Item, dependents: &[(Item, Value)]) -> Outcome {
    for (dependent, _) in dependents {
        let uid = owner.uid.as_str();
        let outcome = update(registry, dependent, |obj| refs::remove_owner_references(obj, &[uid])).await;
        if outcome != Outcome::Done {
            return outcome;
        }
    }
    remove_finalizer(registry, owner, ORPHAN).await
}

/// Removes a finalizer of an owner (which goes if it was its last).
async fn remove_finalizer(registry: &Arc<Registry>, owner: &Item, finalizer: &str) -> Outcome {
    update(registry, owner, |obj| refs::remove_finalizer(obj, finalizer)).await
}

/// Changes an object (if it still has the item's uid) through its store, as the server; `change` says whether it
/// changed anything. Conflicts are retried by the store's patch; a missing object is done with.
async fn update(registry: &Arc<Registry>, item: &Item, change: impl Fn(&mut Value) -> bool) -> Outcome {
    let Some(store) = registry.background_store(&item.group, &item.resource) else {
        return Outcome::Park;
    };
    let opts = WriteOptions {
        dry_run: false,
        field_validation: FieldValidation::Ignore,
    };
    let apply = |current: &Value| -> Result<Value, ApiError> {
        if meta_str(current, "uid") != Some(item.uid.as_str()) {
            return Err(ApiError::not_found(&item.group, &item.resource, &item.name));
        }
        let mut next = current.clone();
        change(&mut next);
        Ok(next)
    };
    match store.patch(item.namespace.as_deref(), &item.name, apply, opts).await {
        Ok(_) => Outcome::Done,
        Err(e) if e.code == 404 => Outcome::Done,
        Err(e) => {
            tracing::warn!(error = %e.message, ?item, "garbage collector: an update failed");
            Outcome::Retry
        }
    }
}

/// Deletes a dependent through its store, as the server, if it still has the item's uid and resourceVersion (a
/// change in between makes it looked at again).
async fn delete(registry: &Arc<Registry>, item: &Item, resource_version: Option<&str>, policy: Propagation) -> Outcome {
    let Some(store) = registry.background_store(&item.group, &item.resource) else {
        return Outcome::Park;
    };
    let deleted = store
        .delete(
            item.namespace.as_deref(),
            &item.name,
            Some(&item.uid),
            resource_version,
            false,
            Some(policy),
        )
        .await;
    match deleted {
        Ok(_) => Outcome::Done,
        Err(e) if e.code == 404 => Outcome::Done,
        Err(e) => {
            tracing::warn!(error = %e.message, ?item, "garbage collector: a delete failed");
            Outcome::Retry
        }
    }
}
