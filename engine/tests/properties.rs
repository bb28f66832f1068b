//! Property tests of the engine, against the public `Engine` API only, so they keep
//! holding whatever the limit algorithms become.
//!
//! Random option sets (including extremes: min = max = 1, limits up to the cap, 1 ms windows,
//! every policy on or off) and random sequences of resolve, acquire, admit_queued, leave_queue,
//! mark and settle (any verdict, stale / double / random permit ids, old key handles), with the
//! clock jumping forwards a lot, standing still, or going backwards. A model tracks what was
//! admitted and not yet settled, per key. After every step:
//!
//! - nothing panics;
//! - `inflight` and `queued` equal the model (so never negative, never leaked);
//! - the limiter's own inflight equals the permit count, the bulkhead's equals it too;
//! - the limit is within [minLimit, maxLimit];
//! - a permit settles once: a second settle, or any id never issued, is `StalePermit`;
//! - a key is evicted only when idle (nothing in flight, nobody waiting), and a key protecting
//!   its upstream only while idle protecting keys hold half of `maxKeys` or more;
//! - a stale key handle is refused (`StaleHandle`), never aliased to another key.
//!
//! A second property drives a lone `Breaker`: only legal transitions (closed→open, open→half-open,
//! half-open→open/closed), at most one per call, open refuses, half-open never has more current
//! probes out than `halfOpenProbes`, window counts stay consistent.

use std::collections::HashMap;
use steps::{algorithm, cases};

#[path = "support/steps.rs"]
mod steps;

use proptest::prelude::*;
use resilix_engine::{
    Acquired, BreakerOptions, BulkheadOptions, Engine, KeyHandle, LimiterOptions, PolicyOptions,
    QueueOptions, RegistryError, RegistryOptions, Verdict, Worth, NANOS_PER_MS,
};

const KEYS: usize = 6;

#[derive(Clone, Debug)]
enum Clock {
    Small(u64),
    Zero,
    Large(u64),
    Back(u64),
}

#[derive(Clone, Debug)]
enum Op {
    Acquire(usize),
    AdmitQueued(usize),
    LeaveQueue(usize),
    Mark(usize, usize),
    Settle(usize, usize, Verdict),
    SettleAgain(usize, usize, Verdict),
    SettleRandom(usize, u64, Verdict),
    OldHandle(usize),
    Tick(Clock),
}

fn verdict() -> impl Strategy<Value = Verdict> {
    (0usize..7).prop_map(|i| Verdict::ALL[i])
}

fn clock() -> impl Strategy<Value = Clock> {
    prop_oneof![
        4 => (0u64..200 * NANOS_PER_MS).prop_map(Clock::Small),
        1 => Just(Clock::Zero),
        1 => (0u64..48 * 3_600_000 * NANOS_PER_MS).prop_map(Clock::Large),
        1 => (0u64..120_000 * NANOS_PER_MS).prop_map(Clock::Back),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let k = 0..KEYS;
    prop_oneof![
        6 => k.clone().prop_map(Op::Acquire),
        2 => k.clone().prop_map(Op::AdmitQueued),
        1 => k.clone().prop_map(Op::LeaveQueue),
        2 => (k.clone(), any::<usize>()).prop_map(|(k, i)| Op::Mark(k, i)),
        5 => (k.clone(), any::<usize>(), verdict()).prop_map(|(k, i, v)| Op::Settle(k, i, v)),
        1 => (k.clone(), any::<usize>(), verdict()).prop_map(|(k, i, v)| Op::SettleAgain(k, i, v)),
        1 => (k.clone(), any::<u64>(), verdict()).prop_map(|(k, id, v)| Op::SettleRandom(k, id, v)),
        1 => any::<usize>().prop_map(Op::OldHandle),
        3 => clock().prop_map(Op::Tick),
    ]
}

fn ms_opt() -> impl Strategy<Value = u64> {
    prop_oneof![Just(1u64), 1u64..50, 50u64..5_000, Just(2_147_483_647u64)]
}

fn limiter() -> impl Strategy<Value = LimiterOptions> {
    let algorithm = algorithm();
    let bounds = prop_oneof![
        Just((1u32, 1u32)),
        (1u32..6, 0u32..6).prop_map(|(a, d)| (a, a + d)),
        (1u32..50, 0u32..300).prop_map(|(a, d)| (a, a + d)),
        Just((1u32, 1_000_000u32)),
        Just((1_000_000u32, 1_000_000u32)),
    ];
    let queue = prop_oneof![
        1 => Just(None),
        3 => (1.0f64..4.0, 0.0f64..3.0).prop_map(|(i, d)| Some(QueueOptions { initial_factor: i, max_factor: i + d, max_queued: 20_000 })),
        1 => Just(Some(QueueOptions { initial_factor: 1.0, max_factor: 1.0, max_queued: 20_000 })),
    ];
    (
        algorithm,
        bounds,
        any::<u32>(),
        queue,
        ms_opt(),
        ms_opt(),
        1u32..60,
        0u64..200,
        0.05f64..1.0,
    )
        .prop_map(
            |(algorithm, (min, max), init, queue, w1, w2, min_samples, update, frac)| {
                LimiterOptions {
                    algorithm,
                    min_limit: min,
                    max_limit: max,
                    initial_limit: min + init % (max - min + 1),
                    queue,
                    window_min_ms: w1.min(w2),
                    window_max_ms: w1.max(w2),
                    min_samples,
                    update_interval_ms: update,
                    smoothing: frac,
                    quantile: frac,
                    backoff_ratio: frac.min(0.99),
                    ..LimiterOptions::default()
                }
            },
        )
}

fn breaker() -> impl Strategy<Value = BreakerOptions> {
    (
        0.01f64..1.0,
        0.01f64..1.0,
        ms_opt(),
        1u32..30,
        10u64..60_000,
        1u32..8,
        ms_opt(),
        1u32..5,
    )
        .prop_map(
            |(
                failure_rate,
                slow_call_rate,
                slow_call_ms,
                minimum_calls,
                window_ms,
                consecutive_failures,
                open_ms,
                probes,
            )| {
                BreakerOptions {
                    failure_rate,
                    slow_call_rate,
                    slow_call_ms,
                    minimum_calls,
                    window_ms,
                    consecutive_failures,
                    open_ms: open_ms.min(60_000),
                    half_open_probes: probes,
                }
            },
        )
}

fn policies() -> impl Strategy<Value = PolicyOptions> {
    (
        proptest::option::weighted(0.7, breaker()),
        proptest::option::weighted(0.85, limiter()),
        proptest::option::weighted(
            0.4,
            (1u32..6).prop_map(|max_concurrent| BulkheadOptions { max_concurrent }),
        ),
    )
        .prop_map(|(breaker, limiter, bulkhead)| PolicyOptions {
            breaker,
            limiter,
            bulkhead,
            throttle: None,
            quota: None,
        })
}

/// What the test believes one key holds.
#[derive(Default)]
struct KeyModel {
    live: Vec<u64>,
    settled: Vec<u64>,
    queued: u32,
}

struct Harness {
    engine: Engine,
    opts: PolicyOptions,
    now: u64,
    models: HashMap<String, KeyModel>,
    /// Every handle ever returned, with its key name.
    handles: Vec<(String, KeyHandle)>,
    /// The handle each live key was last resolved to.
    current: HashMap<String, KeyHandle>,
}

fn name(k: usize) -> String {
    format!("key-{k}")
}

impl Harness {
    /// Resolve like the binding does; checks the eviction invariant. `None`: registry full.
    fn resolve(&mut self, k: usize) -> Option<KeyHandle> {
        let name = name(k);
        let before: Vec<String> = self.engine.keys().map(str::to_owned).collect();
        let protecting: Vec<bool> = before
            .iter()
            .map(|n| self.engine.registry().worth_of(n, self.now) == Some(Worth::Protecting))
            .collect();
        let idle = |m: Option<&KeyModel>| m.is_none_or(|m| m.live.is_empty() && m.queued == 0);
        // Idle protecting keys may be evicted only while they hold half of maxKeys or more.
        let idle_protecting = before
            .iter()
            .zip(&protecting)
            .filter(|(n, p)| **p && idle(self.models.get(*n)))
            .count();
        let max_keys = self.engine.registry().options().max_keys as usize;
        match self.engine.resolve(&name, self.now) {
            Ok(r) => {
                let after: Vec<String> = self.engine.keys().map(str::to_owned).collect();
                for (gone, p) in before
                    .iter()
                    .zip(&protecting)
                    .filter(|(n, _)| !after.contains(n))
                {
                    assert!(
                        !p || idle_protecting * 2 >= max_keys,
                        "protecting key {gone} evicted with {idle_protecting} of {max_keys} keys protecting"
                    );
                    self.current.remove(gone);
                    let m = self.models.remove(gone).unwrap_or_default();
                    assert!(
                        m.live.is_empty() && m.queued == 0,
                        "busy key {gone} evicted: {} live, {} queued",
                        m.live.len(),
                        m.queued
                    );
                }
                if r.created {
                    assert!(!before.contains(&name));
                    self.models.insert(name.clone(), KeyModel::default());
                }
                if let Some(old) = self.current.insert(name.clone(), r.handle) {
                    assert_eq!(old, r.handle, "a live key's handle changed");
                }
                self.handles.push((name, r.handle));
                Some(r.handle)
            }
            Err(RegistryError::Full { .. }) => {
                // Full only when every live key is busy or protecting its upstream, and more
                // than half of them are busy.
                for (n, p) in before.iter().zip(&protecting) {
                    let m = &self.models[n];
                    assert!(
                        !m.live.is_empty() || m.queued > 0 || *p,
                        "registry full while {n} is idle and protects nothing"
                    );
                }
                assert!(
                    idle_protecting * 2 < max_keys,
                    "registry full with {idle_protecting} of {max_keys} keys idle and protecting"
                );
                None
            }
            Err(e) => panic!("unexpected {e}"),
        }
    }

    fn on_acquired(&mut self, name: &str, a: Acquired) {
        let m = self.models.get_mut(name).unwrap();
        match a {
            Acquired::Permit(id) => {
                assert!(
                    !m.live.contains(&id),
                    "permit id {id} issued twice while live"
                );
                m.live.push(id);
            }
            Acquired::Queued => {
                assert!(
                    self.opts.limiter.is_some_and(|l| l.queue.is_some()),
                    "queued without a queue"
                );
                m.queued += 1;
            }
            Acquired::Rejected(_) => {}
        }
    }

    fn settle(&mut self, k: usize, id: u64, v: Verdict, expect_live: Option<bool>) {
        let Some(h) = self.resolve(k) else { return };
        let name = name(k);
        let live = self.models[&name].live.contains(&id);
        if let Some(e) = expect_live {
            assert_eq!(live, e);
        }
        let r = self
            .engine
            .settle(h, id, v, self.now)
            .expect("fresh handle");
        let m = self.models.get_mut(&name).unwrap();
        if live {
            let wake = r.expect("a live permit settles");
            m.live.retain(|&x| x != id);
            m.settled.push(id);
            assert!(wake <= m.queued, "wakeable {wake} > queued {}", m.queued);
        } else {
            assert!(r.is_err(), "settling a dead permit {id:#x} was accepted");
        }
    }

    fn step(&mut self, op: &Op) {
        match op {
            Op::Tick(c) => {
                self.now = match c {
                    Clock::Small(d) => self.now.saturating_add(*d),
                    Clock::Zero => self.now,
                    Clock::Large(d) => self.now.saturating_add(*d),
                    Clock::Back(d) => self.now.saturating_sub(*d),
                }
            }
            Op::Acquire(k) => {
                let Some(h) = self.resolve(*k) else { return };
                let a = self.engine.acquire(h, self.now).expect("fresh handle");
                self.on_acquired(&name(*k), a);
            }
            Op::AdmitQueued(k) => {
                let Some(h) = self.resolve(*k) else { return };
                let r = self.engine.admit_queued(h, self.now).expect("fresh handle");
                let m = self.models.get_mut(&name(*k)).unwrap();
                match r {
                    None => {}
                    Some(a) => {
                        assert!(m.queued > 0, "admitted a waiter nobody had");
                        m.queued -= 1;
                        assert_ne!(a, Acquired::Queued);
                        self.on_acquired(&name(*k), a);
                    }
                }
            }
            Op::LeaveQueue(k) => {
                let Some(h) = self.resolve(*k) else { return };
                let left = self.engine.leave_queue(h).expect("fresh handle");
                let m = self.models.get_mut(&name(*k)).unwrap();
                assert_eq!(left, m.queued > 0);
                if left {
                    m.queued -= 1;
                }
            }
            Op::Mark(k, i) => {
                let Some(h) = self.resolve(*k) else { return };
                let m = &self.models[&name(*k)];
                let (id, live) = match m.live.len() {
                    0 => (m.settled.last().copied().unwrap_or(12345), false),
                    n => (m.live[i % n], true),
                };
                assert_eq!(
                    self.engine.mark(h, id, self.now).expect("fresh handle"),
                    live
                );
            }
            Op::Settle(k, i, v) => {
                let Some(h) = self.resolve(*k) else { return };
                let _ = h;
                let m = &self.models[&name(*k)];
                if m.live.is_empty() {
                    return;
                }
                let id = m.live[i % m.live.len()];
                self.settle(*k, id, *v, Some(true));
            }
            Op::SettleAgain(k, i, v) => {
                let Some(_) = self.resolve(*k) else { return };
                let m = &self.models[&name(*k)];
                if m.settled.is_empty() {
                    return;
                }
                let id = m.settled[i % m.settled.len()];
                self.settle(*k, id, *v, Some(false));
            }
            Op::SettleRandom(k, id, v) => self.settle(*k, *id, *v, None),
            Op::OldHandle(i) => {
                // Some handle from history; stale ones must be refused, live ones must work.
                if self.handles.is_empty() {
                    return;
                }
                let (n, h) = self.handles[i % self.handles.len()].clone();
                // Live exactly when the key is alive and this is the handle it was last resolved to.
                let live = self.models.contains_key(&n) && self.current.get(&n) == Some(&h);
                match self.engine.acquire(h, self.now) {
                    Ok(a) => {
                        assert!(live, "a stale handle of {n} still works");
                        self.on_acquired(&n, a);
                    }
                    Err(_) => assert!(!live, "a live handle of {n} was refused"),
                }
            }
        }
        self.check();
    }

    fn check(&self) {
        let mut live_keys = 0;
        for name in self.engine.keys() {
            live_keys += 1;
            let m = self
                .models
                .get(name)
                .unwrap_or_else(|| panic!("engine has {name}, model does not"));
            let s = self.engine.stats_by_name(name, self.now).unwrap();
            assert_eq!(s.inflight as usize, m.live.len(), "{name}: inflight");
            assert_eq!(s.queued, m.queued, "{name}: queued");
            let ps = self.engine.registry().find(name).unwrap();
            if let Some(lo) = &self.opts.limiter {
                let l = ps.limiter().unwrap();
                assert_eq!(
                    l.inflight(),
                    s.inflight,
                    "{name}: limiter inflight vs permits"
                );
                assert!(
                    s.limit >= lo.min_limit && s.limit <= lo.max_limit,
                    "{name}: limit {} outside [{}, {}]",
                    s.limit,
                    lo.min_limit,
                    lo.max_limit
                );
            } else {
                assert_eq!(m.queued, 0);
            }
            if self.opts.bulkhead.is_some() {
                assert_eq!(s.bulkhead_active, s.inflight, "{name}: bulkhead vs permits");
            }
            if let Some(b) = ps.breaker() {
                assert!(b.probes_taken() <= b.options().half_open_probes);
            }
        }
        assert!(live_keys <= self.engine.registry().options().max_keys as usize);
        assert_eq!(live_keys, self.models.len(), "model keys vs engine keys");
    }
}

fn run(opts: PolicyOptions, max_keys: u32, seed: u64, start: u64, ops: &[Op]) {
    let reg = RegistryOptions {
        max_keys,
        ..RegistryOptions::default()
    };
    let engine = Engine::new(opts, reg, seed).expect("generated options are valid");
    let mut h = Harness {
        engine,
        opts,
        now: start,
        models: HashMap::new(),
        handles: Vec::new(),
        current: HashMap::new(),
    };
    for op in ops {
        h.step(op);
    }
    // Drain: settle everything, drop every waiter. Nothing may be left behind.
    for k in 0..KEYS {
        let n = name(k);
        if !h.models.contains_key(&n) {
            continue;
        }
        while let Some(&id) = h.models[&n].live.first() {
            h.settle(k, id, Verdict::Success, Some(true));
        }
        while h.models[&n].queued > 0 {
            h.step(&Op::LeaveQueue(k));
        }
        let s = h.engine.stats_by_name(&n, h.now).unwrap();
        assert_eq!((s.inflight, s.queued, s.bulkhead_active), (0, 0, 0));
    }
}

/// 800 cases of up to 300 steps: about 7 s in the dev profile on an idle 2-core machine,
/// 15 s at load 6 (0.3 s in release).
/// `PROPTEST_CASES=20000 cargo test -p resilix-engine --test properties` for a longer hunt.
const CASES: u32 = 800;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(CASES), max_shrink_iters: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn accounting_holds_under_random_operations(
        opts in policies(),
        max_keys in 1u32..4,
        seed in any::<u64>(),
        start in prop_oneof![Just(0u64), Just(1u64), 1u64..u64::MAX / 4, Just(u64::MAX - 1)],
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run(opts, max_keys, seed, start, &ops);
    }
}

#[test]
fn many_keys_through_a_small_registry_never_evict_a_busy_key() {
    let reg = RegistryOptions {
        max_keys: 8,
        ..RegistryOptions::default()
    };
    let mut e = Engine::new(PolicyOptions::default(), reg, 1).unwrap();
    // Four keys stay busy the whole time.
    let mut busy = Vec::new();
    for k in 0..4 {
        let h = e.resolve(&format!("busy-{k}"), 1).unwrap().handle;
        let Acquired::Permit(id) = e.acquire(h, 1).unwrap() else {
            panic!()
        };
        busy.push((h, id));
    }
    for i in 0..20_000u64 {
        let name = format!("host-{i}.example");
        let h = e.resolve(&name, i).unwrap().handle;
        let Acquired::Permit(id) = e.acquire(h, i).unwrap() else {
            panic!()
        };
        e.settle(h, id, Verdict::Success, i + 1).unwrap().unwrap();
        assert!(e.registry().len() <= 8);
    }
    for (h, id) in busy {
        assert_eq!(
            e.stats(h, 30_000).unwrap().inflight,
            1,
            "a busy key was evicted"
        );
        e.settle(h, id, Verdict::Success, 30_000).unwrap().unwrap();
    }
    // All busy and at the cap: a new key is refused, not a busy one dropped.
    let mut e = Engine::new(
        PolicyOptions::default(),
        RegistryOptions { max_keys: 2, ..reg },
        1,
    )
    .unwrap();
    for k in 0..2 {
        let h = e.resolve(&format!("b{k}"), 1).unwrap().handle;
        e.acquire(h, 1).unwrap();
    }
    assert!(matches!(
        e.resolve("new", 1),
        Err(RegistryError::Full { max_keys: 2 })
    ));
}

#[derive(Clone, Debug)]
enum BreakerOp {
    Acquire(u64),
    Settle(usize, Verdict, u64, u64),
}

fn breaker_op() -> impl Strategy<Value = BreakerOp> {
    let dt = prop_oneof![
        0u64..5 * NANOS_PER_MS,
        0u64..20_000 * NANOS_PER_MS,
        Just(0u64)
    ];
    prop_oneof![
        dt.clone().prop_map(BreakerOp::Acquire),
        (any::<usize>(), verdict(), 0u64..10_000 * NANOS_PER_MS, dt)
            .prop_map(|(i, v, l, d)| BreakerOp::Settle(i, v, l, d)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(CASES), max_shrink_iters: 2_000, ..ProptestConfig::default() })]

    /// The breaker's state machine on its own: only legal transitions, one per call at most, an
    /// open breaker refuses for `openMs`, and a half-open cycle never has more probes out than
    /// `halfOpenProbes`.
    #[test]
    fn breaker_state_machine_is_legal(o in breaker(), ops in proptest::collection::vec(breaker_op(), 1..400)) {
        use resilix_engine::breaker::Breaker;
        use resilix_engine::BreakerState::*;
        let mut b = Breaker::new(&o);
        let mut now = NANOS_PER_MS;
        let mut out: Vec<u32> = Vec::new(); // tags of calls in flight (0 = not a probe)
        let mut seq = 0;
        for op in ops {
            match op {
                BreakerOp::Acquire(d) => {
                    now += d;
                    let before = b.state(now);
                    let r = b.try_acquire(now);
                    if let Some(tag) = r {
                        out.push(tag);
                    }
                    match (before, r) {
                        (Closed, r) => prop_assert_eq!(r, Some(0)),
                        (Open, r) => prop_assert_eq!(r, None),
                        (HalfOpen, Some(tag)) => prop_assert_ne!(tag, 0),
                        (HalfOpen, None) => prop_assert_eq!(b.probes_taken(), o.half_open_probes),
                    }
                }
                BreakerOp::Settle(i, v, latency, d) => {
                    if out.is_empty() {
                        continue;
                    }
                    now += d;
                    let tag = out.swap_remove(i % out.len());
                    b.on_result(now, v, latency, tag);
                }
            }
            let t = b.transitions();
            prop_assert!(t == seq || t == seq + 1, "more than one change in one call");
            if t == seq + 1 {
                let tr = b.last_transition().unwrap();
                let legal = matches!((tr.from, tr.to), (Closed, Open) | (Open, HalfOpen) | (HalfOpen, Open) | (HalfOpen, Closed));
                prop_assert!(legal, "illegal {:?} -> {:?}", tr.from, tr.to);
                prop_assert_eq!(tr.cause.is_some(), tr.to == Open);
            }
            seq = t;
            if b.state(now) == HalfOpen {
                prop_assert!(b.probes_taken() <= o.half_open_probes);
                // Probes of the current cycle still out never exceed the places.
                let current = out.iter().filter(|&&t| t != 0).max().copied().unwrap_or(0);
                let probes_out = out.iter().filter(|&&t| t != 0 && t == current).count() as u32;
                prop_assert!(probes_out <= o.half_open_probes, "{} probes out", probes_out);
            }
            let w = b.window(now);
            prop_assert!(w.failures <= w.calls && w.slow <= w.calls);
        }
    }
}
