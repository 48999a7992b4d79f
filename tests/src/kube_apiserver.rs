//! A real kube-apiserver 1.37 for the tests that compare with it or sit behind it: started from the binary in
//! `KUBE_APISERVER` (built by `scripts/build-kube-apiserver.sh`) on a test etcd, with a PKI of its own made here (a
//! cluster CA for serving and client certificates, a front-proxy CA for the aggregator, service-account keys), on a
//! free loopback port.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::Context as _;
use base64::Engine as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};
use tempfile::TempDir;

use crate::etcd::Etcd;
use crate::http::Http;
use crate::wait_until;

/// How long kube-apiserver may take to answer `/readyz` with 200.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// The path of the kube-apiserver binary from `KUBE_APISERVER`, or `None` (after printing why the test is skipped)
/// when it is not set.
pub fn kube_apiserver_binary() -> Option<PathBuf> {
    match std::env::var_os("KUBE_APISERVER") {
        Some(path) => Some(PathBuf::from(path)),
        None => {
            eprintln!("SKIPPED: KUBE_APISERVER is not set (scripts/test.sh builds kube-apiserver and sets it)");
            None
        }
    }
}

/// A certificate authority that issues certificates.
pub struct Ca {
    /// The CA certificate (PEM).
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    /// A new self-signed CA named `name`.
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate().expect("a CA key");
        let cert = params.self_signed(&key).expect("a self-signed CA");
        Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        }
    }

    /// A certificate and its key (PEM) for `cn` in the organisation `org` (a Kubernetes group), with the given
    /// SANs, for a server (`server`) or a client.
    pub fn issue(&self, cn: &str, org: Option<&str>, sans: &[&str], server: bool) -> (String, String) {
        let mut params = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .expect("certificate parameters");
        params.distinguished_name.push(DnType::CommonName, cn);
        if let Some(org) = org {
            params.distinguished_name.push(DnType::OrganizationName, org);
        }
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![if server {
            ExtendedKeyUsagePurpose::ServerAuth
        } else {
            ExtendedKeyUsagePurpose::ClientAuth
        }];
        let key = KeyPair::generate().expect("a key");
        let cert = params.signed_by(&key, &self.issuer).expect("a signed certificate");
        (cert.pem(), key.serialize_pem())
    }
}

/// A running kube-apiserver, killed on drop, with its PKI and working directory.
pub struct KubeApiserver {
    child: Child,
    dir: TempDir,
    log: PathBuf,
    port: u16,
    /// The cluster CA: it signs the serving certificate and the client certificates kube-apiserver trusts.
    pub ca: Ca,
    /// The front-proxy CA (`--requestheader-client-ca-file`); it signs the aggregator's proxy client certificate,
    /// `front-proxy-client`.
    pub front_proxy_ca: Ca,
    /// The administrator's client certificate and key (user `admin`, group `system:masters`).
    pub admin: (String, String),
}

impl Drop for KubeApiserver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl KubeApiserver {
    /// Starts `binary` on `etcd` and waits until `/readyz` answers 200. The aggregator's front-proxy flags are set,
    /// so an APIService can proxy to another server.
    pub fn start(binary: &Path, etcd: &Etcd) -> anyhow::Result<KubeApiserver> {
        KubeApiserver::start_with_args(binary, etcd, &[])
    }

    /// Like [`KubeApiserver::start`], with more flags (such as `--enable-aggregator-routing=true`).
    pub fn start_with_args(binary: &Path, etcd: &Etcd, extra_args: &[&str]) -> anyhow::Result<KubeApiserver> {
        let dir = tempfile::Builder::new().prefix("kube-apiserver-").tempdir()?;
        let d = dir.path();
        let ca = Ca::new("kube-ca");
        let front_proxy_ca = Ca::new("front-proxy-ca");
        let (serving_cert, serving_key) = ca.issue("kube-apiserver", None, &["127.0.0.1", "localhost"], true);
        let admin = ca.issue("admin", Some("system:masters"), &[], false);
        let proxy_client = front_proxy_ca.issue("front-proxy-client", None, &[], false);
        let sa_key = KeyPair::generate()?;
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let log = d.join("kube-apiserver.log");
        let child = Command::new(binary)
            .args([
                format!("--etcd-servers={}", etcd.endpoint()),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                format!("--secure-port={port}"),
                format!("--cert-dir={}", d.join("certs").display()),
                format!("--tls-cert-file={}", write(d, "serving.crt", &serving_cert)?),
                format!("--tls-private-key-file={}", write(d, "serving.key", &serving_key)?),
                format!("--client-ca-file={}", write(d, "ca.crt", &ca.pem)?),
                "--authorization-mode=RBAC".into(),
                "--service-account-issuer=https://kubernetes.default.svc".into(),
                format!(
                    "--service-account-key-file={}",
                    write(d, "sa.pub", &sa_key.public_key_pem())?
                ),
                format!(
                    "--service-account-signing-key-file={}",
                    write(d, "sa.key", &sa_key.serialize_pem())?
                ),
                "--service-cluster-ip-range=10.96.0.0/24".into(),
                format!(
                    "--requestheader-client-ca-file={}",
                    write(d, "front-proxy-ca.crt", &front_proxy_ca.pem)?
                ),
                "--requestheader-allowed-names=front-proxy-client".into(),
                "--requestheader-username-headers=X-Remote-User".into(),
                "--requestheader-group-headers=X-Remote-Group".into(),
                "--requestheader-extra-headers-prefix=X-Remote-Extra-".into(),
                format!(
                    "--proxy-client-cert-file={}",
                    write(d, "proxy-client.crt", &proxy_client.0)?
                ),
                format!(
                    "--proxy-client-key-file={}",
                    write(d, "proxy-client.key", &proxy_client.1)?
                ),
                "--endpoint-reconciler-type=none".into(),
                "--profiling=false".into(),
            ])
            .args(extra_args)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log)?)
            .spawn()
            .with_context(|| format!("start {}", binary.display()))?;
        let kas = KubeApiserver {
            child,
            dir,
            log,
            port,
            ca,
            front_proxy_ca,
            admin,
        };
        let http = kas.admin_http();
        let ready = wait_until(READY_TIMEOUT, || {
            http.try_send(reqwest::Method::GET, "/readyz", None, Vec::new())
                .is_ok_and(|r| r.status == 200)
        });
        anyhow::ensure!(ready, "kube-apiserver was not ready:\n{}", kas.log_tail(40));
        Ok(kas)
    }

    /// The HTTPS base URL, `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The working directory (certificates, kubeconfigs, the log); removed on drop.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// An HTTPS client authenticated as the administrator (`system:masters`).
    pub fn admin_http(&self) -> Http {
        let identity = format!("{}{}", self.admin.0, self.admin.1);
        Http::secure(self.url(), &self.ca.pem, Some(identity.as_bytes()))
    }

    /// Writes a kubeconfig for the user `name` authenticated by the client certificate `cert` (PEM certificate and
    /// key), in the namespace `default`, and returns its path.
    pub fn kubeconfig(&self, name: &str, cert: &(String, String)) -> String {
        let b64 = base64::engine::general_purpose::STANDARD;
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kube\n  cluster:\n    server: {}\n    \
             certificate-authority-data: {}\nusers:\n- name: {name}\n  user:\n    client-certificate-data: {}\n    \
             client-key-data: {}\ncontexts:\n- name: c\n  context: {{cluster: kube, user: {name}, namespace: default}}\n\
             current-context: c\n",
            self.url(),
            b64.encode(&self.ca.pem),
            b64.encode(&cert.0),
            b64.encode(&cert.1)
        );
        write(self.dir(), &format!("{name}.kubeconfig"), &text).expect("write a kubeconfig")
    }

    /// The last `lines` lines of kube-apiserver's log, for failure messages.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// Writes `text` to `dir/name` and returns the path as a string (for a flag).
fn write(dir: &Path, name: &str, text: &str) -> anyhow::Result<String> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    Ok(path.to_str().context("a non-UTF-8 path")?.to_owned())
}
