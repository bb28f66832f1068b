//! The registry keeps what protects an upstream: an idle key whose breaker is open (or whose
//! limit was cut) is not evicted for a new key while such keys hold less than half the registry;
//! keys in their default state go first; a new key is refused only while more than half the
//! keys are busy. Protection lapses after `PROTECT_NS` without a settle. Stuck settles are
//! counted. Time is plain numbers.

use resilix_engine::registry::PROTECT_NS;
use resilix_engine::{
    Acquired, Algorithm, BreakerOptions, Engine, LimiterOptions, PolicyOptions, RegistryError,
    RegistryOptions, Verdict, Worth, NANOS_PER_MS,
};

const T0: u64 = 1_000_000_000;

fn engine(algorithm: Algorithm, max_keys: u32) -> Engine {
    let policies = PolicyOptions {
        breaker: Some(BreakerOptions {
            consecutive_failures: 3,
            ..Default::default()
        }),
        limiter: Some(LimiterOptions {
            algorithm,
            initial_limit: 20,
            min_limit: 1,
            ..Default::default()
        }),
        bulkhead: None,
        throttle: None,
        quota: None,
    };
    let registry = RegistryOptions {
        max_keys,
        max_key_length: 64,
    };
    Engine::new(policies, registry, 1).unwrap()
}

fn run(e: &mut Engine, key: &str, verdict: Verdict, t: u64) {
    let h = e.resolve(key, t).unwrap().handle;
    match e.acquire(h, t).unwrap() {
        Acquired::Permit(p) => {
            e.settle(h, p, verdict, t + NANOS_PER_MS).unwrap().unwrap();
        }
        other => panic!("expected a permit for {key}, got {other:?}"),
    }
}

fn open_breaker(e: &mut Engine, key: &str, t: u64) {
    for i in 0..3 {
        run(e, key, Verdict::Failure, t + i * NANOS_PER_MS);
    }
    assert_eq!(
        e.registry().worth_of(key, t + 10 * NANOS_PER_MS),
        Some(Worth::Protecting)
    );
}

#[test]
fn an_open_breaker_survives_a_flood_of_other_keys() {
    let mut e = engine(Algorithm::Fixed, 10);
    open_breaker(&mut e, "dead", T0);
    let t = T0 + 10 * NANOS_PER_MS;
    for i in 0..1_000 {
        run(
            &mut e,
            &format!("flood-{i}"),
            Verdict::Success,
            t + i * 1_000,
        );
    }
    assert!(
        e.keys().any(|k| k == "dead"),
        "the open breaker was evicted"
    );
    assert_eq!(e.registry().len(), 10);
    let h = e.resolve("dead", t + NANOS_PER_MS).unwrap().handle;
    assert_eq!(
        e.stats(h, t + NANOS_PER_MS)
            .unwrap()
            .breaker
            .map(|b| b.name()),
        Some("open")
    );
}

#[test]
fn default_keys_go_first_and_protecting_keys_never() {
    let mut e = engine(Algorithm::Fixed, 3);
    open_breaker(&mut e, "dead", T0);
    let t = T0 + 10 * NANOS_PER_MS;
    run(&mut e, "a", Verdict::Success, t);
    run(&mut e, "b", Verdict::Success, t + 1);
    // "dead" is the least recently used, but "a" goes.
    run(&mut e, "c", Verdict::Success, t + 2);
    let mut keys: Vec<_> = e.keys().collect();
    keys.sort();
    assert_eq!(keys, ["b", "c", "dead"]);
}

/// Holds a permit on `key`: the key is busy until it is settled.
fn hold(e: &mut Engine, key: &str, t: u64) {
    let h = e.resolve(key, t).unwrap().handle;
    assert!(matches!(e.acquire(h, t).unwrap(), Acquired::Permit(_)));
}

#[test]
fn a_refusal_needs_more_than_half_the_keys_busy() {
    let mut e = engine(Algorithm::Fixed, 4);
    open_breaker(&mut e, "x", T0);
    for k in ["b1", "b2", "b3"] {
        hold(&mut e, k, T0 + 5 * NANOS_PER_MS);
    }
    // Three busy keys of four and one protecting: the new key is refused.
    let t = T0 + 20 * NANOS_PER_MS;
    assert_eq!(
        e.resolve("new", t),
        Err(RegistryError::Full { max_keys: 4 })
    );
    // After PROTECT_NS without a settle, protection lapses and it goes.
    let later = T0 + PROTECT_NS + 100 * NANOS_PER_MS;
    assert_eq!(e.registry().worth_of("x", later), Some(Worth::Adapted));
    assert!(e.resolve("new", later).unwrap().created);
    assert!(!e.keys().any(|k| k == "x"));
}

#[test]
fn protecting_keys_give_way_once_they_hold_half_the_registry() {
    let mut e = engine(Algorithm::Fixed, 4);
    open_breaker(&mut e, "x", T0);
    open_breaker(&mut e, "y", T0 + 5 * NANOS_PER_MS);
    hold(&mut e, "b1", T0 + 10 * NANOS_PER_MS);
    hold(&mut e, "b2", T0 + 10 * NANOS_PER_MS);
    // Two idle protecting keys of four: the least recently used, "x", gives way.
    let t = T0 + 20 * NANOS_PER_MS;
    assert!(e.resolve("new", t).unwrap().created);
    let mut keys: Vec<_> = e.keys().collect();
    keys.sort();
    assert_eq!(keys, ["b1", "b2", "new", "y"]);
}

#[test]
fn junk_keys_that_open_breakers_never_lock_a_new_key_out() {
    let mut e = engine(Algorithm::Fixed, 100);
    let mut t = T0;
    open_breaker(&mut e, "dead.example", t);
    for i in 0..1_000 {
        t += 10 * NANOS_PER_MS;
        open_breaker(&mut e, &format!("junk-{i}"), t);
        // A key still being called (refused by its open breaker) stays recently used.
        if i % 40 == 0 {
            let h = e.resolve("dead.example", t).unwrap().handle;
            assert_eq!(
                e.acquire(h, t).unwrap(),
                Acquired::Rejected(resilix_engine::RejectReason::Breaker)
            );
        }
    }
    assert_eq!(e.registry().len(), 100);
    assert!(
        e.keys().any(|k| k == "dead.example"),
        "a key in use lost its open breaker"
    );
    // Every new legitimate key gets in, and is served.
    for i in 0..200 {
        t += NANOS_PER_MS;
        run(&mut e, &format!("api-{i}.example"), Verdict::Success, t);
    }
}

#[test]
fn a_stuck_settle_counts_once_and_frees_the_slot() {
    let mut e = engine(Algorithm::Fixed, 4);
    let h = e.resolve("k", T0).unwrap().handle;
    let Acquired::Permit(p) = e.acquire(h, T0).unwrap() else {
        panic!("no permit")
    };
    assert_eq!(
        e.settle_stuck(h, p, Verdict::Timeout, T0 + 1).unwrap(),
        Ok(0)
    );
    assert!(e
        .settle_stuck(h, p, Verdict::Timeout, T0 + 2)
        .unwrap()
        .is_err());
    assert!(e.settle(h, p, Verdict::Success, T0 + 3).unwrap().is_err());
    let s = e.stats(h, T0 + 4).unwrap();
    assert_eq!(
        (s.inflight, s.stuck, s.verdicts[Verdict::Timeout as usize]),
        (0, 1, 1)
    );
}
