//! `wasm-apiserver kubeconfig`: a kubeconfig with a client certificate signed by the server's CA, which kubectl
//! uses as it is.

use std::path::PathBuf;

use base64::Engine as _;
use clap::Args;

use server::pki::Pki;

/// Options of `wasm-apiserver kubeconfig`.
#[derive(Args, Debug, Clone)]
pub struct KubeconfigOptions {
    /// The server's data directory (its CA is under `<data-dir>/pki/`; made if missing).
    #[arg(long, value_name = "DIR")]
    pub data_dir: PathBuf,
    /// The user name (the certificate's common name).
    #[arg(long)]
    pub user: String,
    /// A group of the user (the certificate's organizations); repeat for several.
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// The server's URL.
    #[arg(long, default_value = "https://127.0.0.1:6443")]
    pub server: String,
    /// A tenant: the kubeconfig's server is `<server>/tenants/<tenant>`, so kubectl works inside that tenant.
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
    /// The namespace of the context.
    #[arg(long, default_value = "default")]
    pub namespace: String,
    /// Where to write it (standard output without it).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

impl KubeconfigOptions {
    /// The kubeconfig's text.
    pub fn render(&self) -> anyhow::Result<String> {
        if self.user.is_empty() {
            anyhow::bail!("--user must not be empty");
        }
        let server = match &self.tenant {
            None => self.server.clone(),
            Some(tenant) => {
                let problems = apimachinery::validation::NameRule::Dns1123Label.validate(tenant, false);
                if !problems.is_empty() {
                    anyhow::bail!("--tenant {tenant:?} is not a tenant name: {}", problems.join("; "));
                }
                format!("{}/tenants/{tenant}", self.server.trim_end_matches('/'))
            }
        };
        let name = match &self.tenant {
            None => "wasm-apiserver".to_owned(),
            Some(tenant) => format!("wasm-apiserver-{tenant}"),
        };
        let pki = Pki::in_data_dir(&self.data_dir);
        pki.ensure()?;
        let ca = pki.ca_pem()?;
        let client = pki.client_certificate(&self.user, &self.groups)?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s.as_bytes());
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {
                "server": server,
                "certificate-authority-data": b64(&ca),
            }}],
            "users": [{"name": self.user, "user": {
                "client-certificate-data": b64(&client.cert_pem),
                "client-key-data": b64(&client.key_pem),
            }}],
            "contexts": [{"name": name, "context": {
                "cluster": name,
                "user": self.user,
                "namespace": self.namespace,
            }}],
            "current-context": name,
        });
        Ok(yaml_serde::to_string(&config)?)
    }

    /// Writes the kubeconfig to `-o` (readable by its owner only: it holds a private key) or standard output.
    pub fn run(&self) -> anyhow::Result<()> {
        let text = self.render()?;
        match &self.output {
            Some(path) => server::pki::write_private(path, &text),
            None => {
                print!("{text}");
                Ok(())
            }
        }
    }
}
