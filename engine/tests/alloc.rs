//! The hot path allocates nothing after warm-up: acquire, admit_queued, leave_queue, mark and
//! settle through breaker (all its states and transitions), limiter + queue and bulkhead.
//! A counting global allocator (per thread, so parallel tests do not disturb it) proves it.

mod support;
use support::allocs;

use resilix_engine::{
    Acquired, Algorithm, BreakerOptions, BulkheadOptions, Engine, LimiterOptions, PolicyOptions,
    QueueOptions, RegistryOptions, SplitMix64, ThrottleOptions, Verdict, NANOS_PER_MS,
};

/// A workload that trips and recovers the breaker, fills the queue and the bulkhead.
fn workload(
    e: &mut Engine,
    h: u64,
    rng: &mut SplitMix64,
    now: &mut u64,
    running: &mut Vec<u64>,
    steps: u32,
) {
    for _ in 0..steps {
        *now += rng.next_u64() % (20 * NANOS_PER_MS);
        // Phases of failures and successes, so the breaker opens, half-opens and closes.
        let bad = (*now / (30_000 * NANOS_PER_MS)) % 2 == 1;
        match rng.next_u64() % 8 {
            0..=3 => match e.acquire(h, *now).unwrap() {
                Acquired::Permit(id) if running.len() < running.capacity() => running.push(id),
                Acquired::Permit(id) => {
                    e.settle(h, id, Verdict::Success, *now).unwrap().unwrap();
                }
                _ => {}
            },
            4 => {
                if let Some(Acquired::Permit(id)) = e.admit_queued(h, *now).unwrap() {
                    if running.len() < running.capacity() {
                        running.push(id);
                    } else {
                        e.settle(h, id, Verdict::Cancelled, *now).unwrap().unwrap();
                    }
                }
            }
            5 => {
                e.leave_queue(h).unwrap();
            }
            _ if !running.is_empty() => {
                let i = (rng.next_u64() % running.len() as u64) as usize;
                let id = running.swap_remove(i);
                e.mark(h, id, *now).unwrap();
                let v = if bad {
                    [Verdict::Failure, Verdict::Timeout][(rng.next_u64() % 2) as usize]
                } else {
                    Verdict::ALL[(rng.next_u64() % 7) as usize]
                };
                e.settle(h, id, v, *now).unwrap().unwrap();
            }
            _ => {}
        }
    }
}

#[test]
fn steady_state_allocates_nothing() {
    let p = PolicyOptions {
        breaker: Some(BreakerOptions {
            window_ms: 1_000,
            open_ms: 500,
            ..BreakerOptions::default()
        }),
        limiter: Some(LimiterOptions {
            algorithm: Algorithm::Fixed,
            initial_limit: 8,
            min_limit: 1,
            max_limit: 8,
            queue: Some(QueueOptions::default()),
            ..LimiterOptions::default()
        }),
        bulkhead: Some(BulkheadOptions { max_concurrent: 6 }),
        throttle: Some(ThrottleOptions::default()),
        quota: None,
    };
    // The counter sees allocations made on this thread.
    let probe = allocs();
    let _boxed = std::hint::black_box(Box::new(1u64));
    assert!(allocs() > probe, "the counting allocator is not counting");
    let mut e = Engine::new(p, RegistryOptions::default(), 3).unwrap();
    let h = e.resolve("upstream", 0).unwrap().handle;
    let mut rng = SplitMix64::new(9);
    let mut now = NANOS_PER_MS;
    let mut running = Vec::with_capacity(64);
    workload(&mut e, h, &mut rng, &mut now, &mut running, 20_000); // warm-up
    let seq_before = e.breaker_transition(h).unwrap().map_or(0, |t| t.seq);
    let before = allocs();
    workload(&mut e, h, &mut rng, &mut now, &mut running, 200_000);
    let after = allocs();
    let seq_after = e.breaker_transition(h).unwrap().map_or(0, |t| t.seq);
    assert!(
        seq_after > seq_before + 10,
        "the breaker should have changed state many times"
    );
    assert_eq!(
        after - before,
        0,
        "{} allocations on the hot path",
        after - before
    );
}
