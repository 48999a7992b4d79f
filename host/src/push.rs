//! `wasm-apiserver plugin push FILE REF`: pushes a plugin to an OCI registry in the layout `wkg oci push` and
//! `oras push` write for WebAssembly (config `application/vnd.wasm.config.v0+json`, one `application/wasm` layer),
//! with the same code the server pulls with ([`oci`]).

use std::io::Read as _;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Args;

/// Options of `wasm-apiserver plugin push`.
#[derive(Args, Debug, Clone)]
pub struct PushOptions {
    /// The component (`.wasm`).
    pub file: PathBuf,
    /// Where to push it: `host[:port]/repository:tag`.
    pub reference: String,
    /// The user name for the registry (basic authentication); the password is read from standard input.
    #[arg(long, requires = "password_stdin")]
    pub username: Option<String>,
    /// Read the password (with `--username`) from standard input.
    #[arg(long, requires = "username")]
    pub password_stdin: bool,
    /// Read a bearer token for the registry from standard input.
    #[arg(long, conflicts_with = "username")]
    pub token_stdin: bool,
    /// A CA certificate (PEM) to trust for the registry, besides the public roots.
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,
}

impl PushOptions {
    /// Pushes the file and prints the reference by digest.
    pub async fn run(self) -> anyhow::Result<()> {
        let component = std::fs::read(&self.file).with_context(|| format!("reading {}", self.file.display()))?;
        let stdin = |what: &str| -> anyhow::Result<String> {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .with_context(|| format!("reading the {what} from standard input"))?;
            Ok(text.trim_end_matches(['\r', '\n']).to_owned())
        };
        let credentials = match (&self.username, self.token_stdin) {
            (Some(username), _) => oci::Credentials::Basic {
                username: username.clone(),
                password: stdin("password")?,
            },
            (None, true) => oci::Credentials::Bearer(stdin("token")?),
            (None, false) => oci::Credentials::Anonymous,
        };
        let ca_pem = match &self.ca_file {
            Some(path) => vec![std::fs::read(path).with_context(|| format!("reading {}", path.display()))?],
            None => Vec::new(),
        };
        let client = oci::Client::new(oci::Options {
            ca_pem,
            ..oci::Options::default()
        });
        let digest = client.push(&self.reference, &component, &credentials).await?;
        let parsed = oci::parse_reference(&self.reference)?;
        println!("{}/{}@{digest}", parsed.registry(), parsed.repository());
        Ok(())
    }
}
