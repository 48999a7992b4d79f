//! cosign's key-based signatures of an artifact, as `cosign sign --key` writes them (v2, or v3 with
//! `--new-bundle-format=false --use-signing-config=false --tlog-upload=false`): in the artifact's repository, the tag
//! `sha256-<hex>.sig` of its manifest digest names a manifest with one layer per signature, of media type
//! [`SIMPLE_SIGNING_MEDIA_TYPE`], whose blob is the signed payload ("simple signing" JSON naming the manifest
//! digest) and whose annotation [`SIGNATURE_ANNOTATION`] is the signature: ECDSA P-256 over SHA-256, ASN.1 DER,
//! base64. The keys are cosign's public keys (`cosign.pub`, an SPKI `PUBLIC KEY` PEM).

use base64::Engine as _;
use ring::signature::{UnparsedPublicKey, ECDSA_P256_SHA256_ASN1};
use serde_json::Value;

/// The media type of a signature layer.
pub const SIMPLE_SIGNING_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The layer annotation holding the signature.
pub const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";
/// The payload's `critical.type`.
pub const PAYLOAD_TYPE: &str = "cosign container image signature";
/// The most bytes of a payload read (cosign's are a few hundred).
pub const MAX_PAYLOAD_BYTES: u64 = 64 * 1024;

/// The DER prefix of an ECDSA P-256 SubjectPublicKeyInfo, before the 65-byte uncompressed point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a, 0x86, 0x48, 0xce,
    0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// A cosign public key (ECDSA P-256).
#[derive(Clone, PartialEq, Eq)]
pub struct PublicKey {
    point: Vec<u8>,
    /// `sha256:<hex>` of its DER, to name it in messages.
    pub fingerprint: String,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PublicKey({})", self.fingerprint)
    }
}

impl PublicKey {
    /// Parses a `cosign.pub`: a PEM `PUBLIC KEY` holding an ECDSA P-256 SubjectPublicKeyInfo.
    pub fn from_pem(pem: &str) -> Result<PublicKey, String> {
        let body: String = pem
            .lines()
            .map(str::trim)
            .skip_while(|l| *l != "-----BEGIN PUBLIC KEY-----")
            .skip(1)
            .take_while(|l| *l != "-----END PUBLIC KEY-----")
            .collect();
        if body.is_empty() {
            return Err("not a PEM public key (no -----BEGIN PUBLIC KEY----- block)".into());
        }
        let der = base64::engine::general_purpose::STANDARD
            .decode(body)
            .map_err(|e| format!("the PEM public key is not base64: {e}"))?;
        let point = der
            .strip_prefix(&P256_SPKI_PREFIX[..])
            .filter(|p| p.len() == 65 && p[0] == 4)
            .ok_or("not an ECDSA P-256 public key (cosign's keys are)")?;
        Ok(PublicKey {
            point: point.to_vec(),
            fingerprint: crate::sha256_digest(&der),
        })
    }

    /// The PEM of a P-256 public key given as its 65-byte uncompressed point (as `ring` gives it).
    pub fn pem_of_point(point: &[u8]) -> String {
        let mut der = P256_SPKI_PREFIX.to_vec();
        der.extend_from_slice(point);
        let encoded = base64::engine::general_purpose::STANDARD.encode(der);
        let lines: Vec<&str> = encoded
            .as_bytes()
            .chunks(64)
            .map(|c| std::str::from_utf8(c).unwrap_or_default())
            .collect();
        format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            lines.join("\n")
        )
    }

    fn verifies(&self, payload: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(payload, signature)
            .is_ok()
    }
}

/// One signature found for an artifact: the payload and the base64 signature of its layer.
#[derive(Clone, Debug)]
pub struct Signature {
    /// The signed payload, as stored.
    pub payload: Vec<u8>,
    /// The signature, base64 (the layer annotation's value).
    pub signature: String,
}

/// The tag of the signatures of the manifest `digest` (`sha256:<hex>` → `sha256-<hex>.sig`).
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replace(':', "-"))
}

/// The simple-signing payload naming `digest` in `repository` (as cosign writes it, compact).
pub fn payload(repository: &str, digest: &str) -> Vec<u8> {
    serde_json::json!({
        "critical": {
            "identity": {"docker-reference": repository},
            "image": {"docker-manifest-digest": digest},
            "type": PAYLOAD_TYPE,
        },
        "optional": null,
    })
    .to_string()
    .into_bytes()
}

/// Why no signature verified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The artifact has no signature.
    #[error("{digest} has no cosign signature (no {tag} in its repository)")]
    Unsigned {
        /// The artifact's manifest digest.
        digest: String,
        /// The tag looked for.
        tag: String,
    },
    /// Signatures exist, but none by a trusted key over this digest.
    #[error("none of the {count} signature(s) of {digest} is valid for a trusted key ({keys}){detail}")]
    Untrusted {
        /// The artifact's manifest digest.
        digest: String,
        /// How many signatures were found.
        count: usize,
        /// The trusted keys' fingerprints.
        keys: String,
        /// What was wrong with them, when it is more than a key mismatch.
        detail: String,
    },
}

impl VerifyError {
    /// The error as a condition's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            VerifyError::Unsigned { .. } => "Unsigned",
            VerifyError::Untrusted { .. } => "UntrustedSignature",
        }
    }
}

/// Verifies that one of `signatures` is a valid signature by one of `keys` of a payload naming `digest`; returns
/// the key that signed.
pub fn verify<'k>(keys: &'k [PublicKey], digest: &str, signatures: &[Signature]) -> Result<&'k PublicKey, VerifyError> {
    if signatures.is_empty() {
        return Err(VerifyError::Unsigned {
            digest: digest.to_owned(),
            tag: signature_tag(digest),
        });
    }
    let mut wrong_digest = false;
    for s in signatures {
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(s.signature.trim()) else {
            continue;
        };
        let Some(key) = keys.iter().find(|k| k.verifies(&s.payload, &signature)) else {
            continue;
        };
        // Signed by a trusted key: the payload must name this artifact (a signature copied from another one is not
        // this artifact's).
        let payload: Value = serde_json::from_slice(&s.payload).unwrap_or(Value::Null);
        let named = payload
            .pointer("/critical/image/docker-manifest-digest")
            .and_then(Value::as_str);
        let kind = payload.pointer("/critical/type").and_then(Value::as_str);
        if named == Some(digest) && kind == Some(PAYLOAD_TYPE) {
            return Ok(key);
        }
        wrong_digest = true;
    }
    let keys_named: Vec<&str> = keys.iter().map(|k| k.fingerprint.as_str()).collect();
    Err(VerifyError::Untrusted {
        digest: digest.to_owned(),
        count: signatures.len(),
        keys: keys_named.join(", "),
        detail: if wrong_digest {
            "; a trusted key signed another artifact's digest".into()
        } else {
            String::new()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::rand::SystemRandom;
    use ring::signature::{EcdsaKeyPair, KeyPair as _, ECDSA_P256_SHA256_ASN1_SIGNING};

    fn key_pair() -> (EcdsaKeyPair, PublicKey) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng).unwrap();
        let public = PublicKey::from_pem(&PublicKey::pem_of_point(pair.public_key().as_ref())).unwrap();
        (pair, public)
    }

    fn sign(pair: &EcdsaKeyPair, payload: &[u8]) -> Signature {
        let sig = pair.sign(&SystemRandom::new(), payload).unwrap();
        Signature {
            payload: payload.to_vec(),
            signature: base64::engine::general_purpose::STANDARD.encode(sig.as_ref()),
        }
    }

    #[test]
    fn a_signature_by_a_trusted_key_over_the_digest_verifies() {
        let (pair, public) = key_pair();
        let (other_pair, other) = key_pair();
        let digest = crate::sha256_digest(b"manifest");
        let good = sign(&pair, &payload("r.example.com/p", &digest));
        assert_eq!(
            verify(std::slice::from_ref(&public), &digest, std::slice::from_ref(&good)).unwrap(),
            &public
        );
        // Any one valid signature among others, under any one of the keys.
        let stranger = sign(&other_pair, &payload("r.example.com/p", &digest));
        assert!(verify(&[other.clone(), public.clone()], &digest, &[stranger.clone(), good]).is_ok());
        let e = verify(std::slice::from_ref(&public), &digest, &[stranger]).unwrap_err();
        assert_eq!(e.reason(), "UntrustedSignature");
        // A trusted signature of another artifact.
        let copied = sign(&pair, &payload("r.example.com/p", &crate::sha256_digest(b"other")));
        let e = verify(std::slice::from_ref(&public), &digest, &[copied]).unwrap_err();
        assert!(e.to_string().contains("another artifact's digest"), "{e}");
        let e = verify(std::slice::from_ref(&public), &digest, &[]).unwrap_err();
        assert_eq!(e.reason(), "Unsigned");
        assert!(e.to_string().contains(&signature_tag(&digest)), "{e}");
    }

    #[test]
    fn keys_are_cosign_public_keys() {
        let (_, public) = key_pair();
        assert!(public.fingerprint.starts_with("sha256:"));
        assert!(PublicKey::from_pem("nothing")
            .unwrap_err()
            .contains("no -----BEGIN PUBLIC KEY-----"));
        let rsa_like = "-----BEGIN PUBLIC KEY-----\nMFwwDQYJKoZIhvcNAQEBBQADSwAwSAJBAKj34GkxFhD90vcNLYLInFEX6Ppy1tPf\n-----END PUBLIC KEY-----\n";
        assert!(PublicKey::from_pem(rsa_like).unwrap_err().contains("P-256"));
        assert_eq!(signature_tag("sha256:abc"), "sha256-abc.sig");
    }
}
