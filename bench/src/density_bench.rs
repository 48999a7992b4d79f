//! Tenant density: many tenants, each serving wardle (Rust), books (Python) and tasks (JavaScript), on one host, or
//! one plugin serving wardle.example.com alone (`--only wardle-go`: the Go wardle).
//!
//! Makes N tenant directories, each with the plugins linked in (symbolic links to one copy of each file, as an
//! operator would deploy one artifact to many tenants), warms the compile cache, then measures:
//! - start to ready with N tenants (the compile cache warm);
//! - resident memory (RSS) when ready, after 10 objects were created in every tenant, and when the tenants are idle
//!   again (their watch caches and plugin instances evicted: `--evict-idle-after`);
//! - the first request to a cold tenant (a list, which starts a watch cache, and a create, which makes plugin
//!   instances), on a sample of tenants;
//! - an active tenant's GET p99 next to the same host serving one tenant (rounds of each in turn, medians compared);
//! - RSS after every tenant directory is removed, next to a host started with none;
//! - restart to ready with the N tenants' data stored, and RSS then.
//!
//! Usage: `density-bench [--server PATH] [--plugins DIR] [--tenants N] [--idle SECONDS] [--smaps FILE]
//! [--cycles N] [--only PLUGIN]` (defaults: target/release/wasm-apiserver, target/plugins, 1000 tenants, 10 s, no
//! cycles, the three plugins).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use bench::Host;
use serde_json::json;

const PLUGINS: [&str; 3] = ["wardle", "books", "tasks"];

struct Options {
    server: PathBuf,
    plugins: PathBuf,
    tenants: usize,
    idle: u64,
    /// Where to copy the host's `/proc/PID/smaps` once every tenant is removed (to see what stays resident); its
    /// threads, by name, go to the same path with `.threads` appended.
    smaps: Option<PathBuf>,
    /// How many times to add the tenants again, use them and remove them after the first removal: the RSS after
    /// each removal shows whether anything accumulates (a leak) or what stays is bounded.
    cycles: usize,
    /// The plugins each tenant serves: the three, or one serving wardle.example.com (`--only`).
    serve: Vec<String>,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        server: PathBuf::from("target/release/wasm-apiserver"),
        plugins: PathBuf::from("target/plugins"),
        tenants: 1000,
        idle: 10,
        smaps: None,
        cycles: 0,
        serve: PLUGINS.iter().map(|p| (*p).to_owned()).collect(),
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--server" => o.server = value()?.into(),
            "--plugins" => o.plugins = value()?.into(),
            "--tenants" => o.tenants = value()?.parse()?,
            "--idle" => o.idle = value()?.parse()?,
            "--smaps" => o.smaps = Some(value()?.into()),
            "--cycles" => o.cycles = value()?.parse()?,
            "--only" => o.serve = vec![value()?],
            other => return Err(bench::unknown_argument(other, USAGE)),
        }
    }
    Ok(o)
}

/// Starts the server on a plugin directory and waits until it is ready; returns it and how long that took.
fn start_host(o: &Options, plugin_dir: &Path, data_dir: &Path, cache_dir: &Path) -> anyhow::Result<(Host, Duration)> {
    let mut command = Command::new(&o.server);
    command
        .args(["serve", "--secure-port", "0", "--plugin-dir"])
        .arg(plugin_dir)
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--plugin-cache-dir")
        .arg(cache_dir)
        .args(["--evict-idle-after", &format!("{}s", o.idle)]);
    Host::start(command)
}

/// Creates tenant `t`'s directory with the plugins linked in.
fn add_tenant(serve: &[String], plugin_dir: &Path, artifacts: &Path, t: usize) -> anyhow::Result<()> {
    let dir = plugin_dir.join(format!("t{t}"));
    std::fs::create_dir_all(&dir)?;
    for p in serve {
        std::os::unix::fs::symlink(artifacts.join(format!("{p}.wasm")), dir.join(format!("{p}.wasm")))?;
    }
    Ok(())
}

/// Removes the `n` tenants' directories and waits until the host no longer serves them.
fn remove_tenants(c: &reqwest::blocking::Client, base: &str, plugin_dir: &Path, n: usize) -> anyhow::Result<()> {
    for t in 0..n {
        std::fs::remove_dir_all(plugin_dir.join(format!("t{t}")))?;
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while get(c, &format!("{base}/tenants/t{}/apis", n - 1)).is_ok() {
        if Instant::now() > deadline {
            bail!("the tenants were still served 120 s after their directories were removed");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    Ok(())
}

fn post(c: &reqwest::blocking::Client, url: &str, body: &serde_json::Value) -> anyhow::Result<()> {
    let r = c.post(url).json(body).send()?;
    if r.status().as_u16() != 201 {
        bail!("POST {url} answered {}: {}", r.status(), r.text().unwrap_or_default());
    }
    Ok(())
}

fn get(c: &reqwest::blocking::Client, url: &str) -> anyhow::Result<()> {
    let r = c.get(url).send()?;
    if !r.status().is_success() {
        bail!("GET {url} answered {}", r.status());
    }
    let _ = r.bytes()?;
    Ok(())
}

fn flunders(base: &str, t: usize) -> String {
    format!("{base}/tenants/t{t}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders")
}

/// Ten objects in tenant `t`: four flunders, three books, three tasks (ten flunders when it serves wardle alone).
fn populate(c: &reqwest::blocking::Client, base: &str, t: usize, wardle_only: bool) -> anyhow::Result<()> {
    for i in 0..if wardle_only { 10 } else { 4 } {
        let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": format!("f{i}")}, "spec": {"reference": "r"}});
        post(c, &flunders(base, t), &body)?;
    }
    for i in 0..if wardle_only { 0 } else { 3 } {
        let body = json!({"apiVersion": "books.example.com/v1", "kind": "Book",
            "metadata": {"name": format!("b{i}")}, "spec": {"title": "A title", "pages": 10}});
        post(
            c,
            &format!("{base}/tenants/t{t}/apis/books.example.com/v1/namespaces/default/books"),
            &body,
        )?;
        let body = json!({"apiVersion": "tasks.example.com/v1", "kind": "Task",
            "metadata": {"name": format!("k{i}")}, "spec": {"title": "A task"}});
        post(
            c,
            &format!("{base}/tenants/t{t}/apis/tasks.example.com/v1/namespaces/default/tasks"),
            &body,
        )?;
    }
    Ok(())
}

/// GET p99 of one flunder of tenant `t`, in µs, over `n` requests at concurrency 4.
fn get_p99(base: &str, t: usize, n: usize) -> anyhow::Result<f64> {
    let url = format!("{}/f0", flunders(base, t));
    Ok(bench::run(base, 4, n, move |c, _| get(c, &url))?[2])
}

fn percentile(mut v: Vec<f64>, p: usize) -> f64 {
    v.sort_by(f64::total_cmp);
    v[(v.len() * p / 100).min(v.len() - 1)]
}

/// The command line, for `--help` and errors.
const USAGE: &str =
    "usage: density-bench [--server PATH] [--plugins DIR] [--tenants N] [--idle SECONDS] [--smaps FILE] [--cycles N] [--only PLUGIN]";

fn main() -> anyhow::Result<()> {
    let o = options()?;
    let n = o.tenants;
    let work = tempfile::tempdir()?;
    let artifacts = work.path().join("artifacts");
    std::fs::create_dir_all(&artifacts)?;
    for p in &o.serve {
        std::fs::copy(o.plugins.join(format!("{p}.wasm")), artifacts.join(format!("{p}.wasm")))
            .with_context(|| format!("copying {p}.wasm (run scripts/build-plugins.sh)"))?;
    }
    let cache_dir = work.path().join("plugin-cache");
    let row = |what: &str, value: String| println!("| {what} | {value} |");
    let wardle_only = o.serve.len() == 1;
    println!("| measure ({n} tenants × {}) | value |", o.serve.join(" + "));
    println!("|---|---|");

    // A host with no tenant: the baseline; then one tenant (which also warms the compile cache).
    let empty_dir = work.path().join("empty");
    std::fs::create_dir_all(&empty_dir)?;
    let (empty, _) = start_host(&o, &empty_dir, &work.path().join("data-empty"), &cache_dir)?;
    let rss_empty = empty.settled_rss(Duration::from_secs(2), Duration::from_secs(10));
    drop(empty);
    let one_dir = work.path().join("one");
    add_tenant(&o.serve, &one_dir, &artifacts, 0)?;
    let (one, _) = start_host(&o, &one_dir, &work.path().join("data-one"), &cache_dir)?;
    let c = reqwest::blocking::Client::new();
    populate(&c, &one.base, 0, wardle_only)?;
    std::thread::sleep(Duration::from_secs(o.idle + 2));
    let rss_one_idle = one.settled_rss(Duration::from_secs(3), Duration::from_secs(o.idle * 3));
    // The one-tenant host stays up, idle, for the GET latency comparison below.
    row("RSS, no tenant (MiB)", format!("{rss_empty:.1}"));
    row("RSS, one tenant idle (MiB)", format!("{rss_one_idle:.1}"));

    // N tenants.
    let plugin_dir = work.path().join("plugins");
    for t in 0..n {
        add_tenant(&o.serve, &plugin_dir, &artifacts, t)?;
    }
    let (mut host, start) = start_host(&o, &plugin_dir, &work.path().join("data"), &cache_dir)?;
    row(
        "start to ready, compile cache warm (s)",
        format!("{:.2}", start.as_secs_f64()),
    );
    let rss_ready = host.rss_mib();
    row("RSS when ready (MiB)", format!("{rss_ready:.1}"));
    row(
        "RSS per tenant when ready (KiB)",
        format!("{:.0}", (rss_ready - rss_empty) * 1024.0 / n as f64),
    );

    // The first requests to cold tenants: a sample spread over the tenants.
    let sample: Vec<usize> = (0..n).step_by((n / 20).max(1)).collect();
    let (mut first_list, mut first_create) = (Vec::new(), Vec::new());
    for &t in &sample {
        let started = Instant::now();
        get(&c, &flunders(&host.base, t))?;
        first_list.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": "first"}, "spec": {"reference": "r"}});
        post(&c, &flunders(&host.base, t), &body)?;
        first_create.push(started.elapsed().as_secs_f64() * 1e3);
    }
    row(
        &format!("first LIST of a cold tenant, p50 / max of {} (ms)", sample.len()),
        format!(
            "{:.1} / {:.1}",
            percentile(first_list.clone(), 50),
            percentile(first_list, 100)
        ),
    );
    row(
        &format!("first create in a cold tenant, p50 / max of {} (ms)", sample.len()),
        format!(
            "{:.1} / {:.1}",
            percentile(first_create.clone(), 50),
            percentile(first_create, 100)
        ),
    );

    let started = Instant::now();
    let base = host.base.clone();
    bench::run(&host.base, 4, n, move |c, t| populate(c, &base, t, wardle_only))?;
    row(
        "10 objects in every tenant (s)",
        format!(
            "{:.1} ({:.0} creates/s)",
            started.elapsed().as_secs_f64(),
            (10 * n) as f64 / started.elapsed().as_secs_f64()
        ),
    );
    let rss_loaded = host.rss_mib();
    row("RSS after the creates (MiB)", format!("{rss_loaded:.1}"));

    std::thread::sleep(Duration::from_secs(o.idle + 2));
    let rss_idle = host.settled_rss(Duration::from_secs(5), Duration::from_secs(o.idle * 6));
    row("RSS when idle again (MiB)", format!("{rss_idle:.1}"));
    row(
        "idle RSS per tenant (KiB), over the one-tenant host",
        format!("{:.0}", (rss_idle - rss_one_idle) * 1024.0 / (n - 1).max(1) as f64),
    );

    // One tenant active while the others are idle, next to the one-tenant host: rounds of each in turn, their
    // medians compared (on two shared cores one p99 of a few thousand GETs moves by half from run to run).
    get_p99(&one.base, 0, 500)?;
    get_p99(&host.base, n / 2, 500)?;
    let (mut many, mut single) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        single.push(get_p99(&one.base, 0, 2000)?);
        many.push(get_p99(&host.base, n / 2, 2000)?);
    }
    drop(one);
    let (p99, p99_one) = (percentile(many, 50), percentile(single, 50));
    row(
        "active tenant GET p99, the others idle, vs one tenant on the host (µs; medians of 5 rounds in turn)",
        format!("{p99:.0} vs {p99_one:.0} ({:.2}×)", p99 / p99_one),
    );

    // Remove every tenant directory: their memory comes back.
    remove_tenants(&c, &host.base, &plugin_dir, n)?;
    let rss_removed = host.settled_rss(Duration::from_secs(5), Duration::from_secs(60));
    row(
        "RSS after removing every tenant, vs the host with none (MiB)",
        format!("{rss_removed:.1} vs {rss_empty:.1} ({:.2}×)", rss_removed / rss_empty),
    );
    let metrics = c.get(format!("{}/metrics", host.base)).send()?.text()?;
    let registries = metrics
        .lines()
        .find_map(|l| l.strip_prefix("wasm_apiserver_registries "))
        .unwrap_or("?")
        .to_string();
    row(
        "registries in memory after the removal (the default tenant's is 1)",
        registries,
    );
    for cycle in 1..=o.cycles {
        for t in 0..n {
            add_tenant(&o.serve, &plugin_dir, &artifacts, t)?;
        }
        let deadline = Instant::now() + Duration::from_secs(120);
        while get(&c, &format!("{}/tenants/t{}/apis", host.base, n - 1)).is_err() {
            if Instant::now() > deadline {
                bail!("the tenants were not served again within 120 s");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        // Each tenant used again: a list, and a create calling its plugin.
        let base = host.base.clone();
        bench::run(&host.base, 4, n, move |c, t| {
            // A tenant is served as soon as its directory is seen; its plugins load right after: wait for them.
            let deadline = Instant::now() + Duration::from_secs(60);
            while let Err(e) = get(c, &flunders(&base, t)) {
                if Instant::now() > deadline {
                    return Err(e);
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                "metadata": {"name": format!("cycle-{cycle}")}, "spec": {"reference": "r"}});
            post(c, &flunders(&base, t), &body)
        })?;
        let rss_used = host.rss_mib();
        remove_tenants(&c, &host.base, &plugin_dir, n)?;
        let rss = host.settled_rss(Duration::from_secs(5), Duration::from_secs(60));
        row(
            &format!("cycle {cycle}: RSS with the tenants used again, then after removing them (MiB)"),
            format!("{rss_used:.1}, then {rss:.1}"),
        );
    }
    if let Some(to) = &o.smaps {
        std::fs::copy(format!("/proc/{}/smaps", host.child.id()), to)
            .with_context(|| format!("copying the host's smaps to {}", to.display()))?;
        // And its threads by name, next to it: their stacks are part of what stays.
        let mut names = std::collections::BTreeMap::<String, usize>::new();
        for task in std::fs::read_dir(format!("/proc/{}/task", host.child.id()))? {
            let comm = std::fs::read_to_string(task?.path().join("comm")).unwrap_or_default();
            *names.entry(comm.trim().to_string()).or_default() += 1;
        }
        let threads: String = names.iter().map(|(name, n)| format!("{n} {name}\n")).collect();
        let mut threads_file = to.clone().into_os_string();
        threads_file.push(".threads");
        std::fs::write(&threads_file, threads)?;
        // A graceful stop, so that a host run with MIMALLOC_SHOW_STATS=1 prints the allocator's statistics.
        let _ = Command::new("kill")
            .args(["-TERM", &host.child.id().to_string()])
            .status();
        let _ = host.child.wait();
    }
    drop(host);

    // A restart of the host with the N tenants and their data (their default objects already stored).
    for t in 0..n {
        add_tenant(&o.serve, &plugin_dir, &artifacts, t)?;
    }
    let (host, restart) = start_host(&o, &plugin_dir, &work.path().join("data"), &cache_dir)?;
    row(
        "restart to ready, data and compile cache there (s)",
        format!("{:.2}", restart.as_secs_f64()),
    );
    let rss = host.settled_rss(Duration::from_secs(3), Duration::from_secs(20));
    row(
        "RSS after the restart, no tenant used yet (MiB; per tenant KiB)",
        format!("{rss:.1}; {:.0}", (rss - rss_empty) * 1024.0 / n as f64),
    );
    Ok(())
}
