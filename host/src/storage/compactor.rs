//! The compactor: forgets old history on a schedule, as kube-apiserver does with `--etcd-compaction-interval`.
//!
//! Every interval it compacts at the revision it saw one interval earlier, so a watcher or a continue token is only
//! expired once it is at least one interval old.

use std::sync::Arc;
use std::time::Duration;

use super::{Storage, StorageError};

/// Parses a duration such as `5m`, `30s`, `1h`, `250ms` or `0` (disabled).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if s == "0" {
        return Ok(Duration::ZERO);
    }
    let split = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{s:?} has no unit (ms, s, m or h)"))?;
    let (number, unit) = s.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{s:?} does not start with a number"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n * 60)),
        "h" => Ok(Duration::from_secs(n * 3600)),
        other => Err(format!("unknown unit {other:?} in {s:?} (use ms, s, m or h)")),
    }
}

/// Starts compacting `storage` every `interval` (nothing when it is zero), until the runtime shuts down.
pub fn start(storage: Arc<dyn Storage>, interval: Duration) {
    if interval.is_zero() {
        return;
    }
    tokio::spawn(async move {
        let mut previous = None;
        let mut ticker = tokio::time::interval(interval);
        loop {
            ticker.tick().await;
            if let Some(revision) = previous {
                match storage.compact(revision).await {
                    Ok(()) => tracing::info!(revision, "compacted storage history"),
                    // Someone (another host on the same etcd) compacted at least as far already.
                    Err(StorageError::Compacted { .. }) => {}
                    Err(e) => tracing::warn!(revision, error = %e, "compaction failed"),
                }
            }
            previous = storage.current_revision().await.ok();
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_like_kube_flags() {
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("5d").is_err());
    }
}
