//! The TLS server configuration: the serving certificate (reloaded when its files change on disk, as
//! kube-apiserver's dynamic serving certificates), client certificates requested but not required (verified
//! against the trusted client CAs; requests without one go on to the other authenticators), HTTP/2 and HTTP/1.1.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use rustls::crypto::ring::default_provider;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// How often at most the certificate files are checked for changes (on a handshake).
const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// The TLS configuration of the secure port.
pub fn server_config(
    cert: Arc<ReloadingCertificate>,
    client_roots: Vec<&RootCertStore>,
) -> anyhow::Result<Arc<ServerConfig>> {
    let provider = Arc::new(default_provider());
    let mut roots = RootCertStore::empty();
    for pool in client_roots {
        roots.roots.extend(pool.roots.iter().cloned());
    }
    let verifier = if roots.is_empty() {
        WebPkiClientVerifier::no_client_auth()
    } else {
        WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .allow_unauthenticated()
            .build()
            .context("building the client certificate verifier")?
    };
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .context("choosing TLS versions")?
        .with_client_cert_verifier(verifier)
        .with_cert_resolver(cert);
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A serving certificate read from PEM files, read again when either file's modification time changes.
#[derive(Debug)]
pub struct ReloadingCertificate {
    cert_path: PathBuf,
    key_path: PathBuf,
    state: Mutex<Loaded>,
}

#[derive(Debug)]
struct Loaded {
    key: Arc<CertifiedKey>,
    modified: (Option<SystemTime>, Option<SystemTime>),
    checked: Instant,
}

impl ReloadingCertificate {
    /// Reads the certificate chain and key; fails when they are missing or unusable.
    pub fn load(cert_path: PathBuf, key_path: PathBuf) -> anyhow::Result<ReloadingCertificate> {
        let key = read_certified_key(&cert_path, &key_path)?;
        let modified = (mtime(&cert_path), mtime(&key_path));
        Ok(ReloadingCertificate {
            cert_path,
            key_path,
            state: Mutex::new(Loaded {
                key,
                modified,
                checked: Instant::now(),
            }),
        })
    }

    /// The current certificate, reloaded first if the files changed (checked at most once a second). A change
    /// that cannot be read (say, a half-written pair) keeps the previous certificate and is tried again.
    pub fn current(&self) -> Arc<CertifiedKey> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.checked.elapsed() >= RELOAD_CHECK_INTERVAL {
            state.checked = Instant::now();
            let modified = (mtime(&self.cert_path), mtime(&self.key_path));
            if modified != state.modified {
                match read_certified_key(&self.cert_path, &self.key_path) {
                    Ok(key) => {
                        tracing::info!(cert = %self.cert_path.display(), "reloaded the serving certificate");
                        state.key = key;
                        state.modified = modified;
                    }
                    Err(e) => {
                        tracing::warn!(error = %format!("{e:#}"), "the changed serving certificate cannot be used yet")
                    }
                }
            }
        }
        state.key.clone()
    }
}

impl ResolvesServerCert for ReloadingCertificate {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

fn mtime(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

fn read_certified_key(cert_path: &std::path::Path, key_path: &std::path::Path) -> anyhow::Result<Arc<CertifiedKey>> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert_path)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .with_context(|| format!("reading the certificates in {}", cert_path.display()))?;
    if certs.is_empty() {
        anyhow::bail!("{} holds no PEM certificate", cert_path.display());
    }
    let key = PrivateKeyDer::from_pem_file(key_path)
        .with_context(|| format!("reading the private key in {}", key_path.display()))?;
    let key = CertifiedKey::from_der(certs, key, &default_provider()).with_context(|| {
        format!(
            "{} and {} do not make a usable pair",
            cert_path.display(),
            key_path.display()
        )
    })?;
    Ok(Arc::new(key))
}
