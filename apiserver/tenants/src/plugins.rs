//! Plugin objects (`tenancy.wasm-apiserver.io/v1alpha1` Plugin): the plugins a tenant's admins install through the
//! API. Every host watches each tenant's Plugin objects and, for each, resolves its OCI reference (a tag once: the
//! first host to pull it records the digest in `status.resolved`, and every host then pulls by that digest), pulls
//! the artifact into its content-addressed cache (once per digest, whatever tenant names it), hands it to the
//! tenant's [`PluginDir`](loader::PluginDir), which compiles it off the serving path (once per content hash), checks
//! it and serves it. A new version that fails leaves the previous one serving. The object's `status` is this host's
//! state, filled in on every read ([`Objects::status`]).
//!
//! Pulls go only to registries the host allows (`--plugin-registries`) and, when it names any, the tenant's
//! `allowedRegistries`; credentials come from a Secret of the tenant (`spec.source.oci.pullSecretRef`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use serde_json::{json, Value};

use super::Tenant;
use crate::api::plugins::{self as objects, COMPILING, FAILED, PENDING, PULLING, SERVING};
use crate::api::GROUP;
use storage::{ListOptions, Revision, WatchEvent};

/// Where plugins may be pulled from, and where pulled artifacts are kept: the host's settings.
#[derive(Debug, Default)]
pub struct Sources {
    /// The registries (`host` or `host:port`) plugins may be pulled from (`--plugin-registries`); none when empty.
    pub registries: Vec<String>,
    /// CA certificates (PEM) trusted for registries besides the public roots (`--plugin-registry-ca-file`).
    pub ca_pem: Vec<Vec<u8>>,
    /// The largest component accepted (`--plugin-max-upload-bytes`).
    pub max_bytes: u64,
    /// The content-addressed cache of pulled artifacts, by manifest digest.
    pub artifacts: PathBuf,
    /// The cosign public keys of the host (`--plugin-signature-keys`): when any (the host's or the tenant's) are
    /// named, only artifacts with a valid signature by one of them are served.
    pub signature_keys: Vec<oci::signature::PublicKey>,
    /// The pulls under way, by digest: one at a time for each.
    pub pulls: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Sources {
    /// The lock of the pulls of `digest`.
    fn pull_lock(&self, digest: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut pulls = self.pulls.lock().unwrap_or_else(PoisonError::into_inner);
        pulls.retain(|_, l| Arc::strong_count(l) > 1);
        pulls.entry(digest.to_owned()).or_default().clone()
    }

    /// The file of the artifact whose manifest digest is `digest`.
    fn artifact(&self, digest: &str) -> PathBuf {
        self.artifacts.join(format!("{}.wasm", digest.replace(':', "-")))
    }
}

/// A condition as `metav1.Condition` has it: status, reason, message, since when.
#[derive(Clone, Debug, PartialEq)]
struct Condition {
    status: &'static str,
    reason: String,
    message: String,
    since: String,
}

impl Condition {
    fn new(status: &'static str, reason: &str, message: &str) -> Condition {
        Condition {
            status,
            reason: reason.to_owned(),
            message: message.to_owned(),
            since: apimachinery::object::now_rfc3339(),
        }
    }

    fn json(&self, kind: &str) -> Value {
        json!({"type": kind, "status": self.status, "reason": self.reason, "message": self.message,
               "lastTransitionTime": self.since})
    }
}

/// Keeps `slot` as it is when `new` says the same (so its time is the transition's), else replaces it.
fn transition(slot: &mut Option<Condition>, new: Condition) {
    let same = slot
        .as_ref()
        .is_some_and(|c| c.status == new.status && c.reason == new.reason && c.message == new.message);
    if !same {
        *slot = Some(new);
    }
}

/// This host's state of one Plugin object.
#[derive(Clone, Debug, Default)]
struct State {
    /// The generation acted on last.
    generation: i64,
    /// Pending, Pulling or Compiling while under way; otherwise derived from the loaded set.
    working: Option<&'static str>,
    /// The manifest digest the spec names (resolved).
    digest: Option<String>,
    /// The content hash of that digest's component.
    content: Option<String>,
    /// The manifest digests of the components pulled, by content hash (to name the version served).
    digests: BTreeMap<String, String>,
    pulled: Option<Condition>,
    /// The signature check of the version wanted (`None`: no keys are configured).
    verified: Option<Condition>,
    since_ready: Option<Condition>,
}

/// This host's state of a tenant's Plugin objects.
#[derive(Default)]
pub struct Objects {
    states: Mutex<BTreeMap<String, State>>,
    /// One at a time per object: its events are acted on in turn, each on the object as stored then.
    locks: Mutex<BTreeMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Objects {
    fn lock_of(&self, name: &str) -> Arc<tokio::sync::Mutex<()>> {
        self.locks
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.to_owned())
            .or_default()
            .clone()
    }

    fn update(&self, name: &str, f: impl FnOnce(&mut State)) {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        f(states.entry(name.to_owned()).or_default());
    }

    /// The live `status` of the Plugin object `name`, from this host's state and the tenant's loaded plugins.
    pub fn status(&self, name: &str, plugins: &loader::PluginDir) -> Option<Value> {
        let mut states = self.states.lock().unwrap_or_else(PoisonError::into_inner);
        let state = states.get_mut(name)?;
        let loaded = plugins.object_state(name);
        let serving_wanted = match (&loaded.serving, &state.content) {
            (Some((hash, _)), Some(content)) => hash == content,
            _ => false,
        };
        let load_failed = state.content.is_some() && loaded.failure.is_some() && !serving_wanted;
        let pull_failed = state.pulled.as_ref().is_some_and(|c| c.status == "False");
        let verify_failed = state.verified.as_ref().is_some_and(|c| c.status == "False");
        let phase = match state.working {
            Some(working) => working,
            None if serving_wanted => SERVING,
            None if pull_failed || verify_failed || load_failed => FAILED,
            None => PENDING,
        };
        let previous = loaded.serving.as_ref().filter(|_| !serving_wanted).map(|(hash, _)| {
            state
                .digests
                .get(hash)
                .cloned()
                .unwrap_or_else(|| format!("sha256:{hash}"))
        });
        let keeps_serving = previous
            .as_ref()
            .map(|d| format!("; the previous version ({}) keeps serving", objects::short_digest(d)))
            .unwrap_or_default();
        let verified = match (&state.verified, &state.pulled) {
            (Some(verified), _) => verified.clone(),
            (None, Some(c)) if c.status == "True" => Condition::new(
                "True",
                "NotRequired",
                "no signature keys are configured for this tenant (--plugin-signature-keys, spec.signatureKeys)",
            ),
            _ => Condition::new("Unknown", "NotPulled", "the artifact is not pulled yet"),
        };
        let compiled = if serving_wanted && loaded.baseline {
            Condition::new(
                "True",
                "BaselineCompiled",
                "compiled by the baseline compiler and checked: served while the optimizing compiler compiles it",
            )
        } else if serving_wanted {
            Condition::new("True", "Compiled", "compiled and checked")
        } else if load_failed {
            let reason = loaded.failure.clone().unwrap_or_default();
            Condition::new("False", load_reason(&reason), &format!("{reason}{keeps_serving}"))
        } else {
            Condition::new("Unknown", "NotCompiled", "not compiled yet")
        };
        let ready = if serving_wanted {
            let plugin = &loaded.serving.as_ref().map(|(_, p)| p.clone());
            let what = plugin.as_ref().map_or(String::new(), |p| {
                let resources: Vec<&str> = p.group.resources.iter().map(|r| r.plural.as_str()).collect();
                format!("serves {} ({})", p.group.group, resources.join(", "))
            });
            Condition::new("True", "Serving", &what)
        } else if pull_failed {
            let pulled = state.pulled.clone().unwrap_or_else(|| Condition::new("False", "", ""));
            Condition::new("False", &pulled.reason, &format!("{}{keeps_serving}", pulled.message))
        } else if verify_failed {
            Condition::new(
                "False",
                &verified.reason,
                &format!("{}{keeps_serving}", verified.message),
            )
        } else if load_failed {
            Condition::new("False", &compiled.reason, &compiled.message)
        } else {
            Condition::new(
                "False",
                phase,
                &format!("the plugin is {}{keeps_serving}", phase.to_lowercase()),
            )
        };
        transition(&mut state.since_ready, ready);
        let mut status = json!({
            "phase": phase,
            "observedGeneration": state.generation,
            "conditions": [
                state.pulled.clone().unwrap_or_else(|| Condition::new("Unknown", "NotPulled", "not pulled yet")).json("Pulled"),
                verified.json("Verified"),
                compiled.json("Compiled"),
                state.since_ready.as_ref().map(|c| c.json("Ready")).unwrap_or(Value::Null),
            ],
        });
        if let Some(digest) = &state.digest {
            status["digest"] = json!(digest);
        }
        if let Some((hash, plugin)) = &loaded.serving {
            status["served"] = json!({
                "digest": state.digests.get(hash).cloned().unwrap_or_else(|| format!("sha256:{hash}")),
                "group": plugin.group.group,
                "resources": plugin.group.resources.iter().map(|r| r.plural.as_str()).collect::<Vec<_>>(),
                "verbs": plugin.exports.verbs(),
            });
        }
        Some(status)
    }
}

/// The condition reason of a component the loader refused.
fn load_reason(reason: &str) -> &'static str {
    if reason.contains(loader::EXAMPLES_FAIL) {
        "InvalidExample"
    } else if reason.contains("limits.plugins") || reason.contains("limits.pluginBytes") {
        "OverLimit"
    } else if reason.contains("is already served by") || reason.contains("built into the server") {
        "GroupConflict"
    } else {
        "Invalid"
    }
}

/// How long a tenant waits, when it starts, for its Plugin objects to be served: a registry that does not answer
/// holds a tenant's start (or its first request) no longer; the plugin is served when its pull ends.
const INITIAL_SYNC_WAIT: Duration = Duration::from_secs(10);

/// Serves the Plugin objects of `tenant` stored now (waiting at most [`INITIAL_SYNC_WAIT`]), then follows them
/// until it is no longer served.
pub async fn start(tenant: &Arc<Tenant>, sources: Arc<Sources>) {
    let listed = match sync_all(tenant, &sources).await {
        Ok((syncs, revision)) => {
            if !syncs.is_empty() {
                let all = futures_util::future::join_all(syncs);
                if tokio::time::timeout(INITIAL_SYNC_WAIT, all).await.is_err() {
                    tracing::warn!(
                        tenant = tenant.display_name(),
                        "plugin controller: serving the tenant before all its Plugin objects are served"
                    );
                }
            }
            Some(revision)
        }
        Err(e) => {
            tracing::warn!(
                tenant = tenant.display_name(),
                error = format!("{e:#}"),
                "plugin controller: listing the Plugin objects failed"
            );
            None
        }
    };
    let weak = Arc::downgrade(tenant);
    tokio::spawn(async move {
        let mut after = listed;
        loop {
            let Some(tenant) = weak.upgrade() else { return };
            let registry = tenant.api.registry.clone();
            let followed = registry.until_closed(follow(&tenant, &sources, after)).await;
            drop(tenant);
            match followed {
                None => return,
                Some(Err(e)) => tracing::warn!(error = format!("{e:#}"), "plugin controller: restarting"),
                Some(Ok(())) => {}
            }
            after = None;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}

fn prefix() -> String {
    storage::keys::key_prefix(GROUP, objects::RESOURCE, None)
}

/// Lists the tenant's Plugin objects and brings each in line (and those this host knows that are gone), each in its
/// own task: the tasks, and the revision listed at.
async fn sync_all(
    tenant: &Arc<Tenant>,
    sources: &Arc<Sources>,
) -> anyhow::Result<(Vec<tokio::task::JoinHandle<()>>, Revision)> {
    let list = tenant
        .api
        .registry
        .storage
        .list(&prefix(), ListOptions::default())
        .await?;
    let listed: Vec<String> = list.items.iter().map(|kv| name_of(&kv.key).to_owned()).collect();
    // Objects gone while the watch was down.
    let known: Vec<String> = tenant
        .plugin_objects
        .states
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .keys()
        .cloned()
        .collect();
    let gone: Vec<String> = known.into_iter().filter(|n| !listed.contains(n)).collect();
    let syncs = gone
        .into_iter()
        .chain(listed)
        .map(|name| spawn_sync(tenant, sources, name))
        .collect();
    Ok((syncs, list.revision))
}

/// Lists the tenant's Plugin objects (when `after` is `None`) and acts on each, then on each change.
async fn follow(tenant: &Arc<Tenant>, sources: &Arc<Sources>, after: Option<Revision>) -> anyhow::Result<()> {
    let registry = &tenant.api.registry;
    let after = match after {
        Some(after) => after,
        None => sync_all(tenant, sources).await?.1,
    };
    let mut watch = registry.storage.watch(&prefix(), after).await?;
    while let Some(event) = watch.recv().await {
        match event? {
            WatchEvent::Put { kv, .. } => {
                spawn_sync(tenant, sources, name_of(&kv.key).to_owned());
            }
            WatchEvent::Delete { prev, .. } => {
                spawn_sync(tenant, sources, name_of(&prev.key).to_owned());
            }
            WatchEvent::Progress { .. } => {}
        }
    }
    anyhow::bail!("the plugin watch ended")
}

fn name_of(key: &str) -> &str {
    key.rsplit('/').next().unwrap_or_default()
}

/// Brings the plugin `name` in line with its object, in its own task (a pull may take a while).
fn spawn_sync(tenant: &Arc<Tenant>, sources: &Arc<Sources>, name: String) -> tokio::task::JoinHandle<()> {
    let (tenant, sources) = (Arc::downgrade(tenant), sources.clone());
    tokio::spawn(async move {
        let Some(t) = tenant.upgrade() else { return };
        let lock = t.plugin_objects.lock_of(&name);
        drop(t);
        let _turn = lock.lock().await;
        let Some(t) = tenant.upgrade() else { return };
        if let Err(e) = sync(&t, &sources, &name).await {
            tracing::warn!(tenant = t.display_name(), plugin = %name, error = format!("{e:#}"), "plugin controller");
        }
    })
}

/// Brings the plugin `name` of `tenant` in line with its object as stored now.
async fn sync(tenant: &Arc<Tenant>, sources: &Sources, name: &str) -> anyhow::Result<()> {
    let registry = &tenant.api.registry;
    let Some(plugins) = tenant.api.plugins.clone() else {
        return Ok(());
    };
    let key = storage::keys::object_key(GROUP, objects::RESOURCE, None, name);
    let Some(kv) = registry.storage.get(&key).await? else {
        // Deleted: its types are no longer served; their data is kept.
        let state = tenant
            .plugin_objects
            .states
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(name);
        plugins.set_object(name, None);
        reconcile(&plugins).await;
        tracing::info!(
            tenant = tenant.display_name(),
            plugin = name,
            "Plugin deleted: its types are no longer served, their data is kept"
        );
        if let Some(digest) = state.and_then(|s| s.digest) {
            // Its uploaded component, if it was one and no other Plugin names it.
            super::uploads::forget_unused(registry, &digest).await;
        }
        return Ok(());
    };
    let obj: Value = serde_json::from_slice(&kv.value).context("reading the Plugin")?;
    let generation = obj.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
    let objects = &tenant.plugin_objects;
    let reference = objects::oci_reference(&obj).map(str::to_owned);
    let (resolved, artifact_key) = match &reference {
        Some(reference) => {
            let resolved = obj
                .pointer("/status/resolved")
                .filter(|r| r.get("reference").and_then(Value::as_str) == Some(reference.as_str()))
                .and_then(|r| r.get("digest"))
                .and_then(Value::as_str)
                .map(str::to_owned);
            (resolved.clone(), resolved)
        }
        None if obj.pointer("/spec/source/upload").is_some() => {
            let resolved = super::uploads::resolved_upload(&obj).map(str::to_owned);
            let key = resolved.as_ref().map(|d| format!("upload-{d}"));
            (resolved, key)
        }
        None => return Ok(()),
    };
    let same = objects
        .states
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .is_some_and(|s| s.generation == generation && s.digest.is_some() && s.digest == resolved);
    let cached = artifact_key
        .as_deref()
        .map(|k| sources.artifact(k))
        .filter(|f| f.is_file());
    if same && cached.is_some() {
        // Nothing new for this host (its own record of the digest, or another write of the same spec).
        objects.update(name, |s| s.generation = generation);
        return Ok(());
    }
    if reference.is_none() && resolved.is_none() {
        objects.update(name, |s| {
            s.generation = generation;
            s.working = None;
            s.digest = None;
            s.content = None;
            let message = format!("PUT its component to plugins/{name}/content (Content-Type: application/wasm)");
            transition(&mut s.pulled, Condition::new("Unknown", "WaitingForUpload", &message));
        });
        return Ok(());
    }
    let what = reference.clone().unwrap_or_else(|| "the uploaded component".to_owned());
    // A new version is wanted: until it is pulled and loaded, the one served (if any) is the previous one.
    objects.update(name, |s| {
        s.generation = generation;
        s.working = Some(PULLING);
        s.digest = resolved.clone();
        s.content = None;
        s.verified = None;
        transition(
            &mut s.pulled,
            Condition::new("Unknown", "Pulling", &format!("pulling {what}")),
        );
    });
    let fetched = match (cached, &reference, &resolved) {
        (Some(file), _, _) => Ok((resolved.clone().unwrap_or_default(), file)),
        (None, Some(reference), _) => match pull(tenant, sources, &obj, reference, resolved.as_deref()).await {
            Ok((digest, file)) => {
                if resolved.is_none() {
                    record_resolution(tenant, name, reference, &digest).await?;
                }
                Ok((digest, file))
            }
            Err(e) => Err(e),
        },
        (None, None, Some(digest)) => fetch_upload(registry, sources, digest).await,
        (None, None, None) => return Ok(()),
    };
    let file = match fetched {
        Ok((digest, file)) => {
            objects.update(name, |s| s.digest = Some(digest));
            file
        }
        Err((reason, message)) => {
            tracing::warn!(tenant = tenant.display_name(), plugin = name, %reason, %message, "plugin not pulled; a previous version keeps serving");
            objects.update(name, |s| {
                s.working = None;
                transition(&mut s.pulled, Condition::new("False", reason, &message));
            });
            return Ok(());
        }
    };
    if let Some(refused) = check_signature(tenant, sources, &obj, reference.as_deref(), name).await {
        let (reason, message) = refused;
        tracing::warn!(tenant = tenant.display_name(), plugin = name, %reason, %message, "plugin not served: its signature; a previous version keeps serving");
        objects.update(name, |s| {
            s.working = None;
            let digest = s.digest.clone().unwrap_or_default();
            transition(
                &mut s.pulled,
                Condition::new("True", "Pulled", &format!("pulled {what} ({digest})")),
            );
            s.verified = Some(Condition::new("False", reason, &message));
        });
        return Ok(());
    }
    let content = plugin_runtime::cache::content_hash_of(std::fs::File::open(&file)?)?;
    objects.update(name, |s| {
        s.working = Some(COMPILING);
        let digest = s.digest.clone().unwrap_or_default();
        transition(
            &mut s.pulled,
            Condition::new("True", "Pulled", &format!("pulled {what} ({digest})")),
        );
        s.digests.insert(content.clone(), digest);
        s.content = Some(content);
    });
    plugins.set_object(name, Some(file));
    reconcile(&plugins).await;
    objects.update(name, |s| s.working = None);
    Ok(())
}

/// Reloads the tenant's plugins (compiling off the async workers).
async fn reconcile(plugins: &Arc<loader::PluginDir>) {
    let plugins = plugins.clone();
    match tokio::task::spawn_blocking(move || plugins.reconcile()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::error!(error = format!("{e:#}"), "reloading the tenant's plugins failed"),
        Err(e) => tracing::error!(error = %e, "reloading the tenant's plugins panicked"),
    }
}

/// Pulls the artifact of `reference` (by `digest` when it is resolved) into the cache: its manifest digest and file,
/// or the condition reason and message of the failure.
async fn pull(
    tenant: &Tenant,
    sources: &Sources,
    obj: &Value,
    reference: &str,
    digest: Option<&str>,
) -> Result<(String, PathBuf), (&'static str, String)> {
    let credentials = credentials(tenant, obj, reference).await?;
    let config = tenant.config();
    let allowed: Vec<String> = sources
        .registries
        .iter()
        .filter(|r| config.allowed_registries.is_empty() || config.allowed_registries.contains(r))
        .cloned()
        .collect();
    let client = oci::Client::new(oci::Options {
        allowed_registries: Some(allowed),
        ca_pem: sources.ca_pem.clone(),
        timeout: None,
    });
    // A tag is resolved (its manifest only); the component is downloaded once per digest and host, whatever
    // tenants name it: one pull at a time per digest, the others finding it in the cache.
    let digest = match digest {
        Some(digest) => digest.to_owned(),
        None => client
            .resolve(reference, &credentials)
            .await
            .map_err(|e| (e.reason(), e.to_string()))?,
    };
    let file = sources.artifact(&digest);
    let lock = sources.pull_lock(&digest);
    let _one_at_a_time = lock.lock().await;
    if file.is_file() {
        return Ok((digest, file));
    }
    let parsed = oci::parse_reference(reference).map_err(|e| (e.reason(), e.to_string()))?;
    let target = format!("{}/{}@{digest}", parsed.registry(), parsed.repository());
    let artifact = client
        .pull(&target, &credentials, sources.max_bytes)
        .await
        .map_err(|e| (e.reason(), e.to_string()))?;
    component_base::metrics::metrics().plugin_artifacts_pulled.inc();
    write_atomically(&file, &artifact.component).map_err(|e| ("CacheFailed", format!("{e:#}")))?;
    tracing::info!(tenant = tenant.display_name(), %reference, %digest, bytes = artifact.component.len(), "plugin pulled");
    Ok((digest, file))
}

/// When the host or the tenant names signature keys, checks that the version wanted (the state's digest) has a
/// valid cosign signature by one of them: `None` when it may be served (recording `Verified`), else the reason and
/// message.
async fn check_signature(
    tenant: &Tenant,
    sources: &Sources,
    obj: &Value,
    reference: Option<&str>,
    name: &str,
) -> Option<(&'static str, String)> {
    let config = tenant.config();
    let mut keys = sources.signature_keys.clone();
    keys.extend(
        config
            .signature_keys
            .iter()
            .filter_map(|pem| oci::signature::PublicKey::from_pem(pem).ok()),
    );
    if keys.is_empty() {
        return None;
    }
    let digest = tenant
        .plugin_objects
        .states
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .get(name)
        .and_then(|s| s.digest.clone())
        .unwrap_or_default();
    let Some(reference) = reference else {
        return Some((
            "Unsigned",
            "an uploaded component carries no signature, and this tenant serves signed plugins only: push it to a \
             registry, sign it with cosign, and name it in spec.source.oci"
                .to_owned(),
        ));
    };
    let credentials = match credentials(tenant, obj, reference).await {
        Ok(c) => c,
        Err((reason, message)) => return Some((reason, message)),
    };
    let client = oci::Client::new(oci::Options {
        allowed_registries: None,
        ca_pem: sources.ca_pem.clone(),
        timeout: None,
    });
    let signatures = match client.signatures(reference, &digest, &credentials).await {
        Ok(s) => s,
        Err(e) => return Some((e.reason(), format!("reading the signatures: {e}"))),
    };
    match oci::signature::verify(&keys, &digest, &signatures) {
        Ok(key) => {
            let message = format!("signed by the key {}", key.fingerprint);
            tenant
                .plugin_objects
                .update(name, |s| s.verified = Some(Condition::new("True", "Signed", &message)));
            None
        }
        Err(e) => Some((e.reason(), e.to_string())),
    }
}

/// Reads the uploaded component `digest` from the tenant's storage into the cache (once per host).
async fn fetch_upload(
    registry: &registry::Registry,
    sources: &Sources,
    digest: &str,
) -> Result<(String, PathBuf), (&'static str, String)> {
    let bytes = super::uploads::read(registry.storage.as_ref(), digest)
        .await
        .map_err(|e| ("ContentMissing", format!("{e:#}")))?;
    let file = sources.artifact(&format!("upload-{digest}"));
    write_atomically(&file, &bytes).map_err(|e| ("CacheFailed", format!("{e:#}")))?;
    Ok((digest.to_owned(), file))
}

/// Writes `bytes` to `file` through a temporary file, so that no reader sees a partial artifact.
fn write_atomically(file: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    let dir = file.parent().context("the artifact cache has no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let temporary = dir.join(format!(
        ".{}.{}",
        file.file_name().and_then(|n| n.to_str()).unwrap_or("artifact"),
        std::process::id()
    ));
    std::fs::write(&temporary, bytes).with_context(|| format!("writing {}", temporary.display()))?;
    std::fs::rename(&temporary, file).with_context(|| format!("renaming to {}", file.display()))?;
    Ok(())
}

/// Records in the object's `status.resolved` the digest its reference was resolved to, unless another host did
/// first (then the next event carries theirs, which every host uses).
async fn record_resolution(tenant: &Tenant, name: &str, reference: &str, digest: &str) -> anyhow::Result<()> {
    let registry = &tenant.api.registry;
    let key = storage::keys::object_key(GROUP, objects::RESOURCE, None, name);
    let Some(kv) = registry.storage.get(&key).await? else {
        return Ok(());
    };
    let mut obj: Value = serde_json::from_slice(&kv.value)?;
    if objects::oci_reference(&obj) != Some(reference) {
        return Ok(());
    }
    if obj.pointer("/status/resolved/reference").and_then(Value::as_str) == Some(reference) {
        return Ok(());
    }
    if !obj.get("status").is_some_and(Value::is_object) {
        obj["status"] = json!({});
    }
    obj["status"]["resolved"] = json!({"reference": reference, "digest": digest});
    match registry.update_around_store(&kv, &obj).await {
        Ok(_) => Ok(()),
        // Changed meanwhile: the next event acts on it.
        Err(storage::StorageError::Conflict { .. }) | Err(storage::StorageError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// The registry credentials of a Plugin: from the Secret its `pullSecretRef` names, else none.
async fn credentials(
    tenant: &Tenant,
    obj: &Value,
    reference: &str,
) -> Result<oci::Credentials, (&'static str, String)> {
    let Some(secret_ref) = obj.pointer("/spec/source/oci/pullSecretRef") else {
        return Ok(oci::Credentials::Anonymous);
    };
    let namespace = secret_ref.get("namespace").and_then(Value::as_str).unwrap_or("default");
    let name = secret_ref.get("name").and_then(Value::as_str).unwrap_or_default();
    let key = storage::keys::object_key("", "secrets", Some(namespace), name);
    let missing = || {
        (
            "SecretNotFound",
            format!("the pull secret {namespace}/{name} does not exist"),
        )
    };
    let kv = match tenant.api.registry.storage.get(&key).await {
        Ok(Some(kv)) => kv,
        Ok(None) => return Err(missing()),
        Err(e) => {
            return Err((
                "SecretNotFound",
                format!("reading the pull secret {namespace}/{name}: {e}"),
            ))
        }
    };
    let secret: Value = serde_json::from_slice(&kv.value).map_err(|_| missing())?;
    let registry = oci::parse_reference(reference)
        .map(|r| r.registry().to_owned())
        .map_err(|e| (e.reason(), e.to_string()))?;
    registry_credentials(&secret, &registry).map_err(|message| {
        (
            "InvalidSecret",
            format!("the pull secret {namespace}/{name}: {message}"),
        )
    })
}

/// The credentials for `registry` in a Secret: `kubernetes.io/dockerconfigjson` (`auths.<registry>`: `username`
/// and `password`, or `auth`, or a `registrytoken`; none for a registry it has no entry for) or
/// `kubernetes.io/basic-auth`.
pub fn registry_credentials(secret: &Value, registry: &str) -> Result<oci::Credentials, String> {
    use base64::Engine as _;
    let text = |key: &str| builtin::core::secret::value(secret, key).map(|v| String::from_utf8_lossy(&v).into_owned());
    match builtin::core::secret::type_of(secret) {
        builtin::core::secret::BASIC_AUTH => Ok(oci::Credentials::Basic {
            username: text("username").unwrap_or_default(),
            password: text("password").unwrap_or_default(),
        }),
        builtin::core::secret::DOCKER_CONFIG_JSON => {
            let config: Value = text(".dockerconfigjson")
                .and_then(|t| serde_json::from_str(&t).ok())
                .ok_or("its .dockerconfigjson is not JSON")?;
            let auths = config
                .get("auths")
                .and_then(Value::as_object)
                .ok_or("it has no auths")?;
            // As the kubelet: a registry the secret has no entry for is pulled from anonymously.
            let Some(entry) = auths
                .iter()
                .find(|(server, _)| {
                    let host = server.trim_start_matches("https://").trim_start_matches("http://");
                    host.trim_end_matches('/') == registry || host.split('/').next() == Some(registry)
                })
                .map(|(_, entry)| entry)
            else {
                return Ok(oci::Credentials::Anonymous);
            };
            let field = |k: &str| entry.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
            if let Some(token) = field("registrytoken") {
                return Ok(oci::Credentials::Bearer(token.to_owned()));
            }
            if let (Some(username), Some(password)) = (field("username"), field("password")) {
                return Ok(oci::Credentials::Basic {
                    username: username.to_owned(),
                    password: password.to_owned(),
                });
            }
            let auth = field("auth").ok_or_else(|| format!("its entry for {registry} has no credentials"))?;
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(auth)
                .map_err(|_| format!("its auth for {registry} is not base64"))?;
            let decoded = String::from_utf8_lossy(&decoded);
            let (username, password) = decoded
                .split_once(':')
                .ok_or_else(|| format!("its auth for {registry} is not user:password"))?;
            Ok(oci::Credentials::Basic {
                username: username.to_owned(),
                password: password.to_owned(),
            })
        }
        other => Err(format!(
            "its type is {other}, not kubernetes.io/dockerconfigjson or kubernetes.io/basic-auth"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_from_docker_config_and_basic_auth_secrets() {
        use base64::Engine as _;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let config = json!({"auths": {"127.0.0.1:5000": {"username": "u", "password": "p", "auth": b64("u:p")},
                                      "https://r.example.com": {"auth": b64("x:y")},
                                      "t.example.com": {"registrytoken": "tok"}}});
        let secret = json!({"type": "kubernetes.io/dockerconfigjson",
                            "data": {".dockerconfigjson": b64(&config.to_string())}});
        let basic = |u: &str, p: &str| oci::Credentials::Basic {
            username: u.into(),
            password: p.into(),
        };
        assert_eq!(
            registry_credentials(&secret, "127.0.0.1:5000").unwrap(),
            basic("u", "p")
        );
        assert_eq!(registry_credentials(&secret, "r.example.com").unwrap(), basic("x", "y"));
        assert_eq!(
            registry_credentials(&secret, "t.example.com").unwrap(),
            oci::Credentials::Bearer("tok".into())
        );
        assert_eq!(
            registry_credentials(&secret, "other.example.com").unwrap(),
            oci::Credentials::Anonymous
        );
        let basic_auth =
            json!({"type": "kubernetes.io/basic-auth", "data": {"username": b64("a"), "password": b64("b")}});
        assert_eq!(registry_credentials(&basic_auth, "any").unwrap(), basic("a", "b"));
        assert!(registry_credentials(&json!({"type": "Opaque"}), "any").is_err());
    }
}
