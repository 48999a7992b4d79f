//! A tenant's request limits: `maxInflight` (requests served at once; watches, which last, are exempt as from
//! kube's max-in-flight) and `requestsPerSecond` (a token bucket holding one second's worth, so short bursts pass).
//! Over either, a request answers 429 TooManyRequests with `Retry-After`. `system:masters` is exempt, as kube's
//! API Priority and Fairness exempts it; the tenant's own users, admins included, are not.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use super::config::Limits;
use apimachinery::status::ApiError;
use authn::MASTERS_GROUP;
use endpoints::context::RequestContext;

/// One tenant's request counters.
#[derive(Default)]
pub struct Limiter {
    inflight: AtomicUsize,
    bucket: Mutex<Option<Bucket>>,
    /// Requests refused for `maxInflight`.
    pub rejected_inflight: AtomicU64,
    /// Requests refused for `requestsPerSecond`.
    pub rejected_rate: AtomicU64,
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// A request's place among the tenant's requests in flight, given back when dropped.
pub struct Permit {
    limiter: Arc<Limiter>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.limiter.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Limiter {
    /// How many of the tenant's requests are in flight now.
    pub fn inflight(&self) -> usize {
        self.inflight.load(Ordering::Acquire)
    }

    /// Admits a request of tenant `name` under `limits`: a permit while it is in flight (`None` when exempt or
    /// unlimited), or the 429 to answer.
    pub fn admit(
        self: &Arc<Self>,
        name: &str,
        limits: &Limits,
        ctx: &RequestContext,
    ) -> Result<Option<Permit>, ApiError> {
        if ctx.user.in_group(MASTERS_GROUP) {
            return Ok(None);
        }
        if let Some(rate) = limits.requests_per_second {
            let mut bucket = self.bucket.lock().unwrap_or_else(PoisonError::into_inner);
            let now = Instant::now();
            let b = bucket.get_or_insert(Bucket {
                tokens: rate.max(1.0),
                at: now,
            });
            b.tokens = (b.tokens + now.duration_since(b.at).as_secs_f64() * rate).min(rate.max(1.0));
            b.at = now;
            if b.tokens < 1.0 {
                let wait = ((1.0 - b.tokens) / rate).ceil().max(1.0) as u32;
                drop(bucket);
                self.rejected_rate.fetch_add(1, Ordering::Relaxed);
                return Err(too_many(
                    format!("too many requests in tenant {name}: its limit is {rate} requests per second"),
                    wait,
                ));
            }
            b.tokens -= 1.0;
        }
        let Some(max) = limits.max_inflight else {
            return Ok(None);
        };
        if ctx.info.long_running() {
            return Ok(None);
        }
        let mut current = self.inflight.load(Ordering::Acquire);
        loop {
            if current >= max {
                self.rejected_inflight.fetch_add(1, Ordering::Relaxed);
                return Err(too_many(
                    format!("too many requests in tenant {name}: its limit is {max} requests in flight"),
                    1,
                ));
            }
            match self
                .inflight
                .compare_exchange_weak(current, current + 1, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => return Ok(Some(Permit { limiter: self.clone() })),
                Err(now) => current = now,
            }
        }
    }
}

fn too_many(message: String, retry_after: u32) -> ApiError {
    let mut e = ApiError::new(429, "TooManyRequests", message);
    e.retry_after = Some(retry_after);
    e
}
