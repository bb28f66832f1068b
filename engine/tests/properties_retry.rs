//! Property tests of retry (ADR 0900–0902): the backoff, the decision, and the per-key retry
//! budget, through the public API (`retry::backoff_ns`, `retry::decide`, `Engine::retry`).
//!
//! - The backoff stays within its bounds for any policy, retry number, previous delay and
//!   random draw (NaN, infinities, out of [0, 1) included): full jitter within
//!   `[0, min(cap, base × 2^(retry − 1))]` and growing with the draw, decorrelated jitter within
//!   `[min(base, cap), min(cap, max(base, 3 × previous))]`.
//! - A retry is granted only for a verdict in `retryOn`, before `maxAttempts`, with the breaker
//!   not open, after at least the (bounded) Retry-After hint, and only when the wait and the
//!   key's latency end before the deadline; a refusal names the first rule that refused, and
//!   the budget is asked (and counts a grant or a refusal) only for a retry that would
//!   otherwise happen.
//! - A call's attempts never exceed `maxAttempts`, whatever the verdicts and the budget.
//! - The budget: through random first calls, retries and settles, with the clock jumping
//!   forwards, standing still or (in half the runs) going back, the counts of retries granted
//!   and refused equal the model's; with a clock that never goes back, the retries granted in
//!   any nine tenths of the window never exceed `ratio` × the first attempts settled in the two
//!   windows before (and the retries settled then, granted before those nine tenths), plus
//!   `minPerSecond` × the window's seconds.
//! - Bad budget options (NaN, negative, huge) are refused with an error naming them.

use proptest::prelude::*;
use resilix_engine::retry::{backoff_ns, decide, KeyView, RetryBudget, Settled};
use resilix_engine::{
    Acquired, BudgetOptions, Decision, Engine, Jitter, PolicyOptions, Refusal, RegistryOptions,
    RetryOn, RetryPolicy, Verdict, NANOS_PER_MS,
};
use steps::{cases, first_attempt, step_ns, tick};

#[path = "support/steps.rs"]
mod steps;

fn verdict() -> impl Strategy<Value = Verdict> {
    (0usize..7).prop_map(|i| Verdict::ALL[i])
}

fn ns() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        0u64..1_000 * NANOS_PER_MS,
        0u64..100_000 * NANOS_PER_MS,
        Just(u64::MAX),
        any::<u64>()
    ]
}

fn draw() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => 0.0f64..1.0,
        1 => Just(f64::NAN),
        1 => Just(f64::INFINITY),
        1 => Just(f64::NEG_INFINITY),
        1 => Just(-0.5f64),
        1 => Just(1.5f64),
        1 => any::<f64>(),
    ]
}

fn policy() -> impl Strategy<Value = RetryPolicy> {
    (
        prop_oneof![Just(0u32), 1u32..6, Just(u32::MAX)],
        ns(),
        ns(),
        any::<bool>(),
        0u32..256,
        ns(),
    )
        .prop_map(
            |(max_attempts, base_ns, max_delay_ns, full, mask, max_retry_after_ns)| RetryPolicy {
                max_attempts,
                base_ns,
                max_delay_ns,
                jitter: if full {
                    Jitter::Full
                } else {
                    Jitter::Decorrelated
                },
                retry_on: RetryOn::from_mask(mask),
                max_retry_after_ns,
            },
        )
}

fn settled() -> impl Strategy<Value = Settled> {
    (
        prop_oneof![Just(0u32), 1u32..8, Just(u32::MAX)],
        verdict(),
        proptest::option::of(ns()),
        proptest::option::of(ns()),
        ns(),
    )
        .prop_map(
            |(attempts, verdict, hint_ns, remaining_ns, previous_delay_ns)| Settled {
                attempts,
                verdict,
                hint_ns,
                remaining_ns,
                previous_delay_ns,
            },
        )
}

// Each property's own cases (`PROPTEST_CASES` overrides): 1 to 3 s in the dev profile on a
// 2-core machine at load 6 to 8.
proptest! {
    #![proptest_config(ProptestConfig { cases: cases(2_000), max_shrink_iters: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn backoff_stays_within_its_bounds(
        p in policy(),
        retry in prop_oneof![Just(0u32), 1u32..70, Just(u32::MAX)],
        previous in ns(),
        u in draw(),
        v in 0.0f64..1.0,
    ) {
        let d = backoff_ns(&p, retry, previous, u);
        let cap = p.max_delay_ns;
        prop_assert!(d <= cap, "{} past the cap {}", d, cap);
        let base = (p.base_ns as f64).min(cap as f64);
        match p.jitter {
            Jitter::Full => {
                let exp = retry.saturating_sub(1).min(62) as i32;
                let hi = (base * 2f64.powi(exp)).min(cap as f64);
                prop_assert!(d as f64 <= hi, "{} past {} for retry {}", d, hi, retry);
                // A larger draw never waits less.
                if u.is_finite() && (0.0..=1.0).contains(&u) {
                    let (lo_u, hi_u) = if u <= v { (u, v) } else { (v, u) };
                    prop_assert!(backoff_ns(&p, retry, previous, lo_u) <= backoff_ns(&p, retry, previous, hi_u));
                }
            }
            Jitter::Decorrelated => {
                prop_assert!(d as f64 >= base.floor(), "{} under the base {}", d, base);
                let hi = ((previous as f64).max(base) * 3.0).min(cap as f64).max(base);
                prop_assert!(d as f64 <= hi, "{} past {}", d, hi);
            }
        }
    }

    #[test]
    fn a_retry_is_granted_only_within_every_rule(
        p in policy(),
        s in settled(),
        estimate_ns in ns(),
        breaker_open in prop_oneof![4 => Just(false), 1 => Just(true)],
        ratio in 0.0f64..2.0,
        min_per_second in 0.0f64..5.0,
        settled_calls in 0u64..1_000,
        now in ns(),
        u in draw(),
    ) {
        let opts = BudgetOptions { ratio, min_per_second, window_ms: 10_000 };
        let mut budget = RetryBudget::new(now, 0);
        let before = (budget.retried, budget.refused);
        let key = KeyView { settled: settled_calls, estimate_ns, breaker_open };
        let d = decide(&p, &mut budget, &opts, &s, key, now, u);
        let hint = s.hint_ns.map(|h| h.min(p.max_retry_after_ns));
        // The first rule that refuses, in the documented order; the budget last.
        let first = if !p.retry_on.contains(s.verdict) {
            Some(Refusal::NotRetryable)
        } else if s.attempts >= p.max_attempts {
            Some(Refusal::AttemptsSpent)
        } else if breaker_open {
            Some(Refusal::BreakerOpen)
        } else if s.remaining_ns.is_some_and(|left| hint.is_some_and(|h| h >= left)) {
            Some(Refusal::RetryAfterBeyondDeadline)
        } else {
            None
        };
        match d {
            Decision::Retry { delay_ns } => {
                prop_assert_eq!(first, None);
                prop_assert!(matches!(s.verdict, Verdict::Failure | Verdict::Overload | Verdict::Timeout));
                prop_assert!(delay_ns >= hint.unwrap_or(0), "{} before the hint", delay_ns);
                prop_assert!(delay_ns <= p.max_delay_ns.max(hint.unwrap_or(0)));
                if let Some(left) = s.remaining_ns {
                    prop_assert!(delay_ns.saturating_add(estimate_ns) < left, "past the deadline");
                }
                prop_assert_eq!((budget.retried, budget.refused), (before.0 + 1, before.1));
            }
            Decision::Stop(r) => {
                match first {
                    Some(f) => prop_assert_eq!(r, f),
                    None => prop_assert!(matches!(r, Refusal::Deadline | Refusal::Budget), "{:?}", r),
                }
                let counted = if r == Refusal::Budget { (before.0, before.1 + 1) } else { before };
                prop_assert_eq!((budget.retried, budget.refused), counted, "budget asked for {:?}", r);
            }
        }
    }

    /// A call's whole loop: attempts never exceed `maxAttempts`.
    #[test]
    fn attempts_never_exceed_max_attempts(
        p in policy(),
        verdicts in proptest::collection::vec(verdict(), 1..12),
        hints in proptest::collection::vec(proptest::option::of(ns()), 1..12),
        generous in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let opts = if generous {
            BudgetOptions { ratio: 10.0, min_per_second: 1e6, window_ms: 10_000 }
        } else {
            BudgetOptions::default()
        };
        let mut budget = RetryBudget::new(0, 0);
        let mut rng = resilix_engine::SplitMix64::new(seed);
        let (mut attempts, mut previous, mut now) = (1u32, 0u64, 0u64);
        loop {
            let i = attempts as usize - 1;
            let s = Settled {
                attempts,
                verdict: verdicts[i % verdicts.len()],
                hint_ns: hints[i % hints.len()],
                remaining_ns: None,
                previous_delay_ns: previous,
            };
            let key = KeyView { settled: attempts as u64, estimate_ns: 0, breaker_open: false };
            match decide(&p, &mut budget, &opts, &s, key, now, rng.next_f64()) {
                Decision::Retry { delay_ns } => {
                    attempts += 1;
                    previous = delay_ns;
                    now = now.saturating_add(delay_ns);
                    prop_assert!(attempts <= p.max_attempts.max(1), "attempt {} of {}", attempts, p.max_attempts);
                }
                Decision::Stop(_) => break,
            }
            if attempts > 64 {
                // Any larger maxAttempts keeps going: enough to have tested the bound.
                break;
            }
        }
    }
}

#[derive(Clone, Debug)]
enum Op {
    /// A first attempt settles with this verdict.
    Call(Verdict),
    /// A settled attempt asks for a retry; `true`: the retry then runs and settles.
    Retry(bool),
    Tick(u64, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => verdict().prop_map(Op::Call),
        4 => any::<bool>().prop_map(Op::Retry),
        3 => (
            step_ns(500, 30_000),
            prop_oneof![5 => Just(false), 1 => Just(true)]
        )
            .prop_map(|(d, back)| Op::Tick(d, back)),
    ]
}

fn budget_options() -> impl Strategy<Value = BudgetOptions> {
    (
        prop_oneof![Just(0.0f64), 0.0f64..1.0, Just(10.0)],
        prop_oneof![Just(0.0f64), 0.0f64..5.0, Just(0.05)],
        prop_oneof![Just(100u64), 100u64..20_000, Just(2_147_483_647u64)],
    )
        .prop_map(|(ratio, min_per_second, window_ms)| BudgetOptions {
            ratio,
            min_per_second,
            window_ms,
        })
}

/// The key's budget under random first calls, retries and settles.
fn run_budget(opts: BudgetOptions, start: u64, monotonic: bool, ops: &[Op]) {
    let policies = PolicyOptions {
        breaker: None,
        limiter: None,
        bulkhead: None,
        throttle: None,
        quota: None,
    };
    let mut e = Engine::new(policies, RegistryOptions::default(), 3).unwrap();
    e.set_retry_budget(opts).unwrap();
    let k = e.resolve("k", start).unwrap().handle;
    let policy = RetryPolicy {
        max_attempts: u32::MAX,
        ..RetryPolicy::default()
    };
    let window = opts.window_ms * NANOS_PER_MS;
    let (mut now, mut latest) = (start, start);
    // Times (the latest then) of every first attempt settled and every retry granted (and
    // whether it ran and settled); retries refused.
    let (mut firsts, mut grants, mut refused) =
        (Vec::<u64>::new(), Vec::<(u64, bool)>::new(), 0u64);
    let settle = |e: &mut Engine, v: Verdict, now: u64| {
        let Acquired::Permit(id) = e.acquire(k, now).unwrap() else {
            panic!("no policy refuses")
        };
        e.settle(k, id, v, now).unwrap().unwrap();
    };
    for op in ops {
        match op {
            Op::Tick(d, back) => {
                now = tick(now, *d, *back, monotonic);
                latest = latest.max(now);
            }
            Op::Call(v) => {
                settle(&mut e, *v, now);
                firsts.push(latest);
            }
            Op::Retry(runs) => {
                let s = first_attempt(Verdict::Failure);
                match e.retry(k, &policy, &s, now).unwrap() {
                    Decision::Retry { .. } => {
                        if *runs {
                            settle(&mut e, Verdict::Success, now);
                        }
                        grants.push((latest, *runs));
                        // Within (latest − span, latest − until].
                        let within = |t: u64, span: u64, until: u64| {
                            latest.checked_sub(span).is_none_or(|f| t > f)
                                && latest.checked_sub(until).is_some_and(|u| t <= u)
                        };
                        let tenths = window / 10 * 9;
                        let recent = grants.iter().filter(|g| within(g.0, tenths, 0)).count();
                        // The budget counts the calls settled since a look less than a window
                        // before its oldest tenth, less the retries granted in its tenths: at
                        // most the first attempts of the last two windows, and the retries
                        // that settled then but were granted before the last nine tenths.
                        let first = firsts.iter().filter(|t| within(**t, 2 * window, 0)).count();
                        let older = grants
                            .iter()
                            .filter(|g| g.1 && within(g.0, 2 * window, tenths))
                            .count();
                        let allowed = opts.ratio * (first + older) as f64
                            + opts.min_per_second * opts.window_ms as f64 / 1000.0;
                        let recent = recent as f64;
                        // The budget knows the time only when asked: with a clock that went
                        // back, calls settled long before may count as recent.
                        assert!(
                            !monotonic || recent <= allowed + 1e-9,
                            "{recent} retries in 0.9 of a window, {allowed} allowed"
                        );
                    }
                    Decision::Stop(Refusal::Budget) => refused += 1,
                    other => panic!("only the budget refuses here: {other:?}"),
                }
            }
        }
        assert_eq!(
            e.retry_counts(k).unwrap(),
            (grants.len() as u64, refused),
            "retries granted and refused"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(1_500), max_shrink_iters: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn the_budget_bounds_retries_to_its_ratio(
        opts in budget_options(),
        start in prop_oneof![Just(0u64), Just(1u64), 1u64..u64::MAX / 4],
        monotonic in any::<bool>(),
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run_budget(opts, start, monotonic, &ops);
    }

    /// Any ratio, rate or window out of range is an error naming the option, never a panic.
    #[test]
    fn bad_budget_options_are_refused(
        ratio in prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(-1.0), Just(0.0), Just(10.0), Just(10.5), any::<f64>()],
        min_per_second in prop_oneof![Just(f64::NAN), Just(f64::NEG_INFINITY), Just(-0.1), Just(0.0), Just(1e6), Just(1e6 + 1.0), any::<f64>()],
        window_ms in prop_oneof![Just(0u64), Just(99u64), Just(100u64), Just(2_147_483_647u64), Just(2_147_483_648u64), Just(u64::MAX)],
    ) {
        let o = BudgetOptions { ratio, min_per_second, window_ms };
        let ok = ratio.is_finite() && (0.0..=10.0).contains(&ratio)
            && min_per_second.is_finite() && (0.0..=1e6).contains(&min_per_second)
            && (100..=2_147_483_647).contains(&window_ms);
        let mut e = Engine::new(PolicyOptions::default(), RegistryOptions::default(), 1).unwrap();
        match e.set_retry_budget(o) {
            Ok(()) => prop_assert!(ok, "accepted {:?}", o),
            Err(err) => {
                prop_assert!(!ok, "refused valid {:?}: {}", o, err);
                prop_assert!(err.option.starts_with("retryBudget."), "{}", err.option);
                prop_assert!(err.message.contains(err.option), "{}", err.message);
                prop_assert_eq!(e.retry_budget(), &BudgetOptions::default(), "a refused budget was kept");
            }
        }
    }
}
