//! A real etcd for end-to-end tests: a single member on free loopback ports with a temporary data directory.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, Context as _};
use tempfile::TempDir;

use crate::wait_until;

/// A running etcd, killed on drop.
pub struct Etcd {
    dir: TempDir,
    client_port: u16,
    peer_port: u16,
    child: Option<Child>,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

impl Etcd {
    /// Starts etcd and waits until it answers. Fails with a clear message when etcd is not installed.
    pub fn start() -> anyhow::Result<Etcd> {
        let mut etcd = Etcd {
            dir: tempfile::Builder::new().prefix("wasm-apiserver-etcd-").tempdir()?,
            client_port: free_port()?,
            peer_port: free_port()?,
            child: None,
        };
        etcd.launch()?;
        Ok(etcd)
    }

    /// The client URL, for `--etcd-servers`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    fn launch(&mut self) -> anyhow::Result<()> {
        let peer = format!("http://127.0.0.1:{}", self.peer_port);
        let log = std::fs::File::create(self.dir.path().join("etcd.log"))?;
        let child = Command::new("etcd")
            .args(["--name", "e2e", "--data-dir"])
            .arg(self.data_dir())
            .args([
                "--listen-client-urls",
                &self.endpoint(),
                "--advertise-client-urls",
                &self.endpoint(),
            ])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("e2e={peer}")])
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting etcd (install it: apt-get install etcd-server)")?;
        self.child = Some(child);
        let health = format!("{}/health", self.endpoint());
        let ready = wait_until(Duration::from_secs(30), || {
            reqwest::blocking::get(&health).is_ok_and(|r| r.status().is_success())
        });
        if !ready {
            bail!(
                "etcd did not become healthy; its log:\n{}",
                std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
            );
        }
        Ok(())
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
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

impl Drop for Etcd {
    fn drop(&mut self) {
        self.stop();
    }
}
