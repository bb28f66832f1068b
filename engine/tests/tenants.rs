//! Tenants past what a key tracks one by one (ADR 1109): a discrete-event run of a key with a
//! fixed limit of 4, 100 ms calls offered at twice the capacity for 60 s, 2 s deadlines, the
//! last 50 s judged; one heavy tenant sends 10 × what each quiet one sends. Quiet tenants keep
//! at least 80 % of a fair share whatever their number, and a flooder that names a new tenant
//! on every call gains nothing over one name.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use resilix_engine::priority::LEVELS;
use resilix_engine::{
    tenant_id, Acquired, Algorithm, Engine, KeyHandle, LimiterOptions, PolicyOptions, Priority,
    RegistryOptions, SplitMix64, Verdict, NANOS_PER_MS,
};

const LIMIT: u32 = 4;
const SERVICE_NS: u64 = 100 * NANOS_PER_MS;
const DEADLINE_NS: u64 = 2_000 * NANOS_PER_MS;
const RUN_NS: u64 = 60_000 * NANOS_PER_MS;
const JUDGED_FROM_NS: u64 = 10_000 * NANOS_PER_MS;
/// Calls a second the key serves: 4 slots of 100 ms.
const CAPACITY: f64 = LIMIT as f64 * 1e9 / SERVICE_NS as f64;

fn engine() -> (Engine, KeyHandle) {
    let lim = LimiterOptions {
        algorithm: Algorithm::Fixed,
        initial_limit: LIMIT,
        min_limit: 1,
        max_limit: LIMIT,
        ..LimiterOptions::default()
    };
    let p = PolicyOptions {
        breaker: None,
        limiter: Some(lim),
        bulkhead: None,
        throttle: None,
        quota: None,
    };
    let mut e = Engine::new(p, RegistryOptions::default(), 1).unwrap();
    let h = e.resolve("k", 0).unwrap().handle;
    (e, h)
}

#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A call by tenant group `g` arrives.
    Arrive(usize),
    /// A running call's permit is settled.
    Done(u64, usize),
    /// A waiting call's deadline (its id).
    Expire(u64),
}

struct Waiter {
    id: u64,
    group: usize,
    tenant: u32,
    deadline: u64,
}

/// Calls served (settled within their deadline) by group in the judged part: group 0 is the
/// heavy tenant, groups 1… the quiet ones. `flood`: the heavy tenant names a new tenant on
/// every call.
fn run(quiet: usize, flood: bool, seed: u64) -> Vec<u64> {
    let (mut e, h) = engine();
    let mut rng = SplitMix64::new(seed);
    let groups = quiet + 1;
    // Open loop at 2 × capacity, the heavy tenant 10 × a quiet one's share.
    let weight = |g: usize| if g == 0 { 10.0 } else { 1.0 };
    let total_weight = 10.0 + quiet as f64;
    let mut events = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |ev: &mut BinaryHeap<_>, t: u64, e: Ev| {
        seq += 1;
        ev.push(Reverse((t, seq, e)));
    };
    for g in 0..groups {
        let rate = 2.0 * CAPACITY * weight(g) / total_weight;
        let first = (rng.next_f64() * 1e9 / rate) as u64;
        push(&mut events, first, Ev::Arrive(g));
    }
    let mut lines: Vec<VecDeque<(Waiter, u8)>> = (0..LEVELS).map(|_| VecDeque::new()).collect();
    let mut served = vec![0u64; groups];
    let mut next_id = 0u64;
    let mut flood_name = 0u64;
    let mut gone = std::collections::HashSet::new();
    while let Some(Reverse((now, _, ev))) = events.pop() {
        if now > RUN_NS {
            break;
        }
        let mut freed = false;
        match ev {
            Ev::Arrive(g) => {
                let rate = 2.0 * CAPACITY * weight(g) / total_weight;
                // Exponential gaps: a Poisson arrival process.
                let gap = (-(1.0 - rng.next_f64()).ln() * 1e9 / rate) as u64;
                push(&mut events, now + gap.max(1), Ev::Arrive(g));
                let name = if g == 0 && flood {
                    flood_name += 1;
                    format!("flood-{flood_name}")
                } else {
                    format!("tenant-{g}")
                };
                let tenant = tenant_id(&name);
                let level = e.level_of(h, Priority::Normal, tenant, now).unwrap();
                next_id += 1;
                match e.acquire_at(h, now, DEADLINE_NS, level, tenant).unwrap() {
                    Acquired::Permit(p) => push(&mut events, now + SERVICE_NS, Ev::Done(p, g)),
                    Acquired::Queued => {
                        let w = Waiter {
                            id: next_id,
                            group: g,
                            tenant,
                            deadline: now + DEADLINE_NS,
                        };
                        push(&mut events, w.deadline, Ev::Expire(w.id));
                        lines[level as usize].push_back((w, level));
                    }
                    Acquired::Rejected(_) => {}
                }
            }
            Ev::Done(p, g) => {
                e.settle(h, p, Verdict::Success, now).unwrap().unwrap();
                if now >= JUDGED_FROM_NS {
                    served[g] += 1;
                }
                freed = true;
            }
            Ev::Expire(id) => {
                gone.insert(id);
            }
        }
        if !freed {
            // Waiters whose deadline passed leave (their timers).
            for line in lines.iter_mut() {
                line.retain(|(w, level)| {
                    if gone.contains(&w.id) {
                        e.leave_queue_at(h, *level).unwrap();
                        false
                    } else {
                        true
                    }
                });
            }
            gone.clear();
            continue;
        }
        // Admit from the highest level, FIFO within one.
        while let Some(level) = (0..LEVELS).rev().find(|&l| !lines[l].is_empty()) {
            let (waiter, lv) = lines[level].front().unwrap();
            let lv = *lv;
            if waiter.deadline <= now || gone.contains(&waiter.id) {
                e.leave_queue_at(h, lv).unwrap();
                lines[level].pop_front();
                continue;
            }
            match e
                .admit_queued_by(h, now, lv, waiter.tenant, waiter.deadline)
                .unwrap()
            {
                None => break,
                Some(Acquired::Permit(p)) => {
                    let g = waiter.group;
                    lines[level].pop_front();
                    push(&mut events, now + SERVICE_NS, Ev::Done(p, g));
                }
                Some(_) => {
                    lines[level].pop_front();
                }
            }
        }
    }
    served
}

/// Served calls a second per quiet tenant over its fair share (max-min: every tenant's demand
/// is above the capacity split evenly, so the fair share is the capacity over the tenants;
/// with `flood`, the flooder counts as one). Returns (worst quiet, mean quiet, heavy).
fn shares(quiet: usize, flood: bool) -> (f64, f64, f64) {
    let served = run(quiet, flood, 7);
    let secs = (RUN_NS - JUDGED_FROM_NS) as f64 / 1e9;
    let fair = CAPACITY / (quiet + 1) as f64;
    let per = |n: u64| n as f64 / secs / fair;
    let q: Vec<f64> = served[1..].iter().map(|&n| per(n)).collect();
    let worst = q.iter().cloned().fold(f64::INFINITY, f64::min);
    let mean = q.iter().sum::<f64>() / q.len() as f64;
    (worst, mean, per(served[0]))
}

#[test]
fn quiet_tenants_keep_a_fair_share_beside_a_heavy_one_whatever_their_number() {
    let mut lines = Vec::new();
    for quiet in [9, 30, 60, 100] {
        let (worst, mean, heavy) = shares(quiet, false);
        lines.push(format!(
            "{quiet} quiet: worst quiet {worst:.2}, mean quiet {mean:.2}, heavy {heavy:.2} of a fair share"
        ));
        // The goal: 80 % of a fair share. The worst of 100 quiet tenants, each served about
        // 20 calls, is below their mean by chance alone; the heavy one stays near its own.
        assert!(mean >= 0.8, "{}", lines.join("\n"));
        assert!(worst >= 0.75, "{}", lines.join("\n"));
        assert!(heavy <= 2.0, "{}", lines.join("\n"));
    }
    println!("{}", lines.join("\n"));
}

#[test]
fn a_flooder_naming_a_new_tenant_per_call_gains_nothing_over_one_name() {
    let mut lines = Vec::new();
    for quiet in [30, 100] {
        let (_, one_quiet, one_heavy) = shares(quiet, false);
        let (_, flood_quiet, flood_heavy) = shares(quiet, true);
        lines.push(format!(
            "{quiet} quiet: one name: quiet {one_quiet:.2}, flooder {one_heavy:.2}; a name per call: quiet {flood_quiet:.2}, flooder {flood_heavy:.2} of a fair share"
        ));
        assert!(flood_quiet >= 0.8, "{}", lines.join("\n"));
        assert!(
            flood_heavy <= one_heavy * 1.1 + 0.05,
            "{}",
            lines.join("\n")
        );
    }
    println!("{}", lines.join("\n"));
}
