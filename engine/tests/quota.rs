//! Quotas (ADR 1100, 1101) on plain `now` values: the sliding window never frees a charge
//! before an upstream counting a sliding log does, several budgets at once, refunds and extra
//! charges, the oversize and deadline refusals, the wait's order, header readings that only
//! tighten, and one cooldown per refusal with the budget coming back gradually after it.

use resilix_engine::quota::{
    bucket_ns, Costs, Quota, QuotaCheck, QuotaDim, QuotaOptions, SlidingWindow, BUCKETS, COSTS,
    DEFAULT_COOLDOWN_NS, LATE_ARRIVAL_MS,
};
use resilix_engine::quota_headers::{read_header_block, Dimension, Reading};
use resilix_engine::{
    Acquired, BulkheadOptions, Costed, Engine, KeyHandle, PolicyOptions, RegistryOptions,
    RejectReason, Verdict, NANOS_PER_MS,
};
use steps::reading;

#[path = "support/steps.rs"]
mod steps;

const T0: u64 = 1_000 * NANOS_PER_MS;
const REQ: usize = 0;
const TOK: usize = 1;

fn ms(n: u64) -> u64 {
    T0 + n * NANOS_PER_MS
}

/// 3 requests and 1 000 tokens per second.
fn opts() -> QuotaOptions {
    let mut o = QuotaOptions::default();
    o.dims[0] = QuotaDim {
        cost: REQ as u8,
        limit: 3,
        window_ns: 1_000 * NANOS_PER_MS,
    };
    o.dims[1] = QuotaDim {
        cost: TOK as u8,
        limit: 1_000,
        window_ns: 1_000 * NANOS_PER_MS,
    };
    o.len = 2;
    o.names[REQ] = Some(Dimension::Requests);
    o.names[TOK] = Some(Dimension::Tokens);
    o
}

fn call(tokens: u64) -> Costs {
    let mut c = [0; COSTS];
    c[REQ] = 1;
    c[TOK] = tokens;
    c
}

fn take(q: &mut Quota, now: u64, c: &Costs) {
    assert_eq!(q.check(now, c, u64::MAX, false), QuotaCheck::Take);
    q.take(now, c);
}

/// A window of 6 s frees a charge made at 1 050 ms once the whole window has passed after the
/// end of its bucket (1 100 ms), plus one bucket: at 7 200 ms.
#[test]
fn the_window_frees_a_charge_one_bucket_after_the_upstream_does() {
    let mut w = SlidingWindow::new(100, 6_000 * NANOS_PER_MS, 0);
    w.charge(1_050 * NANOS_PER_MS, 30);
    assert_eq!(w.spent(1_050 * NANOS_PER_MS), 30);
    assert_eq!(
        w.free_at(1_050 * NANOS_PER_MS, 1),
        7_200 * NANOS_PER_MS,
        "freed at the end of its bucket + the window + one bucket"
    );
    assert_eq!(w.spent(7_200 * NANOS_PER_MS - 1), 30);
    assert_eq!(w.spent(7_200 * NANOS_PER_MS), 0);
}

/// Charges at random times, against the exact sliding log an upstream keeps: at every
/// millisecond, everything the log still counts (and up to one bucket more) is still spent here.
#[test]
fn the_window_never_frees_what_a_sliding_log_still_counts() {
    // Windows whose bucket is shorter than the late margin, and one whose bucket is longer.
    for window_ms in [600, 3_000, 9_000u64] {
        let window = window_ms * NANOS_PER_MS;
        let late = (window / BUCKETS).max(LATE_ARRIVAL_MS * NANOS_PER_MS);
        let mut w = SlidingWindow::new(1 << 40, window, 0);
        let mut log: Vec<(u64, u64)> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for t_ms in 0..3 * window_ms {
            let t = t_ms * NANOS_PER_MS;
            if next() % 3 == 0 {
                let a = 1 + next() % 50;
                w.charge(t, a);
                log.push((t, a));
            }
            // The upstream received each request up to `late` later than it was charged: a
            // bucket, and at least the late margin.
            log.retain(|(at, _)| t < at + late + window);
            let counted: u64 = log.iter().map(|(_, a)| a).sum();
            assert!(
                w.spent(t) >= counted,
                "window {window_ms} ms, at {t_ms} ms: {} spent here, the upstream counts {counted}",
                w.spent(t)
            );
        }
    }
}

#[test]
fn a_window_of_six_seconds_or_more_keeps_its_sixtieths_and_a_shorter_one_stretches_them() {
    // From 6 s a bucket (a sixtieth) is at least the late margin: the buckets are as they were.
    for window_ms in [6_000, 60_000, 3_600_000u64] {
        assert_eq!(
            bucket_ns(window_ms * NANOS_PER_MS),
            window_ms * NANOS_PER_MS / BUCKETS
        );
    }
    // Under it, 61 buckets span the window and the margin, so that the hold never shrinks
    // below the margin however short the window.
    for window_ms in [1, 100, 1_000, 3_000, 5_999u64] {
        let window = window_ms * NANOS_PER_MS;
        let b = bucket_ns(window);
        assert!(b > window / BUCKETS, "{window_ms} ms: {b} ns");
        assert!(
            61 * b + 61 > window + LATE_ARRIVAL_MS * NANOS_PER_MS,
            "{window_ms} ms: {b} ns"
        );
        assert!(
            61 * b <= window + LATE_ARRIVAL_MS * NANOS_PER_MS,
            "{window_ms} ms: {b} ns"
        );
    }
}

#[test]
fn a_call_fits_only_when_every_budget_has_room() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(400));
    take(&mut q, ms(10), &call(400));
    // Tokens: 800 + 400 > 1 000. The first 400 leave the window at bucket 0 + 62 buckets of a
    // second and the late margin over 61 (18.03 ms).
    let bucket = bucket_ns(1_000 * NANOS_PER_MS);
    let first_epoch = ms(0) / bucket;
    assert_eq!(
        q.check(ms(20), &call(400), u64::MAX, false),
        QuotaCheck::Wait((first_epoch + BUCKETS + 2) * bucket)
    );
    // 150 tokens fit, but a third request leaves no request for a fourth call.
    take(&mut q, ms(20), &call(150));
    match q.check(ms(30), &call(1), u64::MAX, false) {
        QuotaCheck::Wait(t) => assert_eq!(t, (first_epoch + BUCKETS + 2) * bucket),
        other => panic!("the request budget is spent: {other:?}"),
    }
}

#[test]
fn a_budget_spent_to_its_limit_admits_no_call_even_one_that_names_no_cost_of_it() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(1_000));
    assert!(matches!(
        q.check(ms(1), &call(0), u64::MAX, false),
        QuotaCheck::Wait(_)
    ));
}

#[test]
fn a_refund_frees_budget_at_once_and_an_extra_charge_takes_it() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(900));
    assert!(matches!(
        q.check(ms(5), &call(500), u64::MAX, false),
        QuotaCheck::Wait(_)
    ));
    // The call used 200 tokens, not 900: refund 700 into its own bucket.
    let mut d = [0i64; COSTS];
    d[TOK] = -700;
    q.adjust(ms(5), ms(0), &d);
    take(&mut q, ms(5), &call(500));
    assert_eq!(q.spent(ms(5)).nth(1).unwrap().1, 700);
    // The second used 250 more than it said.
    d[TOK] = 250;
    q.adjust(ms(6), ms(5), &d);
    assert_eq!(q.spent(ms(6)).nth(1).unwrap().1, 950);
    assert!(matches!(
        q.check(ms(6), &call(100), u64::MAX, false),
        QuotaCheck::Wait(_)
    ));
}

#[test]
fn a_refund_for_a_charge_that_left_the_window_changes_nothing() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(300));
    take(&mut q, ms(2_000), &call(300));
    let mut d = [0i64; COSTS];
    d[TOK] = -300;
    q.adjust(ms(2_001), ms(0), &d);
    assert_eq!(q.spent(ms(2_001)).nth(1).unwrap().1, 300);
}

#[test]
fn a_call_larger_than_a_whole_budget_is_oversize_and_a_late_one_is_refused() {
    let mut q = Quota::new(&opts(), ms(0));
    assert_eq!(
        q.check(ms(0), &call(1_001), u64::MAX, false),
        QuotaCheck::Oversize
    );
    take(&mut q, ms(0), &call(1_000));
    // Frees at about 1 033 ms: a call with 500 ms left is refused, one with 2 s waits.
    assert_eq!(
        q.check(ms(1), &call(10), 500 * NANOS_PER_MS, false),
        QuotaCheck::Refuse
    );
    assert!(matches!(
        q.check(ms(1), &call(10), 2_000 * NANOS_PER_MS, false),
        QuotaCheck::Wait(_)
    ));
}

#[test]
fn a_new_call_waits_behind_the_waiters_and_the_head_is_not_held_back_by_them() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(800));
    let big = call(600);
    let QuotaCheck::Wait(ready) = q.check(ms(1), &big, u64::MAX, false) else {
        panic!("600 more do not fit");
    };
    q.enqueue(&big);
    // 100 tokens fit now, but the big call waits first.
    let QuotaCheck::Wait(behind) = q.check(ms(2), &call(100), u64::MAX, false) else {
        panic!("a new call must not overtake a waiter");
    };
    assert!(behind >= ready);
    // At its time, the head fits whatever waits behind it.
    assert_eq!(q.check(ready, &big, u64::MAX, true), QuotaCheck::Take);
    assert!(q.dequeue(&big));
    assert!(!q.dequeue(&big), "nobody waits any more");
}

#[test]
fn a_reading_tightens_the_budget_until_its_reset_and_budget_comes_back_at_its_rate() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(100));
    // The upstream says 100 tokens are left (another client spends the rest), all 1 000
    // back in 900 ms: 1 token per ms.
    assert!(!q.observe(
        ms(50),
        &reading(Dimension::Tokens, 1_000, 100, 900),
        false,
        ms(0),
        &call(100)
    ));
    take(&mut q, ms(50), &call(100));
    // 300 more: 300 − (100 − 100 charged since) = 300 tokens to come back at 1 per ms.
    assert_eq!(
        q.check(ms(50), &call(300), u64::MAX, false),
        QuotaCheck::Wait(ms(350))
    );
    // After its reset the cap is gone.
    assert_eq!(
        q.check(ms(951), &call(300), u64::MAX, false),
        QuotaCheck::Take
    );
}

#[test]
fn a_reading_counts_what_was_charged_after_its_call_was() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(100));
    take(&mut q, ms(100), &call(200));
    // The answer to the first call: 800 left when it was counted; 200 were charged since.
    q.observe(
        ms(150),
        &reading(Dimension::Tokens, 1_000, 800, 1_000),
        false,
        ms(0),
        &call(100),
    );
    assert_eq!(
        q.check(ms(150), &call(600), u64::MAX, false),
        QuotaCheck::Take
    );
    assert!(matches!(
        q.check(ms(150), &call(601), u64::MAX, false),
        QuotaCheck::Wait(_)
    ));
}

#[test]
fn a_reading_never_loosens_the_configured_budget() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(900));
    q.observe(
        ms(10),
        &reading(Dimension::Tokens, 1_000_000, 999_000, 60_000),
        false,
        ms(0),
        &call(900),
    );
    assert!(matches!(
        q.check(ms(10), &call(200), u64::MAX, false),
        QuotaCheck::Wait(_)
    ));
}

#[test]
fn headers_as_the_binding_passes_them_are_read() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(10));
    let r = read_header_block(
        "x-ratelimit-limit-tokens: 1000\nX-RateLimit-Remaining-Tokens: 0\nx-ratelimit-reset-tokens: 1s",
        1.7e12,
    );
    q.observe(ms(1), &r, false, ms(0), &call(10));
    match q.check(ms(1), &call(10), u64::MAX, false) {
        QuotaCheck::Wait(t) => assert!(t > ms(1) && t <= ms(1_001), "{t}"),
        other => panic!("no tokens are left: {other:?}"),
    }
}

#[test]
fn one_refusal_cools_the_key_down_once_and_refusals_in_flight_only_extend_it() {
    let mut q = Quota::new(&opts(), ms(0));
    let r = Reading {
        retry_after_ns: Some(1_500 * NANOS_PER_MS),
        ..Reading::default()
    };
    assert!(q.observe(ms(0), &r, true, ms(0), &call(1)));
    // Three more calls that were in flight meet the same refusal.
    for t in [1, 2, 3] {
        assert!(!q.observe(ms(t), &r, true, ms(0), &call(1)));
    }
    assert_eq!(q.cooldowns(), 1);
    assert_eq!(q.cooling_ns(ms(3)), 1_500 * NANOS_PER_MS);
    match q.check(ms(4), &call(1), u64::MAX, false) {
        QuotaCheck::Wait(t) => assert!(t >= ms(1_503)),
        other => panic!("cooling down: {other:?}"),
    }
    // A refusal after it ended begins another.
    assert!(q.observe(ms(5_000), &r, true, ms(4_999), &call(1)));
    assert_eq!(q.cooldowns(), 2);
}

#[test]
fn a_refusal_without_a_hint_waits_for_the_exhausted_budgets_reset_or_a_second() {
    let mut q = Quota::new(&opts(), ms(0));
    q.observe(
        ms(0),
        &reading(Dimension::Tokens, 1_000, 0, 700),
        true,
        ms(0),
        &call(1),
    );
    assert_eq!(q.cooling_ns(ms(0)), 700 * NANOS_PER_MS);
    let mut q = Quota::new(&opts(), ms(0));
    q.observe(ms(0), &Reading::default(), true, ms(0), &call(1));
    assert_eq!(q.cooling_ns(ms(0)), DEFAULT_COOLDOWN_NS);
}

#[test]
fn after_a_cooldown_the_budget_comes_back_over_a_window_not_all_at_once() {
    let mut q = Quota::new(&opts(), ms(0));
    let r = Reading {
        retry_after_ns: Some(1_000 * NANOS_PER_MS),
        ..Reading::default()
    };
    q.observe(ms(0), &r, true, ms(0), &call(1));
    // Ten callers wait; each asks in turn when its turn comes.
    let mut times = Vec::new();
    let mut now = ms(1_000);
    for _ in 0..3 {
        loop {
            match q.check(now, &call(100), u64::MAX, true) {
                QuotaCheck::Take => break,
                QuotaCheck::Wait(t) => now = t,
                other => panic!("{other:?}"),
            }
        }
        q.take(now, &call(100));
        times.push(now);
    }
    // 100 tokens come back every 100 ms (1 000 a second), one request every 333 ms: the
    // request budget paces them.
    assert!(
        times[0] > ms(1_000),
        "the first waits for budget to come back: {times:?}"
    );
    assert!(times[1] - times[0] >= 333 * NANOS_PER_MS, "{times:?}");
    assert!(times[2] - times[1] >= 333 * NANOS_PER_MS, "{times:?}");
}

#[test]
fn a_charge_moved_to_when_the_call_starts_frees_later() {
    let mut q = Quota::new(&opts(), ms(0));
    take(&mut q, ms(0), &call(1_000));
    let early = match q.check(ms(1), &call(1), u64::MAX, false) {
        QuotaCheck::Wait(t) => t,
        other => panic!("{other:?}"),
    };
    // It waited 300 ms in the limiter's queue: the upstream counts it from then.
    let mut d = [0i64; COSTS];
    d[REQ] = -1;
    d[TOK] = -1_000;
    q.adjust(ms(300), ms(0), &d);
    q.take(ms(300), &call(1_000));
    let late = match q.check(ms(301), &call(1), u64::MAX, false) {
        QuotaCheck::Wait(t) => t,
        other => panic!("{other:?}"),
    };
    assert!(
        late >= early + 300 * NANOS_PER_MS - 20 * NANOS_PER_MS,
        "{early} {late}"
    );
}

// ---- through the policy set: its place between the breaker and the limiter ---------------

fn engine(bulkhead: Option<BulkheadOptions>) -> (Engine, KeyHandle) {
    let p = PolicyOptions {
        quota: Some(opts()),
        bulkhead,
        ..PolicyOptions::default()
    };
    let mut e = Engine::new(p, RegistryOptions::default(), 7).unwrap();
    let h = e.resolve("llm", ms(0)).unwrap().handle;
    (e, h)
}

fn spent(e: &mut Engine, h: KeyHandle, now: u64) -> Vec<u64> {
    let q = e.policies_mut(h).unwrap().quota_mut().unwrap();
    q.spent(now).map(|(_, s, _, _)| s).collect()
}

#[test]
fn an_oversize_call_is_refused_as_quota_and_charges_nothing() {
    let (mut e, h) = engine(None);
    let r = e
        .acquire_costing(h, ms(0), u64::MAX, 11, 0, &call(5_000), false)
        .unwrap();
    assert_eq!(r, Costed::Oversize);
    assert_eq!(spent(&mut e, h, ms(0)), vec![0, 0]);
    assert_eq!(
        e.stats(h, ms(0)).unwrap().rejections[RejectReason::Quota as usize],
        1
    );
}

#[test]
fn a_call_refused_past_the_quota_is_refunded() {
    let (mut e, h) = engine(Some(BulkheadOptions { max_concurrent: 1 }));
    let Costed::Now(Acquired::Permit(p)) = e
        .acquire_costing(h, ms(0), u64::MAX, 11, 0, &call(100), false)
        .unwrap()
    else {
        panic!("the first call runs");
    };
    let second = e
        .acquire_costing(h, ms(1), u64::MAX, 11, 0, &call(100), false)
        .unwrap();
    assert_eq!(
        second,
        Costed::Now(Acquired::Rejected(RejectReason::Bulkhead))
    );
    assert_eq!(
        spent(&mut e, h, ms(1)),
        vec![1, 100],
        "only the first is charged"
    );
    e.settle(h, p, Verdict::Success, ms(2)).unwrap().unwrap();
}

#[test]
fn a_waiter_is_counted_until_it_is_admitted_or_leaves() {
    let (mut e, h) = engine(None);
    let c = call(1_000);
    assert!(matches!(
        e.acquire_costing(h, ms(0), u64::MAX, 11, 0, &c, false)
            .unwrap(),
        Costed::Now(Acquired::Permit(_))
    ));
    let Costed::Wait(t) = e
        .acquire_costing(h, ms(1), u64::MAX, 11, 0, &c, false)
        .unwrap()
    else {
        panic!("no budget left")
    };
    assert!(
        !e.policies_mut(h).unwrap().is_idle(),
        "a key with a waiter is not idle"
    );
    let Costed::Wait(t2) = e
        .acquire_costing(h, ms(2), u64::MAX, 11, 0, &c, false)
        .unwrap()
    else {
        panic!("behind the first waiter")
    };
    assert!(t2 > t, "the second waiter waits for the first's budget too");
    assert!(
        !e.policies_mut(h).unwrap().quota_leave(3, &c),
        "none waits at level 3"
    );
    assert!(e.policies_mut(h).unwrap().quota_leave(11, &c));
    assert!(matches!(
        e.acquire_costing(h, t, u64::MAX, 11, 0, &c, true).unwrap(),
        Costed::Now(Acquired::Permit(_))
    ));
    assert_eq!(e.policies_mut(h).unwrap().quota().unwrap().waiting(), 0);
}

/// A call waits for budget behind the waiters at its level or above, as in the limiter's queue
/// (ADR 1001, 1108): a critical call is not refused for the sheddable calls waiting, a
/// sheddable one is, and leaving is counted by level.
#[test]
fn a_call_waits_for_budget_only_behind_the_waiters_at_its_level_or_above() {
    use resilix_engine::Priority;
    let (mut e, h) = engine(None);
    let (low, high) = (Priority::Sheddable.level(3), Priority::Critical.level(3));
    let c = call(10);
    for i in 0..3 {
        let r = e.acquire_costing(h, ms(i), u64::MAX, low, 0, &c, false);
        assert!(matches!(r.unwrap(), Costed::Now(Acquired::Permit(_))));
    }
    // 3 requests a second are spent: 60 sheddable calls wait, 20 s of budget.
    for _ in 0..60 {
        let r = e.acquire_costing(h, ms(10), u64::MAX, low, 0, &c, false);
        assert!(matches!(r.unwrap(), Costed::Wait(_)), "{r:?}");
    }
    // Alone, a call fits in about 1.1 s: a critical one with 2 s waits, ahead of them all.
    let critical = e
        .acquire_costing(h, ms(10), 2_000 * NANOS_PER_MS, high, 0, &c, false)
        .unwrap();
    let Costed::Wait(t) = critical else {
        panic!("a critical call behind 60 sheddable waiters: {critical:?}")
    };
    assert!(t <= ms(1_200), "ready at {} ms", (t - T0) / NANOS_PER_MS);
    // A sheddable one with the same deadline waits behind the 60: refused at once.
    let r = e
        .acquire_costing(h, ms(10), 2_000 * NANOS_PER_MS, low, 0, &c, false)
        .unwrap();
    assert_eq!(r, Costed::Now(Acquired::Rejected(RejectReason::Quota)));
    // A second critical call waits behind the first only.
    let Costed::Wait(t2) = e
        .acquire_costing(h, ms(10), 2_000 * NANOS_PER_MS, high, 0, &c, false)
        .unwrap()
    else {
        panic!("a second critical call")
    };
    assert!(t2 >= t);
    let p = e.policies_mut(h).unwrap();
    assert_eq!(p.quota().unwrap().waiting(), 62);
    assert!(p.quota_leave(high, &c) && p.quota_leave(high, &c));
    assert!(!p.quota_leave(high, &c), "no critical call waits any more");
    assert_eq!(p.quota().unwrap().waiting(), 60);
}

/// A new call with budget free and only lower levels waiting takes it at once: those waiters
/// wait behind it anyway (ADR 1108).
#[test]
fn a_higher_call_takes_free_budget_while_lower_ones_wait_for_more() {
    use resilix_engine::Priority;
    let (mut e, h) = engine(None);
    let (low, high) = (Priority::Sheddable.level(3), Priority::High.level(3));
    // 900 of 1 000 tokens spent: a sheddable call of 500 waits, a high one of 50 fits.
    assert!(matches!(
        e.acquire_costing(h, ms(0), u64::MAX, low, 0, &call(900), false)
            .unwrap(),
        Costed::Now(Acquired::Permit(_))
    ));
    assert!(matches!(
        e.acquire_costing(h, ms(1), u64::MAX, low, 0, &call(500), false)
            .unwrap(),
        Costed::Wait(_)
    ));
    assert!(matches!(
        e.acquire_costing(h, ms(2), u64::MAX, high, 0, &call(50), false)
            .unwrap(),
        Costed::Now(Acquired::Permit(_))
    ));
    // One of the same level waits behind the sheddable one's 500: it does not fit.
    assert!(matches!(
        e.acquire_costing(h, ms(3), u64::MAX, low, 0, &call(40), false)
            .unwrap(),
        Costed::Wait(_)
    ));
}

/// Usage settled far past the budget, as often as a buggy reader may report it (the binding
/// passes at most 2^53 a settle): spent stops at the largest count, and a call is then judged,
/// never a panic or an overflow that would wrap to room.
#[test]
fn usage_settled_past_any_count_is_judged_not_overflowed() {
    let mut q = Quota::new(&opts(), T0);
    take(&mut q, ms(0), &call(10));
    let huge = [1i64 << 53; COSTS];
    for _ in 0..2_100 {
        q.adjust(ms(1), ms(0), &huge);
    }
    // A reading caps the tokens too: its count grows the same way.
    let reading = reading(Dimension::Tokens, 1_000, 500, 1_000);
    q.observe(ms(2), &reading, false, ms(0), &call(10));
    for _ in 0..2_100 {
        q.adjust(ms(3), ms(2), &huge);
    }
    for head in [false, true] {
        let r = q.check(ms(4), &call(10), u64::MAX, head);
        assert!(
            matches!(r, QuotaCheck::Wait(_) | QuotaCheck::Refuse),
            "{r:?}"
        );
    }
    q.enqueue(&call(10));
    let r = q.check(ms(4), &call(10), 10 * NANOS_PER_MS, false);
    assert_eq!(r, QuotaCheck::Refuse);
}
