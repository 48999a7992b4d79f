//! A real etcd for tests: a single-member cluster on free loopback ports and a temporary data directory, killed on
//! drop. The tests fail (they do not skip) when `etcd` is not installed; `ETCD_BIN` overrides the binary.

use std::fs::File;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use super::{EtcdOptions, EtcdStorage};

/// How long etcd may take to start answering.
const START_DEADLINE: Duration = Duration::from_secs(30);
/// The pause between readiness probes.
const POLL_INTERVAL: Duration = Duration::from_millis(50);

/// TLS files for a server started with [`EtcdServer::start_tls`] and its clients.
pub(super) struct TlsFiles {
    /// The CA certificate that signed the server and client certificates.
    pub ca: PathBuf,
    /// The server certificate (for 127.0.0.1) and key.
    pub server: (PathBuf, PathBuf),
    /// A client certificate and key.
    pub client: (PathBuf, PathBuf),
}

/// A running etcd, killed on drop.
pub(super) struct EtcdServer {
    /// The data directory, the log file, and the TLS files.
    dir: TempDir,
    /// The client port.
    client_port: u16,
    /// The peer port.
    peer_port: u16,
    /// Extra command-line arguments.
    extra_args: Vec<String>,
    /// TLS files, when the client port serves TLS.
    tls: Option<TlsFiles>,
    /// The etcd process, while running.
    child: Option<Child>,
}

impl EtcdServer {
    /// Starts etcd and waits until it answers.
    pub(super) async fn start() -> Self {
        Self::start_with(&[]).await
    }

    /// Starts etcd with extra arguments and waits until it answers.
    pub(super) async fn start_with(extra_args: &[&str]) -> Self {
        Self::launch(extra_args, false).await
    }

    /// Starts etcd serving TLS to clients, requiring client certificates signed by the test CA.
    pub(super) async fn start_tls() -> Self {
        Self::launch(&[], true).await
    }

    /// Picks the ports and the data directory (and makes TLS files in it), then starts etcd.
    async fn launch(extra_args: &[&str], tls: bool) -> Self {
        let dir = tempfile::tempdir().expect("create a temporary etcd directory");
        let tls = tls.then(|| generate_tls(dir.path()));
        let (client_port, peer_port) = free_ports();
        let mut server = EtcdServer {
            dir,
            client_port,
            peer_port,
            extra_args: extra_args.iter().map(|a| a.to_string()).collect(),
            tls,
            child: None,
        };
        server.restart().await;
        server
    }

    /// The client URL.
    pub(super) fn endpoint(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://127.0.0.1:{}", self.client_port)
    }

    /// The client address, for a proxy in front of this server.
    pub(super) fn client_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.client_port))
    }

    /// Options for a client of this server (with the client certificate, for TLS), with short timeouts.
    pub(super) fn options(&self, prefix: &str) -> EtcdOptions {
        let tls = self.tls.as_ref();
        EtcdOptions {
            endpoints: vec![self.endpoint()],
            prefix: prefix.to_owned(),
            ca_file: tls.map(|t| t.ca.clone()),
            cert_file: tls.map(|t| t.client.0.clone()),
            key_file: tls.map(|t| t.client.1.clone()),
            dial_timeout: Duration::from_secs(2),
            request_timeout: Duration::from_secs(2),
        }
    }

    /// Connects a store under `prefix`.
    pub(super) async fn store(&self, prefix: &str) -> EtcdStorage {
        EtcdStorage::connect(self.options(prefix))
            .await
            .unwrap_or_else(|e| panic!("connect to etcd at {}: {e}", self.endpoint()))
    }

    /// Kills etcd (as a crash would) and waits for it to exit.
    pub(super) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // It may have exited already; either way it is gone afterwards.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd (again) on the same ports and data directory, and waits until it answers.
    pub(super) async fn restart(&mut self) {
        self.stop();
        let data = self.dir.path().join("data");
        let log_path = self.dir.path().join("etcd.log");
        let log = File::options()
            .create(true)
            .append(true)
            .open(&log_path)
            .expect("open the etcd log");
        let client_url = self.endpoint();
        let peer_url = format!("http://127.0.0.1:{}", self.peer_port);
        let binary = std::env::var("ETCD_BIN").unwrap_or_else(|_| "etcd".into());
        let mut command = Command::new(&binary);
        command
            .arg("--name=test")
            .arg(format!("--data-dir={}", data.display()))
            .arg(format!("--listen-client-urls={client_url}"))
            .arg(format!("--advertise-client-urls={client_url}"))
            .arg(format!("--listen-peer-urls={peer_url}"))
            .arg(format!("--initial-advertise-peer-urls={peer_url}"))
            .arg(format!("--initial-cluster=test={peer_url}"))
            .arg("--initial-cluster-state=new")
            .args(&self.extra_args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone the log handle"))
            .stderr(log);
        if let Some(tls) = &self.tls {
            command
                .arg(format!("--cert-file={}", tls.server.0.display()))
                .arg(format!("--key-file={}", tls.server.1.display()))
                .arg(format!("--trusted-ca-file={}", tls.ca.display()))
                .arg("--client-cert-auth");
        }
        let child = command.spawn().unwrap_or_else(|e| {
            panic!(
                "cannot run `{binary}` ({e}): the etcd tests need etcd installed \
                 (`apt-get install etcd-server`, or set ETCD_BIN)"
            )
        });
        self.child = Some(child);
        self.wait_ready(&log_path).await;
    }

    /// Polls until etcd answers a request, or fails the test with etcd's log.
    async fn wait_ready(&mut self, log_path: &Path) {
        let deadline = Instant::now() + START_DEADLINE;
        let mut options = self.options("");
        options.dial_timeout = Duration::from_millis(500);
        let mut last_error = String::new();
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!("etcd exited with {status}; its log:\n{}", read_log(log_path));
                }
            }
            match EtcdStorage::connect(options.clone()).await {
                Ok(_) => return,
                Err(e) => last_error = e.to_string(),
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
        panic!(
            "etcd did not answer within {START_DEADLINE:?} ({last_error}); its log:\n{}",
            read_log(log_path)
        );
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The end of etcd's log, for failure messages.
fn read_log(path: &Path) -> String {
    let log = std::fs::read_to_string(path).unwrap_or_default();
    let start = log.len().saturating_sub(4000);
    log.get(start..).unwrap_or(&log).to_owned()
}

/// Two free loopback ports (bound at once, so they differ).
fn free_ports() -> (u16, u16) {
    let bind = || TcpListener::bind("127.0.0.1:0").expect("bind a free loopback port");
    let (a, b) = (bind(), bind());
    let port = |l: &TcpListener| l.local_addr().expect("local address").port();
    (port(&a), port(&b))
}

/// Generates a CA, a server certificate for 127.0.0.1 and a client certificate with the `openssl` command.
fn generate_tls(dir: &Path) -> TlsFiles {
    // Each command line is split on spaces: no argument has one.
    let run = |command_line: &str| {
        let args: Vec<_> = command_line.split_whitespace().collect();
        let output = Command::new("openssl")
            .args(&args)
            .current_dir(dir)
            .output()
            .unwrap_or_else(|e| panic!("cannot run `openssl` ({e}): the TLS test needs it installed"));
        assert!(
            output.status.success(),
            "openssl {command_line} failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    };
    let new_key = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";
    run(&format!(
        "req -x509 {new_key} -keyout ca.key -out ca.crt -days 2 -subj /CN=test-ca"
    ));
    for (name, usage) in [("server", "serverAuth"), ("client", "clientAuth")] {
        let extensions = format!("subjectAltName=IP:127.0.0.1\nextendedKeyUsage={usage}\n");
        std::fs::write(dir.join(format!("{name}.ext")), extensions).expect("write certificate extensions");
        run(&format!(
            "req {new_key} -keyout {name}.key -out {name}.csr -subj /CN={name}"
        ));
        run(&format!(
            "x509 -req -in {name}.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out {name}.crt -days 2 \
             -extfile {name}.ext"
        ));
    }
    TlsFiles {
        ca: dir.join("ca.crt"),
        server: (dir.join("server.crt"), dir.join("server.key")),
        client: (dir.join("client.crt"), dir.join("client.key")),
    }
}
