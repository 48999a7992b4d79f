//! Plugin runtime benchmark: compile (cold) vs cached load, instantiation, and the cost
//! of one strategy call in Rust, Python, JavaScript, Go and C components, next to the same Rust strategy called natively.
//!
//! Usage: `plugin-bench [--plugins DIR] [--calls N]` (defaults: target/plugins, 2000). Prints Markdown tables.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use plugin_runtime::cache::{content_hash, CompileCache};
use plugin_runtime::component::PluginComponent;
use plugin_runtime::runtime::{Limits, Runtime};
use rest::plugin::Plugin;
use serde_json::{json, Value};

/// A plugin to measure and one object to validate and convert.
struct Case {
    file: &'static str,
    resource: &'static str,
    object: Value,
    convert_to: Option<&'static str>,
}

fn cases() -> Vec<Case> {
    // The Rust and the Go wardle serve the same group: one flunder for both.
    let wardle = |file| Case {
        file,
        resource: "flunders",
        object: json!({"apiVersion": "wardle.example.com/v1beta1", "kind": "Flunder",
            "metadata": {"name": "f", "namespace": "default"},
            "spec": {"fischerReference": "a", "referenceType": "Fischer"}}),
        convert_to: Some("v1alpha1"),
    };
    vec![
        wardle("wardle"),
        wardle("wardle-go"),
        Case {
            file: "widgets-c",
            resource: "widgets",
            object: json!({"apiVersion": "widgets.example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "namespace": "default"},
                "spec": {"color": "green", "size": 3, "label": "a small one"}}),
            convert_to: None,
        },
        Case {
            file: "books",
            resource: "books",
            object: json!({"apiVersion": "books.example.com/v1", "kind": "Book",
                "metadata": {"name": "b", "namespace": "default"},
                "spec": {"title": "Dune", "authors": ["Frank Herbert"], "pages": 412, "genre": "fiction"}}),
            convert_to: Some("v1beta1"),
        },
        Case {
            file: "tasks",
            resource: "tasks",
            object: json!({"apiVersion": "tasks.example.com/v1", "kind": "Task",
                "metadata": {"name": "t", "namespace": "default"},
                "spec": {"title": "Write the benchmark", "priority": "high", "done": false}}),
            convert_to: None,
        },
        Case {
            file: "greetings-go",
            resource: "greetings",
            object: json!({"apiVersion": "greetings.example.com/v1", "kind": "Greeting",
                "metadata": {"name": "g", "namespace": "default"},
                "spec": {"message": "Hello, world", "replicas": 2}}),
            convert_to: None,
        },
    ]
}

fn per_call(n: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..n / 10 {
        f();
    }
    let started = Instant::now();
    for _ in 0..n {
        f();
    }
    started.elapsed() / n as u32
}

/// The median of `n` calls timed one by one (after `n / 10` not timed).
fn p50_call(n: usize, mut f: impl FnMut()) -> Duration {
    for _ in 0..n / 10 {
        f();
    }
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let started = Instant::now();
            f();
            started.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[times.len() / 2]
}

/// The mean and the largest of the linear memories of a plugin's idle instances, in MiB.
fn instance_memory(plugin: &Plugin) -> (f64, f64) {
    let memory = plugin.idle_instance_memory();
    let mib = |bytes: usize| bytes as f64 / (1 << 20) as f64;
    let mean = memory.iter().sum::<usize>() / memory.len().max(1);
    (mib(mean), mib(memory.into_iter().max().unwrap_or(0)))
}

/// What one validate and (when the case converts) one convert call of the case's object cost the plugin.
fn call_costs(plugin: &Plugin, case: &Case, calls: usize) -> (Duration, Option<Duration>) {
    let validate = per_call(calls, || {
        let v = plugin.strategy.validate(case.resource, &case.object).expect("validate");
        assert!(v.errors.is_empty(), "{:?}", v.errors);
    });
    let convert = case.convert_to.map(|to| {
        per_call(calls, || {
            plugin.convert(case.resource, case.object.clone(), to).expect("convert");
        })
    });
    (validate, convert)
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

/// The command line, for `--help` and errors.
const USAGE: &str = "usage: plugin-bench [--plugins DIR] [--calls N] [--winch-only]";

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut plugins = PathBuf::from("target/plugins");
    let mut calls = 2000usize;
    let mut winch_only = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--winch-only" => winch_only = true,
            "--plugins" => plugins = args.next().context("--plugins needs a dir")?.into(),
            "--calls" => calls = args.next().context("--calls needs a number")?.parse()?,
            other => return Err(bench::unknown_argument(other, USAGE)),
        }
    }
    // Generous limits: the point is the cost of a call, not the sandbox's bounds.
    let runtime = Runtime::new(Limits {
        memory_bytes: 256 << 20,
        call_timeout: Duration::from_secs(10),
        ..Limits::default()
    })?;
    let cache_dir = tempfile::tempdir()?;
    let cache = CompileCache::new(cache_dir.path(), runtime.fingerprint, u64::MAX)?;

    println!(
        "| plugin | size | cold compile ms | cached load ms | instantiate µs | linear memory of an instance, new / after the calls (MiB) | validate µs/call | validate p50 µs | convert µs/call |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for case in cases().into_iter().filter(|_| !winch_only) {
        let path = plugins.join(format!("{}.wasm", case.file));
        let Ok(bytes) = std::fs::read(&path) else {
            println!("| {} | (not built) | | | | | | | |", case.file);
            continue;
        };
        let hash = content_hash(&bytes);
        let started = Instant::now();
        let (component, _) = cache.load(&runtime.engine, &hash, || Ok(bytes.clone()))?;
        let cold = started.elapsed();
        let started = Instant::now();
        let (_again, _) = cache.load(&runtime.engine, &hash, || Ok(bytes.clone()))?;
        let cached = started.elapsed();
        let plugin = loader::component::plugin(PluginComponent::from_component(runtime.clone(), case.file, component)?);
        let mut inst = Vec::new();
        for _ in 0..20 {
            inst.push(plugin.prewarm()?);
        }
        inst.sort();
        let instantiate = inst[inst.len() / 2];
        let (new_memory, _) = instance_memory(&plugin);
        let plugin = Arc::new(plugin);
        let obj = case.object.clone();
        let (validate, convert) = call_costs(&plugin, &case, calls);
        let validate_p50 = p50_call(calls, || {
            let v = plugin.strategy.validate(case.resource, &case.object).expect("validate");
            assert!(v.errors.is_empty(), "{:?}", v.errors);
        });
        let (_, used_memory) = instance_memory(&plugin);
        println!(
            "| {} (component) | {:.1} MB | {} | {} | {} | {new_memory:.2} / {used_memory:.2} | {} | {} | {} |",
            case.file,
            bytes.len() as f64 / 1e6,
            ms(cold),
            ms(cached),
            us(instantiate),
            us(validate),
            us(validate_p50),
            convert.map(us).unwrap_or_else(|| "n/a".into())
        );
        if case.file == "wardle" {
            let text = obj.to_string();
            let native_validate = per_call(calls * 10, || {
                let v = wardle_plugin::validate(case.resource, std::hint::black_box(&text));
                assert!(v.errors.is_empty());
            });
            let native_convert = per_call(calls * 10, || {
                wardle_plugin::conversion::convert(case.resource, std::hint::black_box(&text), "v1alpha1")
                    .expect("convert");
            });
            println!(
                "| wardle (same code, native) | | | | | | {} | | {} |",
                us(native_validate),
                us(native_convert)
            );
        }
    }

    // The baseline compiler (Winch): how soon a component never compiled before answers its first call (compile,
    // instantiate, one validate), and what its code costs per call.
    let baseline = Runtime::baseline(Limits {
        memory_bytes: 256 << 20,
        call_timeout: Duration::from_secs(10),
        ..Limits::default()
    })?;
    println!();
    println!("| plugin, Winch | compile ms | instantiate µs | first answer ms (compile + instantiate + a call) | validate µs/call | convert µs/call |");
    println!("|---|---|---|---|---|---|");
    for case in cases() {
        let Ok(bytes) = std::fs::read(plugins.join(format!("{}.wasm", case.file))) else {
            continue;
        };
        let started = Instant::now();
        let component = plugin_runtime::runtime::compile_component(&baseline.engine, &bytes)
            .map_err(|e| anyhow::anyhow!("compiling {} with Winch: {e:?}", case.file))?;
        let compile = started.elapsed();
        let plugin =
            loader::component::plugin(PluginComponent::from_component(baseline.clone(), case.file, component)?);
        let instantiate = plugin.prewarm()?;
        let obj = case.object.clone();
        let v = plugin.strategy.validate(case.resource, &obj).expect("validate");
        assert!(v.errors.is_empty(), "{:?}", v.errors);
        let first = started.elapsed();
        let (validate, convert) = call_costs(&plugin, &case, calls);
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            case.file,
            ms(compile),
            us(instantiate),
            ms(first),
            us(validate),
            convert.map(us).unwrap_or_else(|| "n/a".into())
        );
    }
    Ok(())
}
