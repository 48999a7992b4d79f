//! The noisy neighbour: wardle creates of one tenant, alone and while another tenant's plugin (or another plugin of
//! the same tenant) is flooded with calls that spin until their deadline, measured in one run.
//!
//! The server serves tenant `t1` with wardle and the hostile plugin, and tenant `t2` with wardle. The flood is 32
//! clients creating `loop` trials in t1 without pause (each call runs until the plugin call deadline and answers 504).
//! Each victim (t2's wardle: tenant against tenant; t1's wardle: plugin against plugin) is measured alone, then under
//! the flood. The whole is run once with the fair share of plugin lanes (the default) and once with `--plugin-lanes 0`
//! (every slow call runs at once, where it is made: the server before the fair share), for comparison.
//!
//! Usage: `noisy-bench [--server PATH] [--plugins DIR] [--requests N] [--concurrency N]` (defaults:
//! target/release/wasm-apiserver, target/plugins, 2000 creates per row, 8 concurrent creators).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use bench::{run, start_with, Args};
use serde_json::json;

/// Clients flooding the hostile plugin.
const FLOOD_CLIENTS: usize = 32;

fn main() -> anyhow::Result<()> {
    let Args {
        server,
        plugins,
        requests,
        concurrency,
        ..
    } = Args::parse()?;
    // One concurrency: the first given, else 8.
    let concurrency = match std::env::args().any(|a| a == "--concurrency") {
        true => concurrency[0],
        false => 8,
    };
    println!(
        "| plugin lanes | victim | flood | creates/s | p50 µs | p99 µs | rate vs alone | p99 vs alone | flood calls/s |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    // NOISY_BENCH_LANES: a number of lanes to measure in place of the default.
    let chosen = std::env::var("NOISY_BENCH_LANES").ok();
    for lanes in [chosen.as_deref(), Some("0")] {
        let mut args = vec![];
        if let Some(l) = lanes {
            args.extend(["--plugin-lanes", l]);
        }
        let s = start_with(&server, &plugins, &["t1/wardle", "t1/hostile", "t2/wardle"], &args)?;
        let lanes_label = match lanes {
            None => "default (one per two cores)".to_owned(),
            Some("0") => "0 (unqueued)".to_owned(),
            Some(l) => l.to_owned(),
        };
        for (victim, tenant) in [("t2 wardle (other tenant)", "t2"), ("t1 wardle (same tenant)", "t1")] {
            let url = format!(
                "{}/tenants/{tenant}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
                s.base
            );
            let creates = |row: &'static str| {
                let url = url.clone();
                move |c: &reqwest::blocking::Client, i: usize| {
                    let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                        "metadata": {"name": format!("{row}-{i}")}, "spec": {"reference": "r"}});
                    let r = c.post(&url).json(&body).send()?;
                    if r.status().as_u16() != 201 {
                        bail!("create answered {}: {}", r.status(), r.text().unwrap_or_default());
                    }
                    Ok(())
                }
            };
            let alone = run(&s.base, concurrency, requests, creates("alone"))?;
            let flood = Flood::start(&s.base);
            let flooded = run(&s.base, concurrency, requests, creates("flooded"))?;
            let flood_rate = flood.stop()?;
            let row = |flood: &str, r: [f64; 5], ratios: bool, flood_rate: f64| {
                let (rate, p99) = if ratios {
                    (format!("{:.2}", r[0] / alone[0]), format!("{:.2}", r[2] / alone[2]))
                } else {
                    ("1".into(), "1".into())
                };
                let calls = if flood_rate > 0.0 {
                    format!("{flood_rate:.0}")
                } else {
                    "-".into()
                };
                println!(
                    "| {lanes_label} | {victim} | {flood} | {:.0} | {:.0} | {:.0} | {rate} | {p99} | {calls} |",
                    r[0], r[1], r[2]
                );
            };
            row("none", alone, false, 0.0);
            row("t1 hostile, 32 clients", flooded, true, flood_rate);
        }
    }
    Ok(())
}

/// Clients creating `loop` trials in t1 until stopped.
struct Flood {
    stop: Arc<AtomicBool>,
    answered: Arc<AtomicU64>,
    started: std::time::Instant,
    threads: Vec<std::thread::JoinHandle<anyhow::Result<()>>>,
}

impl Flood {
    fn start(base: &str) -> Flood {
        let stop = Arc::new(AtomicBool::new(false));
        let answered = Arc::new(AtomicU64::new(0));
        let url = format!("{base}/tenants/t1/apis/hostile.example.com/v1/namespaces/default/trials");
        let threads = (0..FLOOD_CLIENTS)
            .map(|_| {
                let (stop, answered, url) = (stop.clone(), answered.clone(), url.clone());
                std::thread::spawn(move || -> anyhow::Result<()> {
                    let client = reqwest::blocking::Client::builder()
                        .timeout(Duration::from_secs(60))
                        .build()?;
                    let body = json!({"apiVersion": "hostile.example.com/v1", "kind": "Trial",
                        "metadata": {"generateName": "flood-"}, "spec": {"mode": "loop"}});
                    while !stop.load(Ordering::Relaxed) {
                        let r = client.post(&url).json(&body).send()?;
                        // The call runs out its deadline (504), or is refused a turn (429).
                        if !matches!(r.status().as_u16(), 504 | 429) {
                            bail!("a loop trial answered {}: {}", r.status(), r.text().unwrap_or_default());
                        }
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                })
            })
            .collect();
        // Let the flood fill the server before measuring.
        std::thread::sleep(Duration::from_secs(1));
        Flood {
            stop,
            answered,
            started: std::time::Instant::now(),
            threads,
        }
    }

    /// Stops the flood; returns the calls it had answered per second.
    fn stop(self) -> anyhow::Result<f64> {
        let answered = self.answered.load(Ordering::Relaxed) as f64;
        let rate = answered / self.started.elapsed().as_secs_f64();
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().map_err(|_| anyhow::anyhow!("a flood client panicked"))??;
        }
        Ok(rate)
    }
}
