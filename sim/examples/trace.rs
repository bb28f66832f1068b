//! Prints one run's limit, inflight and queue every second: `cargo run --release -p resilix-sim
//! --example trace -- SCENARIO [ROW] [SEED]`. A debugging aid for tuning the limiter.

use resilix_sim::client::Row;
use resilix_sim::{scenario, world};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map(String::as_str).unwrap_or("converge");
    let row = args
        .get(1)
        .and_then(|r| Row::parse(r))
        .unwrap_or(Row::parse("vegas").unwrap());
    let seed = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    let sc = scenario::all()
        .into_iter()
        .find(|s| s.name == name)
        .expect("no such scenario");
    let t = world::run(&sc, row, seed);
    for tick in (0..t.ticks()).step_by(10) {
        let (l, i, q): (u32, u32, u32) = (0..t.limit.len())
            .map(|c| (t.limit[c][tick], t.inflight[c][tick], t.queued[c][tick]))
            .fold((0, 0, 0), |a, b| (a.0 + b.0, a.1 + b.1, a.2 + b.2));
        println!(
            "t={:>5}s limit={l:>4} inflight={i:>4} queued={q:>4} servers={} baseline={:.0}ms",
            tick / 10,
            t.servers[tick],
            t.baseline_ms[0][tick]
        );
        if t.limit.len() > 1 && t.limit.len() <= 10 {
            let each: Vec<String> = (0..t.limit.len())
                .map(|c| format!("{}/{:.0}", t.limit[c][tick], t.baseline_ms[c][tick]))
                .collect();
            println!("        limit/baseline per client: {}", each.join(" "));
        }
    }
    for (at, cause) in &t.breaker_trips {
        println!("breaker opened at {:.1}s: {cause:?}", *at as f64 / 1e9);
    }
}
