//! Events' time to live (kube-apiserver's `--event-ttl`, which it gives each event as an etcd lease renewed by every
//! write): an event is deleted once its time to live has passed since it was last seen
//! ([`builtin::core::event::last_seen`]: the latest of its creation, its times and its series' last observation,
//! which a recorder moves on each occurrence). The registry's task looks every tenth of the time to live (at least
//! every second, at most every minute); the deletions reach watchers as any deletion does.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::Registry;
use storage::keys::key_prefix;
use storage::ListOptions;

/// kube-apiserver's default time to live.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);

/// How many events a sweep reads at once.
const PAGE: usize = 500;

/// Starts the sweeps for as long as the registry lives (none for a zero time to live: events are kept, as
/// kube-apiserver keeps them then).
pub fn start_controller(registry: &Arc<Registry>, ttl: Duration) {
    if ttl.is_zero() {
        return;
    }
    let weak = Arc::downgrade(registry);
    let every = (ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            let Some(registry) = weak.upgrade() else {
                return;
            };
            match registry.until_closed(sweep(&registry, ttl)).await {
                None => return,
                Some(Err(e)) => tracing::warn!(error = %e, "event time to live: sweeping failed"),
                Some(Ok(0)) => {}
                Some(Ok(deleted)) => tracing::debug!(deleted, "deleted events past their time to live"),
            }
        }
    });
}

/// Deletes the events whose time to live has passed; how many.
pub async fn sweep(registry: &Registry, ttl: Duration) -> anyhow::Result<usize> {
    let prefix = key_prefix("", "events", None);
    let now = builtin::core::event::now();
    let mut deleted = 0;
    let mut after = None;
    loop {
        let page = registry
            .storage
            .list(
                &prefix,
                ListOptions {
                    limit: PAGE,
                    start_after: after.take(),
                    ..ListOptions::default()
                },
            )
            .await?;
        for kv in &page.items {
            let expired = serde_json::from_slice::<Value>(&kv.value)
                .is_ok_and(|event| builtin::core::event::expired(&event, ttl, now));
            // Written since it was read: its next sweep decides.
            if expired && registry.delete_stored("", "events", &kv.key, kv.mod_revision).await? {
                deleted += 1;
            }
        }
        match page.items.last() {
            Some(last) if page.remaining > 0 => after = Some(last.key.clone()),
            _ => return Ok(deleted),
        }
    }
}
