//! Reliability R1: the server is killed with SIGKILL in the middle of concurrent writes, then started
//! again on the same data, for several rounds. After each restart every create the server acknowledged (201) is
//! there, and every stored object is whole: it reads back as the object its writer sent, never a mix or a torn one.
//! Creates that were in flight when the server died may or may not be there; both are correct.
//!
//! Each round aims [`WRITES_PER_ROUND`] creates at the server from [`WRITERS`] clients and kills it a seeded delay
//! after the first create is acknowledged, while most of them are still to come. The time from the restart to `/readyz` is printed per round
//! (the target is 1 s; a benchmark, not an assertion here). Runs on the embedded store, and on etcd with
//! `E2E_STORAGE=etcd`. `R1_ROUNDS` sets the number of rounds (20 by default).

use std::collections::BTreeSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use e2e::{Server, SplitMix, FLUNDERS_V1ALPHA1};
use reqwest::Method;
use serde_json::json;

/// Concurrent writers.
const WRITERS: usize = 16;
/// The creates a round aims at the server (the kill comes long before they are done).
const WRITES_PER_ROUND: usize = 10_000;

/// The flunder writer `writer` creates as its `i`th write of round `round`: its name is also its reference, so an
/// object read back shows whether it is the one written.
fn flunder(round: usize, writer: usize, i: usize) -> (String, serde_json::Value) {
    let name = format!("r{round}-w{writer}-{i}");
    let body = json!({
        "apiVersion": "wardle.example.com/v1alpha1",
        "kind": "Flunder",
        "metadata": {"name": name, "labels": {"round": round.to_string()}},
        "spec": {"reference": name},
    });
    (name, body)
}

#[test]
fn acknowledged_creates_survive_kill_9_and_no_object_is_torn() {
    let rounds: usize = std::env::var("R1_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(20);
    let mut server = Server::start(&["wardle"]);
    // Seeds the kill delays.
    let mut random = SplitMix(0x00C0_FFEE);
    let mut ready_times = Vec::new();
    let mut total_acked = 0;
    for round in 0..rounds {
        let acked = Mutex::new(Vec::new());
        let unexpected = Mutex::new(Vec::new());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let dead = AtomicBool::new(false);
        // Up to 500 ms of writes after the first acknowledged create (counted from it, so that a loaded machine
        // slow to answer the first still tests something): hundreds of acknowledged creates and many in flight.
        let delay = Duration::from_millis(random.next_u64() % 500);
        let pid = server.pid().expect("the server runs");
        let http = server.http();
        std::thread::scope(|scope| {
            for writer in 0..WRITERS {
                let (acked, unexpected, next, dead) = (&acked, &unexpected, &next, &dead);
                scope.spawn(move || {
                    let mut i = 0;
                    while !dead.load(Ordering::Relaxed) && next.fetch_add(1, Ordering::Relaxed) < WRITES_PER_ROUND {
                        let (name, body) = flunder(round, writer, i);
                        i += 1;
                        let sent = http.try_send(
                            Method::POST,
                            FLUNDERS_V1ALPHA1,
                            Some("application/json"),
                            body.to_string().into_bytes(),
                        );
                        match sent {
                            Ok(reply) if reply.status == 201 => acked.lock().unwrap().push(name),
                            Ok(reply) => unexpected
                                .lock()
                                .unwrap()
                                .push(format!("{name}: {} {}", reply.status, reply.text)),
                            // The server died under this request: whether it was stored is unknown, and the
                            // writer stops.
                            Err(_) => break,
                        }
                    }
                });
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            while acked.lock().unwrap().is_empty() && unexpected.lock().unwrap().is_empty() {
                assert!(Instant::now() < deadline, "round {round}: no create answered in 30 s");
                std::thread::sleep(Duration::from_millis(1));
            }
            std::thread::sleep(delay);
            let killed = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            assert!(killed.is_ok_and(|s| s.success()), "kill -9 {pid}");
            dead.store(true, Ordering::Relaxed);
        });
        server.kill();
        let unexpected = unexpected.into_inner().unwrap();
        assert!(
            unexpected.is_empty(),
            "round {round}: unexpected answers: {unexpected:?}"
        );
        let acked = acked.into_inner().unwrap();

        let restarted = Instant::now();
        server.restart();
        let ready = restarted.elapsed();
        ready_times.push(ready);

        let list = server
            .http()
            .get(&format!("{FLUNDERS_V1ALPHA1}?labelSelector=round%3D{round}"));
        let list = list.expect(200);
        let items = list["items"].as_array().expect("items");
        let mut stored = BTreeSet::new();
        for item in items {
            let name = item["metadata"]["name"].as_str().expect("a name");
            assert_eq!(
                item["spec"]["reference"], name,
                "round {round}: a torn or mixed object: {item}"
            );
            assert_eq!(item["metadata"]["labels"]["round"], round.to_string(), "{item}");
            assert!(
                item["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty()),
                "{item}"
            );
            stored.insert(name.to_owned());
        }
        let lost: Vec<_> = acked.iter().filter(|name| !stored.contains(*name)).collect();
        assert!(
            lost.is_empty(),
            "round {round}: {} of {} acknowledged creates are missing after kill -9 and restart: {lost:?}",
            lost.len(),
            acked.len()
        );
        eprintln!(
            "R1 round {round}: killed {delay:?} after the first acknowledged create; {} acknowledged, {} stored; ready {} ms after the restart",
            acked.len(),
            stored.len(),
            ready.as_millis()
        );
        total_acked += acked.len();
    }
    let slowest = ready_times.iter().max().copied().unwrap_or_default();
    eprintln!(
        "R1: {rounds} rounds, {total_acked} acknowledged creates, none lost; slowest restart to ready {slowest:?}"
    );
}
