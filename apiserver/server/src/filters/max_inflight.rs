//! The in-flight limit (kube's `WithMaxInFlightLimit`, with the queuing of API Priority and Fairness): at most
//! `--max-requests-inflight` read-only and `--max-mutating-requests-inflight` mutating requests are served at once.
//! Beyond that, requests wait in a queue per tenant, and each place freed goes to the next tenant in turn (round
//! robin), so a tenant flooding the server gets its share of places and no more; a request that finds its tenant's
//! queue full ([`QUEUE_LENGTH`]) or waits longer than [`QUEUE_WAIT`] answers 429 TooManyRequests with
//! `Retry-After: 1`. Watches (long-running), health checks and `system:masters` are exempt, as in kube.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::oneshot;

use super::layer::{pass, Answered, Filtered, Next};
use apimachinery::status::ApiError;
use authn::MASTERS_GROUP;
use component_base::metrics::{metrics, InflightLabels};
use endpoints::context::RequestContext;

/// The most requests of one tenant that may wait for a place (per kind of request).
pub const QUEUE_LENGTH: usize = 64;

/// The longest a request waits for a place.
pub const QUEUE_WAIT: Duration = Duration::from_secs(5);

/// The limits; a limit of 0 means no limit.
pub struct MaxInFlight {
    read_only: Option<Arc<FairQueue>>,
    mutating: Option<Arc<FairQueue>>,
    /// The gauges of `apiserver_current_inflight_requests`, looked up once (not per request).
    read_only_gauge: Gauge,
    mutating_gauge: Gauge,
}

/// A served request's place, released when dropped (to the next tenant waiting, if any).
pub struct Permit {
    queue: Arc<FairQueue>,
    gauge: Gauge,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.gauge.dec();
        self.queue.release();
    }
}

/// Places for requests, given out in turn to the flows whose requests wait (a flow: the
/// requests of one tenant).
struct FairQueue {
    limit: usize,
    state: Mutex<QueueState>,
}

#[derive(Default)]
struct QueueState {
    in_use: usize,
    /// Waiting requests by flow.
    waiting: HashMap<String, VecDeque<oneshot::Sender<()>>>,
    /// The flows with waiting requests, in turn order.
    turns: VecDeque<String>,
}

impl FairQueue {
    fn new(limit: usize) -> FairQueue {
        FairQueue {
            limit,
            state: Mutex::default(),
        }
    }

    /// A place now, or a turn to wait for in `flow`'s queue; `None` when that queue is full.
    fn enter(&self, flow: &str) -> Option<Option<oneshot::Receiver<()>>> {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if s.in_use < self.limit && s.turns.is_empty() {
            s.in_use += 1;
            return Some(None);
        }
        let queue = s.waiting.entry(flow.to_owned()).or_default();
        queue.retain(|w| !w.is_closed());
        if queue.len() >= QUEUE_LENGTH {
            return None;
        }
        let (tx, rx) = oneshot::channel();
        queue.push_back(tx);
        if queue.len() == 1 && !s.turns.iter().any(|t| t == flow) {
            s.turns.push_back(flow.to_owned());
        }
        Some(Some(rx))
    }

    /// Hands a freed place to the next flow in turn with a request still waiting, or frees it.
    fn release(&self) {
        let mut s = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        while let Some(flow) = s.turns.pop_front() {
            let Some(queue) = s.waiting.get_mut(&flow) else {
                continue;
            };
            // A request that stopped waiting (timed out, or its client left) has closed its receiver: skipped
            // without costing its flow the turn.
            let mut handed = false;
            while let Some(next) = queue.pop_front() {
                if next.send(()).is_ok() {
                    handed = true;
                    break;
                }
            }
            if queue.is_empty() {
                s.waiting.remove(&flow);
            } else {
                s.turns.push_back(flow);
            }
            if handed {
                return;
            }
        }
        s.in_use -= 1;
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
        let semaphore = |n: usize| (n > 0).then(|| Arc::new(FairQueue::new(n)));
        MaxInFlight {
            read_only: semaphore(read_only),
            mutating: semaphore(mutating),
            read_only_gauge: gauge("readOnly"),
            mutating_gauge: gauge("mutating"),
        }
    }

    /// A place for the request (waiting in its tenant's queue while none is free), `None` when it is exempt or
    /// unlimited, or 429.
    pub async fn admit(&self, ctx: &RequestContext) -> Result<Option<Permit>, ApiError> {
        let info = &ctx.info;
        let health = !info.resource_request && matches!(info.path.as_str(), "/healthz" | "/livez" | "/readyz");
        if info.long_running() || health || ctx.user.in_group(MASTERS_GROUP) {
            return Ok(None);
        }
        let read_only = matches!(info.verb, "get" | "list" | "watch" | "head" | "options");
        let (queue, kind, gauge) = if read_only {
            (&self.read_only, "readOnly", &self.read_only_gauge)
        } else {
            (&self.mutating, "mutating", &self.mutating_gauge)
        };
        let Some(queue) = queue else {
            return Ok(None);
        };
        // A flow per tenant (`""`: the default tenant).
        let admitted = match queue.enter(info.tenant.as_deref().unwrap_or("")) {
            Some(None) => true,
            Some(Some(mut turn)) => match tokio::time::timeout(QUEUE_WAIT, &mut turn).await {
                Ok(Ok(())) => true,
                _ => {
                    // No more places may be handed to it; one handed just now is taken (not lost).
                    turn.close();
                    turn.try_recv().is_ok()
                }
            },
            None => false,
        };
        if admitted {
            gauge.inc();
            return Ok(Some(Permit {
                queue: queue.clone(),
                gauge: gauge.clone(),
            }));
        }
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

/// The filter: a place for the request, held until its response, or 429.
pub async fn filter(limit: &MaxInFlight, f: Box<Filtered>, next: Next) -> Answered {
    let _permit = match limit.admit(&f.ctx).await {
        Ok(permit) => permit,
        Err(e) => return f.answer(endpoints::response::error(&e, None)),
    };
    pass(next, f).await
}

#[cfg(test)]
mod tests {
    use super::*;

    /// While every place is taken, freed places go to the waiting tenants in turn, whatever their queues' lengths.
    #[tokio::test]
    async fn freed_places_go_to_the_tenants_in_turn() {
        let queue = Arc::new(FairQueue::new(1));
        assert!(matches!(queue.enter("a"), Some(None)));
        let mut turns = Vec::new();
        for tenant in ["a", "a", "a", "b"] {
            turns.push((tenant, queue.enter(tenant).unwrap().unwrap()));
        }
        // a's first waiting request, then b's (though a has two more before it), then a's.
        let mut served = Vec::new();
        for _ in 0..3 {
            queue.release();
            let i = turns.iter_mut().position(|(_, rx)| rx.try_recv().is_ok()).unwrap();
            served.push(turns.remove(i).0);
        }
        assert_eq!(served, ["a", "b", "a"]);
    }

    /// A full queue refuses its tenant only; a request that stopped waiting is skipped.
    #[tokio::test]
    async fn a_full_queue_refuses_its_tenant_and_left_requests_are_skipped() {
        let queue = FairQueue::new(1);
        assert!(matches!(queue.enter("a"), Some(None)));
        let mut waiting: Vec<_> = (0..QUEUE_LENGTH).map(|_| queue.enter("a").unwrap().unwrap()).collect();
        assert!(queue.enter("a").is_none());
        let mut b = queue.enter("b").unwrap().unwrap();
        drop(waiting.remove(0));
        queue.release();
        // a's first left: a's next takes a's turn, then comes b's.
        assert!(waiting[0].try_recv().is_ok(), "a's next waiting request gets the place");
        assert!(b.try_recv().is_err());
        queue.release();
        assert!(b.try_recv().is_ok(), "then b's");
    }
}
