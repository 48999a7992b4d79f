//! A limited priority level's seats and queues (kube's `fairqueuing/queueset`).
//!
//! A request takes as many seats as its work estimate says, for as long as it runs. When the level's seats are
//! all taken, a request waits in one of the level's queues: its flow (schema, distinguisher and tenant, hashed) is
//! dealt a hand of queues (shuffle sharding), and it joins the shortest of them, so that a flow flooding the level
//! fills a few queues and leaves the others to other flows. A freed seat goes to the head of the queue whose next
//! request has the earliest virtual start (fair queuing): each dispatch advances its queue's virtual time by the
//! seats the request takes times an estimated service time, corrected by the time the request really took when it
//! ends, so queues are served in proportion to the seat-seconds they use, not the number of their requests. A
//! level without queues (`limitResponse.type: Reject`) refuses a request that finds no seat.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use tokio::sync::oneshot;

use super::config::LevelSpec;

/// The service time each dispatch is charged at first (kube's `G`, 60 s), corrected when the request ends.
const ESTIMATED_SERVICE: f64 = 60.0;

/// The most a `Retry-After` grows to (seconds).
const MAX_RETRY_AFTER: u64 = 32;

/// Why a request was refused (the `reason` label of `apiserver_flowcontrol_rejected_requests_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// Its queue was full.
    QueueFull,
    /// No seat was free at a level that does not queue.
    ConcurrencyLimit,
    /// It waited in its queue past the longest wait.
    TimeOut,
}

impl Reason {
    /// kube's label.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::QueueFull => "queue-full",
            Reason::ConcurrencyLimit => "concurrency-limit",
            Reason::TimeOut => "time-out",
        }
    }
}

/// The metrics of one schema's requests at its level, looked up once per configuration.
pub struct FlowMetrics {
    /// `apiserver_flowcontrol_dispatched_requests_total`.
    pub dispatched: Counter,
    /// `apiserver_flowcontrol_current_inqueue_requests`.
    pub in_queue: Gauge,
    /// `apiserver_flowcontrol_current_executing_requests`.
    pub executing: Gauge,
    /// `apiserver_flowcontrol_current_executing_seats`.
    pub executing_seats: Gauge,
    /// `apiserver_flowcontrol_request_wait_duration_seconds{execute="true"}`.
    pub waited: Histogram,
    /// `apiserver_flowcontrol_request_wait_duration_seconds{execute="false"}`.
    pub waited_rejected: Histogram,
}

impl FlowMetrics {
    /// A request's seats taken.
    fn executing(&self, width: u32) {
        self.executing.inc();
        self.executing_seats.inc_by(i64::from(width));
    }

    /// A request's seats given back.
    fn finished(&self, width: u32) {
        self.executing.dec();
        self.executing_seats.dec_by(i64::from(width));
    }

    /// A request dispatched after waiting `waited` seconds.
    fn dispatched(&self, waited: f64) {
        self.dispatched.inc();
        self.waited.observe(waited);
    }
}

/// A queued request.
struct Waiter {
    id: u64,
    width: u32,
    enqueued: Instant,
    tx: oneshot::Sender<Seat>,
    metrics: Arc<FlowMetrics>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiter>,
    /// The virtual time its next request starts at.
    next_start: f64,
    /// The seats its requests take: waiting and executing (the shortest queue of a hand is the one with fewest).
    seats: u32,
}

/// The seat demand over a period (executing and waiting seats), for the periodic sharing of seats between levels.
#[derive(Clone, Copy, Debug)]
struct Demand {
    since: Instant,
    changed: Instant,
    current: f64,
    integral: f64,
    squares: f64,
    high_watermark: f64,
}

impl Demand {
    fn new(now: Instant) -> Demand {
        Demand {
            since: now,
            changed: now,
            current: 0.0,
            integral: 0.0,
            squares: 0.0,
            high_watermark: 0.0,
        }
    }

    fn set(&mut self, now: Instant, seats: u32) {
        let dt = now.duration_since(self.changed).as_secs_f64();
        self.integral += self.current * dt;
        self.squares += self.current * self.current * dt;
        self.changed = now;
        self.current = f64::from(seats);
        self.high_watermark = self.high_watermark.max(self.current);
    }

    /// The mean and standard deviation since the last reset, and the highest demand; then starts a new period.
    fn take(&mut self, now: Instant) -> (f64, f64, f64) {
        self.set(now, self.current as u32);
        let period = now.duration_since(self.since).as_secs_f64();
        let (mean, deviation) = if period > 0.0 {
            let mean = self.integral / period;
            (mean, (self.squares / period - mean * mean).max(0.0).sqrt())
        } else {
            (self.current, 0.0)
        };
        let high = self.high_watermark;
        *self = Demand {
            high_watermark: self.current,
            current: self.current,
            ..Demand::new(now)
        };
        (mean, deviation, high)
    }
}

/// kube's dropped-requests tracker: the `Retry-After` of a level's refusals doubles (up to 32 s) while refusals
/// keep coming faster than clients are told to retry, and shrinks by one second at a time when they slow.
struct RetryAfter {
    seconds: u64,
    /// Refusals per second, the latest last: (second since `epoch`, count).
    history: VecDeque<(u64, u64)>,
    last_change: u64,
    epoch: Instant,
}

impl RetryAfter {
    fn new(now: Instant) -> RetryAfter {
        RetryAfter {
            seconds: 1,
            history: VecDeque::new(),
            last_change: 0,
            epoch: now,
        }
    }

    fn refused(&mut self, now: Instant) -> u64 {
        let second = now.duration_since(self.epoch).as_secs();
        match self.history.back_mut() {
            Some((s, count)) if *s == second => *count += 1,
            _ => {
                // A new second: the last `seconds` seconds decide.
                let recent: u64 = self
                    .history
                    .iter()
                    .filter(|(s, _)| s + self.seconds >= second)
                    .map(|(_, c)| c)
                    .sum();
                if recent >= 3 * self.seconds && second >= self.last_change + self.seconds {
                    self.seconds = (self.seconds * 2).min(MAX_RETRY_AFTER);
                    self.last_change = second;
                } else if recent < self.seconds && self.seconds > 1 {
                    self.seconds -= 1;
                    self.last_change = second;
                }
                self.history.push_back((second, 1));
                while self.history.front().is_some_and(|(s, _)| s + MAX_RETRY_AFTER < second) {
                    self.history.pop_front();
                }
            }
        }
        self.seconds
    }
}

struct State {
    /// The seats its requests may take now.
    limit: u32,
    in_use: u32,
    waiting_seats: u32,
    queues: Vec<Queue>,
    virtual_time: f64,
    next_id: u64,
    demand: Demand,
    retry_after: RetryAfter,
    /// The seat demand smoothed over the periods (kube's `seatDemandSmoothed`).
    smoothed: f64,
}

/// A limited priority level.
pub struct Level {
    /// Its spec.
    pub spec: LevelSpec,
    /// The most seats one request takes here ([`max_width`]), following its nominal seats.
    max_width: AtomicU32,
    state: Mutex<State>,
}

/// A dispatched request's seats, given back (to the next queued request, if any) when dropped.
pub struct Seat {
    level: Arc<Level>,
    queue: Option<usize>,
    width: u32,
    started: Instant,
    metrics: Arc<FlowMetrics>,
    /// Whether the seats were given back already (a dispatch to a request that left).
    released: bool,
}

impl Drop for Seat {
    fn drop(&mut self) {
        if self.released {
            return;
        }
        self.metrics.finished(self.width);
        let elapsed = self.started.elapsed().as_secs_f64();
        let mut s = self.level.lock();
        s.finish(self.queue, self.width, Some(elapsed));
        s.dispatch(&self.level);
    }
}

/// The outcome of entering a level.
pub enum Entered {
    /// Seats, now.
    Now(Seat),
    /// A place in a queue, to wait on.
    Queued(Ticket),
    /// Refused, with the `Retry-After` to answer.
    Refused(Reason, u64),
}

/// A queued request's place.
pub struct Ticket {
    level: Arc<Level>,
    queue: usize,
    id: u64,
    rx: oneshot::Receiver<Seat>,
    enqueued: Instant,
    metrics: Arc<FlowMetrics>,
}

impl Ticket {
    /// Waits up to `timeout` for its seats; or refused (time-out) with the `Retry-After` to answer.
    pub async fn wait(mut self, timeout: Duration) -> Result<Seat, (Reason, u64)> {
        if let Ok(Ok(seat)) = tokio::time::timeout(timeout, &mut self.rx).await {
            return Ok(seat);
        }
        if self.leave() {
            self.metrics
                .waited_rejected
                .observe(self.enqueued.elapsed().as_secs_f64());
            let retry = self.level.lock().retry_after.refused(Instant::now());
            return Err((Reason::TimeOut, retry));
        }
        // Dispatched meanwhile: the seats were sent under the lock `leave` took.
        self.rx.try_recv().map_err(|_| (Reason::TimeOut, 1))
    }

    /// Takes the request out of its queue if it is still there (then what waits behind it may fit).
    fn leave(&self) -> bool {
        let mut s = self.level.lock();
        let queue = &mut s.queues[self.queue];
        let Some(i) = queue.waiting.iter().position(|w| w.id == self.id) else {
            return false;
        };
        let w = queue.waiting.remove(i).expect("the position is in the queue");
        queue.seats -= w.width;
        s.waiting_seats -= w.width;
        s.note_demand();
        self.metrics.in_queue.dec();
        s.dispatch(&self.level);
        true
    }
}

impl Drop for Ticket {
    /// A request that stops waiting (its client left) leaves its queue at once: it no longer counts towards the
    /// queue's length.
    fn drop(&mut self) {
        self.leave();
    }
}

/// Picks `hand` distinct queues of `deck` from `hash` (kube's shuffle-sharding dealer).
pub fn deal(mut hash: u64, deck: usize, hand: usize) -> Vec<usize> {
    let mut picked: Vec<usize> = Vec::with_capacity(hand);
    for i in 0..hand.min(deck) {
        let left = (deck - i) as u64;
        let mut card = (hash % left) as usize;
        hash /= left;
        // The `card`th queue not picked yet.
        let mut sorted = picked.clone();
        sorted.sort_unstable();
        for p in sorted {
            if p <= card {
                card += 1;
            }
        }
        picked.push(card);
    }
    picked
}

/// kube's cap of a request's seats at a level with queues: 15% of its nominal seats, and no more than its nominal
/// seats spread over a hand (at least one); none at a level without queues.
fn max_width(spec: &LevelSpec, nominal: u32) -> u32 {
    match spec.queuing {
        Some(q) => ((f64::from(nominal) * 0.15).ceil() as u32)
            .min(nominal / (q.hand_size.max(1) as u32))
            .max(1),
        None => u32::MAX,
    }
}

impl Level {
    /// A level with `limit` seats to begin with and `nominal` seats by its shares.
    pub fn new(spec: LevelSpec, limit: u32, nominal: u32) -> Arc<Level> {
        let queues = spec.queuing.map_or(0, |q| q.queues);
        let max_width = AtomicU32::new(max_width(&spec, nominal));
        let now = Instant::now();
        Arc::new(Level {
            spec,
            max_width,
            state: Mutex::new(State {
                limit,
                in_use: 0,
                waiting_seats: 0,
                queues: (0..queues).map(|_| Queue::default()).collect(),
                virtual_time: 0.0,
                next_id: 0,
                demand: Demand::new(now),
                retry_after: RetryAfter::new(now),
                smoothed: 0.0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The most seats one request takes here.
    pub fn max_width(&self) -> u32 {
        self.max_width.load(Ordering::Relaxed)
    }

    /// Its nominal seats changed (another level's shares did): the cap of a request's seats follows.
    pub fn set_nominal(&self, nominal: u32) {
        self.max_width.store(max_width(&self.spec, nominal), Ordering::Relaxed);
    }

    /// The seats its requests may take now.
    pub fn limit(&self) -> u32 {
        self.lock().limit
    }

    /// Sets the seats its requests may take, and dispatches what now fits.
    pub fn set_limit(self: &Arc<Self>, limit: u32) {
        let mut s = self.lock();
        s.limit = limit;
        s.dispatch(self);
    }

    /// The seat demand since the last call (mean plus one standard deviation, smoothed as kube smooths it), and
    /// the highest.
    pub fn take_demand(&self) -> (f64, f64) {
        let mut s = self.lock();
        let (mean, deviation, high) = s.demand.take(Instant::now());
        // kube's seatDemandSmoothingCoefficient.
        s.smoothed = (s.smoothed * 0.977).max(mean + deviation);
        (s.smoothed, high)
    }

    /// Takes `width` seats for a request of the flow hashed as `flow`, or a place in a queue, or refuses.
    pub fn enter(self: &Arc<Self>, flow: u64, width: u32, metrics: &Arc<FlowMetrics>) -> Entered {
        let width = width.clamp(1, self.max_width());
        let now = Instant::now();
        let mut s = self.lock();
        let fits = s.in_use + width <= s.limit || s.in_use == 0;
        let Some(queuing) = self.spec.queuing else {
            if !fits {
                let retry = s.retry_after.refused(now);
                return Entered::Refused(Reason::ConcurrencyLimit, retry);
            }
            s.start(None, width);
            metrics.dispatched(0.0);
            return Entered::Now(self.seat(None, width, now, metrics));
        };
        let queue = deal(flow, s.queues.len(), queuing.hand_size)
            .into_iter()
            .min_by_key(|&q| s.queues[q].seats)
            .expect("a level has at least one queue");
        if fits && s.waiting_seats == 0 {
            s.join(queue, width);
            s.start(Some(queue), width);
            metrics.dispatched(0.0);
            return Entered::Now(self.seat(Some(queue), width, now, metrics));
        }
        if s.queues[queue].waiting.len() >= queuing.queue_length_limit {
            let retry = s.retry_after.refused(now);
            return Entered::Refused(Reason::QueueFull, retry);
        }
        let (tx, rx) = oneshot::channel();
        let id = s.next_id;
        s.next_id += 1;
        s.join(queue, width);
        s.queues[queue].waiting.push_back(Waiter {
            id,
            width,
            enqueued: now,
            tx,
            metrics: metrics.clone(),
        });
        s.waiting_seats += width;
        s.note_demand();
        metrics.in_queue.inc();
        s.dispatch(self);
        Entered::Queued(Ticket {
            level: self.clone(),
            queue,
            id,
            rx,
            enqueued: now,
            metrics: metrics.clone(),
        })
    }

    /// The seats of a request that starts at `now` (counted as executing).
    fn seat(self: &Arc<Self>, queue: Option<usize>, width: u32, now: Instant, metrics: &Arc<FlowMetrics>) -> Seat {
        metrics.executing(width);
        Seat {
            level: self.clone(),
            queue,
            width,
            started: now,
            metrics: metrics.clone(),
            released: false,
        }
    }

    /// The requests waiting and the seats taken, for tests and the level's metrics.
    pub fn usage(&self) -> (usize, u32) {
        let s = self.lock();
        (s.queues.iter().map(|q| q.waiting.len()).sum(), s.in_use)
    }
}

impl State {
    /// Records the seat demand now (executing and waiting).
    fn note_demand(&mut self) {
        let demand = self.in_use + self.waiting_seats;
        self.demand.set(Instant::now(), demand);
    }

    /// Counts `width` more seats in `queue`; a queue that had none catches up with the virtual time (idleness
    /// earns no credit).
    fn join(&mut self, queue: usize, width: u32) {
        let vt = self.virtual_time;
        let q = &mut self.queues[queue];
        if q.seats == 0 {
            q.next_start = q.next_start.max(vt);
        }
        q.seats += width;
    }

    /// Takes `width` seats for a request of `queue` (none at a level without queues), whose seats the queue
    /// counts already.
    fn start(&mut self, queue: Option<usize>, width: u32) {
        self.in_use += width;
        if let Some(q) = queue {
            let vt = self.virtual_time;
            let q = &mut self.queues[q];
            self.virtual_time = vt.max(q.next_start);
            q.next_start += f64::from(width) * ESTIMATED_SERVICE;
        }
        self.note_demand();
    }

    /// Gives back `width` seats of a request of `queue`; one that ran for `elapsed` seconds is charged what it
    /// took in place of the estimate.
    fn finish(&mut self, queue: Option<usize>, width: u32, elapsed: Option<f64>) {
        self.in_use -= width;
        if let Some(q) = queue {
            let q = &mut self.queues[q];
            q.seats = q.seats.saturating_sub(width);
            let charged = elapsed.unwrap_or(0.0);
            q.next_start -= f64::from(width) * (ESTIMATED_SERVICE - charged);
        }
        self.note_demand();
    }

    /// Dispatches queued requests while their seats fit: each time the head of the queue with the earliest virtual
    /// start.
    fn dispatch(&mut self, level: &Arc<Level>) {
        // Every waiter is one whose request still waits: a request that stops waiting leaves its queue
        // (`Ticket::leave`, under this lock).
        loop {
            let Some(queue) = (0..self.queues.len())
                .filter(|&q| !self.queues[q].waiting.is_empty())
                .min_by(|&a, &b| self.queues[a].next_start.total_cmp(&self.queues[b].next_start))
            else {
                return;
            };
            let width = self.queues[queue].waiting[0].width;
            if self.in_use + width > self.limit && self.in_use > 0 {
                return;
            }
            let w = self.queues[queue].waiting.pop_front().expect("a head");
            self.waiting_seats -= w.width;
            // Its seats stay counted in the queue while it executes.
            self.start(Some(queue), w.width);
            w.metrics.in_queue.dec();
            let waited = w.enqueued.elapsed().as_secs_f64();
            let seat = level.seat(Some(queue), w.width, Instant::now(), &w.metrics);
            match w.tx.send(seat) {
                Ok(()) => w.metrics.dispatched(waited),
                Err(mut seat) => {
                    // Its receiver is gone (it cannot be, while the waiter is queued: kept for safety): its seats
                    // come back here, under the lock (its drop must not take it again).
                    seat.released = true;
                    seat.metrics.finished(seat.width);
                    self.finish(Some(queue), seat.width, None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Queuing;

    fn metrics() -> Arc<FlowMetrics> {
        Arc::new(FlowMetrics {
            dispatched: Counter::default(),
            in_queue: Gauge::default(),
            executing: Gauge::default(),
            executing_seats: Gauge::default(),
            waited: Histogram::new([0.1]),
            waited_rejected: Histogram::new([0.1]),
        })
    }

    fn level(limit: u32, queuing: Option<Queuing>) -> Arc<Level> {
        let spec = LevelSpec {
            name: "l".into(),
            uid: String::new(),
            exempt: false,
            shares: 1,
            lendable_percent: 0,
            borrowing_limit_percent: None,
            queuing,
        };
        Level::new(spec, limit, 100)
    }

    #[test]
    fn hands_are_distinct_queues_of_the_deck() {
        for hash in [0, 1, 7, u64::MAX, 0x9e37_79b9_7f4a_7c15] {
            let hand = deal(hash, 8, 4);
            let mut sorted = hand.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(sorted.len(), 4, "{hand:?}");
            assert!(hand.iter().all(|&q| q < 8));
        }
        // Different flows get different hands.
        assert_ne!(deal(1, 128, 6), deal(2, 128, 6));
    }

    #[tokio::test]
    async fn a_level_without_queues_refuses_when_its_seats_are_taken() {
        let l = level(2, None);
        let m = metrics();
        let (Entered::Now(a), Entered::Now(_b)) = (l.enter(1, 1, &m), l.enter(2, 1, &m)) else {
            panic!("two seats");
        };
        assert!(matches!(
            l.enter(3, 1, &m),
            Entered::Refused(Reason::ConcurrencyLimit, 1)
        ));
        drop(a);
        assert!(matches!(l.enter(3, 1, &m), Entered::Now(_)));
    }

    #[tokio::test]
    async fn a_flooding_flow_fills_its_queue_and_other_flows_are_served_first() {
        let q = Queuing {
            queues: 64,
            hand_size: 1,
            queue_length_limit: 3,
        };
        let l = level(1, Some(q));
        let m = metrics();
        let Entered::Now(mut running) = l.enter(1, 1, &m) else {
            panic!("a free seat");
        };
        // It runs for a second (as its queue will be charged when it ends).
        running.started -= Duration::from_secs(1);
        // Flow 1 queues 3 requests; its fourth is refused.
        let mut flood: Vec<Ticket> = (0..3)
            .map(|_| match l.enter(1, 1, &m) {
                Entered::Queued(t) => t,
                _ => panic!("queued"),
            })
            .collect();
        assert!(matches!(l.enter(1, 1, &m), Entered::Refused(Reason::QueueFull, _)));
        // Another flow (another queue) is served before flow 1's queued requests: flow 1 was charged for the
        // request it runs.
        let other_flow = (2..).find(|f| deal(*f, 64, 1) != deal(1, 64, 1)).unwrap();
        let Entered::Queued(mut other) = l.enter(other_flow, 1, &m) else {
            panic!("queued");
        };
        drop(running);
        let seat = other.rx.try_recv();
        assert!(seat.is_ok(), "the other flow's request got the seat");
        assert!(flood.iter_mut().all(|t| t.rx.try_recv().is_err()));
        assert_eq!(l.usage(), (3, 1));
    }

    #[tokio::test]
    async fn a_request_that_waits_too_long_is_refused_and_leaves_its_queue() {
        let q = Queuing {
            queues: 1,
            hand_size: 1,
            queue_length_limit: 10,
        };
        let l = level(1, Some(q));
        let m = metrics();
        let Entered::Now(_running) = l.enter(1, 1, &m) else {
            panic!("a free seat");
        };
        let Entered::Queued(t) = l.enter(1, 1, &m) else {
            panic!("queued");
        };
        assert_eq!(t.wait(Duration::from_millis(1)).await.err(), Some((Reason::TimeOut, 1)));
        assert_eq!(l.usage(), (0, 1));
        assert_eq!(m.in_queue.get(), 0);
        // A request whose client leaves (its wait dropped) leaves its queue at once.
        let Entered::Queued(t) = l.enter(1, 1, &m) else {
            panic!("queued");
        };
        assert_eq!(l.usage(), (1, 1));
        drop(t);
        assert_eq!((l.usage(), m.in_queue.get()), ((0, 1), 0));
    }

    #[tokio::test]
    async fn wide_requests_wait_for_their_seats_and_a_wider_one_than_the_limit_runs_alone() {
        let l = level(
            4,
            Some(Queuing {
                queues: 1,
                hand_size: 1,
                queue_length_limit: 10,
            }),
        );
        let m = metrics();
        let Entered::Now(a) = l.enter(1, 3, &m) else { panic!() };
        let Entered::Queued(mut b) = l.enter(1, 2, &m) else {
            panic!()
        };
        assert!(b.rx.try_recv().is_err(), "3 + 2 seats do not fit in 4");
        drop(a);
        let seat = b.rx.try_recv().expect("dispatched once the 3 seats came back");
        assert_eq!(l.usage(), (0, 2));
        drop(seat);
        l.set_limit(1);
        // Alone, a request wider than the limit runs (it would never fit otherwise).
        assert!(matches!(l.enter(1, 3, &m), Entered::Now(_)));
    }

    #[test]
    fn retry_after_doubles_under_a_storm_of_refusals_and_shrinks_after() {
        let t0 = Instant::now();
        let mut r = RetryAfter::new(t0);
        let at = |s: u64| t0 + Duration::from_secs(s);
        for _ in 0..10 {
            r.refused(at(0));
        }
        assert_eq!(r.refused(at(1)), 2, "10 refusals in 1 s: doubled");
        for _ in 0..20 {
            r.refused(at(2));
        }
        assert_eq!(r.refused(at(3)), 4);
        assert_eq!(r.refused(at(20)), 3, "quiet: one second less");
    }
}
