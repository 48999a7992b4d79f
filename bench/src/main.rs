//! HTTP benchmark of wasm-apiserver with the wardle plugin on the embedded store.
//!
//! Starts the server binary on a free port with a fresh data directory, then measures creates/s, gets/s and lists of
//! 100 per second at a few client concurrencies, and the time spent inside the plugin per request (from the server's
//! `/metrics`).
//!
//! Usage: `http-bench [--server PATH] [--plugins DIR] [--requests N]` (defaults: target/release/wasm-apiserver,
//! target/plugins, 2000 requests per row).

use anyhow::bail;
use bench::{get_each, get_list, print_row, run, start, Args};
use serde_json::json;

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
    for concurrency in concurrency {
        let s = start(&server, &plugins, &[])?;
        let base = s.base.clone();
        let url = format!("{base}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders");
        let create_url = url.clone();
        let row = run(&base, concurrency, requests, move |c, i| {
            let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                "metadata": {"name": format!("f{i}"), "labels": {"bench": "yes"}},
                "spec": {"reference": format!("r{i}")}});
            let r = c.post(&create_url).json(&body).send()?;
            if r.status().as_u16() != 201 {
                bail!("create answered {}: {}", r.status(), r.text().unwrap_or_default());
            }
            Ok(())
        })?;
        print_row("create", concurrency, requests, row);
        let row = run(&base, concurrency, requests, get_each(url.clone(), ""))?;
        print_row("get (storage version)", concurrency, requests, row);
        let v1beta1 = format!("{base}/apis/wardle.example.com/v1beta1/namespaces/default/flunders");
        let row = run(&base, concurrency, requests, get_each(v1beta1.clone(), ""))?;
        print_row("get (converted to v1beta1)", concurrency, requests, row);
        // Lists of 100 from the watch cache: a list in another version converts each item through the plugin.
        let lists = (requests / 10).max(10);
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
        }
    }
    Ok(())
}
