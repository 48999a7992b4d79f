//! `wasm-apiserver snapshot save|status|restore`: snapshots of the embedded store of a `--data-dir`
//! (storage's [`snapshot`](storage::embedded::snapshot) format: one revision, its digest at the end).
//!
//! `save` reads a data directory no server is using (the store allows one process); `restore` makes a new data
//! directory of a snapshot, which a server then serves from the snapshot's revision; `status` prints what a file
//! holds, once its digest is checked.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use clap::Subcommand;
use storage::embedded::snapshot::{self, SnapshotStatus};
use storage::embedded::EmbeddedStorage;

/// The commands of `wasm-apiserver snapshot`.
#[derive(Subcommand, Debug)]
pub enum SnapshotCommand {
    /// Write a snapshot of the embedded store of a data directory no server is using.
    Save {
        /// The file to write (written whole or not at all).
        file: PathBuf,
        /// The server's `--data-dir`.
        #[arg(long, value_name = "DIR")]
        data_dir: PathBuf,
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
    pub fn run(&self) -> anyhow::Result<()> {
        let status = match self {
            SnapshotCommand::Save { file, data_dir } => save(file, data_dir)?,
            SnapshotCommand::Status { file } => {
                snapshot::status(file).with_context(|| format!("reading {}", file.display()))?
            }
            SnapshotCommand::Restore { file, data_dir } => snapshot::restore(file, &data_dir.join("store"))
                .with_context(|| format!("restoring {} into {}", file.display(), data_dir.display()))?,
        };
        print!("{}", describe(&status));
        Ok(())
    }
}

/// Writes a snapshot of the store of `data_dir` to `file`, through a temporary file renamed into place.
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
    let partial = file.with_extension(format!("partial.{}", std::process::id()));
    let written = std::fs::File::create(&partial)
        .map_err(anyhow::Error::from)
        .and_then(|out| {
            let status = store.snapshot(std::io::BufWriter::new(out))?;
            Ok(status)
        })
        .and_then(|status| {
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
