//! AIMD, only when selected: error-driven. +1 per evaluation interval with healthy calls and
//! demand (Netflix AIMDLimit adds 1 per sample; per 100 ms keeps it from racing at high
//! rates); multiplicative decrease by `backoffRatio` (0.9, Netflix's default) on overload,
//! squared on timeout (shared with the other algorithms). Latency windows never move it.

use super::Reading;

#[inline]
pub fn increase(limit: f64) -> f64 {
    limit + 1.0
}

/// Latency is not AIMD's signal: a window holds the limit.
#[inline]
pub fn on_window(r: &Reading) -> f64 {
    r.limit
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increases_by_one_and_ignores_latency() {
        assert_eq!(increase(7.0), 8.0);
        let r = Reading {
            limit: 30.0,
            peak: 30.0,
            baseline: 10.0,
            rtt: 1000.0,
            rtt_now: 1000.0,
            waiting: 1.0,
            slow_start: false,
        };
        assert_eq!(on_window(&r), 30.0);
    }
}
