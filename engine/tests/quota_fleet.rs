//! A quota a fleet shares through a store (ADR 1102), on plain `now` values: calls spend the
//! lease and wait for the next one; a lease ends at its time; a call that cannot fit before
//! its deadline is refused at once; the fallback shares, which count what was spent before;
//! refusing instead; back from a fallback, the shares hold one more window; what a store that
//! lost the window is told.

use resilix_engine::quota::{Costs, Quota, QuotaCheck, QuotaDim, QuotaOptions, COSTS, MAX_DIMS};
use resilix_engine::quota_fleet::FleetMode;
use resilix_engine::quota_headers::Dimension;
use resilix_engine::{
    Acquired, BreakerState, Costed, Engine, PolicyOptions, RegistryOptions, Verdict, NANOS_PER_MS,
};
use steps::reading;

#[path = "support/steps.rs"]
mod steps;

const T0: u64 = 1_000 * NANOS_PER_MS;
const REQ: usize = 0;
const TOK: usize = 1;
const WAIT: u64 = 250 * NANOS_PER_MS;

fn ms(n: u64) -> u64 {
    T0 + n * NANOS_PER_MS
}

/// 100 requests and 10 000 tokens per 6 s, shared.
fn shared() -> Quota {
    let mut o = QuotaOptions::default();
    o.dims[0] = QuotaDim {
        cost: REQ as u8,
        limit: 100,
        window_ns: 6_000 * NANOS_PER_MS,
    };
    o.dims[1] = QuotaDim {
        cost: TOK as u8,
        limit: 10_000,
        window_ns: 6_000 * NANOS_PER_MS,
    };
    o.len = 2;
    o.names[REQ] = Some(Dimension::Requests);
    o.names[TOK] = Some(Dimension::Tokens);
    let mut q = Quota::new(&o, T0);
    q.share_through_store(WAIT);
    q
}

fn call(tokens: u64) -> Costs {
    let mut c = [0; COSTS];
    c[REQ] = 1;
    c[TOK] = tokens;
    c
}

/// At `now`, a call of `big` tokens waits while one of `small` is taken at once.
#[track_caller]
fn waits_but_fits(q: &mut Quota, now: u64, big: u64, small: u64) {
    assert!(matches!(
        q.check(now, &call(big), u64::MAX, false),
        QuotaCheck::Wait(_)
    ));
    assert_eq!(
        q.check(now, &call(small), u64::MAX, false),
        QuotaCheck::Take
    );
}

fn lease(q: &mut Quota, requests: u64, tokens: u64, until: u64) -> [u64; MAX_DIMS] {
    q.fleet_mut()
        .unwrap()
        .install(&[requests, tokens], until, 0, &[0, 0])
}

#[test]
fn a_call_without_a_lease_waits_for_one_and_records_what_it_needs() {
    let mut q = shared();
    let c = call(400);
    assert_eq!(
        q.check(ms(0), &c, u64::MAX, false),
        QuotaCheck::Wait(ms(0) + WAIT)
    );
    let f = q.fleet().unwrap();
    assert_eq!(&f.need()[..2], &[1, 400]);
    // A deadline shorter than the wait for the store: it asks again at its deadline.
    assert_eq!(
        q.check(ms(0), &c, 40 * NANOS_PER_MS, false),
        QuotaCheck::Wait(ms(40))
    );
}

#[test]
fn calls_spend_the_lease_until_it_runs_out_then_wait() {
    let mut q = shared();
    lease(&mut q, 10, 1_000, ms(1_000));
    for _ in 0..2 {
        assert_eq!(
            q.check(ms(1), &call(400), u64::MAX, false),
            QuotaCheck::Take
        );
        q.take(ms(1), &call(400));
    }
    assert_eq!(&q.fleet().unwrap().left()[..2], &[8, 200]);
    waits_but_fits(&mut q, ms(2), 400, 200);
}

#[test]
fn a_lease_ends_at_its_time_and_a_new_one_returns_what_the_old_left() {
    let mut q = shared();
    lease(&mut q, 10, 1_000, ms(100));
    q.take(ms(1), &call(300));
    assert_eq!(
        q.check(ms(99), &call(300), u64::MAX, false),
        QuotaCheck::Take
    );
    assert!(matches!(
        q.check(ms(100), &call(300), u64::MAX, false),
        QuotaCheck::Wait(_)
    ));
    let old = lease(&mut q, 5, 500, ms(300));
    assert_eq!(&old[..2], &[9, 700]);
    assert_eq!(&q.fleet().unwrap().need()[..2], &[0, 0]);
}

#[test]
fn when_the_fleet_has_no_room_before_the_deadline_the_call_is_refused_at_once() {
    let mut q = shared();
    // The store said: no room for 2 s.
    q.fleet_mut()
        .unwrap()
        .install(&[0, 0], 0, ms(2_000), &[0, 0]);
    assert_eq!(
        q.check(ms(0), &call(100), 3_000 * NANOS_PER_MS, false),
        QuotaCheck::Wait(ms(2_000))
    );
    assert_eq!(
        q.check(ms(0), &call(100), 1_000 * NANOS_PER_MS, false),
        QuotaCheck::Refuse
    );
}

#[test]
fn a_waiting_call_is_refused_when_this_process_share_cannot_come_back_in_time() {
    let mut q = shared();
    // This process spent 9 000 tokens at 0 ms; they leave its window at about 6.1 s.
    lease(&mut q, 100, 9_000, ms(100));
    q.take(ms(0), &call(9_000));
    q.enqueue(&call(500));
    // Behind a waiter, a call of 500 needs this process's old charges to leave first.
    assert_eq!(
        q.check(ms(10), &call(500), 5_000 * NANOS_PER_MS, false),
        QuotaCheck::Refuse
    );
    assert!(matches!(
        q.check(ms(10), &call(500), 7_000 * NANOS_PER_MS, false),
        QuotaCheck::Wait(_)
    ));
}

#[test]
fn the_fallback_share_counts_what_was_spent_before_the_store_was_lost() {
    let mut q = shared();
    lease(&mut q, 100, 5_000, ms(1_000));
    q.take(ms(0), &call(2_000));
    q.fall_back(ms(10), &[25, 2_500], false);
    assert_eq!(q.fleet().unwrap().mode(), FleetMode::Shared);
    // 2 000 spent already: 500 more fit, not 600, whatever the lease had left.
    assert_eq!(
        q.check(ms(20), &call(500), u64::MAX, false),
        QuotaCheck::Take
    );
    q.take(ms(20), &call(500));
    let w = q.check(ms(30), &call(100), 20_000 * NANOS_PER_MS, false);
    let QuotaCheck::Wait(t) = w else {
        panic!("{w:?}")
    };
    assert!(
        t >= ms(6_000),
        "the share comes back as the old charges leave: {t}"
    );
    // An oversize call is judged by the whole budget, not the share.
    assert!(matches!(
        q.check(ms(30), &call(3_000), 20_000 * NANOS_PER_MS, false),
        QuotaCheck::Wait(_)
    ));
}

#[test]
fn refusing_instead_of_sharing_refuses_every_call_while_the_store_is_down() {
    let mut q = shared();
    q.fall_back(ms(0), &[25, 2_500], true);
    assert_eq!(
        q.check(ms(1), &call(1), u64::MAX, false),
        QuotaCheck::Refuse
    );
    q.rejoin(ms(5));
    lease(&mut q, 10, 1_000, ms(500));
    assert_eq!(q.check(ms(6), &call(1), u64::MAX, false), QuotaCheck::Take);
}

#[test]
fn back_from_a_fallback_the_share_holds_one_more_window() {
    let mut q = shared();
    q.fall_back(ms(0), &[25, 2_500], false);
    q.take(ms(10), &call(2_400));
    q.rejoin(ms(1_000));
    lease(&mut q, 100, 10_000, ms(1_200));
    // The lease holds 10 000, the share 100 more.
    assert_eq!(
        q.check(ms(1_001), &call(100), u64::MAX, false),
        QuotaCheck::Take
    );
    q.take(ms(1_001), &call(100));
    assert!(matches!(
        q.check(ms(1_002), &call(100), u64::MAX, false),
        QuotaCheck::Wait(_)
    ));
    // A window later the lease alone decides.
    lease(&mut q, 100, 10_000, ms(7_500));
    assert_eq!(
        q.check(ms(7_001), &call(3_000), u64::MAX, false),
        QuotaCheck::Take
    );
}

/// A store that comes back and is lost again within a window (a flapping connection): the
/// new fallback's shares hold for as long as the store stays lost, not only until the window
/// after the rejoin ends.
#[test]
fn a_store_lost_again_soon_after_it_came_back_keeps_the_share() {
    let mut q = shared();
    q.fall_back(ms(0), &[25, 2_500], false);
    q.rejoin(ms(1_000));
    lease(&mut q, 100, 10_000, ms(1_200));
    q.fall_back(ms(1_100), &[25, 2_500], false);
    // Past the window after the rejoin (7 000 ms), still lost: a call past the share of 2 500
    // tokens waits, it does not take the whole budget of 10 000.
    waits_but_fits(&mut q, ms(7_500), 3_000, 2_000);
}

#[test]
fn a_store_that_lost_the_window_is_told_every_bucket_with_what_it_had_seen() {
    let mut q = shared();
    lease(&mut q, 100, 10_000, ms(1_000));
    q.take(ms(0), &call(300));
    q.fall_back(ms(500), &[50, 5_000], false);
    q.take(ms(700), &call(200));
    let b = q.charged_buckets(ms(800), ms(500));
    // Per dimension: (dimension, age in buckets of 100 ms, amount, charged before the loss).
    assert!(b.contains(&(1, 8, 300, true)), "{b:?}");
    assert!(b.contains(&(1, 1, 200, false)), "{b:?}");
    assert!(
        b.contains(&(0, 8, 1, true)) && b.contains(&(0, 1, 1, false)),
        "{b:?}"
    );
    assert_eq!(b.len(), 4);
}

#[test]
fn a_header_reading_gives_the_store_a_floor_for_the_fleet_window() {
    let mut q = shared();
    lease(&mut q, 100, 10_000, ms(1_000));
    q.take(ms(0), &call(100));
    let reading = reading(Dimension::Tokens, 10_000, 1_000, 2_000);
    q.observe(ms(5), &reading, false, ms(0), &call(100));
    assert_eq!(&q.fleet().unwrap().floors()[..2], &[0, 9_000]);
    // Told with the next lease: the floor goes.
    lease(&mut q, 10, 100, ms(2_000));
    assert_eq!(&q.fleet().unwrap().floors()[..2], &[0, 0]);
}

/// Through the engine: a call that waited for budget and then ran out of its deadline spent
/// it with us, not at the upstream: the breaker does not count it.
#[test]
fn a_timeout_after_waiting_for_budget_does_not_open_the_breaker() {
    let mut p = PolicyOptions::default();
    let mut qo = QuotaOptions::default();
    qo.dims[0] = QuotaDim {
        cost: 0,
        limit: 1,
        window_ns: 1_000 * NANOS_PER_MS,
    };
    qo.len = 1;
    p.quota = Some(qo);
    p.breaker.as_mut().unwrap().consecutive_failures = 2;
    let mut e = Engine::new(p, RegistryOptions::default(), 7).unwrap();
    let h = e.resolve("k", ms(0)).unwrap().handle;
    let one = [1, 0, 0, 0];
    let budget = 10_000 * NANOS_PER_MS;
    for i in 0..4u64 {
        let t = ms(i * 3_000);
        let id = match e.acquire_costing(h, t, budget, 11, 0, &one, false).unwrap() {
            Costed::Now(Acquired::Permit(id)) => id,
            other => panic!("{other:?}"),
        };
        // Cancelled: no evidence either way, so the timeouts below would be consecutive.
        e.settle(h, id, Verdict::Cancelled, t + NANOS_PER_MS)
            .unwrap()
            .unwrap();
        // The next waits for budget, and once let in runs out of its deadline.
        let waited = e.acquire_costing(h, t + 2 * NANOS_PER_MS, budget, 11, 0, &one, false);
        assert!(matches!(waited, Ok(Costed::Wait(_))), "{waited:?}");
        let later = t + 1_200 * NANOS_PER_MS;
        let id = match e
            .acquire_costing(h, later, budget, 11, 0, &one, true)
            .unwrap()
        {
            Costed::Now(Acquired::Permit(id)) => id,
            other => panic!("{other:?}"),
        };
        e.settle(h, id, Verdict::Timeout, later + NANOS_PER_MS)
            .unwrap()
            .unwrap();
    }
    let s = e.stats(h, ms(12_000)).unwrap();
    assert_eq!(s.breaker, Some(BreakerState::Closed), "{:?}", s.verdicts);
}
