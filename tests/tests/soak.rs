//! The mixed soak: many clients create, read, list, patch and delete objects of a Rust, a Python and
//! a JavaScript plugin, in two versions, with watches coming and going and some malformed requests, for
//! `SOAK_SECONDS` (45 by default in CI; the 10-minute figure in BENCHMARKS.md runs the release build with 600). Every
//! answer must be the one the client's own state predicts, every watch window must see events, and the server's
//! resident memory must stay flat once warm: the bounded caches (the watch caches' event history, 1,000 events here,
//! the store's page cache) fill in the first part of the run, which is left out of the comparison.
//!
//! ```sh
//! WASM_APISERVER_BIN=target/release/wasm-apiserver SOAK_SECONDS=600 cargo test -p e2e --test soak -- --nocapture
//! ```

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use e2e::{Server, SplitMix};
use serde_json::{json, Value};

const NAMESPACE: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default";
const FLUNDERS_V1ALPHA1: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";
const FLUNDERS_V1BETA1: &str = "/apis/wardle.example.com/v1beta1/namespaces/default/flunders";
const BOOKS: &str = "/apis/books.example.com/v1/namespaces/default/books";
const TASKS: &str = "/apis/tasks.example.com/v1/namespaces/default/tasks";
/// Client threads making requests.
const WORKERS: usize = 6;
/// Objects each worker owns (created and deleted over and over), per resource.
const OWNED: usize = 12;
/// The share of the run, from its start, left out of the memory comparison.
const WARM_UP: f64 = 0.4;

/// What the soak counts: answers by operation, and the unexpected ones.
#[derive(Default)]
struct Tally {
    by_op: Mutex<BTreeMap<&'static str, u64>>,
    unexpected: Mutex<Vec<String>>,
}

impl Tally {
    fn check(&self, op: &'static str, status: u16, expected: u16, detail: &str) {
        *self.by_op.lock().unwrap().entry(op).or_default() += 1;
        if status != expected {
            let mut unexpected = self.unexpected.lock().unwrap();
            if unexpected.len() < 20 {
                unexpected.push(format!("{op}: {status}, expected {expected}: {detail}"));
            }
        }
    }
}

/// A resource a worker exercises: its collection, and a body for a name.
struct Kind {
    collection: &'static str,
    body: fn(&str, u64) -> Value,
}

fn flunder(name: &str, n: u64) -> Value {
    json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": name, "labels": {"soak": "yes"}}, "spec": {"reference": format!("r{n}")}})
}

fn book(name: &str, n: u64) -> Value {
    json!({"apiVersion": "books.example.com/v1", "kind": "Book",
        "metadata": {"name": name}, "spec": {"title": format!("Volume {n}"), "pages": 10 + n % 500}})
}

fn task(name: &str, n: u64) -> Value {
    json!({"apiVersion": "tasks.example.com/v1", "kind": "Task",
        "metadata": {"name": name}, "spec": {"title": format!("Task {n}")}})
}

const KINDS: [Kind; 3] = [
    Kind {
        collection: FLUNDERS_V1ALPHA1,
        body: flunder,
    },
    Kind {
        collection: BOOKS,
        body: book,
    },
    Kind {
        collection: TASKS,
        body: task,
    },
];

/// One worker: random operations on its own objects, each answer checked against what it knows of them.
fn work(server: &Server, worker: usize, stop: &AtomicBool, tally: &Tally) {
    let http = server.http();
    let mut rng = SplitMix(0x50a4 + worker as u64);
    // Which of its objects exist, per kind.
    let mut exists = [[false; OWNED]; 3];
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        n += 1;
        // Flunders most of the time: the guests of the other two kinds are slower.
        let k = match rng.below(10) {
            0 => 1,
            1 => 2,
            _ => 0,
        };
        let kind = &KINDS[k];
        let i = rng.below(OWNED);
        let name = format!("w{worker}-{i}");
        let item = format!("{}/{name}", kind.collection);
        if !exists[k][i] {
            let r = http.post_json(kind.collection, &(kind.body)(&name, n));
            tally.check("create", r.status, 201, &r.text);
            exists[k][i] = r.status == 201;
            continue;
        }
        match rng.below(20) {
            0..=5 => {
                let r = http.get(&item);
                tally.check("get", r.status, 200, &r.text);
            }
            6 | 7 if k == 0 => {
                // The converted version, from the conversion memo or the plugin.
                let r = http.get(&format!("{FLUNDERS_V1BETA1}/{name}"));
                tally.check("get (converted)", r.status, 200, &r.text);
            }
            8 | 9 => {
                let r = http.get(&format!("{}?limit=20", kind.collection));
                tally.check("list", r.status, 200, &r.text);
            }
            10 if k == 0 => {
                let r = http.get(&format!("{FLUNDERS_V1BETA1}?labelSelector=soak%3Dyes"));
                tally.check("list (converted, selector)", r.status, 200, &r.text);
            }
            11..=15 => {
                let patch = json!({"metadata": {"annotations": {"soak.example.com/n": n.to_string()}}});
                let r = http.patch(&item, "application/merge-patch+json", &patch);
                tally.check("patch", r.status, 200, &r.text);
            }
            16 => {
                let r = http.send(
                    reqwest::Method::POST,
                    kind.collection,
                    Some("application/json"),
                    b"{\"metadata\": {".to_vec(),
                );
                tally.check("malformed create", r.status, 400, &r.text);
            }
            _ => {
                let r = http.delete(&item);
                tally.check("delete", r.status, 200, &r.text);
                exists[k][i] = r.status != 200;
            }
        }
    }
}

/// Watches come and go: each window of a few seconds must see events while the workers write.
fn watch(server: &Server, stop: &AtomicBool, events: &AtomicU64, empty_windows: &AtomicU64) {
    let http = server.http();
    while !stop.load(Ordering::Relaxed) {
        let mut stream = http.watch(&format!("{NAMESPACE}/flunders?watch=true&timeoutSeconds=3"));
        let mut seen = 0;
        while stream.next(Duration::from_secs(10)).is_some() {
            seen += 1;
        }
        events.fetch_add(seen, Ordering::Relaxed);
        if seen == 0 && !stop.load(Ordering::Relaxed) {
            empty_windows.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The linear memory of the server's live plugin instances, in MiB (`wasm_apiserver_plugin_memory_bytes`).
fn guest_memory_mib(server: &Server) -> f64 {
    per_plugin(server).values().map(|(_, mib)| mib).sum()
}

/// Per plugin: its live instances and their linear memory in MiB (`wasm_apiserver_plugin_instances`,
/// `wasm_apiserver_plugin_memory_bytes`), to see which guest grows and whether by more instances or larger ones.
fn per_plugin(server: &Server) -> std::collections::BTreeMap<String, (f64, f64)> {
    let text = server.http().get("/metrics").text;
    let mut plugins = std::collections::BTreeMap::<String, (f64, f64)>::new();
    for line in text.lines() {
        let (metric, instances) = if let Some(rest) = line.strip_prefix("wasm_apiserver_plugin_instances{") {
            (rest, true)
        } else if let Some(rest) = line.strip_prefix("wasm_apiserver_plugin_memory_bytes{") {
            (rest, false)
        } else {
            continue;
        };
        let Some(plugin) = metric.split("plugin=\"").nth(1).and_then(|p| p.split('"').next()) else {
            continue;
        };
        let Some(value) = metric.rsplit(' ').next().and_then(|v| v.parse::<f64>().ok()) else {
            continue;
        };
        let entry = plugins.entry(plugin.to_owned()).or_default();
        if instances {
            entry.0 += value;
        } else {
            entry.1 += value / f64::from(1 << 20);
        }
    }
    plugins
}

fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// The least-squares slope of (seconds, MiB) samples, in MiB per minute.
fn slope_per_minute(samples: &[(f64, f64)]) -> f64 {
    let n = samples.len() as f64;
    let (mx, my) = samples
        .iter()
        .fold((0.0, 0.0), |(x, y), (sx, sy)| (x + sx / n, y + sy / n));
    let (cov, var) = samples.iter().fold((0.0, 0.0), |(c, v), (x, y)| {
        (c + (x - mx) * (y - my), v + (x - mx) * (x - mx))
    });
    if var == 0.0 {
        0.0
    } else {
        cov / var * 60.0
    }
}

#[test]
fn a_mixed_soak_answers_as_expected_and_keeps_its_memory_flat() {
    let seconds: u64 = std::env::var("SOAK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(45);
    // A shorter event history than the default 10,000 per resource: the books' and tasks' histories would otherwise
    // still be filling (~10 MB each) minutes into the run, which would hide a leak's slope or look like one.
    let server = Server::start_with_args(&["wardle", "books", "tasks"], &["--default-watch-cache-size", "1000"]);
    let pid = server.pid().expect("the server runs");
    let stop = AtomicBool::new(false);
    let tally = Tally::default();
    let (events, empty_windows) = (AtomicU64::new(0), AtomicU64::new(0));
    let samples: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
    let mut plugins_warm = std::collections::BTreeMap::new();
    // The guests' linear memory over the run (its pages are part of the RSS).
    let guest: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
    let started = Instant::now();
    std::thread::scope(|scope| {
        for worker in 0..WORKERS {
            let (server, stop, tally) = (&server, &stop, &tally);
            scope.spawn(move || work(server, worker, stop, tally));
        }
        for _ in 0..2 {
            let (server, stop, events, empty) = (&server, &stop, &events, &empty_windows);
            scope.spawn(move || watch(server, stop, events, empty));
        }
        let deadline = started + Duration::from_secs(seconds);
        while Instant::now() < deadline {
            let t = started.elapsed().as_secs_f64();
            if t >= seconds as f64 * WARM_UP && plugins_warm.is_empty() {
                plugins_warm = per_plugin(&server);
            }
            samples.lock().unwrap().push((t, rss_mib(pid)));
            guest.lock().unwrap().push((t, guest_memory_mib(&server)));
            std::thread::sleep(Duration::from_secs(1).min(deadline.saturating_duration_since(Instant::now())));
        }
        stop.store(true, Ordering::Relaxed);
    });
    let elapsed = started.elapsed().as_secs_f64();

    let samples = samples.lock().unwrap().clone();
    let warm: Vec<(f64, f64)> = samples
        .iter()
        .copied()
        .filter(|(t, _)| *t >= seconds as f64 * WARM_UP)
        .collect();
    let at_warm = warm.first().map_or(0.0, |s| s.1);
    let end = samples.last().map_or(0.0, |s| s.1);
    let peak = samples.iter().map(|s| s.1).fold(0.0, f64::max);
    let slope = slope_per_minute(&warm);
    let guest = guest.lock().unwrap().clone();
    let guest_warm: Vec<(f64, f64)> = guest
        .iter()
        .copied()
        .filter(|(t, _)| *t >= seconds as f64 * WARM_UP)
        .collect();
    let guest_at_warm = guest_warm.first().map_or(0.0, |s| s.1);
    let guest_end = guest.last().map_or(0.0, |s| s.1);
    let by_op = tally.by_op.lock().unwrap().clone();
    let requests: u64 = by_op.values().sum();
    println!("| soak ({seconds} s, {WORKERS} clients, 2 watchers) | value |");
    println!("|---|---|");
    println!("| requests | {requests} ({:.0}/s) |", requests as f64 / elapsed);
    for (op, count) in &by_op {
        println!("| {op} | {count} |");
    }
    println!("| watch events received | {} |", events.load(Ordering::Relaxed));
    println!(
        "| RSS at start / when warm ({:.0} s) / at the end / peak (MiB) | {:.1} / {at_warm:.1} / {end:.1} / {peak:.1} |",
        seconds as f64 * WARM_UP,
        samples.first().map_or(0.0, |s| s.1)
    );
    println!("| RSS slope once warm (MiB per minute) | {slope:.2} |");
    println!(
        "| plugin instances' linear memory when warm / at the end (MiB); its slope once warm (MiB per minute) | {guest_at_warm:.1} / {guest_end:.1}; {:.2} |",
        slope_per_minute(&guest_warm)
    );

    for (plugin, (instances, mib)) in per_plugin(&server) {
        let (warm_instances, warm_mib) = plugins_warm.get(&plugin).copied().unwrap_or_default();
        println!(
            "| {plugin}: instances, their linear memory (MiB) when warm / at the end | {warm_instances:.0}, {warm_mib:.1} / {instances:.0}, {mib:.1} |"
        );
    }

    let unexpected = tally.unexpected.lock().unwrap();
    assert!(unexpected.is_empty(), "unexpected answers: {unexpected:#?}");
    assert_eq!(
        empty_windows.load(Ordering::Relaxed),
        0,
        "a watch window saw no event while the workers wrote"
    );
    assert!(requests > 0);
    // Flat once warm: a leak of a few KiB per request would show as a steady climb. The bound is loose enough for the
    // debug build's noise in a short run; the 10-minute release figure is in BENCHMARKS.md.
    assert!(
        end <= at_warm * 1.25 + 8.0,
        "RSS grew from {at_warm:.1} MiB when warm to {end:.1} MiB at the end (slope {slope:.2} MiB/min)"
    );
}
