//! A cap on the concurrent watches of one user (`--max-watches-per-user`): watches are exempt from the in-flight
//! limit (they last), so without a cap one client could hold any number of them and the memory and tasks they
//! cost. A watch over the cap answers 429 TooManyRequests with `Retry-After`; `system:masters` is exempt.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use super::layer::{pass, Answered, Filtered, Next};
use apimachinery::status::ApiError;
use authn::MASTERS_GROUP;
use component_base::metrics::{metrics, InflightLabels};
use endpoints::context::RequestContext;

/// The watches open per user.
pub struct WatchLimit {
    max: usize,
    by_user: Mutex<HashMap<String, usize>>,
}

/// One open watch, counted until dropped (with the response body that streams it).
pub struct WatchPermit {
    limit: Arc<WatchLimit>,
    user: String,
}

impl Drop for WatchPermit {
    fn drop(&mut self) {
        let mut by_user = self.limit.by_user.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = by_user.get_mut(&self.user) {
            *n -= 1;
            if *n == 0 {
                by_user.remove(&self.user);
            }
        }
    }
}

impl WatchLimit {
    /// At most `max` watches per user (0: no limit).
    pub fn new(max: usize) -> Arc<WatchLimit> {
        Arc::new(WatchLimit {
            max,
            by_user: Mutex::default(),
        })
    }

    /// A place for a watch request (`None` for other requests, exempt users or no limit), or 429.
    pub fn admit(self: &Arc<Self>, ctx: &RequestContext) -> Result<Option<WatchPermit>, ApiError> {
        if self.max == 0 || ctx.info.verb != "watch" || ctx.user.in_group(MASTERS_GROUP) {
            return Ok(None);
        }
        let user = ctx.user.name.clone();
        let mut by_user = self.by_user.lock().unwrap_or_else(PoisonError::into_inner);
        let open = by_user.entry(user.clone()).or_default();
        if *open >= self.max {
            drop(by_user);
            metrics()
                .dropped_requests
                .get_or_create(&InflightLabels {
                    request_kind: "watch".to_owned(),
                })
                .inc();
            let mut e = ApiError::new(
                429,
                "TooManyRequests",
                format!(
                    "too many watches: user {user:?} has {} open (--max-watches-per-user)",
                    self.max
                ),
            );
            e.retry_after = Some(1);
            return Err(e);
        }
        *open += 1;
        Ok(Some(WatchPermit {
            limit: self.clone(),
            user,
        }))
    }
}

/// The filter: a place for a watch, held while its response streams, or 429.
pub async fn filter(limit: Arc<WatchLimit>, f: Box<Filtered>, next: Next) -> Answered {
    let permit = match limit.admit(&f.ctx) {
        Ok(permit) => permit,
        Err(e) => return f.answer(endpoints::response::error(&e, None)),
    };
    let mut answered = pass(next, f).await;
    if let Some(permit) = permit {
        // The watch keeps its place while its body streams.
        answered.resp = answered.resp.map(|body| endpoints::response::guarded(body, permit));
    }
    answered
}
