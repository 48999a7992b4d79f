//! kube-apiserver side by side: kube-apiserver 1.37 serving flunders as a CustomResourceDefinition
//! made from the wardle plugin's schemas, and wasm-apiserver serving them through the wardle plugin, on the same etcd
//! (key prefixes `/kube` and `/wasm`) in one run, driven by the same client code: creates/s at a few concurrencies,
//! GET/s of one object, LIST/s of a namespace of 100 flunders (JSON; consistent ones also while another etcd
//! client writes outside both prefixes), a watch fan-out, and the resident memory of
//! each server process (idle after start, and the peak during the runs; kube-apiserver's own process, not etcd).
//!
//! Transport: HTTPS on both (kube-apiserver 1.37 has no insecure port), TLS 1.3 from the same rustls client, HTTP/2 by
//! ALPN, one connection per client thread, made before the clock starts; the user is in `system:masters` on both,
//! so RBAC is skipped and both servers' priority and fairness put every request in its `exempt` level; except in
//! the flood (`flood`), whose two users are not masters and go to the levels their FlowSchemas name.
//!
//! kube-apiserver serves consistent LISTs from its watch cache only on etcd 3.4.31+ or 3.5.13+ (on an older etcd it
//! reads them from etcd); the run says which applies.
//!
//! Usage: `kube-bench [--kube-apiserver PATH | --skip-build] [--server PATH] [--plugins DIR] [--etcd PATH]
//! [--requests N] [--concurrency N,N,...] [--watchers N] [--events N] [--flooders N] [--seats READ,MUTATING]
//! [--only-control-plane]`. The first rows are the control plane's own writes (Event creates, Lease renewals);
//! `--only-control-plane` runs those alone. `--seats` sets both servers'
//! `--max-requests-inflight` and `--max-mutating-requests-inflight` (the exempt requests of the other rows take
//! none; the flood's levels share them). Without `--kube-apiserver`, kube-apiserver's
//! path is what `scripts/build-kube-apiserver.sh` prints (it builds it when not cached); `--skip-build` takes the
//! script's cached binary without running it. `--etcd` defaults to `etcd` on PATH. Run from the repository's root.

mod control_plane;
mod flood;
mod load;
mod pki;
mod servers;
mod watch;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context as _};

use load::{collection, create, get, run, PeakRss, Rate};
use servers::Side;

/// The kube-apiserver version the build script builds by default.
const KUBE_VERSION: &str = "1.37.2";

struct Options {
    kube_apiserver: Option<PathBuf>,
    skip_build: bool,
    server: PathBuf,
    plugins: PathBuf,
    etcd: PathBuf,
    requests: usize,
    concurrency: Vec<usize>,
    watchers: usize,
    events: usize,
    flooders: usize,
    /// `--max-requests-inflight` and `--max-mutating-requests-inflight` of both servers, when given.
    seats: Option<(usize, usize)>,
    /// Only the control plane's rows (Event creates, Lease renewals).
    only_control_plane: bool,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        kube_apiserver: None,
        skip_build: false,
        server: PathBuf::from("target/release/wasm-apiserver"),
        plugins: PathBuf::from("target/plugins"),
        etcd: PathBuf::from("etcd"),
        requests: 2000,
        concurrency: vec![1, 8, 32],
        watchers: 100,
        events: 200,
        flooders: 64,
        seats: None,
        only_control_plane: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().with_context(|| format!("{a} needs a value"));
        match a.as_str() {
            "--kube-apiserver" => o.kube_apiserver = Some(value()?.into()),
            "--skip-build" => o.skip_build = true,
            "--server" => o.server = value()?.into(),
            "--plugins" => o.plugins = value()?.into(),
            "--etcd" => o.etcd = value()?.into(),
            "--requests" => o.requests = value()?.parse()?,
            "--concurrency" => o.concurrency = value()?.split(',').map(str::parse).collect::<Result<_, _>>()?,
            "--watchers" => o.watchers = value()?.parse()?,
            "--events" => o.events = value()?.parse()?,
            "--flooders" => o.flooders = value()?.parse()?,
            "--only-control-plane" => o.only_control_plane = true,
            "--seats" => {
                let v = value()?;
                let (r, m) = v
                    .split_once(',')
                    .with_context(|| format!("--seats READ,MUTATING, not {v}"))?;
                o.seats = Some((r.parse()?, m.parse()?));
            }
            other => return Err(bench::unknown_argument(other, USAGE)),
        }
    }
    Ok(o)
}

/// kube-apiserver's binary: the one given, the build script's cache (`--skip-build`), or what the script prints.
fn kube_apiserver_binary(o: &Options) -> anyhow::Result<PathBuf> {
    if let Some(path) = &o.kube_apiserver {
        return Ok(path.clone());
    }
    if o.skip_build {
        let cache = match std::env::var_os("KUBE_APISERVER_CACHE") {
            Some(dir) => PathBuf::from(dir),
            None => std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
                .context("neither XDG_CACHE_HOME nor HOME is set")?
                .join("wasm-apiserver"),
        };
        let version = std::env::var("KUBE_VERSION").unwrap_or_else(|_| KUBE_VERSION.to_owned());
        let binary = cache.join(format!("kube-apiserver-v{version}"));
        anyhow::ensure!(
            binary.exists(),
            "{} is not built (run without --skip-build)",
            binary.display()
        );
        return Ok(binary);
    }
    let out = Command::new("scripts/build-kube-apiserver.sh")
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running scripts/build-kube-apiserver.sh (run kube-bench from the repository's root)")?;
    if !out.status.success() {
        bail!("scripts/build-kube-apiserver.sh failed");
    }
    let path = String::from_utf8(out.stdout)?;
    let path = path.lines().last().context("the build script printed no path")?.trim();
    Ok(PathBuf::from(path))
}

/// One row of the table: a measure of both servers and what the issue asks of their ratio.
struct Row {
    measure: String,
    kube: f64,
    wasm: f64,
    /// `Some((2.0, true))`: wasm / kube must be at least 2; `Some((0.2, false))`: at most 0.2.
    target: Option<(f64, bool)>,
}

impl Row {
    fn print(&self) {
        let ratio = self.wasm / self.kube;
        let (target, met) = match self.target {
            Some((t, true)) => (format!("≥ {t}×"), if ratio >= t { "yes" } else { "no" }),
            Some((t, false)) => (format!("≤ {t}×"), if ratio <= t { "yes" } else { "no" }),
            None => (String::new(), ""),
        };
        println!(
            "| {} | {} | {} | {ratio:.2}× | {target} | {met} |",
            self.measure,
            number(self.kube),
            number(self.wasm)
        );
    }
}

fn number(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// Runs the same load against both servers (kube-apiserver first), returning (kube, wasm).
fn both(sides: &[Side; 2], mut measure: impl FnMut(&Side) -> anyhow::Result<Rate>) -> anyhow::Result<(Rate, Rate)> {
    let kube = measure(&sides[0]).with_context(|| format!("{}: {}", sides[0].name, sides[0].log_tail(20)))?;
    let wasm = measure(&sides[1]).with_context(|| format!("{}: {}", sides[1].name, sides[1].log_tail(20)))?;
    Ok((kube, wasm))
}

/// Whether kube-apiserver serves consistent reads from its watch cache on this etcd version: 3.4.31+, 3.5.13+ or
/// 3.6+ (the versions with fixed watch progress requests).
fn progress_notify_fixed(etcd_version: &str) -> bool {
    let parts: Vec<u32> = etcd_version.split('.').filter_map(|p| p.parse().ok()).collect();
    match parts[..] {
        [3, 4, patch, ..] => patch >= 31,
        [3, 5, patch, ..] => patch >= 13,
        [major, minor, ..] => (major, minor) > (3, 5),
        _ => false,
    }
}

/// The command line, for `--help` and errors.
const USAGE: &str = "usage: kube-bench [--kube-apiserver PATH | --skip-build] [--server PATH] [--plugins DIR] [--etcd PATH] [--requests N] [--concurrency N,N,...] [--watchers N] [--events N] [--flooders N] [--seats READ,MUTATING] [--only-control-plane]";

/// The latency table: each measure's p50 / p99 on both servers.
fn print_latencies(rows: &[(String, Rate, Rate)]) {
    println!("| latency, ms (p50 / p99) | kube-apiserver | wasm-apiserver |");
    println!("|---|---|---|");
    for (what, k, w) in rows {
        println!(
            "| {what} | {:.2} / {:.2} | {:.2} / {:.2} |",
            k.p50_ms, k.p99_ms, w.p50_ms, w.p99_ms
        );
    }
}

fn main() -> anyhow::Result<()> {
    let o = options()?;
    let binary = kube_apiserver_binary(&o)?;
    let load_average = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let etcd = servers::Etcd::start(&o.etcd, None)?;
    let seats: Vec<String> = o
        .seats
        .map(|(r, m)| {
            vec![
                format!("--max-requests-inflight={r}"),
                format!("--max-mutating-requests-inflight={m}"),
            ]
        })
        .unwrap_or_default();
    let kube = servers::start_kube_apiserver(&binary, &etcd, &seats)?;
    servers::apply_flunder_crd(&kube)?;
    let wasm = servers::start_wasm_apiserver(&o.server, &o.plugins, &etcd, &seats)?;
    let sides = [kube, wasm];
    let namespaces: Vec<String> = o
        .concurrency
        .iter()
        .map(|c| format!("create-c{c}"))
        .chain(["list".to_owned(), "watch".to_owned(), "events".to_owned()])
        .chain(o.concurrency.iter().map(|c| format!("leases-c{c}")))
        .collect();
    for side in &sides {
        for ns in &namespaces {
            side.create_namespace(ns)?;
        }
    }
    let etcd_version = etcd.version();
    println!(
        "kube-apiserver {} (its /version says {}) and wasm-apiserver {} with the wardle plugin, on etcd {etcd_version} \
         (kube-apiserver's consistent LISTs from {}); HTTPS ({} / {} by ALPN, rustls client, a client certificate in \
         system:masters) on both; kube-apiserver's priority level for these requests: {}; load average before the \
         run: {}",
        binary.display(),
        sides[0].version(),
        sides[1].version(),
        if progress_notify_fixed(&etcd_version) { "its watch cache" } else { "etcd: this etcd is older than 3.4.31 / 3.5.13" },
        sides[0].http_version()?,
        sides[1].http_version()?,
        sides[0].priority_level()?.unwrap_or_else(|| "not given".to_owned()),
        load_average.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    );
    // Idle: after start (kube-apiserver's CRD established), once the start-up work has settled.
    std::thread::sleep(Duration::from_secs(10));
    let idle = [sides[0].rss_mib(), sides[1].rss_mib()];
    let peaks = PeakRss::start(vec![sides[0].pid(), sides[1].pid()]);

    let mut rows = Vec::new();
    let mut latency_rows = Vec::new();
    let requests = o.requests;
    // The control plane's own writes: Event creates and Lease renewals.
    let mut event_base = 0;
    for &c in &o.concurrency {
        let (k, w) = both(&sides, |s| {
            let op = control_plane::create_event(s, "events");
            let base = event_base;
            run(s, c, requests, move |client, i| op(client, base + i))
        })?;
        event_base += requests;
        rows.push(Row {
            measure: format!("Event creates/s, concurrency {c}"),
            kube: k.per_sec,
            wasm: w.per_sec,
            target: Some((2.0, true)),
        });
        latency_rows.push((format!("Event create, concurrency {c}"), k, w));
        let (k, w) = both(&sides, |s| {
            run(
                s,
                c,
                requests,
                control_plane::lease_renewals(s, &format!("leases-c{c}"), c)?,
            )
        })?;
        rows.push(Row {
            measure: format!("Lease renewals/s (PUT with resourceVersion), concurrency {c}"),
            kube: k.per_sec,
            wasm: w.per_sec,
            target: Some((2.0, true)),
        });
        latency_rows.push((format!("Lease renewal, concurrency {c}"), k, w));
    }
    if o.only_control_plane {
        let peak = peaks.stop();
        println!();
        println!("| measure | kube-apiserver | wasm-apiserver | wasm / kube | target | met |");
        println!("|---|---|---|---|---|---|");
        for row in &rows {
            row.print();
        }
        println!(
            "| RSS idle after start / peak, MiB | {:.1} / {:.1} | {:.1} / {:.1} | | | |",
            idle[0], peak[0], idle[1], peak[1]
        );
        println!();
        print_latencies(&latency_rows);
        return Ok(());
    }
    for &c in &o.concurrency {
        let (k, w) = both(&sides, |s| {
            run(s, c, requests, create(collection(s, &format!("create-c{c}")), "f"))
        })?;
        rows.push(Row {
            measure: format!("creates/s, concurrency {c}"),
            kube: k.per_sec,
            wasm: w.per_sec,
            target: Some((2.0, true)),
        });
        latency_rows.push((format!("create, concurrency {c}"), k, w));
    }
    for side in &sides {
        run(side, 8, 100, create(collection(side, "list"), "l"))?;
    }
    let lists = (requests / 4).max(20);
    for &c in &o.concurrency {
        for (what, query) in [("consistent", ""), ("resourceVersion=0", "?resourceVersion=0")] {
            let (k, w) = both(&sides, |s| {
                run(s, c, requests, get(format!("{}/l0{query}", collection(s, "list"))))
            })?;
            rows.push(Row {
                measure: format!("GET/s of one flunder ({what}), concurrency {c}"),
                kube: k.per_sec,
                wasm: w.per_sec,
                target: None,
            });
            latency_rows.push((format!("GET ({what}), concurrency {c}"), k, w));
        }
        for (what, query) in [("consistent", ""), ("resourceVersion=0", "?resourceVersion=0")] {
            let (k, w) = both(&sides, |s| {
                run(s, c, lists, get(format!("{}{query}", collection(s, "list"))))
            })?;
            rows.push(Row {
                measure: format!("LIST(100)/s ({what}), concurrency {c}"),
                kube: k.per_sec,
                wasm: w.per_sec,
                target: Some((2.0, true)),
            });
            latency_rows.push((format!("LIST(100) ({what}), concurrency {c}"), k, w));
        }
    }
    // Consistent LISTs while another client of the same etcd writes outside both prefixes every 10 ms (as a
    // kube-apiserver sharing its etcd does): each write moves the revision a consistent read must reach, and the
    // watch cache never sees it. A cache that waited for an event that never comes once made this 0.1x.
    {
        let writer = servers::foreign_writer(&etcd, Duration::from_millis(10));
        let (k, w) = both(&sides, |s| run(s, 1, lists, get(collection(s, "list"))))?;
        let written = writer.stop();
        anyhow::ensure!(written > 0, "the foreign writer wrote nothing to etcd");
        rows.push(Row {
            measure: "LIST(100)/s (consistent, another etcd client writing every 10 ms), concurrency 1".to_owned(),
            kube: k.per_sec,
            wasm: w.per_sec,
            target: Some((2.0, true)),
        });
        latency_rows.push((
            "LIST(100) (consistent, foreign etcd writes), concurrency 1".to_owned(),
            k,
            w,
        ));
    }
    let fan_outs = [
        watch::fan_out(&sides[0], "watch", o.watchers, o.events, 8)?,
        watch::fan_out(&sides[1], "watch", o.watchers, o.events, 8)?,
    ];
    // API Priority and Fairness: the victim's GETs of one flunder, alone and while the flooder LISTs 100.
    let floods = [&sides[0], &sides[1]].map(|s| {
        let list = collection(s, "list");
        flood::measure(s, &format!("{list}/l0"), &list, o.requests / 2, o.flooders)
            .with_context(|| format!("{}: {}", s.name, s.log_tail(20)))
    });
    let [kube_flood, wasm_flood] = floods;
    let floods = [kube_flood?, wasm_flood?];
    let peak = peaks.stop();

    println!();
    println!("| measure | kube-apiserver | wasm-apiserver | wasm / kube | target | met |");
    println!("|---|---|---|---|---|---|");
    for row in &rows {
        row.print();
    }
    let fan_out = format!("{} watchers × {} creates at concurrency 8", o.watchers, o.events);
    for row in [
        Row {
            measure: format!("watch fan-out: events delivered/s ({fan_out})"),
            kube: fan_outs[0].deliveries_per_sec,
            wasm: fan_outs[1].deliveries_per_sec,
            target: None,
        },
        Row {
            measure: "watch fan-out: p50 ms from create sent to event received (lower is better)".to_owned(),
            kube: fan_outs[0].p50_ms,
            wasm: fan_outs[1].p50_ms,
            target: None,
        },
        Row {
            measure: "watch fan-out: p99 ms from create sent to event received (lower is better)".to_owned(),
            kube: fan_outs[0].p99_ms,
            wasm: fan_outs[1].p99_ms,
            target: None,
        },
        Row {
            measure: "RSS idle after start, MiB (server process only; lower is better)".to_owned(),
            kube: idle[0],
            wasm: idle[1],
            target: Some((0.2, false)),
        },
        Row {
            measure: "RSS peak during the runs, MiB (sampled every 50 ms; lower is better)".to_owned(),
            kube: peak[0],
            wasm: peak[1],
            target: Some((0.2, false)),
        },
    ] {
        row.print();
    }
    println!();
    println!(
        "| API Priority and Fairness: another user's GET while `flooder` ({} connections) LISTs 100 flunders at a \
         level of one share ({}) | kube-apiserver | wasm-apiserver |",
        o.flooders,
        match o.seats {
            Some((r, m)) => format!("{} seats", r + m),
            None => "600 seats, the default".to_owned(),
        }
    );
    println!("|---|---|---|");
    let pair = |which: (f64, f64)| format!("{:.2} / {:.2}", which.0, which.1);
    println!(
        "| victim GET p50 / p99 alone, ms | {} | {} |",
        pair(floods[0].alone),
        pair(floods[1].alone)
    );
    println!(
        "| victim GET p50 / p99 during the flood, ms | {} | {} |",
        pair(floods[0].flooded),
        pair(floods[1].flooded)
    );
    let ratio = |f: &flood::Flooded| f.flooded.1 / f.alone.1;
    println!(
        "| p99 during / alone (target ≤ 2×) | {:.2}× | {:.2}× ({}) |",
        ratio(&floods[0]),
        ratio(&floods[1]),
        if ratio(&floods[1]) <= 2.0 { "met" } else { "not met" }
    );
    println!(
        "| the flood's LISTs served / refused (429) per second | {:.0} / {:.0} | {:.0} / {:.0} |",
        floods[0].flood_per_sec.0, floods[0].flood_per_sec.1, floods[1].flood_per_sec.0, floods[1].flood_per_sec.1
    );
    println!();
    print_latencies(&latency_rows);
    Ok(())
}
