//! A real OCI registry for the tests: Debian's `docker-registry` (the CNCF distribution server) on a free loopback port,
//! serving HTTPS with a certificate from a CA of its own, and with basic authentication from an htpasswd file when
//! given users. Killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;
use tempfile::TempDir;

use crate::kube_apiserver::Ca;

/// A running registry.
pub struct Registry {
    child: Child,
    dir: TempDir,
    /// `127.0.0.1:<port>`: the registry part of references.
    pub host: String,
    /// The CA that signed its serving certificate.
    pub ca: Ca,
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The registry binary: `$DOCKER_REGISTRY`, else `docker-registry` on the PATH (`apt-get install docker-registry`).
fn binary() -> PathBuf {
    std::env::var_os("DOCKER_REGISTRY").map_or_else(|| PathBuf::from("docker-registry"), PathBuf::from)
}

impl Registry {
    /// Starts a registry; with `users` ((name, password) pairs), only they may pull and push.
    pub fn start(users: &[(&str, &str)]) -> Registry {
        const ATTEMPTS: usize = 5;
        let mut last = String::new();
        for _ in 0..ATTEMPTS {
            match Registry::try_start(users) {
                Ok(registry) => return registry,
                // Another test may have taken the port between choosing it and the registry binding it.
                Err(e) => last = format!("{e:#}"),
            }
        }
        panic!("the OCI registry did not start ({ATTEMPTS} attempts): {last}");
    }

    fn try_start(users: &[(&str, &str)]) -> anyhow::Result<Registry> {
        let dir = tempfile::tempdir()?;
        let port = crate::free_port()?;
        let host = format!("127.0.0.1:{port}");
        let ca = Ca::new("test registry CA");
        let (cert, key) = ca.issue("registry", None, &["127.0.0.1", "localhost"], true);
        std::fs::write(dir.path().join("cert.pem"), cert)?;
        std::fs::write(dir.path().join("key.pem"), key)?;
        let auth = if users.is_empty() {
            String::new()
        } else {
            let htpasswd: String = users
                .iter()
                .map(|(user, password)| {
                    let hash = bcrypt::hash(password, 4).expect("a bcrypt hash");
                    format!("{user}:{hash}\n")
                })
                .collect();
            std::fs::write(dir.path().join("htpasswd"), htpasswd)?;
            format!(
                "auth:\n  htpasswd:\n    realm: test-registry\n    path: {}\n",
                dir.path().join("htpasswd").display()
            )
        };
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {root}\n  delete:\n    enabled: true\n\
             http:\n  addr: {host}\n  tls:\n    certificate: {dir}/cert.pem\n    key: {dir}/key.pem\n{auth}",
            root = dir.path().join("data").display(),
            dir = dir.path().display(),
        );
        std::fs::write(dir.path().join("config.yml"), config)?;
        let log = std::fs::File::create(dir.path().join("registry.log"))?;
        let child = Command::new(binary())
            .arg("serve")
            .arg(dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| {
                format!(
                    "starting {} (install it with `apt-get install docker-registry`, or set DOCKER_REGISTRY)",
                    binary().display()
                )
            })?;
        let mut registry = Registry { child, dir, host, ca };
        registry.wait_ready()?;
        Ok(registry)
    }

    /// Waits until the registry answers its API's base path over TLS (200, or 401 when it wants credentials).
    fn wait_ready(&mut self) -> anyhow::Result<()> {
        let client = reqwest::blocking::Client::builder()
            .add_root_certificate(reqwest::Certificate::from_pem(self.ca.pem.as_bytes())?)
            .timeout(Duration::from_secs(2))
            .build()?;
        let url = format!("https://{}/v2/", self.host);
        let mut answered = false;
        crate::wait_until(Duration::from_secs(20), || {
            if let Ok(Some(status)) = self.child.try_wait() {
                // Exited: the port was taken, or the configuration is wrong.
                let _ = status;
                return true;
            }
            answered = client
                .get(&url)
                .send()
                .is_ok_and(|r| matches!(r.status().as_u16(), 200 | 401));
            answered
        });
        if answered {
            return Ok(());
        }
        let log = std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default();
        anyhow::bail!("the registry at {} never answered; its log:\n{log}", self.host)
    }

    /// The CA certificate, as a file (for `--ca-file`).
    pub fn ca_file(&self) -> PathBuf {
        let path = self.dir.path().join("ca.pem");
        std::fs::write(&path, &self.ca.pem).expect("writing the CA file");
        path
    }

    /// The registry's working directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}
