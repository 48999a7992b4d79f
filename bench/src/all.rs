//! Every benchmark in one run: each ratio next to its baseline, measured on the same machine one after
//! the other, printed as one Markdown report (and appended to a file with `--out`, e.g. BENCHMARKS.md).
//!
//! In order: `http-bench` (lists and GETs against a plain hyper server returning the same bytes),
//! `initial-events-bench` (the initial events of a watch over 10,000 objects, against the same bytes), `etcd-bench`
//! (creates against raw etcd puts and etcd's own create ceiling), `kube-bench` (kube-apiserver 1.37 side by side on
//! one etcd), `watch-bench` (the watch fan-out), `noisy-bench` (a plugin flooding its deadline next to another
//! tenant), and the memory figures measured here: idle RSS of the host alone and with the four example plugins, and
//! the peak RSS of compiling each plugin (`plugin compile`, the compile child process). `density-bench` (1,000
//! tenants, ~6 minutes) runs with `--density N`.
//!
//! Usage: `bench-all [--server PATH] [--plugins DIR] [--requests N] [--skip NAME,...] [--density TENANTS]
//! [--out FILE]` (defaults: target/release/wasm-apiserver, target/plugins, 2000). The other benchmark binaries are
//! taken from the directory of this one (build them with `cargo build --release -p bench`).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

struct Options {
    server: PathBuf,
    plugins: PathBuf,
    requests: usize,
    skip: Vec<String>,
    density: Option<usize>,
    out: Option<PathBuf>,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        server: PathBuf::from("target/release/wasm-apiserver"),
        plugins: PathBuf::from("target/plugins"),
        requests: 2000,
        skip: Vec::new(),
        density: None,
        out: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--server" => o.server = value()?.into(),
            "--plugins" => o.plugins = value()?.into(),
            "--requests" => o.requests = value()?.parse()?,
            "--skip" => o.skip = value()?.split(',').map(str::to_owned).collect(),
            "--density" => o.density = Some(value()?.parse()?),
            "--out" => o.out = Some(value()?.into()),
            other => return Err(bench::unknown_argument(other, USAGE)),
        }
    }
    Ok(o)
}

/// Runs one benchmark binary (a sibling of this one), its table going into the report.
fn run_bench(report: &mut String, title: &str, binary: &str, args: &[String]) -> anyhow::Result<()> {
    let exe = std::env::current_exe()?;
    let path = exe.parent().context("no directory")?.join(binary);
    eprintln!("bench-all: {binary} {}", args.join(" "));
    let started = Instant::now();
    report.push_str(&format!(
        "### {title}\n\n```sh\ntarget/release/{binary} {}\n```\n\n",
        args.join(" ")
    ));
    let output = match Command::new(&path).args(args).stderr(Stdio::inherit()).output() {
        Ok(output) => output,
        Err(e) => {
            report.push_str(&format!(
                "**not run: {}: {e}** (cargo build --release -p bench)\n\n",
                path.display()
            ));
            return Ok(());
        }
    };
    report.push_str(&String::from_utf8_lossy(&output.stdout));
    if !output.status.success() {
        report.push_str(&format!("\n**{binary} failed: {}**\n", output.status));
    }
    report.push_str(&format!("\n({binary}: {:.0} s)\n\n", started.elapsed().as_secs_f64()));
    Ok(())
}

/// VmRSS, RssAnon and RssFile of a process, in MiB.
fn rss(pid: u32) -> (f64, f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
            .map_or(0.0, |kib| kib / 1024.0)
    };
    (field("VmRSS:"), field("RssAnon:"), field("RssFile:"))
}

/// The highest resident memory of any child this process has waited for, in MiB (`getrusage(RUSAGE_CHILDREN)`).
fn children_peak_mib() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage);
        usage
    };
    usage.ru_maxrss as f64 / 1024.0
}

/// The memory figures: compile peaks, then idle RSS of the host alone and with the four example plugins.
fn memory(o: &Options, report: &mut String) -> anyhow::Result<()> {
    eprintln!("bench-all: memory");
    let work = tempfile::tempdir()?;
    let cache = work.path().join("cache");
    report.push_str("### Memory\n\n");
    report.push_str(
        "| compile (one `plugin compile` child each) | wasm (MB) | peak RSS (MiB) | time (s) |\n|---|---|---|---|\n",
    );
    // Smallest first: see the note under the table. The Go and C examples are built only where their toolchains are.
    const PLUGINS: [&str; 4] = ["partial", "wardle", "tasks", "books"];
    const COMPILED: [&str; 7] = [
        "partial",
        "widgets-c",
        "wardle",
        "greetings-go",
        "wardle-go",
        "tasks",
        "books",
    ];
    for p in COMPILED {
        let wasm = o.plugins.join(format!("{p}.wasm"));
        if (p.ends_with("-go") || p.ends_with("-c")) && !wasm.exists() {
            report.push_str(&format!("| {p} | (not built: no toolchain) | | |\n"));
            continue;
        }
        let bytes =
            std::fs::read(&wasm).with_context(|| format!("reading {} (scripts/build-plugins.sh)", wasm.display()))?;
        let started = Instant::now();
        // In a process of its own, whose only child is the compile: getrusage(RUSAGE_CHILDREN) then gives its peak.
        let out = Command::new(std::env::current_exe()?)
            .arg("--compile-peak")
            .arg(&o.server)
            .arg(&wasm)
            .arg(work.path().join(format!("{p}.cwasm")))
            .output()?;
        if !out.status.success() {
            bail!("compiling {p} failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let peak: f64 = String::from_utf8_lossy(&out.stdout).trim().parse()?;
        report.push_str(&format!(
            "| {p} | {:.1} | {peak:.0} | {:.1} |\n",
            bytes.len() as f64 / 1e6,
            started.elapsed().as_secs_f64()
        ));
    }
    report.push('\n');

    let cache = cache.display().to_string();
    let flags = [
        "--plugin-cache-dir",
        cache.as_str(),
        "--evict-idle-after",
        "5s",
        "--secure-port",
        "0",
    ];
    // A first start fills the compile cache with the optimized builds (without the baseline tier, which would serve
    // Winch's builds and leave Cranelift's to a background compile this start does not wait for); the figures come
    // from a second one, which loads them.
    let mut warm_up = flags.to_vec();
    warm_up.push("--plugin-baseline-tier=false");
    drop(bench::start_with(&o.server, &o.plugins, &PLUGINS, &warm_up)?);
    let alone = bench::start_with(&o.server, &o.plugins, &[], &flags)?;
    let with_four = bench::start_with(&o.server, &o.plugins, &PLUGINS, &flags)?;
    let ready = rss(with_four.pid());
    let client = reqwest::blocking::Client::new();
    for (path, body) in [
        (
            "/apis/books.example.com/v1/namespaces/default/books",
            serde_json::json!({"apiVersion": "books.example.com/v1", "kind": "Book",
                "metadata": {"name": "b"}, "spec": {"title": "A title", "pages": 10}}),
        ),
        (
            "/apis/tasks.example.com/v1/namespaces/default/tasks",
            serde_json::json!({"apiVersion": "tasks.example.com/v1", "kind": "Task",
                "metadata": {"name": "k"}, "spec": {"title": "A task"}}),
        ),
    ] {
        let r = client.post(format!("{}{path}", with_four.base)).json(&body).send()?;
        if r.status().as_u16() != 201 {
            bail!("POST {path}: {}", r.status());
        }
    }
    let used = rss(with_four.pid());
    std::thread::sleep(Duration::from_secs(20));
    let idle = rss(with_four.pid());
    let host = rss(alone.pid());
    let row = |what: &str, (total, anon, file): (f64, f64, f64), target: &str| {
        format!("| {what} | {total:.1} / {anon:.1} / {file:.1} | {target} |\n")
    };
    report.push_str("| RSS (MiB): total / anonymous / file-backed | value | target |\n|---|---|---|\n");
    report.push_str(&row("four example plugins, when ready", ready, ""));
    report.push_str(&row("after a create in books and tasks", used, ""));
    report.push_str(&row("idle 20 s later (`--evict-idle-after 5s`)", idle, "≤ 40"));
    report.push_str(&row("host alone, idle", host, "≤ 20"));
    report.push('\n');
    drop((alone, with_four));

    // The server's growth with and without the watch cache: the difference is the cache's own (its objects and
    // event history), apart from what grows either way (the store's page cache, the conversion memo, the allocator).
    report.push_str(
        "| watch cache under 10,000 creates (a watch open) | server RSS growth (MiB) | the same without the watch \
         cache | the cache's own (difference) | stored JSON (MiB) | the cache's own ÷ JSON | target |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for version in ["v1alpha1", "v1beta1"] {
        let (growth, json) = cache_growth(o, version, 10_000, &[])?;
        let (uncached, _) = cache_growth(o, version, 10_000, &["--watch-cache=false"])?;
        let own = growth - uncached;
        report.push_str(&format!(
            "| created in {version}{} | {growth:.1} | {uncached:.1} | {own:.1} | {json:.1} | {:.2}× | ≤ 1.5× |\n",
            if version == "v1alpha1" {
                " (the storage version)"
            } else {
                ""
            },
            own / json
        ));
    }
    report.push('\n');
    Ok(())
}

/// The server's RSS growth over `n` flunder creates in `version`, with a watch keeping the cache, and the size of the
/// objects' JSON as listed in the storage version: (growth, JSON), in MiB. `flags` go to the server.
fn cache_growth(o: &Options, version: &str, n: usize, flags: &[&str]) -> anyhow::Result<(f64, f64)> {
    let server = bench::start(&o.server, &o.plugins, flags)?;
    let flunders = format!(
        "{}/apis/wardle.example.com/{version}/namespaces/default/flunders",
        server.base
    );
    let client = reqwest::blocking::Client::new();
    // One object first, so the cache and the plugin's instances exist before the baseline.
    let api_version = format!("wardle.example.com/{version}");
    let body = move |i: usize| {
        serde_json::json!({"apiVersion": api_version.clone(), "kind": "Flunder",
            "metadata": {"name": format!("f{i}"), "labels": {"bench": "cache"}}, "spec": {"reference": format!("r{i}")}})
    };
    let r = client.post(&flunders).json(&body(n)).send()?;
    if r.status().as_u16() != 201 {
        bail!("POST {flunders}: {}", r.status());
    }
    let watch = client.get(format!("{flunders}?watch=true")).send()?;
    std::thread::sleep(Duration::from_secs(2));
    let before = rss(server.pid()).0;
    let url = flunders.clone();
    bench::run(&server.base, 8, n, move |c, i| {
        let r = c.post(&url).json(&body(i)).send()?;
        if r.status().as_u16() != 201 {
            bail!("POST {url}: {}", r.status());
        }
        Ok(())
    })?;
    std::thread::sleep(Duration::from_secs(2));
    let after = rss(server.pid()).0;
    let list: serde_json::Value = client
        .get(format!(
            "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
            server.base
        ))
        .send()?
        .json()?;
    let json: usize = list["items"]
        .as_array()
        .context("items")?
        .iter()
        .map(|item| serde_json::to_vec(item).map_or(0, |v| v.len()))
        .sum();
    drop(watch);
    Ok((after - before, json as f64 / (1 << 20) as f64))
}

/// `bench-all --compile-peak SERVER WASM OUT`: compiles WASM with `SERVER plugin compile` and prints the child's peak
/// RSS in MiB.
fn compile_peak(mut args: impl Iterator<Item = String>) -> anyhow::Result<()> {
    let (server, wasm, out) = (
        args.next().context("the server")?,
        args.next().context("the wasm")?,
        args.next().context("the output")?,
    );
    let bytes = std::fs::read(&wasm).with_context(|| format!("reading {wasm}"))?;
    let mut child = Command::new(server)
        .args(["plugin", "compile"])
        .args(["--wasm-bytes", &bytes.len().to_string(), "--out", &out])
        .stdin(Stdio::piped())
        .spawn()?;
    child.stdin.take().context("stdin")?.write_all(&bytes)?;
    let status = child.wait()?;
    if !status.success() {
        bail!("the compile failed: {status}");
    }
    println!("{:.1}", children_peak_mib());
    Ok(())
}

/// The command line, for `--help` and errors.
const USAGE: &str = "usage: bench-all [--server PATH] [--plugins DIR] [--requests N] [--skip NAME,...] [--density TENANTS] [--out FILE]";

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    if args.next().as_deref() == Some("--compile-peak") {
        return compile_peak(args);
    }
    let o = options()?;
    let started = Instant::now();
    let requests = o.requests.to_string();
    let common = |extra: &[&str]| -> Vec<String> {
        let mut args = vec![
            "--server".to_owned(),
            o.server.display().to_string(),
            "--plugins".to_owned(),
            o.plugins.display().to_string(),
            "--requests".to_owned(),
            requests.clone(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    };
    let date = String::from_utf8(
        Command::new("date")
            .args(["-u", "+%Y-%m-%d %H:%M UTC"])
            .output()?
            .stdout,
    )?;
    let revision = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .unwrap_or_default();
    let mut report = format!(
        "## bench-all, {} (revision {})\n\n```sh\ncargo build --release -p wasm-apiserver -p bench\ntarget/release/bench-all {}\n```\n\n",
        date.trim(),
        revision.trim(),
        std::env::args().skip(1).collect::<Vec<_>>().join(" ")
    );
    let skip = |name: &str| o.skip.iter().any(|s| s == name);
    let steps: [(&str, &str, &str, Vec<String>); 6] = [
        (
            "http",
            "Lists and GETs against a hyper server returning the same bytes",
            "http-bench",
            common(&[]),
        ),
        (
            "initial",
            "The initial events of a watch over 10,000 objects, against the same bytes",
            "initial-events-bench",
            vec![
                "--server".to_owned(),
                o.server.display().to_string(),
                "--plugins".to_owned(),
                o.plugins.display().to_string(),
            ],
        ),
        (
            "etcd",
            "Creates against raw etcd puts and etcd's create ceiling",
            "etcd-bench",
            common(&[]),
        ),
        (
            "kube",
            "kube-apiserver 1.37 side by side on one etcd",
            "kube-bench",
            common(&[]),
        ),
        (
            "watch",
            "Watch fan-out",
            "watch-bench",
            vec![
                "--server".to_owned(),
                o.server.display().to_string(),
                "--plugins".to_owned(),
                o.plugins.display().to_string(),
            ],
        ),
        ("noisy", "The noisy neighbour", "noisy-bench", common(&[])),
    ];
    print!("{report}");
    let mut printed = report.len();
    let mut flush = |report: &str| {
        print!("{}", &report[printed..]);
        let _ = std::io::stdout().flush();
        printed = report.len();
    };
    for (name, title, binary, args) in steps {
        if !skip(name) {
            run_bench(&mut report, title, binary, &args)?;
            flush(&report);
        }
    }
    if !skip("memory") {
        if let Err(e) = memory(&o, &mut report) {
            report.push_str(&format!("\n**the memory figures failed: {e:#}**\n\n"));
        }
        flush(&report);
    }
    if let Some(tenants) = o.density {
        run_bench(
            &mut report,
            "Density",
            "density-bench",
            &[
                "--server".into(),
                o.server.display().to_string(),
                "--plugins".into(),
                o.plugins.display().to_string(),
                "--tenants".into(),
                tenants.to_string(),
            ],
        )?;
        flush(&report);
    }
    report.push_str(&format!(
        "(bench-all: {:.0} s in all)\n\n",
        started.elapsed().as_secs_f64()
    ));
    flush(&report);
    if let Some(out) = &o.out {
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(out)
            .with_context(|| format!("opening {}", out.display()))?;
        file.write_all(format!("\n{report}").as_bytes())?;
    }
    Ok(())
}
