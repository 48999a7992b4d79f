//! The compiled-component cache: components compiled once are kept on disk, keyed by the hash of their bytes and the
//! engine's compatibility fingerprint, so a restart or a reload of a known plugin deserializes (milliseconds) instead
//! of compiling (seconds for the large Python and JavaScript components).

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

use super::runtime::wt;

/// The SHA-256 of a component's bytes, as lowercase hex.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// A directory of precompiled components (`<content hash>-<engine fingerprint>.cwasm`).
#[derive(Clone, Debug)]
pub struct CompileCache {
    dir: PathBuf,
    fingerprint: String,
}

/// How a component was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Compiled now (and stored in the cache, when there is one).
    Compiled,
    /// Deserialized from the cache.
    Cached,
}

impl CompileCache {
    /// A cache in `dir` (created if missing) for components compiled by `engine`.
    pub fn new(dir: &Path, engine: &Engine) -> anyhow::Result<CompileCache> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating the plugin cache {}", dir.display()))?;
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        Ok(CompileCache {
            dir: dir.to_path_buf(),
            fingerprint: format!("{:016x}", hasher.finish()),
        })
    }

    fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(format!("{hash}-{}.cwasm", self.fingerprint))
    }

    /// Loads a component from the cache, or compiles it and stores the result. A cache entry that cannot be read
    /// is compiled again and replaced.
    pub fn load(&self, engine: &Engine, hash: &str, wasm: &[u8]) -> anyhow::Result<(Component, Source)> {
        let path = self.path(hash);
        if path.exists() {
            match deserialize(engine, &path) {
                Ok(c) => return Ok((c, Source::Cached)),
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = format!("{e:#}"), "discarding a bad cache entry")
                }
            }
        }
        let compiled = wt(engine.precompile_component(wasm), "compiling the component")?;
        let tmp = self.dir.join(format!(".{hash}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, &compiled).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
        Ok((deserialize(engine, &path)?, Source::Compiled))
    }
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> anyhow::Result<Component> {
    // SAFETY: the file was written by `Engine::precompile_component` of an engine with the same compatibility
    // fingerprint (it is in the file name), into a directory only this server writes; wasmtime also checks the
    // header and engine compatibility before using it.
    wt(
        unsafe { Component::deserialize_file(engine, path) },
        "loading a precompiled component",
    )
}
