//! Watch fan-out, simply: many watchers of one namespace's flunders, each on its own HTTPS connection, receive a
//! burst of creates; how many event deliveries per second reach them, and how long after its create was sent each
//! event arrives.

use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::Value;

use super::load::{self, quantile_ms};
use super::servers::Side;

/// What the watchers saw.
pub struct FanOut {
    /// Event deliveries (events × watchers) per second, from the first create sent to the last event received.
    pub deliveries_per_sec: f64,
    /// Median latency from a create being sent to its event reaching a watcher, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile of the same, in milliseconds.
    pub p99_ms: f64,
}

/// Opens `watchers` watches of the flunders of `namespace` (from the resourceVersion of a list of it), then
/// creates `events` flunders `w<i>` there at `concurrency`, and waits until every watcher has received every
/// ADDED event (or 120 s passed: an error).
pub fn fan_out(
    side: &Side,
    namespace: &str,
    watchers: usize,
    events: usize,
    concurrency: usize,
) -> anyhow::Result<FanOut> {
    let collection = load::collection(side, namespace);
    let list: Value = side.client().get(&collection).send()?.json()?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .context("a list without a resourceVersion")?
        .to_owned();
    let sent: Arc<Vec<OnceLock<Instant>>> = Arc::new((0..events).map(|_| OnceLock::new()).collect());
    let (established, opened) = mpsc::channel::<()>();
    let (arrivals, received) = mpsc::channel::<anyhow::Result<Vec<(usize, Instant)>>>();
    for _ in 0..watchers {
        let client = side
            .client_builder()
            .timeout(Duration::from_secs(120))
            .build()
            .context("an HTTPS client")?;
        let url = format!("{collection}?watch=1&resourceVersion={rv}");
        let (established, arrivals) = (established.clone(), arrivals.clone());
        std::thread::spawn(move || {
            let response = client.get(&url).send();
            let _ = established.send(());
            let _ = arrivals.send(watch(response, events));
        });
    }
    drop((arrivals, established));
    // Both servers send a watch's headers when it is set up; a watch that is slower still misses nothing, as it
    // starts at the list's resourceVersion.
    let deadline = Instant::now() + Duration::from_secs(30);
    for _ in 0..watchers {
        if opened
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .is_err()
        {
            break;
        }
    }
    let stamps = sent.clone();
    let create = load::create(collection, "w");
    load::run(side, concurrency, events, move |c, i| {
        let _ = stamps[i].set(Instant::now());
        create(c, i)
    })?;
    let mut latencies = Vec::with_capacity(watchers * events);
    let mut last = Instant::now();
    for _ in 0..watchers {
        let seen = received.recv().context("a watcher thread ended")??;
        for (i, at) in seen {
            let from = *sent[i].get().context("an event of a flunder not created")?;
            latencies.push(at.saturating_duration_since(from));
            last = last.max(at);
        }
    }
    let first = sent
        .iter()
        .filter_map(|s| s.get())
        .min()
        .copied()
        .context("nothing was created")?;
    latencies.sort();
    Ok(FanOut {
        deliveries_per_sec: (watchers * events) as f64 / last.saturating_duration_since(first).as_secs_f64(),
        p50_ms: quantile_ms(&latencies, 0.5),
        p99_ms: quantile_ms(&latencies, 0.99),
    })
}

/// Reads a watch until `events` ADDED events of flunders `w<i>` arrived; returns (i, arrival) of each.
fn watch(
    response: reqwest::Result<reqwest::blocking::Response>,
    events: usize,
) -> anyhow::Result<Vec<(usize, Instant)>> {
    let response = response?;
    if !response.status().is_success() {
        bail!("the watch answered {}", response.status());
    }
    let mut seen = Vec::with_capacity(events);
    for event in serde_json::Deserializer::from_reader(response).into_iter::<Value>() {
        let event = event.context("reading the watch")?;
        let at = Instant::now();
        if event["type"] != "ADDED" {
            continue;
        }
        let index = event["object"]["metadata"]["name"]
            .as_str()
            .and_then(|n| n.strip_prefix('w'))
            .and_then(|n| n.parse::<usize>().ok());
        if let Some(i) = index {
            seen.push((i, at));
            if seen.len() == events {
                return Ok(seen);
            }
        }
    }
    bail!("the watch ended after {} of {events} events", seen.len())
}
