//! The plugin directory: every `*.wasm` file directly in it is a plugin, and every `*.yaml` (`.yml`, `.json`) file a
//! CustomResourceDefinition served without code ([`builtin::crd`]). The directory is watched; adding, replacing
//! or removing a file takes effect without a restart.
//!
//! A change is compiled off the serving path, then the whole set of plugins is swapped into the registry at once, so
//! routing, discovery and OpenAPI change together; requests in flight finish on the version they started with. A file
//! that fails to load is reported with the exact reason and leaves the previous version of that file (if any)
//! serving; removing a file unregisters its routes and keeps its data.
//!
//! A group is served by one `.wasm` file, or by any number of CustomResourceDefinition files, one per resource, as
//! kube-apiserver serves every CRD of a group side by side: they are served together as one plugin, and adding,
//! replacing or removing one changes only its resource; a second file defining the same resource is reported, and
//! serves it once the first is gone. A `.wasm` plugin serving the group of CustomResourceDefinition files takes their
//! place: this is how a type defined by a CRD gets code later. The CRD files are reported as shadowed (log, readyz,
//! metrics, tenant status), their objects (same storage keys) are served by the plugin, and removing the `.wasm` file
//! serves the CRDs again.
//!
//! [`check`] is `wasm-apiserver plugin check FILE`: one file loaded as the directory would load it, then checked.
//! Loading builds plugins ([`plugin_runtime`]), CustomResourceDefinition types ([`builtin::crd`]) and swaps
//! them into a [`Registry`], so this module sits above all three.

// Results that may fail with an `ApiError` (a whole Kubernetes `Status`) are large; errors are the rare path (see
// the same allowance in the binary crate).
#![allow(clippy::result_large_err)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use anyhow::Context as _;

use plugin_runtime::budget::Budget;
use plugin_runtime::cache::{content_hash_of, CompileCache};
use plugin_runtime::one_line;
use plugin_runtime::runtime::{Runtime, Tier};
use registry::Registry;
use rest::plugin::Plugin;

pub mod check;
pub mod component;

/// The file name of a tenant's configuration in its directory (`tenants::config`): a `.yaml` file that is
/// not a CustomResourceDefinition.
pub const TENANT_CONFIG: &str = "tenant.yaml";

/// Whether a file extension is one of a CustomResourceDefinition file (`.yaml`, `.yml`, `.json`).
fn is_crd_extension(extension: &std::ffi::OsStr) -> bool {
    extension == "yaml" || extension == "yml" || extension == "json"
}

/// A plugin file that failed to load or is not served, and why.
#[derive(Debug, Clone)]
pub struct LoadFailure {
    /// The file name.
    pub file: String,
    /// The reason, as precise as the loader can say.
    pub reason: String,
    /// For a CustomResourceDefinition file that loaded but is not served: the `.wasm` plugin serving its group in
    /// its place.
    pub shadowed_by: Option<String>,
}

impl LoadFailure {
    fn new(file: String, reason: String) -> LoadFailure {
        LoadFailure {
            file,
            reason,
            shadowed_by: None,
        }
    }
}

struct Loaded {
    hash: String,
    /// Which compiler made its code: a component served from the baseline tier is loaded again once its optimized
    /// build is in the compile cache.
    tier: Tier,
    /// The size of a component file (0 for a CustomResourceDefinition file), for the `pluginBytes` limit.
    bytes: u64,
    plugin: Arc<Plugin>,
    /// For a CustomResourceDefinition file: what it defines, served with the other CRD files of its group.
    definition: Option<Arc<builtin::crd::Definition>>,
}

#[derive(Default)]
struct DirState {
    loaded: BTreeMap<String, Loaded>,
    /// Failures by file, with the content hash that failed (so it is not retried until the file changes).
    failures: BTreeMap<String, (String, LoadFailure)>,
}

/// The size of a file (0 when it cannot be read: loading it then fails with the reason).
fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// The plugin directory and what is loaded from it.
pub struct PluginDir {
    runtime: Arc<Runtime>,
    /// The directory (`None` for a tenant created through the API, which has none).
    dir: Option<PathBuf>,
    cache: Option<CompileCache>,
    registry: Arc<Registry>,
    state: Mutex<DirState>,
    /// A copy of the failures, readable while a reload compiles.
    failures: Mutex<Vec<LoadFailure>>,
    /// What its files are called in metrics: `<tenant>/` before the file name for a tenant's directory.
    label: String,
    /// Its tenant's plugin budget, shared by its plugins.
    budget: Arc<Budget>,
    /// Its tenant's `plugins` and `pluginBytes` limits: how many components (`.wasm`) it may serve, and their size.
    limits: Mutex<(Option<u64>, Option<u64>)>,
    /// The components of the tenant's Plugin objects, by object name: their files (in the host's artifact cache),
    /// loaded beside the directory's files as `plugins/<name>`.
    objects: Mutex<BTreeMap<String, PathBuf>>,
    /// Itself, reconciled again when the optimized build of a component it serves from the baseline tier is done.
    me: Weak<PluginDir>,
}

/// What the loaded set calls the component of a Plugin object (files are called by their file name).
pub fn object_key(name: &str) -> String {
    format!("{OBJECT_KEY_PREFIX}{name}")
}

/// What starts the key of a Plugin object's component in the loaded set ([`object_key`]).
const OBJECT_KEY_PREFIX: &str = "plugins/";

/// Runs the example objects of a loaded component's schemas through its hooks, as `plugin check` does, once per
/// component (by content hash) in the process, whatever tenants load it: an error naming each failing example.
fn check_examples(loaded: &Loaded) -> anyhow::Result<()> {
    static VERDICTS: Mutex<BTreeMap<String, Vec<String>>> = Mutex::new(BTreeMap::new());
    if loaded.definition.is_some() {
        return Ok(());
    }
    let known = VERDICTS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&loaded.hash)
        .cloned();
    let problems = match known {
        Some(problems) => problems,
        None => {
            let problems = check::example_problems(&loaded.plugin);
            VERDICTS
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(loaded.hash.clone(), problems.clone());
            problems
        }
    };
    if problems.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "{EXAMPLES_FAIL} (as `wasm-apiserver plugin check` reports): {}",
        problems.join("; ")
    )
}

/// What a component refused for its examples is refused with.
pub const EXAMPLES_FAIL: &str = "its schemas' examples fail";

/// Where the component of a Plugin object stands in the loaded set.
#[derive(Clone, Debug, Default)]
pub struct ObjectState {
    /// The version served, if one is: its content hash and plugin.
    pub serving: Option<(String, Arc<Plugin>)>,
    /// Why the version last given was not loaded or is not served, if it was not.
    pub failure: Option<String>,
    /// The content hash of the version last given that failed.
    pub failed_hash: Option<String>,
    /// Whether the version served runs the baseline compiler's code while its optimized build compiles.
    pub baseline: bool,
}

impl PluginDir {
    /// A plugin directory feeding `registry` (`dir` `None`: no directory, nothing to load from one); nothing is
    /// loaded until [`PluginDir::reconcile`].
    pub fn new(
        runtime: Arc<Runtime>,
        dir: Option<&Path>,
        cache: Option<CompileCache>,
        registry: Arc<Registry>,
    ) -> Arc<PluginDir> {
        Self::labelled(runtime, String::new(), dir, cache, registry)
    }

    fn labelled(
        runtime: Arc<Runtime>,
        label: String,
        dir: Option<&Path>,
        cache: Option<CompileCache>,
        registry: Arc<Registry>,
    ) -> Arc<PluginDir> {
        Arc::new_cyclic(|me| PluginDir {
            dir: dir.map(Path::to_path_buf),
            cache,
            registry,
            state: Mutex::new(DirState::default()),
            failures: Mutex::new(Vec::new()),
            label,
            budget: Arc::new(Budget::new(runtime.limits.memory_bytes, runtime.limits.call_timeout)),
            runtime,
            limits: Mutex::new((None, None)),
            objects: Mutex::default(),
            me: me.clone(),
        })
    }

    /// Sets the component file of the Plugin object `name` (`None`: the object is gone, its types are no longer
    /// served, their data is kept). It is loaded at the next [`PluginDir::reconcile`].
    pub fn set_object(&self, name: &str, file: Option<PathBuf>) {
        let mut objects = self.objects.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match file {
            Some(file) => objects.insert(name.to_owned(), file),
            None => objects.remove(name),
        };
    }

    /// The content hash (sha256, hex) of the component a served plugin was loaded from, if it is one of these.
    pub fn hash_of(&self, plugin: &Arc<Plugin>) -> Option<String> {
        let state = self.state.lock().ok()?;
        state
            .loaded
            .values()
            .find(|l| Arc::ptr_eq(&l.plugin, plugin))
            .map(|l| l.hash.clone())
    }

    /// Where the component of the Plugin object `name` stands.
    pub fn object_state(&self, name: &str) -> ObjectState {
        let key = object_key(name);
        let Ok(state) = self.state.lock() else {
            return ObjectState::default();
        };
        let serving = state
            .loaded
            .get(&key)
            .filter(|l| self.registry.apis().plugins().any(|p| Arc::ptr_eq(p, &l.plugin)))
            .map(|l| (l.hash.clone(), l.plugin.clone()));
        let failed = state.failures.get(&key);
        let failure = failed.map(|(_, f)| f.reason.clone()).or_else(|| {
            // Loaded but not served: the registry refused its group (a built-in one).
            state
                .loaded
                .get(&key)
                .filter(|_| serving.is_none())
                .map(|l| format!("group {} is built into the server", l.plugin.group.group))
        });
        let baseline = serving.is_some() && state.loaded.get(&key).is_some_and(|l| l.tier == Tier::Baseline);
        ObjectState {
            baseline,
            serving,
            failure,
            failed_hash: failed.map(|(h, _)| h.clone()).filter(|h| !h.is_empty()),
        }
    }

    /// Sets its tenant's `plugins` and `pluginBytes` limits (`None`: none). A limit holds for components loaded from
    /// now on: those served stay, as objects over a lowered quota do; a file refused for a limit is tried again at the
    /// next reconcile.
    pub fn set_limits(&self, plugins: Option<u64>, plugin_bytes: Option<u64>) {
        *self.limits.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = (plugins, plugin_bytes);
    }

    /// Why a component file of `bytes` may not be served besides those `loaded` (`file` itself left out, as it
    /// replaces its previous version), if a limit says so.
    fn over_limits(&self, loaded: &BTreeMap<String, Loaded>, file: &str, bytes: u64) -> Option<String> {
        let (max_plugins, max_bytes) = *self.limits.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let others = loaded
            .iter()
            .filter(|(f, l)| f.as_str() != file && l.definition.is_none());
        let (count, total) = others.fold((0u64, 0u64), |(n, b), (_, l)| (n + 1, b + l.bytes));
        if let Some(max) = max_plugins {
            if count + 1 > max {
                return Some(format!(
                    "over the tenant's plugins limit: {count} plugin(s) served, at most {max} (limits.plugins)"
                ));
            }
        }
        if let Some(max) = max_bytes {
            if total + bytes > max {
                return Some(format!(
                    "over the tenant's pluginBytes limit: {bytes} bytes with the {total} served make {}, over {max} \
                     (limits.pluginBytes)",
                    total + bytes
                ));
            }
        }
        None
    }

    /// Whether a component served from the baseline tier has its optimized build in the compile cache now.
    fn optimized_build_ready(&self, loaded: &Loaded) -> bool {
        loaded.tier == Tier::Baseline && self.cache.as_ref().is_some_and(|c| c.has(&loaded.hash))
    }

    /// Its tenant's plugin budget.
    pub fn budget(&self) -> &Arc<Budget> {
        &self.budget
    }

    /// Stops using what it loaded (its tenant is no longer served).
    pub fn close(&self) {
        if let Some(cache) = &self.cache {
            cache.release(&self.label);
        }
    }

    /// A tenant's plugin directory feeding `registry`: as [`PluginDir::new`], its files named `<tenant>/<file>` in
    /// metrics.
    pub fn for_tenant(
        runtime: Arc<Runtime>,
        tenant: &str,
        dir: Option<&Path>,
        cache: Option<CompileCache>,
        registry: Arc<Registry>,
    ) -> Arc<PluginDir> {
        Self::labelled(runtime, format!("{tenant}/"), dir, cache, registry)
    }

    /// The current load failures.
    pub fn failures(&self) -> Vec<LoadFailure> {
        self.failures.lock().map(|f| f.clone()).unwrap_or_default()
    }

    /// Loads one file (whose content hash is `hash`) into a plugin: from what a plugin of the same component shares
    /// already served (by any tenant), else from the compiled component (shared in memory, the compile cache, or
    /// compiled now from the file's bytes, read only then).
    fn load(&self, name: &str, hash: &str, path: &Path) -> anyhow::Result<Loaded> {
        if path.extension().is_some_and(is_crd_extension) {
            let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
            let definition = Arc::new(builtin::crd::Definition::parse(&text)?);
            let plugin = builtin::crd::serve(name, std::slice::from_ref(&definition));
            tracing::info!(
                plugin = name,
                group = %plugin.group.group,
                resource = definition.plural(),
                "CustomResourceDefinition loaded"
            );
            return Ok(Loaded {
                hash: hash.to_owned(),
                tier: Tier::Optimized,
                bytes: 0,
                plugin: Arc::new(plugin),
                definition: Some(definition),
            });
        }
        let (plugin, tier) = self.runtime.clone().loading(hash, || self.load_now(name, hash, path))?;
        if tier == Tier::Baseline {
            if let Some(cache) = &self.cache {
                let me = self.me.clone();
                let done = Box::new(move || {
                    // The tenant may be gone by then.
                    if let Some(me) = me.upgrade() {
                        if let Err(e) = me.reconcile() {
                            tracing::error!(error = format!("{e:#}"), "reloading optimized plugins failed");
                        }
                    }
                });
                plugin_runtime::file::optimize(&self.runtime, cache, hash, path, done);
            }
        }
        Ok(Loaded {
            hash: hash.to_owned(),
            tier,
            bytes: file_size(path),
            plugin: Arc::new(plugin),
            definition: None,
        })
    }

    fn load_now(&self, name: &str, hash: &str, path: &Path) -> anyhow::Result<(Plugin, Tier)> {
        let started = Instant::now();
        let (component, source, tier) = plugin_runtime::file::load(
            &self.runtime,
            self.cache.as_ref(),
            name,
            hash,
            path,
            self.budget.clone(),
        )?;
        let plugin = component::plugin(component);
        tracing::info!(
            plugin = name,
            group = %plugin.group.group,
            resources = ?plugin.group.resources.iter().map(|r| r.plural.as_str()).collect::<Vec<_>>(),
            verbs = ?plugin.exports.verbs(),
            source = ?source,
            tier = ?tier,
            total_ms = started.elapsed().as_millis() as u64,
            "plugin loaded"
        );
        Ok((plugin, tier))
    }

    /// Brings the loaded set in line with the directory, then swaps it into the registry. Blocking: call it from a
    /// blocking context.
    pub fn reconcile(&self) -> anyhow::Result<()> {
        let entries = match &self.dir {
            Some(dir) => std::fs::read_dir(dir)
                .with_context(|| format!("reading the plugin directory {}", dir.display()))?
                .collect(),
            None => Vec::new(),
        };
        let mut files: Vec<PathBuf> = entries
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "wasm" || is_crd_extension(x)))
            // A tenant directory's own configuration is no plugin.
            .filter(|p| p.file_name().is_none_or(|n| n != TENANT_CONFIG))
            .collect();
        files.sort();
        // The directory's files, then the Plugin objects' components: (key in the loaded set, plugin name, file).
        let mut entries: Vec<(String, String, PathBuf)> = files
            .into_iter()
            .map(|path| {
                let stem = path
                    .file_stem()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (file_name(&path), stem, path)
            })
            .collect();
        entries.extend(
            self.objects
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter()
                .map(|(name, path)| (object_key(name), name.clone(), path.clone())),
        );
        let mut state = self
            .state
            .lock()
            .map_err(|_| anyhow::anyhow!("plugin state poisoned"))?;
        let present: Vec<String> = entries.iter().map(|(file, _, _)| file.clone()).collect();
        let removed: Vec<String> = state.loaded.keys().filter(|f| !present.contains(f)).cloned().collect();
        for file in removed {
            tracing::info!(file, "plugin removed: its routes are unregistered, its data is kept");
            state.loaded.remove(&file);
        }
        state.failures.retain(|f, _| present.contains(f));
        for (file, name, path) in &entries {
            let (file, path) = (file.clone(), path.as_path());
            let hash = match file_hash(path) {
                Ok(h) => h,
                Err(e) => {
                    let reason = format!("reading {}: {e}", path.display());
                    tracing::error!(file, %reason, "plugin failed to load");
                    state
                        .failures
                        .insert(file.clone(), (String::new(), LoadFailure::new(file, reason)));
                    continue;
                }
            };
            if state
                .loaded
                .get(&file)
                .is_some_and(|l| l.hash == hash && !self.optimized_build_ready(l))
            {
                continue;
            }
            if state.failures.get(&file).is_some_and(|(h, _)| *h == hash) {
                continue;
            }
            if !path.extension().is_some_and(is_crd_extension) {
                if let Some(reason) = self.over_limits(&state.loaded, &file, file_size(path)) {
                    let serving = if state.loaded.contains_key(&file) {
                        "; the previous version keeps serving"
                    } else {
                        ""
                    };
                    tracing::warn!(file, %reason, "plugin not loaded{serving}");
                    // Without its hash: tried again at the next reconcile, when the limits may allow it.
                    state
                        .failures
                        .insert(file.clone(), (String::new(), LoadFailure::new(file, reason)));
                    continue;
                }
            }
            // A Plugin object's component is checked as `plugin check` checks it: its examples must pass.
            let is_object = file.starts_with(OBJECT_KEY_PREFIX);
            let loaded = self.load(name, &hash, path).and_then(|loaded| {
                if is_object {
                    check_examples(&loaded)?;
                }
                Ok(loaded)
            });
            match loaded {
                Ok(loaded) => {
                    state.failures.remove(&file);
                    state.loaded.insert(file, loaded);
                }
                Err(e) => {
                    let reason = one_line(&format!("{e:#}"));
                    let serving = if state.loaded.contains_key(&file) {
                        "; the previous version keeps serving"
                    } else {
                        ""
                    };
                    tracing::error!(file, %reason, "plugin failed to load{serving}");
                    state
                        .failures
                        .insert(file.clone(), (hash, LoadFailure::new(file, reason)));
                }
            }
        }
        // A group is served by one `.wasm` plugin, or by its CustomResourceDefinition files together, one resource
        // each. A `.wasm` plugin takes the place of the CustomResourceDefinition files of its group: they stay loaded
        // but are not served (shadowed), and serve again once the plugin is gone. Otherwise the first file (in name
        // order) serving a group (`.wasm`) or a resource (CRD) wins. A CRD file defining a resource already served
        // stays loaded too, reported, and serves once the first file is gone.
        let mut wasm_groups: BTreeMap<String, (String, Arc<Plugin>)> = BTreeMap::new();
        let mut crd_groups: BTreeMap<String, Vec<(String, Arc<builtin::crd::Definition>)>> = BTreeMap::new();
        let mut serving = Vec::new();
        let mut conflicts = Vec::new();
        // The CRD files loaded but not served: shadowed by a `.wasm` plugin, or defining a resource already served.
        let mut unserved = Vec::new();
        let wasm_first = state
            .loaded
            .iter()
            .filter(|(_, l)| l.definition.is_none())
            .chain(state.loaded.iter().filter(|(_, l)| l.definition.is_some()));
        for (file, l) in wasm_first {
            let group = &l.plugin.group.group;
            match (wasm_groups.get(group), &l.definition) {
                (Some((first, plugin)), Some(_)) => {
                    let reason = shadowing(&l.plugin, first, plugin);
                    tracing::warn!(file, plugin = %first, %reason, "CustomResourceDefinition not served");
                    unserved.push(LoadFailure {
                        file: file.clone(),
                        reason,
                        shadowed_by: Some(first.clone()),
                    });
                }
                (Some((first, _)), None) => conflicts.push((
                    file.clone(),
                    l.hash.clone(),
                    format!("group {group} is already served by {first}"),
                )),
                (None, None) => {
                    wasm_groups.insert(group.clone(), (file.clone(), l.plugin.clone()));
                    serving.push(l.plugin.clone());
                }
                (None, Some(definition)) => {
                    let served = crd_groups.entry(group.clone()).or_default();
                    match served.iter().find(|(_, d)| d.plural() == definition.plural()) {
                        Some((first, _)) => {
                            let reason = format!("{}.{group} is already served by {first}", definition.plural());
                            tracing::error!(file, %reason, "CustomResourceDefinition not served");
                            unserved.push(LoadFailure::new(file.clone(), reason));
                        }
                        None => served.push((file.clone(), definition.clone())),
                    }
                }
            }
        }
        for served in crd_groups.into_values() {
            if served.is_empty() {
                continue;
            }
            if let [(file, _)] = served.as_slice() {
                if let Some(l) = state.loaded.get(file) {
                    serving.push(l.plugin.clone());
                }
                continue;
            }
            // Named after its files (in logs and metrics).
            let name = served
                .iter()
                .map(|(file, _)| file.rsplit_once('.').map_or(file.as_str(), |(stem, _)| stem))
                .collect::<Vec<_>>()
                .join("+");
            let definitions: Vec<_> = served.into_iter().map(|(_, d)| d).collect();
            serving.push(Arc::new(builtin::crd::serve(&name, &definitions)));
        }
        for (file, hash, reason) in conflicts {
            tracing::error!(file, %reason, "plugin not served");
            state.loaded.remove(&file);
            state
                .failures
                .insert(file.clone(), (hash, LoadFailure::new(file, reason)));
        }
        self.registry.set_plugins(serving);
        if let Some(cache) = &self.cache {
            let in_use: Vec<&str> = state.loaded.values().map(|l| l.hash.as_str()).collect();
            cache.prune_for(&self.label, &in_use);
        }
        // The failure gauge is shared by every tenant's directory: each changes only its own files' series.
        let gauge = &component_base::metrics::metrics().plugin_load_failures;
        let label = |file: &str| component_base::metrics::FileLabels {
            file: format!("{}{file}", self.label),
        };
        let mut reported: Vec<LoadFailure> = state.failures.values().map(|(_, f)| f.clone()).collect();
        reported.extend(unserved);
        reported.sort_by(|a, b| a.file.cmp(&b.file));
        for f in &reported {
            gauge.get_or_create(&label(&f.file)).set(1);
        }
        if let Ok(mut f) = self.failures.lock() {
            for old in f.iter().filter(|old| !reported.iter().any(|r| r.file == old.file)) {
                gauge.remove(&label(&old.file));
            }
            *f = reported;
        }
        Ok(())
    }
}

/// Why a CustomResourceDefinition file (`crd`) is not served: the `.wasm` plugin `file` serves its group. Its objects
/// are kept (they have the same storage keys), served by the plugin when it serves their resource; where the two
/// disagree on versions, the reason says so.
fn shadowing(crd: &Plugin, file: &str, plugin: &Plugin) -> String {
    let group = &crd.group.group;
    let mut reason = format!("shadowed by {file}, which serves group {group} with code");
    for r in &crd.group.resources {
        let Some(theirs) = plugin.resource(&r.plural) else {
            reason.push_str(&format!(
                "; it does not serve {}.{group}, whose objects are not served while it is loaded",
                r.plural
            ));
            continue;
        };
        let names = |r: &apimachinery::scheme::ResourceInfo| -> Vec<String> {
            r.versions.iter().filter(|v| v.served).map(|v| v.name.clone()).collect()
        };
        if theirs.storage_version() != r.storage_version() {
            reason.push_str(&format!(
                "; {}.{group} is stored in {} by the plugin but in {} by the CustomResourceDefinition",
                r.plural,
                theirs.storage_version(),
                r.storage_version()
            ));
        } else if names(theirs) != names(r) {
            reason.push_str(&format!(
                "; the plugin serves {}.{group} in versions {} where the CustomResourceDefinition serves {}",
                r.plural,
                names(theirs).join(", "),
                names(r).join(", ")
            ));
        }
    }
    reason.push_str(&format!(
        ". Its objects are served by the plugin; removing {file} serves the CustomResourceDefinition again"
    ));
    reason
}

/// The content hash of a plugin file, remembered by the file's identity (device, inode, size, modification time),
/// so that a file served by many tenants (the same file linked into each tenant's directory) is read and hashed once.
fn file_hash(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::MetadataExt as _;
    /// Device, inode, size, modification time (seconds, nanoseconds).
    type FileId = (u64, u64, u64, i64, i64);
    static HASHES: Mutex<BTreeMap<FileId, String>> = Mutex::new(BTreeMap::new());
    let meta = std::fs::metadata(path)?;
    let id = (meta.dev(), meta.ino(), meta.len(), meta.mtime(), meta.mtime_nsec());
    if let Some(hash) = HASHES.lock().ok().and_then(|h| h.get(&id).cloned()) {
        return Ok(hash);
    }
    let hash = content_hash_of(std::fs::File::open(path)?)?;
    if let Ok(mut hashes) = HASHES.lock() {
        // Bounded: a directory whose files change forever does not grow it without end.
        if hashes.len() >= 4096 {
            hashes.clear();
        }
        hashes.insert(id, hash.clone());
    }
    Ok(hash)
}

/// Whether a directory event may have changed what is served. Reading the files (reconciling hashes them) raises
/// access events, and some tools touch metadata: reacting to those would reconcile again and again, forever. A file
/// closed after writing counts: it is the end of a copy.
pub fn changes_content(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) | EventKind::Modify(ModifyKind::Metadata(_)) => false,
        _ => true,
    }
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use notify::event::{
        AccessKind, AccessMode, CreateKind, DataChange, EventKind, MetadataKind, ModifyKind, RemoveKind, RenameMode,
    };

    use super::changes_content;

    #[test]
    fn only_events_that_may_change_a_plugin_trigger_a_reload() {
        for kind in [
            EventKind::Create(CreateKind::File),
            EventKind::Modify(ModifyKind::Data(DataChange::Any)),
            EventKind::Modify(ModifyKind::Name(RenameMode::To)),
            EventKind::Modify(ModifyKind::Any),
            EventKind::Remove(RemoveKind::File),
            EventKind::Access(AccessKind::Close(AccessMode::Write)),
            EventKind::Any,
        ] {
            assert!(changes_content(&kind), "{kind:?}");
        }
        // The reload's own reads, and metadata changes.
        for kind in [
            EventKind::Access(AccessKind::Open(AccessMode::Read)),
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
        ] {
            assert!(!changes_content(&kind), "{kind:?}");
        }
    }
}
