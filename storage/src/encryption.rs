//! Encryption at rest (`--encryption-provider-config`, kube's `EncryptionConfiguration`): a [`Storage`] that
//! encrypts values on their way to the backend and decrypts them on the way back, per resource.
//!
//! Each resource entry lists providers (`aesgcm`, `secretbox`, `identity`); the first provider's first key
//! encrypts, every provider's keys decrypt, so keys rotate by putting a new key first. Stored values carry kube's
//! prefix `k8s:enc:<provider>:v1:<key name>:` before the nonce and ciphertext; AES-GCM authenticates the storage key
//! too (as kube does), so a value copied under another key does not decrypt. A value without a prefix (plaintext)
//! is read only when `identity` is among the resource's providers, as in kube.

use std::collections::BTreeSet;
use std::sync::Arc;

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes128Gcm, Aes256Gcm};
use anyhow::{bail, Context as _};
use base64::Engine as _;
use crypto_secretbox::XSalsa20Poly1305;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{KeyValue, ListOptions, ListResult, Result, Revision, Storage, StorageError, WatchStream};
use crate::keys::resource_of_key;

/// The prefix of every encrypted value.
const PREFIX: &str = "k8s:enc:";

/// Seals `plain` with a fresh random nonce: the nonce, then the ciphertext and its tag.
fn seal<A: Aead + AeadCore>(
    cipher: &A,
    plain: &[u8],
    aad: &[u8],
) -> std::result::Result<Vec<u8>, aes_gcm::aead::Error> {
    let nonce = A::generate_nonce(&mut OsRng);
    let mut out = nonce.to_vec();
    out.extend(cipher.encrypt(&nonce, Payload { msg: plain, aad })?);
    Ok(out)
}

/// Opens what [`seal`] made; `None` when it is truncated or does not authenticate.
fn unseal<A: Aead + AeadCore>(cipher: &A, data: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
    use aes_gcm::aead::generic_array::typenum::Unsigned as _;
    let size = A::NonceSize::to_usize();
    if data.len() < size {
        return None;
    }
    let (nonce, sealed) = data.split_at(size);
    cipher
        .decrypt(
            aes_gcm::aead::Nonce::<A>::from_slice(nonce),
            Payload { msg: sealed, aad },
        )
        .ok()
}

/// One key of a provider.
#[derive(Clone)]
enum Cipher {
    Aes128(Box<Aes128Gcm>),
    Aes256(Box<Aes256Gcm>),
    Secretbox(Box<XSalsa20Poly1305>),
}

#[derive(Clone)]
struct Key {
    name: String,
    cipher: Cipher,
}

#[derive(Clone)]
enum Provider {
    AesGcm(Vec<Key>),
    Secretbox(Vec<Key>),
    Identity,
}

impl Provider {
    fn name(&self) -> &'static str {
        match self {
            Provider::AesGcm(_) => "aesgcm",
            Provider::Secretbox(_) => "secretbox",
            Provider::Identity => "identity",
        }
    }

    fn keys(&self) -> &[Key] {
        match self {
            Provider::AesGcm(k) | Provider::Secretbox(k) => k,
            Provider::Identity => &[],
        }
    }
}

/// The providers of a set of resources.
#[derive(Clone)]
struct Entry {
    /// `resource.group` names, `*.group`, `*.*`; core resources without a group (`namespaces`).
    resources: Vec<String>,
    providers: Vec<Provider>,
}

/// A parsed `EncryptionConfiguration`.
#[derive(Clone)]
pub struct EncryptionConfig {
    entries: Vec<Entry>,
}

fn decode_secret(secret: &str, at: &str) -> anyhow::Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(secret.trim())
        .with_context(|| format!("{at}.secret is not valid base64"))
}

fn keys(provider: &Value, at: &str, build: impl Fn(&[u8], &str) -> anyhow::Result<Cipher>) -> anyhow::Result<Vec<Key>> {
    let list = provider
        .get("keys")
        .and_then(Value::as_array)
        .filter(|k| !k.is_empty())
        .with_context(|| format!("{at}.keys: at least one key is required"))?;
    let mut names = BTreeSet::new();
    let mut out = Vec::new();
    for (i, k) in list.iter().enumerate() {
        let at = format!("{at}.keys[{i}]");
        let name = k.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() || name.contains(':') {
            bail!("{at}.name must be a non-empty name without ':'");
        }
        if !names.insert(name.to_owned()) {
            bail!("{at}.name {name:?} is used twice");
        }
        let secret = decode_secret(k.get("secret").and_then(Value::as_str).unwrap_or(""), &at)?;
        out.push(Key {
            name: name.to_owned(),
            cipher: build(&secret, &at)?,
        });
    }
    Ok(out)
}

impl EncryptionConfig {
    /// Parses and validates a configuration file's YAML or JSON.
    pub fn parse(text: &str) -> anyhow::Result<EncryptionConfig> {
        let doc: Value = yaml_serde::from_str(text).context("the encryption configuration is not valid YAML")?;
        let kind = doc.get("kind").and_then(Value::as_str).unwrap_or("");
        let api_version = doc.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if kind != "EncryptionConfiguration" || !api_version.starts_with("apiserver.config.k8s.io/") {
            bail!(
                "expected kind EncryptionConfiguration of apiserver.config.k8s.io/v1, found {api_version:?} {kind:?}"
            );
        }
        let mut entries = Vec::new();
        for (i, e) in doc
            .get("resources")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            let at = format!("resources[{i}]");
            let resources: Vec<String> = e
                .get("resources")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
                .unwrap_or_default();
            if resources.is_empty() {
                bail!("{at}.resources: at least one resource is required");
            }
            let mut providers = Vec::new();
            for (j, p) in e
                .get("providers")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .enumerate()
            {
                let at = format!("{at}.providers[{j}]");
                let map = p.as_object().with_context(|| format!("{at} must be an object"))?;
                if map.len() != 1 {
                    bail!("{at} must name exactly one provider (aesgcm, secretbox or identity)");
                }
                let (name, config) = map.iter().next().expect("one entry");
                let provider = match name.as_str() {
                    "aesgcm" => Provider::AesGcm(keys(config, &format!("{at}.aesgcm"), |secret, at| {
                        Ok(match secret.len() {
                            16 => Cipher::Aes128(Box::new(Aes128Gcm::new_from_slice(secret).expect("16 bytes"))),
                            32 => Cipher::Aes256(Box::new(Aes256Gcm::new_from_slice(secret).expect("32 bytes"))),
                            n => bail!("{at}.secret: an aesgcm key is 16 or 32 bytes, not {n}"),
                        })
                    })?),
                    "secretbox" => Provider::Secretbox(keys(config, &format!("{at}.secretbox"), |secret, at| {
                        if secret.len() != 32 {
                            bail!("{at}.secret: a secretbox key is 32 bytes, not {}", secret.len());
                        }
                        Ok(Cipher::Secretbox(Box::new(
                            XSalsa20Poly1305::new_from_slice(secret).expect("32 bytes"),
                        )))
                    })?),
                    "identity" => Provider::Identity,
                    other => bail!("{at}: unsupported provider {other:?} (aesgcm, secretbox, identity)"),
                };
                providers.push(provider);
            }
            if providers.is_empty() {
                bail!("{at}.providers: at least one provider is required");
            }
            entries.push(Entry { resources, providers });
        }
        if entries.is_empty() {
            bail!("the encryption configuration lists no resources");
        }
        Ok(EncryptionConfig { entries })
    }

    /// The providers of the resource a storage key belongs to: the first entry naming it, its group's `*.group`,
    /// or `*.*`, in the configuration's order.
    fn providers(&self, key: &str) -> Option<&[Provider]> {
        let resource = resource_of_key(key);
        let (plural, group) = resource.split_once('.').unwrap_or((resource.as_str(), ""));
        let group = if group == "core" { "" } else { group };
        let exact = if group.is_empty() {
            plural.to_owned()
        } else {
            format!("{plural}.{group}")
        };
        let group_wildcard = format!("*.{group}");
        self.entries
            .iter()
            .find(|e| {
                e.resources
                    .iter()
                    .any(|r| *r == exact || *r == group_wildcard || r == "*.*" || (group.is_empty() && r == "*."))
            })
            .map(|e| e.providers.as_slice())
    }

    /// The value to store under `key`.
    fn encrypt(&self, key: &str, plain: Vec<u8>) -> Result<Vec<u8>> {
        let Some(first) = self.providers(key).and_then(|p| p.first()) else {
            return Ok(plain);
        };
        let Some(k) = first.keys().first() else {
            return Ok(plain);
        };
        let mut out = format!("{PREFIX}{}:v1:{}:", first.name(), k.name).into_bytes();
        let sealed = match &k.cipher {
            Cipher::Aes128(c) => seal(c.as_ref(), &plain, key.as_bytes()),
            Cipher::Aes256(c) => seal(c.as_ref(), &plain, key.as_bytes()),
            // secretbox authenticates no additional data.
            Cipher::Secretbox(c) => seal(c.as_ref(), &plain, &[]),
        };
        out.extend(sealed.map_err(|e| StorageError::Internal(format!("encrypting {key}: {e}")))?);
        Ok(out)
    }

    /// The plaintext of a value stored under `key`.
    fn decrypt(&self, key: &str, stored: Vec<u8>) -> Result<Vec<u8>> {
        let providers = self.providers(key).unwrap_or(&[]);
        if !stored.starts_with(PREFIX.as_bytes()) {
            if providers.is_empty() || providers.iter().any(|p| matches!(p, Provider::Identity)) {
                return Ok(stored);
            }
            return Err(StorageError::Internal(format!(
                "{key}: no matching prefix found: the value is not encrypted and identity is not among its providers"
            )));
        }
        // k8s:enc:<provider>:v1:<key>:<data>
        let rest = &stored[PREFIX.len()..];
        let mut fields = rest.splitn(4, |b| *b == b':');
        let provider = fields.next().unwrap_or_default();
        let _version = fields.next();
        let name = fields.next().unwrap_or_default();
        let data = fields.next().unwrap_or_default();
        let provider = std::str::from_utf8(provider).unwrap_or("");
        let name = std::str::from_utf8(name).unwrap_or("");
        let key_of = providers
            .iter()
            .filter(|p| p.name() == provider)
            .flat_map(|p| p.keys())
            .find(|k| k.name == name)
            .ok_or_else(|| {
                StorageError::Internal(format!(
                    "{key}: no matching prefix found: the value was encrypted by {provider} key {name:?}, which the \
                     encryption configuration does not list"
                ))
            })?;
        let corrupt = || {
            StorageError::Internal(format!(
                "{key}: the value does not decrypt with {provider} key {name:?}"
            ))
        };
        let opened = match &key_of.cipher {
            Cipher::Aes128(c) => unseal(c.as_ref(), data, key.as_bytes()),
            Cipher::Aes256(c) => unseal(c.as_ref(), data, key.as_bytes()),
            Cipher::Secretbox(c) => unseal(c.as_ref(), data, &[]),
        };
        opened.ok_or_else(corrupt)
    }
}

/// A store whose values are encrypted at rest.
pub struct Encrypted {
    inner: Arc<dyn Storage>,
    config: Arc<EncryptionConfig>,
}

impl Encrypted {
    /// Encrypts `inner`'s values as `config` says.
    pub fn new(inner: Arc<dyn Storage>, config: EncryptionConfig) -> Encrypted {
        Encrypted {
            inner,
            config: Arc::new(config),
        }
    }

    fn open(&self, mut kv: KeyValue) -> Result<KeyValue> {
        kv.value = self.config.decrypt(&kv.key, std::mem::take(&mut kv.value))?;
        Ok(kv)
    }
}

impl Storage for Encrypted {
    crate::pass_through!(current_revision, compact, request_progress, request_progress_of);

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<KeyValue>>> {
        Box::pin(async move { self.inner.get(key).await?.map(|kv| self.open(kv)).transpose() })
    }

    fn list<'a>(&'a self, prefix: &'a str, options: ListOptions) -> BoxFuture<'a, Result<ListResult>> {
        Box::pin(async move {
            let mut list = self.inner.list(prefix, options).await?;
            list.items = list.items.into_iter().map(|kv| self.open(kv)).collect::<Result<_>>()?;
            Ok(list)
        })
    }

    fn create<'a>(&'a self, key: &'a str, value: Vec<u8>) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            let sealed = self.config.encrypt(key, value.clone())?;
            let mut kv = self.inner.create(key, sealed).await?;
            kv.value = value;
            Ok(kv)
        })
    }

    fn update<'a>(&'a self, key: &'a str, value: Vec<u8>, expected: Revision) -> BoxFuture<'a, Result<KeyValue>> {
        Box::pin(async move {
            let sealed = self.config.encrypt(key, value.clone())?;
            let mut kv = self.inner.update(key, sealed, expected).await?;
            kv.value = value;
            Ok(kv)
        })
    }

    fn delete<'a>(&'a self, key: &'a str, expected: Option<Revision>) -> BoxFuture<'a, Result<(KeyValue, Revision)>> {
        Box::pin(async move {
            let (kv, revision) = self.inner.delete(key, expected).await?;
            Ok((self.open(kv)?, revision))
        })
    }

    fn watch<'a>(&'a self, prefix: &'a str, after: Revision) -> BoxFuture<'a, Result<WatchStream>> {
        Box::pin(async move {
            let upstream = self.inner.watch(prefix, after).await?;
            let config = self.config.clone();
            Ok(super::map_watch(upstream, move |mut kv| {
                kv.value = config.decrypt(&kv.key, std::mem::take(&mut kv.value))?;
                Ok(kv)
            }))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(providers: &str) -> EncryptionConfig {
        EncryptionConfig::parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: \
             [flunders.wardle.example.com, namespaces]\n  providers:\n{providers}"
        ))
        .unwrap()
    }

    const KEY1: &str =
        "    - aesgcm:\n        keys:\n        - {name: key1, secret: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=}\n";
    const KEY2: &str = "    - secretbox:\n        keys:\n        - {name: key2, secret: ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=}\n";
    const FLUNDER: &str = "/registry/wardle.example.com/flunders/default/a";

    #[test]
    fn values_are_stored_with_kubes_prefix_and_read_back() {
        let c = config(KEY1);
        let sealed = c.encrypt(FLUNDER, b"{\"secret\":\"plaintext\"}".to_vec()).unwrap();
        assert!(sealed.starts_with(b"k8s:enc:aesgcm:v1:key1:"));
        assert!(!sealed.windows(9).any(|w| w == b"plaintext"));
        assert_eq!(
            c.decrypt(FLUNDER, sealed.clone()).unwrap(),
            b"{\"secret\":\"plaintext\"}"
        );
        // The storage key is authenticated: the value does not move to another key.
        assert!(c
            .decrypt("/registry/wardle.example.com/flunders/default/b", sealed)
            .is_err());
        // Other resources are not encrypted.
        let fischer = "/registry/wardle.example.com/fischers/f";
        assert_eq!(c.encrypt(fischer, b"{}".to_vec()).unwrap(), b"{}");
        // Core namespaces are named without a group.
        let ns = c.encrypt("/registry/core/namespaces/a", b"{}".to_vec()).unwrap();
        assert!(ns.starts_with(b"k8s:enc:aesgcm:v1:key1:"));
    }

    #[test]
    fn keys_rotate_and_unknown_or_corrupt_values_are_errors() {
        let old = config(KEY1);
        let sealed_old = old.encrypt(FLUNDER, b"{\"v\":1}".to_vec()).unwrap();
        let rotated = config(&format!("{KEY2}{KEY1}"));
        let sealed_new = rotated.encrypt(FLUNDER, b"{\"v\":2}".to_vec()).unwrap();
        assert!(sealed_new.starts_with(b"k8s:enc:secretbox:v1:key2:"));
        assert_eq!(rotated.decrypt(FLUNDER, sealed_old.clone()).unwrap(), b"{\"v\":1}");
        assert_eq!(rotated.decrypt(FLUNDER, sealed_new.clone()).unwrap(), b"{\"v\":2}");
        let err = old.decrypt(FLUNDER, sealed_new).unwrap_err();
        assert!(err.to_string().contains("no matching prefix found"), "{err}");
        let mut corrupt = sealed_old;
        let last = corrupt.len() - 1;
        corrupt[last] ^= 1;
        assert!(old.decrypt(FLUNDER, corrupt).is_err());
        // Plaintext is read only when identity is listed.
        assert!(old.decrypt(FLUNDER, b"{}".to_vec()).is_err());
        let migrating = config(&format!("{KEY1}    - identity: {{}}\n"));
        assert_eq!(migrating.decrypt(FLUNDER, b"{}".to_vec()).unwrap(), b"{}");
    }

    #[test]
    fn bad_configurations_name_the_entry() {
        let bad = |providers: &str| match EncryptionConfig::parse(&format!(
            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: \
             [flunders.wardle.example.com]\n  providers:\n{providers}"
        )) {
            Ok(_) => panic!("accepted {providers}"),
            Err(e) => format!("{e:#}"),
        };
        assert!(
            bad("    - aesgcm:\n        keys:\n        - {name: k, secret: c2hvcnQ=}\n")
                .contains("resources[0].providers[0].aesgcm.keys[0].secret: an aesgcm key is 16 or 32 bytes, not 5")
        );
        assert!(bad("    - aesgcm:\n        keys:\n        - {name: k, secret: '!!'}\n").contains("not valid base64"));
        assert!(bad("    - kms: {}\n").contains("unsupported provider \"kms\""));
        assert!(bad("    - aesgcm: {keys: []}\n").contains("at least one key"));
    }
}
