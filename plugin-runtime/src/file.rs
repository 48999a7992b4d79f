//! A plugin loaded from a component file: from what a plugin of the same component already shares (by any tenant),
//! else from the compiled component (the compile cache, or compiled now from the file's bytes, read only then); an
//! idle component is unloaded and loaded again from the cache ([`PluginComponent::evict_idle`]).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;

use crate::budget::Budget;
use crate::cache::{content_hash, CompileCache, Source};
use crate::component::{PluginComponent, Reload};
use crate::in_context;
use crate::runtime::{compile_component, Runtime};

/// Loads the component file at `path`, whose content hash is `hash`, as the plugin `name` of a tenant held to
/// `budget`. Returns it and how its component was obtained.
pub fn load(
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
    if source == Source::Compiled {
        component_base::metrics::metrics().plugin_components_compiled.inc();
    }
    let reload = cache.map(|cache| reload(runtime, cache.clone(), hash, path));
    let component = PluginComponent::from_component_shared(runtime.clone(), name, hash, component, budget, reload)?;
    Ok((component, source))
}

/// How the component with this content hash, read from `path`, is loaded again after it was unloaded when idle:
/// from the compile cache, compiled again from the file if its entry is gone, provided the file still has the same
/// content.
fn reload(runtime: &Runtime, cache: CompileCache, hash: &str, path: &Path) -> Reload {
    let engine = runtime.engine.clone();
    let (hash, path) = (hash.to_owned(), path.to_owned());
    Box::new(move || {
        let read = || {
            let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            anyhow::ensure!(
                content_hash(&bytes) == hash,
                "{} changed since it was loaded",
                path.display()
            );
            Ok(bytes)
        };
        cache.load(&engine, &hash, read).map(|(component, _)| component)
    })
}

#[cfg(test)]
mod tests;
