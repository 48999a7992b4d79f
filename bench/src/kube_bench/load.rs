//! The same client code against either server: a load of numbered operations over worker threads, each with its
//! own HTTPS connection (made and warmed before the clock starts), and the peak memory of the servers meanwhile.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::bail;
use reqwest::blocking::Client;
use serde_json::json;

use super::servers::{rss_mib, Side};

/// Throughput and latency of one run.
#[derive(Clone, Copy, Debug)]
pub struct Rate {
    /// Operations per second.
    pub per_sec: f64,
    /// Median latency, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile latency, in milliseconds.
    pub p99_ms: f64,
}

/// The `p`th quantile (0..=1) of sorted durations, in milliseconds.
pub fn quantile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)].as_secs_f64() * 1e3
}

/// Runs operations 0..`requests` against `side` on `concurrency` threads, each taking the next index; returns the
/// rate and latencies. Every worker connects (TLS handshake and one GET of `/readyz`) before the clock starts.
pub fn run(
    side: &Side,
    concurrency: usize,
    requests: usize,
    op: impl Fn(&Client, usize) -> anyhow::Result<()> + Send + Sync + 'static,
) -> anyhow::Result<Rate> {
    let op = Arc::new(op);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Arc::new(Barrier::new(concurrency + 1));
    let workers: Vec<_> = (0..concurrency)
        .map(|_| {
            let (op, next, start) = (op.clone(), next.clone(), start.clone());
            let client = side.client();
            let warm = format!("{}/readyz", side.base);
            std::thread::spawn(move || -> anyhow::Result<Vec<Duration>> {
                let warmed = client.get(&warm).send().map(|r| r.status().is_success());
                start.wait();
                if !warmed? {
                    bail!("{warm} was not ready");
                }
                let mut latencies = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= requests {
                        return Ok(latencies);
                    }
                    let t = Instant::now();
                    op(&client, i)?;
                    latencies.push(t.elapsed());
                }
            })
        })
        .collect();
    start.wait();
    let started = Instant::now();
    let mut latencies = Vec::new();
    for w in workers {
        latencies.extend(w.join().map_err(|_| anyhow::anyhow!("worker panicked"))??);
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    Ok(Rate {
        per_sec: requests as f64 / elapsed,
        p50_ms: quantile_ms(&latencies, 0.5),
        p99_ms: quantile_ms(&latencies, 0.99),
    })
}

/// The flunders collection of `namespace` (v1alpha1, the storage version).
pub fn collection(side: &Side, namespace: &str) -> String {
    format!(
        "{}/apis/wardle.example.com/v1alpha1/namespaces/{namespace}/flunders",
        side.base
    )
}

/// The flunder every create sends, named `<prefix><i>` (the http-bench body: a label and a reference).
pub fn flunder(prefix: &str, i: usize) -> serde_json::Value {
    json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
        "metadata": {"name": format!("{prefix}{i}"), "labels": {"bench": "yes"}},
        "spec": {"reference": format!("r{i}")}})
}

/// An operation creating flunder `<prefix><i>` in `collection`, expecting 201.
pub fn create(
    collection: String,
    prefix: &'static str,
) -> impl Fn(&Client, usize) -> anyhow::Result<()> + Send + Sync + 'static {
    move |c, i| {
        let r = c.post(&collection).json(&flunder(prefix, i)).send()?;
        let status = r.status().as_u16();
        let body = r.bytes()?;
        if status != 201 {
            bail!("create answered {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(())
    }
}

/// An operation reading `url` (JSON), expecting 200 and reading the whole body.
pub fn get(url: String) -> impl Fn(&Client, usize) -> anyhow::Result<()> + Send + Sync + 'static {
    move |c, _| {
        let r = c.get(&url).header("Accept", "application/json").send()?;
        let status = r.status().as_u16();
        let body = r.bytes()?;
        if status != 200 {
            bail!("GET {url} answered {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(())
    }
}

/// Samples the VmRSS of some processes every 50 ms on a thread, keeping each one's peak, until stopped.
pub struct PeakRss {
    peaks_kib: Arc<Vec<AtomicU64>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakRss {
    /// Starts sampling the processes `pids`.
    pub fn start(pids: Vec<u32>) -> PeakRss {
        let peaks_kib: Arc<Vec<AtomicU64>> = Arc::new(pids.iter().map(|_| AtomicU64::new(0)).collect());
        let stop = Arc::new(AtomicBool::new(false));
        let (peaks, stopped) = (peaks_kib.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                for (pid, peak) in pids.iter().zip(peaks.iter()) {
                    peak.fetch_max((rss_mib(*pid) * 1024.0) as u64, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        PeakRss {
            peaks_kib,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops sampling; returns each process's peak, in MiB, in the order of the pids.
    pub fn stop(mut self) -> Vec<f64> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peaks_kib
            .iter()
            .map(|p| p.load(Ordering::Relaxed) as f64 / 1024.0)
            .collect()
    }
}
