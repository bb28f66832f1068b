//! Deterministic tests of the adaptive limit on a manual clock: a tiny event-driven
//! synthetic upstream (latency = f(inflight) for capacity C) drives `Limit` the way the
//! `Limiter` does (on_acquire before admission, on_sample on settle).

use super::*;
use crate::options::{Algorithm, LimiterOptions};
use crate::rng::SplitMix64;
use crate::{Sample, Verdict, NANOS_PER_MS};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

const MS: u64 = NANOS_PER_MS;
const S: u64 = 1_000 * MS;

fn opts(algorithm: Algorithm) -> LimiterOptions {
    LimiterOptions {
        algorithm,
        ..LimiterOptions::default()
    }
}

/// The upstream: C parallel servers, service time `service` × log-normal(σ) jitter; beyond C
/// calls queue, so latency grows as inflight / C (processor sharing). A call whose latency
/// exceeds `timeout` ends at the timeout with `Verdict::Timeout`.
#[derive(Clone, Copy)]
struct Upstream {
    capacity: f64,
    service: u64,
    sigma: f64,
    timeout: u64,
}

impl Upstream {
    fn new(capacity: f64, service_ms: u64) -> Self {
        Upstream {
            capacity,
            service: service_ms * MS,
            sigma: 0.1,
            timeout: service_ms * MS * 10,
        }
    }
    fn call(&self, inflight: u32, rng: &mut SplitMix64) -> (u64, Verdict) {
        let u1 = rng.next_f64().max(1e-12);
        let u2 = rng.next_f64();
        let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
        let load = (inflight as f64 / self.capacity).max(1.0);
        let lat = (self.service as f64 * load * (self.sigma * z).exp()) as u64;
        if lat >= self.timeout {
            (self.timeout, Verdict::Timeout)
        } else {
            (lat, Verdict::Success)
        }
    }
}

#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A caller (closed loop) tries to start a call.
    Try(usize),
    /// A call ends: start, inflight at acquire, latency, verdict code.
    Done(usize, u64, u32, u64, u8),
    /// An open-loop arrival.
    Arrive,
}

struct Sim {
    limit: Limit,
    inflight: u32,
    now: u64,
    rng: SplitMix64,
    events: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    /// (time, limit) after every settle.
    trace: Vec<(u64, u32)>,
    shed: u64,
    first_shed: Option<u64>,
    /// First decrease time after `watch_from`.
    watch_from: u64,
    first_drop: Option<u64>,
    level: u32,
}

fn verdict_code(v: Verdict) -> u8 {
    v as u8
}

#[allow(dead_code)]
impl Sim {
    fn new(o: LimiterOptions) -> Self {
        Sim {
            limit: Limit::new(&o, 0),
            inflight: 0,
            now: 0,
            rng: SplitMix64::new(42),
            events: BinaryHeap::new(),
            seq: 0,
            trace: Vec::new(),
            shed: 0,
            first_shed: None,
            watch_from: u64::MAX,
            first_drop: None,
            level: 0,
        }
    }
    fn push(&mut self, t: u64, e: Ev) {
        self.seq += 1;
        self.events.push(Reverse((t, self.seq, e)));
    }
    fn start_closed(&mut self, n: usize) {
        for i in 0..n {
            self.push(self.now, Ev::Try(i));
        }
    }
    /// Try to start one call; `None` when refused.
    fn try_start(&mut self, caller: usize, up: &Upstream) -> bool {
        self.limit.on_acquire(self.now, self.inflight);
        if self.inflight >= self.limit.admit_limit() {
            return false;
        }
        self.inflight += 1;
        self.limit.on_admit(self.now);
        let (lat, v) = up.call(self.inflight, &mut self.rng);
        let t = self.now + lat;
        let inflight = self.inflight;
        let now = self.now;
        self.push(t, Ev::Done(caller, now, inflight, lat, verdict_code(v)));
        true
    }
    /// Run until `until`; closed-loop callers retry refused calls after 10 ms; `rate_per_s`
    /// > 0 adds Poisson arrivals (refused ones are shed). Stops closed callers at `until`
    /// when `stop` (they are simply not rescheduled).
    fn run(&mut self, until: u64, up: Upstream, rate_per_s: f64, stop_closed: bool) {
        if rate_per_s > 0.0 {
            let gap = self.exp_gap(rate_per_s);
            self.push(self.now + gap, Ev::Arrive);
        }
        while let Some(Reverse((t, _, _))) = self.events.peek() {
            if *t > until {
                break;
            }
            let Reverse((t, _, e)) = self.events.pop().unwrap();
            self.now = t;
            match e {
                Ev::Try(i) => {
                    if !self.try_start(i, &up) {
                        self.push(t + 10 * MS, Ev::Try(i));
                    }
                }
                Ev::Arrive => {
                    if !self.try_start(usize::MAX, &up) {
                        self.shed += 1;
                        if self.first_shed.is_none() && t >= self.watch_from {
                            self.first_shed = Some(t);
                        }
                    }
                    let gap = self.exp_gap(rate_per_s);
                    self.push(t + gap, Ev::Arrive);
                }
                Ev::Done(i, start, inflight, lat, code) => {
                    self.inflight -= 1;
                    let verdict = Verdict::from_code(code as u32).unwrap();
                    let s = Sample {
                        latency_ns: lat,
                        duration_ns: t - start,
                        inflight,
                        verdict,
                        waited: false,
                    };
                    self.limit.on_sample(t, &s, self.inflight);
                    let l = self.limit.current();
                    if t >= self.watch_from && self.first_drop.is_none() && l < self.level {
                        self.first_drop = Some(t);
                    }
                    self.trace.push((t, l));
                    if i != usize::MAX {
                        self.push(t, Ev::Try(i));
                    }
                }
            }
        }
        self.now = until;
        // Drop pending open-loop arrivals (a new phase re-arms them); optionally stop callers.
        let keep: Vec<_> = std::mem::take(&mut self.events)
            .into_iter()
            .filter(|Reverse((_, _, e))| match e {
                Ev::Arrive => false,
                Ev::Try(_) => !stop_closed,
                Ev::Done(..) => true,
            })
            .collect();
        self.events = keep.into_iter().collect();
    }
    fn exp_gap(&mut self, rate_per_s: f64) -> u64 {
        let u = self.rng.next_f64().max(1e-12);
        (-u.ln() / rate_per_s * S as f64) as u64
    }
    /// Mean, min and max limit over [from, to).
    fn limits(&self, from: u64, to: u64) -> (f64, u32, u32) {
        let xs: Vec<u32> = self
            .trace
            .iter()
            .filter(|(t, _)| *t >= from && *t < to)
            .map(|&(_, l)| l)
            .collect();
        assert!(!xs.is_empty(), "no settles in [{from}, {to})");
        let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
        (mean, *xs.iter().min().unwrap(), *xs.iter().max().unwrap())
    }
    fn stats(&self) -> LimitStats {
        self.limit.stats()
    }
}

/// Feed one sample directly (unit tests of verdict effects).
fn feed(l: &mut Limit, now: u64, lat_ms: u64, inflight: u32, verdict: Verdict) {
    l.on_acquire(now, inflight.saturating_sub(1));
    l.on_admit(now);
    l.on_sample(
        now,
        &Sample {
            latency_ns: lat_ms * MS,
            duration_ns: lat_ms * MS,
            inflight,
            verdict,
            waited: false,
        },
        inflight.saturating_sub(1),
    );
}

/// Healthy traffic for `secs` seconds at `per_s` calls a second, latency `lat_ms`, inflight `inflight`.
fn healthy(l: &mut Limit, from: u64, secs: u64, per_s: u64, lat_ms: u64, inflight: u32) -> u64 {
    let step = S / per_s;
    let mut t = from;
    while t < from + secs * S {
        feed(l, t, lat_ms, inflight, Verdict::Success);
        t += step;
    }
    t
}

// ---------------------------------------------------------------- per algorithm: convergence

fn converge(alg: Algorithm) -> Sim {
    let mut sim = Sim::new(opts(alg));
    sim.start_closed(200);
    sim.run(300 * S, Upstream::new(50.0, 50), 0.0, false);
    sim
}

#[test]
fn vegas_converges_near_capacity_and_holds() {
    let sim = converge(Algorithm::Vegas);
    let (mean, lo, hi) = sim.limits(150 * S, 300 * S);
    eprintln!(
        "vegas converge: mean {mean:.1} min {lo} max {hi} stats {:?}",
        sim.stats()
    );
    assert!((45.0..=65.0).contains(&mean), "mean limit {mean} vs C = 50");
    assert!(
        lo as f64 >= 0.8 * mean && hi as f64 <= 1.2 * mean,
        "oscillation {lo}..{hi} around {mean}"
    );
}

#[test]
fn gradient2_converges_and_holds() {
    let sim = converge(Algorithm::Gradient2);
    let (mean, lo, hi) = sim.limits(150 * S, 300 * S);
    eprintln!(
        "gradient2 converge: mean {mean:.1} min {lo} max {hi} stats {:?}",
        sim.stats()
    );
    // rttTolerance 1.5 lets latency reach 1.5× the baseline: the limit settles near 1.5 C.
    assert!((45.0..=90.0).contains(&mean), "mean limit {mean} vs C = 50");
    assert!(
        lo as f64 >= 0.8 * mean && hi as f64 <= 1.2 * mean,
        "oscillation {lo}..{hi} around {mean}"
    );
}

#[test]
fn aimd_grows_until_errors_then_backs_off() {
    let mut sim = Sim::new(opts(Algorithm::Aimd));
    sim.start_closed(200);
    // Timeout at 3 × S: past 150 in flight every call times out.
    let up = Upstream {
        timeout: 150 * MS,
        ..Upstream::new(50.0, 50)
    };
    sim.run(300 * S, up, 0.0, false);
    let (mean, lo, hi) = sim.limits(150 * S, 300 * S);
    eprintln!("aimd converge: mean {mean:.1} min {lo} max {hi}");
    // Error-driven: it overshoots C (reacts after damage) but stays below the timeout line.
    assert!(hi <= 160 && lo >= 50, "aimd range {lo}..{hi}");
}

#[test]
fn aimd_reaches_max_without_errors() {
    let mut sim = Sim::new(opts(Algorithm::Aimd));
    sim.start_closed(300);
    sim.run(120 * S, Upstream::new(1_000.0, 50), 0.0, false);
    assert_eq!(sim.limit.current(), 200, "clamped at maxLimit");
}

// ---------------------------------------------------------------- per algorithm: the basics

fn all() -> [Algorithm; 3] {
    [Algorithm::Vegas, Algorithm::Gradient2, Algorithm::Aimd]
}

#[test]
fn increases_with_no_queue_and_clamps_at_max() {
    for alg in all() {
        let mut sim = Sim::new(opts(alg));
        sim.start_closed(400);
        sim.run(600 * S, Upstream::new(10_000.0, 50), 0.0, false);
        let l = sim.limit.current();
        eprintln!("{alg:?}: no queue → {l}");
        assert_eq!(l, 200, "{alg:?} should reach and stay clamped at maxLimit");
        let (_, _, hi) = sim.limits(0, 600 * S);
        assert!(hi <= 200, "{alg:?} exceeded maxLimit: {hi}");
    }
}

#[test]
fn decreases_when_a_queue_builds_and_clamps_at_min() {
    for alg in [Algorithm::Vegas, Algorithm::Gradient2] {
        let o = LimiterOptions {
            initial_limit: 150,
            ..opts(alg)
        };
        let mut sim = Sim::new(o);
        sim.start_closed(200);
        sim.run(20 * S, Upstream::new(200.0, 50), 0.0, false); // learn the baseline unloaded
        let before = sim.limit.current();
        sim.run(200 * S, Upstream::new(10.0, 50), 0.0, false); // capacity drops: a queue builds
        let after = sim.limit.current();
        eprintln!("{alg:?}: queue builds {before} → {after} {:?}", sim.stats());
        assert!(
            after < before / 3,
            "{alg:?} did not back off: {before} → {after}"
        );
    }
    // Every call times out: all three fall to minLimit exactly and stay there.
    for alg in all() {
        let mut sim = Sim::new(opts(alg));
        sim.start_closed(100);
        let up = Upstream {
            timeout: 10 * MS,
            ..Upstream::new(100.0, 50)
        };
        sim.run(120 * S, up, 0.0, false);
        let (_, lo, _) = sim.limits(60 * S, 120 * S);
        assert_eq!(sim.limit.current(), 4, "{alg:?} not at minLimit");
        assert_eq!(lo, 4, "{alg:?} went below minLimit");
    }
}

#[test]
fn holds_when_app_limited() {
    // Demand is 10 in flight, the limit 20, the upstream idle: no queue, but no demand to
    // justify growth either (Netflix's inflight < L/2 rule): the limit holds.
    for alg in all() {
        let mut l = Limit::new(&opts(alg), 0);
        healthy(&mut l, 0, 300, 100, 50, 8);
        assert_eq!(l.current(), 20, "{alg:?} grew without demand");
    }
}

#[test]
fn vegas_holds_between_alpha_and_beta() {
    // Baseline 50 ms, then latency such that queue = 20 × (1 − 50/r) ≈ 4.5 (alpha 3, beta 6).
    let mut l = Limit::new(&opts(Algorithm::Vegas), 0);
    let t = healthy(&mut l, 0, 10, 100, 50, 20);
    let start = l.current();
    let r = (50.0 / (1.0 - 4.5 / start as f64)) as u64;
    // Let the smoothed latency settle on r (the limit finds its hold point), then watch.
    let t = healthy(&mut l, t, 60, 100, r, start);
    let start = l.current();
    healthy(&mut l, t, 120, 100, r, start);
    eprintln!("hold: {start} → {} at {r} ms {:?}", l.current(), l.stats());
    assert!(
        (l.current() as i64 - start as i64).abs() <= 1,
        "{start} → {}",
        l.current()
    );
}

/// Windows of 50 ms and 10 samples, every call of `lat_ms`, 200 calls a second at the limit
/// (full): the number of raises in `secs` seconds after a 1 s warm-up.
fn raises_with_short_windows(lat_ms: u64, secs: u64) -> u32 {
    let o = LimiterOptions {
        window_min_ms: 50,
        min_samples: 10,
        update_interval_ms: 0,
        min_limit: 1,
        max_limit: 10_000,
        ..opts(Algorithm::Vegas)
    };
    let mut l = Limit::new(&o, 0);
    let step = S / 200;
    let (mut t, mut raises) = (0, 0);
    while t < (1 + secs) * S {
        let before = l.current();
        feed(&mut l, t, lat_ms, before, Verdict::Success);
        if t >= S && l.current() > before {
            raises += 1;
        }
        t += step;
    }
    raises
}

#[test]
fn vegas_raises_at_most_once_per_round_trip() {
    // No queue at all (latency constant): Vegas raises by beta at every window it may. With
    // windows (50 ms) shorter than the latency (300 ms), a window right after a raise holds only
    // calls that started before it: judging the raise on them would repeat it blind (on a real
    // upstream: +6 five windows running, 10 → 40 against a capacity of 8). Once per round trip:
    // at most 10 s / 300 ms raises in 10 s, not one per window (200).
    let slow = raises_with_short_windows(300, 10);
    assert!(
        slow > 0 && slow <= 10_000 / 300,
        "{slow} raises in 10 s at 300 ms latency"
    );
    // With the latency (10 ms) shorter than the windows, nearly every window is fresh: the rule
    // leaves it alone.
    let fast = raises_with_short_windows(10, 10);
    assert!(fast >= 100, "{fast} raises in 10 s at 10 ms latency");
}

// ---------------------------------------------------------------- verdicts

#[test]
fn overload_reduces_by_backoff_and_timeout_by_its_square() {
    for alg in all() {
        let mut l = Limit::new(&opts(alg), 0);
        feed(&mut l, 200 * MS, 5, 10, Verdict::Overload);
        assert_eq!(l.current(), 18, "{alg:?}: 20 × 0.9");
        let mut l = Limit::new(&opts(alg), 0);
        feed(&mut l, 200 * MS, 500, 10, Verdict::Timeout);
        assert_eq!(l.current(), 16, "{alg:?}: 20 × 0.81");
    }
}

#[test]
fn a_burst_of_drops_within_one_update_interval_counts_once() {
    let mut l = Limit::new(&opts(Algorithm::Vegas), 0);
    for i in 0..50 {
        feed(&mut l, 100 * MS + i * MS, 500, 10, Verdict::Timeout);
    }
    // First drop at 100 ms evaluates (×0.81 → 16); the other 49 fall in the next interval,
    // which closes at 200 ms.
    assert_eq!(l.current(), 16);
    feed(&mut l, 200 * MS, 500, 10, Verdict::Timeout);
    assert_eq!(l.current(), 13, "16.2 × 0.81 → 13.1 → 13");
}

#[test]
fn rare_drops_among_many_healthy_calls_do_not_cut() {
    // 1 % timeouts: below the 10 % a p90 would see; no cut.
    let mut l = Limit::new(&opts(Algorithm::Vegas), 0);
    let mut t = 0;
    for i in 0..20_000u64 {
        let v = if i % 100 == 0 {
            Verdict::Timeout
        } else {
            Verdict::Success
        };
        feed(&mut l, t, 50, 15, v);
        t += 2 * MS;
    }
    assert!(l.current() >= 20, "{}", l.current());
}

#[test]
fn answered_is_a_sample_without_pressure() {
    let mut a = Limit::new(&opts(Algorithm::Vegas), 0);
    let mut b = Limit::new(&opts(Algorithm::Vegas), 0);
    let mut t = 0;
    while t < 120 * S {
        feed(&mut a, t, 50, 30, Verdict::Success);
        feed(&mut b, t, 50, 30, Verdict::Answered);
        t += 10 * MS;
    }
    assert!(b.current() > 20, "answered calls must let the limit grow");
    assert_eq!(a.current(), b.current());
    assert_eq!(a.stats().baseline_ms, b.stats().baseline_ms);
}

#[test]
fn failures_never_read_as_health() {
    // Netflix #176: a broken upstream answering 500s in 1 ms is not a fast upstream.
    for alg in all() {
        let mut l = Limit::new(&opts(alg), 0);
        let t = healthy(&mut l, 0, 30, 100, 50, 20);
        let (lim, base) = (l.current(), l.stats().baseline_ms);
        let mut t2 = t;
        let mut settled = 0;
        while t2 < t + 120 * S {
            feed(&mut l, t2, 1, lim, Verdict::Failure);
            t2 += 10 * MS;
            if t2 == t + 10 * S {
                settled = l.current(); // the window straddling the change may still be healthy
            }
        }
        let lim = settled;
        eprintln!(
            "{alg:?}: failures {lim} → {} base {base:.1} → {:.1}",
            l.current(),
            l.stats().baseline_ms
        );
        assert!(l.current() <= lim, "{alg:?}: fast failures grew the limit");
        assert!(
            l.stats().baseline_ms >= base * 0.9,
            "{alg:?}: fast failures lowered the baseline"
        );
    }
}

#[test]
fn rejected_and_cancelled_never_reach_the_algorithm() {
    use crate::limiter::Limiter;
    let o = opts(Algorithm::Vegas);
    let mut lim = Limiter::new(&o, 0);
    let mut rng = SplitMix64::new(1);
    for i in 0..1_000u64 {
        let _ = lim.admit(i * MS, &mut rng, u64::MAX);
        lim.release(i * MS + 1, None); // what the policy set passes for Rejected / Cancelled
    }
    assert_eq!(lim.limit(), 20);
    assert_eq!(lim.limit_stats().window_samples, 0);
}

// ---------------------------------------------------------------- control loop (no timers)

#[test]
fn updates_no_more_often_than_the_update_interval() {
    let o = LimiterOptions {
        update_interval_ms: 1_000,
        ..opts(Algorithm::Vegas)
    };
    let mut l = Limit::new(&o, 0);
    feed(&mut l, 500 * MS, 500, 10, Verdict::Timeout);
    assert_eq!(
        l.current(),
        20,
        "not yet: 500 ms < 1 s since the last evaluation"
    );
    feed(&mut l, 1_000 * MS, 500, 10, Verdict::Timeout);
    assert_eq!(l.current(), 16);
}

#[test]
fn idle_recovery_for_every_algorithm() {
    for alg in all() {
        let mut sim = Sim::new(opts(alg));
        sim.start_closed(60);
        sim.run(100 * S, Upstream::new(50.0, 50), 0.0, false);
        let healthy_limit = sim.limit.current();
        // The upstream fails every call by timeout: the limit falls.
        let bad = Upstream {
            timeout: 20 * MS,
            ..Upstream::new(50.0, 50)
        };
        sim.run(160 * S, bad, 0.0, true);
        sim.run(161 * S, bad, 0.0, true); // let the last calls end
        let clamped = sim.limit.current();
        assert!(
            clamped < healthy_limit / 2,
            "{alg:?}: {healthy_limit} → {clamped}"
        );
        // Ten minutes of silence, then one acquire: the limit reflects the idle time.
        sim.limit.on_acquire(761 * S, 0);
        let resumed = sim.limit.current();
        eprintln!(
            "{alg:?}: healthy {healthy_limit}, clamped {clamped}, after 10 min idle {resumed}"
        );
        assert!(
            resumed as f64 >= 0.9 * healthy_limit as f64,
            "{alg:?}: still clamped after idle: {resumed}"
        );
        // A short pause (under windowMax) changes nothing.
        let mut l = Limit::new(&opts(alg), 0);
        feed(&mut l, 200 * MS, 500, 10, Verdict::Timeout);
        let c = l.current();
        l.on_acquire(20 * S, 0);
        assert_eq!(l.current(), c, "{alg:?}: recovered after only 20 s");
    }
}

#[test]
fn idle_recovery_is_partial_for_a_shorter_idle() {
    let mut l = Limit::new(&opts(Algorithm::Vegas), 0);
    for i in 1..=20 {
        feed(&mut l, i * 100 * MS, 500, 10, Verdict::Timeout);
    }
    assert_eq!(l.current(), 4);
    // 60 s idle = windowMax + one half-life: half the gap to 20 closes.
    l.on_acquire(2 * S + 60 * S, 0);
    assert_eq!(l.current(), 12);
}

#[test]
fn no_idle_recovery_while_calls_are_in_flight() {
    let mut l = Limit::new(&opts(Algorithm::Vegas), 0);
    for i in 1..=20 {
        feed(&mut l, i * 100 * MS, 500, 10, Verdict::Timeout);
    }
    l.on_acquire(600 * S, 3); // long streams still hold their slots: not idle
    assert_eq!(l.current(), 4);
}

// ---------------------------------------------------------------- low traffic (ADR 0103)

fn low_traffic(alg: Algorithm) -> (Option<u64>, u32, u32) {
    let mut sim = Sim::new(opts(alg));
    let healthy_up = Upstream {
        timeout: 5 * S,
        ..Upstream::new(50.0, 50)
    };
    let broken = Upstream {
        service: 30 * S,
        ..healthy_up
    };
    let rate = 8.0 / 60.0;
    sim.run(600 * S, healthy_up, rate, false);
    let before = sim.limit.current();
    sim.watch_from = 600 * S;
    sim.level = before;
    sim.run(900 * S, broken, rate, false);
    let during = sim.limit.current();
    sim.run(1_800 * S, healthy_up, rate, false);
    let after = sim.limit.current();
    eprintln!("{alg:?} low traffic: before {before}, at 900 s {during}, first drop {:?} s, at 1800 s {after} {:?}",
        sim.first_drop.map(|t| (t - 600 * S) / S), sim.stats());
    (sim.first_drop.map(|t| t - 600 * S), before, after)
}

#[test]
fn low_traffic_reacts_within_two_minutes_and_recovers() {
    for alg in all() {
        let (first, before, after) = low_traffic(alg);
        let first = first.expect("never decreased");
        assert!(
            first <= 120 * S,
            "{alg:?}: first decrease after {} s",
            first / S
        );
        assert!(
            after as f64 >= 0.9 * before as f64,
            "{alg:?}: {before} → {after} by 1800 s"
        );
    }
}

#[test]
fn too_few_samples_per_window_still_closes_windows() {
    // failsafe-go's rule (≥ 50 calls per window) never acts at 20 calls a minute; ours closes
    // a window by 30 s whatever it holds, so latency (not only drops) moves the limit.
    let mut l = Limit::new(&opts(Algorithm::Vegas), 0);
    let mut t = 0;
    while t < 300 * S {
        feed(&mut l, t, 50, 2, Verdict::Success);
        t += 3 * S;
    }
    let base = l.stats().baseline_ms;
    assert!(
        (45.0..55.0).contains(&base),
        "baseline learnt from sparse windows: {base}"
    );
    // Latency quintuples (no drops): Vegas must decrease from latency alone.
    let start = l.current();
    while t < 900 * S {
        feed(&mut l, t, 250, 20, Verdict::Success);
        t += 3 * S;
    }
    assert!(l.current() < start, "{start} → {}", l.current());
}

// ---------------------------------------------------------------- streaming (ADR 0109)

#[test]
fn streams_learn_from_time_to_first_token() {
    // 16 streams of 45 s each with a 280 ms first token: with mark() the latency sample is
    // 280 ms and the limit does not clamp below the 16 streams.
    let mut l = Limit::new(&opts(Algorithm::Vegas), 0);
    let mut t = 0;
    let mut rng = SplitMix64::new(3);
    while t < 900 * S {
        let ttft = (280.0 * (0.3 * (rng.next_f64() - 0.5)).exp()) as u64;
        l.on_acquire(t, 15);
        l.on_sample(
            t,
            &Sample {
                latency_ns: ttft * MS,
                duration_ns: 45 * S,
                inflight: 16,
                verdict: Verdict::Success,
                waited: false,
            },
            15,
        );
        t += 45 * S / 16;
    }
    assert!(l.current() >= 16, "clamped streams: {}", l.current());
}

// ---------------------------------------------------------------- memory

#[test]
fn per_key_memory_is_small() {
    use std::mem::size_of;
    eprintln!(
        "size_of: Limit {} B, Adaptive {} B, Window {} B, Hybrid {} B, SortedRing {} B, P2 {} B, Baseline {} B, LatencyFilter {} B",
        size_of::<Limit>(),
        size_of::<Adaptive>(),
        size_of::<window::Window>(),
        size_of::<quantile::Hybrid>(),
        size_of::<quantile::ring::SortedRing>(),
        size_of::<quantile::p2::P2>(),
        size_of::<baseline::Baseline>(),
        size_of::<filter::LatencyFilter>()
    );
    assert!(
        size_of::<Limit>() <= 1_024,
        "limit {} B",
        size_of::<Limit>()
    );
}

// ---------------------------------------------------------------- reported failure modes

/// Netflix #37 / #34: one lucky fast response becomes the no-load baseline; the limit collapses.
#[test]
fn regression_netflix_37_lucky_fast_sample() {
    let mut l = Limit::new(&opts(Algorithm::Vegas), 0);
    let t = healthy(&mut l, 0, 60, 100, 50, 30);
    let (lim, base) = (l.current(), l.stats().baseline_ms);
    feed(&mut l, t, 1, 30, Verdict::Success); // the lucky one
    let t = healthy(&mut l, t + 10 * MS, 60, 100, 50, 30);
    // And a lucky *window* (one window of 5 ms answers) is rejected by the median filter.
    let t = healthy(&mut l, t, 2, 100, 5, 30);
    healthy(&mut l, t, 60, 100, 50, 30);
    let s = l.stats();
    assert!(
        s.baseline_ms >= 0.95 * base,
        "baseline {base} → {}",
        s.baseline_ms
    );
    assert!(
        l.current() >= lim,
        "limit collapsed {lim} → {}",
        l.current()
    );
}

/// Netflix #165: the probe takes a loaded sample as the baseline; the limiter stops limiting.
/// Ours drains its own calls before it times any (a quarter of the limit, ADR 0113), so with
/// 200 callers on C = 50 for 30 minutes the baseline stays the no-load latency.
#[test]
fn regression_netflix_165_probe_takes_loaded_baseline() {
    let mut sim = Sim::new(opts(Algorithm::Vegas));
    sim.start_closed(200);
    sim.run(1_800 * S, Upstream::new(50.0, 50), 0.0, false);
    let (mean, _, hi) = sim.limits(900 * S, 1_800 * S);
    let s = sim.stats();
    eprintln!("#165: 30 min saturated: mean {mean:.1} max {hi} {s:?}");
    assert!(
        s.baseline_ms < 65.0,
        "baseline became loaded: {}",
        s.baseline_ms
    );
    assert!(hi <= 65, "stopped limiting: {hi}");
}

/// Netflix #137: every call ends at the same client timeout; no RTT variance; limit → max.
#[test]
fn regression_netflix_137_stable_client_timeout() {
    for alg in all() {
        let mut sim = Sim::new(opts(alg));
        sim.start_closed(200);
        let up = Upstream {
            sigma: 0.0,
            timeout: 200 * MS,
            ..Upstream::new(5.0, 500)
        };
        sim.run(120 * S, up, 0.0, false);
        let (_, _, hi) = sim.limits(0, 120 * S);
        assert!(hi <= 20, "{alg:?} grew on timeouts: {hi}");
        assert_eq!(sim.limit.current(), 4, "{alg:?}");
    }
}

/// Netflix #176: drops return near-zero latency, read as "fast"; the limit keeps falling
/// (the 1 ms drops poison the baseline, so every normal call then looks queued).
#[test]
fn regression_netflix_176_drops_read_as_fast() {
    for alg in [Algorithm::Vegas, Algorithm::Gradient2] {
        let mut l = Limit::new(&opts(alg), 0);
        let t = healthy(&mut l, 0, 60, 100, 50, 30);
        let base = l.stats().baseline_ms;
        // 30 s of fast 500s and the occasional 1 ms 429, interleaved with nothing else.
        let mut t2 = t;
        let mut i = 0;
        while t2 < t + 30 * S {
            let v = if i % 50 == 0 {
                Verdict::Overload
            } else {
                Verdict::Failure
            };
            feed(&mut l, t2, 1, 20, v);
            t2 += 10 * MS;
            i += 1;
        }
        assert!(
            l.stats().baseline_ms >= 0.95 * base,
            "{alg:?}: baseline poisoned {base} → {}",
            l.stats().baseline_ms
        );
        // The upstream heals at its old latency: the limit must climb again, not keep falling.
        let low = l.current();
        healthy(&mut l, t2, 120, 100, 50, 60);
        eprintln!("#176 {alg:?}: {low} → {}", l.current());
        assert!(
            l.current() > low,
            "{alg:?}: kept falling after the drops: {low} → {}",
            l.current()
        );
    }
}

/// Netflix PR #134: Gradient2 under modest overload (gradient ≈ 0.8) creeps upward forever.
/// With headroom only inside the tolerance, a gradient below 1 can only shrink the limit.
#[test]
fn regression_netflix_pr134_gradient2_modest_overload_creeps_up() {
    // The rule itself: at gradient 0.8, whatever the limit, the next limit is lower.
    for l in [4.0, 10.0, 20.0, 50.0, 200.0] {
        let r = super::Reading {
            limit: l,
            peak: l,
            baseline: 50.0,
            rtt: 1.5 * 50.0 / 0.8,
            rtt_now: 1.5 * 50.0 / 0.8,
            waiting: 1.0,
            slow_start: false,
        };
        let next = super::gradient2::on_window(&r, 1.5, 0.2);
        assert!(next < l, "gradient 0.8 grew {l} → {next}");
    }
    // And in closed loop against C = 20 for 30 minutes: no creep.
    let mut sim = Sim::new(opts(Algorithm::Gradient2));
    sim.start_closed(200);
    sim.run(
        1_800 * S,
        Upstream {
            timeout: 60 * S,
            ..Upstream::new(20.0, 50)
        },
        0.0,
        false,
    );
    let (early, _, _) = sim.limits(600 * S, 1_200 * S);
    let (late, _, hi) = sim.limits(1_200 * S, 1_800 * S);
    eprintln!(
        "#134: mean 10-20 min {early:.1}, 20-30 min {late:.1}, max {hi} {:?}",
        sim.stats()
    );
    assert!(late <= early * 1.05, "crept up: {early} → {late}");
    assert!(hi <= 36, "beyond 1.5 C + headroom: {hi}");
}

/// go-concurrency-limits #117, camunda #3306: after heavy load subsides, the limit stays at its
/// floor and never heals (demand is now low, so the app-limited rule forbids growth).
#[test]
fn regression_go_concurrency_limits_117_never_heals_after_heavy_load() {
    for alg in [Algorithm::Vegas, Algorithm::Gradient2] {
        let mut sim = Sim::new(opts(alg));
        sim.start_closed(200);
        sim.run(30 * S, Upstream::new(50.0, 50), 0.0, false);
        let heavy = Upstream {
            timeout: 2 * S,
            ..Upstream::new(4.0, 50)
        };
        sim.run(330 * S, heavy, 0.0, true);
        sim.run(335 * S, heavy, 0.0, true);
        let floor = sim.limit.current();
        // Load subsides: two callers, a healthy upstream.
        sim.start_closed(2);
        sim.run(600 * S, Upstream::new(50.0, 50), 0.0, false);
        eprintln!(
            "#117 {alg:?}: floor {floor} → {} {:?}",
            sim.limit.current(),
            sim.stats()
        );
        assert!(
            floor <= 10,
            "{alg:?} heavy load did not push the limit down: {floor}"
        );
        assert!(
            sim.limit.current() >= 20,
            "{alg:?} never healed: {}",
            sim.limit.current()
        );
    }
}

/// failsafe-go #127: in a long incident the baseline drifts up to the degraded latency and
/// decreases stop.
#[test]
fn regression_failsafe_go_127_baseline_drifts_up_in_long_incident() {
    for alg in [Algorithm::Vegas, Algorithm::Gradient2] {
        let mut sim = Sim::new(opts(alg));
        sim.start_closed(200);
        sim.run(120 * S, Upstream::new(50.0, 50), 0.0, false);
        let base = sim.stats().baseline_ms;
        // The incident: capacity falls to 5 for 30 minutes (latency ∝ inflight / 5).
        let incident = Upstream {
            timeout: 60 * S,
            ..Upstream::new(5.0, 50)
        };
        sim.run(1_920 * S, incident, 0.0, false);
        let s = sim.stats();
        let (mean, _, hi) = sim.limits(1_020 * S, 1_920 * S);
        eprintln!(
            "#127 {alg:?}: base {base:.1} → {:.1}, limit mean {mean:.1} max {hi}",
            s.baseline_ms
        );
        assert!(
            s.baseline_ms <= 1.3 * base,
            "{alg:?} baseline drifted up: {base} → {}",
            s.baseline_ms
        );
        assert!(
            mean <= 15.0,
            "{alg:?} stopped decreasing: mean limit {mean} vs capacity 5"
        );
    }
}

/// Envoy #38338: a baseline measured while overloaded never recovers.
#[test]
fn regression_envoy_38338_baseline_measured_while_overloaded() {
    let mut sim = Sim::new(opts(Algorithm::Vegas));
    sim.start_closed(200);
    // From the first call the upstream (C = 5) is 4× overloaded at the initial limit of 20.
    sim.run(
        1_800 * S,
        Upstream {
            timeout: 60 * S,
            ..Upstream::new(5.0, 50)
        },
        0.0,
        false,
    );
    let s = sim.stats();
    let (mean, _, _) = sim.limits(1_500 * S, 1_800 * S);
    eprintln!("#38338: {s:?} mean {mean:.1}");
    // True no-load p90 ≈ 57 ms; the loaded start read ~4× that.
    assert!(
        s.baseline_ms <= 80.0,
        "baseline still loaded: {}",
        s.baseline_ms
    );
    assert!(mean <= 12.0, "limit {mean} vs C = 5");
}

/// The failsafe-go window rule (a window needs ≥ 50 calls) at 20 calls a minute: never acts.
#[test]
fn regression_failsafe_go_too_few_samples_per_window() {
    too_few_samples_per_window_still_closes_windows();
}

/// A permanent shift of the upstream's normal latency is learnt (the running
/// minimum of Netflix's Vegas never recovers from it).
#[test]
fn baseline_recovers_from_a_permanent_shift() {
    let mut sim = Sim::new(opts(Algorithm::Vegas));
    sim.start_closed(200);
    sim.run(200 * S, Upstream::new(50.0, 50), 0.0, false);
    let before = sim.stats().baseline_ms;
    let mut learnt_at = None;
    for k in 1..=40 {
        sim.run((200 + 10 * k) * S, Upstream::new(50.0, 150), 0.0, false);
        if learnt_at.is_none() && sim.stats().baseline_ms >= 2.0 * before {
            learnt_at = Some(10 * k);
        }
    }
    eprintln!("shift: new baseline learnt {learnt_at:?} s after the shift");
    assert!(
        learnt_at.is_some_and(|t| t <= 200),
        "slow to learn the shift: {learnt_at:?}"
    );
    let s = sim.stats();
    let (mean, lo, _) = sim.limits(400 * S, 600 * S);
    eprintln!(
        "shift: base {before:.1} → {:.1}, limit mean {mean:.1} min {lo}",
        s.baseline_ms
    );
    assert!(
        s.baseline_ms >= 2.0 * before,
        "baseline never followed the shift: {before} → {}",
        s.baseline_ms
    );
    assert!(
        mean >= 40.0,
        "limit stayed clamped after the shift: {mean} vs C = 50"
    );
}

/// The `idle` scenario (σ = 0.3): converge 200 s; 200–300 s every call times out; 300–900 s no
/// calls; 900–1100 s N = 200 again. The limit at resumption reflects the idle time and is back
/// within ±20 % of the pre-fault mean by 1 100 s.
#[test]
fn scenario_idle() {
    for alg in [Algorithm::Vegas, Algorithm::Gradient2] {
        let mut sim = Sim::new(opts(alg));
        let healthy_up = Upstream {
            sigma: 0.3,
            ..Upstream::new(50.0, 50)
        };
        let broken = Upstream {
            service: 10 * S,
            ..healthy_up
        };
        sim.start_closed(200);
        sim.run(200 * S, healthy_up, 0.0, false);
        let (pre, _, _) = sim.limits(100 * S, 200 * S);
        sim.run(300 * S, broken, 0.0, true);
        sim.run(301 * S, broken, 0.0, true);
        let fallen = sim.limit.current();
        sim.limit.on_acquire(900 * S, 0);
        let resumed = sim.limit.current();
        sim.now = 900 * S;
        sim.start_closed(200);
        sim.run(1_100 * S, healthy_up, 0.0, false);
        let (post, lo, hi) = sim.limits(1_000 * S, 1_100 * S);
        eprintln!(
            "idle {alg:?}: pre-fault mean {pre:.1}, fallen {fallen}, at resumption {resumed} ({:.2} C), 1000–1100 s mean {post:.1} ({lo}..{hi})",
            resumed as f64 / 50.0
        );
        assert!(
            fallen <= 10,
            "{alg:?}: the fault did not lower the limit: {fallen}"
        );
        assert!(
            resumed as f64 >= 0.8 * pre,
            "{alg:?}: resumed at {resumed} vs {pre}"
        );
        assert!(
            (post - pre).abs() <= 0.2 * pre,
            "{alg:?}: not recovered: {post} vs {pre}"
        );
    }
}

/// The `production` scenario: C = 50, S = 350 ms, open loop 60 calls/s; at 200 s S becomes
/// 10.4 s with no errors; timeout 60 s. The limiter must shed before the breaker's slow-call
/// condition could trip: the first slow call (≥ 5 s, `breaker.slowCallMs`) settles 10.4 s after
/// the change, so the breaker cannot trip before ~210 s.
#[test]
fn scenario_production_sheds_before_the_breaker_could_trip() {
    for alg in [Algorithm::Vegas, Algorithm::Gradient2] {
        let mut sim = Sim::new(opts(alg));
        let before = Upstream {
            sigma: 0.3,
            timeout: 60 * S,
            ..Upstream::new(50.0, 350)
        };
        let after = Upstream {
            service: 10_400 * MS,
            ..before
        };
        sim.run(200 * S, before, 60.0, false);
        let shed_before = sim.shed;
        let limit_before = sim.limit.current();
        sim.watch_from = 200 * S;
        sim.run(600 * S, after, 60.0, false);
        let first = sim.first_shed.map(|t| (t - 200 * S) as f64 / S as f64);
        let (mean, lo, hi) = sim.limits(400 * S, 600 * S);
        eprintln!(
            "production {alg:?}: shed before change {shed_before}, limit {limit_before}; first refusal {first:?} s after; 400–600 s limit mean {mean:.1} ({lo}..{hi}) {:?}",
            sim.stats()
        );
        assert!(
            first.is_some_and(|f| f < 10.4),
            "{alg:?}: no refusal before the first slow call settled"
        );
    }
}
