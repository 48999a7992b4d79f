//! `wasm-apiserver snapshot save|status|restore`: snapshots of the embedded store of a `--data-dir`
//! (storage's [`snapshot`](storage::embedded::snapshot) format: one revision, its digest at the end).
//!
//! `save` asks a running server for one (`GET /snapshot`, with a kubeconfig's credentials) or reads the data
//! directory of a stopped one (the store allows one process); `restore` makes a new data directory of a snapshot,
//! which a server then serves from the snapshot's revision; `status` prints what a file holds, once its digest is
//! checked.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use clap::Subcommand;
use storage::embedded::snapshot::{self, SnapshotStatus};
use storage::embedded::EmbeddedStorage;

/// The commands of `wasm-apiserver snapshot`.
#[derive(Subcommand, Debug)]
pub enum SnapshotCommand {
    /// Write a snapshot of the embedded store: from a running server (`--kubeconfig`, a cluster-admin's), or from
    /// the data directory of a stopped one (`--data-dir`).
    Save {
        /// The file to write (written whole or not at all).
        file: PathBuf,
        /// A stopped server's `--data-dir`.
        #[arg(
            long,
            value_name = "DIR",
            required_unless_present = "kubeconfig",
            conflicts_with = "kubeconfig"
        )]
        data_dir: Option<PathBuf>,
        /// A kubeconfig whose current context reaches a running server's root as a cluster-admin: the snapshot
        /// is its `GET /snapshot`.
        #[arg(long, value_name = "FILE")]
        kubeconfig: Option<PathBuf>,
    },
    /// Print a snapshot's revision, compaction revision, keys, versions, size and hash, once its digest is checked.
    Status {
        /// The snapshot file.
        file: PathBuf,
    },
    /// Make a new data directory holding the store of a snapshot (a server started on it serves the snapshot's
    /// objects from its revision on).
    Restore {
        /// The snapshot file.
        file: PathBuf,
        /// The new `--data-dir`: it must hold no store.
        #[arg(long, value_name = "DIR")]
        data_dir: PathBuf,
    },
}

impl SnapshotCommand {
    /// Runs the command, printing what the snapshot holds.
    pub async fn run(self) -> anyhow::Result<()> {
        let status = match self {
            SnapshotCommand::Save {
                file,
                kubeconfig: Some(kubeconfig),
                ..
            } => {
                let bytes = fetch(&kubeconfig).await?;
                tokio::task::spawn_blocking(move || write_fetched(&file, &bytes)).await??
            }
            SnapshotCommand::Save {
                file,
                data_dir: Some(data_dir),
                ..
            } => tokio::task::spawn_blocking(move || save(&file, &data_dir)).await??,
            SnapshotCommand::Save { .. } => bail!("snapshot save needs --kubeconfig or --data-dir"),
            other => tokio::task::spawn_blocking(move || other.run_local()).await??,
        };
        print!("{}", describe(&status));
        Ok(())
    }

    /// The commands that read and write files only.
    fn run_local(&self) -> anyhow::Result<SnapshotStatus> {
        Ok(match self {
            SnapshotCommand::Save { .. } => unreachable!("save is run by run()"),
            SnapshotCommand::Status { file } => {
                snapshot::status(file).with_context(|| format!("reading {}", file.display()))?
            }
            SnapshotCommand::Restore { file, data_dir } => snapshot::restore(file, &data_dir.join("store"))
                .with_context(|| format!("restoring {} into {}", file.display(), data_dir.display()))?,
        })
    }
}

/// `GET /snapshot` from the server a kubeconfig's current context names, with its credentials.
async fn fetch(kubeconfig: &Path) -> anyhow::Result<Vec<u8>> {
    use base64::Engine as _;
    let text = std::fs::read_to_string(kubeconfig).with_context(|| format!("reading {}", kubeconfig.display()))?;
    let config: serde_json::Value =
        yaml_serde::from_str(&text).with_context(|| format!("{} is not a kubeconfig", kubeconfig.display()))?;
    let named = |list: &str, name: &str, field: &str| -> serde_json::Value {
        config[list]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["name"] == name))
            .map(|i| i[field].clone())
            .unwrap_or_default()
    };
    let context = named(
        "contexts",
        config["current-context"].as_str().unwrap_or_default(),
        "context",
    );
    let cluster = named("clusters", context["cluster"].as_str().unwrap_or_default(), "cluster");
    let user = named("users", context["user"].as_str().unwrap_or_default(), "user");
    let server = cluster["server"]
        .as_str()
        .with_context(|| {
            format!(
                "{}: its current context names no cluster with a server",
                kubeconfig.display()
            )
        })?
        .trim_end_matches('/');
    let data = |value: &serde_json::Value, field: &str| -> anyhow::Result<Option<Vec<u8>>> {
        value[field]
            .as_str()
            .map(|b64| base64::engine::general_purpose::STANDARD.decode(b64.trim()))
            .transpose()
            .with_context(|| format!("{}: {field} is not base64", kubeconfig.display()))
    };
    let mut client = reqwest::Client::builder().use_rustls_tls();
    if let Some(ca) = data(&cluster, "certificate-authority-data")? {
        client = client
            .tls_built_in_root_certs(false)
            .add_root_certificate(reqwest::Certificate::from_pem(&ca).context("the kubeconfig's CA")?);
    }
    if let (Some(mut cert), Some(key)) = (data(&user, "client-certificate-data")?, data(&user, "client-key-data")?) {
        cert.extend_from_slice(&key);
        client = client.identity(reqwest::Identity::from_pem(&cert).context("the kubeconfig's client certificate")?);
    }
    let mut request = client.build()?.get(format!("{server}/snapshot"));
    if let Some(token) = user["token"].as_str() {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.with_context(|| format!("GET {server}/snapshot"))?;
    let status = response.status();
    let body = response
        .bytes()
        .await
        .with_context(|| format!("reading {server}/snapshot"))?;
    if !status.is_success() {
        let message = serde_json::from_slice::<serde_json::Value>(&body)
            .ok()
            .and_then(|s| s["message"].as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).into_owned());
        bail!("GET {server}/snapshot answered {status}: {message}");
    }
    Ok(body.to_vec())
}

/// Writes a fetched snapshot to `file` (whole or not at all) once its digest is checked.
fn write_fetched(file: &Path, bytes: &[u8]) -> anyhow::Result<SnapshotStatus> {
    write_whole(file, |partial| {
        std::fs::write(partial, bytes)?;
        Ok(snapshot::status(partial)?)
    })
}

/// Writes a snapshot of the store of `data_dir` to `file` (whole or not at all).
fn save(file: &Path, data_dir: &Path) -> anyhow::Result<SnapshotStatus> {
    let dir = data_dir.join("store");
    if !dir.join("store.redb").exists() {
        bail!(
            "{} holds no embedded store (is it a server's --data-dir?)",
            data_dir.display()
        );
    }
    let store = EmbeddedStorage::open(&dir).with_context(|| {
        format!(
            "opening the store of {} (a server using it must be stopped first)",
            data_dir.display()
        )
    })?;
    write_whole(file, |partial| {
        let out = std::fs::File::create(partial)?;
        Ok(store.snapshot(std::io::BufWriter::new(out))?)
    })
}

/// Writes `file` through `write` into a temporary file beside it, renamed into place only when `write` succeeded
/// (and removed otherwise): the file is written whole or not at all.
fn write_whole(
    file: &Path,
    write: impl FnOnce(&Path) -> anyhow::Result<SnapshotStatus>,
) -> anyhow::Result<SnapshotStatus> {
    let partial = file.with_extension(format!("partial.{}", std::process::id()));
    let written = write(&partial).and_then(|status| {
        std::fs::rename(&partial, file)?;
        Ok(status)
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written.with_context(|| format!("writing {}", file.display()))
}

/// What a snapshot holds, a line each.
fn describe(status: &SnapshotStatus) -> String {
    format!(
        "hash      {}\nrevision  {}\ncompacted {}\nkeys      {}\nversions  {}\nsize      {} bytes\n",
        status.hash, status.revision, status.compacted, status.keys, status.versions, status.bytes
    )
}
