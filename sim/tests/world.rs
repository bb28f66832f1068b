//! The simulated world and the comparison model behave as built: these guard the simulator
//! itself (most run the `static` row, whose limit never moves).

use resilix_engine::Algorithm;
use resilix_sim::client::Row;
use resilix_sim::runner::{get, metrics_of};
use resilix_sim::scenario::{self, Scenario};

const STATIC: Row = Row::Resilix(Algorithm::Fixed);

fn scenario(name: &str) -> Scenario {
    scenario::all()
        .into_iter()
        .find(|s| s.name == name)
        .expect("scenario exists")
}

#[test]
fn a_run_is_a_function_of_its_seed() {
    let sc = scenario("production");
    let a = metrics_of(&sc, Row::NetflixVegas, 5);
    let b = metrics_of(&sc, Row::NetflixVegas, 5);
    let c = metrics_of(&sc, Row::NetflixVegas, 6);
    assert_eq!(a, b);
    assert_ne!(a, c);
}

#[test]
fn static_limit_below_capacity_gives_littles_law_goodput_and_no_queueing() {
    // Limit 20 of C = 50: 40 % of capacity, and the upstream never queues (p90 = no-load).
    let m = metrics_of(&scenario("converge"), STATIC, 1);
    assert_eq!(get(&m, "meanLimitOverCapacity"), Some(0.4));
    let g = get(&m, "goodputPct").unwrap();
    assert!((38.0..42.0).contains(&g), "goodput {g}");
    let p = get(&m, "p90OverNoLoad").unwrap();
    assert!((0.95..1.05).contains(&p), "p90/no-load {p}");
}

#[test]
fn a_fleet_of_static_limits_above_capacity_queues_in_the_upstream() {
    // 10 × 20 = 2 C: goodput saturates and latency grows past no-load.
    let m = metrics_of(&scenario("fleet"), STATIC, 1);
    assert_eq!(get(&m, "sumLimitOverCapacity"), Some(2.0));
    assert_eq!(get(&m, "limitJain"), Some(1.0));
    // Equal limits, equal shares of the calls served.
    assert!(get(&m, "jain").unwrap() > 0.99, "{m:?}");
    assert!(get(&m, "goodputPct").unwrap() > 97.0, "{m:?}");
    assert!(get(&m, "p90OverNoLoad").unwrap() > 1.5, "{m:?}");
}

#[test]
fn the_breaker_rule_trips_after_the_production_change_and_only_then() {
    let m = metrics_of(&scenario("production"), STATIC, 1);
    let rule = get(&m, "breakerRuleTripS").expect("trips");
    // 10.4 s calls become half of a 30 s window only once the fast calls age out of it.
    assert!(
        (5.0..60.0).contains(&rule),
        "rule trip {rule} s after the change"
    );
}

#[test]
fn the_engine_breaker_trips_on_slow_calls_where_its_documented_rule_does() {
    use resilix_engine::breaker::TripCause;
    let sc = scenario("production");
    let tr = resilix_sim::world::run(&sc, STATIC, 1);
    let change = 200 * scenario::SEC;
    let &(trip, cause) = tr
        .breaker_trips
        .iter()
        .find(|t| t.0 >= change)
        .expect("the engine breaker trips");
    assert_eq!(cause, TripCause::SlowCallRate);
    assert!(
        tr.breaker_trips.iter().all(|t| t.0 >= change),
        "tripped on healthy traffic"
    );
    let rule = *tr
        .rule_trips
        .iter()
        .find(|&&t| t >= change)
        .expect("the rule trips");
    // The engine's window slides in 3 s buckets (10 per 30 s): it may trip up to one bucket
    // earlier than the exact rolling window, never later.
    let (trip_s, rule_s) = ((trip - change) as f64 / 1e9, (rule - change) as f64 / 1e9);
    assert!(
        trip_s <= rule_s + 0.5 && trip_s >= rule_s - 3.5,
        "breaker {trip_s} s, rule {rule_s} s"
    );
}

#[test]
fn mark_is_what_the_limiter_sees_for_streams() {
    let with = metrics_of(&scenario("streaming"), STATIC, 1);
    let without = metrics_of(&scenario("streaming-no-mark"), STATIC, 1);
    let (a, b) = (get(&with, "p90S").unwrap(), get(&without, "p90S").unwrap());
    assert!(a < 0.6, "TTFT p90 {a} s");
    assert!(b > 40.0, "whole-stream p90 {b} s");
}

#[test]
fn netflix_vegas_behaves_like_netflix_windowed_vegas() {
    // The bands around Netflix's own WindowedLimit(Vegas) as measured in ADR 0301 ("Evidence").
    let m = metrics_of(&scenario("converge"), Row::NetflixVegas, 1);
    let r = get(&m, "meanLimitOverCapacity").unwrap();
    assert!((0.95..1.2).contains(&r), "converge {r}");
    assert!(get(&m, "convergenceS").unwrap() < 30.0, "{m:?}");
    let m = metrics_of(&scenario("capacity-halves"), Row::NetflixVegas, 1);
    assert!(get(&m, "recoveryS").unwrap() < 60.0, "{m:?}");
    let m = metrics_of(&scenario("low-traffic"), Row::NetflixVegas, 1);
    assert_eq!(get(&m, "reactionS"), None, "{m:?}");
    let m = metrics_of(&scenario("fleet"), Row::NetflixVegas, 1);
    assert!(get(&m, "sumLimitOverCapacity").unwrap() > 2.0, "{m:?}");
}

#[test]
fn every_scenario_runs_for_the_vegas_row_with_metrics_in_physical_bounds() {
    // Whatever the algorithm does, a metric outside these bounds is a simulator bug.
    let vegas = Row::Resilix(Algorithm::Vegas);
    for sc in scenario::all() {
        let m = metrics_of(&sc, vegas, 1);
        assert!(!m.is_empty(), "{}", sc.name);
        for (name, v) in &m {
            let Some(v) = *v else { continue };
            assert!(
                v.is_finite() && v >= 0.0 || name.ends_with("BreakerS"),
                "{}: {name} = {v}",
                sc.name
            );
            if name.ends_with("Pct") && *name != "oscillationPct" {
                assert!(v <= 103.0, "{}: {name} = {v}", sc.name);
            }
            if *name == "recovered" {
                assert!(v == 0.0 || v == 1.0, "{}: {name} = {v}", sc.name);
            }
            if *name == "jain" {
                assert!((0.1..=1.0 + 1e-9).contains(&v), "{}: {name} = {v}", sc.name);
            }
        }
    }
}
