//! The deployment manifests (deploy/: the aggregated and standalone overlays) against a real kube-apiserver 1.37
//! (built by scripts/build-kube-apiserver.sh, `KUBE_APISERVER`): `kubectl apply --dry-run=server -k` accepts both
//! overlays, and the aggregated one is applied. Its two replicas run with the flags and files its Deployment gives them (each
//! volume mount made a directory, the service account's token from kube-apiserver's TokenRequest, the flags' paths
//! and the kubeconfig's in-cluster paths taken to those directories), on one etcd, behind one APIService through
//! their EndpointSlices (kube-apiserver routes to endpoints, `--enable-aggregator-routing`; on one machine the
//! replicas share its address on two ports, one slice each). One replica is killed during kubectl traffic through
//! kube-apiserver: every request succeeds, the few that reached the dead replica on a retry, and the APIService
//! stays Available. The pods' probes, security context and anti-affinity are the kubelet's and the scheduler's,
//! and are not exercised here.
//!
//! No kubelet or controller-manager runs here: the test does what they would, starting the pods' processes and
//! marking the killed replica's endpoint not ready once it stops answering, as the EndpointSlice controller does
//! when a readiness probe fails.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use e2e::{kube_apiserver_binary, wait_until, Etcd, KubeApiserver, KubectlAt, Server};
use serde_json::{json, Value};

const NAMESPACE: &str = "wasm-apiserver";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// A path of the pod's filesystem in its directory `root`.
fn in_pod(root: &Path, path: &str) -> PathBuf {
    root.join(path.trim_start_matches('/'))
}

/// Makes the pod's filesystem under `root` as the kubelet would: each of the container's volume mounts a directory
/// (a Secret's or a ConfigMap's keys as files, an emptyDir empty), and the service account's token, CA and namespace.
/// Returns the mount paths.
fn make_pod(kubectl: &KubectlAt, kas: &KubeApiserver, deployment: &Value, root: &Path) -> Vec<String> {
    let spec = &deployment["spec"]["template"]["spec"];
    let volumes: BTreeMap<&str, &Value> = spec["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["name"].as_str().unwrap(), v))
        .collect();
    let mut mounts = Vec::new();
    let b64 = base64::engine::general_purpose::STANDARD;
    for mount in spec["containers"][0]["volumeMounts"].as_array().unwrap() {
        let path = mount["mountPath"].as_str().unwrap();
        let dir = in_pod(root, path);
        std::fs::create_dir_all(&dir).unwrap();
        let volume = volumes[mount["name"].as_str().unwrap()];
        let files: Vec<(String, Vec<u8>)> = if let Some(secret) = volume.pointer("/secret/secretName") {
            let secret = kubectl.json(&["get", "secret", "-n", NAMESPACE, secret.as_str().unwrap()]);
            secret["data"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), b64.decode(v.as_str().unwrap()).unwrap()))
                .collect()
        } else if let Some(name) = volume.pointer("/configMap/name") {
            let cm = kubectl.json(&["get", "configmap", "-n", NAMESPACE, name.as_str().unwrap()]);
            cm["data"]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().as_bytes().to_vec()))
                .collect()
        } else {
            assert!(volume.get("emptyDir").is_some(), "an unexpected volume: {volume}");
            Vec::new()
        };
        for (name, bytes) in files {
            std::fs::write(dir.join(name), bytes).unwrap();
        }
        mounts.push(path.to_owned());
    }
    let sa = "/var/run/secrets/kubernetes.io/serviceaccount";
    let sa_dir = in_pod(root, sa);
    std::fs::create_dir_all(&sa_dir).unwrap();
    let account = spec["serviceAccountName"].as_str().unwrap();
    let token = kubectl.ok(&["create", "token", "-n", NAMESPACE, account, "--duration=1h"], None);
    std::fs::write(sa_dir.join("token"), token.trim()).unwrap();
    std::fs::write(sa_dir.join("ca.crt"), &kas.ca.pem).unwrap();
    std::fs::write(sa_dir.join("namespace"), NAMESPACE).unwrap();
    mounts.push(sa.to_owned());
    mounts
}

/// The container's flags for a replica: the Deployment's, with the pod's paths under `root`, the cluster's
/// kube-apiserver for `https://kubernetes.default.svc` in the files mounted, and the test's etcd, plugin and data
/// directories and address. `serve`, `--plugin-dir` and `--data-dir` are given by the test's server (the image's
/// plugins, the emptyDir).
fn replica_args(deployment: &Value, root: &Path, mounts: &[String], kas: &KubeApiserver, etcd: &Etcd) -> Vec<String> {
    // The kubeconfigs and files mounted name the pod's paths and the cluster's DNS name.
    for mount in mounts {
        let dir = in_pod(root, mount);
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let mut moved = text.replace("https://kubernetes.default.svc", &kas.url());
            for m in mounts {
                moved = moved.replace(&format!("{m}/"), &format!("{}/", in_pod(root, m).display()));
            }
            if moved != text {
                std::fs::write(&path, moved).unwrap();
            }
        }
    }
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let mut args = Vec::new();
    for arg in container["args"].as_array().unwrap() {
        let arg = arg.as_str().unwrap();
        let (flag, value) = arg.split_once('=').unwrap_or((arg, ""));
        match flag {
            "serve" | "--plugin-dir" | "--data-dir" | "--secure-port" => continue,
            "--etcd-servers" => args.push(format!("--etcd-servers={}", etcd.endpoint())),
            _ if mounts.iter().any(|m| value.starts_with(&format!("{m}/"))) => {
                args.push(format!("{flag}={}", in_pod(root, value).display()))
            }
            _ => args.push(arg.to_owned()),
        }
    }
    args
}

fn available(kubectl: &KubectlAt, name: &str) -> bool {
    let out = kubectl.run(&["get", "apiservice", name, "-o", "json"], None);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    doc["status"]["conditions"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["type"] == "Available" && c["status"] == "True"))
}

/// This machine's address on its network (EndpointSlices refuse loopback addresses): the source address of a route
/// out, found without sending anything.
fn host_address() -> String {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").unwrap();
    for peer in ["192.0.2.1:9", "10.255.255.255:9", "8.8.8.8:9"] {
        if socket.connect(peer).is_ok() {
            let ip = socket.local_addr().unwrap().ip();
            if !ip.is_loopback() && !ip.is_unspecified() {
                return ip.to_string();
            }
        }
    }
    panic!("this machine has no address outside loopback for the replicas' endpoints")
}

/// The replicas' endpoints: one EndpointSlice each (on one machine they share its address, on two ports), as the
/// EndpointSlice controller writes endpoints of different ports.
fn endpoint_slices(address: &str, ports: [u16; 2], ready: [bool; 2]) -> String {
    let slice = |i: usize| {
        json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("wasm-apiserver-{i}"), "namespace": NAMESPACE,
                         "labels": {"kubernetes.io/service-name": "wasm-apiserver"}},
            "addressType": "IPv4",
            "ports": [{"name": "https", "port": ports[i], "protocol": "TCP"}],
            "endpoints": [{"addresses": [address], "conditions": {"ready": ready[i]}}]
        })
    };
    json!({"apiVersion": "v1", "kind": "List", "items": [slice(0), slice(1)]}).to_string()
}

#[test]
fn deploy_manifests_run_two_replicas_behind_one_apiservice_and_one_may_die() {
    let Some(binary) = kube_apiserver_binary() else {
        return;
    };
    let kube_etcd = Etcd::start().unwrap();
    let kas = KubeApiserver::start_with_args(&binary, &kube_etcd, &["--enable-aggregator-routing=true"])
        .unwrap_or_else(|e| panic!("{e:#}"));
    let d = kas.dir();
    let kubectl = KubectlAt {
        kubeconfig: kas.kubeconfig("admin", &kas.admin),
        cache: d.join("kube-cache"),
    };

    // The manifests, with a serving certificate for the Service's name signed by the cluster's CA.
    let deploy = d.join("deploy");
    copy_dir(&repository().join("deploy"), &deploy);
    let certs = deploy.join("aggregated").join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    let (cert, key) = kas.ca.issue(
        "wasm-apiserver",
        None,
        &["wasm-apiserver.wasm-apiserver.svc", "localhost", "127.0.0.1"],
        true,
    );
    std::fs::write(certs.join("tls.crt"), cert).unwrap();
    std::fs::write(certs.join("tls.key"), key).unwrap();
    std::fs::write(certs.join("ca.crt"), &kas.ca.pem).unwrap();

    // Both overlays pass kube-apiserver's validation (a dry run of namespaced objects needs their namespace).
    kubectl.ok(&["create", "namespace", NAMESPACE], None);
    for overlay in ["aggregated", "standalone"] {
        let dir = deploy.join(overlay);
        let out = kubectl.ok(&["apply", "--dry-run=server", "-k", dir.to_str().unwrap()], None);
        assert!(
            out.contains("deployment.apps/wasm-apiserver created (server dry run)"),
            "{overlay}: {out}"
        );
    }
    kubectl.ok(&["apply", "-k", deploy.join("aggregated").to_str().unwrap()], None);
    let deployment = kubectl.json(&["get", "deployment", "-n", NAMESPACE, "wasm-apiserver"]);
    assert_eq!(deployment["spec"]["replicas"], 2);
    let apiservice = kubectl.json(&["get", "apiservice", "v1beta1.wardle.example.com"]);
    assert_eq!(
        apiservice["spec"]["caBundle"],
        base64::engine::general_purpose::STANDARD.encode(&kas.ca.pem)
    );

    // The two pods: the same flags and files, one etcd.
    let etcd = Etcd::start().unwrap();
    let address = host_address();
    let ports = [e2e::free_port().unwrap(), e2e::free_port().unwrap()];
    let mut replicas = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let root = d.join(format!("pod-{i}"));
        let mounts = make_pod(&kubectl, &kas, &deployment, &root);
        let mut args = replica_args(&deployment, &root, &mounts, &kas, &etcd);
        args.extend([
            "--bind-address".into(),
            address.clone(),
            "--secure-port".into(),
            port.to_string(),
        ]);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        replicas.push(Server::start_with_args(&["wardle"], &args));
    }
    assert!(
        replicas[0].log_contains("read the front proxy's trust"),
        "{}",
        replicas[0].log_tail(20)
    );
    kubectl.ok(
        &["apply", "-f", "-"],
        Some(&endpoint_slices(&address, ports, [true, true])),
    );
    for version in ["v1alpha1", "v1beta1"] {
        let name = format!("{version}.wardle.example.com");
        assert!(
            wait_until(Duration::from_secs(90), || available(&kubectl, &name)),
            "{name} never became Available: {}\nkube-apiserver:\n{}\nreplica:\n{}",
            String::from_utf8_lossy(&kubectl.run(&["get", "apiservice", &name, "-o", "yaml"], None).stdout),
            kas.log_tail(30),
            replicas[0].log_tail(30)
        );
    }

    // kubectl traffic through kube-apiserver while the first replica dies.
    let done = Arc::new(AtomicUsize::new(0));
    let traffic = {
        let kubectl = KubectlAt {
            kubeconfig: kubectl.kubeconfig.clone(),
            cache: d.join("kube-cache-traffic"),
        };
        let done = done.clone();
        std::thread::spawn(move || {
            let mut retried = Vec::new();
            for i in 0..60 {
                let flunder = e2e::flunder_v1beta1(&format!("f{i}"), "x").to_string();
                let attempt = |kubectl: &KubectlAt| match i % 2 {
                    0 => kubectl.run(&["create", "-f", "-"], Some(&flunder)),
                    _ => kubectl.run(&["get", "flunders"], None),
                };
                let first = attempt(&kubectl);
                if !first.status.success() {
                    // A client's retry, until the dead replica's endpoint is marked not ready (the test does it
                    // right after the kill; a kubelet's probe within seconds).
                    let mut last = String::new();
                    let recovered = wait_until(Duration::from_secs(15), || {
                        std::thread::sleep(Duration::from_millis(500));
                        let again = attempt(&kubectl);
                        last = String::from_utf8_lossy(&again.stderr).into_owned();
                        // A create the dead replica committed before it died is there already.
                        again.status.success() || last.contains("AlreadyExists")
                    });
                    assert!(
                        recovered,
                        "request {i} kept failing: {}
last: {last}",
                        String::from_utf8_lossy(&first.stderr)
                    );
                    retried.push(i);
                }
                done.fetch_add(1, Ordering::SeqCst);
            }
            retried
        })
    };
    assert!(wait_until(Duration::from_secs(60), || done.load(Ordering::SeqCst) >= 16));
    replicas[0].kill();
    // Its readiness probe fails: the EndpointSlice controller marks it not ready.
    kubectl.ok(
        &["apply", "-f", "-"],
        Some(&endpoint_slices(&address, ports, [false, true])),
    );
    let mut unavailable = Vec::new();
    while !traffic.is_finished() {
        if !available(&kubectl, "v1beta1.wardle.example.com") {
            unavailable.push(done.load(Ordering::SeqCst));
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let retried = traffic.join().unwrap();
    eprintln!("requests retried: {retried:?}");
    // Only those in flight on the replica or sent to it before its endpoint was marked not ready.
    assert!(retried.len() <= 5, "requests retried: {retried:?}");
    assert!(
        unavailable.is_empty(),
        "the APIService was unavailable at requests {unavailable:?}"
    );
    assert!(available(&kubectl, "v1beta1.wardle.example.com"));
    // Both replicas served kubectl's requests (the aggregator picks one at random each time).
    for replica in &replicas {
        assert!(replica.log_contains("user=admin"), "{}", replica.log_tail(20));
    }
    let names = kubectl.ok(&["get", "flunders", "-o", "name"], None);
    assert_eq!(names.lines().count(), 30, "{names}");
    drop(replicas);
    drop(etcd);
}
