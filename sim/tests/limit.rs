//! The adaptive limit against a simulated upstream over time: the real engine (one key, through
//! `Engine`) in the simulator's world (C servers and a FIFO, closed-loop callers that retry a
//! refused call after 10 ms, or open-loop arrivals). What the limit does with samples fed
//! directly stays in the engine's unit tests (engine/src/limit/tests.rs).
//!
//! Unless a test says otherwise the upstream is `upstream(C, S)`: log-normal service with
//! σ = 0.1 and a timeout of 10 × S, and the engine runs without its queue (`limiter`): a call
//! over the limit is refused and its caller retries 10 ms later, so a caller's deadline measures
//! the upstream alone and the limit is the only thing that moves. The named scenarios run the
//! engine as the simulator's rows do (defaults, queue on). Times are in seconds; one seed each.

use resilix_engine::{Algorithm, LimiterOptions};
use resilix_sim::client::{ResilixClient, Row};
use resilix_sim::runner::{get, metrics_of};
use resilix_sim::scenario::{self, Change, Fault, Load, Measure, Scenario, Service, MS, SEC};
use resilix_sim::trace::{Trace, TICK_NS};
use resilix_sim::world;

const SEED: u64 = 1;
const ALL: [Algorithm; 3] = [Algorithm::Vegas, Algorithm::Gradient2, Algorithm::Aimd];
const DELAY_BASED: [Algorithm; 2] = [Algorithm::Vegas, Algorithm::Gradient2];

/// C servers, service S ms (σ = 0.1), `callers` closed-loop callers, timeout 10 × S.
fn upstream(servers: u32, service_ms: u64, callers: u32, secs: u64) -> Scenario {
    Scenario {
        name: "limit-test",
        about: "an engine test's upstream",
        duration_ns: secs * SEC,
        servers,
        service: Service {
            median_ns: (service_ms * MS) as f64,
            sigma: 0.1,
            bimodal: None,
        },
        fault: Fault::None,
        clients: 1,
        load: Load::Closed { callers },
        timeout_ns: 10 * service_ms * MS,
        streaming: None,
        initial_backlog: 0,
        join_every_ns: 0,
        stagger_ns: 0,
        jittered_probes: false,
        realism: None,
        initial_limit: None,
        mix: None,
        changes: Vec::new(),
        measure: Measure::Steady {
            since: 0.0,
            from: 0.0,
            to: secs as f64,
        },
    }
}

fn named(name: &str) -> Scenario {
    scenario::all()
        .into_iter()
        .find(|s| s.name == name)
        .expect("scenario exists")
}

/// The defaults with `algorithm`, without the queue.
fn limiter(algorithm: Algorithm) -> LimiterOptions {
    LimiterOptions {
        algorithm,
        queue: None,
        ..LimiterOptions::default()
    }
}

fn run_opts(sc: &Scenario, opts: LimiterOptions) -> Trace {
    world::run_with(
        sc,
        &|seed| Box::new(ResilixClient::with_limiter(opts, seed)),
        SEED,
    )
}

fn run(sc: &Scenario, alg: Algorithm) -> Trace {
    run_opts(sc, limiter(alg))
}

/// The engine as the simulator's rows run it (its defaults, queue on).
fn run_named(sc: &Scenario, alg: Algorithm) -> Trace {
    world::run(sc, Row::Resilix(alg), SEED)
}

fn at(t_s: f64) -> u64 {
    (t_s * SEC as f64) as u64
}

fn tick(t_s: f64) -> usize {
    (t_s * SEC as f64 / TICK_NS as f64).round() as usize
}

/// The limit recorded at the tick at `t_s` (state before any event later than the tick).
fn limit_at(tr: &Trace, t_s: f64) -> u32 {
    tr.limit[0][tick(t_s)]
}

fn last_limit(tr: &Trace) -> u32 {
    *tr.limit[0].last().unwrap()
}

fn baseline_at(tr: &Trace, t_s: f64) -> f64 {
    tr.baseline_ms[0][tick(t_s)]
}

fn last_baseline(tr: &Trace) -> f64 {
    *tr.baseline_ms[0].last().unwrap()
}

/// Mean, min and max of the limit over the ticks in [from, to).
fn limits(tr: &Trace, from: f64, to: f64) -> (f64, u32, u32) {
    let xs = &tr.limit[0][tick(from)..tick(to).min(tr.limit[0].len())];
    assert!(!xs.is_empty(), "no ticks in [{from}, {to})");
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / xs.len() as f64;
    (mean, *xs.iter().min().unwrap(), *xs.iter().max().unwrap())
}

// ---------------------------------------------------------------- per algorithm: convergence

fn converge(alg: Algorithm) -> (f64, u32, u32) {
    let tr = run(&upstream(50, 50, 200, 300), alg);
    let (mean, lo, hi) = limits(&tr, 150.0, 300.0);
    eprintln!("{alg:?} converge: mean {mean:.1} min {lo} max {hi}");
    (mean, lo, hi)
}

#[test]
fn vegas_converges_near_capacity_and_holds() {
    let (mean, lo, hi) = converge(Algorithm::Vegas);
    assert!((45.0..=65.0).contains(&mean), "mean limit {mean} vs C = 50");
    assert!(
        lo as f64 >= 0.8 * mean && hi as f64 <= 1.2 * mean,
        "oscillation {lo}..{hi} around {mean}"
    );
}

#[test]
fn gradient2_converges_and_holds() {
    let (mean, lo, hi) = converge(Algorithm::Gradient2);
    // rttTolerance 1.5 lets latency reach 1.5× the baseline: the limit settles near 1.5 C.
    assert!((45.0..=90.0).contains(&mean), "mean limit {mean} vs C = 50");
    assert!(
        lo as f64 >= 0.8 * mean && hi as f64 <= 1.2 * mean,
        "oscillation {lo}..{hi} around {mean}"
    );
}

#[test]
fn aimd_grows_until_errors_then_backs_off() {
    // Timeout at 3 × S: past 150 in flight every call times out.
    let sc = Scenario {
        timeout_ns: 150 * MS,
        ..upstream(50, 50, 200, 300)
    };
    let tr = run(&sc, Algorithm::Aimd);
    let (mean, lo, hi) = limits(&tr, 150.0, 300.0);
    eprintln!("aimd converge: mean {mean:.1} min {lo} max {hi}");
    // Error-driven: it overshoots C (reacts after damage) but stays below the timeout line.
    assert!(hi <= 160 && lo >= 50, "aimd range {lo}..{hi}");
}

#[test]
fn aimd_reaches_max_without_errors() {
    let tr = run(&upstream(1_000, 50, 300, 120), Algorithm::Aimd);
    assert_eq!(last_limit(&tr), 200, "clamped at maxLimit");
}

// ---------------------------------------------------------------- per algorithm: the basics

#[test]
fn increases_with_no_queue_and_clamps_at_max() {
    let sc = upstream(10_000, 50, 400, 600);
    for alg in ALL {
        let tr = run(&sc, alg);
        let l = last_limit(&tr);
        eprintln!("{alg:?}: no queue → {l}");
        assert_eq!(l, 200, "{alg:?} should reach and stay clamped at maxLimit");
        let (_, _, hi) = limits(&tr, 0.0, 600.0);
        assert!(hi <= 200, "{alg:?} exceeded maxLimit: {hi}");
    }
}

#[test]
fn decreases_when_a_queue_builds_and_clamps_at_min() {
    // The baseline is learnt unloaded (C = 200) for 20 s, then capacity drops to 10: a queue
    // builds.
    let sc = Scenario {
        changes: vec![(at(20.0), Change::Servers(10))],
        ..upstream(200, 50, 200, 200)
    };
    for alg in DELAY_BASED {
        let opts = LimiterOptions {
            initial_limit: 150,
            ..limiter(alg)
        };
        let tr = run_opts(&sc, opts);
        let (before, after) = (limit_at(&tr, 20.0), last_limit(&tr));
        eprintln!("{alg:?}: queue builds {before} → {after}");
        assert!(
            after < before / 3,
            "{alg:?} did not back off: {before} → {after}"
        );
    }
    // Every call times out: all three fall to minLimit exactly and stay there.
    let sc = Scenario {
        timeout_ns: 10 * MS,
        ..upstream(100, 50, 100, 120)
    };
    for alg in ALL {
        let tr = run(&sc, alg);
        let (_, lo, _) = limits(&tr, 60.0, 120.0);
        assert_eq!(last_limit(&tr), 4, "{alg:?} not at minLimit");
        assert_eq!(lo, 4, "{alg:?} went below minLimit");
    }
}

// ---------------------------------------------------------------- idle recovery (ADR 0106)

#[test]
fn idle_recovery_for_every_algorithm() {
    // Healthy for 100 s; then every call times out; the callers stop at 160 s; after ten
    // minutes of silence they come back: the first acquire applies the idle time.
    let sc = Scenario {
        changes: vec![
            (at(100.0), Change::Fault(Fault::BlackHole)),
            (at(160.0), Change::Load(Load::Closed { callers: 0 })),
            (at(160.0), Change::Fault(Fault::None)),
            (at(761.0), Change::Load(Load::Closed { callers: 60 })),
        ],
        ..upstream(50, 50, 60, 762)
    };
    for alg in ALL {
        let tr = run(&sc, alg);
        let healthy = limit_at(&tr, 100.0);
        let clamped = limit_at(&tr, 161.0);
        assert!(clamped < healthy / 2, "{alg:?}: {healthy} → {clamped}");
        // One tick after the callers return: no window (≥ 2 s) has closed yet.
        let resumed = limit_at(&tr, 761.1);
        eprintln!("{alg:?}: healthy {healthy}, clamped {clamped}, after 10 min idle {resumed}");
        assert!(
            resumed as f64 >= 0.9 * healthy as f64,
            "{alg:?}: still clamped after idle: {resumed}"
        );
    }
}

/// The `idle` scenario: converge 200 s; 200–300 s every call times out; 300–900 s no calls;
/// 900–1100 s N = 200 again. The limit at resumption reflects the idle time and is back within
/// ±20 % of the pre-fault mean by 1 100 s.
#[test]
fn scenario_idle() {
    let sc = named("idle");
    for alg in DELAY_BASED {
        let tr = run_named(&sc, alg);
        let (pre, _, _) = limits(&tr, 100.0, 200.0);
        let fallen = limit_at(&tr, 301.0);
        let resumed = limit_at(&tr, 900.1);
        let (post, lo, hi) = limits(&tr, 1_000.0, 1_100.0);
        eprintln!(
            "idle {alg:?}: pre-fault mean {pre:.1}, fallen {fallen}, at resumption {resumed}, 1000–1100 s mean {post:.1} ({lo}..{hi})"
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

// ---------------------------------------------------------------- low traffic (ADR 0103)

/// The `low-traffic` scenario (8 calls a minute; 600–900 s every call takes 30 s against a 5 s
/// timeout): the first decrease within two minutes of the fault, and back to ≥ 90 % of the
/// pre-fault limit by 1 800 s.
#[test]
fn low_traffic_reacts_within_two_minutes_and_recovers() {
    let sc = named("low-traffic");
    for alg in ALL {
        let m = metrics_of(&sc, Row::Resilix(alg), SEED);
        eprintln!("{alg:?} low traffic: {m:?}");
        let first = get(&m, "reactionS").expect("never decreased");
        assert!(first <= 120.0, "{alg:?}: first decrease after {first} s");
        assert_eq!(get(&m, "recovered"), Some(1.0), "{alg:?}: {m:?}");
    }
}

// ---------------------------------------------------------------- production (ADR 0113)

/// The `production` scenario: open loop 60 calls/s, S = 350 ms; at 200 s S becomes 10.4 s with
/// no errors; timeout 60 s. The first slow call (≥ 5 s, `breaker.slowCallMs`) settles 10.4 s
/// after the change, so the breaker cannot trip before then: the limiter must shed first.
#[test]
fn scenario_production_sheds_before_the_breaker_could_trip() {
    let sc = named("production");
    for alg in DELAY_BASED {
        let m = metrics_of(&sc, Row::Resilix(alg), SEED);
        eprintln!("production {alg:?}: {m:?}");
        let first = get(&m, "firstShedS");
        assert!(
            first.is_some_and(|f| f < 10.4),
            "{alg:?}: no refusal before the first slow call settled: {first:?}"
        );
    }
}

// ---------------------------------------------------------------- reported failure modes

/// Netflix #165: the probe takes a loaded sample as the baseline; the limiter stops limiting.
/// Ours drains its own calls before it times any (a quarter of the limit, ADR 0113), so with
/// 200 callers on C = 50 for 30 minutes the baseline stays the no-load latency.
#[test]
fn regression_netflix_165_probe_takes_loaded_baseline() {
    let tr = run(&upstream(50, 50, 200, 1_800), Algorithm::Vegas);
    let (mean, _, hi) = limits(&tr, 900.0, 1_800.0);
    let base = last_baseline(&tr);
    eprintln!("#165: 30 min saturated: mean {mean:.1} max {hi} baseline {base:.1}");
    assert!(base < 65.0, "baseline became loaded: {base}");
    assert!(hi <= 65, "stopped limiting: {hi}");
}

/// Netflix #137: every call ends at the same client timeout; no RTT variance; limit → max.
#[test]
fn regression_netflix_137_stable_client_timeout() {
    let sc = Scenario {
        service: Service {
            median_ns: (500 * MS) as f64,
            sigma: 0.0,
            bimodal: None,
        },
        timeout_ns: 200 * MS,
        ..upstream(5, 500, 200, 120)
    };
    for alg in ALL {
        let tr = run(&sc, alg);
        let (_, _, hi) = limits(&tr, 0.0, 120.0);
        assert!(hi <= 20, "{alg:?} grew on timeouts: {hi}");
        assert_eq!(last_limit(&tr), 4, "{alg:?}");
    }
}

/// Netflix PR #134: Gradient2 under modest overload (gradient ≈ 0.8) creeps upward forever.
/// The rule itself is an engine unit test; here, closed loop against C = 20 for 30 minutes.
#[test]
fn regression_netflix_pr134_gradient2_modest_overload_creeps_up() {
    let sc = Scenario {
        timeout_ns: 60 * SEC,
        ..upstream(20, 50, 200, 1_800)
    };
    let tr = run(&sc, Algorithm::Gradient2);
    let (early, _, _) = limits(&tr, 600.0, 1_200.0);
    let (late, _, hi) = limits(&tr, 1_200.0, 1_800.0);
    eprintln!("#134: mean 10-20 min {early:.1}, 20-30 min {late:.1}, max {hi}");
    assert!(late <= early * 1.05, "crept up: {early} → {late}");
    assert!(hi <= 36, "beyond 1.5 C + headroom: {hi}");
}

/// go-concurrency-limits #117, camunda #3306: after heavy load subsides, the limit stays at its
/// floor and never heals (demand is now low, so the app-limited rule forbids growth).
#[test]
fn regression_go_concurrency_limits_117_never_heals_after_heavy_load() {
    // Healthy 30 s; heavy load on C = 4 until 330 s; silence; from 335 s two callers on a
    // healthy upstream.
    let sc = Scenario {
        timeout_ns: 2 * SEC,
        changes: vec![
            (at(30.0), Change::Servers(4)),
            (at(330.0), Change::Load(Load::Closed { callers: 0 })),
            (at(335.0), Change::Servers(50)),
            (at(335.0), Change::Load(Load::Closed { callers: 2 })),
        ],
        ..upstream(50, 50, 200, 600)
    };
    for alg in DELAY_BASED {
        let tr = run(&sc, alg);
        let floor = limit_at(&tr, 335.0);
        let healed = last_limit(&tr);
        eprintln!("#117 {alg:?}: floor {floor} → {healed}");
        assert!(
            floor <= 10,
            "{alg:?} heavy load did not push the limit down: {floor}"
        );
        assert!(healed >= 20, "{alg:?} never healed: {healed}");
    }
}

/// failsafe-go #127: in a long incident the baseline drifts up to the degraded latency and
/// decreases stop.
#[test]
fn regression_failsafe_go_127_baseline_drifts_up_in_long_incident() {
    // The incident: capacity falls to 5 for 30 minutes (latency ∝ inflight / 5).
    let sc = Scenario {
        timeout_ns: 60 * SEC,
        changes: vec![(at(120.0), Change::Servers(5))],
        ..upstream(50, 50, 200, 1_920)
    };
    for alg in DELAY_BASED {
        let tr = run(&sc, alg);
        let base = baseline_at(&tr, 120.0);
        let end = last_baseline(&tr);
        let (mean, _, hi) = limits(&tr, 1_020.0, 1_920.0);
        eprintln!("#127 {alg:?}: base {base:.1} → {end:.1}, limit mean {mean:.1} max {hi}");
        assert!(
            end <= 1.3 * base,
            "{alg:?} baseline drifted up: {base} → {end}"
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
    // The engine's defaults (queue on); without the queue: the next test.
    envoy_38338_baseline_unloaded(run_named(&envoy_38338(), Algorithm::Vegas), "queue");
}

/// Envoy #38338's world: from the first call the upstream (C = 5) is 4× overloaded at the
/// initial limit of 20.
fn envoy_38338() -> Scenario {
    Scenario {
        timeout_ns: 60 * SEC,
        ..upstream(5, 50, 200, 1_800)
    }
}

/// The baseline ends unloaded and the limit near C = 5 over the last 5 minutes.
fn envoy_38338_baseline_unloaded(tr: Trace, label: &str) {
    let base = last_baseline(&tr);
    let (mean, _, _) = limits(&tr, 1_500.0, 1_800.0);
    eprintln!("#38338 ({label}): baseline {base:.1} mean {mean:.1}");
    // The no-load p90 is S × e^(0.1 × 1.28) ≈ 57 ms; the loaded start reads about 4× that.
    assert!(base <= 80.0, "baseline still loaded: {base}");
    assert!(mean <= 12.0, "limit {mean} vs C = 5");
}

/// Envoy #38338 without the engine's queue (`queue: None`): the probe must still drain and
/// measure. It used not to hold admission without a queue (ADR 0113 "Without the queue"), so it
/// never drained and the baseline stayed loaded (211 ms, limit 22 vs C = 5, for 30 minutes).
#[test]
fn regression_envoy_38338_without_the_queue() {
    envoy_38338_baseline_unloaded(run(&envoy_38338(), Algorithm::Vegas), "no queue");
}

/// A permanent shift of the upstream's normal latency is learnt (the running minimum of
/// Netflix's Vegas never recovers from it).
#[test]
fn baseline_recovers_from_a_permanent_shift() {
    // S = 50 ms becomes 150 ms at 200 s (timeout 10 × the new S).
    let sc = Scenario {
        timeout_ns: 1_500 * MS,
        changes: vec![(at(200.0), Change::Median((150 * MS) as f64))],
        ..upstream(50, 50, 200, 600)
    };
    let tr = run(&sc, Algorithm::Vegas);
    let before = baseline_at(&tr, 200.0);
    let learnt_at = (tick(200.0)..tr.baseline_ms[0].len())
        .find(|&i| tr.baseline_ms[0][i] >= 2.0 * before)
        .map(|i| (i - tick(200.0)) as f64 * TICK_NS as f64 / SEC as f64);
    eprintln!("shift: new baseline learnt {learnt_at:?} s after the shift");
    assert!(
        learnt_at.is_some_and(|t| t <= 200.0),
        "slow to learn the shift: {learnt_at:?}"
    );
    let after = last_baseline(&tr);
    let (mean, lo, _) = limits(&tr, 400.0, 600.0);
    eprintln!("shift: base {before:.1} → {after:.1}, limit mean {mean:.1} min {lo}");
    assert!(
        after >= 2.0 * before,
        "baseline never followed the shift: {before} → {after}"
    );
    assert!(
        mean >= 40.0,
        "limit stayed clamped after the shift: {mean} vs C = 50"
    );
}
