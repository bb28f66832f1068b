//! Policies composed through the Engine: breaker → limiter (+ queue) → bulkhead.
//! A call refused by an outer policy never reaches an inner one; a call refused by an inner
//! policy gives back what the outer ones granted.

use resilix_engine::{
    Acquired, Algorithm, BreakerOptions, BreakerState, BulkheadOptions, Engine, KeyHandle,
    LimiterOptions, PolicyOptions, QueueOptions, RegistryOptions, RejectReason, TripCause, Verdict,
    NANOS_PER_MS,
};

const T0: u64 = 1_000 * NANOS_PER_MS;

fn ms(n: u64) -> u64 {
    T0 + n * NANOS_PER_MS
}

fn fixed(limit: u32, queue: Option<QueueOptions>) -> LimiterOptions {
    LimiterOptions {
        algorithm: Algorithm::Fixed,
        initial_limit: limit,
        min_limit: 1,
        max_limit: limit.max(1),
        queue,
        ..LimiterOptions::default()
    }
}

fn engine(p: PolicyOptions) -> (Engine, KeyHandle) {
    let mut e = Engine::new(p, RegistryOptions::default(), 7).expect("valid options");
    let h = e.resolve("upstream", T0).unwrap().handle;
    (e, h)
}

fn permit(a: Acquired) -> u64 {
    match a {
        Acquired::Permit(id) => id,
        other => panic!("expected a permit, got {other:?}"),
    }
}

/// Limiter inflight as the limiter itself counts it (not the permit slab).
fn limiter_inflight(e: &Engine, h: KeyHandle) -> u32 {
    e.registry()
        .get(h)
        .unwrap()
        .limiter()
        .map_or(0, |l| l.inflight())
}

#[test]
fn bulkhead_of_two_rejects_the_third_and_frees_on_release() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: None,
        limiter: None,
        bulkhead: Some(BulkheadOptions { max_concurrent: 2 }),
        throttle: None,
        quota: None,
    });
    let a = permit(e.acquire(h, ms(0)).unwrap());
    let _b = permit(e.acquire(h, ms(0)).unwrap());
    assert_eq!(
        e.acquire(h, ms(0)).unwrap(),
        Acquired::Rejected(RejectReason::Bulkhead)
    );
    assert_eq!(e.stats(h, ms(0)).unwrap().bulkhead_active, 2);
    e.settle(h, a, Verdict::Success, ms(1)).unwrap().unwrap();
    assert_eq!(e.stats(h, ms(1)).unwrap().bulkhead_active, 1);
    let _c = permit(e.acquire(h, ms(1)).unwrap());
    assert_eq!(
        e.acquire(h, ms(1)).unwrap(),
        Acquired::Rejected(RejectReason::Bulkhead)
    );
}

#[test]
fn bulkhead_releases_on_every_verdict() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: None,
        limiter: None,
        bulkhead: Some(BulkheadOptions { max_concurrent: 1 }),
        throttle: None,
        quota: None,
    });
    for v in Verdict::ALL {
        let id = permit(e.acquire(h, ms(0)).unwrap());
        e.settle(h, id, v, ms(1)).unwrap().unwrap();
        assert_eq!(
            e.stats(h, ms(1)).unwrap().bulkhead_active,
            0,
            "{v:?} did not release the bulkhead"
        );
    }
}

#[test]
fn bulkhead_refusal_undoes_the_limiter_admission() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: None,
        limiter: Some(fixed(10, None)),
        bulkhead: Some(BulkheadOptions { max_concurrent: 2 }),
        throttle: None,
        quota: None,
    });
    permit(e.acquire(h, ms(0)).unwrap());
    permit(e.acquire(h, ms(0)).unwrap());
    for _ in 0..20 {
        assert_eq!(
            e.acquire(h, ms(0)).unwrap(),
            Acquired::Rejected(RejectReason::Bulkhead)
        );
    }
    let s = e.stats(h, ms(0)).unwrap();
    assert_eq!((s.inflight, s.queued, s.bulkhead_active), (2, 0, 2));
    assert_eq!(
        limiter_inflight(&e, h),
        2,
        "refused calls must not hold limiter slots"
    );
}

#[test]
fn breaker_refusal_never_reaches_the_limiter() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: Some(BreakerOptions {
            consecutive_failures: 2,
            ..BreakerOptions::default()
        }),
        limiter: Some(fixed(1, Some(QueueOptions::default()))),
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    for _ in 0..2 {
        let id = permit(e.acquire(h, ms(0)).unwrap());
        e.settle(h, id, Verdict::Failure, ms(1)).unwrap().unwrap();
    }
    assert_eq!(e.stats(h, ms(1)).unwrap().breaker, Some(BreakerState::Open));
    // The limit is 1 with a queue: were the limiter reached, these would queue or be refused
    // 'queue'. The breaker refuses them all first, and the limiter counts nothing.
    for i in 0..50 {
        assert_eq!(
            e.acquire(h, ms(2 + i)).unwrap(),
            Acquired::Rejected(RejectReason::Breaker)
        );
    }
    let s = e.stats(h, ms(60)).unwrap();
    assert_eq!((s.inflight, s.queued), (0, 0));
    assert_eq!(limiter_inflight(&e, h), 0);
}

#[test]
fn bulkhead_refusal_gives_the_probe_back() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: Some(BreakerOptions {
            consecutive_failures: 1,
            half_open_probes: 2,
            ..BreakerOptions::default()
        }),
        limiter: None,
        bulkhead: Some(BulkheadOptions { max_concurrent: 2 }),
        throttle: None,
        quota: None,
    });
    let a = permit(e.acquire(h, ms(0)).unwrap()); // holds a bulkhead place throughout
    let b = permit(e.acquire(h, ms(0)).unwrap());
    e.settle(h, b, Verdict::Failure, ms(1)).unwrap().unwrap();
    assert_eq!(e.stats(h, ms(1)).unwrap().breaker, Some(BreakerState::Open));
    let t = ms(1 + BreakerOptions::default().open_ms);
    let _p1 = permit(e.acquire(h, t).unwrap()); // probe 1, bulkhead now full (a, p1)
    assert_eq!(
        e.acquire(h, t).unwrap(),
        Acquired::Rejected(RejectReason::Bulkhead)
    ); // probe 2 refused inside
    assert_eq!(
        e.registry()
            .get(h)
            .unwrap()
            .breaker()
            .unwrap()
            .probes_taken(),
        1,
        "probe place given back"
    );
    e.settle(h, a, Verdict::Success, t).unwrap().unwrap(); // not a probe: decides nothing
    assert_eq!(e.stats(h, t).unwrap().breaker, Some(BreakerState::HalfOpen));
    let _p2 = permit(e.acquire(h, t).unwrap()); // the second probe place is free again
    assert_eq!(
        e.acquire(h, t).unwrap(),
        Acquired::Rejected(RejectReason::Breaker)
    );
}

#[test]
fn a_queued_call_gives_its_probe_place_back_and_asks_the_breaker_again() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: Some(BreakerOptions {
            consecutive_failures: 1,
            half_open_probes: 2,
            ..BreakerOptions::default()
        }),
        limiter: Some(fixed(1, Some(QueueOptions::default()))),
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    let a = permit(e.acquire(h, ms(0)).unwrap()); // holds the only limiter slot
    let b = e.acquire(h, ms(0)).unwrap();
    assert_eq!(b, Acquired::Queued);
    // Trip the breaker with a's failure: the waiter must not reach the upstream now.
    e.settle(h, a, Verdict::Failure, ms(1)).unwrap().unwrap();
    assert_eq!(
        e.admit_queued(h, ms(1)).unwrap(),
        Some(Acquired::Rejected(RejectReason::Breaker))
    );
    assert_eq!(e.stats(h, ms(1)).unwrap().queued, 0);
    // Half-open with two probe places. A probe runs; the next call takes a probe place, then
    // queues at the limiter: it must give the place back while it waits.
    let t = ms(1 + BreakerOptions::default().open_ms);
    let p = permit(e.acquire(h, t).unwrap());
    assert_eq!(e.acquire(h, t).unwrap(), Acquired::Queued);
    let probes = |e: &Engine| {
        e.registry()
            .get(h)
            .unwrap()
            .breaker()
            .unwrap()
            .probes_taken()
    };
    assert_eq!(probes(&e), 1);
    assert_eq!(
        e.admit_queued(h, t).unwrap(),
        None,
        "the limiter is still full"
    );
    assert_eq!(
        probes(&e),
        1,
        "a waiter that could not be admitted holds no probe place"
    );
    assert_eq!(e.settle(h, p, Verdict::Success, t + 1).unwrap(), Ok(1));
    // Admitted now, it is asked again and becomes the second probe.
    let q = permit(e.admit_queued(h, t + 1).unwrap().unwrap());
    assert_eq!(probes(&e), 2);
    e.settle(h, q, Verdict::Success, t + 2).unwrap().unwrap();
    assert_eq!(
        e.stats(h, t + 2).unwrap().breaker,
        Some(BreakerState::Closed)
    );
}

#[test]
fn mark_decides_slowness_not_the_full_duration() {
    let o = BreakerOptions {
        slow_call_ms: 1_000,
        minimum_calls: 4,
        consecutive_failures: 1_000,
        ..BreakerOptions::default()
    };
    let (mut e, h) = engine(PolicyOptions {
        breaker: Some(o),
        limiter: None,
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    // Streams: first token at 100 ms, body done at 45 s. Not slow.
    for i in 0..10 {
        let t = ms(i * 10);
        let id = permit(e.acquire(h, t).unwrap());
        e.mark(h, id, t + 100 * NANOS_PER_MS).unwrap();
        e.mark(h, id, t + 40_000 * NANOS_PER_MS).unwrap(); // only the first mark counts
        e.settle(h, id, Verdict::Success, t + 45_000 * NANOS_PER_MS)
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        e.stats(h, ms(46_000)).unwrap().breaker,
        Some(BreakerState::Closed)
    );
    // Without mark the same calls are slow: 4 of them open it on the slow-call rate.
    for i in 0..4 {
        let t = ms(50_000 + i);
        let id = permit(e.acquire(h, t).unwrap());
        e.settle(h, id, Verdict::Success, t + 45_000 * NANOS_PER_MS)
            .unwrap()
            .unwrap();
    }
    let tr = e.breaker_transition(h).unwrap().unwrap();
    assert_eq!(
        (tr.to, tr.cause),
        (BreakerState::Open, Some(TripCause::SlowCallRate))
    );
}

#[test]
fn transitions_are_visible_through_the_engine() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: Some(BreakerOptions {
            consecutive_failures: 1,
            half_open_probes: 1,
            ..BreakerOptions::default()
        }),
        limiter: None,
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    assert_eq!(e.breaker_transition(h).unwrap(), None);
    let id = permit(e.acquire(h, ms(0)).unwrap());
    e.settle(h, id, Verdict::Failure, ms(1)).unwrap().unwrap();
    let t1 = e.breaker_transition(h).unwrap().unwrap();
    assert_eq!((t1.seq, t1.to, t1.at), (1, BreakerState::Open, ms(1)));
    // Refusals while open change nothing.
    e.acquire(h, ms(2)).unwrap();
    assert_eq!(e.breaker_transition(h).unwrap().unwrap().seq, 1);
    let t = ms(1 + BreakerOptions::default().open_ms);
    let id = permit(e.acquire(h, t).unwrap());
    assert_eq!(
        e.breaker_transition(h).unwrap().unwrap().to,
        BreakerState::HalfOpen
    );
    e.settle(h, id, Verdict::Success, t).unwrap().unwrap();
    let last = e.breaker_transition(h).unwrap().unwrap();
    assert_eq!(
        (last.seq, last.from, last.to),
        (3, BreakerState::HalfOpen, BreakerState::Closed)
    );
}

#[test]
fn the_limiter_keeps_observing_while_the_breaker_is_closed_by_429s() {
    // A 429 storm: the breaker stays closed (overload is not a failure), so the limiter keeps
    // receiving samples (ADR 0108).
    let (mut e, h) = engine(PolicyOptions {
        breaker: Some(BreakerOptions::default()),
        limiter: Some(fixed(4, None)),
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    for i in 0..1_000 {
        let id = permit(e.acquire(h, ms(i)).unwrap());
        e.settle(h, id, Verdict::Overload, ms(i) + 1)
            .unwrap()
            .unwrap();
    }
    assert_eq!(
        e.stats(h, ms(1_000)).unwrap().breaker,
        Some(BreakerState::Closed)
    );
    assert_eq!(e.breaker_transition(h).unwrap(), None);
}

#[test]
fn no_policy_at_all_still_accounts_permits() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: None,
        limiter: None,
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    let ids: Vec<u64> = (0..100)
        .map(|_| permit(e.acquire(h, ms(0)).unwrap()))
        .collect();
    assert_eq!(e.stats(h, ms(0)).unwrap().inflight, 100);
    for id in &ids {
        assert_eq!(e.settle(h, *id, Verdict::Success, ms(1)).unwrap(), Ok(0));
    }
    assert!(
        e.settle(h, ids[0], Verdict::Success, ms(1))
            .unwrap()
            .is_err(),
        "double settle"
    );
    assert_eq!(e.stats(h, ms(1)).unwrap().inflight, 0);
}

/// 15 rounds on a limit of 1: a call A succeeds, and a call B times out 10 ms after it starts
/// (`run_ms` later, with its response started after 1 ms when `mark`). With `queued`, B waited
/// in the queue behind A. Half the calls are timeouts: enough to open a breaker that counts them.
fn rounds(queued: bool, mark: bool, run_ms: u64) -> BreakerState {
    let (mut e, h) = engine(PolicyOptions {
        // A window long enough to hold every round, slow ones included.
        breaker: Some(BreakerOptions {
            window_ms: 600_000,
            ..BreakerOptions::default()
        }),
        limiter: Some(fixed(1, Some(QueueOptions::default()))),
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    let mut t = 0;
    for _ in 0..15 {
        let a = match e.acquire(h, ms(t)).unwrap() {
            Acquired::Rejected(RejectReason::Breaker) => return BreakerState::Open,
            other => permit(other),
        };
        let b = if queued {
            assert_eq!(e.acquire(h, ms(t)).unwrap(), Acquired::Queued);
            t += 5;
            assert_eq!(e.settle(h, a, Verdict::Success, ms(t)).unwrap(), Ok(1));
            permit(e.admit_queued(h, ms(t)).unwrap().expect("the slot is free"))
        } else {
            t += 5;
            e.settle(h, a, Verdict::Success, ms(t)).unwrap().unwrap();
            match e.acquire(h, ms(t)).unwrap() {
                Acquired::Rejected(RejectReason::Breaker) => return BreakerState::Open,
                other => permit(other),
            }
        };
        if mark {
            assert!(e.mark(h, b, ms(t + 1)).unwrap());
        }
        t += run_ms;
        e.settle(h, b, Verdict::Timeout, ms(t)).unwrap().unwrap();
        t += 1;
    }
    e.stats(h, ms(t)).unwrap().breaker.unwrap()
}

#[test]
fn a_waited_call_that_times_out_after_its_response_started_is_not_held_against_the_upstream() {
    // Its deadline was spent in our queue: the breaker stays closed.
    assert_eq!(rounds(true, true, 10), BreakerState::Closed);
    // The same with no response yet, but held by the upstream for less than slowCallMs.
    assert_eq!(rounds(true, false, 10), BreakerState::Closed);
    // A call that never waited: its timeout is the upstream's.
    assert_eq!(rounds(false, true, 10), BreakerState::Open);
    // A waited call the upstream held past slowCallMs without answering: the upstream's too.
    let slow = BreakerOptions::default().slow_call_ms + 1;
    assert_eq!(rounds(true, false, slow), BreakerState::Open);
}

/// `n` calls of a new adaptive key, each slower than `slowCallMs` (streams that queued for a
/// generation slot behind the first burst), settled at 6 s, then `after` more once a window of
/// 300 fast calls has closed: whether the breaker opened after each.
fn slow_calls_before_and_after_a_window(n: u64, after: u64) -> (bool, bool) {
    let (mut e, h) = engine(PolicyOptions {
        breaker: Some(BreakerOptions::default()),
        limiter: Some(LimiterOptions {
            queue: None,
            ..LimiterOptions::default()
        }),
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    let open = |e: &Engine, t| e.stats(h, t).unwrap().breaker == Some(BreakerState::Open);
    let slow = BreakerOptions::default().slow_call_ms + 1_000;
    let settle_slow = |e: &mut Engine, from: u64, n: u64| {
        for i in 0..n {
            let Acquired::Permit(id) = e.acquire(h, ms(from + i)).unwrap() else {
                break; // the breaker opened
            };
            e.settle(h, id, Verdict::Success, ms(from + i + slow))
                .unwrap()
                .unwrap();
        }
    };
    settle_slow(&mut e, 0, n);
    let before = open(&e, ms(slow + n));
    // A window of fast calls closes (3 s of them): the limit is learnt.
    for i in 0..300 {
        let id = permit(e.acquire(h, ms(slow + n + 10 * i)).unwrap());
        e.settle(h, id, Verdict::Success, ms(slow + n + 10 * i + 5))
            .unwrap()
            .unwrap();
    }
    let from = slow + n + 3_100;
    settle_slow(&mut e, from, after);
    (before, open(&e, ms(from + slow + after)))
}

#[test]
fn slow_calls_before_the_limit_is_learnt_do_not_open_the_breaker() {
    // 100 slow calls then: a first burst above a capacity the limiter has not sized yet is our
    // own queue at the upstream. Once a window has closed the same calls are the upstream's.
    let (before, after) = slow_calls_before_and_after_a_window(100, 500);
    assert!(!before, "opened on slow calls before any window");
    assert!(
        after,
        "slow calls after the first window must still open it"
    );
}
