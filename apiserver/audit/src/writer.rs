//! The audit log backend: events go through a bounded buffer to a writer thread, so requests never wait on the
//! disk; a full buffer drops the event and counts it (`apiserver_audit_error_total{plugin="log"}`), with a warning
//! at most every 10 s. The file rotates past `--audit-log-maxsize` MB into `<name>-<timestamp>.<ext>` backups
//! (lumberjack's naming, as kube-apiserver), keeping `--audit-log-maxbackup` of them and none older than
//! `--audit-log-maxage` days.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use component_base::metrics::{metrics, AuditLabels};

/// Where events are written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// Standard output (`--audit-log-path -`).
    Stdout,
    /// A file, rotated.
    File {
        /// The file.
        path: PathBuf,
        /// Rotate past this many bytes (0: never).
        max_bytes: u64,
        /// Keep at most this many backups (0: all).
        max_backups: usize,
        /// Remove backups older than this (none: keep).
        max_age: Option<Duration>,
    },
}

/// The sending side: cheap to call from requests.
pub struct AuditLog {
    sender: SyncSender<Vec<u8>>,
    last_warning: Mutex<Option<Instant>>,
}

fn error_count() -> prometheus_client::metrics::counter::Counter {
    metrics()
        .audit_errors
        .get_or_create(&AuditLabels { plugin: "log".into() })
        .clone()
}

impl AuditLog {
    /// Opens the target (failing now if the file cannot be written) and starts the writer thread.
    pub fn start(target: Target, buffer: usize) -> anyhow::Result<AuditLog> {
        let mut out = Output::open(target)?;
        let (sender, receiver) = sync_channel::<Vec<u8>>(buffer.max(1));
        std::thread::Builder::new()
            .name("audit-log".into())
            .spawn(move || out.run(receiver))?;
        Ok(AuditLog {
            sender,
            last_warning: Mutex::new(None),
        })
    }

    /// Queues one event (a JSON line without its newline).
    pub fn write(&self, mut line: Vec<u8>) {
        line.push(b'\n');
        metrics().audit_events.inc();
        match self.sender.try_send(line) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {
                error_count().inc();
                let mut last = self
                    .last_warning
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                if last.is_none_or(|t| t.elapsed() > Duration::from_secs(10)) {
                    *last = Some(Instant::now());
                    tracing::warn!(
                        "the audit log buffer is full: events are dropped (counted in apiserver_audit_error_total)"
                    );
                }
            }
        }
    }
}

/// The writer thread's side.
struct Output {
    target: Target,
    file: Option<File>,
    written: u64,
    /// The time in the last backup's name: names must order as rotations happened.
    last_backup: Option<chrono::DateTime<chrono::Utc>>,
}

impl Output {
    fn open(target: Target) -> anyhow::Result<Output> {
        let (file, written) = match &target {
            Target::Stdout => (None, 0),
            Target::File { path, .. } => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)?;
                }
                let file = OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| anyhow::anyhow!("opening the audit log {}: {e}", path.display()))?;
                let written = file.metadata().map(|m| m.len()).unwrap_or(0);
                (Some(file), written)
            }
        };
        Ok(Output {
            target,
            file,
            written,
            last_backup: None,
        })
    }

    fn run(&mut self, receiver: Receiver<Vec<u8>>) {
        while let Ok(line) = receiver.recv() {
            self.write(&line);
            // Flush once the burst is written.
            while let Ok(line) = receiver.try_recv() {
                self.write(&line);
            }
            let _ = match &mut self.file {
                Some(f) => f.flush(),
                None => std::io::stdout().flush(),
            };
        }
    }

    fn write(&mut self, line: &[u8]) {
        if let Target::File { max_bytes, .. } = &self.target {
            if *max_bytes > 0 && self.written > 0 && self.written + line.len() as u64 > *max_bytes {
                if let Err(e) = self.rotate() {
                    tracing::warn!(error = %e, "rotating the audit log failed");
                }
            }
        }
        let result = match &mut self.file {
            Some(f) => f.write_all(line),
            None => std::io::stdout().write_all(line),
        };
        match result {
            Ok(()) => self.written += line.len() as u64,
            Err(e) => {
                error_count().inc();
                tracing::warn!(error = %e, "writing the audit log failed");
            }
        }
    }

    fn rotate(&mut self) -> anyhow::Result<()> {
        let Target::File {
            path,
            max_backups,
            max_age,
            ..
        } = &self.target
        else {
            return Ok(());
        };
        self.file = None;
        // Names order as the rotations: one within the same millisecond as the last takes the next millisecond.
        let mut now = chrono::Utc::now();
        if let Some(last) = self.last_backup {
            now = now.max(last + chrono::Duration::milliseconds(1));
        }
        let mut backup = backup_name(path, now);
        while backup.exists() {
            now += chrono::Duration::milliseconds(1);
            backup = backup_name(path, now);
        }
        self.last_backup = Some(now);
        std::fs::rename(path, &backup)?;
        self.file = Some(OpenOptions::new().create(true).append(true).open(path)?);
        self.written = 0;
        prune(path, *max_backups, *max_age)?;
        Ok(())
    }
}

/// A log file's name without and with its extension: `audit.log` → (`audit`, `.log`).
fn stem_and_extension(path: &Path) -> (&str, String) {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("audit");
    let ext = path
        .extension()
        .and_then(|s| s.to_str())
        .map(|e| format!(".{e}"))
        .unwrap_or_default();
    (stem, ext)
}

/// `dir/audit.log` → `dir/audit-2026-11-25T02-40-00.123.log`.
fn backup_name(path: &Path, now: chrono::DateTime<chrono::Utc>) -> PathBuf {
    let (stem, ext) = stem_and_extension(path);
    let stamp = now.format("%Y-%m-%dT%H-%M-%S%.3f");
    path.with_file_name(format!("{stem}-{stamp}{ext}"))
}

/// The backups of `path`, oldest first.
pub fn backups(path: &Path) -> Vec<PathBuf> {
    let (stem, ext) = stem_and_extension(path);
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.len() > stem.len() + 1 + ext.len()
                && name.starts_with(&format!("{stem}-"))
                && name.ends_with(&ext)
                && p != path
        })
        .collect();
    // The timestamps sort as text.
    out.sort();
    out
}

fn prune(path: &Path, max_backups: usize, max_age: Option<Duration>) -> anyhow::Result<()> {
    let all = backups(path);
    let excess = if max_backups > 0 {
        all.len().saturating_sub(max_backups)
    } else {
        0
    };
    for (i, backup) in all.iter().enumerate() {
        let too_old = max_age.is_some_and(|age| {
            std::fs::metadata(backup)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t).ok())
                .is_some_and(|d| d > age)
        });
        if i < excess || too_old {
            std::fs::remove_file(backup)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_rotates_past_its_size_and_keeps_the_newest_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let mut out = Output::open(Target::File {
            path: path.clone(),
            max_bytes: 100,
            max_backups: 2,
            max_age: None,
        })
        .unwrap();
        for i in 0..20 {
            out.write(format!("{{\"event\":{i:04},\"pad\":\"xxxxxxxxxxxxxxxxxxxx\"}}\n").as_bytes());
        }
        let backups = backups(&path);
        assert_eq!(backups.len(), 2, "{backups:?}");
        let current = std::fs::read_to_string(&path).unwrap();
        assert!(current.len() <= 100 && current.contains("\"event\":0019"), "{current}");
        let newest = std::fs::read_to_string(&backups[1]).unwrap();
        assert!(newest.contains("\"event\":0017"), "{newest}");
        for b in &backups {
            let name = b.file_name().unwrap().to_str().unwrap();
            assert!(name.starts_with("audit-") && name.ends_with(".log"), "{name}");
        }
    }
}
