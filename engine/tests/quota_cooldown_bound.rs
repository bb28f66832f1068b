//! A hint from the upstream holds a key back for a bounded time (ADR 1104): a `retry-after`,
//! `retry-after-ms` or reset years ahead cools the key down, or holds a reading, for at most
//! the quota's `max_cooldown_ns`; so does a cooldown the fleet's store hands over. A call with
//! no deadline is answered within the bound and the budget's pace.

use resilix_engine::quota::{
    Costs, Quota, QuotaCheck, QuotaDim, QuotaOptions, COSTS, DEFAULT_MAX_COOLDOWN_MS,
};
use resilix_engine::quota_headers::{read_header_block, Dimension};
use resilix_engine::NANOS_PER_MS;

const T0: u64 = 1_000 * NANOS_PER_MS;
/// 2026-12-07T00:00:00Z, as `Date.now()` would pass it.
const WALL_MS: f64 = 1_796_601_600_000.0;
const MAX_NS: u64 = DEFAULT_MAX_COOLDOWN_MS * NANOS_PER_MS;

fn ms(n: u64) -> u64 {
    T0 + n * NANOS_PER_MS
}

/// 100 requests a minute.
fn opts() -> QuotaOptions {
    let mut o = QuotaOptions::default();
    o.dims[0] = QuotaDim {
        cost: 0,
        limit: 100,
        window_ns: 60_000 * NANOS_PER_MS,
    };
    o.len = 1;
    o.names[0] = Some(Dimension::Requests);
    o
}

fn one() -> Costs {
    let mut c = [0; COSTS];
    c[0] = 1;
    c
}

/// When a call with no deadline, asking at each time it is told, is admitted.
fn admitted_at(q: &mut Quota, from: u64) -> u64 {
    let mut now = from;
    for _ in 0..1_000 {
        match q.check(now, &one(), u64::MAX, true) {
            QuotaCheck::Take => return now,
            QuotaCheck::Wait(t) => now = t.max(now + 1),
            other => panic!("a call with no deadline was answered {other:?}"),
        }
    }
    panic!("never admitted")
}

const FAR: [&str; 6] = [
    "retry-after: 99999999",
    "retry-after: 1000000000000",
    "retry-after-ms: 99999999999999",
    "retry-after: Fri, 31 Dec 9999 23:59:59 GMT",
    "x-ratelimit-limit-requests: 100\nx-ratelimit-remaining-requests: 0\nx-ratelimit-reset-requests: 27777h",
    "anthropic-ratelimit-requests-remaining: 0\nanthropic-ratelimit-requests-reset: 9999-12-31T23:59:59Z",
];

#[test]
fn a_429_with_a_hint_years_ahead_cools_down_for_the_bound_only() {
    for block in FAR {
        let mut q = Quota::new(&opts(), ms(0));
        q.take(ms(0), &one());
        let reading = read_header_block(block, WALL_MS);
        assert!(q.observe(ms(1), &reading, true, ms(0), &one()), "{block}");
        assert_eq!(q.cooling_ns(ms(1)), MAX_NS, "{block}");
        // Answered once the bound is over and one request's pace (600 ms) has passed.
        let at = admitted_at(&mut q, ms(2));
        assert!(
            at >= ms(1) + MAX_NS,
            "{block}: admitted during the cooldown"
        );
        assert!(
            at <= ms(1) + MAX_NS + 600 * NANOS_PER_MS + NANOS_PER_MS,
            "{block}: {at}"
        );
    }
}

#[test]
fn a_reading_with_a_reset_years_ahead_holds_the_key_for_the_bound_only() {
    let mut q = Quota::new(&opts(), ms(0));
    q.take(ms(0), &one());
    let reading = read_header_block(FAR[4], WALL_MS);
    assert!(!q.observe(ms(1), &reading, false, ms(0), &one()));
    assert_eq!(q.cooling_ns(ms(1)), 0, "a 200 begins no cooldown");
    let at = admitted_at(&mut q, ms(2));
    assert!(at > ms(2), "the reading holds the key back");
    assert!(
        at <= ms(1) + MAX_NS,
        "held {} ms",
        (at - ms(1)) / NANOS_PER_MS
    );
}

#[test]
fn a_cooldown_from_the_fleets_store_is_bounded_too() {
    let mut q = Quota::new(&opts(), ms(0));
    q.cool_down(ms(0), u64::MAX);
    assert_eq!(q.cooling_ns(ms(0)), MAX_NS);
    // Asked again and again, it never reaches past the bound from each asking.
    q.cool_down(ms(30_000), u64::MAX);
    assert_eq!(q.cooling_ns(ms(30_000)), MAX_NS);
    assert_eq!(q.cooldowns(), 1);
}

#[test]
fn the_bound_is_an_option_and_shorter_hints_are_kept() {
    let mut o = opts();
    o.max_cooldown_ns = 5_000 * NANOS_PER_MS;
    assert!(o.validate().is_ok());
    let mut q = Quota::new(&o, ms(0));
    q.observe(
        ms(0),
        &read_header_block(FAR[0], WALL_MS),
        true,
        ms(0),
        &one(),
    );
    assert_eq!(q.cooling_ns(ms(0)), 5_000 * NANOS_PER_MS);
    let mut q = Quota::new(&o, ms(0));
    q.observe(
        ms(0),
        &read_header_block("retry-after: 2", WALL_MS),
        true,
        ms(0),
        &one(),
    );
    assert_eq!(q.cooling_ns(ms(0)), 2_000 * NANOS_PER_MS);
    assert_eq!(
        QuotaOptions::default().max_cooldown_ns,
        60_000 * NANOS_PER_MS
    );
}

#[test]
fn a_bound_out_of_range_is_refused_by_name() {
    for bad in [0, 2_147_483_648 * NANOS_PER_MS, 1_500_000] {
        let mut o = opts();
        o.max_cooldown_ns = bad;
        let err = o.validate().unwrap_err();
        assert!(
            err.message.contains("quota.maxCooldownMs"),
            "{}",
            err.message
        );
    }
    let mut o = opts();
    o.max_cooldown_ns = 2_147_483_647 * NANOS_PER_MS;
    assert!(o.validate().is_ok());
}
