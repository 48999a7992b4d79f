//! The in-flight limit (kube's `WithMaxInFlightLimit`): at most `--max-requests-inflight` read-only and
//! `--max-mutating-requests-inflight` mutating requests are served at once; more answer 429 TooManyRequests with
//! `Retry-After: 1`. Watches (long-running), health checks and `system:masters` are exempt, as in kube.

use std::sync::Arc;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::authn::MASTERS_GROUP;
use crate::endpoints::status::ApiError;
use crate::server::context::RequestContext;
use crate::server::metrics::{metrics, InflightLabels};

/// The limits; a limit of 0 means no limit.
pub struct MaxInFlight {
    read_only: Option<Arc<Semaphore>>,
    mutating: Option<Arc<Semaphore>>,
    /// The gauges of `apiserver_current_inflight_requests`, looked up once (not per request).
    read_only_gauge: Gauge,
    mutating_gauge: Gauge,
}

/// A served request's place, released when dropped.
pub struct Permit {
    _permit: OwnedSemaphorePermit,
    gauge: Gauge,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

fn gauge(kind: &'static str) -> Gauge {
    metrics()
        .inflight_requests
        .get_or_create(&InflightLabels {
            request_kind: kind.to_owned(),
        })
        .clone()
}

impl MaxInFlight {
    /// Limits of `read_only` and `mutating` requests (0: unlimited).
    pub fn new(read_only: usize, mutating: usize) -> MaxInFlight {
        let semaphore = |n: usize| (n > 0).then(|| Arc::new(Semaphore::new(n)));
        MaxInFlight {
            read_only: semaphore(read_only),
            mutating: semaphore(mutating),
            read_only_gauge: gauge("readOnly"),
            mutating_gauge: gauge("mutating"),
        }
    }

    /// A place for the request, `None` when it is exempt or unlimited, or 429.
    pub fn admit(&self, ctx: &RequestContext) -> Result<Option<Permit>, ApiError> {
        let info = &ctx.info;
        let health = !info.resource_request && matches!(info.path.as_str(), "/healthz" | "/livez" | "/readyz");
        if info.long_running() || health || ctx.user.in_group(MASTERS_GROUP) {
            return Ok(None);
        }
        let read_only = matches!(info.verb, "get" | "list" | "watch" | "head" | "options");
        let (semaphore, kind, gauge) = if read_only {
            (&self.read_only, "readOnly", &self.read_only_gauge)
        } else {
            (&self.mutating, "mutating", &self.mutating_gauge)
        };
        let Some(semaphore) = semaphore else {
            return Ok(None);
        };
        match semaphore.clone().try_acquire_owned() {
            Ok(permit) => {
                gauge.inc();
                Ok(Some(Permit {
                    _permit: permit,
                    gauge: gauge.clone(),
                }))
            }
            Err(_) => {
                metrics()
                    .dropped_requests
                    .get_or_create(&InflightLabels {
                        request_kind: kind.to_owned(),
                    })
                    .inc();
                let mut e = ApiError::new(429, "TooManyRequests", "Too many requests, please try again later.");
                e.retry_after = Some(1);
                Err(e)
            }
        }
    }
}
