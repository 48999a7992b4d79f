//! Storage versions (kube's storage version manager and CRD `status.storedVersions`) and their migration (kube's
//! storage version migrator, `pkg/controller/storageversionmigrator`).
//!
//! - Each resource a plugin serves has a StorageVersion object (`builtin::storage_versions`), written here around
//!   the store: before the first write of a resource in its storage version (once per installed store,
//!   [`StoredVersion`]), that version is added to `status.storedVersions`, so the record never misses a version an
//!   object may be stored in.
//! - The migration controller, on the host that leads, follows the StorageVersionMigrations and migrates each one
//!   not finished yet, as kube's migrator does: it reads every object of the resource, page by page, and writes
//!   each one again, converted by its plugin to the storage version where it is stored in another, with a
//!   compare-and-swap on the revision read (an object written meanwhile is read again; one deleted is skipped).
//!   Every object is written, not only those in another version, so that encryption at rest takes the current key
//!   too (a key rotation is finished by a migration). The objects keep their metadata (uid, generation,
//!   managedFields); the write goes around the strategy and admission, as it changes no field. Before the first
//!   page, the storage version is added to the stored versions; when the last page is done with the storage
//!   version unchanged, `storedVersions` becomes that version alone and the migration Succeeded. A conversion the
//!   plugin refuses fails it, naming the object; a resource not served fails it once the controller has run for
//!   [`NOT_SERVED_GRACE`] (plugins installed through the API load after it starts); other errors are retried, shown
//!   in the Running condition. A migration deleted, or a host that stops leading, stops after the page it is on;
//!   a migration left Running (a restart, another leader) starts over on the next leader.
//!
//! `storedVersions` is this server's record: a host still serving an older build of a plugin (during a rollout)
//! writes its storage version without adding it again once a migration has narrowed the list, so migrate once every
//! host serves the new build; objects stored before the record existed (before this server recorded storage
//! versions) are found by a migration, not by the record.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde_json::{json, Value};

use super::Registry;
use apimachinery::scheme::group_version;
use builtin::storage_versions::{self as sv, FAILED, RUNNING, SUCCEEDED};
use storage::keys::{key_prefix, object_key};
use storage::{ListOptions, Storage, StorageError, WatchEvent};

/// Objects read a page at a time.
const PAGE: usize = 500;

/// How long after the controller starts a resource not served is waited for (its plugin may be loading) before a
/// migration of it fails.
pub const NOT_SERVED_GRACE: Duration = Duration::from_secs(30);

/// The StorageVersion objects' storage prefix (host-owned: they take no room under a tenant's objects limit).
pub fn storage_versions_prefix() -> String {
    key_prefix(sv::VERSION_GROUP, sv::STORAGE_VERSIONS, None)
}

fn storage_version_key(group: &str, resource: &str) -> String {
    object_key(
        sv::VERSION_GROUP,
        sv::STORAGE_VERSIONS,
        None,
        &sv::storage_version_name(group, resource),
    )
}

fn migrations_prefix() -> String {
    key_prefix(sv::MIGRATION_GROUP, sv::MIGRATIONS, None)
}

/// Whether the storage version of an installed store has been recorded (checked once per store).
#[derive(Default)]
pub struct StoredVersion(tokio::sync::OnceCell<()>);

impl StoredVersion {
    /// Makes sure `version` is among the stored versions of `group`/`resource` before the first write in it.
    pub async fn ensure(
        &self,
        storage: &dyn Storage,
        group: &str,
        resource: &str,
        version: &str,
    ) -> storage::Result<()> {
        self.0
            .get_or_try_init(|| record(storage, group, resource, version, false))
            .await
            .map(|_| ())
    }
}

fn versions(obj: &Value) -> Vec<String> {
    obj.pointer("/status/storedVersions")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Writes the StorageVersion of `group`/`resource` with `version` as its encoding version, added to its stored
/// versions (or, with `only`, as the only one), unless it says so already.
async fn record(storage: &dyn Storage, group: &str, resource: &str, version: &str, only: bool) -> storage::Result<()> {
    let key = storage_version_key(group, resource);
    loop {
        let current = storage.get(&key).await?;
        let mut obj = match &current {
            Some(kv) => serde_json::from_slice(&kv.value).unwrap_or(Value::Null),
            None => Value::Null,
        };
        let encoding = group_version(group, version);
        let recorded = versions(&obj);
        let stored = if only {
            vec![version.to_owned()]
        } else {
            let mut all = recorded.clone();
            if !all.iter().any(|v| v == version) {
                all.push(version.to_owned());
            }
            all
        };
        if current.is_some()
            && recorded == stored
            && obj.pointer("/status/commonEncodingVersion") == Some(&json!(encoding))
        {
            return Ok(());
        }
        if !obj.is_object() || obj.get("metadata").is_none() {
            obj = json!({
                "apiVersion": group_version(sv::VERSION_GROUP, sv::VERSION_VERSION),
                "kind": "StorageVersion",
                "metadata": {
                    "name": sv::storage_version_name(group, resource),
                    "uid": uuid::Uuid::new_v4().to_string(),
                    "creationTimestamp": apimachinery::object::now_rfc3339(),
                },
                "spec": {},
            });
        }
        obj["status"] = json!({"commonEncodingVersion": encoding, "storedVersions": stored});
        let value = obj.to_string().into_bytes();
        let written = match &current {
            Some(kv) => storage.update(&key, value, kv.mod_revision).await.map(|_| ()),
            None => storage.create(&key, value).await.map(|_| ()),
        };
        match written {
            Ok(()) => {
                tracing::info!(group, resource, versions = ?stored, "stored versions recorded");
                return Ok(());
            }
            Err(StorageError::Conflict { .. } | StorageError::AlreadyExists { .. } | StorageError::NotFound { .. }) => {
            }
            Err(e) => return Err(e),
        }
    }
}

/// The migration controller: follows the StorageVersionMigrations and, while `leading()` says this host leads,
/// migrates those not finished, for as long as the registry lives.
pub fn start_controller(registry: &Arc<Registry>, leading: super::controllers::Leading) {
    let controller = Controller {
        leading,
        running: Arc::default(),
        started: std::time::Instant::now(),
    };
    super::controllers::run(registry, "storage version migrations", move |registry| {
        let controller = controller.clone();
        Box::pin(async move { follow(registry, &controller).await })
    });
}

/// How often this host looks whether it has started leading: it then picks up the migrations another host left.
const LEADING_CHECK: Duration = Duration::from_secs(5);

/// What the controller's migrations share.
#[derive(Clone)]
struct Controller {
    /// Whether this host leads.
    leading: super::controllers::Leading,
    /// The migrations under way on this host, by name.
    running: Arc<Mutex<HashSet<String>>>,
    /// When the controller started.
    started: std::time::Instant,
}

async fn follow(registry: &Arc<Registry>, controller: &Controller) -> anyhow::Result<()> {
    let prefix = migrations_prefix();
    let mut watch = registry
        .storage
        .watch(&prefix, registry.storage.current_revision().await?)
        .await?;
    // The migrations are read on a change to one of them and when this host starts leading, not otherwise: a
    // tenant with none costs a watch (shared) and a check of a flag.
    let (mut changed, mut led) = (true, false);
    loop {
        let leads = (controller.leading)();
        if leads && (changed || !led) {
            let list = registry.storage.list(&prefix, ListOptions::default()).await?;
            for kv in list.items {
                start_migration(registry, &kv.value, controller);
            }
        }
        led = leads;
        tokio::select! {
            event = watch.recv() => match event {
                Some(Ok(event)) => changed = !matches!(event, WatchEvent::Progress { .. }),
                Some(Err(e)) => return Err(e.into()),
                None => anyhow::bail!("the watch of the migrations ended"),
            },
            _ = tokio::time::sleep(LEADING_CHECK) => changed = false,
        }
    }
}

fn start_migration(registry: &Arc<Registry>, value: &[u8], controller: &Controller) {
    let Ok(svm) = serde_json::from_slice::<Value>(value) else {
        return;
    };
    if sv::finished(&svm) {
        return;
    }
    let name = builtin::str_at(&svm, "/metadata/name").to_owned();
    let uid = builtin::str_at(&svm, "/metadata/uid").to_owned();
    if !controller
        .running
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(name.clone())
    {
        return;
    }
    let (weak, controller) = (Arc::downgrade(registry), controller.clone());
    tokio::spawn(async move {
        let mut delay = Duration::from_millis(200);
        loop {
            let Some(registry) = weak.upgrade() else { break };
            if !(controller.leading)() {
                break;
            }
            match registry
                .until_closed(migrate(&registry, &name, &uid, &controller))
                .await
            {
                None | Some(Ok(())) => break,
                Some(Err(e)) => {
                    let message = format!("{e:#}");
                    tracing::warn!(migration = %name, error = %message, "storage version migration: retrying");
                    // The error is the migration's to show, not only the log's.
                    let shown = update_status(&registry, &name, |svm| {
                        let now = apimachinery::object::now_rfc3339();
                        sv::set_condition(svm, RUNNING, true, "Retrying", &message, &now);
                    });
                    if let Err(e) = shown.await {
                        tracing::warn!(migration = %name, error = %e, "storage version migration: status not written");
                    }
                }
            }
            drop(registry);
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(10));
        }
        controller
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&name);
    });
}

/// Whether the migration `name` (of `uid`) is still wanted here: it exists, unfinished, and this host leads.
async fn wanted(registry: &Registry, name: &str, uid: &str, controller: &Controller) -> anyhow::Result<bool> {
    if !(controller.leading)() {
        return Ok(false);
    }
    let key = object_key(sv::MIGRATION_GROUP, sv::MIGRATIONS, None, name);
    Ok(match registry.storage.get(&key).await? {
        Some(kv) => {
            let svm: Value = serde_json::from_slice(&kv.value)?;
            builtin::str_at(&svm, "/metadata/uid") == uid && !sv::finished(&svm)
        }
        None => false,
    })
}

/// Changes the status of the migration `name` with `change`, retried on a conflict; `false` when it is gone.
async fn update_status(registry: &Registry, name: &str, change: impl Fn(&mut Value)) -> anyhow::Result<bool> {
    let key = object_key(sv::MIGRATION_GROUP, sv::MIGRATIONS, None, name);
    loop {
        let Some(kv) = registry.storage.get(&key).await? else {
            return Ok(false);
        };
        let mut svm: Value = serde_json::from_slice(&kv.value)?;
        let before = svm.clone();
        change(&mut svm);
        if svm == before {
            return Ok(true);
        }
        match registry.update_around_store(&kv, &svm).await {
            Ok(written) => {
                if let Some(cache) = registry.caches.running(sv::MIGRATION_GROUP, sv::MIGRATIONS) {
                    cache.note_write(written.mod_revision);
                }
                return Ok(true);
            }
            Err(StorageError::Conflict { .. }) => {}
            Err(StorageError::NotFound { .. }) => return Ok(false),
            Err(e) => return Err(e.into()),
        }
    }
}

/// Ends the migration `name` with its condition `outcome` (Succeeded or Failed) True and Running False.
async fn finish(registry: &Registry, name: &str, outcome: &str, reason: &str, message: &str) -> anyhow::Result<()> {
    let now = apimachinery::object::now_rfc3339();
    update_status(registry, name, |svm| {
        sv::set_condition(svm, RUNNING, false, reason, message, &now);
        sv::set_condition(svm, outcome, true, reason, message, &now);
    })
    .await?;
    Ok(())
}

/// Migrates the resource a migration names; `Ok` once the migration is finished (or gone, or no longer this
/// host's), `Err` to try again.
async fn migrate(registry: &Arc<Registry>, name: &str, uid: &str, controller: &Controller) -> anyhow::Result<()> {
    let key = object_key(sv::MIGRATION_GROUP, sv::MIGRATIONS, None, name);
    let Some(kv) = registry.storage.get(&key).await? else {
        return Ok(());
    };
    let svm: Value = serde_json::from_slice(&kv.value)?;
    if sv::finished(&svm) {
        return Ok(());
    }
    let (group, resource) = sv::migrated_resource(&svm);
    let (group, resource) = (group.to_owned(), resource.to_owned());
    let now = apimachinery::object::now_rfc3339;
    let apis = registry.apis();
    let plugin = apis.group(&group);
    let served = plugin.is_some_and(|p| p.resource(&resource).is_some_and(|r| p.strategy.stored(&r.plural)));
    // A plugin's resource: its storage version is among the stored versions before any object is written in it.
    let recorded = plugin.is_some_and(|p| !p.is_builtin());
    drop(apis);
    if !served {
        let message = format!("the server stores no resource {resource} in group {group:?}");
        if controller.started.elapsed() < NOT_SERVED_GRACE {
            anyhow::bail!("{message} (yet: its plugin may be loading)");
        }
        finish(registry, name, FAILED, "ResourceNotFound", &message).await?;
        return Ok(());
    }
    let revision = registry.storage.current_revision().await?;
    let started = update_status(registry, name, |svm| {
        if !sv::condition_true(svm, RUNNING) {
            svm["status"]["resourceVersion"] = json!(revision.to_string());
        }
        sv::set_condition(
            svm,
            RUNNING,
            true,
            "Migrating",
            "the objects are being written in the storage version",
            &now(),
        );
    })
    .await?;
    if !started {
        return Ok(());
    }
    // A storage version that changes during the migration (a plugin replaced) is migrated to in turn.
    let mut rewritten = 0;
    let version = loop {
        let Some(version) = storage_version(registry, &group, &resource) else {
            anyhow::bail!("{resource}.{group} is no longer served");
        };
        if recorded {
            record(registry.storage.as_ref(), &group, &resource, &version, false).await?;
        }
        let still_wanted = || wanted(registry, name, uid, controller);
        match rewrite_all(registry, &group, &resource, &version, still_wanted).await? {
            Ok(Some(n)) => rewritten += n,
            Ok(None) => {
                tracing::info!(
                    migration = name,
                    "storage version migration stopped: deleted, finished elsewhere, or this host no longer leads"
                );
                return Ok(());
            }
            Err(message) => {
                finish(registry, name, FAILED, "ConversionFailed", &message).await?;
                tracing::warn!(migration = name, %message, "storage version migration failed");
                return Ok(());
            }
        }
        if storage_version(registry, &group, &resource).as_ref() == Some(&version) {
            break version;
        }
    };
    if !wanted(registry, name, uid, controller).await? {
        return Ok(());
    }
    if recorded {
        record(registry.storage.as_ref(), &group, &resource, &version, true).await?;
    }
    let message = format!(
        "{rewritten} objects written again in {}",
        group_version(&group, &version)
    );
    finish(registry, name, SUCCEEDED, "Succeeded", &message).await?;
    tracing::info!(migration = name, resource = %resource, group = %group, rewritten, "storage version migration succeeded");
    Ok(())
}

fn storage_version(registry: &Registry, group: &str, resource: &str) -> Option<String> {
    let apis = registry.apis();
    let r = apis.group(group)?.resource(resource)?;
    Some(r.storage_version().to_owned())
}

/// Writes every object of the resource again in `version`, a page at a time while `still_wanted()` says so: how
/// many were written (`None`: stopped), or (inner `Err`) the conversion the plugin refused.
async fn rewrite_all<F, W>(
    registry: &Arc<Registry>,
    group: &str,
    resource: &str,
    version: &str,
    still_wanted: W,
) -> anyhow::Result<Result<Option<usize>, String>>
where
    W: Fn() -> F,
    F: std::future::Future<Output = anyhow::Result<bool>>,
{
    let prefix = key_prefix(group, resource, None);
    let target = group_version(group, version);
    let mut start_after = None;
    let mut rewritten = 0;
    loop {
        if !still_wanted().await? {
            return Ok(Ok(None));
        }
        let options = ListOptions {
            limit: PAGE,
            start_after: start_after.clone(),
            ..ListOptions::default()
        };
        let page = registry.storage.list(&prefix, options).await?;
        for kv in &page.items {
            match rewrite(registry, group, resource, &target, version, kv.clone()).await? {
                Ok(true) => rewritten += 1,
                Ok(false) => {}
                Err(message) => return Ok(Err(message)),
            }
        }
        match page.items.last() {
            Some(last) if page.remaining > 0 => start_after = Some(last.key.clone()),
            _ => return Ok(Ok(Some(rewritten))),
        }
    }
}

/// Writes one object again, converted to `version` if it is stored in another: whether it was written (not when
/// it was deleted meanwhile).
async fn rewrite(
    registry: &Arc<Registry>,
    group: &str,
    resource: &str,
    target: &str,
    version: &str,
    mut kv: storage::KeyValue,
) -> anyhow::Result<Result<bool, String>> {
    loop {
        let obj: Value = serde_json::from_slice(&kv.value)?;
        let Some(plugin) = registry.apis().group(group).cloned() else {
            anyhow::bail!("{resource}.{group} is no longer served");
        };
        let name = builtin::str_at(&obj, "/metadata/name").to_owned();
        let mut converted = match plugin.convert(resource, obj, version) {
            Ok(converted) => converted,
            Err(e) => return Ok(Err(format!("converting {resource} {name:?} to {target}: {e}"))),
        };
        apimachinery::object::strip_resource_version(&mut converted);
        schema::structural::canonical_numbers(&mut converted);
        match registry.update_around_store(&kv, &converted).await {
            Ok(written) => {
                if let Some(cache) = registry.caches.running(group, resource) {
                    cache.note_write(written.mod_revision);
                }
                return Ok(Ok(true));
            }
            // Written meanwhile or deleted: read it again.
            Err(StorageError::Conflict { .. }) => match registry.storage.get(&kv.key).await? {
                Some(current) => kv = current,
                None => return Ok(Ok(false)),
            },
            Err(StorageError::NotFound { .. }) => return Ok(Ok(false)),
            Err(e) => return Err(e.into()),
        }
    }
}
