//! A plugin loaded from a component file: from what a plugin of the same component already shares (by any tenant),
//! else from the compiled component (the compile cache, or compiled now from the file's bytes, read only then); an
//! idle component is unloaded and loaded again from the cache ([`PluginComponent::evict_idle`]).
//!
//! With a baseline tier ([`CompileCache::with_baseline_tier`]), a component the cache has no optimized build of is
//! served from the baseline compiler (Winch) at once, and [`optimize`] compiles its optimized build in the
//! background, once per component whatever the number of tenants waiting for it; they load it again when it is done.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::Context as _;

use crate::budget::Budget;
use crate::cache::{content_hash, CompileCache, Source};
use crate::component::{PluginComponent, Reload};
use crate::in_context;
use crate::runtime::{compile_component, Runtime, Tier};

/// Loads the component file at `path`, whose content hash is `hash`, as the plugin `name` of a tenant held to
/// `budget`. Returns it, how its component was obtained, and which compiler's code it runs: the baseline's when the
/// cache has a baseline tier and no optimized build of it yet (then call [`optimize`]), else the optimized.
pub fn load(
    runtime: &Arc<Runtime>,
    cache: Option<&CompileCache>,
    name: &str,
    hash: &str,
    path: &Path,
    budget: Arc<Budget>,
) -> anyhow::Result<(PluginComponent, Source, Tier)> {
    // The baseline tier only for a component neither served from its optimized build nor in the cache.
    let baseline = match cache {
        Some(cache) if !cache.has(hash) && runtime.shared_component(hash).is_none() => runtime
            .baseline_tier()
            .and_then(|tier| Some((cache.baseline(tier.fingerprint)?, tier))),
        _ => None,
    };
    if let Some((baseline_cache, baseline)) = baseline {
        match load_from(&baseline, Some(&baseline_cache), name, hash, path, budget.clone()) {
            Ok((component, source)) => {
                if source == Source::Compiled {
                    component_base::metrics::metrics()
                        .plugin_components_compiled_baseline
                        .inc();
                }
                return Ok((component, source, Tier::Baseline));
            }
            // Winch refuses a few proposals (tail calls, relaxed SIMD, function references): Cranelift may not.
            Err(e) => tracing::warn!(
                plugin = name,
                error = format!("{e:#}"),
                "the baseline compiler cannot compile it: compiling it with the optimizing compiler"
            ),
        }
    }
    let (component, source) = load_from(runtime, cache, name, hash, path, budget)?;
    if source == Source::Compiled {
        component_base::metrics::metrics().plugin_components_compiled.inc();
    }
    Ok((component, source, runtime.tier))
}

/// Loads it for `runtime` from what a plugin of the same component shares, the `cache`, or compiled now.
fn load_from(
    runtime: &Arc<Runtime>,
    cache: Option<&CompileCache>,
    name: &str,
    hash: &str,
    path: &Path,
    budget: Arc<Budget>,
) -> anyhow::Result<(PluginComponent, Source)> {
    if let Some(shared) = runtime.shared_component(hash) {
        return Ok((
            PluginComponent::from_shared_component(runtime.clone(), name, shared, budget),
            Source::Shared,
        ));
    }
    let read = || std::fs::read(path).with_context(|| format!("reading {}", path.display()));
    let (component, source) = match cache {
        Some(cache) => cache.load(&runtime.engine, hash, read)?,
        None => (
            in_context(compile_component(&runtime.engine, &read()?), "compiling the component")?,
            Source::Compiled,
        ),
    };
    let reload = cache.map(|cache| reload(runtime, cache.clone(), hash, path));
    let component = PluginComponent::from_component_shared(runtime.clone(), name, hash, component, budget, reload)?;
    Ok((component, source))
}

/// What is told when an optimized build is done (whether it succeeded or not).
pub type Done = Box<dyn FnOnce() + Send>;

/// The optimized builds being compiled in the background, by content hash: who waits for each.
static OPTIMIZING: Mutex<Option<HashMap<String, Vec<Done>>>> = Mutex::new(None);

/// Compiles the optimized build of the component with this content hash, read from `path`, into `cache` on a
/// thread of its own (one compile at a time, as the cache compiles), then calls `done`. However many callers ask for
/// the same component meanwhile, it is compiled once and each of them is called. A failure is logged: the component
/// keeps being served from the baseline tier.
pub fn optimize(runtime: &Arc<Runtime>, cache: &CompileCache, hash: &str, path: &Path, done: Done) {
    {
        let mut optimizing = OPTIMIZING.lock().unwrap_or_else(PoisonError::into_inner);
        let waiting = optimizing.get_or_insert_with(HashMap::new);
        if let Some(waiters) = waiting.get_mut(hash) {
            waiters.push(done);
            return;
        }
        waiting.insert(hash.to_owned(), vec![done]);
    }
    let (runtime, cache, hash, path): (Arc<Runtime>, CompileCache, String, PathBuf) =
        (runtime.clone(), cache.clone(), hash.to_owned(), path.to_owned());
    let spawned = std::thread::Builder::new().name("wasm-optimize".into()).spawn({
        let hash = hash.clone();
        move || {
            let started = std::time::Instant::now();
            let compiled = if cache.has(&hash) {
                Ok(())
            } else {
                cache.compile(&runtime.engine, &hash, || read_same(&path, &hash))
            };
            match compiled {
                Ok(()) => {
                    component_base::metrics::metrics().plugin_components_compiled.inc();
                    tracing::info!(
                        hash = &hash[..12.min(hash.len())],
                        ms = started.elapsed().as_millis() as u64,
                        "optimized build compiled: its plugins are loaded again from it"
                    );
                }
                Err(e) => tracing::error!(
                    hash = &hash[..12.min(hash.len())],
                    error = format!("{e:#}"),
                    "the optimized build failed: the plugin keeps being served from the baseline compiler"
                ),
            }
            finish(&hash);
        }
    });
    if let Err(e) = spawned {
        // Not told (they may hold what telling them takes): they keep serving from the baseline tier.
        tracing::error!(error = %e, "cannot start the optimizing compile");
        OPTIMIZING
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
            .map(|w| w.remove(&hash));
    }
}

/// Calls whoever waits for the optimized build of `hash`.
fn finish(hash: &str) {
    let waiters = OPTIMIZING
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .as_mut()
        .and_then(|w| w.remove(hash))
        .unwrap_or_default();
    for done in waiters {
        done();
    }
}

/// The bytes of the file at `path`, provided they still have this content hash.
fn read_same(path: &Path, hash: &str) -> anyhow::Result<Vec<u8>> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    anyhow::ensure!(
        content_hash(&bytes) == hash,
        "{} changed since it was loaded",
        path.display()
    );
    Ok(bytes)
}

/// How the component with this content hash, read from `path`, is loaded again after it was unloaded when idle:
/// from the compile cache, compiled again from the file if its entry is gone, provided the file still has the same
/// content.
fn reload(runtime: &Runtime, cache: CompileCache, hash: &str, path: &Path) -> Reload {
    let engine = runtime.engine.clone();
    let (hash, path) = (hash.to_owned(), path.to_owned());
    Box::new(move || {
        cache
            .load(&engine, &hash, || read_same(&path, &hash))
            .map(|(component, _)| component)
    })
}

#[cfg(test)]
mod tests;
