//! The compiled-component cache: components compiled once are kept on disk, keyed by the hash of their bytes and the
//! engine's compatibility fingerprint, so a restart or a reload of a known plugin deserializes (milliseconds) instead
//! of compiling (seconds for the large Python and JavaScript components).
//!
//! Every version of a plugin adds an entry (tens of MB for Python and JavaScript), so the cache is pruned after each
//! reload: entries of the plugins being served are kept; the others are removed least recently used first while the
//! cache is over its size limit. Several servers may share one cache directory (each writes its entries under a
//! temporary name and renames them into place), so a missing entry or a lost race to remove one is not an error.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

use super::in_context;
use super::runtime::Tier;

/// The SHA-256 of a component's bytes, as lowercase hex.
pub fn content_hash(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// [`content_hash`] of what `reader` yields, read a few KiB at a time: hashing a plugin file does not hold the whole
/// file in memory (18.7 MB for the example Python plugin), which the server reads whole only to compile it.
pub fn content_hash_of(mut reader: impl std::io::Read) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    std::io::copy(&mut reader, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

/// How old a temporary file must be before pruning removes it: younger ones may be entries another server sharing the
/// directory is still writing.
const STALE_TEMPORARY: Duration = Duration::from_secs(3600);

/// A directory of precompiled components (`<content hash>-<engine fingerprint>.cwasm`).
#[derive(Clone, Debug)]
pub struct CompileCache {
    dir: PathBuf,
    fingerprint: String,
    /// The size the cache is pruned down to, in bytes (entries in use are kept even beyond it).
    limit: u64,
    /// What every user of the cache (each tenant's plugin directory) serves from it.
    shared: Arc<Mutex<Shared>>,
    /// Compiles in a child process, when set; else in this process.
    compiler: Option<Compiler>,
    /// Held while compiling: one compile at a time, whatever the number of tenants loading plugins.
    compiling: Arc<Mutex<()>>,
    /// With a baseline tier ([`CompileCache::with_baseline_tier`]): held while compiling for it, so that a component
    /// served from the baseline compiler first does not wait for another one's optimized compile.
    baseline: Option<Arc<Mutex<()>>>,
}

/// The server's own executable, which compiles components in a child process (`plugin compile`) when set.
static COMPILER_EXECUTABLE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();

/// Makes the caches made from now on compile components in child processes running `executable plugin compile`
/// (the server's binary calls this with its own path). A compile's memory (several hundred MB for the Python guest,
/// most of it freed at its end but left fragmented in the heap) then never enters the server's heap, and goes back to
/// the OS when the child exits.
pub fn compile_in_child_processes(executable: PathBuf) {
    let _ = COMPILER_EXECUTABLE.set(executable);
}

/// How a child process compiles components for a runtime: `<executable> plugin compile`, the wasm on its standard
/// input, the compiled component written to `--out`. The compiled code does not depend on the runtime's limits
/// (they size the instance pool, which the engine's compatibility hash leaves out), so the child needs none.
#[derive(Clone, Debug)]
pub struct Compiler {
    /// The server's executable.
    pub executable: PathBuf,
    /// Compiles with the baseline compiler (Winch), several functions at once (its point is to be done soon).
    pub baseline: bool,
}

impl Compiler {
    /// The compiler [`compile_in_child_processes`] set up.
    pub fn configured() -> Option<Compiler> {
        COMPILER_EXECUTABLE.get().map(|executable| Compiler {
            executable: executable.clone(),
            baseline: false,
        })
    }

    /// Compiles `wasm` into the file `out`; the error is the child's own. When no child can be started (the
    /// executable was replaced by an upgrade, say), compiles in this process with `engine` instead.
    fn compile(&self, engine: &Engine, wasm: &[u8], out: &Path) -> anyhow::Result<()> {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let started = std::time::Instant::now();
        let mut command = Command::new(&self.executable);
        command.args(["plugin", "compile", "--wasm-bytes", &wasm.len().to_string()]);
        if self.baseline {
            command.args(["--baseline", "--parallel"]);
        }
        let child = command
            .arg("--out")
            .arg(out)
            .env("RUST_LOG", "error")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                tracing::warn!(executable = %self.executable.display(), error = %e,
                    "cannot start a compiler process: compiling in the server's own process");
                // An engine without a compiler refuses: the error then says why it was asked to.
                return compile_here(engine, wasm, out)
                    .with_context(|| format!("cannot start the compiler process {}: {e}", self.executable.display()));
            }
        };
        let mut stdin = child
            .stdin
            .take()
            .context("the compiler process has no standard input")?;
        // Written while the child runs: it reads all of it before it writes anything.
        let written = std::thread::scope(|scope| {
            let writer = scope.spawn(move || stdin.write_all(wasm));
            let output = child.wait_with_output();
            (writer.join(), output)
        });
        let output = written.1.context("waiting for the compiler process")?;
        if output.status.success() {
            tracing::info!(
                ms = started.elapsed().as_millis() as u64,
                wasm_bytes = wasm.len(),
                baseline = self.baseline,
                "compiled in a child process"
            );
            return Ok(());
        }
        let stderr = String::from_utf8_lossy(&output.stderr);
        match stderr.lines().rev().find_map(|l| l.strip_prefix("error: ")) {
            Some(message) => Err(anyhow::anyhow!("{message}")),
            None => Err(anyhow::anyhow!(
                "compiling the component: the compiler process failed ({}){}",
                output.status,
                match written.0 {
                    Ok(Err(e)) => format!(", writing its input: {e}"),
                    _ => String::new(),
                }
            )),
        }
    }
}

/// Compiles `wasm` in this process into the file `out`.
fn compile_here(engine: &Engine, wasm: &[u8], out: &Path) -> anyhow::Result<()> {
    let compiled = in_context(precompile(engine, wasm), "compiling the component")?;
    std::fs::write(out, &compiled).with_context(|| format!("writing {}", out.display()))
}

#[cfg(feature = "compiler")]
fn precompile(engine: &Engine, wasm: &[u8]) -> wasmtime::Result<Vec<u8>> {
    engine.precompile_component(wasm)
}

#[cfg(not(feature = "compiler"))]
fn precompile(_: &Engine, _: &[u8]) -> wasmtime::Result<Vec<u8>> {
    Err(super::runtime::no_compiler())
}

/// The `plugin compile` command: compiles the component on standard input (of `wasm_bytes` bytes, a hint) into
/// `out`, for the runtime's `tier`. `parallel` compiles several functions at once: faster, but a larger peak of
/// memory (~35 MB more for the Python guest), so the server's children do so only for the baseline tier.
pub fn compile_command(wasm_bytes: usize, out: &Path, parallel: bool, tier: Tier) -> anyhow::Result<()> {
    use std::io::Read as _;
    // Sized from the start: growing by doubling would hold up to twice the component at the peak.
    let mut wasm = Vec::with_capacity(wasm_bytes.min(1 << 30));
    std::io::stdin()
        .read_to_end(&mut wasm)
        .context("reading the component from standard input")?;
    let engine = super::runtime::compiling_engine(parallel, tier)?;
    compile_here(&engine, &wasm, out)
}

#[derive(Debug, Default)]
struct Shared {
    /// The hashes each user serves, by user.
    in_use: BTreeMap<String, BTreeSet<String>>,
}

impl Shared {
    fn all_in_use(&self) -> BTreeSet<String> {
        self.in_use.values().flatten().cloned().collect()
    }
}

/// What [`CompileCache::prune`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Entries (and stale temporary files) removed.
    pub removed: usize,
    /// Bytes they took.
    pub removed_bytes: u64,
    /// Bytes the cache takes afterwards.
    pub kept_bytes: u64,
}

/// How a component was obtained.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// Compiled now (and stored in the cache, when there is one).
    Compiled,
    /// Deserialized from the cache.
    Cached,
    /// Already loaded (by another tenant, or an earlier load of the same file).
    Shared,
}

impl CompileCache {
    /// A cache in `dir` (created if missing) for components compiled for runtimes with this `fingerprint`
    /// ([`super::runtime::Runtime::fingerprint`]), pruned down to `limit` bytes.
    pub fn new(dir: &Path, fingerprint: u64, limit: u64) -> anyhow::Result<CompileCache> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating the plugin cache {}", dir.display()))?;
        Ok(CompileCache {
            dir: dir.to_path_buf(),
            fingerprint: format!("{fingerprint:016x}"),
            limit,
            shared: Arc::default(),
            compiler: None,
            compiling: Arc::default(),
            baseline: None,
        })
    }

    /// Compiles in child processes run by `compiler`.
    pub fn with_compiler(mut self, compiler: Option<Compiler>) -> CompileCache {
        self.compiler = compiler;
        self
    }

    /// Serves a component it has no entry for from the baseline compiler first ([`CompileCache::baseline`]), when
    /// `enabled`.
    pub fn with_baseline_tier(mut self, enabled: bool) -> CompileCache {
        self.baseline = enabled.then(Arc::default);
        self
    }

    /// The cache of the baseline tier's code, beside this one's in the same directory (entries under the baseline
    /// runtime's `fingerprint`), sharing what its users serve, compiling one component at a time of its own: `None`
    /// unless this cache has a baseline tier.
    pub fn baseline(&self, fingerprint: u64) -> Option<CompileCache> {
        let compiling = self.baseline.clone()?;
        Some(CompileCache {
            dir: self.dir.clone(),
            fingerprint: format!("{fingerprint:016x}"),
            limit: self.limit,
            shared: self.shared.clone(),
            compiler: self.compiler.clone().map(|c| Compiler { baseline: true, ..c }),
            compiling,
            baseline: None,
        })
    }

    /// Whether it holds the compiled component with this content hash.
    pub fn has(&self, hash: &str) -> bool {
        self.path(hash).is_file()
    }

    fn path(&self, hash: &str) -> PathBuf {
        self.dir.join(format!("{hash}-{}.cwasm", self.fingerprint))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Records the hashes `user` (a tenant's plugin directory) serves, and prunes the cache keeping every user's
    /// entries.
    pub fn prune_for(&self, user: &str, in_use: &[&str]) -> Pruned {
        let all = {
            let mut shared = self.lock();
            shared
                .in_use
                .insert(user.to_owned(), in_use.iter().map(|h| (*h).to_owned()).collect());
            shared.all_in_use()
        };
        let all: Vec<&str> = all.iter().map(String::as_str).collect();
        self.prune(&all)
    }

    /// Forgets what `user` serves (its tenant is no longer served).
    pub fn release(&self, user: &str) {
        self.lock().in_use.remove(user);
    }

    /// Loads a component from the cache, or compiles it and stores the result. A cache entry that cannot be read
    /// is compiled again and replaced. The cache keeps no component in memory: the tenants serving one share it
    /// through its plugins' shape, which unloads it when idle.
    /// `wasm` gives the component's bytes; it is called only when the component must be compiled.
    pub fn load(
        &self,
        engine: &Engine,
        hash: &str,
        wasm: impl FnOnce() -> anyhow::Result<Vec<u8>>,
    ) -> anyhow::Result<(Component, Source)> {
        let path = self.path(hash);
        if path.exists() {
            match deserialize(engine, &path) {
                Ok(c) => {
                    // The modification time orders entries for pruning: a use makes an entry recent.
                    let touched = std::fs::File::options()
                        .write(true)
                        .open(&path)
                        .and_then(|f| f.set_modified(SystemTime::now()));
                    if let Err(e) = touched {
                        tracing::debug!(path = %path.display(), error = %e, "cannot mark a cache entry as used");
                    }
                    return Ok((c, Source::Cached));
                }
                Err(e) => {
                    tracing::warn!(path = %path.display(), error = format!("{e:#}"), "discarding a bad cache entry")
                }
            }
        }
        self.compile(engine, hash, wasm)?;
        Ok((deserialize(engine, &path)?, Source::Compiled))
    }

    /// Compiles the component with this content hash into its entry (one compile at a time), without loading it.
    pub fn compile(
        &self,
        engine: &Engine,
        hash: &str,
        wasm: impl FnOnce() -> anyhow::Result<Vec<u8>>,
    ) -> anyhow::Result<()> {
        let path = self.path(hash);
        let tmp = self
            .dir
            .join(format!(".{hash}.{}.{}.tmp", self.fingerprint, std::process::id()));
        let compiled = {
            let _one_at_a_time = self.compiling.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let wasm = wasm()?;
            match &self.compiler {
                Some(compiler) => compiler.compile(engine, &wasm, &tmp),
                None => compile_here(engine, &wasm, &tmp),
            }
        };
        if let Err(e) = compiled {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, &path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
    }
}

impl CompileCache {
    /// Removes what the cache need not keep: temporary files older than an hour (left by a crash), then entries
    /// whose content hash is not in `in_use`, least recently used first, until the cache is within its limit.
    pub fn prune(&self, in_use: &[&str]) -> Pruned {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot read the plugin cache to prune it");
                return Pruned::default();
            }
        };
        let mut pruned = Pruned::default();
        let mut candidates = Vec::new();
        let now = SystemTime::now();
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(meta) = entry.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified = meta.modified().unwrap_or(now);
            if name.starts_with('.') && name.ends_with(".tmp") {
                if now.duration_since(modified).unwrap_or_default() > STALE_TEMPORARY {
                    self.remove(&entry.path(), meta.len(), &mut pruned);
                }
                continue;
            }
            let Some(hash) = name.strip_suffix(".cwasm").and_then(|n| n.split('-').next()) else {
                continue;
            };
            pruned.kept_bytes += meta.len();
            if !in_use.contains(&hash) {
                candidates.push((modified, entry.path(), meta.len()));
            }
        }
        candidates.sort();
        for (_, path, len) in candidates {
            if pruned.kept_bytes <= self.limit {
                break;
            }
            if self.remove(&path, len, &mut pruned) {
                pruned.kept_bytes -= len;
            }
        }
        if pruned.removed > 0 {
            tracing::info!(
                dir = %self.dir.display(),
                removed = pruned.removed,
                removed_bytes = pruned.removed_bytes,
                kept_bytes = pruned.kept_bytes,
                "pruned the plugin cache"
            );
        }
        pruned
    }

    /// Removes one file, counting it; true if it is gone (another server sharing the directory may have removed
    /// it first), false if it could not be removed.
    fn remove(&self, path: &Path, len: u64, pruned: &mut Pruned) -> bool {
        match std::fs::remove_file(path) {
            Ok(()) => {
                pruned.removed += 1;
                pruned.removed_bytes += len;
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove a plugin cache entry");
                false
            }
        }
    }
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> anyhow::Result<Component> {
    // SAFETY: the file was written by `Engine::precompile_component` of an engine with the same compatibility
    // fingerprint (it is in the file name), into a directory only this server writes; wasmtime also checks the
    // header and engine compatibility before using it.
    in_context(
        unsafe { Component::deserialize_file(engine, path) },
        "loading a precompiled component",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashing_a_reader_gives_the_hash_of_its_bytes() {
        // Longer than `io::copy`'s buffer, so that the hash is fed in several pieces.
        let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(content_hash_of(&bytes[..]).unwrap(), content_hash(&bytes));
        assert_eq!(
            content_hash_of(&b""[..]).unwrap(),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }

    /// Writes a file of `len` bytes last modified `age` ago.
    fn file(dir: &Path, name: &str, len: usize, age: Duration) {
        let path = dir.join(name);
        std::fs::write(&path, vec![0u8; len]).unwrap();
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(SystemTime::now() - age).unwrap();
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn cache(dir: &Path, limit: u64) -> CompileCache {
        CompileCache::new(dir, 1, limit).unwrap()
    }

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn unused_entries_go_least_recently_used_first_until_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "old-f1.cwasm", 100, 40 * MINUTE);
        file(dir.path(), "served-f1.cwasm", 100, 30 * MINUTE);
        file(dir.path(), "middle-f2.cwasm", 100, 20 * MINUTE);
        file(dir.path(), "new-f1.cwasm", 100, MINUTE);
        let pruned = cache(dir.path(), 250).prune(&["served"]);
        assert_eq!(
            pruned,
            Pruned {
                removed: 2,
                removed_bytes: 200,
                kept_bytes: 200
            }
        );
        assert_eq!(names(dir.path()), ["new-f1.cwasm", "served-f1.cwasm"]);

        // Within the limit, nothing more goes.
        assert_eq!(cache(dir.path(), 250).prune(&[]).removed, 0);
    }

    #[test]
    fn entries_in_use_stay_beyond_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), "a-f1.cwasm", 100, 2 * MINUTE);
        file(dir.path(), "b-f1.cwasm", 100, MINUTE);
        file(dir.path(), "c-f1.cwasm", 100, MINUTE);
        let pruned = cache(dir.path(), 0).prune(&["a", "b"]);
        assert_eq!(pruned.removed, 1);
        assert_eq!(pruned.kept_bytes, 200);
        assert_eq!(names(dir.path()), ["a-f1.cwasm", "b-f1.cwasm"]);
    }

    #[test]
    fn only_stale_temporary_files_and_cache_entries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        file(dir.path(), ".x.123.tmp", 10, 2 * STALE_TEMPORARY);
        file(dir.path(), ".y.456.tmp", 10, MINUTE);
        file(dir.path(), "notes.txt", 10, 2 * STALE_TEMPORARY);
        std::fs::create_dir(dir.path().join("sub-f1.cwasm")).unwrap();
        let pruned = cache(dir.path(), 0).prune(&[]);
        assert_eq!(pruned.removed, 1);
        assert_eq!(names(dir.path()), [".y.456.tmp", "notes.txt", "sub-f1.cwasm"]);
    }
}
