use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::INLINE_CALL_NANOS;
use crate::budget::Budget;
use crate::testing::{self, trial};
use apimachinery::plugin::PluginError;

const PREPARE: &str = "create-strategy.prepare-for-create";

#[test]
fn a_call_past_its_deadline_is_stopped_and_its_instance_dropped() {
    let hostile = testing::load("hostile");
    hostile
        .prepare_for_create("trials", &trial("ok", PREPARE_STAGE))
        .unwrap();
    assert_eq!(hostile.idle_instances(), 1);
    let e = hostile
        .prepare_for_create("trials", &trial("loop", PREPARE_STAGE))
        .unwrap_err();
    match e {
        PluginError::Timeout { plugin, call } => assert_eq!((plugin.as_str(), call), ("hostile", PREPARE)),
        other => panic!("not a timeout: {other:?}"),
    }
    assert_eq!(hostile.idle_instances(), 0, "nothing survives a stopped call");
    hostile
        .prepare_for_create("trials", &trial("ok", PREPARE_STAGE))
        .expect("a new instance serves the next call");
}

const PREPARE_STAGE: &str = "prepare-for-create";

#[test]
fn a_trap_fails_the_call_naming_the_plugin_and_drops_the_instance() {
    let hostile = testing::load("hostile");
    hostile
        .prepare_for_create("trials", &trial("ok", PREPARE_STAGE))
        .unwrap();
    let e = hostile
        .prepare_for_create("trials", &trial("trap", PREPARE_STAGE))
        .unwrap_err();
    match e {
        PluginError::Failed { plugin, call, message } => {
            assert_eq!((plugin.as_str(), call), ("hostile", PREPARE));
            assert!(!message.contains('\n'), "one line for the client: {message}");
        }
        other => panic!("not a failure: {other:?}"),
    }
    assert_eq!(hostile.idle_instances(), 0);
}

#[test]
fn a_runaway_allocation_is_stopped_by_the_memory_limit() {
    let hostile = testing::load_in("hostile", Arc::new(Budget::new(16 << 20, Duration::from_secs(10)))).unwrap();
    let e = hostile
        .prepare_for_create("trials", &trial("bomb", PREPARE_STAGE))
        .unwrap_err();
    assert!(matches!(e, PluginError::Failed { .. }), "{e:?}");
    assert_eq!(hostile.idle_instances(), 0);
}

#[test]
fn a_guest_internal_error_is_a_failure_with_its_message() {
    let hostile = testing::load("hostile");
    let e = hostile
        .prepare_for_create("trials", &trial("internal", PREPARE_STAGE))
        .unwrap_err();
    match e {
        PluginError::Failed { plugin, call, message } => {
            assert_eq!((plugin.as_str(), call), ("hostile", PREPARE));
            assert_eq!(message, "hostile: this trial asked for an internal error");
        }
        other => panic!("not a failure: {other:?}"),
    }
    assert_eq!(
        hostile.idle_instances(),
        1,
        "a returned error is no trap: the instance is kept"
    );
}

#[test]
fn a_spent_cpu_budget_refuses_the_call_without_making_it() {
    let budget = Arc::new(Budget::new(64 << 20, Duration::from_millis(100)));
    budget.set("t1", 64 << 20, Duration::from_millis(100), Some(0.01));
    let hostile = testing::load_in("hostile", budget.clone()).unwrap();
    // Spins up to its deadline: far more than the 10 ms the budget holds.
    let _ = hostile.prepare_for_create("trials", &trial("loop", PREPARE_STAGE));
    let used = budget.cpu_used_nanos.load(Ordering::Relaxed);
    assert!(used >= 10_000_000, "the loop was charged {used} ns");
    let e = hostile
        .prepare_for_create("trials", &trial("ok", PREPARE_STAGE))
        .unwrap_err();
    match e {
        PluginError::Throttled {
            plugin,
            message,
            retry_after,
        } => {
            assert_eq!(plugin, "hostile");
            assert!(message.starts_with("tenant t1 has used its plugin CPU"), "{message}");
            assert!(retry_after >= 1);
        }
        other => panic!("not throttled: {other:?}"),
    }
    assert_eq!(budget.rejected.load(Ordering::Relaxed), 1);
    assert_eq!(
        budget.cpu_used_nanos.load(Ordering::Relaxed),
        used,
        "the refused call ran nothing"
    );
}

#[test]
fn short_calls_bring_the_average_under_the_inline_bound() {
    use crate::component::PluginComponent;
    let budget = || Arc::new(Budget::new(64 << 20, Duration::from_millis(100)));
    let runtime = testing::runtime();
    let _loaded = PluginComponent::from_component_shared(
        runtime.clone(),
        "wardle",
        "hash-of-wardle-in-the-inline-test",
        testing::compiled("wardle"),
        budget(),
        None,
    )
    .unwrap();
    let shared = runtime.shared_component("hash-of-wardle-in-the-inline-test").unwrap();
    // A plugin of an already loaded component has made no call yet.
    let wardle = PluginComponent::from_shared_component(testing::runtime(), "wardle", shared, budget());
    assert!(
        wardle.average_call_nanos.load(Ordering::Relaxed) >= INLINE_CALL_NANOS,
        "a new plugin's calls are taken as slow"
    );
    let obj = serde_json::json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": "f"}, "spec": {}});
    for _ in 0..50 {
        wardle.validate("flunders", &obj).unwrap();
    }
    let average = wardle.average_call_nanos.load(Ordering::Relaxed);
    assert!(average < INLINE_CALL_NANOS, "average {average} ns");
}
