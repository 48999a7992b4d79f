//! API Priority and Fairness (kube's `k8s.io/apiserver/pkg/util/flowcontrol`): each request is classified by the
//! FlowSchemas (`builtin::flowcontrol`) into a priority level and a flow, and waits for seats at its level.
//!
//! - **Classification** ([`config`]): the first schema in order of `matchingPrecedence` (then name) whose rules
//!   match the user, groups or service account and the verb and resource or non-resource URL; its level; its flow,
//!   the schema, the distinguisher (the user, the namespace, or none) and the tenant, so that two tenants' users
//!   never share a flow.
//! - **Seats**: the server's seats (`--max-requests-inflight` + `--max-mutating-requests-inflight`) are shared
//!   among the levels by their `nominalConcurrencyShares`; every 10 s each limited level's seats are set again
//!   from its demand, between its nominal seats less what it lends (`lendablePercent`) and its nominal seats
//!   plus what it may borrow (`borrowingLimitPercent`), as kube's dynamic limits do ([`allocate`]). A request takes
//!   its work estimate's seats: one, or for a LIST one per 100 objects it reads (the caller estimates it).
//! - **Queues** ([`queueset`]): shuffle-sharded, fair-queued; a request finds its queue full, or waits past a
//!   quarter of the request timeout (at most a minute), and is refused: 429 with a `Retry-After` that grows while
//!   refusals go on.
//! - **Exempt** levels (`system:masters`, the probes) take no seat and never wait.
//!
//! The configuration comes from the root tenant's objects ([`controller`]), which makes kube's mandatory and
//! suggested ones at start.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use component_base::metrics::{metrics, FlowLabels, FlowWaitLabels, LevelLabels};

pub mod config;
pub mod controller;
pub mod queueset;

pub use config::{Config, Descriptor};
use queueset::{Entered, FlowMetrics, Level};
pub use queueset::{Reason, Seat};

/// How often the limited levels' seats are shared again by their demand (kube's 10 s).
pub const ADJUST_PERIOD: Duration = Duration::from_secs(10);

/// The longest a request waits in its queue.
pub const MAX_QUEUE_WAIT: Duration = Duration::from_secs(60);

/// A request's place: its schema and level, with their uids for the response headers.
pub struct Classified {
    /// The schema's name.
    pub schema: Arc<str>,
    /// The schema's uid.
    pub schema_uid: Arc<str>,
    /// The level's name.
    pub level: Arc<str>,
    /// The level's uid.
    pub level_uid: Arc<str>,
    /// The limited level, or none (exempt).
    limited: Option<Arc<Level>>,
    metrics: Arc<FlowMetrics>,
    flow: u64,
}

/// A refusal: 429 with this `Retry-After`.
#[derive(Debug, PartialEq, Eq)]
pub struct Refused {
    /// Why.
    pub reason: Reason,
    /// The seconds to answer in `Retry-After`.
    pub retry_after: u64,
}

/// A schema compiled with what its requests need.
struct CompiledSchema {
    name: Arc<str>,
    uid: Arc<str>,
    level: Arc<str>,
    level_uid: Arc<str>,
    limited: Option<Arc<Level>>,
    metrics: Arc<FlowMetrics>,
    /// Whether the flow has more than one queue to be dealt (else its distinguisher is not worth hashing).
    sharded: bool,
}

#[derive(Default)]
struct Compiled {
    config: Config,
    schemas: Vec<CompiledSchema>,
    levels: BTreeMap<String, Arc<Level>>,
    /// Every level's nominal seats, the exempt ones' included.
    nominal: BTreeMap<String, u32>,
    /// The exempt levels' nominal seats, which the limited levels do not share.
    exempt_seats: u32,
}

/// The server's priority levels and their queues.
pub struct PriorityAndFairness {
    /// The server's seats.
    seats: u32,
    queue_wait: Duration,
    compiled: RwLock<Arc<Compiled>>,
}

fn flow_metrics(schema: &str, level: &str) -> Arc<FlowMetrics> {
    let m = metrics();
    let labels = FlowLabels {
        flow_schema: schema.to_owned(),
        priority_level: level.to_owned(),
    };
    let wait = |execute: bool| {
        m.flowcontrol_request_wait_duration
            .get_or_create(&FlowWaitLabels {
                flow_schema: schema.to_owned(),
                priority_level: level.to_owned(),
                execute: execute.to_string(),
            })
            .clone()
    };
    Arc::new(FlowMetrics {
        dispatched: m.flowcontrol_dispatched_requests.get_or_create(&labels).clone(),
        in_queue: m.flowcontrol_current_inqueue_requests.get_or_create(&labels).clone(),
        executing: m.flowcontrol_current_executing_requests.get_or_create(&labels).clone(),
        executing_seats: m.flowcontrol_current_executing_seats.get_or_create(&labels).clone(),
        waited: wait(true),
        waited_rejected: wait(false),
    })
}

/// The nominal seats of each level (kube's `ceil(seats × shares / all shares)`), exempt levels' included.
fn nominal_seats(seats: u32, levels: &BTreeMap<String, config::LevelSpec>) -> BTreeMap<String, u32> {
    let shares: f64 = levels.values().map(|l| l.shares as f64).sum::<f64>().max(1.0);
    levels
        .iter()
        .map(|(name, l)| {
            let nominal = (f64::from(seats) * l.shares as f64 / shares).ceil() as u32;
            (name.clone(), nominal)
        })
        .collect()
}

/// A level's bounds: its nominal seats less what it lends, and plus what it may borrow.
fn bounds(spec: &config::LevelSpec, nominal: u32, seats: u32) -> (u32, u32) {
    let lendable = (f64::from(nominal) * spec.lendable_percent as f64 / 100.0).round() as u32;
    // Casts from f64 saturate: a huge percent is no limit.
    let upper = match spec.borrowing_limit_percent {
        Some(p) => nominal.saturating_add((f64::from(nominal) * p as f64 / 100.0).round() as u32),
        None => seats.max(nominal),
    };
    (nominal - lendable.min(nominal), upper.max(nominal))
}

/// A level's claim on the seats: (lower bound, upper bound, target).
pub type Claim = (f64, f64, f64);

/// kube's fair allocation of `total` seats among levels given as (lower bound, upper bound, target): each gets
/// `f × target` within its bounds, with one `f` for all chosen so that the seats given add up to `total` (or to
/// the bounds' sum, when they cannot).
pub fn allocate(levels: &[Claim], total: f64) -> Vec<f64> {
    let given = |f: f64| -> f64 { levels.iter().map(|&(lo, hi, t)| (f * t).clamp(lo, hi.max(lo))).sum() };
    let (mut low, mut high) = (0.0, 1.0);
    while given(high) < total && high < 1e12 {
        high *= 2.0;
    }
    for _ in 0..64 {
        let mid = (low + high) / 2.0;
        if given(mid) < total {
            low = mid;
        } else {
            high = mid;
        }
    }
    levels
        .iter()
        .map(|&(lo, hi, t)| (high * t).clamp(lo, hi.max(lo)))
        .collect()
}

impl PriorityAndFairness {
    /// The levels over `seats` seats, with the bootstrap configuration until the objects are read; a request
    /// waits in its queue at most a quarter of `request_timeout` (0: no timeout), and at most a minute.
    pub fn new(seats: u32, request_timeout: Duration) -> Arc<PriorityAndFairness> {
        let queue_wait = if request_timeout.is_zero() {
            MAX_QUEUE_WAIT
        } else {
            (request_timeout / 4).min(MAX_QUEUE_WAIT)
        };
        let apf = Arc::new(PriorityAndFairness {
            seats: seats.max(1),
            queue_wait,
            compiled: RwLock::default(),
        });
        let (schemas, levels) = controller::bootstrap_objects();
        apf.configure(Config::compile(&schemas, &levels));
        apf
    }

    fn compiled(&self) -> Arc<Compiled> {
        self.compiled.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// The configuration in force.
    pub fn config(&self) -> Config {
        self.compiled().config.clone()
    }

    /// Puts a configuration in force: levels whose spec did not change keep their queues (and the requests in
    /// them); the others start anew, while requests holding seats at the old ones finish there.
    pub fn configure(&self, config: Config) {
        let old = self.compiled();
        if old.config == config {
            return;
        }
        let nominal = nominal_seats(self.seats, &config.levels);
        let m = metrics();
        let mut levels = BTreeMap::new();
        let mut exempt_seats = 0;
        for (name, spec) in &config.levels {
            let labels = LevelLabels {
                priority_level: name.clone(),
            };
            let n = nominal[name];
            m.flowcontrol_nominal_limit_seats
                .get_or_create(&labels)
                .set(i64::from(n));
            if spec.exempt {
                exempt_seats += n;
                continue;
            }
            let (lower, upper) = bounds(spec, n, self.seats);
            m.flowcontrol_lower_limit_seats
                .get_or_create(&labels)
                .set(i64::from(lower));
            m.flowcontrol_upper_limit_seats
                .get_or_create(&labels)
                .set(i64::from(upper));
            // A level whose spec changed starts anew (its queues may be others); the requests holding seats at the
            // old one finish there.
            let level = match old.levels.get(name) {
                Some(level) if level.spec == *spec => {
                    level.set_nominal(n);
                    level.clone()
                }
                _ => Level::new(spec.clone(), n, n),
            };
            levels.insert(name.clone(), level);
        }
        let schemas = config
            .schemas
            .iter()
            .map(|s| {
                let limited = levels.get(&s.level).cloned();
                let level_uid = config.levels.get(&s.level).map_or("", |l| l.uid.as_str());
                let sharded = limited
                    .as_ref()
                    .and_then(|l| l.spec.queuing)
                    .is_some_and(|q| q.queues > 1);
                CompiledSchema {
                    name: s.name.as_str().into(),
                    uid: s.uid.as_str().into(),
                    level: s.level.as_str().into(),
                    level_uid: level_uid.into(),
                    limited,
                    metrics: flow_metrics(&s.name, &s.level),
                    sharded,
                }
            })
            .collect();
        let compiled = Arc::new(Compiled {
            config,
            schemas,
            levels,
            nominal,
            exempt_seats,
        });
        *self.compiled.write().unwrap_or_else(PoisonError::into_inner) = compiled;
        self.adjust();
    }

    /// Classifies a request of `tenant` (`""`: the default tenant).
    pub fn classify(&self, d: &Descriptor<'_>, tenant: &str) -> Classified {
        let compiled = self.compiled();
        let i = compiled.config.classify_index(d);
        let (schema, c) = (&compiled.config.schemas[i], &compiled.schemas[i]);
        let flow = if c.sharded {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (&*c.name, schema.distinguisher(d), tenant).hash(&mut h);
            h.finish()
        } else {
            0
        };
        Classified {
            schema: c.name.clone(),
            schema_uid: c.uid.clone(),
            level: c.level.clone(),
            level_uid: c.level_uid.clone(),
            limited: c.limited.clone(),
            metrics: c.metrics.clone(),
            flow,
        }
    }

    /// Seats for a classified request taking `width` of them (fewer when its level caps them), waiting in its
    /// queue while none are free; none at an exempt level; or refused.
    pub async fn admit(&self, c: &Classified, width: u32) -> Result<Option<Seat>, Refused> {
        let Some(level) = &c.limited else {
            c.metrics.dispatched.inc();
            return Ok(None);
        };
        let refused = |reason: Reason, retry_after: u64| {
            metrics()
                .flowcontrol_rejected_requests
                .get_or_create(&component_base::metrics::FlowRejectionLabels {
                    flow_schema: c.schema.to_string(),
                    priority_level: c.level.to_string(),
                    reason: reason.as_str().to_owned(),
                })
                .inc();
            Refused { reason, retry_after }
        };
        match level.enter(c.flow, width, &c.metrics) {
            Entered::Now(seat) => Ok(Some(seat)),
            Entered::Queued(ticket) => match ticket.wait(self.queue_wait).await {
                Ok(seat) => Ok(Some(seat)),
                Err((reason, retry)) => Err(refused(reason, retry)),
            },
            Entered::Refused(reason, retry) => Err(refused(reason, retry)),
        }
    }

    /// Shares the limited levels' seats again by their demand since the last time (kube's dynamic limits).
    pub fn adjust(&self) {
        let compiled = self.compiled();
        let total = f64::from(self.seats.saturating_sub(compiled.exempt_seats));
        let levels: Vec<(&Arc<Level>, Claim)> = compiled
            .levels
            .iter()
            .map(|(name, level)| {
                let n = compiled.nominal[name];
                let (lower, upper) = bounds(&level.spec, n, self.seats);
                let (demand, high) = level.take_demand();
                // kube's: seats in use up to the nominal ones are not lent away.
                let lower = f64::from(lower).max(high.min(f64::from(n)));
                let upper = f64::from(upper).max(lower);
                (level, (lower, upper, demand.max(lower).min(upper)))
            })
            .collect();
        let classes: Vec<Claim> = levels.iter().map(|(_, c)| *c).collect();
        let m = metrics();
        for ((level, _), seats) in levels.iter().zip(allocate(&classes, total)) {
            let seats = (seats.round() as u32).max(1);
            level.set_limit(seats);
            m.flowcontrol_current_limit_seats
                .get_or_create(&LevelLabels {
                    priority_level: level.spec.name.clone(),
                })
                .set(i64::from(seats));
        }
    }

    /// The seats each limited level may take now, by name.
    pub fn limits(&self) -> HashMap<String, u32> {
        self.compiled()
            .levels
            .iter()
            .map(|(name, level)| (name.clone(), level.limit()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_are_shared_by_demand_within_each_levels_bounds() {
        // Idle: each level gets seats in proportion to its lower bound.
        let seats = allocate(&[(10.0, 100.0, 10.0), (30.0, 100.0, 30.0)], 80.0);
        assert!(
            (seats[0] - 20.0).abs() < 0.01 && (seats[1] - 60.0).abs() < 0.01,
            "{seats:?}"
        );
        // One level busy: it borrows what the other lends, up to its upper bound.
        let seats = allocate(&[(10.0, 50.0, 100.0), (30.0, 100.0, 30.0)], 80.0);
        assert!(
            (seats[0] - 50.0).abs() < 0.01 && (seats[1] - 30.0).abs() < 0.01,
            "{seats:?}"
        );
    }

    #[test]
    fn the_bootstrap_levels_get_kubes_nominal_seats() {
        let apf = PriorityAndFairness::new(600, Duration::from_secs(60));
        let config = apf.config();
        let nominal = nominal_seats(600, &config.levels);
        // 600 seats over 245 shares, as kube-apiserver's defaults give them.
        assert_eq!(nominal["workload-low"], 245);
        assert_eq!(nominal["global-default"], 49);
        assert_eq!(nominal["catch-all"], 13);
        assert_eq!(nominal["exempt"], 0);
        let limits = apf.limits();
        assert!(!limits.contains_key("exempt"));
        assert!(limits["global-default"] >= 25, "at least its lower bound: {limits:?}");
    }

    fn descriptor<'a>(user: &'a str, groups: &'a [String]) -> Descriptor<'a> {
        Descriptor {
            user,
            groups,
            resource_request: true,
            verb: "get",
            api_group: "wardle.example.com",
            resource: "flunders",
            namespace: "default",
            ..Descriptor::default()
        }
    }

    #[tokio::test]
    async fn masters_are_exempt_and_others_take_seats_in_flows_of_their_tenant() {
        let apf = PriorityAndFairness::new(600, Duration::from_secs(60));
        let masters = vec!["system:masters".to_owned()];
        let c = apf.classify(&descriptor("admin", &masters), "");
        assert_eq!((&*c.schema, &*c.level), ("exempt", "exempt"));
        assert!(apf.admit(&c, 1).await.unwrap().is_none(), "no seat taken");
        let users = vec!["system:authenticated".to_owned()];
        let bob = apf.classify(&descriptor("bob", &users), "");
        assert_eq!((&*bob.schema, &*bob.level), ("global-default", "global-default"));
        let seat = apf.admit(&bob, 1).await.unwrap();
        assert!(seat.is_some());
        // The same user in another tenant is another flow.
        let bob_elsewhere = apf.classify(&descriptor("bob", &users), "team-a");
        assert_ne!(bob.flow, bob_elsewhere.flow);
    }
}
