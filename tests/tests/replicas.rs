//! Three hosts on one etcd serve every tenant and plugin: a tenant created through one is served by the others; a
//! plugin uploaded through one is served by all three, and upgraded through another during a load of creates and
//! GETs across the three with no failed request; when one host is killed, the others keep serving.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use e2e::{target_dir, wait_until, Http, Server};
use serde_json::{json, Value};

const TENANTS: &str = "/apis/tenancy.wasm-apiserver.io/v1alpha1/tenants";
const PLUGINS: &str = "/tenants/t1/apis/tenancy.wasm-apiserver.io/v1alpha1/plugins";
const NOTES: &str = "/tenants/t1/apis/partial.example.com/v1/namespaces/default/notes";

fn upload(http: &Http, plugin: &str) -> String {
    let bytes = std::fs::read(target_dir().join("plugins").join(format!("{plugin}.wasm"))).unwrap();
    let digest = oci::sha256_digest(&bytes);
    http.send(
        reqwest::Method::PUT,
        &format!("{PLUGINS}/notes/content"),
        Some("application/wasm"),
        bytes,
    )
    .expect(200);
    digest
}

/// Waits until every host serves the Plugin `notes` at `digest`.
fn served_everywhere(hosts: &[&Server], digest: &str) {
    for host in hosts {
        let mut last = Value::Null;
        let ok = wait_until(Duration::from_secs(30), || {
            last = host.http().get(&format!("{PLUGINS}/notes")).json.clone();
            last["status"]["phase"] == "Serving" && last["status"]["served"]["digest"] == digest
        });
        assert!(
            ok,
            "{} never served {digest}: {last:#}\n{}",
            host.base_url(),
            host.log_tail(20)
        );
    }
}

/// Creates and reads back notes through each of `hosts` until `stop`; counts the pairs, keeps the failures.
fn load(hosts: &[&Server], stop: &AtomicBool, done: &AtomicUsize, failures: &Mutex<Vec<String>>) {
    std::thread::scope(|scope| {
        for (h, host) in hosts.iter().enumerate() {
            scope.spawn(move || {
                let http = host.http();
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let name = format!("n{h}-{i}-{}", host.port());
                    let note = json!({"apiVersion": "partial.example.com/v1", "kind": "Note",
                                      "metadata": {"name": name}, "spec": {"text": "hello"}});
                    let created = http.post_json(NOTES, &note);
                    let read = http.get(&format!("{NOTES}/{name}"));
                    if created.status != 201 || read.status != 200 {
                        failures.lock().unwrap().push(format!(
                            "{}: create {} {} / get {} {}",
                            host.base_url(),
                            created.status,
                            created.text,
                            read.status,
                            read.text
                        ));
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                    i += 1;
                }
            });
        }
    });
}

#[test]
fn three_hosts_serve_every_tenant_and_plugin_and_roll_an_upgrade_without_a_failed_request() {
    let mut a = Server::start_on_etcd(&[], &["--leader-elect-lease-duration", "2s"]);
    let endpoint = a.etcd_mut().expect("on etcd").endpoint();
    let b = Server::start_with_args(
        &[],
        &["--etcd-servers", &endpoint, "--leader-elect-lease-duration", "2s"],
    );
    let c = Server::start_with_args(
        &[],
        &["--etcd-servers", &endpoint, "--leader-elect-lease-duration", "2s"],
    );

    // A tenant created through A is served by B and C.
    a.http()
        .post_json(
            TENANTS,
            &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Tenant",
                                    "metadata": {"name": "t1"}}),
        )
        .expect(201);
    for host in [&a, &b, &c] {
        assert!(
            wait_until(Duration::from_secs(10), || host
                .http()
                .get("/tenants/t1/api/v1/namespaces")
                .status
                == 200),
            "{} never served t1",
            host.base_url()
        );
    }

    // A plugin uploaded through B is served by the three.
    b.http()
        .post_json(
            PLUGINS,
            &json!({"apiVersion": "tenancy.wasm-apiserver.io/v1alpha1", "kind": "Plugin",
                                    "metadata": {"name": "notes"}, "spec": {"source": {"upload": {}}}}),
        )
        .expect(201);
    let v1 = upload(b.http(), "partial");
    served_everywhere(&[&a, &b, &c], &v1);

    // Each host's readiness lists the plugin with the content hash it serves.
    let short = format!(
        "notes (sha256:{})",
        &oci::sha256_digest(&std::fs::read(target_dir().join("plugins").join("partial.wasm")).unwrap(),)
            ["sha256:".len().."sha256:".len() + 12]
    );
    for host in [&a, &b, &c] {
        let ready = host.http().get("/tenants/t1/readyz?verbose");
        assert!(ready.text.contains(&short), "{short} not in {}", ready.text);
    }

    // Upgraded through C while creates and GETs go to the three: no request fails.
    let (stop, done, failures) = (AtomicBool::new(false), AtomicUsize::new(0), Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        scope.spawn(|| load(&[&a, &b, &c], &stop, &done, &failures));
        assert!(
            wait_until(Duration::from_secs(10), || done.load(Ordering::Relaxed) >= 30),
            "no load"
        );
        let v2 = upload(c.http(), "partial-v2");
        served_everywhere(&[&a, &b, &c], &v2);
        let after = done.load(Ordering::Relaxed);
        assert!(
            wait_until(Duration::from_secs(10), || done.load(Ordering::Relaxed) >= after + 30),
            "no load after"
        );
        stop.store(true, Ordering::Relaxed);
    });
    let failed = failures.lock().unwrap().clone();
    assert!(
        failed.is_empty(),
        "{} of {} requests failed during the roll: {failed:#?}",
        failed.len(),
        done.load(Ordering::Relaxed)
    );
    // One host killed: the two others keep serving, under load.
    a.kill();
    let (stop, done, failures) = (AtomicBool::new(false), AtomicUsize::new(0), Mutex::new(Vec::new()));
    std::thread::scope(|scope| {
        scope.spawn(|| load(&[&b, &c], &stop, &done, &failures));
        assert!(
            wait_until(Duration::from_secs(10), || done.load(Ordering::Relaxed) >= 40),
            "no load"
        );
        stop.store(true, Ordering::Relaxed);
    });
    let failed = failures.lock().unwrap().clone();
    assert!(failed.is_empty(), "requests failed with a host down: {failed:#?}");
}
