//! Snapshots of the embedded store: their time and size for a store of many objects.
//!
//! A release server with the wardle plugin on its embedded store is filled with `--objects` flunders (creates at
//! `--concurrency`), then:
//! - `snapshot save --kubeconfig` (online, `GET /snapshot`) while idle, and again while creates go on (their rate
//!   during the save against before it);
//! - `snapshot status` (reads the file and checks its digest) and `snapshot restore --data-dir NEW`;
//! - a server started on the restored directory: how soon it is ready, and that it lists every object the
//!   snapshot's revision held;
//! - `snapshot save --data-dir` of that directory once its server is stopped (offline).
//!
//! Each step is a `wasm-apiserver` command run as a user runs it; its wall time is measured around the process.
//!
//! Usage: `snapshot-bench [--server PATH] [--plugins DIR] [--objects N] [--concurrency C]` (defaults:
//! target/release/wasm-apiserver, target/plugins, 100000 objects, 32).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use bench::Host;

const USAGE: &str = "usage: snapshot-bench [--server PATH] [--plugins DIR] [--objects N] [--concurrency C]";

/// How many clients create during the save under load.
const LOAD_CLIENTS: usize = 4;

struct Options {
    server: PathBuf,
    plugins: PathBuf,
    objects: usize,
    concurrency: usize,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        server: PathBuf::from("target/release/wasm-apiserver"),
        plugins: PathBuf::from("target/plugins"),
        objects: 100_000,
        concurrency: 32,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--server" => o.server = value()?.into(),
            "--plugins" => o.plugins = value()?.into(),
            "--objects" => o.objects = value()?.parse()?,
            "--concurrency" => o.concurrency = value()?.parse()?,
            other => return Err(bench::unknown_argument(other, USAGE)),
        }
    }
    Ok(o)
}

const FLUNDERS: &str = "/apis/wardle.example.com/v1alpha1/namespaces/default/flunders";

/// `wasm-apiserver serve` on `data_dir` with the plugins of `plugin_dir`.
fn serve(o: &Options, plugin_dir: &Path, data_dir: &Path) -> anyhow::Result<(Host, Duration)> {
    let mut command = Command::new(&o.server);
    command
        .args(["serve", "--plugin-dir"])
        .arg(plugin_dir)
        .arg("--data-dir")
        .arg(data_dir);
    Host::start(command)
}

/// Runs `wasm-apiserver ARGS`, failing with its output when it fails; returns its standard output and wall time.
fn command(o: &Options, args: &[&str]) -> anyhow::Result<(String, Duration)> {
    let started = Instant::now();
    let output = Command::new(&o.server)
        .args(args)
        .output()
        .with_context(|| format!("running {} {}", o.server.display(), args.join(" ")))?;
    let took = started.elapsed();
    if !output.status.success() {
        bail!(
            "{} {} failed: {}{}",
            o.server.display(),
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok((String::from_utf8_lossy(&output.stdout).into_owned(), took))
}

/// A field of `snapshot status`'s output (`revision  12` → "12").
fn field<'a>(status: &'a str, name: &str) -> &'a str {
    status
        .lines()
        .find_map(|l| l.split_once(char::is_whitespace).filter(|(n, _)| *n == name))
        .map_or("?", |(_, value)| value.trim())
}

/// The number of flunders a server lists (one consistent list).
fn count(base: &str) -> anyhow::Result<usize> {
    let list: serde_json::Value = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(300))
        .build()?
        .get(format!("{base}{FLUNDERS}"))
        .send()?
        .json()?;
    list["items"].as_array().map(Vec::len).context("a list without items")
}

/// Runs `f` while sampling the resident memory of process `pid` every 5 ms; returns `f`'s result and the highest
/// sample, MiB.
fn peak_rss<T>(pid: u32, f: impl FnOnce() -> T) -> (T, f64) {
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut peak = bench::rss_mib(pid);
            while !stop.load(Ordering::Relaxed) {
                peak = peak.max(bench::rss_mib(pid));
                std::thread::sleep(Duration::from_millis(5));
            }
            peak
        })
    };
    let result = f();
    stop.store(true, Ordering::Relaxed);
    (result, sampler.join().unwrap_or(0.0))
}

/// Creates from `LOAD_CLIENTS` clients until `stop`; returns how many were created.
fn load(base: &str, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<anyhow::Result<usize>> {
    let url = format!("{base}{FLUNDERS}");
    std::thread::spawn(move || {
        let next = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..LOAD_CLIENTS)
            .map(|_| {
                let (url, stop, next) = (url.clone(), stop.clone(), next.clone());
                std::thread::spawn(move || -> anyhow::Result<()> {
                    let create = bench::create_each(url);
                    let client = reqwest::blocking::Client::new();
                    while !stop.load(Ordering::Relaxed) {
                        // Names apart from the filling's f<i>.
                        create(&client, 10_000_000 + next.fetch_add(1, Ordering::Relaxed))?;
                    }
                    Ok(())
                })
            })
            .collect();
        for worker in workers {
            worker.join().map_err(|_| anyhow::anyhow!("a load client panicked"))??;
        }
        Ok(next.load(Ordering::Relaxed))
    })
}

fn main() -> anyhow::Result<()> {
    let o = options()?;
    let plugin_dir = tempfile::tempdir()?;
    std::fs::copy(o.plugins.join("wardle.wasm"), plugin_dir.path().join("wardle.wasm"))
        .context("copying wardle.wasm (run scripts/build-plugins.sh)")?;
    let work = tempfile::tempdir()?;
    let data_dir = work.path().join("data");
    let (host, _) = serve(&o, plugin_dir.path(), &data_dir)?;
    let kubeconfig = work.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: c, cluster: {{server: '{}'}}}}]\n\
             users: [{{name: u, user: {{}}}}]\ncontexts: [{{name: x, context: {{cluster: c, user: u}}}}]\n\
             current-context: x\n",
            host.base
        ),
    )?;

    let fill = bench::run(
        &host.base,
        o.concurrency,
        o.objects,
        bench::create_each(format!("{}{FLUNDERS}", host.base)),
    )?;
    println!(
        "filled: {} flunders in {:.1} s ({:.0} creates/s at concurrency {})",
        o.objects,
        o.objects as f64 / fill[0],
        fill[0],
        o.concurrency
    );
    let store_bytes = dir_bytes(&data_dir.join("store"));
    let rss_before = host.rss_mib();

    println!();
    println!("| step | wall time | file bytes | revision | keys | server RSS, peak during the step (MiB) |");
    println!("|---|---|---|---|---|---|");
    let idle_file = work.path().join("idle.snapshot");
    let idle_file_str = idle_file.to_string_lossy().into_owned();
    let kubeconfig_str = kubeconfig.to_string_lossy().into_owned();
    let pid = host.child.id();
    let (saved, idle_peak) = peak_rss(pid, || {
        command(
            &o,
            &["snapshot", "save", &idle_file_str, "--kubeconfig", &kubeconfig_str],
        )
    });
    let (_, idle) = saved?;
    let (status, status_time) = command(&o, &["snapshot", "status", &idle_file_str])?;
    let file_bytes = std::fs::metadata(&idle_file)?.len();
    println!(
        "| save, online, idle | {} | {file_bytes} | {} | {} | {idle_peak:.0} (before: {rss_before:.0}) |",
        ms(idle),
        field(&status, "revision"),
        field(&status, "keys"),
    );

    // The same save while creates go on: the creates' rate during the save against their rate just before it.
    let stop = Arc::new(AtomicBool::new(false));
    let loader = load(&host.base, stop.clone());
    std::thread::sleep(Duration::from_secs(2));
    let created = |base: &str| -> anyhow::Result<f64> {
        let text = reqwest::blocking::get(format!("{base}/metrics"))?.text()?;
        Ok(text
            .lines()
            .filter(|l| {
                l.starts_with("apiserver_request_total{")
                    && l.contains("verb=\"POST\"")
                    && l.contains("resource=\"flunders\"")
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum())
    };
    let (before_count, before_at) = (created(&host.base)?, Instant::now());
    std::thread::sleep(Duration::from_secs(3));
    let before_rate = (created(&host.base)? - before_count) / before_at.elapsed().as_secs_f64();
    let loaded_file = work.path().join("loaded.snapshot");
    let loaded_file_str = loaded_file.to_string_lossy().into_owned();
    let (during_count, during_at) = (created(&host.base)?, Instant::now());
    let (saved, loaded_peak) = peak_rss(pid, || {
        command(
            &o,
            &["snapshot", "save", &loaded_file_str, "--kubeconfig", &kubeconfig_str],
        )
    });
    let (_, loaded) = saved?;
    let during_rate = (created(&host.base)? - during_count) / during_at.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    let load_creates = loader.join().map_err(|_| anyhow::anyhow!("the load panicked"))??;
    let (loaded_status, _) = command(&o, &["snapshot", "status", &loaded_file_str])?;
    println!(
        "| save, online, under {LOAD_CLIENTS} creating clients | {} | {} | {} | {} | {loaded_peak:.0} |",
        ms(loaded),
        std::fs::metadata(&loaded_file)?.len(),
        field(&loaded_status, "revision"),
        field(&loaded_status, "keys"),
    );
    println!("| status (read, digest checked) | {} | | | | |", ms(status_time));

    let restored = work.path().join("restored");
    let restored_str = restored.to_string_lossy().into_owned();
    let (_, restore_time) = command(
        &o,
        &["snapshot", "restore", &loaded_file_str, "--data-dir", &restored_str],
    )?;
    println!(
        "| restore into a new data directory | {} | store: {} | | | |",
        ms(restore_time),
        dir_bytes(&restored.join("store"))
    );
    drop(host);

    let (restored_host, ready) = serve(&o, plugin_dir.path(), &restored)?;
    let listed = count(&restored_host.base)?;
    println!(
        "| a server on the restored directory, ready | {} | | | listed: {listed} flunders | {:.0} (after the list) |",
        ms(ready),
        restored_host.rss_mib()
    );
    drop(restored_host);
    let offline_file = work.path().join("offline.snapshot");
    let offline_file_str = offline_file.to_string_lossy().into_owned();
    let (offline_status, offline) = command(
        &o,
        &["snapshot", "save", &offline_file_str, "--data-dir", &restored_str],
    )?;
    println!(
        "| save, offline (--data-dir) | {} | {} | {} | {} | |",
        ms(offline),
        std::fs::metadata(&offline_file)?.len(),
        field(&offline_status, "revision"),
        field(&offline_status, "keys")
    );
    println!();
    println!(
        "the store's files: {store_bytes} bytes after the filling; creates/s before the loaded save {before_rate:.0}, \
         during it {during_rate:.0} ({load_creates} created by the load)"
    );
    // The keys that are not flunders (namespaces, RBAC, the priority and fairness objects) are those of the idle
    // snapshot beside its flunders, the filling's: the loaded snapshot's other keys are its flunders.
    let keys = |status: &str| field(status, "keys").parse::<usize>().unwrap_or(0);
    let others = keys(&status).saturating_sub(o.objects);
    let expected = keys(&loaded_status).saturating_sub(others);
    if listed != expected {
        bail!("the restored server lists {listed} flunders, not the {expected} of the snapshot's revision");
    }
    Ok(())
}

/// A duration in ms, or s above 10 s.
fn ms(d: Duration) -> String {
    if d > Duration::from_secs(10) {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{:.0} ms", d.as_secs_f64() * 1000.0)
    }
}

/// The bytes of the files directly in `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}
