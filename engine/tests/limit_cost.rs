//! Rough per-call cost of the adaptive limit (on_acquire + on_sample), against a target of 1 µs per
//! request. Ignored by default; run in release:
//! `cargo test --release --test limit_cost -- --ignored --nocapture`.

use resilix_engine::limit::Limit;
use resilix_engine::{Algorithm, LimiterOptions, Sample, Verdict, NANOS_PER_MS};
use std::time::Instant;

#[test]
#[ignore = "prints a timing, asserts nothing: cargo test --release --test limit_cost -- --ignored --nocapture"]
fn ns_per_call() {
    for algorithm in [Algorithm::Vegas, Algorithm::Gradient2, Algorithm::Aimd] {
        let opts = LimiterOptions {
            algorithm,
            ..LimiterOptions::default()
        };
        let mut limit = Limit::new(&opts, 0);
        let n = 5_000_000u64;
        let mut x = 1u64;
        let start = Instant::now();
        for i in 0..n {
            let now = i * NANOS_PER_MS / 10; // 10 000 calls/s of simulated time
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let inflight = 1 + (x >> 58) as u32;
            let latency_ns = (40 + (x >> 57)) * NANOS_PER_MS;
            limit.on_acquire(now, inflight - 1);
            limit.on_sample(
                now,
                &Sample {
                    latency_ns,
                    duration_ns: latency_ns,
                    inflight,
                    verdict: Verdict::Success,
                    waited: false,
                    late: false,
                },
                inflight - 1,
            );
        }
        let ns = start.elapsed().as_nanos() as f64 / n as f64;
        println!(
            "{algorithm:?}: {ns:.1} ns per acquire+sample (limit {})",
            std::hint::black_box(limit.current())
        );
    }
}
