//! The control plane's own writes, the same on both servers: Event creates (what controllers record) and Lease
//! renewals (what leader election does: an update with the lease's last resourceVersion), at a few concurrencies.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::bail;
use reqwest::blocking::Client;
use serde_json::{json, Value};

use super::servers::Side;

/// An operation creating Event `e<i>` in `namespace`, as client-go's event recorder writes one.
pub fn create_event(
    side: &Side,
    namespace: &str,
) -> impl Fn(&Client, usize) -> anyhow::Result<()> + Send + Sync + 'static {
    let url = format!("{}/api/v1/namespaces/{namespace}/events", side.base);
    let namespace = namespace.to_owned();
    move |c, i| {
        let now = apimachinery::object::now_rfc3339();
        let event = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("e{i}"), "namespace": namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "ConfigMap", "name": format!("cm{}", i % 10), "namespace": namespace},
            "reason": "Configured", "message": "configured it", "type": "Normal",
            "source": {"component": "bench"}, "firstTimestamp": now, "lastTimestamp": now, "count": 1});
        let r = c.post(&url).json(&event).send()?;
        let status = r.status().as_u16();
        let body = r.bytes()?;
        if status != 201 {
            bail!("event create answered {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(())
    }
}

thread_local! {
    /// The lease a worker thread renews.
    static LEASE: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Leases `l0`..`l<count>` in `namespace`, made now, each with its resourceVersion; and an operation renewing a
/// worker's own lease (each worker thread takes one) with a PUT of its last resourceVersion.
pub fn lease_renewals(
    side: &Side,
    namespace: &str,
    count: usize,
) -> anyhow::Result<impl Fn(&Client, usize) -> anyhow::Result<()> + Send + Sync + 'static> {
    let url = format!(
        "{}/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
        side.base
    );
    let client = side.client();
    let lease = |name: &str, rv: Option<&str>| {
        let mut metadata = json!({"name": name});
        if let Some(rv) = rv {
            metadata["resourceVersion"] = json!(rv);
        }
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
            "spec": {"holderIdentity": "bench", "leaseDurationSeconds": 15,
                "renewTime": apimachinery::object::now_micro_time()}})
    };
    let resource_version = |body: &[u8]| -> anyhow::Result<String> {
        let v: Value = serde_json::from_slice(body)?;
        Ok(v["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned())
    };
    let mut versions = Vec::new();
    for i in 0..count {
        let r = client.post(&url).json(&lease(&format!("l{i}"), None)).send()?;
        let status = r.status().as_u16();
        let body = r.bytes()?;
        if status != 201 {
            bail!("lease create answered {status}: {}", String::from_utf8_lossy(&body));
        }
        versions.push(Mutex::new(resource_version(&body)?));
    }
    let versions = Arc::new(versions);
    let next = Arc::new(AtomicUsize::new(0));
    Ok(move |c: &Client, _: usize| {
        let slot = LEASE.with(|l| match l.get() {
            Some(slot) => slot,
            None => {
                let slot = next.fetch_add(1, Ordering::Relaxed) % versions.len();
                l.set(Some(slot));
                slot
            }
        });
        let name = format!("l{slot}");
        let mut rv = versions[slot].lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let r = c.put(format!("{url}/{name}")).json(&lease(&name, Some(&rv))).send()?;
        let status = r.status().as_u16();
        let body = r.bytes()?;
        if status != 200 {
            bail!("lease renewal answered {status}: {}", String::from_utf8_lossy(&body));
        }
        *rv = resource_version(&body)?;
        Ok(())
    })
}
