//! HTTP benchmark of wasm-apiserver with the wardle plugin on the embedded store.
//!
//! Starts the server binary on a free port with a fresh data directory, then measures creates/s, gets/s and lists of
//! 100 per second at a few client concurrencies, and the time spent inside the plugin per request (from the server's
//! `/metrics`).
//!
//! Issue 13's baseline, "hyper same bytes", is measured in the same run: the server's list of 100 in the storage
//! version is read once, and a minimal hyper server on another loopback port answers every request with exactly
//! those bytes (and content type); the same client loop runs against it at the same concurrency. GETs have their
//! own baseline the same way: one GET's answer (the last flunder created, in the storage version), served by the hyper server to
//! the same GET loop. Summary tables at the end give lists/s and GETs/s next to their baselines, and the ratios
//! (GETs without resourceVersion are consistent reads; `resourceVersion=0` may be served stale, from the cache).
//!
//! Usage: `http-bench [--server PATH] [--plugins DIR] [--requests N]` (defaults: target/release/wasm-apiserver,
//! target/plugins, 2000 requests per row).

use bench::{create_each, fetch_response, get_each, get_list, print_row, run, serve_same_bytes, start, Args};

fn main() -> anyhow::Result<()> {
    let Args {
        server,
        plugins,
        requests,
        concurrency,
        ..
    } = Args::parse()?;
    println!("| operation | concurrency | requests | req/s | p50 µs | p99 µs | plugin calls/req | plugin µs/req |");
    println!("|---|---|---|---|---|---|---|---|");
    let mut summary = Vec::new();
    let mut get_summary = Vec::new();
    for concurrency in concurrency {
        let s = start(&server, &plugins, &[])?;
        let base = s.base.clone();
        let url = format!("{base}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
        let row = run(&base, concurrency, requests, create_each(url.clone()))?;
        print_row("create", concurrency, requests, row);
        let row = run(&base, concurrency, requests, get_each(url.clone(), ""))?;
        print_row("get (storage version)", concurrency, requests, row);
        let gets = row[0];
        let row = run(
            &base,
            concurrency,
            requests,
            get_each(url.clone(), "?resourceVersion=0"),
        )?;
        print_row("get (storage version, resourceVersion=0)", concurrency, requests, row);
        let gets_rv0 = row[0];
        let v1beta1 = format!("{base}/apis/wardle.example.com/v1beta1/namespaces/default/flunders");
        let row = run(&base, concurrency, requests, get_each(v1beta1.clone(), ""))?;
        print_row("get (converted to v1beta1)", concurrency, requests, row);
        // Lists of 100 from the watch cache: a list in another version converts each item through the plugin.
        let lists = requests.max(10);
        let mut list_rates = Vec::new();
        // kubectl get asks for a Table in the preferred version (v1beta1), rows made by the plugin.
        const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
        for (operation, collection, accept) in [
            ("list 100 (storage version)", url.clone(), "application/json"),
            ("list 100 (converted to v1beta1)", v1beta1.clone(), "application/json"),
            ("table 100 (v1beta1, as kubectl get)", v1beta1, TABLE),
        ] {
            let list_url = format!("{collection}?limit=100&resourceVersion=0");
            let row = run(&base, concurrency, lists, get_list(list_url, accept))?;
            print_row(operation, concurrency, lists, row);
            list_rates.push(row[0]);
        }
        // The baseline: the storage version's list bytes from a plain hyper server, with the same client loop.
        let list_url = format!("{url}?limit=100&resourceVersion=0");
        let (content_type, body) = fetch_response(&list_url, "application/json")?;
        let body_bytes = body.len();
        let same = serve_same_bytes(content_type, body)?;
        let same_url = format!(
            "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
            same.base
        );
        // `run` reads plugin metrics from the server under test: the baseline has none.
        let row = run(&base, concurrency, lists, get_list(same_url, "application/json"))?;
        print_row("hyper same bytes (list 100, storage version)", concurrency, lists, row);
        summary.push((concurrency, gets, list_rates[0], list_rates[1], row[0], body_bytes));
        drop(same);
        // The GET baseline: the bytes of the last flunder created (a name as long as most) for every GET, from
        // the hyper server.
        let last = requests.saturating_sub(1);
        let (content_type, body) = fetch_response(&format!("{url}/f{last}"), "application/json")?;
        let get_bytes = body.len();
        let same = serve_same_bytes(content_type, body)?;
        let same_collection = format!(
            "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
            same.base
        );
        let row = run(&base, concurrency, requests, get_each(same_collection, ""))?;
        print_row("hyper same bytes (get, storage version)", concurrency, requests, row);
        get_summary.push((concurrency, gets, gets_rv0, row[0], get_bytes));
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
    Ok(())
}
