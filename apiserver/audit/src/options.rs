//! The audit flags (kube-apiserver's names and meanings).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;

use super::policy::Policy;
use super::writer::{AuditLog, Target};
use super::Auditor;

/// Flags for the audit log.
#[derive(Args, Debug, Clone)]
pub struct AuditOptions {
    /// Where audit events go, one JSON line each: a file (rotated), or `-` for standard output. Requires
    /// `--audit-policy-file`, which says what is logged.
    #[arg(long, value_name = "FILE")]
    pub audit_log_path: Option<PathBuf>,
    /// The audit policy (audit.k8s.io/v1 Policy, YAML or JSON).
    #[arg(long, value_name = "FILE")]
    pub audit_policy_file: Option<PathBuf>,
    /// Rotate the audit log once it reaches this many megabytes (0: never).
    #[arg(long, default_value_t = 100, value_name = "MB")]
    pub audit_log_maxsize: u64,
    /// Keep at most this many rotated audit logs (0: all).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub audit_log_maxbackup: usize,
    /// Remove rotated audit logs older than this many days (0: keep).
    #[arg(long, default_value_t = 0, value_name = "DAYS")]
    pub audit_log_maxage: u64,
    /// How many events may wait to be written; beyond, events are dropped and counted in
    /// `apiserver_audit_error_total` (requests never wait on the log).
    #[arg(long, default_value_t = 10_000, value_name = "N")]
    pub audit_log_batch_buffer_size: usize,
}

impl AuditOptions {
    /// The auditor the flags ask for, if any.
    pub fn auditor(&self) -> anyhow::Result<Option<Arc<Auditor>>> {
        let Some(path) = &self.audit_log_path else {
            return Ok(None);
        };
        let Some(policy_file) = &self.audit_policy_file else {
            tracing::warn!("--audit-log-path without --audit-policy-file: nothing is audited");
            return Ok(None);
        };
        let text = std::fs::read_to_string(policy_file)
            .with_context(|| format!("reading --audit-policy-file {}", policy_file.display()))?;
        let policy =
            Policy::parse(&text).with_context(|| format!("in --audit-policy-file {}", policy_file.display()))?;
        let target = if path.as_os_str() == "-" {
            Target::Stdout
        } else {
            Target::File {
                path: path.clone(),
                max_bytes: self.audit_log_maxsize.saturating_mul(1 << 20),
                max_backups: self.audit_log_maxbackup,
                max_age: (self.audit_log_maxage > 0).then(|| Duration::from_secs(self.audit_log_maxage * 86_400)),
            }
        };
        let log = AuditLog::start(target, self.audit_log_batch_buffer_size)?;
        tracing::info!(path = %path.display(), "auditing requests");
        Ok(Some(Arc::new(Auditor::new(policy, log))))
    }
}
