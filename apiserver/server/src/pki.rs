//! The server's own certificates: a CA and a serving certificate made once under `<data-dir>/pki/` (as
//! kube-apiserver's self-signed certificates for a development setup), and client certificates signed by that CA
//! for `wasm-apiserver kubeconfig`.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose, SanType,
};

/// How long the generated CA is valid.
const CA_VALIDITY_DAYS: i64 = 10 * 365;
/// How long generated serving and client certificates are valid.
const LEAF_VALIDITY_DAYS: i64 = 365;

/// The files of the server's PKI directory.
#[derive(Clone, Debug)]
pub struct Pki {
    dir: PathBuf,
}

/// A PEM certificate and its PEM private key.
#[derive(Clone, Debug)]
pub struct CertAndKey {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PEM (PKCS#8).
    pub key_pem: String,
}

impl Pki {
    /// The PKI directory of a data directory: `<data-dir>/pki`.
    pub fn in_data_dir(data_dir: &Path) -> Pki {
        Pki {
            dir: data_dir.join("pki"),
        }
    }

    /// The CA certificate file (`ca.crt`): clients trust it, and client certificates it signed authenticate.
    pub fn ca_cert_path(&self) -> PathBuf {
        self.dir.join("ca.crt")
    }

    fn ca_key_path(&self) -> PathBuf {
        self.dir.join("ca.key")
    }

    /// The serving certificate file (`apiserver.crt`).
    pub fn serving_cert_path(&self) -> PathBuf {
        self.dir.join("apiserver.crt")
    }

    /// The serving key file (`apiserver.key`).
    pub fn serving_key_path(&self) -> PathBuf {
        self.dir.join("apiserver.key")
    }

    /// Makes the CA and the serving certificate when they do not exist yet (a CA is made once and kept: the
    /// kubeconfigs it signed stay valid across restarts). The serving certificate names localhost, 127.0.0.1, ::1
    /// and this machine's host name.
    pub fn ensure(&self) -> anyhow::Result<()> {
        std::fs::create_dir_all(&self.dir).with_context(|| format!("creating {}", self.dir.display()))?;
        if !self.ca_cert_path().exists() || !self.ca_key_path().exists() {
            let key = KeyPair::generate().context("generating the CA key")?;
            let mut params = CertificateParams::default();
            params.distinguished_name = name("wasm-apiserver-ca", &[]);
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.key_usages = vec![
                KeyUsagePurpose::KeyCertSign,
                KeyUsagePurpose::CrlSign,
                KeyUsagePurpose::DigitalSignature,
            ];
            validity(&mut params, CA_VALIDITY_DAYS);
            let cert = params.self_signed(&key).context("signing the CA certificate")?;
            write_private(&self.ca_key_path(), &key.serialize_pem())?;
            write(&self.ca_cert_path(), &cert.pem())?;
            // A new CA invalidates the old serving certificate.
            let _ = std::fs::remove_file(self.serving_cert_path());
            tracing::info!(dir = %self.dir.display(), "created a certificate authority");
        }
        if !self.serving_cert_path().exists() || !self.serving_key_path().exists() {
            let mut sans = vec!["localhost".to_owned(), "127.0.0.1".to_owned(), "::1".to_owned()];
            if let Some(host) = host_name().filter(|h| !sans.contains(h)) {
                sans.push(host);
            }
            let issued = self.issue(&sans, "wasm-apiserver", &[], ExtendedKeyUsagePurpose::ServerAuth)?;
            write_private(&self.serving_key_path(), &issued.key_pem)?;
            write(&self.serving_cert_path(), &issued.cert_pem)?;
            tracing::info!(names = %sans.join(","), "created a serving certificate");
        }
        Ok(())
    }

    /// The CA certificate, PEM.
    pub fn ca_pem(&self) -> anyhow::Result<String> {
        read(&self.ca_cert_path())
    }

    /// A client certificate for `user` in `groups` (CN and O, as Kubernetes reads them), signed by the CA.
    ///
    /// Made with x509-cert rather than rcgen: rcgen keeps one value per attribute type, and a user may have several
    /// groups, each an O of its own.
    pub fn client_certificate(&self, user: &str, groups: &[String]) -> anyhow::Result<CertAndKey> {
        use p256::ecdsa::{DerSignature, SigningKey};
        use p256::pkcs8::DecodePrivateKey as _;
        use x509_cert::builder::{Builder as _, CertificateBuilder, Profile};
        use x509_cert::der::{DecodePem as _, EncodePem as _};

        let ca_key_pem = read(&self.ca_key_path())?;
        let ca_key = SigningKey::from_pkcs8_pem(&ca_key_pem)
            .map_err(|e| anyhow::anyhow!("reading the CA key {}: {e}", self.ca_key_path().display()))?;
        let ca = x509_cert::Certificate::from_pem(read(&self.ca_cert_path())?.as_bytes())
            .map_err(|e| anyhow::anyhow!("reading the CA certificate {}: {e}", self.ca_cert_path().display()))?;
        let key = KeyPair::generate().context("generating a key")?;
        let key_pem = key.serialize_pem();
        let public = x509_cert::spki::SubjectPublicKeyInfoOwned::from_pem(key.public_key_pem().as_bytes())
            .map_err(|e| anyhow::anyhow!("encoding the public key: {e}"))?;
        let serial: [u8; 16] = rand_serial();
        let profile = Profile::Leaf {
            issuer: ca.tbs_certificate.subject.clone(),
            enable_key_agreement: false,
            enable_key_encipherment: true,
        };
        let validity =
            x509_cert::time::Validity::from_now(std::time::Duration::from_secs(LEAF_VALIDITY_DAYS as u64 * 86_400))
                .map_err(|e| anyhow::anyhow!("certificate validity: {e}"))?;
        let subject = subject_name(user, groups).map_err(|e| anyhow::anyhow!("encoding the user name: {e}"))?;
        let mut builder = CertificateBuilder::new(
            profile,
            x509_cert::serial_number::SerialNumber::new(&serial).map_err(|e| anyhow::anyhow!("serial: {e}"))?,
            validity,
            subject,
            public,
            &ca_key,
        )
        .map_err(|e| anyhow::anyhow!("preparing a client certificate: {e}"))?;
        builder
            .add_extension(&x509_cert::ext::pkix::ExtendedKeyUsage(vec![
                const_oid::db::rfc5280::ID_KP_CLIENT_AUTH,
            ]))
            .map_err(|e| anyhow::anyhow!("adding the client-auth usage: {e}"))?;
        let cert = builder
            .build::<DerSignature>()
            .map_err(|e| anyhow::anyhow!("signing a client certificate: {e}"))?;
        let cert_pem = cert
            .to_pem(x509_cert::der::pem::LineEnding::LF)
            .map_err(|e| anyhow::anyhow!("encoding a client certificate: {e}"))?;
        Ok(CertAndKey { cert_pem, key_pem })
    }

    /// Issues a certificate signed by the CA.
    fn issue(
        &self,
        sans: &[String],
        common_name: &str,
        organizations: &[String],
        usage: ExtendedKeyUsagePurpose,
    ) -> anyhow::Result<CertAndKey> {
        let ca_key = KeyPair::from_pem(&read(&self.ca_key_path())?)
            .with_context(|| format!("reading the CA key {}", self.ca_key_path().display()))?;
        let ca_pem = read(&self.ca_cert_path())?;
        let issuer = Issuer::from_ca_cert_pem(&ca_pem, ca_key)
            .with_context(|| format!("reading the CA certificate {}", self.ca_cert_path().display()))?;
        let key = KeyPair::generate().context("generating a key")?;
        let mut params = CertificateParams::default();
        params.subject_alt_names = sans
            .iter()
            .map(|s| match s.parse() {
                Ok(ip) => Ok(SanType::IpAddress(ip)),
                Err(_) => s.clone().try_into().map(SanType::DnsName),
            })
            .collect::<Result<_, _>>()
            .context("a subject alternative name is not a valid DNS name")?;
        params.distinguished_name = name(common_name, organizations);
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature, KeyUsagePurpose::KeyEncipherment];
        params.extended_key_usages = vec![usage];
        params.use_authority_key_identifier_extension = true;
        validity(&mut params, LEAF_VALIDITY_DAYS);
        let cert = params.signed_by(&key, &issuer).context("signing a certificate")?;
        Ok(CertAndKey {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }
}

/// A subject with the user as CN and each group as an O of its own.
fn subject_name(user: &str, groups: &[String]) -> Result<x509_cert::name::Name, x509_cert::der::Error> {
    use x509_cert::attr::AttributeTypeAndValue;
    use x509_cert::der::asn1::{Any, SetOfVec, Utf8StringRef};
    use x509_cert::name::{RdnSequence, RelativeDistinguishedName};

    let rdn = |oid, value: &str| -> Result<RelativeDistinguishedName, x509_cert::der::Error> {
        let value = Any::from(Utf8StringRef::new(value)?);
        Ok(RelativeDistinguishedName(SetOfVec::try_from(vec![
            AttributeTypeAndValue { oid, value },
        ])?))
    };
    let mut rdns = Vec::new();
    for group in groups {
        rdns.push(rdn(const_oid::db::rfc4519::O, group)?);
    }
    rdns.push(rdn(const_oid::db::rfc4519::CN, user)?);
    Ok(RdnSequence(rdns))
}

/// A random positive 128-bit serial number.
fn rand_serial() -> [u8; 16] {
    let mut serial = *uuid::Uuid::new_v4().as_bytes();
    serial[0] &= 0x7f;
    serial[0] |= 0x01;
    serial
}

fn name(common_name: &str, organizations: &[String]) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    for o in organizations {
        dn.push(DnType::OrganizationName, o.as_str());
    }
    dn.push(DnType::CommonName, common_name);
    dn
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = time::OffsetDateTime::now_utc();
    // A little in the past, for clocks that differ.
    params.not_before = now - time::Duration::hours(1);
    params.not_after = now + time::Duration::days(days);
}

/// This machine's host name, if it has a usable one.
fn host_name() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()?;
    let name = name.trim().to_ascii_lowercase();
    apimachinery::validation::is_dns1123_subdomain(&name)
        .is_empty()
        .then_some(name)
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes a file readable by its owner only (a private key, a kubeconfig holding one).
pub fn write_private(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    file.write_all(text.as_bytes())
        .with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_is_made_once_and_signs_client_certificates_with_user_and_groups() {
        let dir = tempfile::tempdir().unwrap();
        let pki = Pki::in_data_dir(dir.path());
        pki.ensure().unwrap();
        let ca = pki.ca_pem().unwrap();
        let serving = std::fs::read_to_string(pki.serving_cert_path()).unwrap();
        pki.ensure().unwrap();
        assert_eq!(pki.ca_pem().unwrap(), ca, "an existing CA is kept");
        assert_eq!(std::fs::read_to_string(pki.serving_cert_path()).unwrap(), serving);

        let client = pki.client_certificate("alice", &["dev".into(), "ops".into()]).unwrap();
        let der = rustls_pki_types::pem::PemObject::from_pem_slice(client.cert_pem.as_bytes()).unwrap();
        let identity = authn::x509::identity(&der).unwrap();
        assert_eq!(identity.name, "alice");
        assert_eq!(identity.groups, ["dev", "ops"]);
    }
}
