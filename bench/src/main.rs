//! HTTP benchmark of wasm-apiserver with the wardle plugin on the embedded store.
//!
//! Starts the server binary on a free port with a fresh data directory, then measures creates/s, gets/s and lists of
//! 100 per second at a few client concurrencies, and the time spent inside the plugin per request (from the server's
//! `/metrics`).
//!
//! The baseline, "hyper same bytes", is measured in the same run: the server's list of 100 in the storage
//! version is read once, and a minimal hyper server on another loopback port answers every request with exactly
//! those bytes (and content type); the same client loop runs against it at the same concurrency. GETs have their
//! own baseline the same way: one GET's answer (the last flunder created, in the storage version), served by the hyper server to
//! the same GET loop. Summary tables at the end give lists/s and GETs/s next to their baselines, and the ratios
//! (GETs without resourceVersion are consistent reads; `resourceVersion=0` may be served stale, from the cache).
//!
//! Each server row and its baseline are measured in turns (8 rounds of an eighth of the requests each, one
//! operation after the other), so that a drift in the machine's speed during the run weighs on both alike.
//!
//! The server's own CPU time (user and system) for each concurrency's creates and for its reads (the GET and list
//! rows) ends the output, per request.
//!
//! Usage: `http-bench [--server PATH] [--plugins DIR] [--requests N] [--concurrency N,N,...] [--server-arg ARG]...`
//! (defaults: target/release/wasm-apiserver, target/plugins, 2000 requests per row, concurrency 1, 8 and 32; each
//! `--server-arg` is one more argument of `serve`, such as `--tracing-config-file`).

use std::sync::Arc;

use bench::{
    create_each, fetch_response, get_each, get_list, print_row, run, run_interleaved, serve_same_bytes, start, Args, Op,
};

/// How many turns each measured row and its baseline take (see `run_interleaved`).
const ROUNDS: usize = 8;

fn main() -> anyhow::Result<()> {
    let Args {
        server,
        plugins,
        requests,
        concurrency,
        server_args,
        ..
    } = Args::parse()?;
    let server_args: Vec<&str> = server_args.iter().map(String::as_str).collect();
    println!("| operation | concurrency | requests | req/s | p50 µs | p99 µs | plugin calls/req | plugin µs/req |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut summary = Vec::new();
    let mut get_summary = Vec::new();
    let mut cpu_summary = Vec::new();
    for concurrency in concurrency {
        let s = start(&server, &plugins, &server_args)?;
        let base = s.base.clone();
        let url = format!("{base}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
        let before_creates = s.cpu_time();
        let row = run(&base, concurrency, requests, create_each(url.clone()))?;
        let create_cpu = s.cpu_time().saturating_sub(before_creates);
        print_row("create", concurrency, requests, row);
        // The baselines: the storage version's list bytes, and the bytes of the last flunder created (a name as
        // long as most) for every GET, each from a plain hyper server.
        let v1beta1 = format!("{base}/apis/wardle.example.com/v1beta1/namespaces/default/flunders");
        let list_url = format!("{url}?limit=100&resourceVersion=0");
        let (content_type, body) = fetch_response(&list_url, "application/json")?;
        let body_bytes = body.len();
        let same_list = serve_same_bytes(content_type, body)?;
        let last = requests.saturating_sub(1);
        let (content_type, body) = fetch_response(&format!("{url}/f{last}"), "application/json")?;
        let get_bytes = body.len();
        let same_get = serve_same_bytes(content_type, body)?;
        let collection = |base: &str| format!("{base}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
        // Each server row and its baseline take turns, round by round (`run_interleaved`).
        let gets: [(&str, Op); 4] = [
            ("get (storage version)", Arc::new(get_each(url.clone(), ""))),
            (
                "get (storage version, resourceVersion=0)",
                Arc::new(get_each(url.clone(), "?resourceVersion=0")),
            ),
            ("get (converted to v1beta1)", Arc::new(get_each(v1beta1.clone(), ""))),
            (
                "hyper same bytes (get, storage version)",
                Arc::new(get_each(collection(&same_get.base), "")),
            ),
        ];
        let ops: Vec<(&str, Op)> = gets.iter().map(|(_, op)| (base.as_str(), op.clone())).collect();
        let before_reads = s.cpu_time();
        let rows = run_interleaved(concurrency, requests, ROUNDS, &ops)?;
        for ((operation, _), row) in gets.iter().zip(&rows) {
            print_row(operation, concurrency, requests, *row);
        }
        let (get_rate, get_rv0_rate, get_hyper_rate) = (rows[0][0], rows[1][0], rows[3][0]);
        // Lists of 100 from the watch cache: a list in another version converts each item through the plugin;
        // kubectl get asks for a Table in the preferred version (v1beta1), rows made by the plugin.
        let lists = requests.max(10);
        const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
        let list_of = |collection: &str, accept: &'static str| -> Op {
            Arc::new(get_list(format!("{collection}?limit=100&resourceVersion=0"), accept))
        };
        let list_rows: [(&str, Op); 4] = [
            ("list 100 (storage version)", list_of(&url, "application/json")),
            ("list 100 (converted to v1beta1)", list_of(&v1beta1, "application/json")),
            ("table 100 (v1beta1, as kubectl get)", list_of(&v1beta1, TABLE)),
            (
                "hyper same bytes (list 100, storage version)",
                list_of(&collection(&same_list.base), "application/json"),
            ),
        ];
        let ops: Vec<(&str, Op)> = list_rows.iter().map(|(_, op)| (base.as_str(), op.clone())).collect();
        let rows = run_interleaved(concurrency, lists, ROUNDS, &ops)?;
        let read_cpu = s.cpu_time().saturating_sub(before_reads);
        for ((operation, _), row) in list_rows.iter().zip(&rows) {
            print_row(operation, concurrency, lists, *row);
        }
        // The server's reads: three of the four GET rows and three of the four list rows (the fourth is the baseline's).
        let reads = 3 * requests + 3 * lists;
        cpu_summary.push((concurrency, create_cpu, requests, read_cpu, reads));
        summary.push((concurrency, get_rate, rows[0][0], rows[1][0], rows[3][0], body_bytes));
        drop((same_list, same_get));
        get_summary.push((concurrency, get_rate, get_rv0_rate, get_hyper_rate, get_bytes));
    }
    println!();
    println!("| concurrency | get/s | list 100 (storage)/s | list 100 (converted)/s | hyper same bytes/s | list bytes | storage ÷ hyper | converted ÷ hyper |");
    println!("|---|---|---|---|---|---|---|---|");
    for (concurrency, gets, storage, converted, hyper, bytes) in summary {
        println!(
            "| {concurrency} | {gets:.0} | {storage:.0} | {converted:.0} | {hyper:.0} | {bytes} | {:.2} | {:.2} |",
            storage / hyper,
            converted / hyper
        );
    }
    println!();
    println!("| concurrency | get (no resourceVersion, consistent)/s | get (resourceVersion=0)/s | hyper same bytes (get)/s | get bytes | consistent ÷ hyper | RV=0 ÷ hyper |");
    println!("|---|---|---|---|---|---|---|");
    for (concurrency, consistent, rv0, hyper, bytes) in get_summary {
        println!(
            "| {concurrency} | {consistent:.0} | {rv0:.0} | {hyper:.0} | {bytes} | {:.2} | {:.2} |",
            consistent / hyper,
            rv0 / hyper
        );
    }
    println!();
    println!("| concurrency | server CPU per create (µs) | server CPU per read, GETs and lists of 100 (µs) | server CPU (s) |");
    println!("|---|---|---|---|");
    for (concurrency, create_cpu, creates, read_cpu, reads) in cpu_summary {
        println!(
            "| {concurrency} | {:.0} | {:.0} | {:.2} |",
            create_cpu.as_secs_f64() * 1e6 / creates.max(1) as f64,
            read_cpu.as_secs_f64() * 1e6 / reads.max(1) as f64,
            (create_cpu + read_cpu).as_secs_f64()
        );
    }
    Ok(())
}
