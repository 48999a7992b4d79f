//! Starting, restarting and stopping the real `wasm-apiserver` binary.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};
use base64::Engine as _;
use tempfile::TempDir;

use crate::http::Http;
use crate::kubectl::{kubectl_path, read_lossy};

/// How long a server may take to answer `/readyz` with 200 (plugins are compiled on first load).
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a server may take to exit after SIGTERM before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(30);
/// How many ports to try when the chosen free port was taken by someone else before the server bound it.
const BIND_ATTEMPTS: usize = 5;
/// How many lines of the server log to print when a test fails.
const LOG_TAIL_LINES: usize = 80;
/// How many FlowSchemas the priority and fairness controller makes at start: kube's mandatory two and suggested nine.
const BOOTSTRAP_FLOW_SCHEMAS: usize = 11;

/// A running `wasm-apiserver serve` on a loopback port, with its own temporary plugin directory, data directory,
/// kubeconfig and log file. The process is killed when the value is dropped; if the test is failing at that moment,
/// the tail of the server log is printed.
pub struct Server {
    /// The server's etcd, when `E2E_STORAGE=etcd`; kept across restarts.
    etcd: Option<crate::etcd::Etcd>,
    /// Extra flags for `serve`.
    extra_args: Vec<String>,
    root: TempDir,
    port: u16,
    secure_port: u16,
    child: Option<Child>,
    pub(crate) kubectl: PathBuf,
    http: Http,
    /// Whether the server keeps its own default log filter (else it logs every request: `RUST_LOG=info`).
    default_log: bool,
}

impl Server {
    /// Starts a server serving the named plugins (for example `&["wardle", "partial"]`), copied from
    /// `<target>/plugins/<name>.wasm` (`t1/wardle` into the tenant directory `t1/`, `t3/` for a tenant without
    /// plugins), and waits until `/readyz` answers 200. Panics with diagnostics on failure.
    pub fn start(plugins: &[&str]) -> Server {
        Server::try_start(plugins).unwrap_or_else(|e| panic!("cannot start wasm-apiserver: {e:#}"))
    }

    /// Like [`Server::start`], returning the error instead of panicking.
    pub fn try_start(plugins: &[&str]) -> anyhow::Result<Server> {
        let etcd = match std::env::var("E2E_STORAGE").as_deref() {
            Ok("etcd") => Some(crate::etcd::Etcd::start()?),
            _ => None,
        };
        Server::try_start_with(plugins, etcd, &[])
    }

    /// Starts a server on a real etcd of its own, with extra `serve` flags.
    pub fn start_on_etcd(plugins: &[&str], extra_args: &[&str]) -> Server {
        let etcd = crate::etcd::Etcd::start().unwrap_or_else(|e| panic!("cannot start etcd: {e:#}"));
        Server::try_start_with(plugins, Some(etcd), extra_args)
            .unwrap_or_else(|e| panic!("cannot start wasm-apiserver: {e:#}"))
    }

    /// Starts a server with extra `serve` flags (such as `--etcd-servers` of an etcd started by the test). Without
    /// `--etcd-servers`, the storage is chosen as by [`Server::start`].
    pub fn start_with_args(plugins: &[&str], extra_args: &[&str]) -> Server {
        let names_etcd = extra_args
            .iter()
            .any(|a| *a == "--etcd-servers" || a.starts_with("--etcd-servers="));
        let own_etcd = !names_etcd && std::env::var("E2E_STORAGE").as_deref() == Ok("etcd");
        let etcd = own_etcd.then(|| crate::etcd::Etcd::start().unwrap_or_else(|e| panic!("cannot start etcd: {e:#}")));
        Server::try_start_with(plugins, etcd, extra_args)
            .unwrap_or_else(|e| panic!("cannot start wasm-apiserver: {e:#}"))
    }

    /// Like [`Server::start_with_args`] (on the embedded store), returning the error instead of panicking.
    pub fn try_start_with_args(plugins: &[&str], extra_args: &[&str]) -> anyhow::Result<Server> {
        Server::try_start_with(plugins, None, extra_args)
    }

    /// Like [`Server::start`] (on the embedded store), with the server's default log filter instead of one that logs
    /// every request, whatever `RUST_LOG` the tests run with.
    pub fn start_with_default_log(plugins: &[&str]) -> Server {
        let mut server =
            Server::prepare(plugins, None, &[]).unwrap_or_else(|e| panic!("cannot prepare wasm-apiserver: {e:#}"));
        server.default_log = true;
        server
            .launch(None)
            .unwrap_or_else(|e| panic!("cannot start wasm-apiserver: {e:#}"));
        server
    }

    /// The server's etcd, when it has one.
    pub fn etcd_mut(&mut self) -> Option<&mut crate::etcd::Etcd> {
        self.etcd.as_mut()
    }

    fn try_start_with(
        plugins: &[&str],
        etcd: Option<crate::etcd::Etcd>,
        extra_args: &[&str],
    ) -> anyhow::Result<Server> {
        let mut server = Server::prepare(plugins, etcd, extra_args)?;
        server.launch(None)?;
        Ok(server)
    }

    /// A server's directories and plugins, not started yet.
    fn prepare(plugins: &[&str], etcd: Option<crate::etcd::Etcd>, extra_args: &[&str]) -> anyhow::Result<Server> {
        let kubectl = kubectl_path();
        let root = tempfile::Builder::new()
            .prefix("wasm-apiserver-e2e-")
            .tempdir()
            .context("create a temp dir")?;
        let plugin_dir = root.path().join("plugins");
        std::fs::create_dir_all(&plugin_dir).context("create the plugin dir")?;
        std::fs::create_dir_all(root.path().join("data")).context("create the data dir")?;
        for plugin in plugins {
            // `t1/wardle` goes into the tenant directory `t1/`; `t3/` makes a tenant without plugins.
            let (plugin_dir, plugin) = match plugin.rsplit_once('/') {
                Some((tenant, plugin)) => {
                    let dir = plugin_dir.join(tenant);
                    std::fs::create_dir_all(&dir).context("create a tenant dir")?;
                    (dir, plugin)
                }
                None => (plugin_dir.clone(), *plugin),
            };
            if plugin.is_empty() {
                continue;
            }
            let source = target_dir().join("plugins").join(format!("{plugin}.wasm"));
            if !source.is_file() {
                bail!(
                    "plugin {} is missing; build the plugins with scripts/build-plugins.sh",
                    source.display()
                );
            }
            std::fs::copy(&source, plugin_dir.join(format!("{plugin}.wasm")))
                .with_context(|| format!("copy {}", source.display()))?;
        }
        Ok(Server {
            etcd,
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            root,
            port: 0,
            secure_port: 0,
            child: None,
            kubectl,
            http: Http::new(String::new()),
            default_log: false,
        })
    }

    /// Stops the server (SIGTERM, then waits for it to exit) and starts it again on the same directories and, if
    /// they are still free, the same ports; waits until it is ready again.
    pub fn restart(&mut self) {
        self.stop();
        let ports = (self.port, self.secure_port);
        self.launch(Some(ports))
            .unwrap_or_else(|e| panic!("cannot restart wasm-apiserver: {e:#}"));
    }

    /// Kills the server with SIGKILL (no chance to flush or close anything) and waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Sends SIGTERM and waits for the process to exit (killing it after a deadline). Does nothing if it is not
    /// running.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let deadline = Instant::now() + STOP_TIMEOUT;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(50)),
                _ => {
                    eprintln!("e2e: wasm-apiserver did not exit within {STOP_TIMEOUT:?} of SIGTERM; killing it");
                    let _ = child.kill();
                    let _ = child.wait();
                    return;
                }
            }
        }
    }

    /// The loopback port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The process id of the running server, or `None` when it is stopped.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The server's base URL on the insecure development port, `http://127.0.0.1:<port>`, where every request is
    /// an administrator.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The loopback port of the secure (HTTPS) port.
    pub fn secure_port(&self) -> u16 {
        self.secure_port
    }

    /// The server's HTTPS base URL, `https://127.0.0.1:<secure port>`.
    pub fn secure_url(&self) -> String {
        format!("https://127.0.0.1:{}", self.secure_port)
    }

    /// The server's CA certificate (PEM), made under its data directory at first start.
    pub fn ca_pem(&self) -> String {
        read_lossy(&self.root().join("data").join("pki").join("ca.crt"))
    }

    /// Writes a kubeconfig for the secure port with a client certificate for `user` in `groups`, made by
    /// `wasm-apiserver kubeconfig`, and returns its path.
    pub fn user_kubeconfig(&self, user: &str, groups: &[&str]) -> PathBuf {
        self.tenant_kubeconfig(None, user, groups)
    }

    /// Writes a kubeconfig as [`Server::user_kubeconfig`], for a tenant (`wasm-apiserver kubeconfig --tenant`).
    pub fn tenant_kubeconfig(&self, tenant: Option<&str>, user: &str, groups: &[&str]) -> PathBuf {
        let path = self
            .root()
            .join(format!("kubeconfig-{user}-{}", tenant.unwrap_or("root")));
        let mut command = Command::new(server_binary());
        command
            .arg("kubeconfig")
            .arg("--data-dir")
            .arg(self.root().join("data"))
            .args(["--user", user, "--server", &self.secure_url(), "-o"])
            .arg(&path);
        if let Some(tenant) = tenant {
            command.args(["--tenant", tenant]);
        }
        for group in groups {
            command.args(["--group", group]);
        }
        let output = command.output().expect("run wasm-apiserver kubeconfig");
        assert!(
            output.status.success(),
            "wasm-apiserver kubeconfig failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        path
    }

    /// Grants the ClusterRole `cluster_role` (such as `edit` or `view`) to the members of `group` in `namespace`, as
    /// the administrator (a RoleBinding through the insecure port), and waits until RBAC follows the binding.
    pub fn grant(&self, namespace: &str, cluster_role: &str, group: &str) {
        let binding = serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": format!("{group}-{cluster_role}"), "namespace": namespace},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]
        });
        self.http()
            .post_json(
                &format!("/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings"),
                &binding,
            )
            .expect(201);
        // Every role of these reads its own namespace: ask for that until the binding counts.
        let review = serde_json::json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "probe", "groups": [group], "resourceAttributes":
                {"namespace": namespace, "verb": "get", "resource": "namespaces", "name": namespace}}
        });
        let followed = crate::wait_until(Duration::from_secs(10), || {
            let reply = self
                .http()
                .post_json("/apis/authorization.k8s.io/v1/subjectaccessreviews", &review);
            reply.json["status"]["allowed"] == true
        });
        assert!(followed, "RBAC did not follow the binding of {cluster_role} to {group}");
    }

    /// An HTTPS client for the secure port that trusts the server's CA and presents no credentials.
    pub fn https(&self) -> Http {
        Http::secure(self.secure_url(), &self.ca_pem(), None)
    }

    /// An HTTPS client for the secure port presenting a client certificate for `user` in `groups`.
    pub fn https_as(&self, user: &str, groups: &[&str]) -> Http {
        let kubeconfig = self.user_kubeconfig(user, groups);
        let text = read_lossy(&kubeconfig);
        let field = |name: &str| -> Vec<u8> {
            let line = text
                .lines()
                .find_map(|l| l.trim().strip_prefix(&format!("{name}: ")))
                .unwrap_or_else(|| panic!("no {name} in the kubeconfig:\n{text}"));
            base64::engine::general_purpose::STANDARD
                .decode(line.trim())
                .expect("base64 certificate data")
        };
        let mut identity = field("client-certificate-data");
        identity.extend(field("client-key-data"));
        Http::secure(self.secure_url(), &self.ca_pem(), Some(&identity))
    }

    /// Waits until the priority and fairness controller's start-up writes are done: every bootstrap FlowSchema made
    /// and marked with its Dangling condition. A test that compares the root's stored bytes or storage series before
    /// and after something waits for this first, since those writes add both.
    pub fn wait_for_flowcontrol_bootstrap(&self) {
        let done = crate::wait_until(Duration::from_secs(30), || {
            let schemas = self
                .http()
                .get("/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas")
                .json;
            let items = schemas["items"].as_array().cloned().unwrap_or_default();
            items.len() >= BOOTSTRAP_FLOW_SCHEMAS && items.iter().all(|s| s["status"]["conditions"].is_array())
        });
        assert!(done, "the bootstrap FlowSchemas were never all made and marked");
    }

    /// A raw HTTP client for this server.
    pub fn http(&self) -> &Http {
        &self.http
    }

    /// The temporary directory holding `plugins/`, `data/`, `kubeconfig` and `server.log`.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// The plugin directory given to `--plugin-dir`.
    pub fn plugin_dir(&self) -> PathBuf {
        self.root().join("plugins")
    }

    /// The kubeconfig pointing at this server (plain HTTP, no credentials, namespace `default`).
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.root().join("kubeconfig")
    }

    /// The file receiving the server's standard output and standard error (all runs, appended).
    pub fn log_path(&self) -> PathBuf {
        self.root().join("server.log")
    }

    /// Whether the server log holds `needle` anywhere. Conditions use this rather than a tail of the log, which
    /// requests logged under load can move a line out of before it is read.
    pub fn log_contains(&self, needle: &str) -> bool {
        read_lossy(&self.log_path()).contains(needle)
    }

    /// The value of an unlabelled metric in `/metrics` (a counter's `..._total` name), 0 when it is absent.
    pub fn metric(&self, name: &str) -> f64 {
        let text = self.http().get("/metrics").text.clone();
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0.0)
    }

    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        let log = read_lossy(&self.log_path());
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// Spawns the server on `port` (or a free one) and waits for readiness, retrying on another port when the
    /// chosen one turns out to be taken.
    fn launch(&mut self, mut ports: Option<(u16, u16)>) -> anyhow::Result<()> {
        for attempt in 1..=BIND_ATTEMPTS {
            let chosen = match ports.take() {
                Some(ports) => ports,
                None => (free_port()?, free_port()?),
            };
            match self.spawn_and_wait(chosen)? {
                Launch::Ready => return Ok(()),
                Launch::AddressInUse if attempt < BIND_ATTEMPTS => {
                    eprintln!("e2e: port {} or {} was taken; retrying on others", chosen.0, chosen.1);
                }
                Launch::AddressInUse => bail!("no free port after {BIND_ATTEMPTS} attempts"),
            }
        }
        bail!("no free port after {BIND_ATTEMPTS} attempts")
    }

    /// Spawns the server on `(insecure, secure)` ports, writes the kubeconfig, and waits until it is ready or has
    /// exited.
    fn spawn_and_wait(&mut self, (port, secure_port): (u16, u16)) -> anyhow::Result<Launch> {
        self.port = port;
        self.secure_port = self
            .arg_value("--secure-port")
            .and_then(|p| p.parse().ok())
            .unwrap_or(secure_port);
        self.http = Http::new(self.base_url());
        self.write_kubeconfig()?;
        let log_path = self.log_path();
        let log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .context("open server.log")?;
        let log_start = log.metadata().map(|m| m.len()).unwrap_or(0);
        let binary = server_binary();
        let mut command = Command::new(&binary);
        command.arg("serve");
        if self.default_log {
            command.env_remove("RUST_LOG");
        } else if std::env::var_os("RUST_LOG").is_none() {
            // Every request in the log (the server's default leaves them out): tests read it, and print its tail when
            // they fail.
            command.env("RUST_LOG", "info");
        }
        if let Some(etcd) = &self.etcd {
            command.args(["--etcd-servers", &etcd.endpoint()]);
        }
        command.args(&self.extra_args);
        if !self.extra_args.iter().any(|a| a.starts_with("--plugin-baseline-tier")) {
            // Plugins served from the optimizing compiler alone, as before the baseline tier: no test sees its plugin's
            // code swapped under it unless it asks for the tier (plugin_uploads.rs does).
            command.arg("--plugin-baseline-tier=false");
        }
        if !self.extra_args.iter().any(|a| a == "--plugin-cache-dir") {
            // One compile cache for every test server: the large Python and JavaScript components compile once.
            command
                .arg("--plugin-cache-dir")
                .arg(target_dir().join("e2e-plugin-cache"));
        }
        let child = command
            .arg("--plugin-dir")
            .arg(self.plugin_dir())
            .arg("--data-dir")
            .arg(self.root().join("data"))
            .args(["--insecure-port", &port.to_string()])
            // A test may choose the secure port's address and port (replicas behind one EndpointSlice port).
            .args(if self.has_arg("--bind-address") {
                vec![]
            } else {
                vec!["--bind-address".to_owned(), "127.0.0.1".to_owned()]
            })
            .args(if self.has_arg("--secure-port") {
                vec![]
            } else {
                vec!["--secure-port".to_owned(), secure_port.to_string()]
            })
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("clone the log handle")?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawn {} (build it with `cargo build`)", binary.display()))?;
        self.child = Some(child);

        let deadline = Instant::now() + READY_TIMEOUT;
        let readyz = self.http.url("/readyz");
        let probe = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(5))
            .build()
            .context("build the readiness client")?;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait().context("poll the server process")? {
                    self.child = None;
                    let output = log_since(&log_path, log_start);
                    if output.contains("in use") {
                        return Ok(Launch::AddressInUse);
                    }
                    bail!("wasm-apiserver exited before it was ready ({status}); its output:\n{output}");
                }
            }
            if let Ok(response) = probe.get(&readyz).send() {
                // Another test's server may hold the port a moment before this one fails to bind it: the answer
                // counts only once this server has logged that it listens there.
                let bound = format!("address=127.0.0.1:{port}");
                if response.status().as_u16() == 200 && log_since(&log_path, log_start).contains(&bound) {
                    return Ok(Launch::Ready);
                }
            }
            if Instant::now() >= deadline {
                let output = log_since(&log_path, log_start);
                bail!("wasm-apiserver was not ready within {READY_TIMEOUT:?}; its output:\n{output}");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether the test gave the flag `name` (as `name VALUE` or `name=VALUE`).
    fn has_arg(&self, name: &str) -> bool {
        self.extra_args
            .iter()
            .any(|a| a == name || a.strip_prefix(name).is_some_and(|rest| rest.starts_with('=')))
    }

    /// The value the test gave the flag `name`, if any.
    fn arg_value(&self, name: &str) -> Option<String> {
        let mut args = self.extra_args.iter();
        while let Some(a) = args.next() {
            if a == name {
                return args.next().cloned();
            }
            if let Some(value) = a.strip_prefix(name).and_then(|rest| rest.strip_prefix('=')) {
                return Some(value.to_owned());
            }
        }
        None
    }

    /// Writes a kubeconfig for `http://127.0.0.1:<port>` with an anonymous user and namespace `default`.
    fn write_kubeconfig(&self) -> anyhow::Result<()> {
        let kubeconfig = format!(
            "apiVersion: v1
kind: Config
clusters:
- name: wasm-apiserver
  cluster:
    server: {}
users:
- name: anonymous
  user: {{}}
contexts:
- name: wasm-apiserver
  context:
    cluster: wasm-apiserver
    user: anonymous
    namespace: default
current-context: wasm-apiserver
",
            self.base_url()
        );
        std::fs::write(self.kubeconfig_path(), kubeconfig).context("write the kubeconfig")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        if std::thread::panicking() {
            eprintln!(
                "---- wasm-apiserver log (last {LOG_TAIL_LINES} lines of {}) ----\n{}\n---- end of log ----",
                self.log_path().display(),
                self.log_tail(LOG_TAIL_LINES)
            );
        }
    }
}

/// The outcome of one start attempt.
enum Launch {
    Ready,
    AddressInUse,
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> anyhow::Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("bind 127.0.0.1:0")?;
    Ok(listener.local_addr().context("read the bound address")?.port())
}

/// The server log written since byte `offset` (the output of one run).
fn log_since(path: &Path, offset: u64) -> String {
    let mut text = String::new();
    if let Ok(mut file) = File::open(path) {
        if file.seek(SeekFrom::Start(offset)).is_ok() {
            let mut bytes = Vec::new();
            let _ = file.read_to_end(&mut bytes);
            text = String::from_utf8_lossy(&bytes).into_owned();
        }
    }
    text
}

/// The Cargo target directory: `$CARGO_TARGET_DIR`, else the workspace's `target/`.
pub fn target_dir() -> PathBuf {
    let manifest_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest_dir.parent().unwrap_or(manifest_dir);
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => workspace.join(dir),
        None => workspace.join("target"),
    }
}

/// The server binary: `$WASM_APISERVER_BIN`, else `<target>/debug/wasm-apiserver`.
pub fn server_binary() -> PathBuf {
    match std::env::var_os("WASM_APISERVER_BIN") {
        Some(path) => PathBuf::from(path),
        None => target_dir().join("debug").join("wasm-apiserver"),
    }
}
