//! The queue shape (ADR 0005) on a fixed limit: each region, the ramp's rejection
//! fraction, FIFO accounting, and `queue: None`. (Boundaries moving with the limit: the unit
//! tests in engine/src/limiter.rs.)

use resilix_engine::queue::{admit, Admission};
use resilix_engine::{
    Acquired, Algorithm, Engine, KeyHandle, LimiterOptions, PolicyOptions, QueueOptions,
    RegistryOptions, RejectReason, SplitMix64, Verdict, NANOS_PER_MS,
};

const Q: QueueOptions = QueueOptions {
    initial_factor: 2.0,
    max_factor: 3.0,
    max_queued: 20_000,
};

fn engine(limit: u32, queue: Option<QueueOptions>, seed: u64) -> (Engine, KeyHandle) {
    let lim = LimiterOptions {
        algorithm: Algorithm::Fixed,
        initial_limit: limit,
        min_limit: 1,
        max_limit: limit,
        queue,
        ..LimiterOptions::default()
    };
    let p = PolicyOptions {
        breaker: None,
        limiter: Some(lim),
        bulkhead: None,
        throttle: None,
        quota: None,
    };
    let mut e = Engine::new(p, RegistryOptions::default(), seed).unwrap();
    let h = e.resolve("k", 0).unwrap().handle;
    // One call settled: past the cold start (a new key's burst allowance, ADR 0607), so the
    // factors alone shape the queue.
    if let Ok(Acquired::Permit(p)) = e.acquire(h, 0) {
        e.settle(h, p, Verdict::Success, 0).unwrap().unwrap();
    }
    (e, h)
}

fn reject_fraction(inflight: u32, queued: u32, limit: u32, trials: u32, seed: u64) -> f64 {
    let mut rng = SplitMix64::new(seed);
    let rejected = (0..trials)
        .filter(|_| {
            admit(inflight, queued, limit, limit, Some(&Q), &mut rng) == Admission::RejectQueue
        })
        .count();
    rejected as f64 / trials as f64
}

#[test]
fn below_the_limit_runs_at_once() {
    let mut rng = SplitMix64::new(1);
    for inflight in 0..10 {
        assert_eq!(
            admit(inflight, 0, 10, 10, Some(&Q), &mut rng),
            Admission::Run
        );
        assert_eq!(admit(inflight, 0, 10, 10, None, &mut rng), Admission::Run);
    }
}

#[test]
fn from_l_to_2l_waits_without_rejection() {
    let mut rng = SplitMix64::new(1);
    for queued in 0..10 {
        for _ in 0..1_000 {
            assert_eq!(
                admit(10, queued, 10, 10, Some(&Q), &mut rng),
                Admission::Queue,
                "outstanding {}",
                10 + queued
            );
        }
    }
}

#[test]
fn waiters_go_first_even_below_the_limit() {
    // FIFO: while anyone waits, a newcomer does not jump the queue, even with a free slot.
    let mut rng = SplitMix64::new(1);
    assert_eq!(admit(3, 1, 10, 10, Some(&Q), &mut rng), Admission::Queue);
}

#[test]
fn from_2l_to_3l_the_rejection_chance_rises_linearly() {
    // At 2L exactly the chance is 0; then (o - 2L) / L.
    assert_eq!(reject_fraction(10, 10, 10, 10_000, 3), 0.0);
    for (queued, expected) in [(12u32, 0.2), (15, 0.5), (18, 0.8), (19, 0.9)] {
        let f = reject_fraction(10, queued, 10, 20_000, queued as u64);
        assert!(
            (f - expected).abs() < 0.02,
            "outstanding {}: rejected {f}, expected {expected}",
            10 + queued
        );
    }
}

#[test]
fn the_ramp_rejects_half_at_two_and_a_half_l() {
    // 2.5 L on several limits and seeds: within 2 points of 50 %.
    for (limit, seed) in [(4u32, 11u64), (10, 12), (20, 13), (100, 14)] {
        let outstanding = limit * 5 / 2;
        let f = reject_fraction(limit, outstanding - limit, limit, 50_000, seed);
        assert!((f - 0.5).abs() < 0.02, "limit {limit}: rejected {f}");
    }
}

#[test]
fn at_3l_and_beyond_it_rejects() {
    let mut rng = SplitMix64::new(1);
    for queued in [20u32, 21, 50, 1_000_000] {
        for _ in 0..100 {
            assert_eq!(
                admit(10, queued, 10, 10, Some(&Q), &mut rng),
                Admission::RejectQueue
            );
        }
    }
}

#[test]
fn no_queue_rejects_at_the_limit_with_limit() {
    let mut rng = SplitMix64::new(1);
    assert_eq!(admit(10, 0, 10, 10, None, &mut rng), Admission::RejectLimit);
    let (mut e, h) = engine(3, None, 1);
    for _ in 0..3 {
        assert!(matches!(e.acquire(h, 1).unwrap(), Acquired::Permit(_)));
    }
    for _ in 0..10 {
        assert_eq!(
            e.acquire(h, 1).unwrap(),
            Acquired::Rejected(RejectReason::Limit)
        );
    }
    let s = e.stats(h, 1).unwrap();
    assert_eq!((s.inflight, s.queued), (3, 0));
}

#[test]
fn no_queue_refuses_above_a_probe_hold() {
    // A probe holds admission at 5 of a limit of 20: without a queue the call is refused, or
    // the probe could never drain (ADR 0113 "Without the queue").
    let mut rng = SplitMix64::new(1);
    assert_eq!(admit(4, 0, 5, 20, None, &mut rng), Admission::Run);
    assert_eq!(admit(5, 0, 5, 20, None, &mut rng), Admission::RejectLimit);
    // With a queue it waits instead.
    assert_eq!(admit(5, 0, 5, 20, Some(&Q), &mut rng), Admission::Queue);
}

#[test]
fn degenerate_factors_never_divide_by_zero() {
    // initialFactor == maxFactor: no ramp, a hard bound.
    let q = QueueOptions {
        initial_factor: 2.0,
        max_factor: 2.0,
        max_queued: 20_000,
    };
    let mut rng = SplitMix64::new(1);
    assert_eq!(admit(4, 3, 4, 4, Some(&q), &mut rng), Admission::Queue);
    assert_eq!(
        admit(4, 4, 4, 4, Some(&q), &mut rng),
        Admission::RejectQueue
    );
    let q1 = QueueOptions {
        initial_factor: 1.0,
        max_factor: 1.0,
        max_queued: 20_000,
    };
    assert_eq!(
        admit(4, 0, 4, 4, Some(&q1), &mut rng),
        Admission::RejectQueue
    );
}

#[test]
fn engine_with_a_pinned_limit_of_4_queues_a_burst_and_sheds_a_standing_queue() {
    // 4 run; a burst at one instant waits whole; arrivals that keep the queue from shrinking
    // for two intervals in which calls left make it stand, and then the factors bound it:
    // nothing past 3L is let in.
    const I: u64 = 100 * NANOS_PER_MS;
    for seed in 0..50 {
        let (mut e, h) = engine(4, Some(Q), seed);
        let outcomes: Vec<_> = (0..40).map(|_| e.acquire(h, 1).unwrap()).collect();
        assert!(outcomes[..4]
            .iter()
            .all(|a| matches!(a, Acquired::Permit(_))));
        assert!(
            outcomes[4..].iter().all(|a| *a == Acquired::Queued),
            "seed {seed}"
        );
        let mut running: Vec<_> = outcomes[..4]
            .iter()
            .map(|a| match a {
                Acquired::Permit(p) => *p,
                _ => unreachable!(),
            })
            .collect();
        // One call leaves per interval and a waiter takes its slot; one arrival per interval.
        // The burst's own interval counts as growth (it cannot be told from it), so the next
        // interval without shrinking makes it stand.
        for k in 1..=2 {
            let t = 1 + k * I;
            e.settle(h, running.remove(0), Verdict::Success, t)
                .unwrap()
                .unwrap();
            match e.admit_queued(h, t).unwrap() {
                Some(Acquired::Permit(p)) => running.push(p),
                a => panic!("seed {seed}: {a:?}"),
            }
            let a = e.acquire(h, t).unwrap();
            let expect = if k < 2 {
                Acquired::Queued
            } else {
                Acquired::Rejected(RejectReason::Queue)
            };
            assert_eq!(a, expect, "seed {seed}, interval {k}");
        }
        let s = e.stats(h, 1 + 2 * I).unwrap();
        assert_eq!(
            (s.inflight, s.queued),
            (4, 35),
            "seed {seed}: the waiters stay"
        );
        for _ in 0..100 {
            assert_eq!(
                e.acquire(h, 1 + 2 * I).unwrap(),
                Acquired::Rejected(RejectReason::Queue)
            );
        }
    }
}

#[test]
fn fifo_accounting_is_exact() {
    let (mut e, h) = engine(2, Some(Q), 1);
    let a = e.acquire(h, 1).unwrap();
    let b = e.acquire(h, 1).unwrap();
    let (Acquired::Permit(a), Acquired::Permit(b)) = (a, b) else {
        panic!("first two run")
    };
    for _ in 0..2 {
        assert_eq!(e.acquire(h, 1).unwrap(), Acquired::Queued);
    }
    assert_eq!(e.stats(h, 1).unwrap().queued, 2);
    // Full: no waiter may be admitted.
    assert_eq!(e.admit_queued(h, 1).unwrap(), None);
    assert_eq!(e.wakeable(h).unwrap(), 0);
    // One settles: exactly one waiter may go.
    assert_eq!(e.settle(h, a, Verdict::Success, 2).unwrap(), Ok(1));
    assert_eq!(e.wakeable(h).unwrap(), 1);
    let c = e.admit_queued(h, 2).unwrap();
    assert!(matches!(c, Some(Acquired::Permit(_))));
    assert_eq!(e.admit_queued(h, 2).unwrap(), None);
    let s = e.stats(h, 2).unwrap();
    assert_eq!((s.inflight, s.queued), (2, 1));
    // The last waiter gives up: the queue is empty and leave_queue says so after.
    assert!(e.leave_queue(h).unwrap());
    assert!(!e.leave_queue(h).unwrap());
    assert_eq!(e.admit_queued(h, 2).unwrap(), None);
    // Both settle: nothing waits, nothing to wake.
    assert_eq!(e.settle(h, b, Verdict::Cancelled, 3).unwrap(), Ok(0));
    let Some(Acquired::Permit(c)) = c else {
        unreachable!()
    };
    assert_eq!(e.settle(h, c, Verdict::Timeout, 3).unwrap(), Ok(0));
    let s = e.stats(h, 3).unwrap();
    assert_eq!((s.inflight, s.queued), (0, 0));
}

#[test]
fn waiters_stay_exact_under_a_long_random_run() {
    // A deterministic mixed workload: inflight and queued match a model at every step.
    let (mut e, h) = engine(5, Some(Q), 99);
    let mut rng = SplitMix64::new(5);
    let mut running: Vec<u64> = Vec::new();
    let mut queued = 0u32;
    let mut most = 0;
    for step in 0..20_000u64 {
        let now = step * NANOS_PER_MS;
        match rng.next_u64() % 4 {
            0 | 1 => match e.acquire(h, now).unwrap() {
                Acquired::Permit(id) => running.push(id),
                Acquired::Queued => queued += 1,
                Acquired::Rejected(r) => assert_eq!(r, RejectReason::Queue),
            },
            2 if !running.is_empty() => {
                let i = (rng.next_u64() % running.len() as u64) as usize;
                let id = running.swap_remove(i);
                let wake = e
                    .settle(h, id, Verdict::ALL[(step % 7) as usize], now)
                    .unwrap()
                    .unwrap();
                for _ in 0..wake {
                    match e.admit_queued(h, now).unwrap() {
                        Some(Acquired::Permit(id)) => {
                            running.push(id);
                            queued -= 1;
                        }
                        other => panic!("wakeable said yes, admit_queued said {other:?}"),
                    }
                }
            }
            _ if queued > 0 => {
                assert!(e.leave_queue(h).unwrap());
                queued -= 1;
            }
            _ => {}
        }
        let s = e.stats(h, now).unwrap();
        assert_eq!(
            (s.inflight, s.queued),
            (running.len() as u32, queued),
            "step {step}"
        );
        assert!(s.inflight <= 5);
        most = most.max(s.queued);
    }
    // Arrivals outpace the settles: the queue stood and was shed, well short of the cap.
    let s = e.stats(h, 20_000 * NANOS_PER_MS).unwrap();
    assert!(
        s.rejections[RejectReason::Queue as usize] > 100,
        "{:?}",
        s.rejections
    );
    assert!(most < 200, "at most {most} waited");
}
