//! A self-hosted LLM server's shape (ADR 1222): 4 generation slots, a first token 20 ms after a
//! slot frees, streams of 3.2 s, every consumer starting at once. The server sends headers at
//! once, so the calls beyond the slots wait inside it a whole stream for their first token.
//! Driven by hand: the first burst, and what the key knows when the first streams end.

use resilix_engine::{
    Acquired, BreakerOptions, BreakerState, Engine, KeyHandle, LimiterOptions, QueueOptions,
    Verdict,
};

#[path = "support/llm_key.rs"]
mod llm_key;
use llm_key::{llm_key, ms};

const TTFT: u64 = 20;
const STREAM: u64 = 3_200;
const SLOTS: usize = 4;

fn engine() -> (Engine, KeyHandle) {
    let limiter = LimiterOptions {
        queue: Some(QueueOptions::default()),
        ..LimiterOptions::default()
    };
    llm_key(limiter, Some(BreakerOptions::default()))
}

/// `n` calls at once (fewer than the starting limit of 20 are all admitted); the first 4 get
/// the slots and their first token, and their streams end at 3.22 s, one every millisecond.
/// Returns the calls still waiting inside the server and the time after the last end.
fn first_streams_end(e: &mut Engine, h: KeyHandle, n: usize) -> (Vec<u64>, u64) {
    let mut ids = Vec::new();
    for _ in 0..n {
        match e.acquire(h, ms(0)).unwrap() {
            Acquired::Permit(id) => ids.push(id),
            Acquired::Queued => {}
            other => panic!("expected a permit or a wait, got {other:?}"),
        }
    }
    for &id in &ids[..SLOTS] {
        e.mark(h, id, ms(TTFT)).unwrap();
    }
    let mut t = TTFT + STREAM;
    for &id in &ids[..SLOTS] {
        e.settle(h, id, Verdict::Success, ms(t)).unwrap().unwrap();
        t += 1;
    }
    (ids[SLOTS..].to_vec(), t)
}

#[test]
fn below_the_starting_limit_the_limit_comes_to_the_slots_when_the_first_streams_end() {
    // 16 consumers against a limit of 20: the limit never binds, and no window closes for
    // seconds. 12 calls have waited 3.2 s for a first token that takes 20 ms: the upstream
    // serves 4, and the limit says so at the first stream's end (it stayed at 20 before).
    let (mut e, h) = engine();
    let (_, t) = first_streams_end(&mut e, h, 16);
    let limit = e.stats(h, ms(t)).unwrap().limit;
    assert!(
        (4..=5).contains(&limit),
        "limit {limit} against 4 slots (12 calls still waiting for their first token)"
    );
}

#[test]
fn the_first_bursts_waiters_that_cannot_make_it_are_refused_when_the_first_streams_end() {
    // 32 consumers: 20 admitted, 12 wait in our queue with a deadline of three stream lengths.
    // When the first streams end, 16 calls are still in flight against 4 slots: a waiter would
    // run only after three more rounds, past its deadline. It is refused now, not left to
    // time out in the queue (before, the rule had nothing to go by until a waiter had run).
    let (mut e, h) = engine();
    let (_, t) = first_streams_end(&mut e, h, 32);
    let level = e.highest_waiting(h).unwrap().expect("12 waiters");
    let deadline = ms(3 * STREAM);
    assert_eq!(
        e.refuse_late_waiter(h, ms(t), level, 0, deadline).unwrap(),
        Some(true),
        "the first waiter cannot run before {} ms",
        3 * STREAM
    );
    // A waiter with time for the rounds ahead of it keeps waiting.
    assert_eq!(
        e.refuse_late_waiter(h, ms(t), level, 0, ms(10 * STREAM))
            .unwrap(),
        Some(false)
    );
}

#[test]
fn a_call_that_timed_out_waiting_inside_the_server_before_the_first_window_does_not_open_the_breaker(
) {
    // The first burst's calls beyond the slots wait a stream per round inside the server; with
    // a deadline of three stream lengths the last round's calls time out without a first token.
    // They queued behind our own first burst: no evidence against the upstream.
    let (mut e, h) = engine();
    let (waiting, t) = first_streams_end(&mut e, h, 16);
    // Counted late at the first stream's end; 8 of them time out at 9.6 s.
    let mut at = 3 * STREAM;
    assert!(at > t);
    for &id in &waiting[4..] {
        e.settle(h, id, Verdict::Timeout, ms(at)).unwrap().unwrap();
        at += 1;
    }
    assert_eq!(
        e.stats(h, ms(at)).unwrap().breaker,
        Some(BreakerState::Closed),
        "8 timeouts in a row of calls counted waiting inside the server"
    );
}
