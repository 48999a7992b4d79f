//! A certificate authority for kube-apiserver's serving and client certificates (the e2e harness's `Ca`,
//! tests/src/kube_apiserver.rs, copied: depending on the e2e crate would add its dependencies to the release build).

use std::path::Path;

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
};

/// A certificate authority that issues certificates.
pub struct Ca {
    /// The CA certificate (PEM).
    pub pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    /// A new self-signed CA named `name`.
    pub fn new(name: &str) -> anyhow::Result<Ca> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let key = KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Ca {
            pem: cert.pem(),
            issuer: Issuer::new(params, key),
        })
    }

    /// A certificate and its key (PEM) for `cn` in the organisation `org` (a Kubernetes group), with the given
    /// SANs, for a server (`server`) or a client.
    pub fn issue(&self, cn: &str, org: Option<&str>, sans: &[&str], server: bool) -> anyhow::Result<(String, String)> {
        let mut params = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
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
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}

/// A fresh key pair (for service-account tokens): (public PEM, private PEM).
pub fn key_pair() -> anyhow::Result<(String, String)> {
    let key = KeyPair::generate()?;
    Ok((key.public_key_pem(), key.serialize_pem()))
}

/// Writes `text` to `dir/name` and returns the path as a string (for a flag).
pub fn write(dir: &Path, name: &str, text: &str) -> anyhow::Result<String> {
    let path = dir.join(name);
    std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    Ok(path.to_str().context("a non-UTF-8 path")?.to_owned())
}
