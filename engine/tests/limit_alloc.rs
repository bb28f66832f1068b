//! The adaptive limit allocates nothing after construction (zero steady-state
//! allocation): samples of every verdict, window closes, baseline resets, idle recovery.
//! Allocations are counted per thread: the test harness's own thread allocates while a test
//! starts, which a global count read as the limit's.

mod support;
use support::allocs;

use resilix_engine::limit::Limit;
use resilix_engine::{Algorithm, LimiterOptions, Sample, Verdict, NANOS_PER_MS};

#[test]
fn adaptive_limit_allocates_nothing_after_construction() {
    let probe = allocs();
    std::hint::black_box(vec![0u8; 16]);
    assert!(
        allocs() > probe,
        "the counter counts this thread's allocations"
    );
    for algorithm in [Algorithm::Vegas, Algorithm::Gradient2, Algorithm::Aimd] {
        let opts = LimiterOptions {
            algorithm,
            ..LimiterOptions::default()
        };
        let mut limit = Limit::new(&opts, 0);
        let before = allocs();
        let mut now = 0u64;
        let mut x = 1u64;
        for i in 0..200_000u64 {
            now += NANOS_PER_MS; // 1 000 calls/s: windows close every 2 s, ~3 000 windows
            if i == 150_000 {
                now += 600_000 * NANOS_PER_MS; // ten idle minutes: idle recovery on the next acquire
            }
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let inflight = 1 + (x >> 59) as u32 * 3; // 1..=94: varied demand
            let verdict = match (x >> 40) % 50 {
                0 => Verdict::Timeout,
                1 => Verdict::Overload,
                2 => Verdict::Failure,
                3 => Verdict::Answered,
                _ => Verdict::Success,
            };
            let latency_ns = (40 + inflight as u64 + (x >> 56)) * NANOS_PER_MS;
            limit.on_acquire(now, inflight - 1);
            limit.on_sample(
                now,
                &Sample {
                    latency_ns,
                    duration_ns: latency_ns,
                    inflight,
                    verdict,
                    waited: false,
                    late: false,
                },
                inflight - 1,
            );
        }
        let after = allocs();
        assert_eq!(
            after - before,
            0,
            "{algorithm:?} allocated {} times",
            after - before
        );
        assert!(limit.current() >= 4);
    }
}
