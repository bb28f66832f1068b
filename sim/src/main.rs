//! `resilix-sim [--json] [--seeds N] [--jobs N] [--plots DIR | --no-plots] [--only a,b] [--rows a,b]`
//!
//! Prints the table (or the JSON with `--json`) and writes one SVG per scenario.

use std::path::PathBuf;
use std::process::ExitCode;

use resilix_sim::client::Row;
use resilix_sim::{plot, report, runner, scenario};

struct Args {
    json: bool,
    seeds: u32,
    jobs: usize,
    plots: Option<PathBuf>,
    only: Option<Vec<String>>,
    rows: Vec<Row>,
    jittered_probes: bool,
}

fn usage() -> &'static str {
    "usage: resilix-sim [--json] [--seeds N (default 3)] [--jobs N] [--plots DIR (default sim/plots) | --no-plots] \
     [--only scenario,...] [--rows vegas,gradient2,aimd,static,netflix-vegas] [--jittered-probes]"
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        json: false,
        seeds: 3,
        jobs: std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(2),
        plots: Some(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/plots"))),
        only: None,
        rows: Row::ALL.to_vec(),
        jittered_probes: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = |name: &str| it.next().ok_or(format!("{name} needs a value"));
        match arg.as_str() {
            "--json" => a.json = true,
            "--seeds" => {
                a.seeds = val("--seeds")?
                    .parse()
                    .map_err(|_| "--seeds must be a positive integer")?
            }
            "--jobs" => {
                a.jobs = val("--jobs")?
                    .parse()
                    .map_err(|_| "--jobs must be a positive integer")?
            }
            "--plots" => a.plots = Some(PathBuf::from(val("--plots")?)),
            "--no-plots" => a.plots = None,
            "--jittered-probes" => a.jittered_probes = true,
            "--only" => a.only = Some(val("--only")?.split(',').map(String::from).collect()),
            "--rows" => {
                a.rows = val("--rows")?
                    .split(',')
                    .map(|r| Row::parse(r).ok_or(format!("unknown row {r}")))
                    .collect::<Result<_, _>>()?
            }
            "-h" | "--help" => return Err(usage().into()),
            other => return Err(format!("unknown argument {other}\n{}", usage())),
        }
    }
    if a.seeds == 0 {
        return Err("--seeds must be at least 1".into());
    }
    Ok(a)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut scenarios = scenario::all();
    for sc in &mut scenarios {
        sc.jittered_probes = args.jittered_probes;
    }
    if let Some(only) = &args.only {
        for name in only {
            if !scenarios.iter().any(|s| s.name == name) {
                eprintln!("unknown scenario {name}");
                return ExitCode::from(2);
            }
        }
        scenarios.retain(|s| only.iter().any(|o| o == s.name));
    }
    let started = std::time::Instant::now();
    let results = runner::run_all(&scenarios, &args.rows, args.seeds, args.jobs);
    if args.json {
        print!("{}", report::json(&results));
    } else {
        print!("{}", report::table(&results, args.seeds));
    }
    if let Some(dir) = &args.plots {
        for r in &results {
            if let Err(e) = plot::write_svg(r, dir) {
                eprintln!("plot {}: {e}", r.scenario.name);
                return ExitCode::FAILURE;
            }
        }
        eprintln!("plots: {} SVG(s) in {}", results.len(), dir.display());
    }
    eprintln!("ran in {:.1} s (wall)", started.elapsed().as_secs_f64());
    ExitCode::SUCCESS
}
