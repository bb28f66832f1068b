//! The retry budget's options at half and twice their defaults, on the `retry-storm` scenario
//! with a fixed limit above the upstream's capacity (so that overload reaches it and only the
//! budget bounds the retries): attempts that reach the upstream per first attempt, and goodput.
//!
//!   cargo run --release -p resilix-sim --example retry-budget

use resilix_engine::{Algorithm, BudgetOptions, LimiterOptions};
use resilix_sim::client::{ClientLimiter, ResilixClient};
use resilix_sim::metrics::{attempts_per_first, Run};
use resilix_sim::scenario;

fn main() {
    let sc = scenario::all()
        .into_iter()
        .find(|s| s.name == "retry-storm")
        .expect("scenario exists");
    let d = BudgetOptions::default();
    let cases = [
        ("defaults (ratio 0.2, 3/s)", d),
        ("ratio 0.1 (half)", BudgetOptions { ratio: 0.1, ..d }),
        ("ratio 0.4 (twice)", BudgetOptions { ratio: 0.4, ..d }),
        (
            "minPerSecond 1.5 (half)",
            BudgetOptions {
                min_per_second: 1.5,
                ..d
            },
        ),
        (
            "minPerSecond 6 (twice)",
            BudgetOptions {
                min_per_second: 6.0,
                ..d
            },
        ),
        (
            "windowMs 5000 (half)",
            BudgetOptions {
                window_ms: 5_000,
                ..d
            },
        ),
        (
            "windowMs 20000 (twice)",
            BudgetOptions {
                window_ms: 20_000,
                ..d
            },
        ),
        (
            "no budget (ratio 10, 1e6/s)",
            BudgetOptions {
                ratio: 10.0,
                min_per_second: 1e6,
                ..d
            },
        ),
    ];
    println!("| budget | attempts per first attempt | goodput % |");
    println!("|---|--:|--:|");
    for (name, budget) in cases {
        let (mut apf, mut gp) = (Vec::new(), Vec::new());
        for seed in 1..=3 {
            let build = |s: u64| -> Box<dyn ClientLimiter> {
                let limiter = LimiterOptions {
                    algorithm: Algorithm::Fixed,
                    ..LimiterOptions::default()
                };
                Box::new(ResilixClient::with_limiter(limiter, s).with_budget(budget))
            };
            let tr = resilix_sim::world::run_with(&sc, &build, seed);
            let row = resilix_sim::client::Row::Resilix(Algorithm::Fixed);
            let run = Run {
                sc: &sc,
                row,
                tr: &tr,
            };
            apf.push(attempts_per_first(&tr, 10.0, 60.0));
            gp.push(resilix_sim::metrics::compute(&run)[1].1.unwrap_or(f64::NAN));
        }
        apf.sort_by(f64::total_cmp);
        gp.sort_by(f64::total_cmp);
        println!("| {name} | {:.3} | {:.1} |", apf[1], gp[1]);
    }
}
