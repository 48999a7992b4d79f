//! A single-member etcd for the benchmarks: free loopback ports, a temporary data directory, killed on drop.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _};

/// A running etcd, killed on drop.
pub struct Etcd {
    child: Child,
    /// The client URL.
    pub endpoint: String,
    _dir: tempfile::TempDir,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Etcd {
    /// Starts the etcd binary `binary` (on the CPUs `cpus`, a `taskset` list, when given) and waits until it is
    /// healthy.
    pub fn start(binary: &Path, cpus: Option<&str>) -> anyhow::Result<Etcd> {
        let dir = tempfile::Builder::new().prefix("bench-etcd-").tempdir()?;
        let endpoint = format!("http://127.0.0.1:{}", free_port()?);
        let peer = format!("http://127.0.0.1:{}", free_port()?);
        let mut command = match cpus {
            Some(cpus) => {
                let mut c = Command::new("taskset");
                c.args(["-c", cpus]).arg(binary);
                c
            }
            None => Command::new(binary),
        };
        let child = command
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--listen-client-urls", &endpoint, "--advertise-client-urls", &endpoint])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("default={peer}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} (install etcd: apt-get install etcd-server)",
                    binary.display()
                )
            })?;
        let etcd = Etcd {
            child,
            endpoint,
            _dir: dir,
        };
        let health = format!("{}/health", etcd.endpoint);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !reqwest::blocking::get(&health).is_ok_and(|r| r.status().is_success()) {
            if Instant::now() > deadline {
                bail!("etcd did not become healthy");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(etcd)
    }

    /// etcd's version, from `/version`.
    pub fn version(&self) -> String {
        reqwest::blocking::get(format!("{}/version", self.endpoint))
            .and_then(|r| r.json::<serde_json::Value>())
            .map(|v| v["etcdserver"].as_str().unwrap_or("?").to_owned())
            .unwrap_or_else(|_| "?".to_owned())
    }
}
