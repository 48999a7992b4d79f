//! What the registry's controllers (namespaces, service accounts, quotas, storage version migrations) share: a task
//! that follows the registry's storage for as long as the registry lives, started again a second after it ends or
//! fails, and stopped when the registry is closed or dropped.

use std::sync::Arc;
use std::time::Duration;

use super::Registry;
use storage::BoxFuture;

/// Whether this host runs the controllers that must run once among the hosts sharing a store.
pub type Leading = Arc<dyn Fn() -> bool + Send + Sync>;

/// Runs `follow` on the registry until the registry is closed or dropped; `name` names the controller in the log.
pub fn run<F>(registry: &Arc<Registry>, name: &'static str, follow: F)
where
    F: for<'a> Fn(&'a Arc<Registry>) -> BoxFuture<'a, anyhow::Result<()>> + Send + Sync + 'static,
{
    let weak = Arc::downgrade(registry);
    tokio::spawn(async move {
        loop {
            let Some(registry) = weak.upgrade() else {
                return;
            };
            match registry.until_closed(follow(&registry)).await {
                None => return,
                Some(Err(e)) => tracing::warn!(error = %e, controller = name, "restarting"),
                Some(Ok(())) => {}
            }
            drop(registry);
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
}
