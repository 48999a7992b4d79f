//! A real etcd for end-to-end tests: a single member on free loopback ports with a temporary data directory.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _};
use tempfile::TempDir;

use crate::wait_until;

/// A running etcd member, killed on drop.
pub struct Etcd {
    dir: TempDir,
    name: String,
    client_port: u16,
    peer_port: u16,
    /// `--initial-cluster`: every member's peer URL.
    initial_cluster: String,
    child: Option<Child>,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Etcd {
    /// Starts etcd and waits until it answers. Fails with a clear message when etcd is not installed.
    pub fn start() -> anyhow::Result<Etcd> {
        Ok(Etcd::cluster(1)?.remove(0))
    }

    /// Starts a cluster of `size` members on loopback and waits until each answers. The ports are chosen free but
    /// may be taken by another test before etcd binds them: then the cluster is started again on new ports.
    pub fn cluster(size: usize) -> anyhow::Result<Vec<Etcd>> {
        const ATTEMPTS: usize = 5;
        for attempt in 1.. {
            match Etcd::try_cluster(size) {
                Err(StartError::PortTaken(log)) if attempt < ATTEMPTS => {
                    eprintln!("etcd lost a port to another process, starting it again on new ports:\n{log}");
                }
                Err(StartError::PortTaken(log)) => bail!("etcd lost its ports {ATTEMPTS} times; its log:\n{log}"),
                Err(StartError::Other(e)) => return Err(e),
                Ok(members) => return Ok(members),
            }
        }
        unreachable!("the loop returns")
    }

    fn try_cluster(size: usize) -> Result<Vec<Etcd>, StartError> {
        let mut members = Vec::new();
        for i in 0..size {
            members.push(Etcd {
                dir: tempfile::Builder::new().prefix("wasm-apiserver-etcd-").tempdir()?,
                name: format!("e2e{i}"),
                client_port: free_port()?,
                peer_port: free_port()?,
                initial_cluster: String::new(),
                child: None,
            });
        }
        let initial_cluster = members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer_port))
            .collect::<Vec<_>>()
            .join(",");
        for m in &mut members {
            m.initial_cluster = initial_cluster.clone();
            m.spawn()?;
        }
        // Members of a new cluster only answer once a quorum is up, so wait after starting them all.
        for m in &mut members {
            m.wait_healthy()?;
        }
        Ok(members)
    }

    /// Starts a single member on the data of an etcd snapshot (`etcdctl snapshot save`), restored by
    /// `etcdctl snapshot restore` into a new data directory, and waits until it answers.
    pub fn restore(snapshot: &std::path::Path) -> anyhow::Result<Etcd> {
        let mut member = Etcd {
            dir: tempfile::Builder::new().prefix("wasm-apiserver-etcd-").tempdir()?,
            name: "e2e0".into(),
            client_port: free_port()?,
            peer_port: free_port()?,
            initial_cluster: String::new(),
            child: None,
        };
        let peer = format!("http://127.0.0.1:{}", member.peer_port);
        member.initial_cluster = format!("{}={peer}", member.name);
        etcdctl(
            Command::new("etcdctl")
                .args(["snapshot", "restore"])
                .arg(snapshot)
                .arg("--data-dir")
                .arg(member.data_dir())
                .args(["--name", &member.name, "--initial-cluster", &member.initial_cluster])
                .args(["--initial-advertise-peer-urls", &peer]),
        )?;
        member.launch()?;
        Ok(member)
    }

    /// Saves a snapshot of the member's data to `file` with `etcdctl snapshot save`.
    pub fn save_snapshot(&self, file: &std::path::Path) -> anyhow::Result<()> {
        etcdctl(
            Command::new("etcdctl")
                .args(["--endpoints", &self.endpoint(), "snapshot", "save"])
                .arg(file),
        )
    }

    /// The client URL, for `--etcd-servers`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn launch(&mut self) -> anyhow::Result<()> {
        self.spawn()?;
        self.wait_healthy().map_err(|e| match e {
            StartError::PortTaken(log) => anyhow::anyhow!("etcd could not bind its port again; its log:\n{log}"),
            StartError::Other(e) => e,
        })
    }

    fn spawn(&mut self) -> anyhow::Result<()> {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("etcd.log"))?;
        let child = Command::new("etcd")
            .args(["--name", &self.name, "--data-dir"])
            .arg(self.data_dir())
            .args([
                "--listen-client-urls",
                &self.endpoint(),
                "--advertise-client-urls",
                &self.endpoint(),
            ])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &self.initial_cluster])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting etcd (install it: apt-get install etcd-server)")?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until etcd answers its health check; fails at once when it has exited.
    fn wait_healthy(&mut self) -> Result<(), StartError> {
        let health = format!("{}/health", self.endpoint());
        let mut exited = false;
        let ready = wait_until(Duration::from_secs(30), || {
            exited = self
                .child
                .as_mut()
                .is_none_or(|c| c.try_wait().is_ok_and(|status| status.is_some()));
            exited || reqwest::blocking::get(&health).is_ok_and(|r| r.status().is_success())
        });
        if ready && !exited {
            return Ok(());
        }
        let log = std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default();
        if log.contains("address already in use") {
            return Err(StartError::PortTaken(log));
        }
        Err(StartError::Other(anyhow::anyhow!(
            "etcd did not become healthy{}; its log:\n{log}",
            if exited { " (it exited)" } else { "" }
        )))
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Whether this member is its cluster's leader (from etcd's gRPC gateway, `/v3/maintenance/status`).
    pub fn is_leader(&self) -> anyhow::Result<bool> {
        let status: serde_json::Value = reqwest::blocking::Client::new()
            .post(format!("{}/v3/maintenance/status", self.endpoint()))
            .body("{}")
            .send()?
            .json()?;
        let member = status["header"]["member_id"]
            .as_str()
            .context("no member_id in the status")?;
        let leader = status["leader"].as_str().context("no leader in the status")?;
        Ok(member == leader)
    }

    /// Every key under `prefix` and its raw value, read through etcd's JSON gateway (`/v3/kv/range`).
    pub fn raw_values(&self, prefix: &str) -> Vec<(String, Vec<u8>)> {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        // The range of every key starting with `prefix`: up to the prefix with its last byte incremented.
        let mut end = prefix.as_bytes().to_vec();
        match end.last_mut() {
            Some(last) => *last += 1,
            None => end.push(0),
        }
        let body = serde_json::json!({"key": b64.encode(prefix), "range_end": b64.encode(&end)});
        let reply: serde_json::Value = reqwest::blocking::Client::new()
            .post(format!("{}/v3/kv/range", self.endpoint()))
            .json(&body)
            .send()
            .and_then(|r| r.json())
            .expect("etcd's range request");
        let kvs = reply["kvs"].as_array().cloned().unwrap_or_default();
        kvs.iter()
            .map(|kv| {
                let decode = |field: &str| b64.decode(kv[field].as_str().unwrap_or_default()).expect("base64");
                (String::from_utf8_lossy(&decode("key")).into_owned(), decode("value"))
            })
            .collect()
    }

    /// Writes `value` at `key` directly (what a host would have left), through etcd's JSON gateway (`/v3/kv/put`).
    pub fn put_raw(&self, key: &str, value: &[u8]) {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD;
        let body = serde_json::json!({"key": b64.encode(key), "value": b64.encode(value)});
        let reply = reqwest::blocking::Client::new()
            .post(format!("{}/v3/kv/put", self.endpoint()))
            .json(&body)
            .send()
            .expect("etcd's put request");
        assert!(reply.status().is_success(), "etcd's put: {}", reply.status());
    }

    /// The raw value etcd holds for the key ending in `suffix` (any key when several do).
    pub fn raw_value(&self, suffix: &str) -> Vec<u8> {
        self.raw_values("/")
            .into_iter()
            .find(|(key, _)| key.ends_with(suffix))
            .unwrap_or_else(|| panic!("no key ending in {suffix} in etcd"))
            .1
    }

    /// Stops etcd (its data is kept).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data.
    pub fn restart(&mut self) -> anyhow::Result<()> {
        self.stop();
        self.launch()
    }
}

/// Runs an etcdctl command (API v3), failing with its standard error when it fails.
fn etcdctl(command: &mut Command) -> anyhow::Result<()> {
    let out = command
        .env("ETCDCTL_API", "3")
        .output()
        .context("running etcdctl (install it: apt-get install etcd-client)")?;
    if !out.status.success() {
        bail!("{command:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// Why etcd did not start.
enum StartError {
    /// Another process bound one of its ports first (its log).
    PortTaken(String),
    Other(anyhow::Error),
}

impl<E: Into<anyhow::Error>> From<E> for StartError {
    fn from(e: E) -> Self {
        StartError::Other(e.into())
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}
