use std::time::Duration;

use super::*;
use crate::cache::content_hash;
use crate::runtime::Tier;
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
    let (first, source, tier) = load(&runtime, None, "wardle", &hash, &path, budget()).unwrap();
    assert_eq!(
        (source, tier),
        (Source::Compiled, Tier::Optimized),
        "no cache, no baseline tier"
    );
    assert_eq!(first.group.group, "wardle.example.com");
    let (second, source, _) = load(&runtime, None, "wardle", &hash, &path, budget()).unwrap();
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
    let (first, source, _) = load(&runtime, Some(&cache), "hostile", &hash, &path, budget()).unwrap();
    assert_eq!(source, Source::Compiled);
    drop(first);
    let (again, source, _) = load(&runtime, Some(&cache), "hostile", &hash, &path, budget()).unwrap();
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

#[test]
fn with_a_baseline_tier_a_new_component_is_served_from_winch_until_its_optimized_build_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    // The hostile test plugin with a custom section of its own: a component no other test loads.
    let mut bytes = std::fs::read(testing::wasm_path("hostile")).expect("the test plugin is built");
    bytes.extend_from_slice(&[0, 6, 5]);
    bytes.extend_from_slice(b"tiers");
    let path = dir.path().join("tiered.wasm");
    std::fs::write(&path, &bytes).unwrap();
    let hash = content_hash(&bytes);
    let runtime = testing::runtime();
    let cache = CompileCache::new(&dir.path().join("cache"), runtime.fingerprint, 1 << 30)
        .unwrap()
        .with_baseline_tier(true);

    let (first, source, tier) = load(&runtime, Some(&cache), "tiered", &hash, &path, budget()).unwrap();
    assert_eq!((source, tier), (Source::Compiled, Tier::Baseline));
    assert!(!cache.has(&hash), "the optimized build is not made on the way");
    let trial = testing::trial("ok", "prepare-for-create");
    let from_winch = first
        .prepare_for_create("trials", &trial)
        .expect("Winch's code answers");
    let (second, source, tier) = load(&runtime, Some(&cache), "tiered", &hash, &path, budget()).unwrap();
    assert_eq!(
        (source, tier),
        (Source::Shared, Tier::Baseline),
        "another tenant shares the baseline build"
    );

    // Asked by both tenants, the optimized build is compiled once, and both are told.
    let compiled_before = component_base::metrics::metrics().plugin_components_compiled.get();
    let (tell, told) = std::sync::mpsc::channel();
    for tenant in ["a", "b"] {
        let tell = tell.clone();
        optimize(
            &runtime,
            &cache,
            &hash,
            &path,
            Box::new(move || tell.send(tenant).unwrap()),
        );
    }
    let mut heard: Vec<&str> = (0..2)
        .map(|_| {
            told.recv_timeout(Duration::from_secs(120))
                .expect("told when it is done")
        })
        .collect();
    heard.sort();
    assert_eq!(heard, ["a", "b"]);
    assert!(cache.has(&hash));
    assert!(component_base::metrics::metrics().plugin_components_compiled.get() > compiled_before);

    let (optimized, source, tier) = load(&runtime, Some(&cache), "tiered", &hash, &path, budget()).unwrap();
    assert_eq!((source, tier), (Source::Cached, Tier::Optimized));
    assert_eq!(optimized.prepare_for_create("trials", &trial).unwrap(), from_winch);
    drop((first, second));

    // A failing optimized build tells its waiters too (the component keeps serving from the baseline tier).
    let (tell, told) = std::sync::mpsc::channel();
    optimize(
        &runtime,
        &cache,
        "0000",
        &dir.path().join("missing.wasm"),
        Box::new(move || tell.send(()).unwrap()),
    );
    told.recv_timeout(Duration::from_secs(60)).expect("told of the failure");
    assert!(!cache.has("0000"));
}
