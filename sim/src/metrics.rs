//! Metrics per run, with the names the JSON uses. A value is `None` when the thing
//! measured never happened (never converged, never tripped): the JSON prints `null`.

use resilix_engine::Verdict;

use crate::client::Row;
use crate::scenario::{capacity_per_s, Measure, Mix, Scenario, Service, SEC};
use crate::trace::{CallRecord, Trace, TICK_NS};

pub type Metric = (&'static str, Option<f64>);

/// Band around a target the limit must stay in to count as converged (±20 %).
pub const BAND: f64 = 0.2;

fn tick(t_s: f64) -> usize {
    (t_s * SEC as f64 / TICK_NS as f64).round() as usize
}

fn mean(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut s, mut n) = (0.0, 0usize);
    for x in xs {
        s += x;
        n += 1;
    }
    if n == 0 {
        f64::NAN
    } else {
        s / n as f64
    }
}

/// Nearest-rank percentile of an unsorted slice (sorted in place).
pub fn percentile(xs: &mut [f64], q: f64) -> f64 {
    if xs.is_empty() {
        return f64::NAN;
    }
    xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let i = ((q * xs.len() as f64).ceil() as usize).clamp(1, xs.len()) - 1;
    xs[i]
}

/// Everything a metric needs about one run.
pub struct Run<'a> {
    pub sc: &'a Scenario,
    pub row: Row,
    pub tr: &'a Trace,
}

impl Run<'_> {
    fn ticks(&self, a: f64, b: f64) -> std::ops::Range<usize> {
        tick(a).min(self.tr.ticks())..tick(b).min(self.tr.ticks())
    }

    /// The limit per tick: client c, or the mean over clients.
    fn limit_at(&self, i: usize) -> f64 {
        mean(self.tr.limit.iter().map(|l| l[i] as f64))
    }

    fn mean_limit(&self, a: f64, b: f64) -> f64 {
        mean(self.ticks(a, b).map(|i| self.limit_at(i)))
    }

    fn mean_servers(&self, a: f64, b: f64) -> f64 {
        mean(self.ticks(a, b).map(|i| self.tr.servers[i] as f64))
    }

    fn service_at(&self, i: usize) -> Service {
        Service {
            median_ns: self.tr.median_ns[i],
            ..self.sc.service
        }
    }

    /// Half the p5–p95 band of the limit over [a, b), as % of its mean.
    fn oscillation_pct(&self, a: f64, b: f64) -> f64 {
        let mut xs: Vec<f64> = self.ticks(a, b).map(|i| self.limit_at(i)).collect();
        let m = mean(xs.iter().copied());
        let p5 = percentile(&mut xs, 0.05);
        let p95 = percentile(&mut xs, 0.95);
        (p95 - p5) / 2.0 / m * 100.0
    }

    /// Successful calls ended in [a, b) as % of what the upstream could complete then.
    fn goodput_pct(&self, a: f64, b: f64) -> f64 {
        let ok = self.successes(a, b) as f64;
        let possible: f64 = self
            .ticks(a, b)
            .map(|i| {
                capacity_per_s(self.tr.servers[i], &self.service_at(i)) * TICK_NS as f64
                    / SEC as f64
            })
            .sum();
        ok / possible * 100.0
    }

    /// The successful calls that ended in [a, b) seconds.
    fn ended_ok(&self, a: f64, b: f64) -> impl Iterator<Item = &CallRecord> {
        let (a, b) = ((a * SEC as f64) as u64, (b * SEC as f64) as u64);
        self.tr
            .calls
            .iter()
            .filter(move |c| c.verdict == Verdict::Success && c.end >= a && c.end < b)
    }

    /// Calls each client completed successfully in [a, b) seconds.
    fn done_per_client(&self, a: f64, b: f64) -> Vec<f64> {
        let mut done = vec![0.0; self.tr.limit.len()];
        for c in self.ended_ok(a, b) {
            done[c.client as usize] += 1.0;
        }
        done
    }

    fn successes(&self, a: f64, b: f64) -> usize {
        self.ended_ok(a, b).count()
    }

    /// p90 of what the limiter saw for successful calls ended in [a, b), in ns.
    fn p90_ns(&self, a: f64, b: f64) -> f64 {
        let (a, b) = ((a * SEC as f64) as u64, (b * SEC as f64) as u64);
        let mut xs: Vec<f64> = self
            .tr
            .calls
            .iter()
            .filter(|c| c.admitted && c.verdict == Verdict::Success && c.end >= a && c.end < b)
            .map(|c| c.latency_ns as f64)
            .collect();
        percentile(&mut xs, 0.9)
    }

    fn p90_over_no_load(&self, a: f64, b: f64) -> f64 {
        let i = self.ticks(a, b).end.saturating_sub(1);
        self.p90_ns(a, b) / self.service_at(i).p90_ns()
    }

    /// Refused acquires over all acquires in [a, b), %.
    fn shed_pct(&self, a: f64, b: f64) -> f64 {
        let r = self.ticks(a, b);
        let get = |v: &Vec<u32>| {
            r.clone()
                .map(|i| *v.get(i).unwrap_or(&0) as f64)
                .sum::<f64>()
        };
        let attempts = get(&self.tr.attempts);
        if attempts == 0.0 {
            return 0.0;
        }
        get(&self.tr.refused) / attempts * 100.0
    }

    /// Seconds from `a` until the limit stays within ±20 % of `target` through `b`;
    /// `None` when it is outside the band at the end.
    fn settle_s(&self, a: f64, b: f64, target: f64) -> Option<f64> {
        self.stays_s(a, b, |i| (self.limit_at(i) - target).abs() <= BAND * target)
    }

    /// Seconds from `a` until `inside` holds at every tick up to `b`.
    fn stays_s(&self, a: f64, b: f64, inside: impl Fn(usize) -> bool) -> Option<f64> {
        let r = self.ticks(a, b);
        let mut first_ok = None;
        for i in r.clone().rev() {
            if inside(i) {
                first_ok = Some(i);
            } else {
                break;
            }
        }
        first_ok.map(|i| (i - r.start) as f64 * TICK_NS as f64 / SEC as f64)
    }

    /// Seconds from `a` until the limit stays within 0.5–2 × the capacity up to `b` (the Node
    /// tests' band).
    fn in_band_s(&self, a: f64, b: f64) -> Option<f64> {
        self.stays_s(a, b, |i| {
            let c = self.tr.servers[i] as f64;
            (0.5 * c..=2.0 * c).contains(&self.limit_at(i))
        })
    }

    fn windows(&self, s: Option<f64>) -> Option<f64> {
        let w = self.row.window_s()?;
        s.map(|s| s / w)
    }

    fn first_after(times: &[u64], t_s: f64) -> Option<f64> {
        let t = (t_s * SEC as f64) as u64;
        times
            .iter()
            .find(|&&x| x >= t)
            .map(|&x| (x - t) as f64 / SEC as f64)
    }

    fn end_s(&self) -> f64 {
        self.sc.duration_ns as f64 / SEC as f64
    }

    fn recovered(&self, pre: f64) -> f64 {
        let end = self.end_s();
        let last = self.mean_limit(end - 10.0, end);
        ((last - pre).abs() <= BAND * pre) as u8 as f64
    }
}

/// One group of a `Mix` over a window: calls made, served, and the served calls' end-to-end
/// latencies (our queue included), ns.
#[derive(Default)]
struct Group {
    offered: usize,
    ok: usize,
    lost: usize,
    e2e: Vec<f64>,
}

fn groups(run: &Run, from: f64, to: f64, n: usize) -> Vec<Group> {
    let (a, b) = ((from * SEC as f64) as u64, (to * SEC as f64) as u64);
    let mut g: Vec<Group> = (0..n).map(|_| Group::default()).collect();
    for c in run
        .tr
        .calls
        .iter()
        .filter(|c| c.created >= a && c.created < b)
    {
        let x = &mut g[c.group as usize];
        x.offered += 1;
        if c.admitted && c.verdict == Verdict::Success {
            x.ok += 1;
            x.e2e.push((c.end - c.created) as f64);
        } else {
            x.lost += 1;
        }
    }
    for &(t, grp) in &run.tr.group_refusals {
        if t >= a && t < b {
            g[grp as usize].offered += 1;
            g[grp as usize].lost += 1;
        }
    }
    g
}

/// A `Mix`'s metrics (ADR 1001, 1002).
fn mixed(run: &Run, from: f64, to: f64) -> Vec<Metric> {
    let pct = |x: usize, of: usize| x as f64 / of.max(1) as f64 * 100.0;
    let mut out = vec![("goodputPct", some(run.goodput_pct(from, to)))];
    match run.sc.mix {
        Some(Mix::Priorities { .. }) => {
            let mut g = groups(run, from, to, 2);
            let no_load = run.sc.service.p90_ns();
            let lost = g[0].lost + g[1].lost;
            out.extend([
                ("criticalGoodputPct", some(pct(g[0].ok, g[0].offered))),
                (
                    "criticalP90OverNoLoad",
                    some(percentile(&mut g[0].e2e, 0.9) / no_load),
                ),
                ("sheddableGoodputPct", some(pct(g[1].ok, g[1].offered))),
                ("sheddableShareOfLostPct", some(pct(g[1].lost, lost))),
            ]);
        }
        Some(Mix::Tenants { heavy, light, .. }) => {
            let g = groups(run, from, to, 1 + light as usize);
            let secs = to - from;
            // Max-min fair share of the capacity: a light tenant's demand if below a
            // (light + 1)-th of it, else that.
            let capacity = capacity_per_s(run.sc.servers, &run.sc.service);
            let offered_light = match run.sc.load {
                crate::scenario::Load::Open { per_s } => per_s / (heavy + light) as f64,
                _ => f64::NAN,
            };
            let fair = offered_light.min(capacity / (light + 1) as f64);
            let worst = g[1..]
                .iter()
                .map(|x| x.ok as f64 / secs / fair)
                .fold(f64::INFINITY, f64::min);
            out.extend([
                ("worstLightOverFair", some(worst)),
                ("heavyOverFair", some(g[0].ok as f64 / secs / fair)),
            ]);
        }
        None => {}
    }
    out
}

fn some(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The metrics of one run, in the order the table prints them.
/// Attempts that reached the upstream in `[from, to)` per first attempt among them.
pub fn attempts_per_first(tr: &Trace, from: f64, to: f64) -> f64 {
    let (a, b) = ((from * SEC as f64) as u64, (to * SEC as f64) as u64);
    let sent = tr.sent.iter().filter(|(t, _)| *t >= a && *t < b);
    let (all, first) = sent.fold((0u64, 0u64), |(n, f), (_, k)| (n + 1, f + (*k == 1) as u64));
    all as f64 / first as f64
}

/// A RetryStorm scenario's comparison rows, on the same world and seed as the row's run:
/// cockatiel's and p-retry's retries around a plain call (no limiter, no budget).
pub fn retry_comparisons(sc: &Scenario, row: Row, seed: u64) -> Vec<Metric> {
    let Measure::RetryStorm { from, to, .. } = sc.measure else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (retrier, apf, gp) in [
        (
            crate::world::Retrier::Cockatiel,
            "cockatielAttemptsPerFirst",
            "cockatielGoodputPct",
        ),
        (
            crate::world::Retrier::PRetry,
            "pRetryAttemptsPerFirst",
            "pRetryGoodputPct",
        ),
    ] {
        let plain = |_: u64| -> Box<dyn crate::client::ClientLimiter> {
            Box::<crate::client::PlainClient>::default()
        };
        let tr = crate::world::run_retrying(sc, &plain, retrier, seed);
        let run = Run { sc, row, tr: &tr };
        out.push((apf, some(attempts_per_first(&tr, from, to))));
        out.push((gp, some(run.goodput_pct(from, to))));
    }
    out
}

/// Calls that reached the upstream in `[from, to)` per call it accepted (a success).
pub fn calls_per_accepted(tr: &Trace, from: f64, to: f64) -> f64 {
    let (a, b) = ((from * SEC as f64) as u64, (to * SEC as f64) as u64);
    let sent = tr.sent.iter().filter(|(t, _)| *t >= a && *t < b).count();
    let ok = tr
        .calls
        .iter()
        .filter(|c| c.verdict == Verdict::Success && c.end >= a && c.end < b)
        .count();
    sent as f64 / ok as f64
}

/// Accepted calls in `[from, to)` against a rate quota of `per_s`, %.
pub fn accepted_pct(tr: &Trace, per_s: f64, from: f64, to: f64) -> f64 {
    let (a, b) = ((from * SEC as f64) as u64, (to * SEC as f64) as u64);
    let ok = tr
        .calls
        .iter()
        .filter(|c| c.verdict == Verdict::Success && c.end >= a && c.end < b)
        .count();
    ok as f64 / ((to - from) * per_s) * 100.0
}

fn quota_of(sc: &Scenario) -> f64 {
    match sc.fault {
        crate::scenario::Fault::RateQuota { per_s, .. } => per_s,
        _ => f64::NAN,
    }
}

/// A RateQuota scenario's comparison: the row's engine with its throttle off, on the same
/// world and seed (`None` for a row that is not resilix).
pub fn throttle_comparisons(sc: &Scenario, row: Row, seed: u64) -> Vec<Metric> {
    let Measure::RateQuota { from, to } = sc.measure else {
        return Vec::new();
    };
    let build = |s: u64| row.build_throttled(s, None);
    if build(0).is_none() {
        return vec![
            ("noThrottleCallsPerAccepted", None),
            ("noThrottleAcceptedPct", None),
        ];
    }
    let tr = crate::world::run_with(sc, &|s| build(s).expect("a resilix row"), seed);
    vec![
        (
            "noThrottleCallsPerAccepted",
            some(calls_per_accepted(&tr, from, to)),
        ),
        (
            "noThrottleAcceptedPct",
            some(accepted_pct(&tr, quota_of(sc), from, to)),
        ),
    ]
}

pub fn compute(run: &Run) -> Vec<Metric> {
    let end = run.end_s();
    match run.sc.measure {
        Measure::Steady { since, from, to } => {
            let m = run.mean_limit(from, to);
            let conv = run.settle_s(since, to, m);
            vec![
                (
                    "meanLimitOverCapacity",
                    some(m / run.mean_servers(from, to)),
                ),
                ("oscillationPct", some(run.oscillation_pct(from, to))),
                ("goodputPct", some(run.goodput_pct(from, to))),
                ("p90OverNoLoad", some(run.p90_over_no_load(from, to))),
                ("shedPct", some(run.shed_pct(from, to))),
                ("convergenceS", conv),
                ("convergenceWindows", run.windows(conv)),
                ("inBandS", run.in_band_s(since, to)),
            ]
        }
        Measure::Batch { at, size } => {
            let t0 = (at * SEC as f64) as u64;
            let batch: Vec<_> = run.tr.calls.iter().filter(|c| c.created == t0).collect();
            let served: Vec<_> = batch
                .iter()
                .filter(|c| c.verdict == Verdict::Success)
                .collect();
            let waited_out = batch
                .iter()
                .filter(|c| c.verdict == Verdict::Timeout && !c.admitted)
                .count();
            let drain_s = served.iter().map(|c| c.end - t0).max().unwrap_or(0) as f64 / SEC as f64;
            let ideal_s = size as f64 / capacity_per_s(run.sc.servers, &run.sc.service);
            vec![
                ("shed", some((size as usize - batch.len()) as f64)),
                ("served", some(served.len() as f64)),
                ("timedOutWaiting", some(waited_out as f64)),
                ("drainOverIdeal", some(drain_s / ideal_s)),
                (
                    "limitGrowth",
                    some(
                        run.mean_limit(at + drain_s - 1.0, at + drain_s)
                            / run.mean_limit(at - 1.0, at),
                    ),
                ),
            ]
        }
        Measure::LlmSlots => {
            let (a, b) = (end / 2.0, end);
            let st = run.sc.streaming.expect("a streaming scenario");
            let hold_s = (st.ttft_median_ns * crate::dist::lognormal_mean_factor(st.ttft_sigma)
                + st.length_median_ns * crate::dist::lognormal_mean_factor(st.length_sigma))
                / SEC as f64;
            let possible = run.sc.servers as f64 * (b - a) / hold_s;
            let baseline = mean(
                run.ticks(a, b)
                    .map(|i| run.tr.baseline_ms[0][i])
                    .filter(|x| x.is_finite()),
            );
            let (aa, bb) = ((a * SEC as f64) as u64, (b * SEC as f64) as u64);
            let timeouts = run
                .tr
                .calls
                .iter()
                .filter(|c| c.verdict == Verdict::Timeout && c.end >= aa && c.end < bb)
                .map(|c| c.admitted)
                .collect::<Vec<bool>>();
            let waits: Vec<f64> = run
                .tr
                .calls
                .iter()
                .filter(|c| c.admitted && c.created >= aa && c.created < bb)
                .map(|c| (c.started - c.created) as f64 / 1e6)
                .collect();
            vec![
                ("breakerTrips", some(run.tr.breaker_trips.len() as f64)),
                (
                    "meanLimitOverSlots",
                    some(run.mean_limit(a, b) / run.sc.servers as f64),
                ),
                (
                    "throughputPct",
                    some(run.successes(a, b) as f64 / possible * 100.0),
                ),
                (
                    "baselineOverTtft",
                    some(baseline / (st.ttft_median_ns / 1e6)),
                ),
                ("timeouts", some(timeouts.len() as f64)),
                (
                    "timeoutsAdmitted",
                    some(timeouts.iter().filter(|&&a| a).count() as f64),
                ),
                ("meanWaitMs", some(mean(waits.iter().copied()))),
                ("shedPct", some(run.shed_pct(a, b))),
                (
                    "criticalTtftP90OverStream",
                    run.sc.mix.and_then(|_| {
                        // Made → first token, in stream lengths, of the critical calls served.
                        let mut ttft: Vec<f64> = run
                            .tr
                            .calls
                            .iter()
                            .filter(|c| c.group == 0 && c.admitted && c.verdict == Verdict::Success)
                            .filter(|c| c.created >= aa && c.created < bb)
                            .map(|c| (c.started - c.created + c.latency_ns) as f64)
                            .collect();
                        (!ttft.is_empty()).then(|| percentile(&mut ttft, 0.9) / st.length_median_ns)
                    }),
                ),
            ]
        }
        Measure::OpenLoop { from, to } => {
            let (a, b) = ((from * SEC as f64) as u64, (to * SEC as f64) as u64);
            let mut waits: Vec<f64> = run
                .tr
                .calls
                .iter()
                .filter(|c| c.admitted && c.created >= a && c.created < b)
                .map(|c| (c.end - c.latency_ns - c.created) as f64 / 1e6)
                .collect();
            let most = run
                .ticks(from, to)
                .map(|i| run.tr.queued.iter().map(|q| q[i]).sum::<u32>())
                .max();
            vec![
                ("goodputPct", some(run.goodput_pct(from, to))),
                ("p99QueueWaitMs", some(percentile(&mut waits, 0.99))),
                ("mostWaiting", most.map(|m| m as f64)),
                ("shedPct", some(run.shed_pct(from, to))),
            ]
        }
        Measure::Mixed { from, to } => mixed(run, from, to),
        Measure::RateQuota { from, to } => vec![
            (
                "callsPerAccepted",
                some(calls_per_accepted(run.tr, from, to)),
            ),
            (
                "acceptedPct",
                some(accepted_pct(run.tr, quota_of(run.sc), from, to)),
            ),
            ("shedPct", some(run.shed_pct(from, to))),
        ],
        Measure::RetryStorm { from, to, .. } => vec![
            (
                "attemptsPerFirst",
                some(attempts_per_first(run.tr, from, to)),
            ),
            ("goodputPct", some(run.goodput_pct(from, to))),
        ],
        Measure::CapacityHalves => {
            let m2 = run.mean_limit(300.0, 400.0);
            let m3 = run.mean_limit(500.0, 600.0);
            let rec = run.settle_s(200.0, 400.0, m2);
            let res = run.settle_s(400.0, 600.0, m3);
            vec![
                (
                    "meanLimitOverCapacity",
                    some(run.mean_limit(100.0, 200.0) / run.mean_servers(100.0, 200.0)),
                ),
                (
                    "halvedLimitOverCapacity",
                    some(m2 / run.mean_servers(300.0, 400.0)),
                ),
                (
                    "restoredLimitOverCapacity",
                    some(m3 / run.mean_servers(500.0, 600.0)),
                ),
                ("goodputPct", some(run.goodput_pct(0.0, end))),
                ("recoveryS", rec),
                ("recoveryWindows", run.windows(rec)),
                ("restoreS", res),
                ("restoreWindows", run.windows(res)),
            ]
        }
        Measure::BaselineShift => vec![
            ("goodputPct", some(run.goodput_pct(300.0, 600.0))),
            (
                "meanLimitOverCapacity",
                some(run.mean_limit(400.0, 600.0) / run.mean_servers(400.0, 600.0)),
            ),
            ("oscillationPct", some(run.oscillation_pct(400.0, 600.0))),
            ("p90OverNoLoad", some(run.p90_over_no_load(400.0, 600.0))),
            ("shedPct", some(run.shed_pct(300.0, 600.0))),
        ],
        Measure::Production => {
            let shed = Run::first_after(&run.tr.refusal_times, 200.0);
            let trips: Vec<u64> = run.tr.breaker_trips.iter().map(|t| t.0).collect();
            let trip = Run::first_after(&trips, 200.0);
            let rule = Run::first_after(&run.tr.rule_trips, 200.0);
            let before = match (shed, trip) {
                (Some(s), Some(t)) => Some(t - s),
                _ => None,
            };
            vec![
                ("firstShedS", shed),
                ("breakerTripS", trip),
                ("breakerRuleTripS", rule),
                ("shedBeforeBreakerS", before),
                ("shedBeforeChangePct", some(run.shed_pct(0.0, 200.0))),
                ("shedPct", some(run.shed_pct(200.0, 600.0))),
                ("goodputPct", some(run.goodput_pct(200.0, 600.0))),
                (
                    "meanLimitOverCapacity",
                    some(run.mean_limit(400.0, 600.0) / run.mean_servers(400.0, 600.0)),
                ),
                ("p90S", some(run.p90_ns(400.0, 600.0) / SEC as f64)),
            ]
        }
        Measure::Streaming => {
            let demand = match run.sc.load {
                crate::scenario::Load::Closed { callers } => callers as f64,
                crate::scenario::Load::Open { .. } => f64::NAN,
            };
            let all = run.ticks(0.0, end);
            let min = all
                .clone()
                .map(|i| run.limit_at(i))
                .fold(f64::INFINITY, f64::min);
            vec![
                ("shedPct", some(run.shed_pct(0.0, end))),
                ("minLimitOverDemand", some(min / demand)),
                (
                    "meanLimitOverDemand",
                    some(run.mean_limit(0.0, end) / demand),
                ),
                ("p90S", some(run.p90_ns(0.0, end) / SEC as f64)),
            ]
        }
        Measure::Idle => {
            let pre = run.mean_limit(100.0, 200.0);
            let i300 = tick(300.0).min(run.tr.ticks() - 1);
            let i900 = tick(900.0).min(run.tr.ticks() - 1);
            let react = run.settle_s(900.0, 1100.0, pre);
            vec![
                (
                    "preFaultLimitOverCapacity",
                    some(pre / run.tr.servers[i300] as f64),
                ),
                (
                    "limitAfterFaultOverCapacity",
                    some(run.limit_at(i300) / run.tr.servers[i300] as f64),
                ),
                (
                    "limitAtResumeOverCapacity",
                    some(run.limit_at(i900) / run.tr.servers[i900] as f64),
                ),
                ("reactionS", react),
                ("reactionWindows", run.windows(react)),
                ("recovered", some(run.recovered(pre))),
            ]
        }
        Measure::LowTraffic => {
            let i600 = tick(600.0);
            let pre = run.limit_at(i600);
            let first_decrease = run.ticks(600.0, end).find(|&i| run.limit_at(i) < pre);
            let react = first_decrease.map(|i| (i - i600) as f64 * TICK_NS as f64 / SEC as f64);
            let min = run
                .ticks(600.0, 900.0)
                .map(|i| run.limit_at(i))
                .fold(f64::INFINITY, f64::min);
            let last = run.limit_at(run.tr.ticks() - 1);
            vec![
                ("reactionS", react),
                ("reactionWindows", run.windows(react)),
                ("faultMinLimitOverPre", some(min / pre)),
                ("endLimitOverPre", some(last / pre)),
                ("recovered", some((last >= 0.9 * pre) as u8 as f64)),
                ("shedPct", some(run.shed_pct(0.0, end))),
            ]
        }
        Measure::Fleet => {
            // The last 300 s (the canonical fleet's 300–600 s; after the last join in
            // fleet-join), or the second half of a shorter run.
            fleet_metrics(run, (end - 300.0).max(end / 2.0), end)
        }
        Measure::FleetStart { judged, early } => {
            let mut m = fleet_metrics(run, end - judged, end);
            let (a, b) = early;
            m.push(("earlyJain", some(jain(&run.done_per_client(a, b)))));
            m
        }
        Measure::FaultThenRecover {
            pre,
            fault_from,
            fault_to,
        } => {
            let pre_mean = run.mean_limit(pre.0, pre.1);
            let half = (fault_from + fault_to) / 2.0;
            let after = (fault_to + end) / 2.0;
            let react = run.settle_s(fault_to, end, pre_mean);
            vec![
                (
                    "preFaultLimitOverCapacity",
                    some(pre_mean / run.mean_servers(pre.0, pre.1)),
                ),
                (
                    "limitDuringFaultOverCapacity",
                    some(run.mean_limit(half, fault_to) / run.mean_servers(half, fault_to)),
                ),
                ("reactionS", react),
                ("reactionWindows", run.windows(react)),
                ("recovered", some(run.recovered(pre_mean))),
                (
                    "meanLimitOverCapacity",
                    some(run.mean_limit(after, end) / run.mean_servers(after, end)),
                ),
                ("goodputPct", some(run.goodput_pct(after, end))),
                ("p90OverNoLoad", some(run.p90_over_no_load(after, end))),
            ]
        }
    }
}

/// Jain's fairness index of `per` (1: all equal; 1/n: one takes everything).
fn jain(per: &[f64]) -> f64 {
    let sum: f64 = per.iter().sum();
    let sq: f64 = per.iter().map(|x| x * x).sum();
    sum * sum / (per.len() as f64 * sq)
}

/// A fleet over `[a, b)` seconds: Jain's index of the calls each client completed (what its
/// users see) and of the clients' mean limits, the limits' sum over C, goodput, p90 and shed.
fn fleet_metrics(run: &Run, a: f64, b: f64) -> Vec<(&'static str, Option<f64>)> {
    let limits: Vec<f64> = run
        .tr
        .limit
        .iter()
        .map(|l| mean(run.ticks(a, b).map(|i| l[i] as f64)))
        .collect();
    vec![
        ("jain", some(jain(&run.done_per_client(a, b)))),
        ("limitJain", some(jain(&limits))),
        (
            "sumLimitOverCapacity",
            some(limits.iter().sum::<f64>() / run.mean_servers(a, b)),
        ),
        ("goodputPct", some(run.goodput_pct(a, b))),
        ("p90OverNoLoad", some(run.p90_over_no_load(a, b))),
        ("shedPct", some(run.shed_pct(a, b))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_is_nearest_rank() {
        let mut xs: Vec<f64> = (1..=10).map(|x| x as f64).collect();
        assert_eq!(percentile(&mut xs, 0.9), 9.0);
        assert_eq!(percentile(&mut xs, 0.05), 1.0);
        assert_eq!(percentile(&mut xs, 1.0), 10.0);
    }
}
