//! 16 generation slots, a first token 200 ms after a slot frees, streams of 5 s, 20 calls at
//! once (the starting limit): 4 wait inside the server for a slot. On a busy machine the first
//! streams do not end together but over a second; each end hands its slot to one of the 4,
//! which has its first token 200 ms later (ADR 1220).

use resilix_engine::{Acquired, Engine, KeyHandle, LimiterOptions, QueueOptions, Verdict};

#[path = "support/llm_key.rs"]
mod llm_key;
use llm_key::{llm_key, ms};

const TTFT: u64 = 200;
const STREAM: u64 = 5_000;
const SLOTS: usize = 16;
const CALLS: usize = 20;

fn engine() -> (Engine, KeyHandle) {
    let limiter = LimiterOptions {
        queue: Some(QueueOptions::default()),
        ..LimiterOptions::default()
    };
    llm_key(limiter, None)
}

enum Ev {
    Mark(u64),
    End(u64),
}

/// The first streams end `gap_ms` apart; returns the lowest limit seen until the last of the
/// four waiting calls has its first token.
fn lowest_limit(gap_ms: u64) -> u32 {
    let (mut e, h) = engine();
    let ids: Vec<u64> = (0..CALLS)
        .map(|_| match e.acquire(h, ms(0)).unwrap() {
            Acquired::Permit(id) => id,
            other => panic!("the starting limit admits 20, got {other:?}"),
        })
        .collect();
    let mut events: Vec<(u64, Ev)> = Vec::new();
    for (i, &id) in ids[..SLOTS].iter().enumerate() {
        let end = TTFT + STREAM + i as u64 * gap_ms;
        events.push((TTFT, Ev::Mark(id)));
        events.push((end, Ev::End(id)));
        // The server hands this slot to the next call waiting inside it.
        if let Some(&next) = ids.get(SLOTS + i) {
            events.push((end + TTFT, Ev::Mark(next)));
        }
    }
    events.sort_by_key(|(t, _)| *t);
    let mut lowest = u32::MAX;
    for (t, ev) in events {
        match ev {
            Ev::Mark(id) => {
                e.mark(h, id, ms(t)).unwrap();
            }
            Ev::End(id) => {
                e.settle(h, id, Verdict::Success, ms(t)).unwrap().unwrap();
            }
        }
        lowest = lowest.min(e.stats(h, ms(t)).unwrap().limit);
    }
    lowest
}

#[test]
fn streams_ending_apart_cut_the_limit_to_the_slots_not_below() {
    // Together (1 ms apart) one evaluation sees the 4 waiting calls; 60 ms apart (a busy
    // machine) one evaluation every 100 ms sees them while some already have a slot.
    for gap in [1, 30, 60, 120] {
        let lowest = lowest_limit(gap);
        assert!(
            (SLOTS as u32 - 1..=SLOTS as u32 + 1).contains(&lowest),
            "streams ending {gap} ms apart: the limit fell to {lowest} against {SLOTS} slots"
        );
    }
}
