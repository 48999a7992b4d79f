//! etcd benchmark: creates/s through HTTP + the wardle plugin + the etcd backend, next to raw etcd puts/s from the
//! same client library at the same concurrency, measured in one run and reported as a ratio; the same ratio for etcd
//! alone doing a create's storage work (a create-if-absent transaction, watched), which bounds the first; the same
//! HTTP creates on the embedded store, next to the same raw puts; and GET and LIST(100) through HTTP on etcd.
//!
//! Both sides of the ratio use an async client on the same kind of tokio runtime, one task per concurrent request:
//! etcd-client for the puts, reqwest for the creates.
//!
//! Usage: `etcd-bench [--server PATH] [--plugins DIR] [--requests N] [--concurrency N,...] [--etcd-cpus LIST]`;
//! needs `etcd` on PATH.

use std::sync::Arc;
use std::time::Instant;

use anyhow::bail;
use bench::{get_each, get_list, run, start, Args};
use serde_json::json;

/// Runs operations 0..`requests` with `concurrency` tasks on a multi-threaded tokio runtime, each task taking the next
/// index; returns operations/s. `op` gets a copy of the task's client (from `connect`) and the index.
fn rate<C, Op, Fut>(
    concurrency: usize,
    requests: usize,
    connect: impl std::future::Future<Output = anyhow::Result<C>>,
    op: Op,
) -> anyhow::Result<f64>
where
    C: Clone + Send + 'static,
    Op: Fn(C, usize) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    rt.block_on(async {
        let client = connect.await?;
        let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let started = Instant::now();
        let mut tasks = Vec::new();
        for _ in 0..concurrency {
            let (client, next, op) = (client.clone(), next.clone(), op.clone());
            tasks.push(tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= requests {
                        return Ok::<_, anyhow::Error>(());
                    }
                    op(client.clone(), i).await?;
                }
            }));
        }
        for t in tasks {
            t.await??;
        }
        Ok(requests as f64 / started.elapsed().as_secs_f64())
    })
}

/// Raw puts of ~500-byte values with `concurrency` tasks: puts/s.
fn raw_puts(endpoint: &str, concurrency: usize, requests: usize) -> anyhow::Result<f64> {
    let value = "x".repeat(500);
    let connect = async { Ok(etcd_client::Client::connect([endpoint], None).await?.kv_client()) };
    rate(concurrency, requests, connect, move |mut kv, i| {
        let value = value.clone();
        async move {
            kv.put(format!("/raw/{i}"), value, None).await?;
            Ok(())
        }
    })
}

/// What a create costs etcd alone, from the same client at the same concurrency: a transaction that puts a ~500-byte
/// value only if the key does not exist, while one watch of the prefix (with previous values, as the watch cache's)
/// receives every event: creates/s. It bounds what any server that stores through etcd can reach.
fn raw_txn_creates(endpoint: &str, concurrency: usize, requests: usize) -> anyhow::Result<f64> {
    use etcd_client::{Compare, CompareOp, Txn, TxnOp, WatchOptions};
    let value = "x".repeat(500);
    let endpoint = endpoint.to_owned();
    let prefix = "/txn/".to_owned();
    let watch_prefix = prefix.clone();
    let connect = async move {
        let client = etcd_client::Client::connect([endpoint], None).await?;
        let options = WatchOptions::new().with_prefix().with_prev_key();
        let mut stream = client.watch_client().watch(watch_prefix, Some(options)).await?;
        tokio::spawn(async move { while let Ok(Some(_)) = stream.message().await {} });
        Ok(client.kv_client())
    };
    rate(concurrency, requests, connect, move |mut kv, i| {
        let (value, key) = (value.clone(), format!("{prefix}{i}"));
        async move {
            let txn = Txn::new()
                .when([Compare::mod_revision(key.clone(), CompareOp::Equal, 0)])
                .and_then([TxnOp::put(key, value, None)]);
            if !kv.txn(txn).await?.succeeded() {
                bail!("the key existed");
            }
            Ok(())
        }
    })
}

/// HTTP creates of flunders `f<i>` at `url` with `concurrency` tasks sharing one async client: creates/s.
fn http_creates(url: &str, concurrency: usize, requests: usize) -> anyhow::Result<f64> {
    let url = url.to_owned();
    rate(
        concurrency,
        requests,
        async { Ok(reqwest::Client::new()) },
        move |client, i| {
            let url = url.clone();
            async move {
                let body = json!({"apiVersion": "wardle.example.com/v1alpha1", "kind": "Flunder",
                "metadata": {"name": format!("f{i}")}, "spec": {"reference": format!("r{i}")}});
                let r = client.post(&url).json(&body).send().await?;
                let status = r.status().as_u16();
                let text = r.text().await?;
                if status != 201 {
                    bail!("create answered {status}: {text}");
                }
                Ok(())
            }
        },
    )
}

fn main() -> anyhow::Result<()> {
    let Args {
        server,
        plugins,
        requests,
        concurrency,
        etcd_cpus,
        ..
    } = Args::parse()?;
    println!(
        "| concurrency | raw etcd puts/s | etcd txn creates + watch/s | HTTP creates/s (wardle + etcd) | ratio | ceiling | creates ÷ ceiling | HTTP creates/s (wardle + embedded store) | embedded ÷ raw puts | get/s (etcd) | get/s (RV=0, cache) | list(100)/s (consistent) | list(100)/s (RV=0, cache) |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for concurrency in concurrency {
        let etcd = bench::etcd::Etcd::start(std::path::Path::new("etcd"), etcd_cpus.as_deref())?;
        let raw = raw_puts(&etcd.endpoint, concurrency, requests)?;
        let txn = raw_txn_creates(&etcd.endpoint, concurrency, requests)?;
        let s = start(&server, &plugins, &["--etcd-servers", &etcd.endpoint])?;
        let url = format!(
            "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
            s.base
        );
        let creates = http_creates(&url, concurrency, requests)?;
        let gets = run(&s.base, concurrency, requests, get_each(url.clone(), ""))?[0];
        let cached_gets = run(
            &s.base,
            concurrency,
            requests,
            get_each(url.clone(), "?resourceVersion=0"),
        )?[0];
        let list = |query: &'static str| {
            let list_url = format!("{url}?limit=100{query}");
            run(
                &s.base,
                concurrency,
                (requests / 10).max(10),
                get_list(list_url, "application/json"),
            )
            .map(|r| r[0])
        };
        let lists = list("")?;
        let cached_lists = list("&resourceVersion=0")?;
        drop(s);
        // The same creates on the embedded store (durable, group-committed), next to the same raw etcd puts.
        let embedded_server = start(&server, &plugins, &[])?;
        let embedded = http_creates(
            &format!(
                "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
                embedded_server.base
            ),
            concurrency,
            requests,
        )?;
        drop(embedded_server);
        println!(
            "| {concurrency} | {raw:.0} | {txn:.0} | {creates:.0} | {:.2} | {:.2} | {:.2} | {embedded:.0} | {:.2} | {gets:.0} | {cached_gets:.0} | {lists:.0} | {cached_lists:.0} |",
            creates / raw,
            txn / raw,
            creates / txn,
            embedded / raw
        );
    }
    Ok(())
}
