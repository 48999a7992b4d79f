//! The initial events of a watch: how long a client waits for the ADDED events of every object
//! when it starts a watch at `resourceVersion=0` (an informer's start without a list) or with
//! `sendInitialEvents=true` (kube's streaming list), over N flunders from the watch cache, in the storage version
//! (`v1alpha1`) and converted (`v1beta1`), next to a plain hyper server returning the same bytes.
//!
//! Each row starts the watch, reads its body until the N-th line, and closes it; the time is from sending the
//! request to reading the N-th line. The baseline reads the same N lines (taken once from the server's own watch in
//! the storage version) from a minimal hyper server, with the same client loop.
//!
//! Usage: `initial-events-bench [--server PATH] [--plugins DIR] [--requests OBJECTS] [--concurrency REPEATS]`
//! (defaults: target/release/wasm-apiserver, target/plugins; here `--requests` is the number of flunders, default
//! 10,000 when not given, and the first `--concurrency` value the number of watches per row, default 5).

use std::io::Read as _;
use std::time::{Duration, Instant};

use anyhow::bail;
use bench::{create_each, run, serve_same_bytes, start, Args};

/// Reads a watch at `url` until `lines` lines (events) arrived; returns the bytes read up to the last of them.
fn read_lines(client: &reqwest::blocking::Client, url: &str, lines: usize) -> anyhow::Result<Vec<u8>> {
    let mut r = client.get(url).header("Accept", "application/json").send()?;
    if !r.status().is_success() {
        bail!("{url} answered {}", r.status());
    }
    let mut body = Vec::with_capacity(lines * 1024);
    let mut buf = vec![0u8; 256 << 10];
    let mut seen = 0;
    while seen < lines {
        let n = r.read(&mut buf)?;
        if n == 0 {
            bail!("{url} ended after {seen} of {lines} lines");
        }
        for (i, b) in buf[..n].iter().enumerate() {
            if *b == b'\n' {
                seen += 1;
                if seen == lines {
                    body.extend_from_slice(&buf[..=i]);
                    return Ok(body);
                }
            }
        }
        body.extend_from_slice(&buf[..n]);
    }
    Ok(body)
}

/// The times of `repeats` watches of `url` reading `lines` lines each, one after the other, in ms: (median, min,
/// max).
fn time_watches(url: &str, lines: usize, repeats: usize) -> anyhow::Result<(f64, f64, f64)> {
    let client = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()?;
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        let started = Instant::now();
        read_lines(&client, url, lines)?;
        times.push(started.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok((times[times.len() / 2], times[0], times[times.len() - 1]))
}

fn main() -> anyhow::Result<()> {
    let given = std::env::args().any(|a| a == "--requests");
    let Args {
        server,
        plugins,
        requests,
        concurrency,
        ..
    } = Args::parse()?;
    let objects = if given { requests } else { 10_000 };
    let repeats = if std::env::args().any(|a| a == "--concurrency") {
        concurrency.first().copied().unwrap_or(5).max(1)
    } else {
        5
    };
    let s = start(&server, &plugins, &[])?;
    let base = s.base.clone();
    let alpha = format!("{base}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
    let beta = format!("{base}/apis/wardle.example.com/v1beta1/namespaces/default/flunders");
    run(&base, 8, objects, create_each(alpha.clone()))?;
    const AT_ZERO: &str = "?watch=true&resourceVersion=0";
    const STREAMING: &str =
        "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    // The baseline's bytes: the storage version's initial events, as the server writes them.
    let client = reqwest::blocking::Client::new();
    let same_bytes = read_lines(&client, &format!("{alpha}{AT_ZERO}"), objects)?;
    let bytes = same_bytes.len();
    let same = serve_same_bytes("application/json".to_owned(), same_bytes.into())?;
    println!("| initial events of {objects} flunders | watches | median ms | min ms | max ms | events/s (median) | ÷ hyper (time) |");
    println!("|---|---|---|---|---|---|---|");
    let hyper = time_watches(&format!("{}/", same.base), objects, repeats)?;
    let rows = [
        (
            "watch at resourceVersion=0, storage version",
            format!("{alpha}{AT_ZERO}"),
        ),
        (
            "watch at resourceVersion=0, converted to v1beta1",
            format!("{beta}{AT_ZERO}"),
        ),
        ("sendInitialEvents=true, storage version", format!("{alpha}{STREAMING}")),
        (
            "watch at resourceVersion=0 with a label selector (parsed)",
            format!("{alpha}{AT_ZERO}&labelSelector=bench%3Dyes"),
        ),
    ];
    for (name, url) in rows {
        let (median, min, max) = time_watches(&url, objects, repeats)?;
        println!(
            "| {name} | {repeats} | {median:.1} | {min:.1} | {max:.1} | {:.0} | {:.2} |",
            objects as f64 / median * 1e3,
            hyper.0 / median
        );
    }
    let (median, min, max) = hyper;
    println!(
        "| hyper same bytes ({bytes} bytes) | {repeats} | {median:.1} | {min:.1} | {max:.1} | {:.0} | 1.00 |",
        objects as f64 / median * 1e3
    );
    Ok(())
}
