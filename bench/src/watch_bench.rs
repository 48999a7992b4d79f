//! Watch fan-out: N watchers of one resource (wardle flunders in `default`, each an HTTP/1.1
//! connection of one async client, all from the same list's resourceVersion) while a writer creates R flunders a
//! second for D seconds. Each event's latency is measured from the acknowledgement of its create (an event that
//! arrives before the create's response counts 0) and from the moment the create was sent; every watcher checks that
//! it gets every event exactly once, in resourceVersion order.
//!
//! The slow-watcher rows add S watchers that read their response headers and then nothing: the server must end them
//! (kube-apiserver ends a watcher that cannot keep up) without its memory growing, while the others keep their
//! latency. When the writes are done, the slow watchers read what the server had sent them, and the table says
//! how their streams ended.
//!
//! Usage: `watch-bench [--server PATH] [--plugins DIR] [--rows 100x100,1000x1000,...] [--slow 1000x1000x100,...]
//! [--duration SECONDS] [--writers N] [--baseline PATH]` (defaults: target/release/wasm-apiserver, target/plugins,
//! rows 100x100, 100x1000, 1000x100, 1000x1000, slow row 1000x1000x100, 10 s, 32 writers, the
//! watch-baseline beside this binary). A row is WATCHERSxEVENTS_PER_SECOND (xSLOW_WATCHERS). Each row starts a fresh
//! server; each row without slow watchers is then run against the baseline (`watch-baseline`: a hyper server that
//! hands each event's bytes to every watcher and does nothing else), which shows what the machine allows; `--baseline
//! ""` skips it.

use bench::rss_mib;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use memchr::memmem;
use serde_json::json;

/// The latency histogram's resolution.
const BUCKET_MICROS: u64 = 10;
/// The histogram's range: 10 s; slower events count in the last bucket (the maximum is kept apart).
const BUCKETS: usize = 1_000_000;

/// One row of the table.
#[derive(Clone, Copy)]
struct Row {
    watchers: usize,
    rate: usize,
    slow: usize,
}

struct Args {
    server: PathBuf,
    /// The fan-out baseline server (`watch-baseline`), if any.
    baseline: Option<PathBuf>,
    plugins: PathBuf,
    rows: Vec<Row>,
    duration: u64,
    writers: usize,
}

fn parse_rows(list: &str, slow: bool) -> anyhow::Result<Vec<Row>> {
    list.split(',')
        .filter(|r| !r.is_empty())
        .map(|r| {
            let n: Vec<usize> = r.split('x').map(str::parse).collect::<Result<_, _>>()?;
            match (n.as_slice(), slow) {
                ([watchers, rate], false) => Ok(Row {
                    watchers: *watchers,
                    rate: *rate,
                    slow: 0,
                }),
                ([watchers, rate, slow], true) => Ok(Row {
                    watchers: *watchers,
                    rate: *rate,
                    slow: *slow,
                }),
                _ => bail!("a row is WATCHERSxRATE (--rows) or WATCHERSxRATExSLOW (--slow): {r:?}"),
            }
        })
        .collect()
}

impl Args {
    fn parse() -> anyhow::Result<Args> {
        let mut args = std::env::args().skip(1);
        let mut server = PathBuf::from("target/release/wasm-apiserver");
        let mut plugins = PathBuf::from("target/plugins");
        let mut rows = parse_rows("100x100,100x1000,1000x100,1000x1000", false)?;
        let mut slow = parse_rows("1000x1000x100", true)?;
        let (mut duration, mut writers) = (10, 32);
        // Built beside this binary.
        let mut baseline = Some(std::env::current_exe()?.with_file_name("watch-baseline"));
        while let Some(a) = args.next() {
            let mut value = || args.next().with_context(|| format!("{a} needs a value"));
            match a.as_str() {
                "--server" => server = value()?.into(),
                "--plugins" => plugins = value()?.into(),
                "--rows" => rows = parse_rows(&value()?, false)?,
                "--slow" => slow = parse_rows(&value()?, true)?,
                "--duration" => duration = value()?.parse()?,
                "--writers" => writers = value()?.parse()?,
                "--baseline" => baseline = Some(value()?).filter(|b| !b.is_empty()).map(PathBuf::from),
                other => return Err(bench::unknown_argument(other, USAGE)),
            }
        }
        rows.extend(slow);
        if let Some(b) = baseline.as_ref().filter(|b| !b.exists()) {
            bail!(
                "no baseline server at {} (cargo build --release -p bench, or --baseline \"\")",
                b.display()
            );
        }
        Ok(Args {
            server,
            baseline,
            plugins,
            rows,
            duration,
            writers,
        })
    }
}

/// A latency histogram shared by the watchers.
struct Histogram {
    buckets: Vec<AtomicU64>,
    max_micros: AtomicU64,
}

impl Histogram {
    fn new() -> Histogram {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            max_micros: AtomicU64::new(0),
        }
    }

    fn record(&self, micros: u64) {
        let i = ((micros / BUCKET_MICROS) as usize).min(BUCKETS - 1);
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.max_micros.fetch_max(micros, Ordering::Relaxed);
    }

    /// The `p` quantile in milliseconds (the upper end of its bucket).
    fn quantile_ms(&self, p: f64) -> f64 {
        let counts: Vec<u64> = self.buckets.iter().map(|b| b.load(Ordering::Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return f64::NAN;
        }
        let rank = ((total as f64 * p).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return ((i as u64 + 1) * BUCKET_MICROS) as f64 / 1000.0;
            }
        }
        f64::NAN
    }

    fn max_ms(&self) -> f64 {
        self.max_micros.load(Ordering::Relaxed) as f64 / 1000.0
    }
}

/// When each event's create was sent and acknowledged, in nanoseconds since the run's epoch plus one (0: not yet).
struct Timeline {
    epoch: Instant,
    sent: Vec<AtomicU64>,
    acked: Vec<AtomicU64>,
}

impl Timeline {
    fn now(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64 + 1
    }
}

/// How a watcher's stream ended.
#[derive(Clone, Debug, Default)]
enum End {
    /// Still open when the run ended.
    #[default]
    Open,
    /// The response ended.
    Eof,
    /// An ERROR event with this code.
    Error(i64),
    /// The connection failed.
    Failed(String),
}

/// What one watcher saw.
#[derive(Default)]
struct Seen {
    received: AtomicUsize,
    disorder: AtomicUsize,
    end: Mutex<End>,
}

/// What all watchers share.
struct Shared {
    timeline: Timeline,
    from_ack: Histogram,
    from_send: Histogram,
    /// Set once the writes are done: the slow watchers start reading.
    release_slow: tokio::sync::Notify,
    released: AtomicBool,
    connected: AtomicUsize,
    /// When the writes began (a timeline instant).
    writes_began: AtomicU64,
}

/// Finds `"key":"` in `line` and parses the digits after it (after `prefix`).
fn number_after(finder: &memmem::Finder<'_>, line: &[u8]) -> Option<u64> {
    let at = finder.find(line)? + finder.needle().len();
    let digits = line[at..].iter().take_while(|b| b.is_ascii_digit()).count();
    std::str::from_utf8(&line[at..at + digits]).ok()?.parse().ok()
}

/// Reads one watch: every event's latency and order.
async fn watch(client: reqwest::Client, url: String, shared: Arc<Shared>, seen: Arc<Seen>, slow: bool) {
    let result = async {
        let mut resp = client.get(&url).send().await?;
        if !resp.status().is_success() {
            bail!("watch answered {}", resp.status());
        }
        shared.connected.fetch_add(1, Ordering::SeqCst);
        if slow {
            // Read nothing until the writes are done.
            let released = shared.release_slow.notified();
            if !shared.released.load(Ordering::SeqCst) {
                released.await;
            }
        }
        let type_finder = memmem::Finder::new(b"\"type\":\"");
        let rv_finder = memmem::Finder::new(b"\"resourceVersion\":\"");
        let name_finder = memmem::Finder::new(b"\"name\":\"ev-");
        let code_finder = memmem::Finder::new(b"\"code\":");
        let mut pending: Vec<u8> = Vec::new();
        let mut last_rv = 0;
        while let Some(chunk) = resp.chunk().await? {
            let now = shared.timeline.now();
            pending.extend_from_slice(&chunk);
            let mut start = 0;
            while let Some(nl) = memchr::memchr(b'\n', &pending[start..]) {
                let line = &pending[start..start + nl];
                start += nl + 1;
                let Some(t) = type_finder.find(line) else { continue };
                let kind = &line[t + 8..];
                if kind.starts_with(b"ERROR") {
                    let code = number_after(&code_finder, line).map_or(-1, |c| c as i64);
                    *seen.end.lock().unwrap() = End::Error(code);
                    return Ok(());
                }
                if kind.starts_with(b"BOOKMARK") {
                    continue;
                }
                let (Some(rv), Some(seq)) = (number_after(&rv_finder, line), number_after(&name_finder, line)) else {
                    continue;
                };
                if rv <= last_rv {
                    seen.disorder.fetch_add(1, Ordering::Relaxed);
                }
                last_rv = rv;
                seen.received.fetch_add(1, Ordering::Relaxed);
                if slow {
                    // Read long after they were sent: not a latency.
                    continue;
                }
                let timeline = &shared.timeline;
                let (Some(sent), Some(acked)) = (timeline.sent.get(seq as usize), timeline.acked.get(seq as usize))
                else {
                    continue;
                };
                let acked = acked.load(Ordering::Acquire);
                let from_ack = if acked == 0 { 0 } else { now.saturating_sub(acked) };
                shared.from_ack.record(from_ack / 1000);
                shared
                    .from_send
                    .record(now.saturating_sub(sent.load(Ordering::Acquire)) / 1000);
            }
            pending.drain(..start);
        }
        *seen.end.lock().unwrap() = End::Eof;
        Ok(())
    }
    .await;
    if let Err(e) = result {
        *seen.end.lock().unwrap() = End::Failed(format!("{e:#}"));
    }
}

/// Seconds since the writes began at `now` (a timeline instant).
fn secs(shared: &Shared, now: u64) -> f64 {
    now.saturating_sub(shared.writes_began.load(Ordering::Relaxed)) as f64 / 1e9
}

/// The CPU time (user + system) of a process, from `/proc/<pid>/stat` (USER_HZ: 100 a second).
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let ticks: u64 = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|f| f.parse::<u64>().ok())
        .sum();
    ticks as f64 / 100.0
}

/// `apiserver_terminated_watchers_total` summed over its series (0 when the server has no such metric).
fn terminated_watchers(base: &str) -> u64 {
    let Ok(text) = reqwest::blocking::get(format!("{base}/metrics")).and_then(|r| r.text()) else {
        return 0;
    };
    text.lines()
        .filter(|l| l.starts_with("apiserver_terminated_watchers_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// What a row measured.
struct Measured {
    sent: usize,
    write_secs: f64,
    complete: usize,
    min_received: usize,
    max_received: usize,
    disorder: usize,
    failed: usize,
    p50: f64,
    p99: f64,
    max: f64,
    p99_send: f64,
    rss: [f64; 4],
    server_cores: f64,
    client_cores: f64,
    slow: Option<SlowOutcome>,
}

/// What happened to the slow watchers.
struct SlowOutcome {
    /// When the server's terminated-watchers counter reached the number of slow watchers (seconds after the writes
    /// started), and its final value.
    terminated_at: Option<f64>,
    terminated: u64,
    /// Events the slow watchers read once released (min, max).
    read: (usize, usize),
    /// How their streams ended, counted.
    ends: Vec<(String, usize)>,
}

fn run_row(args: &Args, server: &std::path::Path, row: Row) -> anyhow::Result<Measured> {
    // No HTTPS port: the benchmark uses the insecure one, and another server may hold the default port.
    let server = bench::start(server, &args.plugins, &["--secure-port", "0"])?;
    let pid = server.pid();
    let base = server.base.clone();
    let collection = format!("{base}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
    let total = row.rate * args.duration as usize;
    let list: serde_json::Value = reqwest::blocking::get(&collection)?.json()?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .context("the list has no resourceVersion")?
        .to_owned();
    let rss_idle = rss_mib(pid);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let shared = Arc::new(Shared {
        timeline: Timeline {
            epoch: Instant::now(),
            sent: (0..total).map(|_| AtomicU64::new(0)).collect(),
            acked: (0..total).map(|_| AtomicU64::new(0)).collect(),
        },
        from_ack: Histogram::new(),
        from_send: Histogram::new(),
        release_slow: tokio::sync::Notify::new(),
        released: AtomicBool::new(false),
        connected: AtomicUsize::new(0),
        writes_began: AtomicU64::new(0),
    });
    let client = reqwest::Client::builder()
        .http1_only()
        .pool_max_idle_per_host(0)
        .build()?;
    let url = format!("{collection}?watch=1&resourceVersion={rv}");
    let mut watchers = Vec::new();
    for i in 0..row.watchers + row.slow {
        let seen = Arc::new(Seen::default());
        let slow = i >= row.watchers;
        runtime.spawn(watch(client.clone(), url.clone(), shared.clone(), seen.clone(), slow));
        watchers.push((seen, slow));
    }
    let opened = Instant::now();
    while shared.connected.load(Ordering::SeqCst) < watchers.len() {
        if opened.elapsed() > Duration::from_secs(60)
            || watchers
                .iter()
                .any(|(s, _)| matches!(*s.end.lock().unwrap(), End::Failed(_)))
        {
            let failed: Vec<_> = watchers
                .iter()
                .filter_map(|(s, _)| match &*s.end.lock().unwrap() {
                    End::Failed(e) => Some(e.clone()),
                    _ => None,
                })
                .collect();
            bail!("watchers did not all connect: {failed:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let rss_watching = rss_mib(pid);

    // Sample the server's memory (and the slow watchers' end) while the writes run.
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (sampling, shared, base) = (sampling.clone(), shared.clone(), base.clone());
        let slow = row.slow as u64;
        std::thread::spawn(move || {
            let mut peak: f64 = 0.0;
            let mut terminated_at = None;
            while sampling.load(Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid));
                if slow > 0 && terminated_at.is_none() && terminated_watchers(&base) >= slow {
                    terminated_at = Some(secs(&shared, shared.timeline.now()));
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            (peak, terminated_at)
        })
    };
    let (server_cpu0, client_cpu0) = (cpu_secs(pid), cpu_secs(std::process::id()));
    let started = Instant::now();
    shared.writes_began.store(shared.timeline.now(), Ordering::Relaxed);
    write(&collection, row.rate, total, args.writers, &shared)?;
    let write_secs = started.elapsed().as_secs_f64();
    // Wait for every fast watcher to get every event (or for 30 s more).
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline
        && watchers
            .iter()
            .filter(|(_, slow)| !slow)
            .any(|(s, _)| s.received.load(Ordering::Relaxed) < total && matches!(*s.end.lock().unwrap(), End::Open))
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    let elapsed = started.elapsed().as_secs_f64();
    let server_cores = (cpu_secs(pid) - server_cpu0) / elapsed;
    let client_cores = (cpu_secs(std::process::id()) - client_cpu0) / elapsed;
    sampling.store(false, Ordering::Relaxed);
    let (peak, terminated_at) = sampler.join().map_err(|_| anyhow::anyhow!("the sampler panicked"))?;
    let rss_after = rss_mib(pid);

    let slow = (row.slow > 0).then(|| {
        let terminated = terminated_watchers(&base);
        shared.released.store(true, Ordering::SeqCst);
        shared.release_slow.notify_waiters();
        // Let the slow watchers read what they were sent, until their streams end (or 10 s).
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline
            && watchers
                .iter()
                .any(|(s, slow)| *slow && matches!(*s.end.lock().unwrap(), End::Open))
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let read: Vec<usize> = watchers
            .iter()
            .filter(|(_, slow)| *slow)
            .map(|(s, _)| s.received.load(Ordering::Relaxed))
            .collect();
        let mut ends: Vec<(String, usize)> = Vec::new();
        for (s, _) in watchers.iter().filter(|(_, slow)| *slow) {
            let end = match &*s.end.lock().unwrap() {
                End::Open => "still open".to_owned(),
                End::Eof => "stream ended".to_owned(),
                End::Error(code) => format!("ERROR event {code}"),
                End::Failed(e) => format!("failed: {e}"),
            };
            match ends.iter_mut().find(|(e, _)| *e == end) {
                Some((_, n)) => *n += 1,
                None => ends.push((end, 1)),
            }
        }
        SlowOutcome {
            terminated_at,
            terminated,
            read: (
                read.iter().copied().min().unwrap_or(0),
                read.iter().copied().max().unwrap_or(0),
            ),
            ends,
        }
    });

    let fast: Vec<_> = watchers.iter().filter(|(_, slow)| !slow).map(|(s, _)| s).collect();
    let received: Vec<usize> = fast.iter().map(|s| s.received.load(Ordering::Relaxed)).collect();
    let disorder: usize = fast.iter().map(|s| s.disorder.load(Ordering::Relaxed)).sum();
    let complete = fast
        .iter()
        .filter(|s| s.received.load(Ordering::Relaxed) == total && s.disorder.load(Ordering::Relaxed) == 0)
        .count();
    let failed = fast
        .iter()
        .filter(|s| !matches!(*s.end.lock().unwrap(), End::Open))
        .count();
    runtime.shutdown_background();
    drop(server);
    Ok(Measured {
        sent: total,
        write_secs,
        complete,
        min_received: received.iter().copied().min().unwrap_or(0),
        max_received: received.iter().copied().max().unwrap_or(0),
        disorder,
        failed,
        p50: shared.from_ack.quantile_ms(0.5),
        p99: shared.from_ack.quantile_ms(0.99),
        max: shared.from_ack.max_ms(),
        p99_send: shared.from_send.quantile_ms(0.99),
        rss: [rss_idle, rss_watching, peak, rss_after],
        server_cores,
        client_cores,
        slow,
    })
}

/// Creates `total` flunders at `rate` a second from `writers` concurrent requests, on a thread of its own (so that
/// the watchers' work does not delay the schedule), recording when each was sent and acknowledged.
fn write(collection: &str, rate: usize, total: usize, writers: usize, shared: &Arc<Shared>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let client = reqwest::Client::builder().http1_only().build()?;
    let next = Arc::new(AtomicUsize::new(0));
    let start = tokio::time::Instant::now();
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    runtime.block_on(async {
        let tasks: Vec<_> = (0..writers)
            .map(|_| {
                let (client, next, shared, url) = (client.clone(), next.clone(), shared.clone(), collection.to_owned());
                tokio::spawn(async move {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= total {
                            return Ok::<_, anyhow::Error>(());
                        }
                        tokio::time::sleep_until(start + interval * i as u32).await;
                        let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                            "metadata": {"name": format!("ev-{i}")}, "spec": {"reference": "r"}});
                        shared.timeline.sent[i].store(shared.timeline.now(), Ordering::Release);
                        let r = client.post(&url).json(&body).send().await?;
                        shared.timeline.acked[i].store(shared.timeline.now(), Ordering::Release);
                        if r.status().as_u16() != 201 {
                            bail!("create answered {}: {}", r.status(), r.text().await.unwrap_or_default());
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await??;
        }
        Ok(())
    })
}

fn print(server: &str, row: Row, m: &Measured) {
    let rate = m.sent as f64 / m.write_secs;
    println!(
        "| {server} | {} | {} | {} | {} ({rate:.0}/s) | {}/{} | {}–{} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} / {:.0} / {:.0} / {:.0} | {:.2} | {:.2} |",
        row.watchers,
        row.slow,
        row.rate,
        m.sent,
        m.complete,
        row.watchers,
        m.min_received,
        m.max_received,
        m.disorder + m.failed,
        m.p50,
        m.p99,
        m.max,
        m.p99_send,
        m.rss[0],
        m.rss[1],
        m.rss[2],
        m.rss[3],
        m.server_cores,
        m.client_cores,
    );
}

/// The command line, for `--help` and errors.
const USAGE: &str = "usage: watch-bench [--server PATH] [--plugins DIR] [--rows 100x100,...] [--slow 1000x1000x100,...] [--duration SECONDS] [--writers N] [--baseline PATH]";

fn main() -> anyhow::Result<()> {
    let args = Args::parse()?;
    check_limits(&args)?;
    println!(
        "| server | watchers | slow | events/s asked | events sent (achieved) | watchers with every event in order | events per \
         watcher (min–max) | out of order or ended | p50 ms | p99 ms | max ms | p99 ms from send | server RSS MiB idle / \
         watching / peak / after | server CPU cores | client CPU cores |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let mut slow_rows = Vec::new();
    for &row in &args.rows {
        let m = run_row(&args, &args.server, row)?;
        print("wasm-apiserver", row, &m);
        if let Some(s) = m.slow {
            slow_rows.push((row, s));
        }
        if let Some(baseline) = args.baseline.as_ref().filter(|_| row.slow == 0) {
            print("baseline", row, &run_row(&args, baseline, row)?);
        }
    }
    if !slow_rows.is_empty() {
        println!();
        println!(
            "| watchers + slow | events/s | slow watchers ended by the server (metric) | when (s after the writes began) \
             | events the slow watchers read afterwards (min–max) | how their streams ended |"
        );
        println!("|---|---|---|---|---|---|");
        for (row, s) in slow_rows {
            let ends: Vec<String> = s.ends.iter().map(|(e, n)| format!("{n} {e}")).collect();
            println!(
                "| {} + {} | {} | {} | {} | {}–{} | {} |",
                row.watchers,
                row.slow,
                row.rate,
                s.terminated,
                s.terminated_at.map_or("-".into(), |t| format!("{t:.1}")),
                s.read.0,
                s.read.1,
                ends.join(", ")
            );
        }
    }
    Ok(())
}

/// Fails early when the open-files limit cannot hold the watchers' connections.
fn check_limits(args: &Args) -> anyhow::Result<()> {
    let most = args.rows.iter().map(|r| r.watchers + r.slow).max().unwrap_or(0);
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let open_files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse::<usize>().ok());
    if let Some(max) = open_files {
        if max < most + 64 {
            bail!("{most} watchers need more open files than the limit of {max} (ulimit -n)");
        }
    }
    Ok(())
}
