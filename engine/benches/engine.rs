//! Criterion benches of the pure engine, through its public API only so that they
//! follow the algorithms as they land. `cargo bench -p resilix-engine --bench engine`.
//!
//! - acquire+settle with the default policy set (breaker → Vegas limiter + queue), time advancing;
//! - a window close with its quantile update (Vegas): 50 calls spanning just over `windowMinMs`
//!   per iteration, against the same 50 calls inside one window;
//! - registry lookup with 1000 keys (by name, and by handle);
//! - the queue path: a call that waits, is admitted when another settles, and settles.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use resilix_engine::{
    Acquired, Algorithm, Engine, KeyHandle, LimiterOptions, PolicyOptions, RegistryOptions,
    Verdict, NANOS_PER_MS,
};

const T0: u64 = 1_000 * NANOS_PER_MS;

fn permit(a: Acquired) -> u64 {
    match a {
        Acquired::Permit(p) => p,
        other => panic!("expected a permit, got {other:?}"),
    }
}

fn engine(policies: PolicyOptions) -> (Engine, KeyHandle) {
    let mut e = Engine::new(policies, RegistryOptions::default(), 1).unwrap();
    let h = e.resolve("api.example.com", T0).unwrap().handle;
    (e, h)
}

fn vegas() -> PolicyOptions {
    PolicyOptions {
        limiter: Some(LimiterOptions {
            algorithm: Algorithm::Vegas,
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn acquire_settle(c: &mut Criterion) {
    let mut g = c.benchmark_group("acquire+settle");
    g.throughput(Throughput::Elements(1));
    let cases = [
        ("default policies", PolicyOptions::default()),
        (
            "fixed limit only",
            PolicyOptions {
                breaker: None,
                limiter: Some(LimiterOptions {
                    algorithm: Algorithm::Fixed,
                    ..Default::default()
                }),
                bulkhead: None,
                throttle: None,
                quota: None,
            },
        ),
    ];
    for (name, policies) in cases {
        let (mut e, h) = engine(policies);
        let mut now = T0;
        g.bench_function(name, |b| {
            b.iter(|| {
                // 1 µs per call, 20 µs latency: windows roll as a busy key's would.
                now += 1_000;
                let p = permit(e.acquire(h, now).unwrap());
                e.settle(h, black_box(p), Verdict::Success, now + 20_000)
                    .unwrap()
                    .unwrap()
            })
        });
    }
    g.finish();
}

fn window_close(c: &mut Criterion) {
    let mut g = c.benchmark_group("vegas window");
    g.throughput(Throughput::Elements(50));
    // 50 calls (minSamples) whose times span windowMinMs (2 s) + 1 ms: one window closes per
    // iteration, with its quantile and limit update, on the last call.
    let step_close = (2_000 * NANOS_PER_MS + NANOS_PER_MS) / 50;
    // The same 50 calls 1 µs apart: a window closes once every 40 000 iterations.
    let step_open = 1_000;
    for (name, step) in [
        ("50 calls, one window close", step_close),
        ("50 calls, no close", step_open),
    ] {
        let (mut e, h) = engine(vegas());
        let mut now = T0;
        let mut i = 0u64;
        g.bench_function(name, |b| {
            b.iter(|| {
                for _ in 0..50 {
                    now += step;
                    i += 1;
                    let p = permit(e.acquire(h, now).unwrap());
                    // Latency 5..15 ms, varying so the quantile has work to do.
                    let lat = 5 * NANOS_PER_MS + (i * 7_919 % 10_000) * 1_000;
                    e.settle(h, p, Verdict::Success, now + lat)
                        .unwrap()
                        .unwrap();
                }
            })
        });
    }
    g.finish();
}

fn registry(c: &mut Criterion) {
    let mut g = c.benchmark_group("registry, 1000 keys");
    g.throughput(Throughput::Elements(1));
    let mut e = Engine::new(PolicyOptions::default(), RegistryOptions::default(), 1).unwrap();
    let names: Vec<String> = (0..1000)
        .map(|i| format!("upstream-{i}.internal:8080"))
        .collect();
    let handles: Vec<KeyHandle> = names
        .iter()
        .map(|n| e.resolve(n, T0).unwrap().handle)
        .collect();
    assert_eq!(e.registry().len(), 1000);
    // A fixed pseudo-random visiting order, so that recency-list touches really move entries.
    let order: Vec<usize> = (0..4096u64)
        .map(|i| (i * 2_654_435_761 % 1000) as usize)
        .collect();
    let mut j = 0;
    g.bench_function("resolve by name (hash + touch)", |b| {
        b.iter(|| {
            j = (j + 1) & 4095;
            e.resolve(black_box(&names[order[j]]), T0).unwrap().handle
        })
    });
    let mut now = T0;
    g.bench_function("acquire+settle by handle, random key", |b| {
        b.iter(|| {
            j = (j + 1) & 4095;
            let h = handles[order[j]];
            now += 1_000;
            let p = permit(e.acquire(h, now).unwrap());
            e.settle(h, p, Verdict::Success, now + 20_000)
                .unwrap()
                .unwrap()
        })
    });
    g.finish();
}

fn queue(c: &mut Criterion) {
    let mut g = c.benchmark_group("queue");
    g.throughput(Throughput::Elements(1));
    // Limit 1 with the default queue: the second call waits until the first settles.
    let policies = PolicyOptions {
        breaker: None,
        limiter: Some(LimiterOptions {
            algorithm: Algorithm::Fixed,
            initial_limit: 1,
            ..Default::default()
        }),
        bulkhead: None,
        throttle: None,
        quota: None,
    };
    let (mut e, h) = engine(policies);
    let mut now = T0;
    let first = permit(e.acquire(h, now).unwrap());
    let mut running = first;
    g.bench_function("wait, admit on settle, settle", |b| {
        b.iter(|| {
            now += 1_000;
            assert_eq!(e.acquire(h, now).unwrap(), Acquired::Queued);
            let wake = e
                .settle(h, running, Verdict::Success, now)
                .unwrap()
                .unwrap();
            assert_eq!(wake, 1);
            running = permit(e.admit_queued(h, now).unwrap().unwrap());
        })
    });
    // Waiting calls past the queue's reach are refused (reason 'queue') without state change.
    let mut waiting = 0;
    while e.acquire(h, now).unwrap() == Acquired::Queued {
        waiting += 1;
    }
    g.bench_function("refused at the queue bound", |b| {
        b.iter(|| e.acquire(h, black_box(now)).unwrap())
    });
    for _ in 0..waiting {
        e.leave_queue(h).unwrap();
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(2));
    targets = acquire_settle, window_close, registry, queue
}
criterion_main!(benches);
