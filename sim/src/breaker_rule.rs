//! The breaker's documented trip rule (ADR 0200, `BreakerOptions` defaults),
//! computed independently of engine/src/breaker.rs as a cross-check of the production
//! scenario's trip time: open when, over the last `window_ms` of results and with at least
//! `minimum_calls` of them, the slow fraction (latency ≥ `slow_call_ms`, honouring mark) or
//! the failure fraction (failure or timeout) reaches its threshold; or on
//! `consecutive_failures` failures in a row.

use std::collections::VecDeque;

use resilix_engine::{BreakerOptions, Nanos, Verdict, NANOS_PER_MS};

pub struct BreakerRule {
    opts: BreakerOptions,
    window: VecDeque<(Nanos, bool, bool)>,
    slow: u32,
    failed: u32,
    consecutive: u32,
}

impl BreakerRule {
    pub fn new(opts: BreakerOptions) -> Self {
        BreakerRule {
            opts,
            window: VecDeque::new(),
            slow: 0,
            failed: 0,
            consecutive: 0,
        }
    }

    /// Record one result; `true` when the rule trips (the rule then starts afresh).
    pub fn on_result(&mut self, now: Nanos, verdict: Verdict, latency_ns: u64) -> bool {
        if verdict.is_ignored() {
            return false;
        }
        let failed = matches!(verdict, Verdict::Failure | Verdict::Timeout);
        let slow = latency_ns >= self.opts.slow_call_ms * NANOS_PER_MS;
        let window = self.opts.window_ms * NANOS_PER_MS;
        while let Some(&(t, s, f)) = self.window.front() {
            if now.saturating_sub(t) < window {
                break;
            }
            self.window.pop_front();
            self.slow -= s as u32;
            self.failed -= f as u32;
        }
        self.window.push_back((now, slow, failed));
        self.slow += slow as u32;
        self.failed += failed as u32;
        self.consecutive = if failed { self.consecutive + 1 } else { 0 };
        let n = self.window.len() as f64;
        let by_rate = self.window.len() as u32 >= self.opts.minimum_calls
            && (self.slow as f64 / n >= self.opts.slow_call_rate
                || self.failed as f64 / n >= self.opts.failure_rate);
        let trip = by_rate || self.consecutive >= self.opts.consecutive_failures;
        if trip {
            *self = BreakerRule::new(self.opts);
        }
        trip
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    #[test]
    fn trips_on_half_slow_once_the_minimum_volume_is_reached() {
        let mut r = BreakerRule::new(BreakerOptions::default());
        for i in 0..19 {
            assert!(!r.on_result(
                i * S / 10,
                Verdict::Success,
                if i % 2 == 0 { 6 * S } else { S / 10 }
            ));
        }
        // The 20th call makes 10 of 20 slow: 0.5 ≥ slowCallRate.
        assert!(r.on_result(2 * S, Verdict::Success, S / 10));
    }

    #[test]
    fn old_results_leave_the_window() {
        let mut r = BreakerRule::new(BreakerOptions::default());
        for i in 0..15 {
            assert!(!r.on_result(i * S / 10, Verdict::Success, 6 * S));
        }
        // 40 s later those 15 slow calls are gone: 10 fast ones do not reach the volume.
        for i in 0..10 {
            assert!(!r.on_result(40 * S + i, Verdict::Success, S / 10));
        }
    }

    #[test]
    fn consecutive_failures_trip_whatever_the_volume() {
        let mut r = BreakerRule::new(BreakerOptions::default());
        for i in 0..4 {
            assert!(!r.on_result(i, Verdict::Timeout, 0));
        }
        assert!(r.on_result(5, Verdict::Failure, 0));
    }
}
