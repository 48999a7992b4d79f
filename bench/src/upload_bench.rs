//! How soon an uploaded plugin answers: each example plugin (Rust, Python, JavaScript) uploaded through the API
//! (`plugins/<name>/content`) to a host whose compile cache is empty, with the baseline tier (served from Winch while
//! Cranelift compiles) and without it.
//!
//! Measures, from the start of the upload (the PUT of its bytes):
//! - the first answer: the first 200 of a LIST of its resource (polled every 5 ms);
//! - with the baseline tier, when the optimized build serves (the Plugin's `Compiled` condition says `Compiled`).
//!
//! The plugins are uploaded one after the other, each once the previous one serves its optimized build, each round
//! on a new host with an empty compile cache.
//!
//! Usage: `upload-bench [--server PATH] [--plugins DIR] [--rounds N]` (defaults: target/release/wasm-apiserver,
//! target/plugins, 3 rounds).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use bench::Host;
use serde_json::{json, Value};

struct Options {
    server: PathBuf,
    plugins: PathBuf,
    rounds: usize,
}

const USAGE: &str = "usage: upload-bench [--server PATH] [--plugins DIR] [--rounds N]";

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        server: PathBuf::from("target/release/wasm-apiserver"),
        plugins: PathBuf::from("target/plugins"),
        rounds: 3,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--server" => o.server = value()?.into(),
            "--plugins" => o.plugins = value()?.into(),
            "--rounds" => o.rounds = value()?.parse()?,
            other => return Err(bench::unknown_argument(other, USAGE)),
        }
    }
    Ok(o)
}

/// The example plugins: file stem, what it is, and the collection it serves.
const EXAMPLES: [(&str, &str, &str); 3] = [
    (
        "wardle",
        "wardle (Rust)",
        "/apis/wardle.example.com/v1beta1/namespaces/default/flunders",
    ),
    (
        "books",
        "books (Python)",
        "/apis/books.example.com/v1/namespaces/default/books",
    ),
    (
        "tasks",
        "tasks (JavaScript)",
        "/apis/tasks.example.com/v1/namespaces/default/tasks",
    ),
];

const PLUGINS: &str = "/apis/tenancy.wasm-apiserver.io/v1alpha1/plugins";

/// The reason of a Plugin's `Compiled` condition.
fn compiled_reason(plugin: &Value) -> &str {
    plugin["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Compiled"))
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
}

/// Uploads the example `stem` to `host` and returns the seconds from the upload to its first answer and, with the
/// baseline tier, to its optimized build serving.
fn upload(
    c: &reqwest::blocking::Client,
    host: &Host,
    wasm: Vec<u8>,
    stem: &str,
    collection: &str,
    tiered: bool,
) -> anyhow::Result<(f64, Option<f64>)> {
    let body = json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin",
        "metadata": {"name": stem}, "spec": {"source": {"upload": {}}}});
    let r = c.post(format!("{}{PLUGINS}", host.base)).json(&body).send()?;
    if r.status().as_u16() != 201 {
        bail!(
            "creating the Plugin {stem}: {} {}",
            r.status(),
            r.text().unwrap_or_default()
        );
    }
    let started = Instant::now();
    let r = c
        .put(format!("{}{PLUGINS}/{stem}/content", host.base))
        .header("Content-Type", "application/wasm")
        .body(wasm)
        .send()?;
    if !r.status().is_success() {
        bail!("uploading {stem}: {} {}", r.status(), r.text().unwrap_or_default());
    }
    let deadline = started + Duration::from_secs(300);
    let answered = loop {
        if c.get(format!("{}{collection}", host.base)).send()?.status().as_u16() == 200 {
            break started.elapsed().as_secs_f64();
        }
        if Instant::now() > deadline {
            bail!("{stem} never answered");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    loop {
        let plugin: Value = c.get(format!("{}{PLUGINS}/{stem}", host.base)).send()?.json()?;
        match compiled_reason(&plugin) {
            "Compiled" => break,
            "BaselineCompiled" if tiered => {}
            other => bail!("{stem}: Compiled condition {other:?}: {plugin}"),
        }
        if Instant::now() > deadline {
            bail!("{stem}'s optimized build never served");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((answered, tiered.then(|| started.elapsed().as_secs_f64())))
}

fn main() -> anyhow::Result<()> {
    let o = options()?;
    let c = reqwest::blocking::Client::new();
    println!("| plugin | compilers | first answer after the upload (s), per round | optimized build serving (s) |");
    println!("|---|---|---|---|");
    for tiered in [true, false] {
        let mut rows: Vec<(Vec<f64>, Vec<f64>)> = vec![Default::default(); EXAMPLES.len()];
        for _ in 0..o.rounds {
            let work = tempfile::tempdir()?;
            let plugin_dir = work.path().join("plugins");
            std::fs::create_dir_all(&plugin_dir)?;
            let mut command = Command::new(&o.server);
            command
                .args(["serve", "--secure-port", "0", "--plugin-dir"])
                .arg(&plugin_dir)
                .arg("--data-dir")
                .arg(work.path().join("data"))
                .args(["--plugin-baseline-tier", &tiered.to_string()]);
            let (host, _) = Host::start(command)?;
            for (i, (stem, _, collection)) in EXAMPLES.iter().enumerate() {
                let wasm = std::fs::read(o.plugins.join(format!("{stem}.wasm")))
                    .with_context(|| format!("reading {stem}.wasm (run scripts/build-plugins.sh)"))?;
                let (answered, optimized) = upload(&c, &host, wasm, stem, collection, tiered)?;
                rows[i].0.push(answered);
                rows[i].1.extend(optimized);
            }
        }
        let compilers = match tiered {
            true => "Winch first, then Cranelift",
            false => "Cranelift",
        };
        for ((_, what, _), (answered, optimized)) in EXAMPLES.iter().zip(rows) {
            let list = |v: &[f64]| v.iter().map(|s| format!("{s:.2}")).collect::<Vec<_>>().join(", ");
            let optimized = match optimized.is_empty() {
                true => "(the same)".to_owned(),
                false => list(&optimized),
            };
            println!("| {what} | {compilers} | {} | {optimized} |", list(&answered));
        }
    }
    Ok(())
}
