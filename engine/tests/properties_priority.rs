//! Property tests of priorities in the limiter's queue (ADR 1001), through the public `Engine`
//! API: random limiters and queues, calls of random levels (all 20, and out-of-range ones)
//! with random deadlines, waiters admitted as the binding admits them (the oldest of the
//! highest level waiting), waiters giving up or refused late, settles of any verdict, a breaker
//! in some runs (asked again when a waiter is admitted: refused, it leaves the queue), and a
//! clock that jumps forwards, stands still or goes backwards. A model keeps the waiters in one
//! FIFO per level and the calls in flight. After every step:
//!
//! - nothing panics; the calls waiting and in flight, in all and by class, equal the model's;
//! - the highest level waiting is the model's, so a call is never admitted from the queue while
//!   a call of a higher level waits, and within a level the oldest goes first;
//! - a new call runs at once only when nobody waits: it never passes a waiter of any level;
//! - a waiter is admitted only within the limit;
//! - a standing queue sheds a call only when its own ramp says so: the calls in flight and the
//!   waiters at its level or above reach `initialFactor × limit`. However many lower calls wait,
//!   a higher call is never shed for them (critical is never shed because sheddable calls
//!   queue);
//! - a full queue refuses only at `maxQueued` waiters; a deadline refusal only for a call with
//!   a deadline;
//! - a waiter leaves once: leaving a level nobody waits at is refused, and nothing changes.

use std::collections::VecDeque;
use steps::{algorithm, cases, tick};

#[path = "support/steps.rs"]
mod steps;

use proptest::prelude::*;
use resilix_engine::priority::{class_of, LEVELS};
use resilix_engine::{
    Acquired, BreakerOptions, Engine, KeyHandle, LimiterOptions, PolicyOptions, QueueOptions,
    QueueRefusal, RegistryOptions, RejectReason, Verdict, NANOS_PER_MS,
};

#[derive(Clone, Debug)]
enum Op {
    Acquire(u8, u64),
    Admit,
    Leave(usize),
    LeaveNobody(u8),
    RefuseLate(usize, u64),
    Settle(usize, Verdict),
    Tick(u64, bool),
}

fn verdict() -> impl Strategy<Value = Verdict> {
    (0usize..7).prop_map(|i| Verdict::ALL[i])
}

fn level() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => 0u8..4,
        3 => 16u8..LEVELS as u8,
        4 => 0u8..LEVELS as u8,
        1 => LEVELS as u8..=u8::MAX
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let budget = prop_oneof![
        Just(u64::MAX),
        0u64..500 * NANOS_PER_MS,
        0u64..30_000 * NANOS_PER_MS
    ];
    prop_oneof![
        8 => (level(), budget.clone()).prop_map(|(l, b)| Op::Acquire(l, b)),
        4 => Just(Op::Admit),
        1 => any::<usize>().prop_map(Op::Leave),
        1 => level().prop_map(Op::LeaveNobody),
        1 => (any::<usize>(), budget).prop_map(|(i, b)| Op::RefuseLate(i, b)),
        5 => (any::<usize>(), verdict()).prop_map(|(i, v)| Op::Settle(i, v)),
        3 => (
            prop_oneof![
                4 => 0u64..300 * NANOS_PER_MS,
                1 => Just(0u64),
                1 => 0u64..3_600_000 * NANOS_PER_MS
            ],
            prop_oneof![5 => Just(false), 1 => Just(true)]
        )
            .prop_map(|(d, back)| Op::Tick(d, back)),
    ]
}

fn limiter() -> impl Strategy<Value = LimiterOptions> {
    let algorithm = algorithm();
    let queue = prop_oneof![
        1 => Just(None),
        4 => (1.0f64..4.0, 0.0f64..3.0, prop_oneof![1u32..4, 4u32..200, Just(20_000u32)])
            .prop_map(|(i, d, max_queued)| Some(QueueOptions { initial_factor: i, max_factor: i + d, max_queued })),
        1 => Just(Some(QueueOptions { initial_factor: 1.0, max_factor: 1.0, max_queued: 20_000 })),
    ];
    (algorithm, 1u32..4, 0u32..8, queue).prop_map(|(algorithm, min, spread, queue)| {
        LimiterOptions {
            algorithm,
            min_limit: min,
            max_limit: min + spread,
            initial_limit: min,
            queue,
            window_min_ms: 10,
            window_max_ms: 100,
            min_samples: 2,
            ..LimiterOptions::default()
        }
    })
}

fn clamp(level: u8) -> u8 {
    level.min(LEVELS as u8 - 1)
}

struct Harness {
    engine: Engine,
    key: KeyHandle,
    opts: LimiterOptions,
    breaker: bool,
    now: u64,
    /// Waiters by level, oldest first: (arrival, deadline).
    waiting: Vec<VecDeque<(u64, u64)>>,
    arrivals: u64,
    running: Vec<u64>,
}

impl Harness {
    fn waiters(&self) -> usize {
        self.waiting.iter().map(VecDeque::len).sum()
    }

    fn at_or_above(&self, level: u8) -> usize {
        self.waiting[clamp(level) as usize..]
            .iter()
            .map(VecDeque::len)
            .sum()
    }

    fn highest(&self) -> Option<u8> {
        (0..LEVELS)
            .rev()
            .find(|&l| !self.waiting[l].is_empty())
            .map(|l| l as u8)
    }

    /// The waiter `i` in arrival order: (level, place in its level).
    fn nth_waiter(&self, i: usize) -> Option<(u8, usize)> {
        let mut all: Vec<(u64, u8, usize)> = Vec::new();
        for (l, q) in self.waiting.iter().enumerate() {
            for (j, (arrival, _)) in q.iter().enumerate() {
                all.push((*arrival, l as u8, j));
            }
        }
        if all.is_empty() {
            return None;
        }
        all.sort();
        let (_, l, j) = all[i % all.len()];
        Some((l, j))
    }

    fn step(&mut self, op: &Op) {
        let (k, now) = (self.key, self.now);
        match op {
            Op::Tick(d, back) => {
                self.now = tick(now, *d, *back, false);
            }
            Op::Acquire(level, budget) => {
                let nobody = self.waiters() == 0;
                let a = self.engine.acquire_at(k, now, *budget, *level, 0).unwrap();
                match a {
                    Acquired::Permit(id) => {
                        assert!(
                            nobody,
                            "a new call at {level} passed {} waiters",
                            self.waiters()
                        );
                        self.running.push(id);
                    }
                    Acquired::Queued => {
                        assert!(self.opts.queue.is_some(), "queued without a queue");
                        self.arrivals += 1;
                        let deadline = now.saturating_add(*budget);
                        self.waiting[clamp(*level) as usize].push_back((self.arrivals, deadline));
                    }
                    Acquired::Rejected(RejectReason::Queue) => {
                        let q = self.opts.queue.expect("a queue refusal without a queue");
                        let (cause, max_queued) = self.engine.last_queue_refusal(k).unwrap();
                        let s = self.engine.stats(k, now).unwrap();
                        match cause {
                            QueueRefusal::Full => {
                                assert!(
                                    self.waiters() >= max_queued as usize,
                                    "full at {}",
                                    self.waiters()
                                )
                            }
                            QueueRefusal::Deadline => assert_ne!(*budget, u64::MAX),
                            QueueRefusal::Standing => {
                                // Its own ramp: in flight and the waiters it would wait behind.
                                let outstanding = self.running.len() + self.at_or_above(*level);
                                // The ramp's start, as the limiter keeps the factor (an f32).
                                let start = (q.initial_factor as f32) as f64 * s.limit as f64;
                                assert!(
                                    outstanding as f64 >= start,
                                    "level {level} shed with {outstanding} outstanding under \
                                     {start} ({} waiting in all, limit {})",
                                    self.waiters(),
                                    s.limit
                                );
                            }
                            QueueRefusal::Turn => panic!("a new call refused at its turn"),
                        }
                    }
                    Acquired::Rejected(RejectReason::Limit) => {
                        assert!(
                            self.opts.queue.is_none(),
                            "refused at the limit with a queue"
                        );
                    }
                    Acquired::Rejected(RejectReason::Breaker) => {
                        assert!(self.breaker, "a breaker refusal without a breaker")
                    }
                    Acquired::Rejected(r) => panic!("refused with {r:?}"),
                }
            }
            Op::Admit => {
                // As the binding: the oldest waiter of the highest level waiting.
                let Some(level) = self.engine.highest_waiting(k).unwrap() else {
                    return;
                };
                match self.engine.admit_queued_at(k, now, level, 0).unwrap() {
                    Some(Acquired::Permit(id)) => {
                        self.waiting[level as usize]
                            .pop_front()
                            .expect("a waiter at the level");
                        self.running.push(id);
                        let s = self.engine.stats(k, now).unwrap();
                        assert!(
                            s.inflight <= s.limit.max(1),
                            "{} in flight over {}",
                            s.inflight,
                            s.limit
                        );
                    }
                    None => {}
                    // The breaker is asked again at admission: the waiter leaves, refused.
                    Some(Acquired::Rejected(RejectReason::Breaker)) => {
                        assert!(self.breaker, "a breaker refusal without a breaker");
                        self.waiting[level as usize]
                            .pop_front()
                            .expect("a waiter at the level");
                    }
                    Some(other) => panic!("admitted as {other:?}"),
                }
            }
            Op::Leave(i) => {
                let Some((level, j)) = self.nth_waiter(*i) else {
                    return;
                };
                self.waiting[level as usize].remove(j);
                assert!(
                    self.engine.leave_queue_at(k, level).unwrap(),
                    "a waiter could not leave"
                );
            }
            Op::LeaveNobody(level) => {
                if !self.waiting[clamp(*level) as usize].is_empty() {
                    return;
                }
                assert!(
                    !self.engine.leave_queue_at(k, *level).unwrap(),
                    "left an empty level"
                );
            }
            Op::RefuseLate(i, budget) => {
                let Some((level, j)) = self.nth_waiter(*i) else {
                    return;
                };
                let ahead = self.at_or_above(level.saturating_add(1)) + j;
                let deadline = now.saturating_add(*budget).max(1);
                let r = self
                    .engine
                    .refuse_late_waiter(k, now, level, ahead as u32, deadline)
                    .unwrap();
                if r == Some(true) {
                    self.waiting[level as usize].remove(j);
                }
            }
            Op::Settle(i, v) => {
                if self.running.is_empty() {
                    return;
                }
                let id = self.running.swap_remove(i % self.running.len());
                let wake = self
                    .engine
                    .settle(k, id, *v, now)
                    .unwrap()
                    .expect("live permit");
                assert!(
                    wake as usize <= self.waiters(),
                    "{wake} wakeable of {}",
                    self.waiters()
                );
            }
        }
        self.check();
    }

    fn check(&self) {
        let s = self.engine.stats(self.key, self.now).unwrap();
        assert_eq!(s.queued as usize, self.waiters(), "waiting");
        assert_eq!(s.inflight as usize, self.running.len(), "in flight");
        let mut by_class = [0u32; 5];
        for (l, q) in self.waiting.iter().enumerate() {
            by_class[class_of(l as u8) as usize] += q.len() as u32;
        }
        assert_eq!(s.queued_by_priority, by_class, "waiting by class");
        assert_eq!(
            self.engine.highest_waiting(self.key).unwrap(),
            self.highest(),
            "highest level"
        );
    }
}

fn run(opts: LimiterOptions, breaker: bool, seed: u64, start: u64, ops: &[Op]) {
    // A breaker that opens quickly and half-opens soon: it refuses new calls and waiters alike.
    let breaker_opts = BreakerOptions {
        minimum_calls: 2,
        window_ms: 1_000,
        consecutive_failures: 2,
        open_ms: 200,
        half_open_probes: 1,
        ..BreakerOptions::default()
    };
    let policies = PolicyOptions {
        breaker: breaker.then_some(breaker_opts),
        limiter: Some(opts),
        bulkhead: None,
        throttle: None,
        quota: None,
    };
    let mut engine = Engine::new(policies, RegistryOptions::default(), seed).expect("valid");
    let key = engine.resolve("k", start).unwrap().handle;
    let mut h = Harness {
        engine,
        key,
        opts,
        breaker,
        now: start,
        waiting: vec![VecDeque::new(); LEVELS],
        arrivals: 0,
        running: Vec::new(),
    };
    for op in ops {
        h.step(op);
    }
    // Drain: every waiter is admitted in order as calls settle, or leaves; nothing is left.
    let mut guard = 0;
    while h.waiters() > 0 || !h.running.is_empty() {
        guard += 1;
        assert!(guard < 100_000, "the queue never drained");
        if h.running.is_empty() || guard % 3 == 0 {
            h.step(&Op::Admit);
        }
        if guard > 50_000 {
            h.step(&Op::Leave(0));
        }
        if !h.running.is_empty() {
            h.step(&Op::Settle(0, Verdict::Success));
        }
        h.now = h.now.saturating_add(NANOS_PER_MS);
    }
    let s = h.engine.stats(key, h.now).unwrap();
    assert_eq!((s.inflight, s.queued, s.queued_by_priority), (0, 0, [0; 5]));
}

/// 1 500 cases of up to 300 steps: 1 to 3 s in the dev profile
/// on a 2-core machine at load 6 to 8.
/// `PROPTEST_CASES=20000 cargo test -p resilix-engine --test properties_priority` for a longer hunt.
const CASES: u32 = 1_500;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(CASES), max_shrink_iters: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn levels_order_the_queue_under_random_operations(
        opts in limiter(),
        breaker in proptest::bool::weighted(0.3),
        seed in any::<u64>(),
        start in prop_oneof![Just(0u64), Just(1u64), 1u64..u64::MAX / 4],
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run(opts, breaker, seed, start, &ops);
    }
}
