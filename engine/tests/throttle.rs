//! The adaptive throttle (ADR 1000) through the engine, on plain `now` values: it never engages
//! without an overload, its probability is SRE's formula over the window, what counts as a
//! request and an accept, its place between the breaker and the limiter, and its options.

use resilix_engine::retry::Settled;
use resilix_engine::throttle::MIN_REQUESTS;
use resilix_engine::{
    Acquired, BreakerOptions, Decision, Engine, KeyHandle, LimiterOptions, PolicyOptions,
    RegistryOptions, RejectReason, RetryPolicy, ThrottleOptions, Verdict, NANOS_PER_MS,
};
use steps::first_attempt;

#[path = "support/steps.rs"]
mod steps;

const T0: u64 = 1_000 * NANOS_PER_MS;

fn ms(n: u64) -> u64 {
    T0 + n * NANOS_PER_MS
}

fn engine(p: PolicyOptions) -> (Engine, KeyHandle) {
    let mut e = Engine::new(p, RegistryOptions::default(), 42).unwrap();
    let h = e.resolve("k", ms(0)).unwrap().handle;
    (e, h)
}

/// Only the throttle, with these options.
fn only(t: ThrottleOptions) -> (Engine, KeyHandle) {
    engine(PolicyOptions {
        breaker: None,
        limiter: None,
        bulkhead: None,
        throttle: Some(t),
        quota: None,
    })
}

fn run(e: &mut Engine, h: KeyHandle, at: u64, v: Verdict) {
    match e.acquire(h, at).unwrap() {
        Acquired::Permit(id) => {
            e.settle(h, id, v, at).unwrap().unwrap();
        }
        other => panic!("refused: {other:?}"),
    }
}

fn state(e: &Engine, h: KeyHandle, at: u64) -> (f64, (u64, u64)) {
    e.registry().get(h).unwrap().throttle_state(at)
}

fn throttled(e: &Engine, h: KeyHandle, at: u64) -> u64 {
    e.stats(h, at).unwrap().rejections[RejectReason::Throttle as usize]
}

#[test]
fn a_key_without_overloads_is_never_decided_and_holds_no_window() {
    let healthy = |throttle| {
        let (mut e, h) = engine(PolicyOptions {
            breaker: None,
            limiter: None,
            bulkhead: None,
            throttle,
            quota: None,
        });
        for i in 0..10_000u64 {
            let v = [
                Verdict::Success,
                Verdict::Failure,
                Verdict::Answered,
                Verdict::Timeout,
                Verdict::Cancelled,
            ][(i % 5) as usize];
            run(&mut e, h, ms(i), v);
        }
        (e, h)
    };
    let (e, h) = healthy(Some(ThrottleOptions::default()));
    assert_eq!(state(&e, h, ms(10_000)), (0.0, (0, 0)));
    assert_eq!(throttled(&e, h, ms(10_000)), 0);
    let (off, off_h) = healthy(None);
    assert_eq!(
        e.registry().get(h).unwrap().heap_bytes(),
        off.registry().get(off_h).unwrap().heap_bytes()
    );
}

#[test]
fn healthy_calls_draw_no_randomness() {
    // The retry jitter draws from the same random source: after the same healthy calls, an
    // engine with the throttle and one without draw the same delay.
    let delay = |throttle| {
        let (mut e, h) = engine(PolicyOptions {
            throttle,
            ..Default::default()
        });
        for i in 0..1_000 {
            run(&mut e, h, ms(i), Verdict::Success);
        }
        let s = first_attempt(Verdict::Failure);
        e.retry(h, &RetryPolicy::default(), &s, ms(1_000)).unwrap()
    };
    let on = delay(Some(ThrottleOptions::default()));
    assert!(matches!(on, Decision::Retry { .. }), "{on:?}");
    assert_eq!(on, delay(None));
}

#[test]
fn the_probability_is_sres_formula_over_the_window_capped() {
    let (mut e, h) = only(ThrottleOptions {
        multiplier: 2.0,
        window_ms: 10_000,
        max_rejection: 0.9,
    });
    // 10 overloads: (10 − 2 × 0) / 11 = 0.909…, capped at 0.9.
    let ids: Vec<u64> = (0..10)
        .map(|_| match e.acquire(h, ms(0)).unwrap() {
            Acquired::Permit(id) => id,
            other => panic!("{other:?}"),
        })
        .collect();
    for id in ids {
        e.settle(h, id, Verdict::Overload, ms(0)).unwrap().unwrap();
    }
    assert_eq!(state(&e, h, ms(0)), (0.9, (10, 0)));
    // stats() reports the same probability; 0 once the window holds no overload (ADR 1230).
    assert_eq!(e.stats(h, ms(0)).unwrap().throttle_probability, 0.9);
    assert_eq!(e.stats(h, ms(60_000)).unwrap().throttle_probability, 0.0);

    // 10 overloads and 5 accepts: (15 − 2 × 5) / 16 = 0.3125. Timeouts, failures and other
    // 4xx count as accepted.
    let (mut e, h) = only(ThrottleOptions {
        multiplier: 2.0,
        window_ms: 10_000,
        max_rejection: 0.9,
    });
    // Take the permits first (no overload yet: never refused), then settle.
    let ids: Vec<u64> = (0..15)
        .map(|_| match e.acquire(h, ms(0)).unwrap() {
            Acquired::Permit(id) => id,
            other => panic!("{other:?}"),
        })
        .collect();
    let verdicts = [
        Verdict::Success,
        Verdict::Timeout,
        Verdict::Failure,
        Verdict::Answered,
        Verdict::Success,
    ];
    for (i, id) in ids.into_iter().enumerate() {
        let v = if i < 10 {
            Verdict::Overload
        } else {
            verdicts[i - 10]
        };
        e.settle(h, id, v, ms(1)).unwrap().unwrap();
    }
    assert_eq!(state(&e, h, ms(1)), (0.3125, (15, 5)));
    // Enough accepts bring it to 0: (15 + n − 2 (5 + n)) ≤ 0 from n = 5.
    let ids: Vec<u64> = (0..5)
        .map(|_| match e.acquire(h, ms(2)).unwrap() {
            Acquired::Permit(id) => id,
            Acquired::Rejected(RejectReason::Throttle) => 0,
            other => panic!("{other:?}"),
        })
        .filter(|&id| id != 0)
        .collect();
    let refused = 5 - ids.len() as u64;
    for id in ids {
        e.settle(h, id, Verdict::Success, ms(2)).unwrap().unwrap();
    }
    let (r, a) = (15 + 5, 5 + 5 - refused);
    let want = ((r as f64 - 2.0 * a as f64) / (r as f64 + 1.0)).clamp(0.0, 0.9);
    assert_eq!(state(&e, h, ms(2)), (want, (r, a)));
    assert_eq!(throttled(&e, h, ms(2)), refused);
}

#[test]
fn refusals_count_as_requests_and_ignored_verdicts_as_nothing() {
    let (mut e, h) = only(ThrottleOptions {
        multiplier: 1.0,
        window_ms: 10_000,
        max_rejection: 1.0,
    });
    let a = match e.acquire(h, ms(0)).unwrap() {
        Acquired::Permit(id) => id,
        other => panic!("{other:?}"),
    };
    let b = match e.acquire(h, ms(0)).unwrap() {
        Acquired::Permit(id) => id,
        other => panic!("{other:?}"),
    };
    let c = match e.acquire(h, ms(0)).unwrap() {
        Acquired::Permit(id) => id,
        other => panic!("{other:?}"),
    };
    e.settle(h, a, Verdict::Overload, ms(1)).unwrap().unwrap();
    // Cancelled and Rejected tell nothing about the upstream: neither request nor accept.
    e.settle(h, b, Verdict::Cancelled, ms(1)).unwrap().unwrap();
    e.settle(h, c, Verdict::Rejected, ms(1)).unwrap().unwrap();
    // One request: below MIN_REQUESTS nothing is refused, whatever the formula says.
    assert_eq!(state(&e, h, ms(1)), (0.0, (1, 0)));
    for _ in 1..MIN_REQUESTS {
        run(&mut e, h, ms(1), Verdict::Overload);
    }
    assert_eq!(state(&e, h, ms(1)), (5.0 / 6.0, (5, 0)));
    // Every acquire now is decided; each refusal adds a request, never an accept.
    let mut refused = 0;
    for i in 0..100 {
        match e.acquire(h, ms(1)).unwrap() {
            Acquired::Rejected(RejectReason::Throttle) => refused += 1,
            Acquired::Permit(id) => {
                e.settle(h, id, Verdict::Overload, ms(1)).unwrap().unwrap();
            }
            other => panic!("{i}: {other:?}"),
        };
    }
    assert!(refused > 50, "{refused} of 100 refused");
    assert_eq!(state(&e, h, ms(1)).1, (105, 0));
    assert_eq!(throttled(&e, h, ms(1)), refused);
}

#[test]
fn nothing_is_refused_before_the_window_holds_min_requests() {
    let (mut e, h) = only(ThrottleOptions {
        multiplier: 1.2,
        window_ms: 30_000,
        max_rejection: 0.9,
    });
    // A 429 and its retry: the retry is never refused by chance.
    for i in 1..MIN_REQUESTS {
        run(&mut e, h, ms(i), Verdict::Overload);
        assert_eq!(state(&e, h, ms(i)), (0.0, (i, 0)));
    }
    run(&mut e, h, ms(10), Verdict::Overload);
    assert_eq!(state(&e, h, ms(10)), (5.0 / 6.0, (5, 0)));
}

#[test]
fn the_window_forgets_and_the_key_is_no_longer_decided() {
    let (mut e, h) = only(ThrottleOptions {
        multiplier: 1.2,
        window_ms: 20_000, // 20 buckets of 1 s
        max_rejection: 0.9,
    });
    for _ in 0..MIN_REQUESTS {
        run(&mut e, h, ms(0), Verdict::Overload);
    }
    assert!(state(&e, h, ms(0)).0 > 0.0);
    // Still within the window at 19.999 s (the overloads' bucket is one of the last 20).
    assert_eq!(state(&e, h, ms(19_999)).1, (5, 0));
    // From 20 s its bucket has left: nothing is decided, and the counts are gone.
    assert_eq!(state(&e, h, ms(20_000)), (0.0, (0, 0)));
    for i in 0..1_000 {
        run(&mut e, h, ms(20_000 + i), Verdict::Success);
    }
    assert_eq!(throttled(&e, h, ms(21_000)), 0);
    // Accepts are still counted once a window exists: a lone overload among them refuses
    // nothing ((1001 − 1.2 × 1000) / 1002 < 0).
    run(&mut e, h, ms(21_000), Verdict::Overload);
    assert_eq!(state(&e, h, ms(21_000)), (0.0, (1_001, 1_000)));
}

#[test]
fn the_breaker_is_asked_first_and_a_throttled_call_never_reaches_the_limiter() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: Some(BreakerOptions::default()),
        limiter: Some(LimiterOptions {
            algorithm: resilix_engine::Algorithm::Fixed,
            initial_limit: 100,
            queue: None,
            ..Default::default()
        }),
        quota: None,
        bulkhead: None,
        throttle: Some(ThrottleOptions {
            multiplier: 1.0,
            window_ms: 10_000,
            max_rejection: 1.0,
        }),
    });
    // Overloads are not breaker failures: the breaker stays closed while the throttle engages.
    for _ in 0..50 {
        if let Acquired::Permit(id) = e.acquire(h, ms(0)).unwrap() {
            e.settle(h, id, Verdict::Overload, ms(0)).unwrap().unwrap();
        }
    }
    let s = e.stats(h, ms(0)).unwrap();
    assert_eq!(s.breaker, Some(resilix_engine::BreakerState::Closed));
    assert!(s.rejections[RejectReason::Throttle as usize] > 0);
    assert_eq!(s.rejections[RejectReason::Limit as usize], 0);
    assert_eq!((s.inflight, s.queued), (0, 0));
}

#[test]
fn off_it_never_refuses_nor_allocates() {
    let (mut e, h) = engine(PolicyOptions {
        breaker: None,
        limiter: None,
        bulkhead: None,
        throttle: None,
        quota: None,
    });
    run(&mut e, h, ms(0), Verdict::Success);
    let before = e.registry().get(h).unwrap().heap_bytes();
    for i in 0..1_000 {
        run(&mut e, h, ms(i), Verdict::Overload);
    }
    assert_eq!(state(&e, h, ms(1_000)), (0.0, (0, 0)));
    assert_eq!(throttled(&e, h, ms(1_000)), 0);
    assert_eq!(e.registry().get(h).unwrap().heap_bytes(), before);
}

#[test]
fn bad_options_name_the_option_and_its_range() {
    for (t, option, text) in [
        (
            ThrottleOptions {
                multiplier: 0.5,
                ..Default::default()
            },
            "throttle.multiplier",
            "throttle.multiplier must be a number from 1 to 100, got 0.5",
        ),
        (
            ThrottleOptions {
                multiplier: f64::NAN,
                ..Default::default()
            },
            "throttle.multiplier",
            "got NaN",
        ),
        (
            ThrottleOptions {
                window_ms: 999,
                ..Default::default()
            },
            "throttle.windowMs",
            "throttle.windowMs must be an integer from 1000 to 2147483647, got 999",
        ),
        (
            ThrottleOptions {
                max_rejection: 0.0,
                ..Default::default()
            },
            "throttle.maxRejection",
            "throttle.maxRejection must be a number above 0 to 1, got 0",
        ),
        (
            ThrottleOptions {
                max_rejection: 1.5,
                ..Default::default()
            },
            "throttle.maxRejection",
            "got 1.5",
        ),
    ] {
        let err = Engine::new(
            PolicyOptions {
                throttle: Some(t),
                ..Default::default()
            },
            RegistryOptions::default(),
            1,
        )
        .unwrap_err();
        assert_eq!(err.option, option);
        assert!(err.message.contains(text), "{}", err.message);
    }
}

/// An overload settled as no refusal (a 503 without `Retry-After`), or as a refusal.
fn run_seen(e: &mut Engine, h: KeyHandle, at: u64, refusal: bool) -> bool {
    match e.acquire(h, at).unwrap() {
        Acquired::Permit(id) => {
            let seen = if refusal {
                Verdict::Overload
            } else {
                Verdict::Failure
            };
            e.settle_seen(h, id, Verdict::Overload, seen, at)
                .unwrap()
                .unwrap();
            true
        }
        Acquired::Rejected(RejectReason::Throttle) => false,
        other => panic!("{other:?}"),
    }
}

#[test]
fn overloads_that_asked_no_wait_never_engage_the_throttle_but_stay_overloads() {
    // Two in five calls overloaded: as refusals (429) the throttle runs away to its cap,
    // each refusal it makes counting as a request; as 503s without Retry-After it never decides
    // (ADR 1004). Every other policy still reads them as overloads.
    let calls = |refusals: bool| {
        let (mut e, h) = only(ThrottleOptions::default());
        let mut served = 0;
        for i in 0..2_000u64 {
            let overloaded = i % 5 < 2;
            let at = ms(i * 5);
            if overloaded {
                run_seen(&mut e, h, at, refusals);
            } else if run_seen_ok(&mut e, h, at) {
                served += 1;
            }
        }
        let s = e.stats(h, ms(10_000)).unwrap();
        (
            served,
            throttled(&e, h, ms(10_000)),
            s.verdicts[Verdict::Overload as usize],
        )
    };
    let (served, refused, overloads) = calls(false);
    assert_eq!((served, refused), (1_200, 0));
    assert_eq!(overloads, 800, "still counted as overloads");
    let (served, refused, _) = calls(true);
    assert!(
        refused > 1_000 && served < 400,
        "{served} served, {refused} refused"
    );
}

fn run_seen_ok(e: &mut Engine, h: KeyHandle, at: u64) -> bool {
    match e.acquire(h, at).unwrap() {
        Acquired::Permit(id) => {
            e.settle(h, id, Verdict::Success, at).unwrap().unwrap();
            true
        }
        Acquired::Rejected(RejectReason::Throttle) => false,
        other => panic!("{other:?}"),
    }
}

/// A key whose window holds only refusals: the throttle refuses nearly every call.
fn engaged() -> (Engine, KeyHandle) {
    let (mut e, h) = only(ThrottleOptions {
        multiplier: 1.0,
        window_ms: 10_000,
        max_rejection: 1.0,
    });
    for _ in 0..50 {
        run_seen(&mut e, h, ms(0), true);
    }
    (e, h)
}

fn overloaded_attempt() -> Settled {
    Settled {
        attempts: 1,
        verdict: Verdict::Overload,
        hint_ns: Some(1_000 * NANOS_PER_MS),
        remaining_ns: None,
        previous_delay_ns: 0,
    }
}

#[test]
fn a_retry_is_decided_by_the_throttle_before_its_wait_and_not_drawn_again_after() {
    let (mut e, h) = engaged();
    let mut refused = 0;
    let mut waited = 0;
    for i in 0..200u64 {
        let at = ms(1 + i);
        let before = throttled(&e, h, at);
        match e
            .retry(h, &RetryPolicy::default(), &overloaded_attempt(), at)
            .unwrap()
        {
            Decision::Stop(resilix_engine::Refusal::Throttle) => {
                refused += 1;
                // Counted as a refusal of the throttle's, before any wait.
                assert_eq!(throttled(&e, h, at), before + 1);
            }
            Decision::Retry { delay_ns } => {
                waited += 1;
                assert!(delay_ns >= 1_000 * NANOS_PER_MS);
                // After its wait, the retry's own acquire is not drawn again.
                let later = at + delay_ns;
                e.grant_throttle_pass(h, later).unwrap();
                match e.acquire(h, later).unwrap() {
                    Acquired::Permit(id) => {
                        e.settle(h, id, Verdict::Overload, later).unwrap().unwrap();
                    }
                    other => panic!("a retry the throttle let through was refused: {other:?}"),
                }
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(
        refused > 150 && waited > 0,
        "{refused} refused, {waited} waited"
    );
}

#[test]
fn a_pass_is_taken_by_the_next_acquire_only() {
    let (mut e, h) = engaged();
    e.grant_throttle_pass(h, ms(1)).unwrap();
    assert!(matches!(e.acquire(h, ms(1)).unwrap(), Acquired::Permit(_)));
    // The pass is spent: the next calls are drawn (nearly all refused).
    let refused = (0..50)
        .filter(|_| {
            matches!(
                e.acquire(h, ms(1)).unwrap(),
                Acquired::Rejected(RejectReason::Throttle)
            )
        })
        .count();
    assert!(refused > 40, "{refused}");
    // A pass granted while the throttle is not engaged is no pass at all.
    let (mut e, h) = only(ThrottleOptions::default());
    e.grant_throttle_pass(h, ms(0)).unwrap();
    for _ in 0..50 {
        run_seen(&mut e, h, ms(0), true);
    }
    let first = e.acquire(h, ms(0)).unwrap();
    let again = {
        let (mut e2, h2) = only(ThrottleOptions::default());
        for _ in 0..50 {
            run_seen(&mut e2, h2, ms(0), true);
        }
        e2.acquire(h2, ms(0)).unwrap()
    };
    assert_eq!(
        format!("{first:?}"),
        format!("{again:?}"),
        "the same draw as without the pass"
    );
}
