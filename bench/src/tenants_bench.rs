//! Tenants created through the API, built on first use: N Tenant objects defined on one host (or on each of several
//! hosts sharing one etcd), none of them built until a request comes, each dropped again when idle.
//!
//! Measures:
//! - the N Tenant objects created through the API (creates/s);
//! - restart to ready with the N tenants defined, and RSS then, per defined tenant over a host with none;
//! - the first request (a LIST of namespaces) to a sample of tenants never built (their namespaces and RBAC objects
//!   are made then), p50 / p99;
//! - the same after the sample was dropped as idle (`--tenant-idle-after`): the cold tenant's first request, built
//!   from its stored data, p50 / p99;
//! - RSS with the sample in memory, and after it is dropped again.
//!
//! Usage: `tenants-bench [--server PATH] [--plugins DIR] [--tenants N] [--sample N] [--etcd] [--replicas N]`
//! (defaults: target/release/wasm-apiserver, target/plugins, 10000 tenants, 200 sampled, the embedded store, one
//! host; `--replicas` above 1 needs `--etcd`, which needs `etcd` on PATH).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use bench::Host;
use serde_json::json;

struct Options {
    server: PathBuf,
    plugins: PathBuf,
    tenants: usize,
    sample: usize,
    etcd: bool,
    replicas: usize,
}

const USAGE: &str =
    "usage: tenants-bench [--server PATH] [--plugins DIR] [--tenants N] [--sample N] [--etcd] [--replicas N]";

/// How long a tenant stays in memory without requests, in the hosts measured.
const IDLE_AFTER: &str = "3s";

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        server: PathBuf::from("target/release/wasm-apiserver"),
        plugins: PathBuf::from("target/plugins"),
        tenants: 10_000,
        sample: 200,
        etcd: false,
        replicas: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--server" => o.server = value()?.into(),
            "--plugins" => o.plugins = value()?.into(),
            "--tenants" => o.tenants = value()?.parse()?,
            "--sample" => o.sample = value()?.parse()?,
            "--etcd" => o.etcd = true,
            "--replicas" => o.replicas = value()?.parse()?,
            other => return Err(bench::unknown_argument(other, USAGE)),
        }
    }
    if o.replicas > 1 && !o.etcd {
        bail!("--replicas above 1 needs --etcd (hosts share one etcd)\n{USAGE}");
    }
    Ok(o)
}

/// Starts a host on `plugin_dir` and `data_dir` (and etcd when given) and waits until it is ready; returns it and how
/// long that took.
fn start_host(o: &Options, plugin_dir: &Path, data_dir: &Path, etcd: Option<&str>) -> anyhow::Result<(Host, Duration)> {
    let mut command = Command::new(&o.server);
    command
        .args(["serve", "--secure-port", "0", "--plugin-dir"])
        .arg(plugin_dir)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--tenant-idle-after", IDLE_AFTER]);
    if let Some(endpoint) = etcd {
        command.args(["--etcd-servers", endpoint]);
    }
    Host::start(command)
}

/// A gauge of the host's `/metrics`.
fn gauge(host: &Host, c: &reqwest::blocking::Client, name: &str) -> anyhow::Result<f64> {
    let text = c.get(format!("{}/metrics", host.base)).send()?.text()?;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("no {name} in /metrics"))
}

/// Waits until the host knows `n` tenants and none is in memory.
fn wait_defined_and_dropped(host: &Host, c: &reqwest::blocking::Client, n: usize) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let defined = gauge(host, c, "wasm_apiserver_tenants")?;
        let in_memory = gauge(host, c, "wasm_apiserver_tenants_in_memory")?;
        if defined as usize == n && in_memory == 0.0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("after 300 s: {defined} tenants defined (of {n}), {in_memory} in memory");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn tenant_name(t: usize) -> String {
    format!("t{t}")
}

/// The first request to each sampled tenant, spread over the hosts: the p50 / p99 of their latencies in ms.
fn first_requests(c: &reqwest::blocking::Client, hosts: &[Host], sample: &[usize]) -> anyhow::Result<String> {
    let mut out = Vec::with_capacity(sample.len());
    for (i, &t) in sample.iter().enumerate() {
        let host = &hosts[i % hosts.len()];
        let url = format!("{}/tenants/{}/api/v1/namespaces", host.base, tenant_name(t));
        let started = Instant::now();
        let r = c.get(&url).send()?;
        let elapsed = started.elapsed().as_secs_f64() * 1e3;
        if !r.status().is_success() {
            bail!("GET {url}: {} {}", r.status(), r.text().unwrap_or_default());
        }
        out.push(elapsed);
    }
    Ok(format!(
        "{:.1} / {:.1}",
        percentile(out.clone(), 50),
        percentile(out, 99)
    ))
}

fn percentile(mut v: Vec<f64>, p: usize) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() * p).div_ceil(100)).clamp(1, v.len()) - 1]
}

fn main() -> anyhow::Result<()> {
    let o = options()?;
    let n = o.tenants;
    let work = tempfile::tempdir()?;
    let plugin_dir = work.path().join("plugins");
    std::fs::create_dir_all(&plugin_dir)?;
    std::fs::copy(o.plugins.join("wardle.wasm"), plugin_dir.join("wardle.wasm"))
        .context("copying wardle.wasm (run scripts/build-plugins.sh)")?;
    let etcd = match o.etcd {
        true => Some(bench::etcd::Etcd::start(Path::new("etcd"), None)?),
        false => None,
    };
    let endpoint = etcd.as_ref().map(|e| e.endpoint.clone());
    let data_dir = |i: usize| work.path().join(format!("data-{i}"));
    let store = match &etcd {
        Some(e) => format!("etcd {}", e.version()),
        None => "embedded store".to_owned(),
    };
    let row = |what: &str, value: String| println!("| {what} | {value} |");
    println!(
        "| measure ({n} tenants created through the API, {store}, {} host(s)) | value |",
        o.replicas
    );
    println!("|---|---|");
    let c = reqwest::blocking::Client::new();

    // The hosts with no tenant: the baseline.
    let (empty, _) = start_host(&o, &plugin_dir, &work.path().join("data-empty"), None)?;
    let rss_empty = empty.settled_rss(Duration::from_secs(2), Duration::from_secs(10));
    drop(empty);
    row("RSS, no tenant (MiB)", format!("{rss_empty:.1}"));

    // The N Tenant objects, created through the first host.
    let (first, _) = start_host(&o, &plugin_dir, &data_dir(0), endpoint.as_deref())?;
    let started = Instant::now();
    let tenants_url = format!("{}/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants", first.base);
    bench::run(&first.base, 8, n, move |c, t| {
        let body = json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant",
            "metadata": {"name": tenant_name(t)}, "spec": {"admins": {"users": ["alice"]}}});
        let r = c.post(&tenants_url).json(&body).send()?;
        if r.status().as_u16() != 201 {
            bail!("creating a tenant: {} {}", r.status(), r.text().unwrap_or_default());
        }
        Ok(())
    })?;
    let took = started.elapsed().as_secs_f64();
    row(
        &format!("{n} Tenant objects created (s)"),
        format!("{took:.1} ({:.0} creates/s)", n as f64 / took),
    );
    wait_defined_and_dropped(&first, &c, n)?;
    drop(first);

    // Restarted with the N tenants defined: ready, and RSS, with none built.
    let mut hosts = Vec::new();
    let mut ready = Vec::new();
    for i in 0..o.replicas {
        let (host, took) = start_host(&o, &plugin_dir, &data_dir(i), endpoint.as_deref())?;
        ready.push(took.as_secs_f64());
        hosts.push(host);
    }
    for host in &hosts {
        wait_defined_and_dropped(host, &c, n)?;
    }
    let ready: Vec<String> = ready.iter().map(|s| format!("{s:.2}")).collect();
    row("restart to ready, tenants defined (s)", ready.join(" / "));
    let rss: Vec<f64> = hosts
        .iter()
        .map(|h| h.settled_rss(Duration::from_secs(3), Duration::from_secs(30)))
        .collect();
    let shown: Vec<String> = rss
        .iter()
        .map(|r| format!("{r:.1} ({:.1} KiB per tenant)", (r - rss_empty) * 1024.0 / n as f64))
        .collect();
    row("RSS, every tenant defined, none used (MiB)", shown.join(" / "));

    // The first request to tenants never built, then, once dropped as idle, to the same tenants again.
    let sample: Vec<usize> = (0..n).step_by((n / o.sample.max(1)).max(1)).take(o.sample).collect();
    row(
        &format!(
            "first request to a tenant never built (LIST namespaces; its default objects made), p50 / p99 of {} (ms)",
            sample.len()
        ),
        first_requests(&c, &hosts, &sample)?,
    );
    let rss: Vec<String> = hosts.iter().map(|h| format!("{:.1}", h.rss_mib())).collect();
    row(
        &format!("RSS with {} tenants in memory (MiB)", sample.len()),
        rss.join(" / "),
    );
    for host in &hosts {
        wait_defined_and_dropped(host, &c, n)?;
    }
    let rss: Vec<String> = hosts
        .iter()
        .map(|h| format!("{:.1}", h.settled_rss(Duration::from_secs(3), Duration::from_secs(30))))
        .collect();
    row("RSS once they are dropped as idle (MiB)", rss.join(" / "));
    row(
        &format!(
            "first request to a cold tenant (built from its stored data), p50 / p99 of {} (ms)",
            sample.len()
        ),
        first_requests(&c, &hosts, &sample)?,
    );
    Ok(())
}
