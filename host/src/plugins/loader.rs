//! Loading the plugins of a plugin directory: every `*.wasm` file directly in it.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;

use super::plugin::Plugin;
use super::runtime::Runtime;

/// A plugin file that failed to load, and why.
#[derive(Debug, Clone)]
pub struct LoadFailure {
    /// The file name.
    pub file: String,
    /// The reason, as precise as the loader can say.
    pub reason: String,
}

/// Loads every `*.wasm` file in `dir`, in name order. A file that fails to load is reported and skipped; two
/// plugins serving the same group are an error for the second.
pub fn load_dir(runtime: &Arc<Runtime>, dir: &Path) -> anyhow::Result<(Vec<Arc<Plugin>>, Vec<LoadFailure>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the plugin directory {}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "wasm"))
        .collect();
    files.sort();
    let mut plugins: Vec<Arc<Plugin>> = Vec::new();
    let mut failures = Vec::new();
    for path in files {
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let name = path
            .file_stem()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let started = std::time::Instant::now();
        let loaded = std::fs::read(&path)
            .with_context(|| format!("reading {}", path.display()))
            .and_then(|bytes| Plugin::load(runtime.clone(), &name, &bytes));
        match loaded {
            Ok(p) => {
                if let Some(other) = plugins.iter().find(|o| o.group.group == p.group.group) {
                    let reason = format!("group {} is already served by plugin {}", p.group.group, other.name());
                    tracing::error!(file, %reason, "plugin not loaded");
                    failures.push(LoadFailure { file, reason });
                    continue;
                }
                tracing::info!(
                    file,
                    group = %p.group.group,
                    resources = ?p.group.resources.iter().map(|r| r.plural.as_str()).collect::<Vec<_>>(),
                    verbs = ?p.exports.verbs(),
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    "plugin loaded"
                );
                plugins.push(Arc::new(p));
            }
            Err(e) => {
                let reason = format!("{e:#}");
                tracing::error!(file, %reason, "plugin failed to load");
                failures.push(LoadFailure { file, reason });
            }
        }
    }
    Ok((plugins, failures))
}
