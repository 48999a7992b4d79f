use std::sync::Arc;
use std::time::Duration;

use crate::budget::Budget;
use crate::runtime::{IdlePool, PoolBudget};
use crate::testing;

#[test]
fn a_completed_call_returns_its_instance_and_the_next_call_reuses_it() {
    let wardle = testing::load("wardle");
    let obj = serde_json::json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder", "metadata": {"name": "f"}, "spec": {}});
    wardle.validate("flunders", &obj).unwrap();
    assert_eq!(wardle.idle_instances(), 1);
    wardle.validate("flunders", &obj).unwrap();
    assert_eq!(wardle.idle_instances(), 1, "the same instance served both calls");
}

#[test]
fn the_least_recently_used_instance_goes_first_and_old_ones_are_dropped() {
    let wardle = testing::load("wardle");
    for _ in 0..3 {
        wardle.prewarm().unwrap();
    }
    assert_eq!(wardle.idle_instances(), 3);
    let pool = &wardle.pool;
    let oldest = pool.least_recently_used().expect("instances");
    assert!(pool.drop_least_recently_used());
    assert_eq!(wardle.idle_instances(), 2);
    assert!(pool.least_recently_used().expect("instances") >= oldest);
    wardle.evict_idle(Duration::from_secs(3600));
    assert_eq!(wardle.idle_instances(), 2, "recently used instances stay");
    wardle.evict_idle(Duration::ZERO);
    assert_eq!(wardle.idle_instances(), 0);
    assert!(!pool.drop_least_recently_used());
}

#[test]
fn an_instance_past_the_host_wide_bound_is_not_pooled() {
    let wardle = testing::load("wardle");
    // A bound of one byte holds no instance: each is dropped instead of pooled.
    let tiny = PoolBudget::new(1);
    let instance = wardle.instantiate().unwrap();
    wardle.pool.keep(instance, &tiny);
    assert_eq!(wardle.idle_instances(), 0);
    assert_eq!(tiny.used(), 0);
    let roomy = PoolBudget::new(1 << 40);
    let instance = wardle.instantiate().unwrap();
    let bytes = instance.store.data().limits.memory_bytes() as u64;
    wardle.pool.keep(instance, &roomy);
    assert_eq!(wardle.idle_instances(), 1);
    assert_eq!(roomy.used(), bytes, "a pooled instance is charged its memory");
    assert!(wardle.pool.take(wardle.budget.generation()).is_some());
    assert_eq!(roomy.used(), 0, "a taken instance is no longer charged");
}

#[test]
fn an_instance_made_under_another_memory_limit_is_not_reused() {
    let budget = Arc::new(Budget::new(64 << 20, Duration::from_millis(100)));
    let wardle = testing::load_in("wardle", budget.clone()).unwrap();
    wardle.prewarm().unwrap();
    let generation = budget.generation();
    budget.set("t", 32 << 20, Duration::from_millis(100), None);
    assert_ne!(budget.generation(), generation);
    assert!(
        wardle.pool.take(budget.generation()).is_none(),
        "made under the old limit"
    );
    assert_eq!(wardle.idle_instances(), 0, "and dropped");
}

#[test]
fn an_instance_whose_memory_grew_is_retired_after_its_call() {
    let hostile = testing::load("hostile");
    hostile
        .prepare_for_create("trials", &testing::trial("ok", "prepare-for-create"))
        .unwrap();
    assert_eq!(hostile.idle_instances(), 1);
    hostile
        .prepare_for_create("trials", &testing::trial("leak", "prepare-for-create"))
        .unwrap();
    assert_eq!(hostile.idle_instances(), 0, "the grown instance is not pooled");
}
