//! Leader election among hosts sharing an etcd: one holds the lease of the controllers that must run once, so a
//! tenant deleted through any host has its data deleted by the leader; when the leader is killed, another host takes
//! the lease over once it has seen it unchanged for a lease duration, and finalizes the next deletion.

use std::time::Duration;

use e2e::{wait_until, Server};
use serde_json::{json, Value};

const TENANTS: &str = "/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants";
const LEASE_KEY: &str = "/registry/coordination.k8s.io/leases/kube-system/wasm-apiserver-controllers";

/// The lease's holder, read from etcd.
fn holder(endpoint: &str) -> Option<String> {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let reply: Value = reqwest::blocking::Client::new()
        .post(format!("{endpoint}/v3/kv/range"))
        .json(&json!({"key": b64.encode(LEASE_KEY)}))
        .send()
        .ok()?
        .json()
        .ok()?;
    let value = b64.decode(reply["kvs"][0]["value"].as_str()?).ok()?;
    let lease: Value = serde_json::from_slice(&value).ok()?;
    lease["spec"]["holderIdentity"].as_str().map(str::to_owned)
}

fn tenant(name: &str) -> Value {
    json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant", "metadata": {"name": name}})
}

/// Creates tenant `name` through `server`, waits until it is served there, deletes it through `server` and waits
/// until its object is gone (finalized by whichever host leads).
fn create_and_delete(server: &Server, name: &str) {
    let http = server.http();
    http.post_json(TENANTS, &tenant(name)).expect(201);
    assert!(
        wait_until(Duration::from_secs(10), || http
            .get(&format!("/tenants/{name}/api/v1/namespaces"))
            .status
            == 200),
        "{name} was never served"
    );
    http.delete(&format!("{TENANTS}/{name}")).expect(200);
    assert!(
        wait_until(Duration::from_secs(20), || http
            .get(&format!("{TENANTS}/{name}"))
            .status
            == 404),
        "{name} was never finalized: {}\n{}",
        http.get(&format!("{TENANTS}/{name}")).text,
        server.log_tail(20)
    );
}

#[test]
fn the_leader_finalizes_deleted_tenants_and_another_host_takes_over_when_it_dies() {
    let lease = ["--leader-elect-lease-duration", "2s"];
    let mut a = Server::start_on_etcd(
        &["wardle"],
        &[&lease[..], &["--leader-elect-identity", "host-a"]].concat(),
    );
    let endpoint = a.etcd_mut().expect("on etcd").endpoint();
    let b = Server::start_with_args(
        &["wardle"],
        &[
            &lease[..],
            &["--etcd-servers", &endpoint, "--leader-elect-identity", "host-b"],
        ]
        .concat(),
    );
    // host-a started first, on an empty store: it holds the lease, and host-b follows.
    assert!(
        wait_until(Duration::from_secs(10), || holder(&endpoint).as_deref()
            == Some("host-a")),
        "the lease: {:?}",
        holder(&endpoint)
    );
    // A tenant deleted through the follower is finalized by the leader.
    create_and_delete(&b, "t1");
    assert!(a.log_contains("deleted tenant's data deleted"), "{}", a.log_tail(20));
    assert!(!b.log_contains("deleted tenant's data deleted"), "{}", b.log_tail(20));

    // The leader dies: host-b takes the lease over, and finalizes the next deletion.
    a.kill();
    assert!(
        wait_until(Duration::from_secs(15), || holder(&endpoint).as_deref()
            == Some("host-b")),
        "host-b never took the lease: {:?}\n{}",
        holder(&endpoint),
        b.log_tail(20)
    );
    create_and_delete(&b, "t2");
    assert!(b.log_contains("deleted tenant's data deleted"), "{}", b.log_tail(20));
}
