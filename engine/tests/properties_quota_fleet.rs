//! Property tests of a quota a fleet shares through a store (ADR 1102, 1105), on the public
//! `Quota` API: random budgets, random calls, leases granted with any amounts, deadlines and
//! waits (0 to u64::MAX), the store lost (a share of each window, or refusing) and back, on a
//! clock that moves forwards or stands still. A model keeps every charge and every lease.
//! After every call:
//!
//! - nothing panics;
//! - while the store answers, a call is admitted only within its lease: before the lease's end,
//!   and what the calls admitted since the lease was granted cost, by dimension, is within what
//!   it granted. A process never spends more than the fleet gave it;
//! - while the store is lost, a call is admitted only when the window that ends now, charges
//!   made before the store was lost included, has room for it within the process's share
//!   (ADR 1102); a quota told to refuse admits nothing;
//! - back from a fallback, for a whole longest window, a call needs its share as well as its
//!   lease: the store does not know yet what the processes still down spend;
//! - a wait ends after now and within the call's deadline.

use proptest::prelude::*;
use resilix_engine::quota::{Costs, Quota, QuotaCheck, QuotaDim, QuotaOptions, COSTS, MAX_DIMS};
use resilix_engine::NANOS_PER_MS;
use steps::cases;

#[path = "support/steps.rs"]
mod steps;

#[derive(Clone, Debug)]
enum Op {
    Call([u64; 2], u64),
    Lease([u64; 2], u64, u64, [u64; 2]),
    Lost([u64; 2], bool),
    Back,
    Tick(u64),
}

fn amount() -> impl Strategy<Value = u64> {
    prop_oneof![4 => 0u64..6, 2 => 0u64..2_000, 1 => Just(u64::MAX)]
}

fn op() -> impl Strategy<Value = Op> {
    let ns = prop_oneof![
        Just(0u64),
        0u64..2_000 * NANOS_PER_MS,
        0u64..120_000 * NANOS_PER_MS,
        Just(u64::MAX)
    ];
    prop_oneof![
        8 => ([0u64..3, 0u64..400], prop_oneof![Just(u64::MAX), 0u64..5_000 * NANOS_PER_MS])
            .prop_map(|(c, b)| Op::Call(c, b)),
        3 => ([amount(), amount()], ns.clone(), ns, [amount(), amount()])
            .prop_map(|(g, until, ready, room)| Op::Lease(g, until, ready, room)),
        1 => ([amount(), amount()], prop_oneof![4 => Just(false), 1 => Just(true)])
            .prop_map(|(s, r)| Op::Lost(s, r)),
        1 => Just(Op::Back),
        4 => prop_oneof![0u64..300 * NANOS_PER_MS, 0u64..70_000 * NANOS_PER_MS].prop_map(Op::Tick),
    ]
}

/// Requests and tokens, each over its own window.
fn quota() -> impl Strategy<Value = QuotaOptions> {
    (
        1u64..8,
        prop_oneof![1u64..50, 50u64..5_000],
        1u64..2_000,
        prop_oneof![1u64..50, 50u64..70_000],
    )
        .prop_map(|(requests, req_ms, tokens, tok_ms)| {
            let mut o = QuotaOptions::default();
            o.dims[0] = QuotaDim {
                cost: 0,
                limit: requests,
                window_ns: req_ms * NANOS_PER_MS,
            };
            o.dims[1] = QuotaDim {
                cost: 1,
                limit: tokens,
                window_ns: tok_ms * NANOS_PER_MS,
            };
            o.len = 2;
            o
        })
}

#[derive(PartialEq)]
enum Store {
    Answers,
    Lost { shares: [u64; 2], refuse: bool },
}

fn run(opts: QuotaOptions, wait_ms: u64, start: u64, ops: &[Op]) {
    let mut q = Quota::new(&opts, start);
    q.share_through_store(wait_ms * NANOS_PER_MS);
    let mut now = start;
    let mut charges: Vec<(u64, Costs)> = Vec::new();
    let mut store = Store::Answers;
    // The lease: what it granted, until when, and what was admitted since it was granted.
    let (mut granted, mut until, mut spent) = ([0u64; 2], 0u64, [0u64; 2]);
    // Back from a fallback: the shares still hold until then.
    let (mut shares, mut shares_until) = ([0u64; 2], 0u64);
    let longest = opts.dims().iter().map(|d| d.window_ns).max().unwrap();
    let window = |charges: &[(u64, Costs)], now: u64, i: usize| -> u64 {
        let d = opts.dims()[i];
        let from = now.checked_sub(d.window_ns);
        charges
            .iter()
            .filter(|(t, _)| from.is_none_or(|f| *t > f))
            .map(|(_, c)| c[d.cost as usize])
            .fold(0, u64::saturating_add)
    };
    let share_of = |s: u64, i: usize| s.clamp(1, opts.dims()[i].limit);
    for op in ops {
        match op {
            Op::Tick(d) => now = now.saturating_add(*d),
            Op::Lease(g, u, ready, room) => {
                // A lease is granted by a store that answers: back first, if it was lost.
                if matches!(store, Store::Lost { .. }) {
                    q.rejoin(now);
                    shares_until = now.saturating_add(longest).max(1);
                    store = Store::Answers;
                }
                if let Some(f) = q.fleet_mut() {
                    let mut gr = [0u64; MAX_DIMS];
                    gr[..2].copy_from_slice(g);
                    f.install(
                        &gr,
                        now.saturating_add(*u),
                        now.saturating_add(*ready),
                        room,
                    );
                }
                (granted, until, spent) = (*g, now.saturating_add(*u), [0, 0]);
            }
            Op::Lost(s, refuse) => {
                q.fall_back(now, s, *refuse);
                shares = *s;
                store = Store::Lost {
                    shares: *s,
                    refuse: *refuse,
                };
                (granted, until) = ([0, 0], 0);
            }
            Op::Back => {
                if matches!(store, Store::Lost { .. }) {
                    q.rejoin(now);
                    shares_until = now.saturating_add(longest).max(1);
                    store = Store::Answers;
                    (granted, until) = ([0, 0], 0);
                }
            }
            Op::Call(c, budget) => {
                let mut costs = [0u64; COSTS];
                costs[..2].copy_from_slice(c);
                match q.check(now, &costs, *budget, false) {
                    QuotaCheck::Take => {
                        let within = |i: usize, bound: u64| {
                            window(&charges, now, i).saturating_add(c[i]) <= bound
                        };
                        match &store {
                            Store::Answers => {
                                assert!(now < until, "admitted after the lease's end");
                                for i in 0..2 {
                                    assert!(
                                        spent[i].saturating_add(c[i]) <= granted[i],
                                        "dimension {i}: {} spent of a lease of {}, {} more",
                                        spent[i],
                                        granted[i],
                                        c[i]
                                    );
                                    if now < shares_until && shares_until != 0 {
                                        assert!(
                                            within(i, share_of(shares[i], i)),
                                            "past the share after rejoining"
                                        );
                                    }
                                }
                            }
                            Store::Lost { shares, refuse } => {
                                assert!(!refuse, "admitted while refusing");
                                for i in 0..2 {
                                    assert!(
                                        within(i, share_of(shares[i], i)),
                                        "dimension {i}: {} in the window, {} more, share {}",
                                        window(&charges, now, i),
                                        c[i],
                                        share_of(shares[i], i)
                                    );
                                }
                            }
                        }
                        q.take(now, &costs);
                        spent = [spent[0].saturating_add(c[0]), spent[1].saturating_add(c[1])];
                        charges.push((now, costs));
                    }
                    QuotaCheck::Wait(t) => {
                        assert!(
                            t >= now && t - now <= *budget,
                            "a wait to {t} from {now}, deadline {budget}"
                        );
                    }
                    QuotaCheck::Refuse | QuotaCheck::Oversize => {}
                }
            }
        }
    }
}

/// 1 500 cases of up to 300 steps: 1 to 3 s in the dev profile
/// on a 2-core machine at load 6 to 8.
/// `PROPTEST_CASES=20000 cargo test -p resilix-engine --test properties_quota_fleet` for a longer hunt.
const CASES: u32 = 1_500;

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(CASES), max_shrink_iters: 4_000, ..ProptestConfig::default() })]

    #[test]
    fn a_shared_quota_spends_only_its_lease_or_its_share(
        opts in quota(),
        wait_ms in prop_oneof![Just(0u64), 1u64..2_000, Just(u64::MAX / NANOS_PER_MS)],
        start in prop_oneof![Just(0u64), 1u64..u64::MAX / 4],
        ops in proptest::collection::vec(op(), 1..300),
    ) {
        run(opts, wait_ms, start, &ops);
    }
}
