//! Property tests of tenant ranks (ADR 1002, 1109).
//!
//! Through the public `Engine` API, random calls by tenants from a pool far larger than a key
//! tracks, or a new name every call, of random priorities and slot times, with a clock that
//! jumps forwards (up to 48 h), stands still or goes backwards:
//!
//! - nothing panics; a call's level keeps its class and takes one of its four ranks;
//! - a key tracks at most 128 tenants one by one plus 32 newcomers, and its tenant table stays
//!   within 2 KiB however many names come.
//!
//! Against a model of every tenant's decayed slot time (exact, in f64), with honest tenants,
//! and a flooder that names one tenant or a new one on every call:
//!
//! - every rank is the documented one: at or below the mean usage of the key's tenants the top
//!   rank, one lower at up to 2 ×, two lower at up to 4 ×, the lowest past it, the newcomers
//!   counting as one tenant with all they used; ranks are compared where the ratio is not within
//!   1 % of a boundary (the engine keeps usage in f32);
//! - so a flooder cannot rank above a tenant that used less: a new name on every call ranks
//!   with everything the newcomers used, and a flooder past 4 × the mean always ranks lowest,
//!   below every tenant at or under the mean.

use proptest::prelude::*;
use resilix_engine::priority::RANKS;
use resilix_engine::tenants::{tenant_id, Tenants, HALF_LIFE_MS, MAX_TENANTS, NEWCOMERS};
use resilix_engine::{
    Acquired, Engine, PolicyOptions, Priority, RegistryOptions, Verdict, NANOS_PER_MS,
};
use steps::{cases, tick};

#[path = "support/steps.rs"]
mod steps;

#[derive(Clone, Debug)]
enum Call {
    /// A call by tenant `n` of the pool (0: a new name), of `priority`, holding its slot.
    Run(u32, usize, u64),
    Tick(u64, bool),
}

fn call() -> impl Strategy<Value = Call> {
    prop_oneof![
        6 => (
            prop_oneof![1 => Just(0u32), 4 => 1u32..40, 3 => 1u32..1_000],
            0usize..5,
            prop_oneof![Just(0u64), 0u64..2_000 * NANOS_PER_MS, Just(u64::MAX / 2)]
        )
            .prop_map(|(n, p, slot)| Call::Run(n, p, slot)),
        2 => (
            prop_oneof![
                3 => 0u64..5_000 * NANOS_PER_MS,
                1 => 0u64..48 * 3_600_000 * NANOS_PER_MS
            ],
            prop_oneof![4 => Just(false), 1 => Just(true)]
        )
            .prop_map(|(d, back)| Call::Tick(d, back)),
    ]
}

#[derive(Clone, Debug)]
enum Op {
    /// Honest tenant `i` runs a call of this slot time.
    Honest(usize, u64),
    /// The flooder runs a call of this slot time.
    Flood(u64),
    Tick(u64, bool),
}

fn op() -> impl Strategy<Value = Op> {
    let slot = prop_oneof![
        Just(0u64),
        1u64..50 * NANOS_PER_MS,
        0u64..5_000 * NANOS_PER_MS
    ];
    prop_oneof![
        4 => (0usize..8, slot.clone()).prop_map(|(i, s)| Op::Honest(i, s)),
        4 => slot.prop_map(Op::Flood),
        2 => (
            prop_oneof![
                4 => 0u64..3_000 * NANOS_PER_MS,
                1 => 0u64..600_000 * NANOS_PER_MS,
                1 => 0u64..48 * 3_600_000 * NANOS_PER_MS
            ],
            prop_oneof![5 => Just(false), 1 => Just(true)]
        )
            .prop_map(|(d, back)| Op::Tick(d, back)),
    ]
}

/// Slot time charged at times, decayed by the half-life: (time, seconds).
#[derive(Default, Clone)]
struct Usage(Vec<(u64, f64)>);

impl Usage {
    /// Usage relative to time `at` (only ratios matter).
    fn at(&self, at: u64) -> f64 {
        let hl = HALF_LIFE_MS * 1e6;
        self.0
            .iter()
            .map(|(t, s)| s * ((*t as f64 - at as f64) / hl).exp2())
            .sum()
    }
}

/// The documented rank of `usage` among `tracked` and the newcomers' pool; `None` when the
/// ratio is within 1 % of a boundary, or the numbers are beyond what f32 keeps.
fn expected(usage: f64, tracked: &[f64], newcomers: f64) -> Option<u8> {
    let total = newcomers + tracked.iter().sum::<f64>();
    if !total.is_finite() || (total > 0.0 && total < 1e-25) {
        return None;
    }
    if newcomers > 0.0 && newcomers < total * 1e-12 {
        return None;
    }
    if total <= 0.0 {
        return Some(RANKS - 1);
    }
    let tenants = tracked.len() + usize::from(newcomers > 0.0);
    let r = usage / (total / tenants.max(1) as f64);
    if [1.0, 2.0, 4.0].iter().any(|b| (r - b).abs() <= 0.01 * b) {
        return None;
    }
    Some(if r <= 1.0 {
        RANKS - 1
    } else if r <= 2.0 {
        RANKS - 2
    } else if r <= 4.0 {
        RANKS - 3
    } else {
        0
    })
}

fn run_model(honest: usize, fixed_flooder: bool, start: u64, ops: &[Op]) {
    let mut t = Tenants::default();
    let mut now = start;
    let names: Vec<String> = (0..honest).map(|i| format!("honest-{i}")).collect();
    let flooder = "flooder".to_string();
    let mut tracked_names = names.clone();
    if fixed_flooder {
        tracked_names.push(flooder.clone());
    }
    // Tracked from their second call.
    for n in &tracked_names {
        t.rank(tenant_id(n), now);
        t.rank(tenant_id(n), now);
    }
    let mut usage = vec![Usage::default(); tracked_names.len()];
    let mut pool = Usage::default();
    // Usage is compared as of the latest charge: only ratios matter, and nothing overflows.
    let mut latest = now;
    let mut fresh = 0u32;
    for op in ops {
        let (name, slot, who) = match op {
            Op::Tick(d, back) => {
                now = tick(now, *d, *back, false);
                continue;
            }
            Op::Honest(i, slot) => (names[i % honest].clone(), *slot, Some(i % honest)),
            Op::Flood(slot) if fixed_flooder => (flooder.clone(), *slot, Some(honest)),
            Op::Flood(slot) => {
                fresh += 1;
                (format!("flood-{fresh}"), *slot, None)
            }
        };
        let id = tenant_id(&name);
        let rank = t.rank(id, now);
        let at = |u: &Usage| u.at(latest);
        let tracked: Vec<f64> = usage.iter().map(at).collect();
        let mine = match who {
            Some(w) => tracked[w],
            None => at(&pool),
        };
        if let Some(r) = expected(mine, &tracked, at(&pool)) {
            assert_eq!(
                rank,
                r,
                "{name}: used {mine:e} among {tracked:?} and newcomers {:e}",
                at(&pool)
            );
        }
        t.charge(id, slot, now);
        latest = latest.max(now);
        let secs = slot as f64 * 1e-9;
        match who {
            Some(w) => usage[w].0.push((now, secs)),
            None => pool.0.push((now, secs)),
        }
        assert!(t.len() <= MAX_TENANTS + NEWCOMERS);
    }
}

// Each property's own cases (`PROPTEST_CASES` overrides): 1 to 3 s in the dev profile on a
// 2-core machine at load 6 to 8.
proptest! {
    #![proptest_config(ProptestConfig { cases: cases(800), max_shrink_iters: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn ranks_bounds_and_table_size_hold_through_the_engine(
        seed in any::<u64>(),
        start in prop_oneof![Just(0u64), Just(1u64), 1u64..u64::MAX / 4],
        calls in proptest::collection::vec(call(), 1..400),
    ) {
        let mut e = Engine::new(PolicyOptions { limiter: None, breaker: None, ..PolicyOptions::default() }, RegistryOptions::default(), seed).unwrap();
        let k = e.resolve("k", start).unwrap().handle;
        let mut now = start;
        let mut fresh = 0u64;
        for c in &calls {
            match c {
                Call::Tick(d, back) => {
                    now = tick(now, *d, *back, false);
                }
                Call::Run(n, p, slot) => {
                    let name = if *n == 0 {
                        fresh += 1;
                        format!("new-{seed}-{fresh}")
                    } else {
                        format!("tenant-{n}")
                    };
                    let tenant = tenant_id(&name);
                    let priority = Priority::ALL[*p];
                    let level = e.level_of(k, priority, tenant, now).unwrap();
                    prop_assert_eq!(resilix_engine::priority::class_of(level), priority);
                    prop_assert!(level - priority.level(0) < RANKS);
                    let Acquired::Permit(id) = e.acquire_at(k, now, u64::MAX, level, tenant).unwrap() else {
                        panic!("nothing refuses here")
                    };
                    e.settle(k, id, Verdict::Success, now.saturating_add(*slot)).unwrap().unwrap();
                    let s = e.stats(k, now).unwrap();
                    prop_assert!(s.tenants as usize <= MAX_TENANTS + NEWCOMERS, "{} tenants", s.tenants);
                }
            }
        }
        // The table's bound, driven past it directly.
        let mut t = Tenants::default();
        for i in 0..(3 * MAX_TENANTS) as u64 {
            for _ in 0..2 {
                t.rank(tenant_id(&format!("t{seed}-{i}")), start.saturating_add(i * NANOS_PER_MS));
            }
            t.charge(tenant_id(&format!("t{seed}-{i}")), NANOS_PER_MS, start);
            prop_assert!(t.len() <= MAX_TENANTS + NEWCOMERS);
            prop_assert!(t.heap_bytes() <= 2_048, "{} bytes", t.heap_bytes());
        }
    }

    #[test]
    fn ranks_follow_usage_and_a_flooder_never_outranks_a_lighter_tenant(
        honest in 1usize..8,
        fixed_flooder in any::<bool>(),
        start in prop_oneof![Just(0u64), 1u64..1_000_000 * NANOS_PER_MS, 1u64..u64::MAX / 4],
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run_model(honest, fixed_flooder, start, &ops);
    }
}
