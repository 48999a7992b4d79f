//! API Priority and Fairness under a flood, the same on both servers: a user (`flooder`) sent by a FlowSchema to a
//! priority level of one share that lends and borrows nothing (`bench-low`) LISTs 100 flunders from many
//! connections without pause, while another user (`victim`, at `global-default`) GETs one flunder at a time. The
//! victim's latencies alone and during the flood show whether the flood stays in its level.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use reqwest::blocking::Client;
use serde_json::{json, Value};

use super::load::quantile_ms;
use super::servers::Side;

/// The group both users are in (bound to cluster-admin, so that RBAC lets them read flunders).
const GROUP: &str = "bench-users";

/// What one side measured.
pub struct Flooded {
    /// The victim's p50 and p99 alone, ms.
    pub alone: (f64, f64),
    /// The victim's p50 and p99 during the flood, ms.
    pub flooded: (f64, f64),
    /// The flood's LISTs served per second, and refused (429) per second.
    pub flood_per_sec: (f64, f64),
}

fn post(side: &Side, path: &str, body: &Value) -> anyhow::Result<()> {
    let r = side.client().post(format!("{}{path}", side.base)).json(body).send()?;
    let status = r.status().as_u16();
    if status != 201 && status != 409 {
        bail!("{}: POST {path} answered {status}: {}", side.name, r.text()?);
    }
    Ok(())
}

/// The users' binding, the level and the schema.
fn configure(side: &Side) -> anyhow::Result<String> {
    post(
        side,
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
        &json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": GROUP},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": GROUP}]}),
    )?;
    let flowcontrol = "/apis/flowcontrol.apiserver.k8s.io/v1";
    post(
        side,
        &format!("{flowcontrol}/prioritylevelconfigurations"),
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
            "metadata": {"name": "bench-low"},
            "spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 1, "lendablePercent": 0,
                "borrowingLimitPercent": 0,
                "limitResponse": {"type": "Queue", "queuing": {"queues": 16, "handSize": 4, "queueLengthLimit": 50}}}}}),
    )?;
    post(
        side,
        &format!("{flowcontrol}/flowschemas"),
        &json!({"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
            "metadata": {"name": "bench-flooder"},
            "spec": {"priorityLevelConfiguration": {"name": "bench-low"}, "matchingPrecedence": 500,
                "distinguisherMethod": {"type": "ByUser"},
                "rules": [{"subjects": [{"kind": "User", "user": {"name": "flooder"}}],
                    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                        "clusterScope": true, "namespaces": ["*"]}]}]}}),
    )?;
    let level = side.get_json(&format!("{flowcontrol}/prioritylevelconfigurations/bench-low"))?;
    Ok(level["metadata"]["uid"].as_str().unwrap_or_default().to_owned())
}

/// `requests` GETs of `url` one at a time: p50 and p99, ms.
fn latencies(client: &Client, url: &str, requests: usize) -> anyhow::Result<(f64, f64)> {
    let mut took = Vec::with_capacity(requests);
    for _ in 0..requests {
        let t = Instant::now();
        let r = client.get(url).header("Accept", "application/json").send()?;
        let status = r.status().as_u16();
        r.bytes()?;
        if status != 200 {
            bail!("the victim's GET answered {status}");
        }
        took.push(t.elapsed());
    }
    took.sort();
    Ok((quantile_ms(&took, 0.5), quantile_ms(&took, 0.99)))
}

/// The victim's GETs of `get_url` alone, then while `flooders` connections of the flooder LIST `list_url`.
pub fn measure(
    side: &Side,
    get_url: &str,
    list_url: &str,
    requests: usize,
    flooders: usize,
) -> anyhow::Result<Flooded> {
    let level_uid = configure(side)?;
    let victim = side.client_as("victim", GROUP)?;
    let flooder = side.client_as("flooder", GROUP)?;
    // The configuration is in force once the flooder's requests name the level (kube-apiserver's controller
    // follows its objects in the background).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = flooder.get(list_url).send()?;
        let named = r
            .headers()
            .get("X-Kubernetes-PF-PriorityLevel-UID")
            .is_some_and(|v| v.to_str().is_ok_and(|v| v == level_uid));
        if named && r.status().is_success() {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "{}: the flooder's requests never went to bench-low (answered {})",
                side.name,
                r.status()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    latencies(&victim, get_url, requests / 4)?; // warm-up
    let alone = latencies(&victim, get_url, requests)?;
    let stop = Arc::new(AtomicBool::new(false));
    let (served, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let threads: Vec<_> = (0..flooders)
        .map(|_| {
            let client = side.client_as("flooder", GROUP).context("a flooder's client")?;
            let (stop, served, refused, url) = (stop.clone(), served.clone(), refused.clone(), list_url.to_owned());
            Ok(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    match client.get(&url).header("Accept", "application/json").send() {
                        Ok(r) if r.status().as_u16() == 429 => {
                            let _ = r.bytes();
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(r) => {
                            let _ = r.bytes();
                            served.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            }))
        })
        .collect::<anyhow::Result<_>>()?;
    // The flood under way before the victim's clock starts.
    std::thread::sleep(Duration::from_secs(1));
    let (served_before, refused_before) = (served.load(Ordering::Relaxed), refused.load(Ordering::Relaxed));
    let started = Instant::now();
    let flooded = latencies(&victim, get_url, requests);
    let elapsed = started.elapsed().as_secs_f64();
    let flood_per_sec = (
        (served.load(Ordering::Relaxed) - served_before) as f64 / elapsed,
        (refused.load(Ordering::Relaxed) - refused_before) as f64 / elapsed,
    );
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    Ok(Flooded {
        alone,
        flooded: flooded?,
        flood_per_sec,
    })
}
