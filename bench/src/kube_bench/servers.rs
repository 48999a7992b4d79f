//! The processes of the side-by-side run: one etcd, kube-apiserver serving the flunder CRD on it, and
//! wasm-apiserver serving the wardle plugin on it, each server reached over HTTPS with a client certificate of a
//! `system:masters` user.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use serde_json::{json, Value};
use tempfile::TempDir;

use super::pki::{self, Ca};

/// How long a server may take to become ready (kube-apiserver starts its controllers and makes its bootstrap
/// objects first).
const READY_TIMEOUT: Duration = Duration::from_secs(180);

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Polls `ready` every 50 ms until it is true or `timeout` passes.
fn poll(timeout: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub use bench::etcd::Etcd;

/// Starts a thread that writes a key under `/other/` of `etcd` every `every` (a client of the same etcd outside both
/// servers' prefixes, as another kube-apiserver sharing it), until the returned writer is dropped.
pub fn foreign_writer(etcd: &Etcd, every: Duration) -> ForeignWriter {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let url = format!("{}/v3/kv/put", etcd.endpoint);
    let thread = std::thread::spawn({
        let stop = stop.clone();
        move || {
            use base64::Engine as _;
            let client = reqwest::blocking::Client::new();
            let encode = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
            let mut written = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let body = serde_json::json!({
                    "key": encode(&format!("/other/k{}", written % 100)),
                    "value": encode("x"),
                });
                if client
                    .post(&url)
                    .json(&body)
                    .send()
                    .is_ok_and(|r| r.status().is_success())
                {
                    written += 1;
                }
                std::thread::sleep(every);
            }
            written
        }
    });
    ForeignWriter {
        stop,
        thread: Some(thread),
    }
}

/// Writes to etcd outside the servers' prefixes until dropped ([`foreign_writer`]).
pub struct ForeignWriter {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl ForeignWriter {
    /// Stops writing; returns how many writes were made.
    pub fn stop(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap_or(0))
    }
}

impl Drop for ForeignWriter {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// One API server under test (a process, killed on drop) and how to reach it.
pub struct Side {
    /// `kube-apiserver` or `wasm-apiserver`.
    pub name: &'static str,
    /// The HTTPS base URL.
    pub base: String,
    ca: reqwest::Certificate,
    identity: reqwest::Identity,
    /// How client certificates of other users are issued.
    users: Users,
    child: Child,
    log: PathBuf,
    _dir: TempDir,
}

impl Drop for Side {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Who issues a side's client certificates.
enum Users {
    /// kube-apiserver's CA.
    Ca(Box<Ca>),
    /// `wasm-apiserver kubeconfig` with the server's data directory.
    Kubeconfig { server: PathBuf, data_dir: PathBuf },
}

/// The client certificate and CA of a kubeconfig's first user and cluster (base64 fields).
fn kubeconfig_identity(kubeconfig: &str) -> anyhow::Result<(reqwest::Certificate, reqwest::Identity)> {
    let field = |name: &str| -> anyhow::Result<Vec<u8>> {
        use base64::Engine as _;
        let value = kubeconfig
            .lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
            .with_context(|| format!("no {name} in the kubeconfig"))?;
        Ok(base64::engine::general_purpose::STANDARD.decode(value.trim())?)
    };
    let ca = reqwest::Certificate::from_pem(&field("certificate-authority-data")?)?;
    let identity =
        reqwest::Identity::from_pem(&[field("client-certificate-data")?, field("client-key-data")?].concat())?;
    Ok((ca, identity))
}

/// `wasm-apiserver kubeconfig` for `user` in `group`, with the PKI of `data_dir` (made on first use).
fn wasm_kubeconfig(server: &Path, data_dir: &Path, base: &str, user: &str, group: &str) -> anyhow::Result<String> {
    let out = Command::new(server)
        .args(["kubeconfig", "--user", user, "--group", group, "--server", base])
        .arg("--data-dir")
        .arg(data_dir)
        .output()
        .with_context(|| format!("running {} kubeconfig", server.display()))?;
    if !out.status.success() {
        bail!("wasm-apiserver kubeconfig: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8(out.stdout)?)
}

impl Side {
    /// A client as [`Side::client`], presenting a client certificate for `user` in `group` in place of the
    /// `system:masters` one.
    pub fn client_as(&self, user: &str, group: &str) -> anyhow::Result<reqwest::blocking::Client> {
        let identity = match &self.users {
            Users::Ca(ca) => {
                let (cert, key) = ca.issue(user, Some(group), &[], false)?;
                reqwest::Identity::from_pem(format!("{cert}{key}").as_bytes())?
            }
            Users::Kubeconfig { server, data_dir } => {
                kubeconfig_identity(&wasm_kubeconfig(server, data_dir, &self.base, user, group)?)?.1
            }
        };
        Ok(reqwest::blocking::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(self.ca.clone())
            .identity(identity)
            .build()?)
    }

    /// A client builder trusting the server's CA and presenting the `system:masters` client certificate; HTTP/2
    /// when the server offers it (both do, by ALPN).
    pub fn client_builder(&self) -> reqwest::blocking::ClientBuilder {
        reqwest::blocking::Client::builder()
            .use_rustls_tls()
            .tls_built_in_root_certs(false)
            .add_root_certificate(self.ca.clone())
            .identity(self.identity.clone())
    }

    /// A client as [`Side::client_builder`] makes it.
    pub fn client(&self) -> reqwest::blocking::Client {
        self.client_builder().build().expect("an HTTPS client")
    }

    /// The server process's id (kube-apiserver's own, not etcd's).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The server process's resident memory (VmRSS), in MiB.
    pub fn rss_mib(&self) -> f64 {
        rss_mib(self.pid())
    }

    /// The last `lines` lines of the server's log.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// The server's `gitVersion` from `/version`.
    pub fn version(&self) -> String {
        self.get_json("/version")
            .map(|v| v["gitVersion"].as_str().unwrap_or("?").to_owned())
            .unwrap_or_else(|_| "?".to_owned())
    }

    /// GETs `path` and decodes the JSON answer (any status).
    pub fn get_json(&self, path: &str) -> anyhow::Result<Value> {
        Ok(self.client().get(format!("{}{path}", self.base)).send()?.json()?)
    }

    /// The HTTP version the server answers this client with (`HTTP/2.0` when ALPN chose h2).
    pub fn http_version(&self) -> anyhow::Result<String> {
        let r = self.client().get(format!("{}/readyz", self.base)).send()?;
        Ok(format!("{:?}", r.version()))
    }

    /// The API priority and fairness level kube-apiserver puts this client's requests in: the name of the
    /// PriorityLevelConfiguration whose UID it answers in `X-Kubernetes-PF-PriorityLevel-UID` (`None` where the
    /// server does not say).
    pub fn priority_level(&self) -> anyhow::Result<Option<String>> {
        let r = self
            .client()
            .get(format!("{}/api/v1/namespaces/default", self.base))
            .send()?;
        let Some(uid) = r.headers().get("X-Kubernetes-PF-PriorityLevel-UID") else {
            return Ok(None);
        };
        let uid = uid.to_str()?.to_owned();
        let levels = self.get_json("/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations")?;
        let name = levels["items"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|l| l["metadata"]["uid"] == uid.as_str())
            .and_then(|l| l["metadata"]["name"].as_str());
        Ok(Some(name.unwrap_or(&uid).to_owned()))
    }

    /// Creates the namespace `name` (an existing one is fine).
    pub fn create_namespace(&self, name: &str) -> anyhow::Result<()> {
        let r = self
            .client()
            .post(format!("{}/api/v1/namespaces", self.base))
            .json(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}))
            .send()?;
        let status = r.status().as_u16();
        if status != 201 && status != 409 {
            bail!(
                "{}: creating namespace {name} answered {status}: {}",
                self.name,
                r.text()?
            );
        }
        Ok(())
    }

    fn wait_ready(&self) -> anyhow::Result<()> {
        let client = self.client();
        let url = format!("{}/readyz", self.base);
        if !poll(READY_TIMEOUT, || {
            client.get(&url).send().is_ok_and(|r| r.status().is_success())
        }) {
            bail!("{} was not ready; its log:\n{}", self.name, self.log_tail(40));
        }
        Ok(())
    }
}

pub use bench::rss_mib;

/// Starts kube-apiserver `binary` on etcd under the key prefix `/kube` with a PKI of its own (the e2e harness's
/// flags, without the aggregator's front-proxy ones), and waits until `/readyz` answers 200.
pub fn start_kube_apiserver(binary: &Path, etcd: &Etcd, extra_args: &[String]) -> anyhow::Result<Side> {
    let dir = tempfile::Builder::new().prefix("kube-bench-kas-").tempdir()?;
    let d = dir.path();
    let ca = Ca::new("kube-ca")?;
    let (serving_cert, serving_key) = ca.issue("kube-apiserver", None, &["127.0.0.1", "localhost"], true)?;
    let admin = ca.issue("bench", Some("system:masters"), &[], false)?;
    let (sa_public, sa_private) = pki::key_pair()?;
    let port = free_port()?;
    let log = d.join("kube-apiserver.log");
    let child = Command::new(binary)
        .args([
            format!("--etcd-servers={}", etcd.endpoint),
            "--etcd-prefix=/kube".into(),
            "--bind-address=127.0.0.1".into(),
            "--advertise-address=127.0.0.1".into(),
            format!("--secure-port={port}"),
            format!("--cert-dir={}", d.join("certs").display()),
            format!("--tls-cert-file={}", pki::write(d, "serving.crt", &serving_cert)?),
            format!("--tls-private-key-file={}", pki::write(d, "serving.key", &serving_key)?),
            format!("--client-ca-file={}", pki::write(d, "ca.crt", &ca.pem)?),
            "--authorization-mode=RBAC".into(),
            "--service-account-issuer=https://kubernetes.default.svc".into(),
            format!("--service-account-key-file={}", pki::write(d, "sa.pub", &sa_public)?),
            format!(
                "--service-account-signing-key-file={}",
                pki::write(d, "sa.key", &sa_private)?
            ),
            "--service-cluster-ip-range=10.96.0.0/24".into(),
            "--endpoint-reconciler-type=none".into(),
            "--profiling=false".into(),
        ])
        .args(extra_args)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .with_context(|| format!("start {}", binary.display()))?;
    let side = Side {
        name: "kube-apiserver",
        base: format!("https://127.0.0.1:{port}"),
        ca: reqwest::Certificate::from_pem(ca.pem.as_bytes())?,
        identity: reqwest::Identity::from_pem(format!("{}{}", admin.0, admin.1).as_bytes())?,
        users: Users::Ca(Box::new(ca)),
        child,
        log,
        _dir: dir,
    };
    side.wait_ready()?;
    Ok(side)
}

/// Starts the wasm-apiserver binary `server` with the wardle plugin from `plugins` on etcd under the key prefix
/// `/wasm`, on its secure port only, and waits until `/readyz` answers 200. Its PKI is made first by
/// `wasm-apiserver kubeconfig`, which also issues the `system:masters` client certificate.
pub fn start_wasm_apiserver(server: &Path, plugins: &Path, etcd: &Etcd, extra_args: &[String]) -> anyhow::Result<Side> {
    let dir = tempfile::Builder::new().prefix("kube-bench-wasm-").tempdir()?;
    let plugin_dir = dir.path().join("plugins");
    let data_dir = dir.path().join("data");
    std::fs::create_dir_all(&plugin_dir)?;
    std::fs::copy(plugins.join("wardle.wasm"), plugin_dir.join("wardle.wasm"))
        .context("copying wardle.wasm (run scripts/build-plugins.sh)")?;
    let port = free_port()?;
    let base = format!("https://127.0.0.1:{port}");
    let (ca, identity) = kubeconfig_identity(&wasm_kubeconfig(server, &data_dir, &base, "bench", "system:masters")?)?;
    let log = dir.path().join("wasm-apiserver.log");
    let child = Command::new(server)
        .args([
            "serve",
            "--bind-address",
            "127.0.0.1",
            "--secure-port",
            &port.to_string(),
        ])
        .arg("--plugin-dir")
        .arg(&plugin_dir)
        .arg("--data-dir")
        .arg(&data_dir)
        .args(["--etcd-servers", &etcd.endpoint, "--etcd-prefix", "/wasm"])
        .args(extra_args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log)?)
        .spawn()
        .with_context(|| format!("starting {}", server.display()))?;
    let side = Side {
        name: "wasm-apiserver",
        base,
        ca,
        identity,
        users: Users::Kubeconfig {
            server: server.to_path_buf(),
            data_dir: data_dir.clone(),
        },
        child,
        log,
        _dir: dir,
    };
    side.wait_ready()?;
    Ok(side)
}

/// The CustomResourceDefinition `flunders.wardle.example.com` made from the wardle plugin's own description: the
/// same names, scope, versions (v1alpha1 stored, v1beta1 served), OpenAPI schemas and `/status` and `/scale`
/// subresources. Conversion is `None` (kube-apiserver would need a webhook for wardle's field renames); the
/// benchmark only uses v1alpha1, the storage version.
pub fn flunder_crd() -> anyhow::Result<Value> {
    let info = wardle_plugin::schema::plugin_info();
    let flunders = info
        .resources
        .iter()
        .find(|r| r.plural == wardle_plugin::FLUNDERS)
        .context("the wardle plugin serves no flunders")?;
    let scale = wardle_plugin::status::scale_paths(wardle_plugin::FLUNDERS).context("flunders have no /scale")?;
    let versions = flunders
        .versions
        .iter()
        .map(|v| -> anyhow::Result<Value> {
            let mut schema: Value = serde_json::from_str(&v.schema)?;
            if let Some(o) = schema.as_object_mut() {
                o.remove("example");
            }
            Ok(json!({
                "name": v.name, "served": v.served, "storage": v.storage,
                "schema": {"openAPIV3Schema": schema},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": scale.spec_replicas_path,
                    "statusReplicasPath": scale.status_replicas_path,
                    "labelSelectorPath": scale.label_selector_path,
                }},
            }))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}.{}", flunders.plural, info.group)},
        "spec": {
            "group": info.group,
            "scope": "Namespaced",
            "names": {
                "kind": flunders.kind, "plural": flunders.plural, "singular": flunders.singular,
                "shortNames": flunders.short_names, "categories": flunders.categories,
            },
            "versions": versions,
            "conversion": {"strategy": "None"},
        }
    }))
}

/// Creates the flunder CRD on kube-apiserver and waits until it is Established and its flunders are served.
pub fn apply_flunder_crd(kube: &Side) -> anyhow::Result<()> {
    let client = kube.client();
    let crds = format!("{}/apis/apiextensions.k8s.io/v1/customresourcedefinitions", kube.base);
    let r = client.post(&crds).json(&flunder_crd()?).send()?;
    if r.status().as_u16() != 201 {
        bail!("creating the flunder CRD answered {}: {}", r.status(), r.text()?);
    }
    let crd = format!("{crds}/flunders.wardle.example.com");
    let established = poll(Duration::from_secs(60), || {
        client.get(&crd).send().and_then(|r| r.json::<Value>()).is_ok_and(|v| {
            v["status"]["conditions"]
                .as_array()
                .is_some_and(|c| c.iter().any(|c| c["type"] == "Established" && c["status"] == "True"))
        })
    });
    if !established {
        bail!("the flunder CRD was not Established within 60 s");
    }
    let flunders = format!(
        "{}/apis/wardle.example.com/v1alpha1/namespaces/default/flunders",
        kube.base
    );
    if !poll(Duration::from_secs(60), || {
        client.get(&flunders).send().is_ok_and(|r| r.status().is_success())
    }) {
        bail!("flunders were not served within 60 s of the CRD being Established");
    }
    Ok(())
}
