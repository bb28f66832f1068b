//! The adaptive throttle's options around their defaults on the `rate-quota` scenario (ADR 1000):
//! calls that reach the upstream per accepted call and accepted calls against the quota over
//! 10–60 s; then, with the quota lifted at 30 s, how long the throttle goes on refusing.
//!
//!   cargo run --release -p resilix-sim --example throttle

use resilix_engine::{LimiterOptions, ThrottleOptions};
use resilix_sim::client::{ClientLimiter, ResilixClient};
use resilix_sim::metrics::{accepted_pct, calls_per_accepted};
use resilix_sim::scenario::{self, Change, Fault, SEC};
use resilix_sim::trace::{Trace, TICK_NS};

const QUOTA: f64 = 100.0;

/// Seconds after `at_s` until the throttle stops refusing for good (the end of the last second
/// that refused at least 1 % of its acquires), and the share refused in the 10 s after, %.
fn after_lift(tr: &Trace, at_s: f64) -> (f64, f64) {
    let per_s = (SEC / TICK_NS) as usize;
    let first = (at_s * per_s as f64) as usize;
    let sum = |v: &Vec<u32>, a: usize, b: usize| v[a..b].iter().map(|&x| x as f64).sum::<f64>();
    let mut last = 0;
    let mut i = first;
    while i + per_s <= tr.attempts.len() {
        if sum(&tr.refused, i, i + per_s) >= 0.01 * sum(&tr.attempts, i, i + per_s) {
            last = i + per_s - first;
        }
        i += per_s;
    }
    let ten = first + 10 * per_s;
    let share = sum(&tr.refused, first, ten) / sum(&tr.attempts, first, ten) * 100.0;
    (last as f64 / per_s as f64, share)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    xs[xs.len() / 2]
}

fn main() {
    let sc = scenario::all()
        .into_iter()
        .find(|s| s.name == "rate-quota")
        .expect("scenario exists");
    let mut lifted = sc.clone();
    lifted.changes = vec![(30 * SEC, Change::Fault(Fault::None))];
    let d = ThrottleOptions::default();
    let cases = [
        ("defaults (1.2, 30 s, 0.9)", Some(d)),
        (
            "multiplier 2.4 (twice)",
            Some(ThrottleOptions {
                multiplier: 2.4,
                ..d
            }),
        ),
        (
            "multiplier 2 (SRE)",
            Some(ThrottleOptions {
                multiplier: 2.0,
                ..d
            }),
        ),
        (
            "multiplier 1.1",
            Some(ThrottleOptions {
                multiplier: 1.1,
                ..d
            }),
        ),
        (
            "multiplier 1 (the least allowed)",
            Some(ThrottleOptions {
                multiplier: 1.0,
                ..d
            }),
        ),
        (
            "windowMs 15000 (half)",
            Some(ThrottleOptions {
                window_ms: 15_000,
                ..d
            }),
        ),
        (
            "windowMs 60000 (twice; failsafe-go)",
            Some(ThrottleOptions {
                window_ms: 60_000,
                ..d
            }),
        ),
        (
            "maxRejection 0.8 (Envoy)",
            Some(ThrottleOptions {
                max_rejection: 0.8,
                ..d
            }),
        ),
        ("off", None),
    ];
    println!("| throttle | calls per accepted call | accepted, % of the quota | quota lifted at 30 s: refused in the 10 s after, % | refusing until (s after) |");
    println!("|---|--:|--:|--:|--:|");
    for (name, throttle) in cases {
        let (mut cpa, mut pct, mut rec, mut share) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for seed in 1..=3 {
            let build = |s: u64| -> Box<dyn ClientLimiter> {
                Box::new(ResilixClient::with_policies(
                    LimiterOptions::default(),
                    throttle,
                    s,
                ))
            };
            let tr = resilix_sim::world::run_with(&sc, &build, seed);
            cpa.push(calls_per_accepted(&tr, 10.0, 60.0));
            pct.push(accepted_pct(&tr, QUOTA, 10.0, 60.0));
            let tr = resilix_sim::world::run_with(&lifted, &build, seed);
            let (until, refused) = after_lift(&tr, 30.0);
            rec.push(until);
            share.push(refused);
        }
        println!(
            "| {name} | {:.2} | {:.1} | {:.1} | {:.0} |",
            median(cpa),
            median(pct),
            median(share),
            median(rec)
        );
    }
}
