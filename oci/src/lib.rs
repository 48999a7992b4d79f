//! Plugins as OCI artifacts: a WebAssembly component pulled from and pushed to a registry over the OCI distribution
//! API, in the layout `wkg oci push` and `oras push` write for WebAssembly: an OCI image manifest whose config has the
//! media type [`CONFIG_MEDIA_TYPE`] and whose one layer, [`LAYER_MEDIA_TYPE`], is the component.
//!
//! A pull checks what it is given, and says what is wrong in a [`PullError`] whose [`reason`](PullError::reason) a
//! status condition can carry: a registry that is not allowed, one that cannot be reached or refuses the credentials,
//! a reference that names nothing, a manifest that is not a WebAssembly component's, a digest that does not match
//! (of the manifest, for a reference by digest, and of the layer, always), a component over the size allowed. A tag
//! is resolved once: the [`Artifact`] carries the manifest's digest, by which it can be pulled again unchanged.
//!
//! The protocol is `oci-client`'s (the ORAS project's Rust client); this crate adds the WebAssembly layout, the
//! checks, and errors a user can act on.

pub mod signature;

use std::str::FromStr as _;
use std::time::Duration;

use oci_client::client::{Certificate, CertificateEncoding, ClientConfig, ClientProtocol, Config, ImageLayer};
use oci_client::errors::OciDistributionError;
use oci_client::manifest::{OciImageManifest, OCI_IMAGE_MEDIA_TYPE};
use oci_client::secrets::RegistryAuth;
use oci_client::Reference;
use sha2::{Digest as _, Sha256};

/// The media type of the manifest.
pub const MANIFEST_MEDIA_TYPE: &str = OCI_IMAGE_MEDIA_TYPE;
/// The media type of a WebAssembly artifact's config.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.wasm.config.v0+json";
/// The media type of the layer holding the component.
pub const LAYER_MEDIA_TYPE: &str = "application/wasm";

/// How a registry is accessed.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credentials {
    /// Without credentials.
    #[default]
    Anonymous,
    /// HTTP basic authentication (or the registry's token service with these credentials).
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: String,
    },
    /// A bearer token.
    Bearer(String),
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Secrets are never printed.
        match self {
            Credentials::Anonymous => f.write_str("Anonymous"),
            Credentials::Basic { username, .. } => write!(f, "Basic({username:?}, <password>)"),
            Credentials::Bearer(_) => f.write_str("Bearer(<token>)"),
        }
    }
}

impl Credentials {
    fn auth(&self) -> RegistryAuth {
        match self {
            Credentials::Anonymous => RegistryAuth::Anonymous,
            Credentials::Basic { username, password } => RegistryAuth::Basic(username.clone(), password.clone()),
            Credentials::Bearer(token) => RegistryAuth::Bearer(token.clone()),
        }
    }
}

/// How a [`Client`] reaches registries.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The registries (`host` or `host:port`, as references name them) that may be used; `None`: any.
    pub allowed_registries: Option<Vec<String>>,
    /// CA certificates (PEM) to trust besides the public roots, for registries with a private CA.
    pub ca_pem: Vec<Vec<u8>>,
    /// How long connecting and each read may take (`None`: 10 seconds).
    pub timeout: Option<Duration>,
}

/// A component pulled from a registry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Artifact {
    /// The reference by digest: `host[:port]/repository@sha256:...`.
    pub reference: String,
    /// The manifest's digest (`sha256:...`), which a tag was resolved to.
    pub digest: String,
    /// The layer's digest: the component's content hash.
    pub layer_digest: String,
    /// The component.
    pub component: Vec<u8>,
}

/// Why a pull or push failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PullError {
    /// The reference cannot be parsed.
    #[error("invalid reference {reference:?}: {message}")]
    InvalidReference {
        /// The reference.
        reference: String,
        /// What is wrong.
        message: String,
    },
    /// The registry is not one of those allowed.
    #[error("registry {registry:?} is not allowed (allowed: {allowed:?})")]
    NotAllowed {
        /// The reference's registry.
        registry: String,
        /// The registries allowed.
        allowed: Vec<String>,
    },
    /// The registry cannot be reached (connection, TLS, timeout).
    #[error("registry {registry:?} cannot be reached: {message}")]
    Unreachable {
        /// The registry.
        registry: String,
        /// Why, with the underlying cause.
        message: String,
    },
    /// The registry refused the credentials.
    #[error("registry {registry:?} refused the credentials: {message}")]
    Unauthorized {
        /// The registry.
        registry: String,
        /// What it said.
        message: String,
    },
    /// The reference names no manifest.
    #[error("{reference} was not found: {message}")]
    NotFound {
        /// The reference.
        reference: String,
        /// What the registry said.
        message: String,
    },
    /// The artifact is not a WebAssembly component in the expected layout.
    #[error("{reference} is not a WebAssembly component artifact: {message}")]
    NotWasm {
        /// The reference.
        reference: String,
        /// What was found instead.
        message: String,
    },
    /// Content does not have the digest it was named by.
    #[error("the {what} of {reference} has digest {actual}, not {expected}")]
    DigestMismatch {
        /// The reference.
        reference: String,
        /// `manifest` or `layer`.
        what: &'static str,
        /// The digest it was named by.
        expected: String,
        /// The digest of what was received.
        actual: String,
    },
    /// The component is larger than allowed.
    #[error("the component of {reference} is {size} bytes, over the {max} allowed")]
    TooLarge {
        /// The reference.
        reference: String,
        /// Its size, as the manifest declares it.
        size: u64,
        /// The most allowed.
        max: u64,
    },
    /// The registry answered with another error.
    #[error("registry {registry:?}: {message}")]
    Registry {
        /// The registry.
        registry: String,
        /// What happened.
        message: String,
    },
}

impl PullError {
    /// The error as a condition's reason (CamelCase, as Kubernetes' conditions have them).
    pub fn reason(&self) -> &'static str {
        match self {
            PullError::InvalidReference { .. } => "InvalidReference",
            PullError::NotAllowed { .. } => "RegistryNotAllowed",
            PullError::Unreachable { .. } => "RegistryUnreachable",
            PullError::Unauthorized { .. } => "Unauthorized",
            PullError::NotFound { .. } => "NotFound",
            PullError::NotWasm { .. } => "NotWasm",
            PullError::DigestMismatch { .. } => "DigestMismatch",
            PullError::TooLarge { .. } => "TooLarge",
            PullError::Registry { .. } => "RegistryError",
        }
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Parses a reference (`host[:port]/repository:tag` or `...@sha256:...`).
pub fn parse_reference(reference: &str) -> Result<Reference, PullError> {
    let invalid = |message: String| PullError::InvalidReference {
        reference: reference.to_owned(),
        message,
    };
    let parsed = Reference::from_str(reference).map_err(|e| invalid(e.to_string()))?;
    // A reference without a registry would mean Docker Hub: plugins name their registry.
    let first = reference.split('/').next().unwrap_or_default();
    if !reference.contains('/') || !(first.contains('.') || first.contains(':') || first == "localhost") {
        return Err(invalid(
            "name the registry: host[:port]/repository:tag or host[:port]/repository@sha256:...".into(),
        ));
    }
    Ok(parsed)
}

/// Checks a manifest for the WebAssembly layout and returns its one layer.
pub fn wasm_layer<'a>(
    reference: &str,
    manifest: &'a OciImageManifest,
) -> Result<&'a oci_client::manifest::OciDescriptor, PullError> {
    let not_wasm = |message: String| PullError::NotWasm {
        reference: reference.to_owned(),
        message,
    };
    if manifest.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(not_wasm(format!(
            "its config has media type {:?}, not {CONFIG_MEDIA_TYPE:?}",
            manifest.config.media_type
        )));
    }
    match manifest.layers.as_slice() {
        [layer] if layer.media_type == LAYER_MEDIA_TYPE => Ok(layer),
        [layer] => Err(not_wasm(format!(
            "its layer has media type {:?}, not {LAYER_MEDIA_TYPE:?}",
            layer.media_type
        ))),
        layers => Err(not_wasm(format!(
            "it has {} layers, not one {LAYER_MEDIA_TYPE:?} layer",
            layers.len()
        ))),
    }
}

/// Whether `bytes` begin as a WebAssembly component does (the magic and the component layer's version).
pub fn is_component(bytes: &[u8]) -> bool {
    bytes.starts_with(b"\0asm") && bytes.get(4..8) == Some(&[0x0d, 0x00, 0x01, 0x00])
}

/// An OCI distribution client for WebAssembly components.
///
/// Each pull and push uses a protocol client of its own: `oci-client` keeps the first credentials it was given for a
/// registry and uses them for every later request to it, so a shared one would pull one tenant's plugin with another
/// tenant's credentials.
pub struct Client {
    options: Options,
}

impl Client {
    /// A client reaching registries over HTTPS as `options` say.
    pub fn new(options: Options) -> Client {
        Client { options }
    }

    /// A protocol client for one pull or push.
    fn protocol(&self) -> oci_client::Client {
        let options = &self.options;
        let timeout = options.timeout.unwrap_or(Duration::from_secs(10));
        let config = ClientConfig {
            protocol: ClientProtocol::Https,
            extra_root_certificates: options
                .ca_pem
                .iter()
                .map(|pem| Certificate {
                    encoding: CertificateEncoding::Pem,
                    data: pem.clone(),
                })
                .collect(),
            connect_timeout: Some(timeout),
            read_timeout: Some(timeout),
            // An image index is not a plugin: it is refused, not resolved to a platform.
            platform_resolver: None,
            ..ClientConfig::default()
        };
        oci_client::Client::new(config)
    }

    fn allowed(&self, reference: &Reference) -> Result<(), PullError> {
        let registry = reference.registry();
        match &self.options.allowed_registries {
            Some(allowed) if !allowed.iter().any(|a| a == registry) => Err(PullError::NotAllowed {
                registry: registry.to_owned(),
                allowed: allowed.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Resolves `reference` to its manifest's digest, checking that the manifest is a WebAssembly component's (and,
    /// for a reference by digest, that it has that digest), without downloading the component.
    pub async fn resolve(&self, reference: &str, credentials: &Credentials) -> Result<String, PullError> {
        let parsed = parse_reference(reference)?;
        self.allowed(&parsed)?;
        let (digest, manifest) = manifest(&self.protocol(), &parsed, reference, &credentials.auth()).await?;
        wasm_layer(reference, &manifest)?;
        Ok(digest)
    }

    /// Pulls the component `reference` names, checking its layout and digests, and that it is at most `max_bytes`.
    pub async fn pull(
        &self,
        reference: &str,
        credentials: &Credentials,
        max_bytes: u64,
    ) -> Result<Artifact, PullError> {
        let parsed = parse_reference(reference)?;
        self.allowed(&parsed)?;
        let protocol = self.protocol();
        let (digest, manifest) = manifest(&protocol, &parsed, reference, &credentials.auth()).await?;
        let layer = wasm_layer(reference, &manifest)?;
        let size = u64::try_from(layer.size).unwrap_or(0);
        if size > max_bytes {
            return Err(PullError::TooLarge {
                reference: reference.to_owned(),
                size,
                max: max_bytes,
            });
        }
        let mut component = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        protocol
            .pull_blob(&parsed, layer, &mut component)
            .await
            .map_err(|e| classify(&parsed, e))?;
        let layer_digest = sha256_digest(&component);
        if layer_digest != layer.digest {
            return Err(PullError::DigestMismatch {
                reference: reference.to_owned(),
                what: "layer",
                expected: layer.digest.clone(),
                actual: layer_digest,
            });
        }
        if !is_component(&component) {
            return Err(PullError::NotWasm {
                reference: reference.to_owned(),
                message: "its layer is not a WebAssembly component (it does not begin with the component header)"
                    .into(),
            });
        }
        Ok(Artifact {
            reference: format!("{}/{}@{digest}", parsed.registry(), parsed.repository()),
            digest,
            layer_digest,
            component,
        })
    }

    /// The cosign signatures of the artifact whose manifest digest is `digest`, in the repository of `reference`
    /// (none when it has no `sha256-<hex>.sig` tag); each payload's digest is checked against its layer's.
    pub async fn signatures(
        &self,
        reference: &str,
        digest: &str,
        credentials: &Credentials,
    ) -> Result<Vec<signature::Signature>, PullError> {
        let parsed = parse_reference(reference)?;
        self.allowed(&parsed)?;
        let tag = Reference::with_tag(
            parsed.registry().to_owned(),
            parsed.repository().to_owned(),
            signature::signature_tag(digest),
        );
        let auth = credentials.auth();
        let protocol = self.protocol();
        let accepted = [
            MANIFEST_MEDIA_TYPE,
            "application/vnd.docker.distribution.manifest.v2+json",
        ];
        let raw = match protocol.pull_manifest_raw(&tag, &auth, &accepted).await {
            Ok((raw, _)) => raw,
            Err(e) => {
                return match classify(&tag, e) {
                    PullError::NotFound { .. } => Ok(Vec::new()),
                    other => Err(other),
                }
            }
        };
        let manifest: OciImageManifest = serde_json::from_slice(&raw).map_err(|e| PullError::Registry {
            registry: parsed.registry().to_owned(),
            message: format!(
                "the signature manifest {} is not an OCI image manifest: {e}",
                tag.whole()
            ),
        })?;
        let mut found = Vec::new();
        for layer in &manifest.layers {
            let annotation = layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(signature::SIGNATURE_ANNOTATION));
            let (true, Some(sig)) = (layer.media_type == signature::SIMPLE_SIGNING_MEDIA_TYPE, annotation) else {
                continue;
            };
            if u64::try_from(layer.size).unwrap_or(u64::MAX) > signature::MAX_PAYLOAD_BYTES {
                continue;
            }
            let mut payload = Vec::new();
            protocol
                .pull_blob(&tag, layer, &mut payload)
                .await
                .map_err(|e| classify(&tag, e))?;
            if sha256_digest(&payload) != layer.digest {
                continue;
            }
            found.push(signature::Signature {
                payload,
                signature: sig.clone(),
            });
        }
        Ok(found)
    }

    /// Pushes `component` to `reference` (a tag) in the WebAssembly layout; returns the manifest's digest.
    pub async fn push(
        &self,
        reference: &str,
        component: &[u8],
        credentials: &Credentials,
    ) -> Result<String, PullError> {
        let parsed = parse_reference(reference)?;
        self.allowed(&parsed)?;
        if !is_component(component) {
            return Err(PullError::NotWasm {
                reference: reference.to_owned(),
                message: "the file is not a WebAssembly component (it does not begin with the component header)".into(),
            });
        }
        let layer = ImageLayer::new(component.to_vec(), LAYER_MEDIA_TYPE.to_owned(), None);
        // The config wkg writes for a component: its architecture, OS and layers.
        let config = serde_json::json!({
            "architecture": "wasm",
            "os": "wasip2",
            "layerDigests": [sha256_digest(component)],
        });
        let config = Config {
            data: config.to_string().into_bytes(),
            media_type: CONFIG_MEDIA_TYPE.to_owned(),
            annotations: None,
        };
        let mut manifest = OciImageManifest::build(std::slice::from_ref(&layer), &config, None);
        manifest.media_type = Some(MANIFEST_MEDIA_TYPE.to_owned());
        let auth = credentials.auth();
        let protocol = self.protocol();
        protocol
            .push(&parsed, &[layer], config, &auth, Some(manifest))
            .await
            .map_err(|e| classify(&parsed, e))?;
        protocol
            .fetch_manifest_digest(&parsed, &auth)
            .await
            .map_err(|e| classify(&parsed, e))
    }
}

/// The manifest `parsed` (`reference` as given) names, and its digest: checked against the reference's digest, when
/// it has one, and parsed as an OCI image manifest.
async fn manifest(
    protocol: &oci_client::Client,
    parsed: &Reference,
    reference: &str,
    auth: &RegistryAuth,
) -> Result<(String, OciImageManifest), PullError> {
    let (raw, _) = protocol
        .pull_manifest_raw(parsed, auth, &[MANIFEST_MEDIA_TYPE])
        .await
        .map_err(|e| classify(parsed, e))?;
    let digest = sha256_digest(&raw);
    if let Some(expected) = parsed.digest() {
        if expected != digest {
            return Err(PullError::DigestMismatch {
                reference: reference.to_owned(),
                what: "manifest",
                expected: expected.to_owned(),
                actual: digest,
            });
        }
    }
    let manifest: OciImageManifest = serde_json::from_slice(&raw).map_err(|e| PullError::NotWasm {
        reference: reference.to_owned(),
        message: format!("its manifest is not an OCI image manifest: {e}"),
    })?;
    Ok((digest, manifest))
}

/// An `oci-client` error as what it means for the user.
fn classify(reference: &Reference, e: OciDistributionError) -> PullError {
    let registry = reference.registry().to_owned();
    let whole = reference.whole();
    match e {
        OciDistributionError::RequestError(e) if e.is_connect() || e.is_timeout() => PullError::Unreachable {
            registry,
            message: error_chain(&e),
        },
        OciDistributionError::AuthenticationFailure(message) => PullError::Unauthorized { registry, message },
        OciDistributionError::UnauthorizedError { url } => PullError::Unauthorized {
            registry,
            message: format!("401 Unauthorized for {url}"),
        },
        OciDistributionError::ServerError { code, message, .. } if code == 401 || code == 403 => {
            PullError::Unauthorized {
                registry,
                message: format!("{code}: {message}"),
            }
        }
        OciDistributionError::ImageManifestNotFoundError(message) => PullError::NotFound {
            reference: whole,
            message,
        },
        OciDistributionError::ServerError { code: 404, message, .. } => PullError::NotFound {
            reference: whole,
            message,
        },
        OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::ManifestUnknown
                        | oci_client::errors::OciErrorCode::NameUnknown
                        | oci_client::errors::OciErrorCode::BlobUnknown
                )
            }) =>
        {
            PullError::NotFound {
                reference: whole,
                message: envelope.to_string(),
            }
        }
        OciDistributionError::RegistryError { envelope, .. }
            if envelope.errors.iter().any(|e| {
                matches!(
                    e.code,
                    oci_client::errors::OciErrorCode::Unauthorized | oci_client::errors::OciErrorCode::Denied
                )
            }) =>
        {
            PullError::Unauthorized {
                registry,
                message: envelope.to_string(),
            }
        }
        OciDistributionError::DigestError(e) => PullError::DigestMismatch {
            reference: whole,
            what: "content",
            expected: String::new(),
            actual: e.to_string(),
        },
        OciDistributionError::RequestError(e) => PullError::Registry {
            registry,
            message: error_chain(&e),
        },
        other => PullError::Registry {
            registry,
            message: other.to_string(),
        },
    }
}

/// An error with its sources, on one line (a TLS failure says why the certificate was refused).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message = format!("{message}: {text}");
        }
        source = s.source();
    }
    message
}

#[cfg(test)]
mod tests;
