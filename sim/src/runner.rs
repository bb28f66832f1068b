//! Runs scenario × row × seed jobs (on a few threads) and reduces them to reported rows.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use resilix_engine::Verdict;

use crate::client::Row;
use crate::metrics::{self, Metric, Run};
use crate::scenario::{Scenario, SEC};
use crate::trace::{Trace, TICK_NS};
use crate::world;

/// Per-second series of one run, for the plots.
#[derive(Clone, Debug, Default)]
pub struct Series {
    /// Mean over clients.
    pub limit: Vec<f64>,
    pub inflight: Vec<f64>,
    /// p90 of what the limiter saw, calls ended in that second (NaN when none), ms.
    pub p90_ms: Vec<f64>,
    /// Upstream servers (C).
    pub servers: Vec<f64>,
}

#[derive(Clone, Debug)]
pub struct RowResult {
    pub row: Row,
    pub metrics: Vec<Metric>,
    /// From the first seed.
    pub series: Series,
}

#[derive(Clone, Debug)]
pub struct ScenarioResult {
    pub scenario: Scenario,
    pub rows: Vec<RowResult>,
}

fn series(tr: &Trace) -> Series {
    let per_s = (SEC / TICK_NS) as usize;
    let secs = tr.ticks() / per_s;
    let avg = |v: &Vec<Vec<u32>>, s: usize| {
        let mut sum = 0.0;
        for c in v {
            sum += c[s * per_s..(s + 1) * per_s]
                .iter()
                .map(|&x| x as f64)
                .sum::<f64>()
                / per_s as f64;
        }
        sum / v.len() as f64
    };
    let mut lat: Vec<Vec<f64>> = vec![Vec::new(); secs];
    for c in &tr.calls {
        let s = (c.end / SEC) as usize;
        if c.admitted && c.verdict != Verdict::Rejected && s < secs {
            lat[s].push(c.latency_ns as f64 / 1e6);
        }
    }
    Series {
        limit: (0..secs).map(|s| avg(&tr.limit, s)).collect(),
        inflight: (0..secs).map(|s| avg(&tr.inflight, s)).collect(),
        p90_ms: lat
            .iter_mut()
            .map(|l| metrics::percentile(l, 0.9))
            .collect(),
        servers: (0..secs).map(|s| tr.servers[s * per_s] as f64).collect(),
    }
}

/// The median per metric over seeds; `None` (never happened) sorts last.
fn median(runs: &[Vec<Metric>]) -> Vec<Metric> {
    let first = &runs[0];
    (0..first.len())
        .map(|k| {
            let mut xs: Vec<f64> = runs
                .iter()
                .map(|r| r[k].1.unwrap_or(f64::INFINITY))
                .collect();
            xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
            let m = xs[(xs.len() - 1) / 2];
            (first[k].0, m.is_finite().then_some(m))
        })
        .collect()
}

/// Run every scenario with every row and `seeds` seeds on `jobs` threads.
pub fn run_all(
    scenarios: &[Scenario],
    rows: &[Row],
    seeds: u32,
    jobs: usize,
) -> Vec<ScenarioResult> {
    let mut work = Vec::new();
    for (si, _) in scenarios.iter().enumerate() {
        for (ri, _) in rows.iter().enumerate() {
            for k in 0..seeds {
                work.push((si, ri, k));
            }
        }
    }
    type Out = (usize, usize, u32, Vec<Metric>, Option<Series>);
    let out: Mutex<Vec<Out>> = Mutex::new(Vec::new());
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(si, ri, k)) = work.get(i) else {
                    break;
                };
                let sc = &scenarios[si];
                // Seeds 1, 2, 3, …: the same seed for every row, so rows see the same world.
                let tr = world::run(sc, rows[ri], 1 + k as u64);
                let mut m = metrics::compute(&Run {
                    sc,
                    row: rows[ri],
                    tr: &tr,
                });
                m.extend(metrics::retry_comparisons(sc, rows[ri], 1 + k as u64));
                m.extend(metrics::throttle_comparisons(sc, rows[ri], 1 + k as u64));
                let ser = (k == 0).then(|| series(&tr));
                out.lock().unwrap().push((si, ri, k, m, ser));
            });
        }
    });
    let mut out = out.into_inner().unwrap();
    out.sort_by_key(|o| (o.0, o.1, o.2));
    scenarios
        .iter()
        .enumerate()
        .map(|(si, sc)| ScenarioResult {
            scenario: sc.clone(),
            rows: rows
                .iter()
                .enumerate()
                .map(|(ri, &row)| {
                    let mine: Vec<&Out> = out.iter().filter(|o| o.0 == si && o.1 == ri).collect();
                    let runs: Vec<Vec<Metric>> = mine.iter().map(|o| o.3.clone()).collect();
                    RowResult {
                        row,
                        metrics: median(&runs),
                        series: mine[0].4.clone().unwrap_or_default(),
                    }
                })
                .collect(),
        })
        .collect()
}

/// One scenario, one row, one seed: the metrics (for tests).
pub fn metrics_of(sc: &Scenario, row: Row, seed: u64) -> Vec<Metric> {
    let tr = world::run(sc, row, seed);
    let mut m = metrics::compute(&Run { sc, row, tr: &tr });
    m.extend(metrics::retry_comparisons(sc, row, seed));
    m.extend(metrics::throttle_comparisons(sc, row, seed));
    m
}

pub fn get(metrics: &[Metric], name: &str) -> Option<f64> {
    metrics.iter().find(|m| m.0 == name).and_then(|m| m.1)
}
