//! Streams queued at the upstream (ADR 0118): a call that holds its slot past its first byte
//! gives its sample only when its stream ends, so a call still waiting for its first byte long
//! past the usual is counted while it waits. An upstream with 16 generation slots, driven by
//! hand: 20 calls admitted at once (the default `initialLimit`), 16 reach their first token
//! 200 ms later and stream for 45 s, 4 wait for a slot. The first probe does not fall due as
//! the first streams end, whatever its wall-clock phase (ADR 0124).

use resilix_engine::{
    Acquired, Engine, KeyHandle, LimiterOptions, QueueOptions, QueueRefusal, RejectReason, Verdict,
    NANOS_PER_MS,
};

#[path = "support/llm_key.rs"]
mod llm_key;
use llm_key::{llm_key, ms};

const TTFT: u64 = 200;
const STREAM: u64 = 45_000;

fn engine() -> (Engine, KeyHandle) {
    engine_with(None)
}

fn engine_with(queue: Option<QueueOptions>) -> (Engine, KeyHandle) {
    engine_at(queue, 0)
}

/// `phase_ms` shifts the wall clock the probe's phases are counted on.
fn engine_at(queue: Option<QueueOptions>, phase_ms: u64) -> (Engine, KeyHandle) {
    let limiter = LimiterOptions {
        queue,
        clock_offset_ns: phase_ms * NANOS_PER_MS,
        ..LimiterOptions::default()
    };
    llm_key(limiter, None)
}

fn admit(e: &mut Engine, h: KeyHandle, at: u64, n: usize) -> Vec<u64> {
    (0..n)
        .map(|_| match e.acquire(h, ms(at)).unwrap() {
            Acquired::Permit(id) => id,
            other => panic!("expected a permit, got {other:?}"),
        })
        .collect()
}

/// Up to `n` calls, as many as admission allows now (a probe may hold it).
fn admit_up_to(e: &mut Engine, h: KeyHandle, at: u64, n: usize) -> Vec<u64> {
    (0..n)
        .map_while(|_| match e.acquire(h, ms(at)).unwrap() {
            Acquired::Permit(id) => Some(id),
            _ => None,
        })
        .collect()
}

fn limit(e: &Engine, h: KeyHandle, at: u64) -> u32 {
    e.stats(h, ms(at)).unwrap().limit
}

/// The first burst: 20 calls, the first 16 in slots; `marks` says whether calls mark their
/// first token (streams read with `ctx.mark()`) or not (plain calls answered at the end). The
/// 16 end at 45.2 s, one every 10 ms; returns the 4 calls still waiting and the time.
fn first_burst(e: &mut Engine, h: KeyHandle, marks: bool) -> (Vec<u64>, u64) {
    let ids = admit(e, h, 0, 20);
    let (served, waiting) = ids.split_at(16);
    if marks {
        for &id in served {
            e.mark(h, id, ms(TTFT)).unwrap();
        }
    }
    let mut t = TTFT + STREAM;
    for &id in served {
        e.settle(h, id, Verdict::Success, ms(t)).unwrap().unwrap();
        t += 10;
    }
    (waiting.to_vec(), t)
}

#[test]
fn calls_without_a_first_byte_long_past_the_usual_bring_the_limit_to_the_calls_served() {
    let (mut e, h) = engine();
    let (_, t) = first_burst(&mut e, h, true);
    // 4 calls have waited 45 s for a first token that takes 200 ms: the upstream serves 16.
    assert_eq!(limit(&e, h, t), 16);
}

#[test]
fn plain_calls_are_never_counted_late() {
    // The same calls without marks: their latency is their whole duration and nothing holds a
    // slot past its response, so a call in flight is only a slow call, judged by its sample.
    let (mut e, h) = engine();
    let (_, t) = first_burst(&mut e, h, false);
    assert!(limit(&e, h, t) >= 20, "limit {}", limit(&e, h, t));
}

#[test]
fn the_late_calls_samples_do_not_cut_the_limit_a_second_time() {
    let (mut e, h) = engine();
    let (waiting, t) = first_burst(&mut e, h, true);
    assert_eq!(limit(&e, h, t), 16);
    // The 4 get their slots as the first streams end, new calls take the rest (as many as
    // admission allows): all mark 200 ms later and end a stream after. The 4 report a 45 s time
    // to first token, a wait the limit already answered for.
    let mut second = waiting.clone();
    second.extend(admit_up_to(&mut e, h, t, 12));
    for &id in &second {
        e.mark(h, id, ms(t + TTFT)).unwrap();
    }
    // Their streams end over the next 30 s (lengths differ), so windows close on them: each
    // late call between three others.
    second.sort_by_key(|id| !waiting.contains(id));
    let order: Vec<u64> = (0..second.len())
        .map(|i| match i % 4 {
            0 if i / 4 < waiting.len() => second[i / 4],
            _ => second[waiting.len() + i - 1 - i / 4],
        })
        .collect();
    let mut end = t + TTFT + STREAM;
    for &id in &order {
        e.settle(h, id, Verdict::Success, ms(end)).unwrap().unwrap();
        end += 2_000;
    }
    let after = limit(&e, h, end);
    assert!(
        (16..=17).contains(&after),
        "not cut again by the late calls' waits, and raised by one call at most while they were \
         in the window: {after}"
    );
}

/// A key with a queue, taught by 16 calls of 45 s (streams marked at 200 ms, or plain calls),
/// full again with one waiter; a slot comes back and the waiter, with `left_ms` of its
/// deadline left, asks to run: the answer, and the engine.
fn waiter_at_a_freed_slot(marks: bool, left_ms: u64) -> (Option<Acquired>, Engine, KeyHandle) {
    let (mut e, h) = engine_with(Some(QueueOptions::default()));
    let ids = admit(&mut e, h, 0, 16);
    let mut t = TTFT + STREAM;
    for &id in &ids {
        if marks {
            e.mark(h, id, ms(TTFT)).unwrap();
        }
        e.settle(h, id, Verdict::Success, ms(t)).unwrap().unwrap();
        t += 10;
    }
    // Fill the limit; the first call it does not admit waits.
    let mut running = Vec::new();
    loop {
        match e.acquire(h, ms(t)).unwrap() {
            Acquired::Permit(id) => running.push(id),
            Acquired::Queued => break,
            other => panic!(
                "expected to queue behind {} calls, got {other:?}",
                running.len()
            ),
        }
    }
    if marks {
        e.mark(h, running[0], ms(t + TTFT)).unwrap();
    }
    let end = t + TTFT + STREAM;
    e.settle(h, running[0], Verdict::Success, ms(end))
        .unwrap()
        .unwrap();
    let level = e.highest_waiting(h).unwrap().expect("a waiter");
    let a = e
        .admit_queued_by(h, ms(end), level, 0, ms(end + left_ms))
        .unwrap();
    (a, e, h)
}

#[test]
fn a_stream_whose_deadline_comes_before_its_slot_would_be_given_back_is_refused_at_once() {
    // A stream holds its slot about 45 s: with 30 s of its deadline left it would be cut
    // mid-stream, its slot time lost. It is refused, says why, and leaves the queue.
    let (a, e, h) = waiter_at_a_freed_slot(true, 30_000);
    assert_eq!(a, Some(Acquired::Rejected(RejectReason::Queue)));
    assert_eq!(e.last_queue_refusal(h).unwrap().0, QueueRefusal::Turn);
    assert_eq!(e.highest_waiting(h).unwrap(), None, "it left the queue");
    // With a whole stream's time left it runs.
    assert!(matches!(
        waiter_at_a_freed_slot(true, 60_000).0,
        Some(Acquired::Permit(_))
    ));
    // A plain call is never refused for it: it runs for what deadline it has.
    assert!(matches!(
        waiter_at_a_freed_slot(false, 30_000).0,
        Some(Acquired::Permit(_))
    ));
}

#[test]
fn streams_longer_than_the_probe_interval_are_not_probed_at_the_next_phase() {
    // A probe holds admission at a quarter of the limit until the calls in flight drain to it:
    // with 45 s streams that is a whole stream with most slots idle. The next probe waits for
    // an interval scaled by the stream instead.
    let (mut e, h) = engine();
    let (_, t) = first_burst(&mut e, h, true);
    let admitted = admit_up_to(&mut e, h, t + 1_000, 12);
    assert_eq!(admitted.len(), 12, "the 12 free slots are filled");
}

/// Whatever the probe's phase and whatever order the first 16 streams end in, the slots they
/// free are filled as they free. 40 consumers: 20 admitted at once, 20 wait in the queue with a
/// deadline of three stream lengths; as each stream ends, the waiters admission allows are let
/// in, as the JS layer does at each settle. Returns the waiters admitted until 1 s after the
/// last of the 16 ended (the 4 queued at the upstream take 4 of the 16 slots: 12 are free).
fn refill_after_first_burst(phase_ms: u64, order: &[usize]) -> usize {
    let (mut e, h) = engine_at(Some(QueueOptions::default()), phase_ms);
    let ids = admit(&mut e, h, 0, 20);
    for _ in 0..20 {
        assert_eq!(e.acquire(h, ms(0)).unwrap(), Acquired::Queued);
    }
    for &id in &ids[..16] {
        e.mark(h, id, ms(TTFT)).unwrap();
    }
    let deadline = ms(3 * STREAM);
    let mut admitted = 0;
    let mut wake = |e: &mut Engine, at: u64| {
        while e.wakeable(h).unwrap() > 0 {
            let level = e.highest_waiting(h).unwrap().expect("a waiter");
            match e.admit_queued_by(h, ms(at), level, 0, deadline).unwrap() {
                Some(Acquired::Permit(_)) => admitted += 1,
                other => panic!("phase {phase_ms} ms, at {at} ms: {other:?}"),
            }
        }
    };
    let mut t = TTFT + STREAM;
    for &i in order {
        e.settle(h, ids[i], Verdict::Success, ms(t))
            .unwrap()
            .unwrap();
        wake(&mut e, t);
        t += 10;
    }
    // The 4 get their slots and first tokens.
    for &id in &ids[16..] {
        e.mark(h, id, ms(t + TTFT)).unwrap();
    }
    for dt in (0..=1_000).step_by(100) {
        wake(&mut e, t + dt);
    }
    admitted
}

#[test]
fn a_first_burst_of_streams_refills_its_freed_slots_at_any_probe_phase_and_end_order() {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut orders: Vec<Vec<usize>> = vec![(0..16).collect(), (0..16).rev().collect()];
    for _ in 0..6 {
        let mut o: Vec<usize> = (0..16).collect();
        for i in (1..o.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            o.swap(i, (x % (i as u64 + 1)) as usize);
        }
        orders.push(o);
    }
    let mut starved = Vec::new();
    // Phases over the whole interval a probe of 45 s streams is scaled to (10 s doubled to
    // 1 280 s, ADR 0118): the first probe may fall due while the first streams end.
    for phase_ms in (0..1_280_000).step_by(1_000) {
        for o in &orders {
            let n = refill_after_first_burst(phase_ms, o);
            if n < 12 {
                starved.push((phase_ms, o[..4].to_vec(), n));
            }
        }
    }
    assert!(
        starved.is_empty(),
        "{} of {} runs left free slots idle (phase ms, first to end, admitted): {:?}",
        starved.len(),
        1_280 * orders.len(),
        &starved[..starved.len().min(8)]
    );
}
