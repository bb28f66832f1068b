//! Retry decisions, backoff and the per-key budget, on a manual clock: no sleeps.

use resilix_engine::retry::{backoff_ns, decide, KeyView, RetryBudget, Settled};
use resilix_engine::{
    Acquired, BudgetOptions, Decision, Engine, Jitter, PolicyOptions, Refusal, RegistryOptions,
    RetryOn, RetryPolicy, SplitMix64, Verdict, NANOS_PER_MS,
};

const T0: u64 = 1_000 * NANOS_PER_MS;

fn ms(n: u64) -> u64 {
    T0 + n * NANOS_PER_MS
}

fn settled(attempts: u32, verdict: Verdict) -> Settled {
    Settled {
        attempts,
        verdict,
        hint_ns: None,
        remaining_ns: None,
        previous_delay_ns: 0,
    }
}

fn view(settled: u64) -> KeyView {
    KeyView {
        settled,
        estimate_ns: 0,
        breaker_open: false,
    }
}

fn no_min() -> BudgetOptions {
    BudgetOptions {
        min_per_second: 0.0,
        ..BudgetOptions::default()
    }
}

#[test]
fn full_jitter_stays_within_the_doubling_ceiling_and_the_cap() {
    let p = RetryPolicy::default();
    let mut rng = SplitMix64::new(3);
    for retry in 1..=10u32 {
        let ceiling = ((25 * NANOS_PER_MS) << (retry - 1)).min(250 * NANOS_PER_MS);
        for _ in 0..1000 {
            let d = backoff_ns(&p, retry, 0, rng.next_f64());
            assert!(d <= ceiling, "retry {retry}: {d} > {ceiling}");
        }
    }
    // The extremes of u: 0 and just below 1.
    assert_eq!(backoff_ns(&p, 1, 0, 0.0), 0);
    assert!(backoff_ns(&p, 1, 0, 0.999_999) > 24 * NANOS_PER_MS);
}

#[test]
fn backoff_is_finite_and_capped_after_thousands_of_attempts() {
    for jitter in [Jitter::Full, Jitter::Decorrelated] {
        let p = RetryPolicy {
            jitter,
            base_ns: 100 * NANOS_PER_MS,
            max_delay_ns: 30_000 * NANOS_PER_MS,
            ..RetryPolicy::default()
        };
        let mut rng = SplitMix64::new(9);
        let mut prev = 0;
        for retry in 1..=5_000u32 {
            let d = backoff_ns(&p, retry, prev, rng.next_f64());
            assert!(d <= p.max_delay_ns, "{jitter:?} retry {retry}: {d}");
            prev = d;
        }
        // Past the exponent where 2^n overflows a double, and hostile randomness.
        for u in [f64::NAN, f64::INFINITY, -1.0, 2.0, 0.5] {
            let d = backoff_ns(&p, u32::MAX, u64::MAX, u);
            assert!(d <= p.max_delay_ns, "{jitter:?} u {u}: {d}");
        }
        // A decorrelated delay never falls below the base.
        if jitter == Jitter::Decorrelated {
            assert!(backoff_ns(&p, 7, 0, 0.0) >= p.base_ns);
        }
    }
}

/// A cap a double cannot hold exactly (past 2^53 ns) rounds up on its way through f64: the
/// delay is still at most the cap, to the nanosecond.
#[test]
fn backoff_never_passes_a_cap_a_double_rounds_up() {
    let cap = 196_084_576_810_613_616u64;
    assert!(cap as f64 as u64 > cap, "a cap that rounds up");
    for jitter in [Jitter::Full, Jitter::Decorrelated] {
        let p = RetryPolicy {
            jitter,
            base_ns: cap,
            max_delay_ns: cap,
            ..RetryPolicy::default()
        };
        for u in [1.0, 0.999_999_999, f64::INFINITY] {
            let d = backoff_ns(&p, 3, cap, u);
            assert!(d <= cap, "{jitter:?} u {u}: {d} past the cap {cap}");
        }
    }
}

#[test]
fn decorrelated_jitter_grows_from_the_previous_delay() {
    let p = RetryPolicy {
        jitter: Jitter::Decorrelated,
        ..RetryPolicy::default()
    };
    // u = 1: three times the previous delay, capped.
    assert_eq!(
        backoff_ns(&p, 2, 40 * NANOS_PER_MS, 1.0),
        120 * NANOS_PER_MS
    );
    assert_eq!(
        backoff_ns(&p, 2, 200 * NANOS_PER_MS, 1.0),
        250 * NANOS_PER_MS
    );
}

#[test]
fn only_failure_overload_and_timeout_are_ever_retried() {
    let p = RetryPolicy::default();
    let o = BudgetOptions::default();
    for v in Verdict::ALL {
        let mut b = RetryBudget::new(T0, 0);
        let d = decide(&p, &mut b, &o, &settled(1, v), view(0), T0, 0.5);
        let retried = matches!(d, Decision::Retry { .. });
        assert_eq!(
            retried,
            matches!(v, Verdict::Failure | Verdict::Overload | Verdict::Timeout),
            "{v:?}: {d:?}"
        );
    }
    // A mask naming answered, success or cancelled keeps only the retryable verdicts.
    let all = RetryOn::from_mask(0xff);
    assert!(!all.contains(Verdict::Answered) && !all.contains(Verdict::Cancelled));
    let only_overload = RetryPolicy {
        retry_on: RetryOn::of(&[Verdict::Overload]),
        ..p
    };
    let mut b = RetryBudget::new(T0, 0);
    assert_eq!(
        decide(
            &only_overload,
            &mut b,
            &o,
            &settled(1, Verdict::Failure),
            view(0),
            T0,
            0.5
        ),
        Decision::Stop(Refusal::NotRetryable)
    );
}

#[test]
fn attempts_breaker_and_deadline_end_the_retries() {
    let p = RetryPolicy::default();
    let o = BudgetOptions::default();
    let mut b = RetryBudget::new(T0, 0);
    let f = Verdict::Failure;
    assert_eq!(
        decide(&p, &mut b, &o, &settled(3, f), view(0), T0, 0.5),
        Decision::Stop(Refusal::AttemptsSpent)
    );
    let open = KeyView {
        breaker_open: true,
        ..view(0)
    };
    assert_eq!(
        decide(&p, &mut b, &o, &settled(1, f), open, T0, 0.5),
        Decision::Stop(Refusal::BreakerOpen)
    );
    // 100 ms left: a 250 ms Retry-After hint cannot be honoured.
    let hinted = Settled {
        hint_ns: Some(250 * NANOS_PER_MS),
        remaining_ns: Some(100 * NANOS_PER_MS),
        ..settled(1, Verdict::Overload)
    };
    assert_eq!(
        decide(&p, &mut b, &o, &hinted, view(0), T0, 0.5),
        Decision::Stop(Refusal::RetryAfterBeyondDeadline)
    );
    // A backoff of up to 25 ms plus an attempt that takes at least 90 ms: not within 100 ms.
    let slow = KeyView {
        estimate_ns: 90 * NANOS_PER_MS,
        ..view(0)
    };
    let tight = Settled {
        remaining_ns: Some(100 * NANOS_PER_MS),
        ..settled(1, f)
    };
    assert_eq!(
        decide(&p, &mut b, &o, &tight, slow, T0, 0.99),
        Decision::Stop(Refusal::Deadline)
    );
    // None of these spent the budget or counted as its refusal.
    assert_eq!((b.retried, b.refused), (0, 0));
}

#[test]
fn the_delay_is_the_longer_of_the_hint_and_the_backoff_and_the_hint_is_capped() {
    let p = RetryPolicy {
        max_retry_after_ns: 2_000 * NANOS_PER_MS,
        ..RetryPolicy::default()
    };
    let o = BudgetOptions::default();
    let mut b = RetryBudget::new(T0, 0);
    let hinted = |h: u64| Settled {
        hint_ns: Some(h * NANOS_PER_MS),
        ..settled(1, Verdict::Overload)
    };
    assert_eq!(
        decide(&p, &mut b, &o, &hinted(1_000), view(0), T0, 0.5),
        Decision::Retry {
            delay_ns: 1_000 * NANOS_PER_MS
        }
    );
    assert_eq!(
        decide(&p, &mut b, &o, &hinted(3_600_000), view(0), T0, 0.5),
        Decision::Retry {
            delay_ns: 2_000 * NANOS_PER_MS
        }
    );
    // A hint of 0 leaves the backoff (u = 0.99 of the first ceiling, 25 ms).
    match decide(&p, &mut b, &o, &hinted(0), view(0), T0, 0.99) {
        Decision::Retry { delay_ns } => assert!(delay_ns > 24 * NANOS_PER_MS),
        d => panic!("{d:?}"),
    }
}

#[test]
fn the_budget_allows_its_ratio_of_first_attempts_in_the_window() {
    let o = no_min();
    let mut b = RetryBudget::new(T0, 0);
    // 100 calls settled, none a retry: 20 retries.
    let mut granted = 0;
    for i in 0..30u64 {
        // Each granted retry settles too: it is counted in `settled`, not as a first attempt.
        if b.try_spend(&o, ms(i), 100 + granted) {
            granted += 1;
        }
    }
    assert_eq!(granted, 20);
    assert_eq!((b.retried, b.refused), (20, 10));
    // A window later the old first attempts and retries have slid out: none are left.
    assert!(!b.try_spend(&o, ms(10_500), 120));
    // 50 new first attempts: 10 more.
    let mut more = 0;
    for i in 0..20u64 {
        if b.try_spend(&o, ms(10_600 + i), 170 + more) {
            more += 1;
        }
    }
    assert_eq!(more, 10);
}

#[test]
fn the_budget_slides_in_tenths_of_its_window() {
    let o = no_min();
    let mut b = RetryBudget::new(T0, 0);
    // 50 first attempts early in the window, 10 retries taken (each settled).
    for i in 0..10 {
        assert!(b.try_spend(&o, ms(100), 50 + i));
    }
    assert!(!b.try_spend(&o, ms(100), 60));
    // 100 more first attempts at 9.5 s, one retry.
    assert!(b.try_spend(&o, ms(9_500), 160));
    // At 10.5 s the bucket of the first 50 (and of their 10 retries) has left the window: 100
    // first attempts and 1 retry remain.
    let (retries, firsts) = b.window(&o, ms(10_500), 161);
    assert_eq!((retries, firsts), (1, 100));
}

#[test]
fn the_minimum_rate_lets_low_traffic_retry() {
    let o = BudgetOptions::default(); // 3 a second over 10 s: 30
    let mut b = RetryBudget::new(T0, 0);
    let mut granted = 0;
    for i in 0..40u64 {
        if b.try_spend(&o, ms(i), 1 + granted) {
            granted += 1;
        }
    }
    assert_eq!(granted, 30);
}

#[test]
fn budget_options_are_validated_with_the_option_named() {
    for (o, name) in [
        (
            BudgetOptions {
                ratio: f64::NAN,
                ..BudgetOptions::default()
            },
            "retryBudget.ratio",
        ),
        (
            BudgetOptions {
                min_per_second: -1.0,
                ..BudgetOptions::default()
            },
            "retryBudget.minPerSecond",
        ),
        (
            BudgetOptions {
                window_ms: 5,
                ..BudgetOptions::default()
            },
            "retryBudget.windowMs",
        ),
    ] {
        let e = o.validate().unwrap_err();
        assert_eq!(e.option, name);
        assert!(e.message.starts_with(name), "{}", e.message);
    }
    assert!(BudgetOptions::default().validate().is_ok());
}

fn engine() -> (Engine, u64) {
    // Without the throttle: these tests call through overloads it would refuse (ADR 1000).
    let p = PolicyOptions {
        throttle: None,
        ..Default::default()
    };
    let mut e = Engine::new(p, RegistryOptions::default(), 5).unwrap();
    let h = e.resolve("api", T0).unwrap().handle;
    (e, h)
}

fn call(e: &mut Engine, h: u64, v: Verdict, at: u64) {
    match e.acquire(h, at).unwrap() {
        Acquired::Permit(p) => e.settle(h, p, v, at + NANOS_PER_MS).unwrap().unwrap(),
        a => panic!("{a:?}"),
    };
}

#[test]
fn the_engine_counts_first_attempts_from_the_keys_settled_calls() {
    let (mut e, h) = engine();
    e.set_retry_budget(no_min()).unwrap();
    let p = RetryPolicy::default();
    // The budget starts empty on first use: no retry yet.
    call(&mut e, h, Verdict::Failure, ms(0));
    let d = e
        .retry(h, &p, &settled(1, Verdict::Failure), ms(2))
        .unwrap();
    assert_eq!(d, Decision::Stop(Refusal::Budget));
    // 10 successful calls later (and 10 failing ones, under the breaker's minimum): 20 first
    // attempts. Retries granted count against the budget before they settle (none settles
    // here): the 4th would be more than 0.2 × (20 − 3).
    for i in 0..10 {
        call(&mut e, h, Verdict::Success, ms(10 + i));
        call(&mut e, h, Verdict::Overload, ms(10 + i));
    }
    let mut granted = 0;
    for i in 0..10 {
        if let Decision::Retry { .. } = e
            .retry(h, &p, &settled(1, Verdict::Overload), ms(40 + i))
            .unwrap()
        {
            granted += 1;
        }
    }
    assert_eq!(granted, 3);
    assert_eq!(e.retry_counts(h).unwrap(), (3, 8));
    assert_eq!(e.retry_counts_by_name("api"), Some((3, 8)));
    assert_eq!(e.retry_counts_by_name("other"), None);
}

#[test]
fn an_open_breaker_ends_the_retries_through_the_engine() {
    let (mut e, h) = engine();
    for i in 0..5 {
        call(&mut e, h, Verdict::Failure, ms(i));
    }
    let d = e.retry(
        h,
        &RetryPolicy::default(),
        &settled(1, Verdict::Failure),
        ms(10),
    );
    assert_eq!(d.unwrap(), Decision::Stop(Refusal::BreakerOpen));
}

#[test]
fn an_attempt_still_held_whose_verdict_would_open_the_breaker_is_not_retried() {
    // An HTTP response is decided on at its headers and settled at its body's end: the decision
    // must see the breaker as the settle will leave it (ADR 1224).
    let (mut e, h) = engine();
    for i in 0..4 {
        call(&mut e, h, Verdict::Success, ms(i));
    }
    for i in 0..4 {
        call(&mut e, h, Verdict::Failure, ms(10 + i));
    }
    let Acquired::Permit(held) = e.acquire(h, ms(20)).unwrap() else {
        panic!("a permit")
    };
    let p = RetryPolicy::default();
    let fifth = settled(1, Verdict::Failure);
    assert_eq!(
        e.retry_unsettled(h, Some(held), &p, &fifth, ms(21))
            .unwrap(),
        Decision::Stop(Refusal::BreakerOpen),
        "the fifth failure in a row opens the breaker"
    );
    // Only asked: the breaker is still closed, and the permit still live.
    assert_eq!(
        e.stats(h, ms(21)).unwrap().breaker,
        Some(resilix_engine::BreakerState::Closed)
    );
    let overload = settled(1, Verdict::Overload);
    let d = e
        .retry_unsettled(h, Some(held), &p, &overload, ms(21))
        .unwrap();
    assert!(
        matches!(d, Decision::Retry { .. }),
        "an overload is no breaker failure: {d:?}"
    );
    e.settle(h, held, Verdict::Failure, ms(22))
        .unwrap()
        .unwrap();
    assert_eq!(
        e.stats(h, ms(22)).unwrap().breaker,
        Some(resilix_engine::BreakerState::Open)
    );
    // A settled (stale) permit: as `retry`, which sees the open breaker.
    assert_eq!(
        e.retry_unsettled(h, Some(held), &p, &fifth, ms(23))
            .unwrap(),
        Decision::Stop(Refusal::BreakerOpen)
    );
}

#[test]
fn a_key_evicted_for_another_leaves_no_budget_behind() {
    let mut e = Engine::new(
        PolicyOptions::default(),
        RegistryOptions {
            max_keys: 1,
            ..RegistryOptions::default()
        },
        5,
    )
    .unwrap();
    let a = e.resolve("a", T0).unwrap().handle;
    call(&mut e, a, Verdict::Failure, ms(0));
    let _ = e.retry(
        a,
        &RetryPolicy::default(),
        &settled(1, Verdict::Failure),
        ms(2),
    );
    assert_eq!(e.retry_counts(a).unwrap(), (1, 0));
    let b = e.resolve("b", ms(3)).unwrap().handle;
    assert!(e.retry_counts(a).is_err(), "a's handle is stale");
    assert_eq!(e.retry_counts(b).unwrap(), (0, 0));
    call(&mut e, b, Verdict::Failure, ms(4));
    let _ = e.retry(
        b,
        &RetryPolicy::default(),
        &settled(1, Verdict::Failure),
        ms(6),
    );
    assert_eq!(e.retry_counts(b).unwrap(), (1, 0));
}
