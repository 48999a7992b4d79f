use std::time::Duration;

use super::*;
use crate::cache::content_hash;
use crate::testing;

fn budget() -> Arc<Budget> {
    Arc::new(Budget::new(64 << 20, Duration::from_millis(100)))
}

/// A copy of a test plugin in a directory of its own, with its content hash.
fn copy_of(name: &str, dir: &Path) -> (std::path::PathBuf, String) {
    let bytes = std::fs::read(testing::wasm_path(name)).expect("the test plugin is built");
    let path = dir.join(format!("{name}.wasm"));
    std::fs::write(&path, &bytes).unwrap();
    // Each test here loads another plugin: no test's load is shared with another's.
    (path, content_hash(&bytes))
}

#[test]
fn a_file_is_compiled_then_shared_while_a_plugin_of_it_lives() {
    let dir = tempfile::tempdir().unwrap();
    let (path, hash) = copy_of("wardle", dir.path());
    let runtime = testing::runtime();
    let (first, source) = load(&runtime, None, "wardle", &hash, &path, budget()).unwrap();
    assert_eq!(source, Source::Compiled);
    assert_eq!(first.group.group, "wardle.example.com");
    let (second, source) = load(&runtime, None, "wardle", &hash, &path, budget()).unwrap();
    assert_eq!(
        source,
        Source::Shared,
        "another tenant's load of the same file makes nothing again"
    );
    assert_eq!(second.exports, first.exports);
    drop((first, second));
    assert!(
        runtime.shared_component(&hash).is_none(),
        "nothing is kept once no plugin of it lives"
    );
}

#[test]
fn with_a_compile_cache_the_next_load_is_from_the_cache_and_an_idle_component_comes_back_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let (path, hash) = copy_of("hostile", dir.path());
    let runtime = testing::runtime();
    let cache = CompileCache::new(&dir.path().join("cache"), runtime.fingerprint, 1 << 30).unwrap();
    let (first, source) = load(&runtime, Some(&cache), "hostile", &hash, &path, budget()).unwrap();
    assert_eq!(source, Source::Compiled);
    drop(first);
    let (again, source) = load(&runtime, Some(&cache), "hostile", &hash, &path, budget()).unwrap();
    assert_eq!(source, Source::Cached);
    // Unloaded when idle, the component is loaded again from the cache on its next call.
    again.evict_idle(Duration::ZERO);
    again
        .prepare_for_create("trials", &testing::trial("ok", "prepare-for-create"))
        .expect("loaded again from the cache");
    // A file whose content changed is not loaded in its place.
    std::fs::write(&path, b"not the same component").unwrap();
    std::fs::remove_dir_all(dir.path().join("cache")).unwrap();
    std::fs::create_dir_all(dir.path().join("cache")).unwrap();
    again.evict_idle(Duration::ZERO);
    let e = again
        .prepare_for_create("trials", &testing::trial("ok", "prepare-for-create"))
        .unwrap_err();
    assert!(e.to_string().contains("changed since it was loaded"), "{e}");
}
