//! Shared pieces of the HTTP benchmarks: starting a server, running a load, reading plugin metrics.

pub mod etcd;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// The command line shared by the HTTP benchmarks: `[--server PATH] [--plugins DIR] [--requests N]
/// [--concurrency N,N,...] [--etcd-cpus LIST] [--server-arg ARG]...`.
pub struct Args {
    /// The server binary (default `target/release/wasm-apiserver`).
    pub server: PathBuf,
    /// The built plugins (default `target/plugins`).
    pub plugins: PathBuf,
    /// Requests per row (default 2000).
    pub requests: usize,
    /// The concurrency levels, one row each (default 1, 8, 32).
    pub concurrency: Vec<usize>,
    /// The CPUs etcd runs on (a `taskset -c` list), for the etcd benchmark; default: not pinned.
    pub etcd_cpus: Option<String>,
    /// Extra `serve` flags for the server, one argument each (`--server-arg --tracing-config-file --server-arg F`).
    pub server_args: Vec<String>,
}

impl Args {
    /// Parses the process's arguments.
    pub fn parse() -> anyhow::Result<Args> {
        let mut args = std::env::args();
        let program = args.next().unwrap_or_default();
        let program = Path::new(&program)
            .file_name()
            .map_or("bench".into(), |n| n.to_string_lossy());
        let usage = format!(
            "usage: {program} [--server PATH] [--plugins DIR] [--requests N] [--concurrency N,N,...] [--etcd-cpus LIST] [--server-arg ARG]..."
        );
        let mut parsed = Args {
            server: PathBuf::from("target/release/wasm-apiserver"),
            plugins: PathBuf::from("target/plugins"),
            requests: 2000,
            concurrency: vec![1, 8, 32],
            etcd_cpus: None,
            server_args: Vec::new(),
        };
        while let Some(a) = args.next() {
            match a.as_str() {
                "--server" => parsed.server = args.next().context("--server needs a path")?.into(),
                "--plugins" => parsed.plugins = args.next().context("--plugins needs a dir")?.into(),
                "--requests" => parsed.requests = args.next().context("--requests needs a number")?.parse()?,
                "--etcd-cpus" => parsed.etcd_cpus = Some(args.next().context("--etcd-cpus needs a CPU list")?),
                "--server-arg" => parsed
                    .server_args
                    .push(args.next().context("--server-arg needs an argument")?),
                "--concurrency" => {
                    let list = args.next().context("--concurrency needs numbers")?;
                    parsed.concurrency = list.split(',').map(str::parse).collect::<Result<_, _>>()?;
                }
                other => return Err(unknown_argument(other, &usage)),
            }
        }
        Ok(parsed)
    }
}

/// The error for an argument a benchmark does not know, with its usage; `--help` and `-h` print the usage and exit.
pub fn unknown_argument(arg: &str, usage: &str) -> anyhow::Error {
    if arg == "--help" || arg == "-h" {
        println!("{usage}");
        std::process::exit(0);
    }
    anyhow::anyhow!("unknown argument {arg}\n{usage}")
}

/// A server started for a benchmark, killed on drop.
pub struct Server {
    child: Child,
    /// The base URL.
    pub base: String,
    _dirs: (tempfile::TempDir, tempfile::TempDir),
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the server binary with the wardle plugin on a free port, with extra `serve` flags.
pub fn start(server: &Path, plugins: &Path, extra_args: &[&str]) -> anyhow::Result<Server> {
    start_with(server, plugins, &["wardle"], extra_args)
}

/// Starts the server binary on a free port with the plugins `layout` names (`wardle` in the plugin directory,
/// `t1/wardle` in tenant t1's), with extra `serve` flags.
pub fn start_with(server: &Path, plugins: &Path, layout: &[&str], extra_args: &[&str]) -> anyhow::Result<Server> {
    let plugin_dir = tempfile::tempdir()?;
    for entry in layout {
        let (dir, name) = match entry.rsplit_once('/') {
            Some((tenant, name)) => (plugin_dir.path().join(tenant), name),
            None => (plugin_dir.path().to_path_buf(), *entry),
        };
        std::fs::create_dir_all(&dir)?;
        std::fs::copy(plugins.join(format!("{name}.wasm")), dir.join(format!("{name}.wasm")))
            .with_context(|| format!("copying {name}.wasm (run scripts/build-plugins.sh)"))?;
    }
    let data_dir = tempfile::tempdir()?;
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let child = Command::new(server)
        .args(["serve", "--plugin-dir"])
        .arg(plugin_dir.path())
        .arg("--data-dir")
        .arg(data_dir.path())
        .args(["--insecure-port", &port.to_string()])
        .args(extra_args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {}", server.display()))?;
    let base = format!("http://127.0.0.1:{port}");
    // Long enough for a first start that compiles the Python and JavaScript guests (~20 s each, one at a time).
    wait_ready(&base, Duration::from_secs(600))?;
    Ok(Server {
        child,
        base,
        _dirs: (plugin_dir, data_dir),
    })
}

/// A server process a benchmark starts (and restarts) with its own flags, killed on drop.
pub struct Host {
    /// The process.
    pub child: Child,
    /// The base URL of its plain-HTTP development port.
    pub base: String,
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Host {
    /// Starts `command` (`wasm-apiserver serve` with the benchmark's flags) on a free `--insecure-port`, its logs at
    /// `warn` on the benchmark's standard error, and waits until it is ready; returns it and how long that took.
    pub fn start(mut command: Command) -> anyhow::Result<(Host, Duration)> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let started = Instant::now();
        let child = command
            .args(["--insecure-port", &port.to_string()])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("starting {}", command.get_program().to_string_lossy()))?;
        let host = Host {
            child,
            base: format!("http://127.0.0.1:{port}"),
        };
        wait_ready(&host.base, Duration::from_secs(600))?;
        Ok((host, started.elapsed()))
    }

    /// Resident memory, in MiB.
    pub fn rss_mib(&self) -> f64 {
        rss_mib(self.child.id())
    }

    /// Waits until RSS stops falling (no new low for `quiet`), up to `most`; returns it.
    pub fn settled_rss(&self, quiet: Duration, most: Duration) -> f64 {
        let deadline = Instant::now() + most;
        let mut low = self.rss_mib();
        let mut since = Instant::now();
        while Instant::now() < deadline && since.elapsed() < quiet {
            std::thread::sleep(Duration::from_millis(500));
            let now = self.rss_mib();
            if now < low - 0.5 {
                low = now;
                since = Instant::now();
            }
        }
        self.rss_mib()
    }
}

/// A field of a process's `/proc/<pid>/status` given in kB (`VmRSS:`, `RssAnon:`...), in MiB; 0 where it cannot be
/// read.
pub fn status_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

/// A process's resident memory (VmRSS), in MiB; 0 where it cannot be read.
pub fn rss_mib(pid: u32) -> f64 {
    status_mib(pid, "VmRSS:")
}

/// Waits until the server at `base` answers `/readyz`, up to `timeout`.
pub fn wait_ready(base: &str, timeout: Duration) -> anyhow::Result<()> {
    let client = reqwest::blocking::Client::new();
    let deadline = Instant::now() + timeout;
    while !client
        .get(format!("{base}/readyz"))
        .send()
        .is_ok_and(|r| r.status().is_success())
    {
        if Instant::now() > deadline {
            bail!("the server did not become ready within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

impl Server {
    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The CPU time the server process has used so far (user and system), from `/proc/<pid>/stat` (Linux; its
    /// clock ticks are USER_HZ, 100 per second). Zero where it cannot be read.
    pub fn cpu_time(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // The fields after the command name (in parentheses, which may hold spaces): utime and stime are the 12th
        // and 13th of them.
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let fields: Vec<u64> = rest
            .split_whitespace()
            .skip(11)
            .take(2)
            .filter_map(|f| f.parse().ok())
            .collect();
        Duration::from_millis(fields.iter().sum::<u64>() * 10)
    }

    /// The server's data directory (its PKI is under `pki/`).
    pub fn data_dir(&self) -> &std::path::Path {
        self._dirs.1.path()
    }
}

/// The wardle plugin's (calls, seconds inside calls) from `/metrics`.
pub fn plugin_stats(base: &str) -> anyhow::Result<(f64, f64)> {
    let text = reqwest::blocking::get(format!("{base}/metrics"))?.text()?;
    let value = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name) && l.contains("plugin=\"wardle\""))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    Ok((
        value("wasm_apiserver_plugin_calls_total"),
        value("wasm_apiserver_plugin_call_duration_seconds_sum"),
    ))
}

/// Runs `requests` requests over `concurrency` threads; returns (requests/s, p50 µs, p99 µs, plugin calls/request,
/// plugin µs/request).
pub fn run(
    base: &str,
    concurrency: usize,
    requests: usize,
    op: impl Fn(&reqwest::blocking::Client, usize) -> anyhow::Result<()> + Send + Sync + 'static,
) -> anyhow::Result<[f64; 5]> {
    run_with(base, concurrency, requests, reqwest::blocking::Client::new, op)
}

/// Like [`run`], each worker with a client made by `client` (such as an HTTPS client with a certificate).
pub fn run_with(
    base: &str,
    concurrency: usize,
    requests: usize,
    client: impl Fn() -> reqwest::blocking::Client + Send + Sync + 'static,
    op: impl Fn(&reqwest::blocking::Client, usize) -> anyhow::Result<()> + Send + Sync + 'static,
) -> anyhow::Result<[f64; 5]> {
    let mut measured = Measured::default();
    measured.add(base, concurrency, 0..requests, &Arc::new(client), &Arc::new(op))?;
    Ok(measured.row())
}

/// An operation of [`run`]: one request, given its index.
pub type Op = Arc<dyn Fn(&reqwest::blocking::Client, usize) -> anyhow::Result<()> + Send + Sync>;

/// Runs each of `ops` for `requests` requests over `concurrency` threads, in `rounds` rounds that take turns (round
/// 1 of every operation, then round 2...; each round a slice of the indices), so that operations compared with each
/// other are measured under the same conditions even when the machine's speed drifts during the run. A row per
/// operation, as [`run`] gives. Each operation's `base` is the server whose plugin metrics it reads.
pub fn run_interleaved(
    concurrency: usize,
    requests: usize,
    rounds: usize,
    ops: &[(&str, Op)],
) -> anyhow::Result<Vec<[f64; 5]>> {
    let rounds = rounds.clamp(1, requests.max(1));
    let client: Arc<dyn Fn() -> reqwest::blocking::Client + Send + Sync> = Arc::new(reqwest::blocking::Client::new);
    let mut measured: Vec<Measured> = ops.iter().map(|_| Measured::default()).collect();
    for round in 0..rounds {
        let range = requests * round / rounds..requests * (round + 1) / rounds;
        for ((base, op), m) in ops.iter().zip(&mut measured) {
            m.add(base, concurrency, range.clone(), &client, op)?;
        }
    }
    Ok(measured.iter().map(Measured::row).collect())
}

/// What runs of one operation measured, added up.
#[derive(Default)]
struct Measured {
    requests: usize,
    seconds: f64,
    latencies: Vec<Duration>,
    plugin_calls: f64,
    plugin_seconds: f64,
}

impl Measured {
    /// Runs the requests of `indices` over `concurrency` threads, adding what they took.
    fn add<C, O>(
        &mut self,
        base: &str,
        concurrency: usize,
        indices: std::ops::Range<usize>,
        client: &Arc<C>,
        op: &Arc<O>,
    ) -> anyhow::Result<()>
    where
        C: Fn() -> reqwest::blocking::Client + Send + Sync + 'static + ?Sized,
        O: Fn(&reqwest::blocking::Client, usize) -> anyhow::Result<()> + Send + Sync + 'static + ?Sized,
    {
        let (calls0, secs0) = plugin_stats(base)?;
        let next = Arc::new(AtomicUsize::new(indices.start));
        let end = indices.end;
        let started = Instant::now();
        let workers: Vec<_> = (0..concurrency)
            .map(|_| {
                let next = next.clone();
                let op = op.clone();
                let make = client.clone();
                std::thread::spawn(move || -> anyhow::Result<Vec<Duration>> {
                    let client = make();
                    let mut latencies = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= end {
                            return Ok(latencies);
                        }
                        let t = Instant::now();
                        op(&client, i)?;
                        latencies.push(t.elapsed());
                    }
                })
            })
            .collect();
        for w in workers {
            self.latencies
                .extend(w.join().map_err(|_| anyhow::anyhow!("worker panicked"))??);
        }
        self.seconds += started.elapsed().as_secs_f64();
        self.requests += indices.len();
        let (calls1, secs1) = plugin_stats(base)?;
        self.plugin_calls += calls1 - calls0;
        self.plugin_seconds += secs1 - secs0;
        Ok(())
    }

    /// (requests/s, p50 µs, p99 µs, plugin calls/request, plugin µs/request).
    fn row(&self) -> [f64; 5] {
        let mut latencies = self.latencies.clone();
        latencies.sort();
        let pct = |p: f64| {
            latencies
                .get(((latencies.len() as f64 * p) as usize).min(latencies.len().saturating_sub(1)))
                .map_or(0.0, |d| d.as_secs_f64() * 1e6)
        };
        let n = self.requests.max(1) as f64;
        [
            self.requests as f64 / self.seconds,
            pct(0.5),
            pct(0.99),
            self.plugin_calls / n,
            self.plugin_seconds * 1e6 / n,
        ]
    }
}

/// An operation creating the v1alpha1 flunder `f<i>` (labelled `bench: yes`) in a collection URL, expecting 201.
pub fn create_each(
    collection: String,
) -> impl Fn(&reqwest::blocking::Client, usize) -> anyhow::Result<()> + Send + Sync {
    move |c, i| {
        let body = serde_json::json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
            "metadata": {"name": format!("f{i}"), "labels": {"bench": "yes"}},
            "spec": {"reference": format!("r{i}")}});
        let r = c.post(&collection).json(&body).send()?;
        if r.status().as_u16() != 201 {
            bail!("create answered {}: {}", r.status(), r.text().unwrap_or_default());
        }
        Ok(())
    }
}

/// An operation reading flunder `f<i>` from a collection URL, with a query (such as `?resourceVersion=0`, or "").
pub fn get_each(
    collection: String,
    query: &'static str,
) -> impl Fn(&reqwest::blocking::Client, usize) -> anyhow::Result<()> + Send + Sync {
    move |c, i| {
        let r = c.get(format!("{collection}/f{i}{query}")).send()?;
        if !r.status().is_success() {
            bail!("get answered {}", r.status());
        }
        let _ = r.bytes()?;
        Ok(())
    }
}

/// An operation for [`run`] that reads `url` (a list) accepting `accept`, checking the status and reading the body.
pub fn get_list(
    url: String,
    accept: &'static str,
) -> impl Fn(&reqwest::blocking::Client, usize) -> anyhow::Result<()> + Send + Sync {
    move |c, _| {
        let r = c.get(&url).header("Accept", accept).send()?;
        if !r.status().is_success() {
            bail!("list answered {}", r.status());
        }
        let _ = r.bytes()?;
        Ok(())
    }
}

/// Prints one Markdown row.
pub fn print_row(op: &str, concurrency: usize, requests: usize, r: [f64; 5]) {
    println!(
        "| {op} | {concurrency} | {requests} | {:.0} | {:.0} | {:.0} | {:.1} | {:.1} |",
        r[0], r[1], r[2], r[3], r[4]
    );
}

/// A minimal hyper server answering every request with the same bytes: the "hyper same bytes" baseline
/// (what the network stack, hyper and the client cost with no server work at all). Stopped on drop.
pub struct SameBytes {
    /// The base URL.
    pub base: String,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for SameBytes {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Starts a [`SameBytes`] server on a free loopback port, answering 200 with `content_type` and `body`, on a
/// multi-threaded tokio runtime with the default number of workers (one per core), as the server has.
pub fn serve_same_bytes(content_type: String, body: bytes::Bytes) -> anyhow::Result<SameBytes> {
    use http_body_util::Full;

    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let base = format!("http://{}", listener.local_addr()?);
    let content_type = hyper::header::HeaderValue::from_str(&content_type)?;
    runtime.spawn(serve_http1(listener, move |_req| {
        let mut resp = hyper::Response::new(Full::new(body.clone()));
        resp.headers_mut()
            .insert(hyper::header::CONTENT_TYPE, content_type.clone());
        async move { resp }
    }));
    Ok(SameBytes {
        base,
        runtime: Some(runtime),
    })
}

/// Serves HTTP/1.1 on `listener`, each connection on a task of its own (with TCP_NODELAY), every request answered
/// by `handle`, until accepting fails: the baseline servers' loop.
pub async fn serve_http1<H, F, B>(listener: tokio::net::TcpListener, handle: H) -> std::io::Result<()>
where
    H: Fn(hyper::Request<hyper::body::Incoming>) -> F + Clone + Send + 'static,
    F: std::future::Future<Output = hyper::Response<B>> + Send + 'static,
    B: hyper::body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let handle = handle.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let answer = handle(req);
                async move { Ok::<_, std::convert::Infallible>(answer.await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Reads `url` once accepting `accept`: the response's content type and body, for [`serve_same_bytes`].
pub fn fetch_response(url: &str, accept: &str) -> anyhow::Result<(String, bytes::Bytes)> {
    let r = reqwest::blocking::Client::new()
        .get(url)
        .header("Accept", accept)
        .send()?;
    if !r.status().is_success() {
        bail!("{url} answered {}", r.status());
    }
    let content_type = r
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_owned();
    Ok((content_type, r.bytes()?))
}
