//! Zero steady-state allocation: after a warm-up, 100 000 calls through
//! every path of the engine — window rolls, idle gaps that reset baselines, queue admission and
//! rejection, bulkhead refusals, breaker transitions, registry touches, marks, every verdict —
//! allocate nothing. A counting global allocator counts this thread's allocations only, so the
//! other tests of this binary running in parallel cannot disturb it.

mod support;
use support::allocations;

use resilix_engine::{
    Acquired, BreakerOptions, BulkheadOptions, Engine, KeyHandle, LimiterOptions, PolicyOptions,
    RegistryOptions, ThrottleOptions, Verdict, NANOS_PER_MS,
};

const MS: u64 = NANOS_PER_MS;
const KEYS: [&str; 4] = ["api.a", "api.b", "api.c", "api.d"];

/// The default policy set (Vegas limiter with queue, breaker) plus a bulkhead, so every policy
/// is on the path, with a small limit (8) so that the queue is reached often. A bulkhead refuses
/// only below the limit (above it the limiter never lets it fill), and then the queue is never
/// reached: so two engines, one with the bulkhead above the limit, one below.
fn engine(bulkhead: u32) -> Engine {
    let policies = PolicyOptions {
        breaker: Some(BreakerOptions {
            open_ms: 50,
            ..Default::default()
        }),
        limiter: Some(LimiterOptions {
            initial_limit: 8,
            ..Default::default()
        }),
        bulkhead: Some(BulkheadOptions {
            max_concurrent: bulkhead,
        }),
        throttle: Some(ThrottleOptions::default()),
        quota: None,
    };
    Engine::new(policies, RegistryOptions::default(), 7).unwrap()
}

/// One of several traffic shapes, chosen by `round`; returns the number of calls it made.
struct Driver {
    now: u64,
    handles: Vec<KeyHandle>,
    held: Vec<(usize, u64)>,
    waiting: Vec<usize>,
    calls: u64,
    /// Waiters admitted from the queue.
    admitted: u64,
}

impl Driver {
    fn new(e: &mut Engine) -> Driver {
        let now = 1_000 * MS;
        let handles = KEYS
            .iter()
            .map(|k| e.resolve(k, now).unwrap().handle)
            .collect();
        Driver {
            now,
            handles,
            held: Vec::with_capacity(256),
            waiting: Vec::with_capacity(256),
            calls: 0,
            admitted: 0,
        }
    }

    fn acquire(&mut self, e: &mut Engine, k: usize) {
        self.acquire_within(e, k, u64::MAX)
    }

    fn acquire_within(&mut self, e: &mut Engine, k: usize, budget_ns: u64) {
        self.calls += 1;
        match e
            .acquire_within(self.handles[k], self.now, budget_ns)
            .unwrap()
        {
            Acquired::Permit(p) => self.held.push((k, p)),
            Acquired::Queued => self.waiting.push(k),
            Acquired::Rejected(_) => {}
        }
    }

    fn settle_all(&mut self, e: &mut Engine, verdict: impl Fn(usize) -> Verdict, step: u64) {
        let mut i = 0;
        while let Some((k, p)) = self.held.pop() {
            self.now += step;
            if i % 3 == 0 {
                assert!(e.mark(self.handles[k], p, self.now - step / 2).unwrap());
            }
            let wake = e
                .settle(self.handles[k], p, verdict(i), self.now)
                .unwrap()
                .unwrap();
            for _ in 0..wake {
                self.admit(e, k);
            }
            i += 1;
        }
    }

    fn admit(&mut self, e: &mut Engine, k: usize) {
        if let Some(pos) = self.waiting.iter().position(|&w| w == k) {
            match e.admit_queued(self.handles[k], self.now).unwrap() {
                Some(Acquired::Permit(p)) => {
                    self.admitted += 1;
                    self.waiting.swap_remove(pos);
                    self.held.push((k, p));
                }
                Some(_) => {
                    self.waiting.swap_remove(pos);
                }
                None => {}
            }
        }
    }

    /// Drains the queue: waiters time out (leave) half the time, are admitted otherwise.
    fn drain(&mut self, e: &mut Engine, leave: bool) {
        while let Some(k) = self.waiting.pop() {
            if leave {
                e.leave_queue(self.handles[k]).unwrap();
            } else {
                match e.admit_queued(self.handles[k], self.now).unwrap() {
                    Some(Acquired::Permit(p)) => {
                        self.admitted += 1;
                        self.held.push((k, p))
                    }
                    Some(_) => {}
                    None => {
                        e.leave_queue(self.handles[k]).unwrap();
                    }
                }
            }
        }
    }

    fn round(&mut self, e: &mut Engine, round: u64) {
        let k = (round % KEYS.len() as u64) as usize;
        match round % 8 {
            // Steady traffic, one call at a time: windows roll as time advances.
            0..=2 => {
                for _ in 0..20 {
                    self.acquire(e, k);
                    self.settle_all(e, |_| Verdict::Success, 3 * MS);
                }
            }
            // A burst past the limit: queue admission, queue rejection (calls whose deadline
            // the queue cannot meet), bulkhead refusals.
            3 => {
                for i in 0..40 {
                    let budget = if i < 30 { u64::MAX } else { MS };
                    self.acquire_within(e, k, budget);
                }
                self.settle_all(
                    e,
                    |i| {
                        if i % 5 == 0 {
                            Verdict::Overload
                        } else {
                            Verdict::Success
                        }
                    },
                    MS,
                );
                self.drain(e, round % 16 == 3);
                self.settle_all(e, |_| Verdict::Answered, MS);
            }
            // Failures: the breaker opens, then half-open probes close it again.
            4 => {
                for _ in 0..8 {
                    self.acquire(e, k);
                    self.settle_all(e, |_| Verdict::Failure, MS);
                }
                self.now += 60 * MS; // past open_ms
                for _ in 0..6 {
                    self.acquire(e, k);
                    self.settle_all(e, |_| Verdict::Success, MS);
                }
            }
            // Timeouts, cancellations, rejections: the other verdicts.
            5 => {
                for i in 0..12 {
                    self.acquire(e, k);
                    let v = [
                        Verdict::Timeout,
                        Verdict::Cancelled,
                        Verdict::Rejected,
                        Verdict::Success,
                    ][i % 4];
                    self.settle_all(e, |_| v, 2 * MS);
                }
            }
            // Registry touches by name (the hash lookup) across every key.
            6 => {
                for name in KEYS {
                    let h = e.resolve(name, self.now).unwrap().handle;
                    assert!(self.handles.contains(&h));
                    self.acquire(e, k);
                    self.settle_all(e, |_| Verdict::Success, MS);
                }
            }
            // An idle gap of minutes (baseline decay / reset), then traffic resumes.
            _ => {
                self.now += 5 * 60_000 * MS;
                for _ in 0..10 {
                    self.acquire(e, k);
                    self.settle_all(e, |_| Verdict::Success, 5 * MS);
                }
            }
        }
        self.drain(e, false);
        self.settle_all(e, |_| Verdict::Success, MS);
    }
}

#[test]
fn steady_state_allocates_nothing_on_any_path() {
    let mut engines = [engine(12), engine(6)];
    let mut drivers: Vec<Driver> = engines.iter_mut().map(Driver::new).collect();
    let calls = |d: &[Driver]| d.iter().map(|d| d.calls).sum::<u64>();
    // Warm-up: every path once, so permit slabs and windows reach their working size.
    let mut round = 0;
    while calls(&drivers) < 50_000 {
        for (e, d) in engines.iter_mut().zip(drivers.iter_mut()) {
            d.round(e, round);
        }
        round += 1;
    }
    let before = calls(&drivers);
    let n = allocations(|| {
        while calls(&drivers) - before < 100_000 {
            for (e, d) in engines.iter_mut().zip(drivers.iter_mut()) {
                d.round(e, round);
            }
            round += 1;
        }
    });
    let total = calls(&drivers) - before;
    assert!(total >= 100_000);
    // The paths were really taken: rejections by reason (index = RejectReason as usize).
    let mut rejected = [0u64; 7];
    for (e, d) in engines.iter().zip(drivers.iter()) {
        for k in KEYS {
            let s = e.stats_by_name(k, d.now).unwrap();
            assert_eq!(
                (s.inflight, s.queued),
                (0, 0),
                "{k}: accounting back to zero"
            );
            for (r, n) in rejected.iter_mut().zip(s.rejections) {
                *r += n;
            }
        }
    }
    assert!(drivers[0].admitted > 0, "queue admissions");
    assert!(rejected[2] > 0, "queue rejections: {rejected:?}");
    assert!(rejected[3] > 0, "bulkhead rejections: {rejected:?}");
    assert!(rejected[4] > 0, "breaker rejections: {rejected:?}");
    assert_eq!(n, 0, "{n} allocations in {total} steady-state calls");
}

#[test]
fn the_counter_sees_allocations() {
    // Guards the guard: an allocation on this thread is counted.
    let n = allocations(|| {
        let v: Vec<u64> = Vec::with_capacity(16);
        std::hint::black_box(v);
    });
    assert_eq!(n, 1);
}
