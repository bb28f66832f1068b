//! Property tests of the adaptive throttle (ADR 1000, 1004), through the public `Engine` API:
//! random options (multiplier 1 to 100, windows from 1 s to 24.8 days, any highest refusal
//! probability), random calls settled with any verdict and any evidence the throttle reads
//! (`settle_seen`: a 503 without `Retry-After` is an `Overload` the throttle reads as a
//! `Failure`), retries decided before their wait, passes granted to them, and a clock that jumps
//! forwards a lot, stands still or, in half the runs, goes backwards. A model keeps every event
//! the throttle should count, with its time. After every step:
//!
//! - nothing panics, and `accepts ≤ requests`;
//! - the refusal probability is in `[0, maxRejection]`, so below 1, and is exactly
//!   `clamp((requests − K × accepts) / (requests + 1), 0, maxRejection)` of the window's counts
//!   (0 under 5 requests) while an overload is in the window, and 0 once none is;
//! - only a refusal is evidence: the window starts at the first `Overload` the throttle reads,
//!   and a call is refused here only while the probability is above 0;
//! - each settle counts as the model says: `Overload` a request, `Rejected` and `Cancelled`
//!   nothing, any other verdict a request and an accept; a call refused here a request;
//! - the window's counts are those of the model's last window, to a bucket;
//! - a retry given a pass is not refused by the throttle at its acquire.
//!
//! A second property checks that the share of calls refused follows the probability (within 6
//! standard deviations), and a third that bad options are refused with an error naming them.
//!
//! With a clock that went backwards, an event counts in the newest bucket, the one of the
//! latest time the window slid to (a draw slides it too): those runs check everything but the
//! exact change of the counts on a settle and their bounds by the model.

use proptest::prelude::*;
use resilix_engine::{
    Acquired, Decision, Engine, KeyHandle, PolicyOptions, Refusal, RegistryOptions, RejectReason,
    RetryPolicy, ThrottleOptions, Verdict, NANOS_PER_MS,
};
use steps::{cases, first_attempt, step_ns, tick};

#[path = "support/steps.rs"]
mod steps;

const MAX_MS: u64 = 2_147_483_647;
const BUCKETS: u64 = 20;
const MIN_REQUESTS: u64 = 5;

#[derive(Clone, Debug)]
enum Op {
    Acquire,
    AcquireWithPass,
    Settle(usize, Verdict, Verdict),
    Retry(Verdict),
    Tick(u64, bool),
}

fn verdict() -> impl Strategy<Value = Verdict> {
    (0usize..7).prop_map(|i| Verdict::ALL[i])
}

fn throttle() -> impl Strategy<Value = ThrottleOptions> {
    (
        prop_oneof![Just(1.0f64), 1.0f64..3.0, Just(100.0)],
        prop_oneof![Just(1_000u64), 1_000u64..60_000, Just(MAX_MS)],
        prop_oneof![Just(1.0f64), 0.05f64..1.0, Just(f64::MIN_POSITIVE)],
    )
        .prop_map(|(multiplier, window_ms, max_rejection)| ThrottleOptions {
            multiplier,
            window_ms,
            max_rejection,
        })
}

fn op() -> impl Strategy<Value = Op> {
    // Overloads often: the throttle must engage to be tested.
    let seen = prop_oneof![3 => Just(Verdict::Overload), 4 => verdict()];
    prop_oneof![
        6 => Just(Op::Acquire),
        1 => Just(Op::AcquireWithPass),
        6 => (any::<usize>(), verdict(), seen).prop_map(|(i, v, s)| Op::Settle(i, v, s)),
        1 => verdict().prop_map(Op::Retry),
        3 => (
            step_ns(2_000, 120_000),
            any::<bool>()
        )
            .prop_map(|(d, back)| Op::Tick(d, back)),
    ]
}

/// The refusal probability of the window's counts, as documented.
fn formula(o: &ThrottleOptions, (r, a): (u64, u64)) -> f64 {
    if r < MIN_REQUESTS {
        return 0.0;
    }
    let (r, a) = (r as f64, a as f64);
    ((r - o.multiplier * a) / (r + 1.0)).clamp(0.0, o.max_rejection)
}

struct Harness {
    engine: Engine,
    key: KeyHandle,
    opts: ThrottleOptions,
    now: u64,
    /// The latest time of an event the window counted: a later one counts at its own time,
    /// an earlier one (a clock that went back) in the newest bucket.
    latest: u64,
    monotonic: bool,
    /// Events the window should count: (time, accepted).
    events: Vec<(u64, bool)>,
    /// The last overload read, at the latest time then.
    last_overload: Option<u64>,
    /// The latest time the window may have slid to: a draw slides it without counting.
    drawn: u64,
    /// The last overload read, at the latest time the window may have slid to then.
    last_overload_late: Option<u64>,
    /// Calls running: permit and start.
    running: Vec<(u64, u64)>,
}

impl Harness {
    fn state(&mut self) -> (f64, (u64, u64)) {
        let now = self.now;
        self.engine
            .policies_mut(self.key)
            .unwrap()
            .throttle_state(now)
    }

    fn window_ns(&self) -> u64 {
        self.opts.window_ms * NANOS_PER_MS
    }

    fn count(&mut self, at: u64, accepted: bool) {
        self.latest = self.latest.max(at);
        self.events.push((self.latest, accepted));
    }

    /// A call refused here: one request more, at the same time.
    fn refused(&mut self, before: (f64, (u64, u64))) {
        assert!(before.0 > 0.0, "refused at probability {}", before.0);
        self.count(self.now, false);
        if self.monotonic {
            let (_, (r, a)) = self.state();
            assert_eq!((r, a), (before.1 .0 + 1, before.1 .1), "a refusal counted");
        }
    }

    fn acquire(&mut self, pass: bool) {
        if pass {
            self.engine.grant_throttle_pass(self.key, self.now).unwrap();
        }
        let before = self.state();
        if !pass {
            self.drawn = self.drawn.max(self.now);
        }
        match self.engine.acquire(self.key, self.now).unwrap() {
            Acquired::Permit(id) => {
                self.running.push((id, self.now));
                assert_eq!(self.state().1, before.1, "an admission counted");
            }
            Acquired::Rejected(RejectReason::Throttle) => {
                assert!(!pass, "a retry given a pass was refused");
                self.refused(before);
            }
            other => panic!("throttle alone answered {other:?}"),
        }
    }

    fn step(&mut self, op: &Op) {
        match op {
            Op::Tick(d, back) => {
                self.now = tick(self.now, *d, *back, self.monotonic);
            }
            Op::Acquire => self.acquire(false),
            Op::AcquireWithPass => self.acquire(true),
            Op::Settle(i, v, seen) => {
                if self.running.is_empty() {
                    return;
                }
                let (id, start) = self.running.swap_remove(i % self.running.len());
                // A settle counts at its end, never before its start.
                let end = self.now.max(start);
                let before = self.state();
                self.engine
                    .settle_seen(self.key, id, *v, *seen, self.now)
                    .unwrap()
                    .expect("a live permit settles");
                let (r, a) = before.1;
                let expect = if *seen == Verdict::Overload {
                    self.count(end, false);
                    self.last_overload = Some(self.latest);
                    self.last_overload_late = Some(self.latest.max(self.drawn));
                    (r + 1, a)
                } else if self.last_overload.is_none() || seen.is_ignored() {
                    (r, a)
                } else {
                    self.count(end, true);
                    (r + 1, a + 1)
                };
                if self.monotonic {
                    assert_eq!(self.state().1, expect, "settled as {seen:?}");
                }
            }
            Op::Retry(v) => {
                let before = self.state();
                self.drawn = self.drawn.max(self.now);
                let policy = RetryPolicy {
                    max_attempts: 10,
                    ..RetryPolicy::default()
                };
                let s = first_attempt(*v);
                let d = self.engine.retry(self.key, &policy, &s, self.now).unwrap();
                if d == Decision::Stop(Refusal::Throttle) {
                    self.refused(before);
                } else {
                    assert_eq!(self.state().1, before.1, "a retry not refused counted");
                }
            }
        }
        self.check();
    }

    fn check(&mut self) {
        let (p, (r, a)) = self.state();
        assert!(a <= r, "{a} accepts of {r} requests");
        assert!(
            (0.0..=self.opts.max_rejection).contains(&p) && p < 1.0,
            "probability {p}"
        );
        let w = self.window_ns();
        let bucket = (w / BUCKETS).max(1);
        // In the window for sure, or left it for sure (the window slides by buckets).
        let live = self
            .last_overload
            .is_some_and(|t| self.now < t.saturating_add(w - bucket));
        let gone = self
            .last_overload_late
            .is_none_or(|t| self.now >= t.saturating_add(w));
        if live {
            assert_eq!(p, formula(&self.opts, (r, a)), "engaged at ({r}, {a})");
        } else if gone {
            assert_eq!(p, 0.0, "no overload in the window, yet probability {p}");
        } else {
            assert!(p == 0.0 || p == formula(&self.opts, (r, a)));
        }
        if self.monotonic {
            let count = |span: u64, accepted: bool| {
                let from = self.now.checked_sub(span);
                self.events
                    .iter()
                    .filter(|(t, ok)| from.is_none_or(|f| *t > f) && (*ok || !accepted))
                    .count() as u64
            };
            assert!(
                r >= count(w - bucket, false) && r <= count(w, false),
                "requests {r}"
            );
            assert!(
                a >= count(w - bucket, true) && a <= count(w, true),
                "accepts {a}"
            );
        }
    }
}

fn engine(opts: ThrottleOptions, seed: u64) -> Engine {
    let policies = PolicyOptions {
        breaker: None,
        limiter: None,
        bulkhead: None,
        throttle: Some(opts),
        quota: None,
    };
    Engine::new(policies, RegistryOptions::default(), seed).expect("valid options")
}

fn run(opts: ThrottleOptions, seed: u64, start: u64, monotonic: bool, ops: &[Op]) {
    let mut engine = engine(opts, seed);
    let key = engine.resolve("k", start).unwrap().handle;
    let mut h = Harness {
        engine,
        key,
        opts,
        now: start,
        latest: start,
        monotonic,
        events: Vec::new(),
        last_overload: None,
        drawn: start,
        last_overload_late: None,
        running: Vec::new(),
    };
    for op in ops {
        h.step(op);
    }
    while !h.running.is_empty() {
        h.step(&Op::Settle(0, Verdict::Success, Verdict::Success));
    }
    // Long after the last overload, nothing is refused any more.
    h.now = h
        .latest
        .max(h.drawn)
        .max(h.now)
        .saturating_add(h.window_ns());
    if h.now < u64::MAX {
        assert_eq!(h.state().0, 0.0);
        for _ in 0..20 {
            h.acquire(false);
        }
    }
}

/// 2 000 cases of up to 300 steps: 1 to 3 s in the dev profile
/// on a 2-core machine at load 6 to 8.
/// `PROPTEST_CASES=20000 cargo test -p resilix-engine --test properties_throttle` for a longer hunt.
const CASES: u32 = 2_000;

fn real() -> impl Strategy<Value = f64> {
    prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(f64::NEG_INFINITY),
        Just(-1.0),
        Just(0.0),
        Just(f64::MIN_POSITIVE),
        Just(0.5),
        Just(1.0),
        Just(1.5),
        Just(100.0),
        Just(100.5),
        Just(f64::MAX),
        any::<f64>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(CASES), max_shrink_iters: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn throttle_follows_its_formula_under_random_operations(
        opts in throttle(),
        seed in any::<u64>(),
        start in prop_oneof![Just(0u64), Just(1u64), 1u64..u64::MAX / 4],
        monotonic in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run(opts, seed, start, monotonic, &ops);
    }

}

proptest! {
    // A statistical check: 200 cases, each wrong by chance once in 5 × 10^8 (6 standard
    // deviations), so that a run fails by chance about once in 2 million.
    #![proptest_config(ProptestConfig { cases: 200, max_shrink_iters: 200, ..ProptestConfig::default() })]

    /// Over a run of calls in one window, the number refused is the sum of the probabilities
    /// each met, within 6 standard deviations.
    #[test]
    fn the_share_refused_follows_the_probability(
        opts in throttle(),
        seed in any::<u64>(),
        overload in 0.3f64..1.0,
    ) {
        let mut e = engine(opts, seed);
        let k = e.resolve("k", 1).unwrap().handle;
        let mut pick = resilix_engine::SplitMix64::new(seed ^ 0x5eed);
        let (mut expected, mut variance, mut refused) = (0.0, 0.0, 0u32);
        for i in 0..3_000u64 {
            // All within the first bucket of the window: nothing leaves it.
            let now = 1 + i;
            let p = e.policies_mut(k).unwrap().throttle_state(now).0;
            expected += p;
            variance += p * (1.0 - p);
            match e.acquire(k, now).unwrap() {
                Acquired::Permit(id) => {
                    let v = if pick.next_f64() < overload { Verdict::Overload } else { Verdict::Success };
                    e.settle(k, id, v, now).unwrap().unwrap();
                }
                Acquired::Rejected(RejectReason::Throttle) => refused += 1,
                other => panic!("{other:?}"),
            }
        }
        let off = (refused as f64 - expected).abs();
        prop_assert!(off <= 6.0 * variance.sqrt() + 2.0, "{} refused, {:.1} expected (variance {:.1})", refused, expected, variance);
    }

}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(CASES), max_shrink_iters: 4_000, ..ProptestConfig::default() })]

    /// Any multiplier, window or highest probability out of range is an error naming the
    /// option, never a panic.
    #[test]
    fn bad_throttle_options_are_refused(
        multiplier in real(),
        window_ms in prop_oneof![Just(0u64), Just(999u64), Just(1_000u64), Just(MAX_MS), Just(MAX_MS + 1), Just(u64::MAX)],
        max_rejection in real(),
    ) {
        let o = ThrottleOptions { multiplier, window_ms, max_rejection };
        let ok = multiplier.is_finite() && (1.0..=100.0).contains(&multiplier)
            && (1_000..=MAX_MS).contains(&window_ms)
            && max_rejection.is_finite() && max_rejection > 0.0 && max_rejection <= 1.0;
        let policies = PolicyOptions { throttle: Some(o), ..PolicyOptions::default() };
        match Engine::new(policies, RegistryOptions::default(), 1) {
            Ok(_) => prop_assert!(ok, "accepted {:?}", o),
            Err(e) => {
                prop_assert!(!ok, "refused valid {:?}: {}", o, e);
                prop_assert!(e.option.starts_with("throttle."), "{}", e.option);
                prop_assert!(e.message.contains(e.option), "{}", e.message);
            }
        }
    }
}
