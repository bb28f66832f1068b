//! The circuit breaker on its own, on plain `now` values (a manual clock): each state, the
//! consecutive backstop at low volume, slow calls, half-open probe counts, verdict routing.

use resilix_engine::breaker::Breaker;
use resilix_engine::{BreakerOptions, BreakerState, TripCause, Verdict, NANOS_PER_MS};

const T0: u64 = 1_000 * NANOS_PER_MS;

fn ms(n: u64) -> u64 {
    T0 + n * NANOS_PER_MS
}

fn opts() -> BreakerOptions {
    BreakerOptions::default()
}

/// Acquire and settle one call at `at` with `latency_ms`; panics if the breaker refused it.
fn call(b: &mut Breaker, at: u64, verdict: Verdict, latency_ms: u64) {
    let probe = b
        .try_acquire(at)
        .expect("breaker refused a call that should pass");
    b.on_result(
        at + latency_ms * NANOS_PER_MS,
        verdict,
        latency_ms * NANOS_PER_MS,
        probe,
    );
}

/// A breaker tripped open at `ms(0)` by its consecutive backstop.
fn tripped(o: BreakerOptions) -> Breaker {
    let mut b = Breaker::new(&o);
    for _ in 0..o.consecutive_failures {
        call(&mut b, ms(0), Verdict::Failure, 0);
    }
    assert_eq!(b.state(ms(0)), BreakerState::Open);
    b
}

#[test]
fn starts_closed_and_passes_calls() {
    let mut b = Breaker::new(&opts());
    assert_eq!(b.state(ms(0)), BreakerState::Closed);
    assert_eq!(b.try_acquire(ms(0)), Some(0));
    assert_eq!(b.transitions(), 0);
    assert_eq!(b.last_transition(), None);
}

#[test]
fn consecutive_backstop_opens_at_low_volume() {
    // 8 calls a minute: the window never reaches minimumCalls, the run of failures still opens.
    let mut b = Breaker::new(&opts());
    for i in 0..4 {
        call(&mut b, ms(i * 7_500), Verdict::Failure, 100);
        assert_eq!(
            b.state(ms(i * 7_500 + 100)),
            BreakerState::Closed,
            "opened after {} failures",
            i + 1
        );
    }
    assert!(b.window(ms(30_100)).calls < opts().minimum_calls);
    call(&mut b, ms(4 * 7_500), Verdict::Failure, 100);
    assert_eq!(b.state(ms(30_100)), BreakerState::Open);
    let t = b.last_transition().unwrap();
    assert_eq!(
        (t.from, t.to, t.cause),
        (
            BreakerState::Closed,
            BreakerState::Open,
            Some(TripCause::Consecutive)
        )
    );
    assert_eq!(b.try_acquire(ms(30_200)), None);
}

#[test]
fn consecutive_backstop_spans_far_apart_failures() {
    // Five failures an hour apart (each alone in its window) still form a run.
    let mut b = Breaker::new(&opts());
    for i in 0..5 {
        call(&mut b, ms(i * 3_600_000), Verdict::Timeout, 10);
    }
    assert_eq!(b.state(ms(4 * 3_600_000 + 10)), BreakerState::Open);
}

#[test]
fn a_success_breaks_the_run() {
    let mut b = Breaker::new(&opts());
    for round in 0..10 {
        for _ in 0..4 {
            call(&mut b, ms(round * 60_000), Verdict::Failure, 1);
        }
        call(&mut b, ms(round * 60_000), Verdict::Success, 1);
    }
    assert_eq!(b.state(ms(600_000)), BreakerState::Closed);
}

#[test]
fn failure_rate_opens_once_minimum_calls_is_reached() {
    let o = BreakerOptions {
        consecutive_failures: 1_000,
        ..opts()
    };
    let mut b = Breaker::new(&o);
    // 19 calls, 10 of them failures (53 %): below minimumCalls 20, stays closed.
    for i in 0..19u64 {
        let v = if i % 2 == 0 {
            Verdict::Failure
        } else {
            Verdict::Success
        };
        call(&mut b, ms(i * 100), v, 5);
    }
    assert_eq!(b.window(ms(1_900)).calls, 19);
    assert_eq!(b.state(ms(1_900)), BreakerState::Closed);
    // The 20th call (a success) makes 10 failures of 20 = 50 % ≥ failureRate: open.
    call(&mut b, ms(1_900), Verdict::Success, 5);
    assert_eq!(b.state(ms(1_905)), BreakerState::Open);
    assert_eq!(
        b.last_transition().unwrap().cause,
        Some(TripCause::FailureRate)
    );
}

#[test]
fn failure_rate_below_threshold_stays_closed() {
    let o = BreakerOptions {
        consecutive_failures: 1_000,
        ..opts()
    };
    let mut b = Breaker::new(&o);
    // 8 failures in every 20 calls (40 %), spread evenly, for a long time.
    for i in 0..2_000u64 {
        let v = if (i * 8) % 20 < 8 {
            Verdict::Failure
        } else {
            Verdict::Success
        };
        call(&mut b, ms(i * 50), v, 5);
    }
    assert_eq!(b.state(ms(100_000)), BreakerState::Closed);
}

#[test]
fn old_failures_leave_the_window() {
    let o = BreakerOptions {
        consecutive_failures: 1_000,
        ..opts()
    };
    let mut b = Breaker::new(&o);
    for _ in 0..15 {
        call(&mut b, ms(0), Verdict::Failure, 1);
    }
    // 30 s later the 15 failures are gone: 10 more failures make 10 calls, below minimumCalls.
    assert_eq!(b.window(ms(30_000)).calls, 0);
    for _ in 0..10 {
        call(&mut b, ms(30_000), Verdict::Failure, 1);
    }
    assert_eq!(b.state(ms(30_001)), BreakerState::Closed);
    assert_eq!(
        b.window(ms(30_001)),
        resilix_engine::WindowCounts {
            calls: 10,
            failures: 10,
            slow: 0
        }
    );
    // Within the window they would have added up: 25 failures of 25.
    let mut c = Breaker::new(&o);
    for _ in 0..15 {
        call(&mut c, ms(0), Verdict::Failure, 1);
    }
    for _ in 0..5 {
        call(&mut c, ms(20_000), Verdict::Failure, 1);
    }
    assert_eq!(
        c.state(ms(20_001)),
        BreakerState::Open,
        "20 failures of 20 inside one window"
    );
}

#[test]
fn slow_call_rate_opens_with_zero_errors() {
    let o = opts();
    let mut b = Breaker::new(&o);
    // 10 fast successes, then slow successes: the 10th slow call makes 10 of 20 slow = 50 %.
    for i in 0..10 {
        call(&mut b, ms(i * 10), Verdict::Success, 350);
    }
    for i in 0..9 {
        call(&mut b, ms(200 + i * 10), Verdict::Success, o.slow_call_ms);
        assert_eq!(b.state(ms(20_000)), BreakerState::Closed);
    }
    call(&mut b, ms(300), Verdict::Success, o.slow_call_ms + 5_400);
    assert_eq!(b.state(ms(6_000)), BreakerState::Open);
    assert_eq!(
        b.last_transition().unwrap().cause,
        Some(TripCause::SlowCallRate)
    );
}

#[test]
fn just_under_slow_call_ms_is_not_slow() {
    let o = opts();
    let mut b = Breaker::new(&o);
    for i in 0..100 {
        call(&mut b, ms(i * 10), Verdict::Success, o.slow_call_ms - 1);
    }
    assert_eq!(b.window(ms(6_000)).slow, 0);
    assert_eq!(b.state(ms(6_000)), BreakerState::Closed);
}

#[test]
fn overload_and_answered_never_open_it() {
    let mut b = Breaker::new(&opts());
    for i in 0..500 {
        let v = if i % 2 == 0 {
            Verdict::Overload
        } else {
            Verdict::Answered
        };
        call(&mut b, ms(i * 10), v, 3);
    }
    assert_eq!(b.state(ms(5_000)), BreakerState::Closed);
    // They are calls that were answered: they count in the window as non-failures...
    assert!(b.window(ms(5_000)).calls >= 20);
    assert_eq!(b.window(ms(5_000)).failures, 0);
    // ...and they break a run of failures.
    for _ in 0..4 {
        call(&mut b, ms(5_000), Verdict::Failure, 3);
    }
    call(&mut b, ms(5_000), Verdict::Overload, 3);
    call(&mut b, ms(5_000), Verdict::Failure, 3);
    assert_eq!(b.state(ms(5_010)), BreakerState::Closed);
}

#[test]
fn timeout_counts_as_a_failure() {
    let mut b = Breaker::new(&opts());
    for _ in 0..5 {
        call(&mut b, ms(0), Verdict::Timeout, 60_000);
    }
    assert_eq!(b.state(ms(60_000)), BreakerState::Open);
}

#[test]
fn rejected_and_cancelled_are_ignored() {
    let mut b = Breaker::new(&opts());
    for _ in 0..4 {
        call(&mut b, ms(0), Verdict::Failure, 1);
    }
    // Neither counts in the window nor breaks the run.
    for _ in 0..100 {
        call(&mut b, ms(1), Verdict::Cancelled, 1);
        call(&mut b, ms(1), Verdict::Rejected, 1);
    }
    assert_eq!(b.window(ms(2)).calls, 4);
    assert_eq!(b.state(ms(2)), BreakerState::Closed);
    call(&mut b, ms(2), Verdict::Failure, 1);
    assert_eq!(b.state(ms(3)), BreakerState::Open);
}

#[test]
fn open_refuses_until_open_ms_then_half_open_on_the_next_acquire() {
    let o = opts();
    let mut b = tripped(o);
    assert_eq!(b.try_acquire(ms(o.open_ms - 1)), None);
    assert_eq!(b.state(ms(o.open_ms - 1)), BreakerState::Open);
    // Reading the state is pure: it reads half-open but changes nothing.
    assert_eq!(b.state(ms(o.open_ms)), BreakerState::HalfOpen);
    let seq = b.transitions();
    assert_eq!(b.state(ms(o.open_ms)), BreakerState::HalfOpen);
    assert_eq!(b.transitions(), seq);
    // The next acquire moves it (no timer).
    let p = b.try_acquire(ms(o.open_ms)).unwrap();
    assert_ne!(p, 0, "the first call after open_ms is a probe");
    let t = b.last_transition().unwrap();
    assert_eq!(
        (t.from, t.to, t.at, t.seq),
        (
            BreakerState::Open,
            BreakerState::HalfOpen,
            ms(o.open_ms),
            seq + 1
        )
    );
}

#[test]
fn half_open_admits_exactly_the_probes_and_closes_when_all_succeed() {
    let o = BreakerOptions {
        half_open_probes: 3,
        ..opts()
    };
    let mut b = tripped(o);
    let t = ms(o.open_ms);
    let probes: Vec<u32> = (0..3).map(|_| b.try_acquire(t).expect("probe")).collect();
    assert!(probes.iter().all(|&p| p != 0));
    assert_eq!(b.probes_taken(), 3);
    for _ in 0..10 {
        assert_eq!(
            b.try_acquire(t),
            None,
            "a fourth call in half-open must be refused"
        );
    }
    b.on_result(t + 1, Verdict::Success, 1, probes[0]);
    b.on_result(t + 2, Verdict::Answered, 1, probes[1]);
    assert_eq!(b.state(t + 2), BreakerState::HalfOpen);
    // Places are not refilled by successes: still refused until the cycle ends.
    assert_eq!(b.try_acquire(t + 2), None);
    b.on_result(t + 3, Verdict::Overload, 1, probes[2]);
    assert_eq!(b.state(t + 3), BreakerState::Closed);
    assert_eq!(b.last_transition().unwrap().to, BreakerState::Closed);
    // Closed with an empty window and no leftover run.
    assert_eq!(b.window(t + 3).calls, 0);
    for _ in 0..4 {
        call(&mut b, t + 4, Verdict::Failure, 0);
    }
    assert_eq!(b.state(t + 5), BreakerState::Closed);
}

#[test]
fn one_failing_probe_reopens_for_a_new_open_period() {
    let o = opts();
    let mut b = tripped(o);
    let t = ms(o.open_ms);
    let p1 = b.try_acquire(t).unwrap();
    let p2 = b.try_acquire(t).unwrap();
    b.on_result(t + 5, Verdict::Success, 5, p1);
    b.on_result(t + 10, Verdict::Failure, 10, p2);
    assert_eq!(b.state(t + 10), BreakerState::Open);
    assert_eq!(b.last_transition().unwrap().cause, Some(TripCause::Probe));
    // The open period restarts at the reopening.
    assert_eq!(b.try_acquire(t + 10 + o.open_ms * NANOS_PER_MS - 1), None);
    assert!(b.try_acquire(t + 10 + o.open_ms * NANOS_PER_MS).is_some());
}

#[test]
fn a_slow_probe_reopens() {
    let o = opts();
    let mut b = tripped(o);
    let t = ms(o.open_ms);
    let p = b.try_acquire(t).unwrap();
    b.on_result(t, Verdict::Success, o.slow_call_ms * NANOS_PER_MS, p);
    assert_eq!(b.state(t), BreakerState::Open);
}

#[test]
fn an_ignored_probe_gives_its_place_back() {
    let o = BreakerOptions {
        half_open_probes: 2,
        ..opts()
    };
    let mut b = tripped(o);
    let t = ms(o.open_ms);
    let p1 = b.try_acquire(t).unwrap();
    let p2 = b.try_acquire(t).unwrap();
    assert_eq!(b.try_acquire(t), None);
    b.on_result(t + 1, Verdict::Cancelled, 1, p1);
    assert_eq!(b.probes_taken(), 1);
    let p3 = b
        .try_acquire(t + 1)
        .expect("the cancelled probe's place is free again");
    assert_eq!(b.try_acquire(t + 1), None);
    b.on_result(t + 2, Verdict::Rejected, 1, p2);
    let p4 = b
        .try_acquire(t + 2)
        .expect("the rejected probe's place is free again");
    b.on_result(t + 3, Verdict::Success, 1, p3);
    assert_eq!(
        b.state(t + 3),
        BreakerState::HalfOpen,
        "an ignored probe is not a success"
    );
    b.on_result(t + 4, Verdict::Success, 1, p4);
    assert_eq!(b.state(t + 4), BreakerState::Closed);
}

#[test]
fn a_probe_from_an_earlier_cycle_decides_nothing() {
    let o = BreakerOptions {
        half_open_probes: 2,
        ..opts()
    };
    let mut b = tripped(o);
    let t1 = ms(o.open_ms);
    let stale = b.try_acquire(t1).unwrap(); // hangs
    let p = b.try_acquire(t1).unwrap();
    b.on_result(t1 + 1, Verdict::Failure, 1, p); // reopens
    let t2 = t1 + 1 + o.open_ms * NANOS_PER_MS;
    let q1 = b.try_acquire(t2).unwrap();
    assert_ne!(q1, stale, "a new cycle has a new tag");
    // The hung probe of cycle 1 times out now: it must neither reopen nor count as a probe.
    b.on_result(t2 + 1, Verdict::Timeout, 60_000 * NANOS_PER_MS, stale);
    assert_eq!(b.state(t2 + 1), BreakerState::HalfOpen);
    b.on_result(t2 + 2, Verdict::Cancelled, 1, stale);
    assert_eq!(
        b.probes_taken(),
        1,
        "an old probe gives back no place of the new cycle"
    );
    let q2 = b.try_acquire(t2 + 2).unwrap();
    b.on_result(t2 + 3, Verdict::Success, 1, q1);
    b.on_result(t2 + 4, Verdict::Success, 1, q2);
    assert_eq!(b.state(t2 + 4), BreakerState::Closed);
}

#[test]
fn calls_admitted_before_the_trip_are_ignored_while_open_and_half_open() {
    let o = opts();
    let mut b = Breaker::new(&o);
    let late: Vec<u32> = (0..20).map(|_| b.try_acquire(ms(0)).unwrap()).collect();
    for _ in 0..5 {
        call(&mut b, ms(1), Verdict::Failure, 0);
    }
    // Settling while open: ignored, no reopen, no change.
    let seq = b.transitions();
    b.on_result(ms(2), Verdict::Failure, 0, late[0]);
    assert_eq!(b.transitions(), seq);
    // Half-open: a non-probe failure does not reopen, a non-probe success does not close.
    let t = ms(1 + o.open_ms);
    let p = b.try_acquire(t).unwrap();
    b.on_result(t, Verdict::Failure, 0, late[1]);
    b.on_result(t, Verdict::Success, 0, late[2]);
    assert_eq!(b.state(t), BreakerState::HalfOpen);
    b.on_result(t, Verdict::Success, 0, p);
    assert_eq!(b.probes_taken(), 1);
}

#[test]
fn transitions_count_every_change() {
    let o = BreakerOptions {
        half_open_probes: 1,
        ..opts()
    };
    let mut b = tripped(o); // 1: closed → open
    let t = ms(o.open_ms);
    let p = b.try_acquire(t).unwrap(); // 2: open → half-open
    b.on_result(t, Verdict::Failure, 0, p); // 3: half-open → open
    let t2 = t + o.open_ms * NANOS_PER_MS;
    let p = b.try_acquire(t2).unwrap(); // 4: open → half-open
    b.on_result(t2, Verdict::Success, 0, p); // 5: half-open → closed
    assert_eq!(b.transitions(), 5);
    let last = b.last_transition().unwrap();
    assert_eq!(
        (last.seq, last.from, last.to, last.at, last.cause),
        (5, BreakerState::HalfOpen, BreakerState::Closed, t2, None)
    );
}

#[test]
fn a_clock_that_goes_backwards_reads_as_standing_still() {
    let o = opts();
    let mut b = tripped(o);
    // Far in the past: still open, no panic, no wrap-around.
    assert_eq!(b.try_acquire(0), None);
    assert_eq!(b.state(0), BreakerState::Open);
    assert!(b.try_acquire(ms(o.open_ms)).is_some());
    // Results stamped in the past land in the current bucket.
    let mut c = Breaker::new(&BreakerOptions {
        consecutive_failures: 1_000,
        ..o
    });
    for _ in 0..10 {
        call(&mut c, ms(100_000), Verdict::Success, 1);
    }
    for _ in 0..10 {
        call(&mut c, ms(0), Verdict::Failure, 1);
    }
    assert_eq!(c.state(ms(100_000)), BreakerState::Open);
}

#[test]
fn defaults_are_the_documented_ones() {
    // README and ADR 0200 state these; the simulator's production scenario depends on them.
    let o = BreakerOptions::default();
    assert_eq!(
        (
            o.failure_rate,
            o.slow_call_rate,
            o.slow_call_ms,
            o.minimum_calls,
            o.window_ms
        ),
        (0.5, 0.5, 5_000, 20, 30_000)
    );
    assert_eq!(
        (o.consecutive_failures, o.open_ms, o.half_open_probes),
        (5, 10_000, 3)
    );
    assert!(o.validate().is_ok());
}

#[test]
fn breaker_stays_small() {
    assert!(
        std::mem::size_of::<Breaker>() <= 512,
        "breaker is {} bytes",
        std::mem::size_of::<Breaker>()
    );
}

#[test]
fn shadow_breaker_reports_when_the_slow_call_condition_trips() {
    // The `production` scenario: 60 calls/s at 350 ms until 200 s, then the
    // upstream (50 concurrent) takes 10.4 s per call with no errors, so slow results arrive at
    // ~4.8/s from 210.4 s while the fast ones age out of the 30 s window. On the defaults the
    // slow-call rate reaches 50 % when 4.8 (t - 210.4) ≈ 60 (230 - t): t ≈ 228.5 s. The bucketed
    // window drops fast calls up to 3 s early, so it trips a little sooner.
    let mut events: Vec<(u64, u64)> = Vec::new(); // (settle time ms, latency ms)
    for k in 0..(200 * 60) {
        let start = k * 1_000 / 60;
        events.push((start + 350, 350));
    }
    for j in 0..400u64 {
        events.push((210_400 + j * 1_000 * 10 / 48, 10_400));
    }
    events.sort();
    let mut b = Breaker::new(&BreakerOptions::default());
    let mut tripped_at = None;
    for (at, lat) in events {
        if let Some(cause) = b.observe(ms(at), Verdict::Success, lat * NANOS_PER_MS) {
            tripped_at = Some((at, cause));
            break;
        }
    }
    let (at, cause) = tripped_at.expect("the slow-call condition must trip");
    assert_eq!(cause, TripCause::SlowCallRate);
    assert!((224_000..=229_000).contains(&at), "tripped at {at} ms");
    // Nothing tripped before the change.
    assert!(at > 210_000);
}
