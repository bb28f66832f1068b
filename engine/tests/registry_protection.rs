//! The registry keeps what protects an upstream: an idle key whose breaker is open (or whose
//! limit was cut) is never evicted for a new key; keys in their default state go first; when
//! only protecting keys remain the new key is refused. Protection lapses after `PROTECT_NS`
//! without a settle. Stuck settles are counted. Time is plain numbers.

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

#[test]
fn only_protecting_keys_left_refuses_the_new_key() {
    let mut e = engine(Algorithm::Fixed, 2);
    open_breaker(&mut e, "x", T0);
    open_breaker(&mut e, "y", T0 + 5 * NANOS_PER_MS);
    let t = T0 + 20 * NANOS_PER_MS;
    assert_eq!(
        e.resolve("new", t),
        Err(RegistryError::Full { max_keys: 2 })
    );
    // After PROTECT_NS without a settle, protection lapses and the oldest goes.
    let later = T0 + PROTECT_NS + 100 * NANOS_PER_MS;
    assert_eq!(e.registry().worth_of("x", later), Some(Worth::Adapted));
    assert!(e.resolve("new", later).unwrap().created);
    assert!(!e.keys().any(|k| k == "x"));
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
