use super::*;
use crate::testing;
use std::sync::atomic::Ordering;

fn budget() -> Arc<Budget> {
    Arc::new(Budget::new(64 << 20, std::time::Duration::from_millis(100)))
}

#[test]
fn a_component_is_linked_and_its_exports_become_its_verbs() {
    let wardle = testing::load("wardle");
    assert_eq!(wardle.group.group, "wardle.example.com");
    let plurals: Vec<&str> = wardle.group.resources.iter().map(|r| r.plural.as_str()).collect();
    assert_eq!(plurals, ["flunders", "fischers"]);
    assert!(wardle.exports.create && wardle.exports.update && wardle.exports.lister && wardle.exports.converter);
    let hostile = testing::load("hostile");
    assert!(hostile.exports.create && !hostile.exports.update && !hostile.exports.lister);
    assert_eq!(hostile.group.resources[0].verbs, ["create", "get"]);
}

#[test]
fn a_component_without_the_scheme_export_is_refused() {
    let e = testing::load_in("noscheme", budget()).unwrap_err();
    assert!(
        format!("{e:#}").contains("does not export wasm-apiserver:plugin/scheme@0.1.1"),
        "{e:#}"
    );
}

#[test]
fn an_export_whose_types_do_not_match_the_contract_is_refused_by_name() {
    let e = testing::load_in("mistyped", budget()).unwrap_err();
    let message = format!("{e:#}");
    assert!(
        message.contains("export wasm-apiserver:plugin/lister@0.1.1 does not match the contract"),
        "{message}"
    );
}

#[test]
fn loading_leaves_no_instance_and_a_shared_component_makes_none() {
    let runtime = testing::runtime();
    let first = PluginComponent::from_component_shared(
        runtime.clone(),
        "wardle",
        "hash-of-wardle-in-a-unit-test",
        testing::compiled("wardle"),
        budget(),
        None,
    )
    .unwrap();
    assert_eq!(first.idle_instances(), 0, "instances are made on first use");
    let shared = runtime
        .shared_component("hash-of-wardle-in-a-unit-test")
        .expect("remembered while the first plugin lives");
    let second = PluginComponent::from_shared_component(testing::runtime(), "wardle-again", shared, budget());
    assert_eq!(second.idle_instances(), 0);
    assert_eq!(second.group.group, first.group.group);
    assert_eq!(second.exports, first.exports);
    assert_eq!(second.selectable_fields, first.selectable_fields);
    second.prewarm().unwrap();
    assert_eq!(
        (first.idle_instances(), second.idle_instances()),
        (0, 1),
        "each plugin has its own pool"
    );
}

#[test]
fn an_idle_component_is_unloaded_and_loaded_again_on_its_next_call() {
    let compiled = testing::compiled("wardle");
    let reloads = Arc::new(AtomicU64::new(0));
    let counted = reloads.clone();
    let reload: Reload = Box::new(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        Ok(compiled.clone())
    });
    let c = PluginComponent::from_component_in(
        testing::runtime(),
        "wardle",
        testing::compiled("wardle"),
        budget(),
        Some(reload),
    )
    .unwrap();
    c.prewarm().unwrap();
    c.evict_idle(std::time::Duration::ZERO);
    assert_eq!(c.idle_instances(), 0, "idle instances go first");
    assert_eq!(reloads.load(Ordering::Relaxed), 0);
    c.prewarm().unwrap();
    assert_eq!(reloads.load(Ordering::Relaxed), 1, "loaded again to make an instance");
}

#[test]
fn a_component_built_for_contract_0_1_0_is_linked_and_called() {
    use apimachinery::plugin::{AdmissionRequest, Operation, PluginError, Rejection, UserInfo};
    // plugins/elder imports host@0.1.0 and exports @0.1.0 interfaces: the host matches them as semver-compatible.
    let elder = testing::load("elder");
    assert_eq!(elder.group.resources[0].verbs, ["create", "get", "list", "watch"]);
    assert!(elder.exports.validating && !elder.exports.mutating);
    let relic = serde_json::json!({"metadata": {"name": "r"}, "spec": {"keeper": "alice"}});
    let request = |user| AdmissionRequest {
        operation: Operation::Create,
        group: "elder.example.com",
        version: "v1",
        resource: "relics",
        subresource: "",
        namespace: Some("default"),
        name: "r",
        object: Some(&relic),
        old: None,
        dry_run: false,
        user,
    };
    // The plugin logs each decision through its host@0.1.0 import: an import left unlinked would trap.
    let alice = UserInfo::new("alice", ["system:authenticated"]);
    assert_eq!(
        elder.validate_admission(&request(&alice)).unwrap(),
        Vec::<String>::new()
    );
    match elder
        .validate_admission(&request(&UserInfo::new("bob", ["devs"])))
        .unwrap_err()
    {
        PluginError::Rejected(Rejection::Forbidden(reason)) => assert_eq!(
            reason,
            r#"spec.keeper must be the requesting user: "alice" is not "bob" (in groups ["devs"])"#
        ),
        other => panic!("not forbidden: {other:?}"),
    }
}
