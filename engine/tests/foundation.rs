//! Foundation tests: registry cap and eviction, busy keys never evicted, permit
//! accounting, stale and double settles, verdict mapping. Time is plain numbers.

use resilix_engine::{
    Acquired, Algorithm, Engine, LimiterOptions, PolicyOptions, RegistryError, RegistryOptions,
    RejectReason, StalePermit, Verdict, NANOS_PER_MS,
};

const T0: u64 = 1_000_000_000;

fn fixed(limit: u32, max_keys: u32) -> Engine {
    let limiter = LimiterOptions {
        algorithm: Algorithm::Fixed,
        initial_limit: limit,
        queue: None,
        ..Default::default()
    };
    let policies = PolicyOptions {
        breaker: None,
        limiter: Some(limiter),
        bulkhead: None,
        throttle: None,
        quota: None,
    };
    Engine::new(
        policies,
        RegistryOptions {
            max_keys,
            max_key_length: 64,
        },
        1,
    )
    .unwrap()
}

fn permit(a: Acquired) -> u64 {
    match a {
        Acquired::Permit(p) => p,
        other => panic!("expected a permit, got {other:?}"),
    }
}

#[test]
fn registry_evicts_least_recently_used_idle_key_at_the_cap() {
    let mut e = fixed(10, 3);
    let a = e.resolve("a", T0).unwrap().handle;
    e.resolve("b", T0).unwrap();
    e.resolve("c", T0).unwrap();
    // touch a: b is now the least recently used
    let p = permit(e.acquire(a, T0).unwrap());
    e.settle(a, p, Verdict::Success, T0).unwrap().unwrap();
    let d = e.resolve("d", T0).unwrap();
    assert!(d.created);
    let mut keys: Vec<_> = e.keys().collect();
    keys.sort();
    assert_eq!(keys, ["a", "c", "d"]);
    assert_eq!(e.registry().len(), 3);
}

#[test]
fn busy_keys_are_never_evicted_and_a_full_registry_refuses() {
    let mut e = fixed(10, 2);
    let a = e.resolve("a", T0).unwrap().handle;
    let b = e.resolve("b", T0).unwrap().handle;
    let pa = permit(e.acquire(a, T0).unwrap());
    let pb = permit(e.acquire(b, T0).unwrap());
    assert_eq!(e.resolve("c", T0), Err(RegistryError::Full { max_keys: 2 }));
    // once a is idle it is the one evicted, and b keeps its in-flight call
    e.settle(a, pa, Verdict::Success, T0).unwrap().unwrap();
    e.resolve("c", T0).unwrap();
    assert!(e.stats_by_name("a", T0).is_none());
    assert_eq!(e.stats(b, T0).unwrap().inflight, 1);
    assert_eq!(e.settle(b, pb, Verdict::Success, T0).unwrap(), Ok(0));
}

#[test]
fn a_handle_to_an_evicted_key_is_stale_and_a_reborn_key_starts_fresh() {
    let mut e = fixed(10, 1);
    let a = e.resolve("a", T0).unwrap().handle;
    let p = permit(e.acquire(a, T0).unwrap());
    e.settle(a, p, Verdict::Failure, T0).unwrap().unwrap();
    e.resolve("b", T0).unwrap(); // evicts a, reuses its slot
    assert!(e.acquire(a, T0).is_err(), "old handle must be stale");
    assert!(e.settle(a, p, Verdict::Success, T0).is_err());
    let a2 = e.resolve("a", T0).unwrap().handle;
    assert_ne!(a, a2);
    assert_eq!(e.stats(a2, T0).unwrap().verdicts, [0; 7]);
}

#[test]
fn keys_longer_than_the_limit_are_refused() {
    let mut e = fixed(10, 10);
    let long = "x".repeat(65);
    assert_eq!(
        e.resolve(&long, T0),
        Err(RegistryError::KeyTooLong { len: 65, max: 64 })
    );
    assert!(e.resolve(&long[..64], T0).is_ok());
}

#[test]
fn permits_account_exactly_and_the_limit_holds() {
    let mut e = fixed(3, 10);
    let k = e.resolve("k", T0).unwrap().handle;
    let ps: Vec<u64> = (0..3).map(|_| permit(e.acquire(k, T0).unwrap())).collect();
    assert_eq!(
        e.acquire(k, T0).unwrap(),
        Acquired::Rejected(RejectReason::Limit)
    );
    assert_eq!(e.stats(k, T0).unwrap().inflight, 3);
    for (i, p) in ps.iter().enumerate() {
        e.settle(k, *p, Verdict::Success, T0 + i as u64)
            .unwrap()
            .unwrap();
        assert_eq!(e.stats(k, T0).unwrap().inflight, 2 - i as u32);
    }
    assert_eq!(
        e.stats(k, T0).unwrap().rejections[RejectReason::Limit as usize],
        1
    );
}

#[test]
fn double_and_stale_settles_are_detected_and_change_nothing() {
    let mut e = fixed(5, 10);
    let k = e.resolve("k", T0).unwrap().handle;
    let p1 = permit(e.acquire(k, T0).unwrap());
    let p2 = permit(e.acquire(k, T0).unwrap());
    e.settle(k, p1, Verdict::Success, T0).unwrap().unwrap();
    assert_eq!(
        e.settle(k, p1, Verdict::Success, T0).unwrap(),
        Err(StalePermit),
        "double settle"
    );
    // p1's slot is reused by p3: the old id must not settle the new call
    let p3 = permit(e.acquire(k, T0).unwrap());
    assert_eq!(p1 & 0xFFFFF, p3 & 0xFFFFF, "slot reused");
    assert_eq!(
        e.settle(k, p1, Verdict::Success, T0).unwrap(),
        Err(StalePermit),
        "stale id, reused slot"
    );
    assert_eq!(
        e.settle(k, 12345 << 20, Verdict::Success, T0).unwrap(),
        Err(StalePermit),
        "never issued"
    );
    assert_eq!(
        e.settle(k, u64::MAX, Verdict::Success, T0).unwrap(),
        Err(StalePermit),
        "garbage id"
    );
    let s = e.stats(k, T0).unwrap();
    assert_eq!(s.inflight, 2);
    assert_eq!(s.verdicts[Verdict::Success as usize], 1);
    e.settle(k, p2, Verdict::Success, T0).unwrap().unwrap();
    e.settle(k, p3, Verdict::Success, T0).unwrap().unwrap();
    assert_eq!(e.stats(k, T0).unwrap().inflight, 0);
}

#[test]
fn verdict_codes_map_both_ways_and_ignored_verdicts_are_the_right_ones() {
    for (code, v) in Verdict::ALL.iter().enumerate() {
        assert_eq!(Verdict::from_code(code as u32), Some(*v));
        assert_eq!(*v as usize, code);
    }
    assert_eq!(Verdict::from_code(7), None);
    assert_eq!(Verdict::from_code(u32::MAX), None);
    let ignored: Vec<_> = Verdict::ALL.iter().filter(|v| v.is_ignored()).collect();
    assert_eq!(ignored, [&Verdict::Rejected, &Verdict::Cancelled]);
}

#[test]
fn latency_is_start_to_mark_when_marked_else_start_to_settle() {
    let mut e = fixed(5, 10);
    let k = e.resolve("k", T0).unwrap().handle;
    let p = permit(e.acquire(k, T0).unwrap());
    assert!(e.mark(k, p, T0 + 280 * NANOS_PER_MS).unwrap());
    assert!(
        e.mark(k, p, T0 + 900 * NANOS_PER_MS).unwrap(),
        "a second mark is accepted and ignored"
    );
    e.settle(k, p, Verdict::Success, T0 + 45_000 * NANOS_PER_MS)
        .unwrap()
        .unwrap();
    assert_eq!(e.stats(k, T0).unwrap().last_latency_ns, 280 * NANOS_PER_MS);
    let q = permit(e.acquire(k, T0).unwrap());
    e.settle(k, q, Verdict::Success, T0 + 70 * NANOS_PER_MS)
        .unwrap()
        .unwrap();
    assert_eq!(e.stats(k, T0).unwrap().last_latency_ns, 70 * NANOS_PER_MS);
    // a clock that goes backwards yields zero, never a wrapped huge latency
    let r = permit(e.acquire(k, T0 + 10 * NANOS_PER_MS).unwrap());
    e.settle(k, r, Verdict::Success, T0).unwrap().unwrap();
    assert_eq!(e.stats(k, T0).unwrap().last_latency_ns, 0);
    // marking a settled permit is refused
    assert!(!e.mark(k, r, T0).unwrap());
}

#[test]
fn ignored_verdicts_leave_no_latency_sample() {
    let mut e = fixed(5, 10);
    let k = e.resolve("k", T0).unwrap().handle;
    let p = permit(e.acquire(k, T0).unwrap());
    e.settle(k, p, Verdict::Success, T0 + 5 * NANOS_PER_MS)
        .unwrap()
        .unwrap();
    for v in [Verdict::Rejected, Verdict::Cancelled] {
        let q = permit(e.acquire(k, T0).unwrap());
        e.settle(k, q, v, T0 + 999 * NANOS_PER_MS).unwrap().unwrap();
    }
    let s = e.stats(k, T0).unwrap();
    assert_eq!(s.last_latency_ns, 5 * NANOS_PER_MS);
    assert_eq!(s.verdicts[Verdict::Rejected as usize], 1);
    assert_eq!(s.verdicts[Verdict::Cancelled as usize], 1);
}

#[test]
fn bad_options_name_the_option_and_range() {
    let bad = LimiterOptions {
        min_limit: 0,
        ..Default::default()
    };
    let err = Engine::new(
        PolicyOptions {
            limiter: Some(bad),
            ..Default::default()
        },
        RegistryOptions::default(),
        1,
    )
    .unwrap_err();
    assert_eq!(err.option, "minLimit");
    assert!(err.message.contains("from 1 to 1000000"), "{}", err.message);
    let err = Engine::new(
        PolicyOptions::default(),
        RegistryOptions {
            max_keys: 0,
            max_key_length: 10,
        },
        1,
    )
    .unwrap_err();
    assert_eq!(err.option, "maxKeys");
}
