//! x509 client certificates: a certificate signed by a trusted CA names the user in its subject's common name and
//! the groups in its organizations (kube's `x509.CommonNameUserConversion`).
//!
//! A connection's certificate never changes, so it is verified once, when the connection is accepted
//! ([`CaPool::verify`]), not on every request.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, UnixTime};

use super::UserInfo;

/// A set of trusted CA certificates, and a verifier of client certificate chains against them.
#[derive(Clone)]
pub struct CaPool {
    roots: Arc<RootCertStore>,
    verifier: Arc<dyn ClientCertVerifier>,
}

impl std::fmt::Debug for CaPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaPool")
            .field("certificates", &self.roots.len())
            .finish()
    }
}

impl CaPool {
    /// The CA certificates of PEM files (each may hold several).
    pub fn from_files(paths: &[&Path]) -> anyhow::Result<CaPool> {
        let mut certs = Vec::new();
        for path in paths {
            let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
            let found: Vec<CertificateDer<'static>> =
                CertificateDer::pem_slice_iter(&text)
                    .collect::<Result<_, _>>()
                    .with_context(|| format!("parsing the certificates in {}", path.display()))?;
            if found.is_empty() {
                anyhow::bail!("{} holds no PEM certificate", path.display());
            }
            certs.extend(found);
        }
        CaPool::new(certs)
    }

    /// A pool of DER certificates.
    pub fn new(certs: Vec<CertificateDer<'static>>) -> anyhow::Result<CaPool> {
        let mut roots = RootCertStore::empty();
        for cert in certs {
            roots
                .add(cert)
                .context("a CA certificate is not usable as a trust anchor")?;
        }
        let roots = Arc::new(roots);
        let verifier = WebPkiClientVerifier::builder_with_provider(
            roots.clone(),
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .context("building a client certificate verifier")?;
        Ok(CaPool { roots, verifier })
    }

    /// The trust anchors, for the TLS server's own client certificate verifier.
    pub fn roots(&self) -> &RootCertStore {
        &self.roots
    }

    /// Whether a client's chain (leaf first) was signed by one of these CAs, for client authentication, now.
    pub fn verify(&self, chain: &[CertificateDer<'_>]) -> Result<(), String> {
        let (leaf, intermediates) = chain.split_first().ok_or("no client certificate")?;
        self.verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map(|_| ())
            .map_err(|e| e.to_string())
    }
}

/// The user a client certificate names: the subject's common name, and its organizations as groups.
pub fn identity(cert: &CertificateDer<'_>) -> Result<UserInfo, String> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert).map_err(|e| format!("unreadable certificate: {e}"))?;
    let subject = parsed.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())
        .filter(|cn| !cn.is_empty())
        .ok_or("the certificate's subject has no common name")?;
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok())
        .map(str::to_owned)
        .collect::<Vec<_>>();
    Ok(UserInfo::new(name, groups))
}

/// What a connection's client certificate proves, found once when the connection is accepted.
#[derive(Clone, Debug, Default)]
pub struct PeerCertificate {
    /// The user, when the certificate was signed by a client CA; the reason it is refused otherwise; `None` when
    /// the connection has no certificate or was verified for a front proxy only.
    pub user: Option<Result<UserInfo, String>>,
    /// The common name, when the certificate was signed by the request-header (front proxy) CA.
    pub proxy_name: Option<String>,
}

impl PeerCertificate {
    /// Verifies a connection's chain against the client CAs and the request-header CA.
    pub fn verify(chain: &[CertificateDer<'_>], client_ca: Option<&CaPool>, proxy_ca: Option<&CaPool>) -> Self {
        let Some(leaf) = chain.first() else {
            return PeerCertificate::default();
        };
        let proxy_name = proxy_ca
            .filter(|ca| ca.verify(chain).is_ok())
            .and_then(|_| identity(leaf).ok())
            .map(|user| user.name);
        let user = match client_ca {
            Some(ca) => match ca.verify(chain) {
                Ok(()) => Some(identity(leaf)),
                // A front proxy's certificate need not be a client certificate too.
                Err(_) if proxy_name.is_some() => None,
                Err(e) => Some(Err(format!("verifying the client certificate: {e}"))),
            },
            None => None,
        };
        PeerCertificate { user, proxy_name }
    }
}
