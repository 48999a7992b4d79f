//! Reliability R3: many concurrent updaters with resourceVersion preconditions on a few objects lose no update.
//!
//! 50 updaters run read-modify-write cycles on 10 flunders at once. Each cycle reads an object, increments the
//! updater's own counter annotation on it, and writes it back conditioned on the resourceVersion it read: half of
//! the updaters with a PUT, the other half with a JSON merge patch carrying `metadata.resourceVersion`. A 409
//! Conflict means another updater won the race: the cycle re-reads and tries again. Every write the server
//! acknowledges (200) is recorded with the resourceVersion it answered.
//!
//! At the end, each object's counters equal the writes acknowledged for it (no lost update, no update applied
//! twice), and a watch opened before the first update has seen each acknowledged write exactly once, at the
//! resourceVersion the write answered, in increasing order, each event differing from the object's previous state
//! by exactly the one counter its writer incremented. Runs on the embedded store, and on etcd with
//! `E2E_STORAGE=etcd`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use e2e::{str_at, Http, Server, SplitMix, FLUNDERS_V1ALPHA1};
use serde_json::{json, Value};

/// How many objects the updaters share.
const OBJECTS: usize = 10;
/// How many updaters run at once.
const UPDATERS: usize = 50;
/// How many writes each updater gets acknowledged.
const UPDATES_PER_UPDATER: usize = 20;
/// A bound on the whole contention phase, so a livelock fails the test instead of hanging CI.
const CONTENTION_DEADLINE: Duration = Duration::from_secs(45);
/// How long to wait for the watch to deliver the acknowledged writes.
const EVENT_TIMEOUT: Duration = Duration::from_secs(30);

/// The annotation holding updater `updater`'s counter.
fn counter_key(updater: usize) -> String {
    format!("r3.example.com/u{updater:02}")
}

/// The name of object `index`.
fn object_name(index: usize) -> String {
    format!("r3-{index}")
}

/// A write the server acknowledged: who made it, on which object, the counter value it set, and the
/// resourceVersion it answered.
#[derive(Debug, Clone)]
struct Ack {
    updater: usize,
    object: String,
    counter: u64,
    resource_version: u64,
}

/// What one updater did.
#[derive(Debug, Default)]
struct Outcome {
    acks: Vec<Ack>,
    conflicts: usize,
}

/// Parses a resourceVersion, panicking with the object when it is not a decimal number.
fn resource_version(object: &Value) -> u64 {
    let rv = str_at(object, "/metadata/resourceVersion");
    rv.parse()
        .unwrap_or_else(|_| panic!("resourceVersion {rv:?} is not a number in {object}"))
}

/// The counters (annotations under `r3.example.com/`) of an object.
fn counters(object: &Value) -> BTreeMap<String, u64> {
    object["metadata"]["annotations"]
        .as_object()
        .map(|annotations| {
            annotations
                .iter()
                .filter(|(key, _)| key.starts_with("r3.example.com/"))
                .map(|(key, value)| {
                    let count = value
                        .as_str()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| panic!("counter {key} is not a number in {object}"));
                    (key.clone(), count)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Runs one updater until it has `UPDATES_PER_UPDATER` acknowledged writes. Even updaters write with PUT, odd ones
/// with a JSON merge patch whose `metadata.resourceVersion` is the precondition.
fn run_updater(http: &Http, updater: usize, deadline: Instant) -> Outcome {
    // Each updater picks its objects from its own seed.
    let mut random = SplitMix(0x5EED_0000 + updater as u64);
    let mut outcome = Outcome::default();
    let key = counter_key(updater);
    while outcome.acks.len() < UPDATES_PER_UPDATER {
        let object = object_name(random.below(OBJECTS));
        let path = format!("{FLUNDERS_V1ALPHA1}/{object}");
        loop {
            assert!(
                Instant::now() < deadline,
                "updater {updater} still retrying after {CONTENTION_DEADLINE:?} (livelock?)"
            );
            let current = http.get(&path);
            let mut current = current.expect(200).clone();
            let read_rv = resource_version(&current);
            let counter = counters(&current).get(&key).copied().unwrap_or(0) + 1;
            let reply = if updater.is_multiple_of(2) {
                current["metadata"]["annotations"][&key] = json!(counter.to_string());
                http.put_json(&path, &current)
            } else {
                let patch = json!({"metadata": {
                    "resourceVersion": read_rv.to_string(),
                    "annotations": {&key: counter.to_string()},
                }});
                http.patch(&path, "application/merge-patch+json", &patch)
            };
            match reply.status {
                200 => {
                    let written = resource_version(&reply.json);
                    assert!(
                        written > read_rv,
                        "a write based on {read_rv} answered the resourceVersion {written}"
                    );
                    assert_eq!(
                        counters(&reply.json).get(&key),
                        Some(&counter),
                        "the acknowledged object lacks the write: {}",
                        reply.text
                    );
                    outcome.acks.push(Ack {
                        updater,
                        object,
                        counter,
                        resource_version: written,
                    });
                    break;
                }
                409 => {
                    reply.assert_status(409, "Conflict");
                    outcome.conflicts += 1;
                }
                other => panic!("updater {updater}: write of {path} answered {other}: {}", reply.text),
            }
        }
    }
    outcome
}

#[test]
fn concurrent_updaters_with_resource_version_preconditions_lose_no_update() {
    let server = Server::start(&["wardle"]);
    let http = server.http().clone();
    for index in 0..OBJECTS {
        let flunder = json!({
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": object_name(index), "namespace": "default"},
            "spec": {"reference": "r3"},
        });
        http.post_json(FLUNDERS_V1ALPHA1, &flunder).expect(201);
    }
    let list = http.get(FLUNDERS_V1ALPHA1);
    let list = list.expect(200);
    let start_rv = str_at(list, "/metadata/resourceVersion").to_owned();
    let initial: HashMap<String, Value> = list["items"]
        .as_array()
        .expect("a list")
        .iter()
        .map(|item| (str_at(item, "/metadata/name").to_owned(), item.clone()))
        .collect();
    assert_eq!(initial.len(), OBJECTS, "{list}");
    let mut watch = http.watch(&format!("{FLUNDERS_V1ALPHA1}?watch=true&resourceVersion={start_rv}"));

    let started = Instant::now();
    let deadline = started + CONTENTION_DEADLINE;
    let barrier = Arc::new(Barrier::new(UPDATERS));
    let updaters: Vec<_> = (0..UPDATERS)
        .map(|updater| {
            let http = http.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                run_updater(&http, updater, deadline)
            })
        })
        .collect();
    let outcomes: Vec<Outcome> = updaters
        .into_iter()
        .map(|u| u.join().unwrap_or_else(|_| panic!("an updater failed (see above)")))
        .collect();
    let acks: Vec<Ack> = outcomes.iter().flat_map(|o| o.acks.iter().cloned()).collect();
    let conflicts: usize = outcomes.iter().map(|o| o.conflicts).sum();
    eprintln!(
        "R3: {} acknowledged writes, {conflicts} conflicts, in {:?}",
        acks.len(),
        started.elapsed()
    );
    assert_eq!(acks.len(), UPDATERS * UPDATES_PER_UPDATER);
    assert!(conflicts > 0, "no conflict at all: the updaters did not contend");

    // No lost update and no double write: each object's counters are its acknowledged writes, counted.
    let mut expected: HashMap<String, BTreeMap<String, u64>> = HashMap::new();
    for ack in &acks {
        *expected
            .entry(ack.object.clone())
            .or_default()
            .entry(counter_key(ack.updater))
            .or_default() += 1;
    }
    for index in 0..OBJECTS {
        let name = object_name(index);
        let object = http.get(&format!("{FLUNDERS_V1ALPHA1}/{name}"));
        let object = object.expect(200);
        assert_eq!(
            counters(object),
            expected.get(&name).cloned().unwrap_or_default(),
            "the counters of {name} are not its acknowledged writes: {object}"
        );
    }

    // The history: one MODIFIED event per acknowledged write, at its resourceVersion, in increasing order, each
    // changing exactly its writer's counter to the value it wrote.
    let events = watch.collect_until(EVENT_TIMEOUT, |events| events.len() >= acks.len());
    assert_eq!(
        events.len(),
        acks.len(),
        "the watch delivered {} events for {} acknowledged writes (ended: {:?})",
        events.len(),
        acks.len(),
        watch.end_reason()
    );
    let by_rv: HashMap<u64, &Ack> = acks.iter().map(|ack| (ack.resource_version, ack)).collect();
    assert_eq!(
        by_rv.len(),
        acks.len(),
        "two acknowledged writes share a resourceVersion"
    );
    let mut state: HashMap<String, BTreeMap<String, u64>> = initial
        .iter()
        .map(|(name, object)| (name.clone(), counters(object)))
        .collect();
    let mut seen = HashSet::new();
    let mut previous_rv = start_rv.parse::<u64>().expect("a numeric list resourceVersion");
    for event in &events {
        assert_eq!(event["type"], "MODIFIED", "{event}");
        let object = &event["object"];
        let rv = resource_version(object);
        assert!(rv > previous_rv, "event at {rv} after {previous_rv}: {event}");
        previous_rv = rv;
        assert!(seen.insert(rv), "resourceVersion {rv} seen twice");
        let ack = by_rv
            .get(&rv)
            .unwrap_or_else(|| panic!("an event at {rv} that no acknowledged write answered: {event}"));
        let name = str_at(object, "/metadata/name");
        assert_eq!(name, ack.object, "the event at {rv} is not on the acknowledged object");
        let before = state.get_mut(name).expect("a known object");
        let previous = before.insert(counter_key(ack.updater), ack.counter).unwrap_or(0);
        assert_eq!(
            previous + 1,
            ack.counter,
            "the write at {rv} was based on a stale read ({ack:?})"
        );
        assert_eq!(
            &counters(object),
            before,
            "the event at {rv} is not the previous state plus the write of updater {} ({:?})",
            ack.updater,
            ack
        );
    }
}
