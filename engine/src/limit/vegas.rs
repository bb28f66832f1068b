//! Vegas: Netflix VegasLimit's update rule on windowed, smoothed latency, with a proportional
//! decrease. alpha/beta use f(L) = max(1, floor(log10 L)) as Netflix's code does (ADR 0104):
//! exactly Brakmo & Peterson's 3 and 6 queued calls below a limit of 100.

use super::tuning::{RAISE_BELOW_30, SMALL_ALPHA, SMALL_ALPHA_UNTIL, SMALL_LIMIT_QUEUE};
use super::Reading;

/// f(L): Netflix's log10 factor, at least 1.
#[inline]
pub fn log_factor(limit: f64) -> f64 {
    limit.max(1.0).log10().floor().max(1.0)
}

/// Vegas's alpha and beta, in calls queued at the upstream by this process: 3·f(L) and 4·f(L)
/// from a limit of 30 (Brakmo & Peterson's 3 queued calls on a fast path), and below it
/// `SMALL_ALPHA` and one more up to a limit of 20, rising to 3 and 4 at 30. Three queued calls
/// against a capacity of 10 are 30 % more latency for nothing (ADR 0113).
/// The same number of calls for every process, whatever its limit, is what lets processes that
/// share an upstream settle at equal shares (Low, Peterson and Wang's analysis of TCP Vegas): a
/// share of the limit held any split (ADR 0122).
#[inline]
pub fn thresholds(limit: f64) -> (f64, f64) {
    let f = log_factor(limit);
    let alpha = if limit >= 30.0 {
        3.0 * f
    } else {
        SMALL_ALPHA + (3.0 - SMALL_ALPHA) * ((limit - SMALL_ALPHA_UNTIL) / 10.0).clamp(0.0, 1.0)
    };
    (alpha, alpha + f)
}

/// The thresholds as a share of the limit below 30 (a tenth and a fifth), for streams (calls
/// that spend most of their slot past the first byte): with one call against 4 slots
/// (`llm-slots-4` in the simulator) throughput fell from 97.5 to 84.5 % (ADR 0122).
#[inline]
pub fn share_thresholds(limit: f64) -> (f64, f64) {
    let f = log_factor(limit);
    let alpha = (3.0 * f).min(SMALL_LIMIT_QUEUE * limit);
    (alpha, alpha + f.min(alpha))
}

/// The next limit. The queue our calls cause is estimated on the concurrency the window
/// actually reached (at most the limit), counting only the share of it still waiting for a
/// response (a stream past its first token holds a slot but queues nothing):
/// `queue = inflight × waiting × (1 − baseline / latency)`, not rounded: Netflix rounds it up,
/// and a call's rounding against a band one call wide cuts the smaller of two
/// processes that read the same latency while the larger holds (ADR 0121).
/// - queue ≤ f: no queue at all, `+beta`, or `RAISE_BELOW_30` below 30 for calls that mostly
///   wait for their response (`+6f` in slow start);
/// - queue < alpha: `+f`;
/// - queue > beta: the queue beyond alpha is removed in one step, down to the concurrency that
///   causes no queue plus alpha (ADR 0113: −f per window took 30 windows to shed 30 calls). It
///   is computed on the window's own latency when that is already lower than the smoothed
///   one, which lags a cut by up to two windows; and it is never less than `−f`;
/// - otherwise hold.
pub fn on_window(r: &Reading) -> f64 {
    let f = log_factor(r.limit);
    let (alpha, beta) = if r.waiting > 0.5 {
        thresholds(r.limit)
    } else {
        share_thresholds(r.limit)
    };
    let inflight = r.peak.min(r.limit);
    let waiting = inflight * r.waiting;
    let queue = waiting * (1.0 - r.baseline / r.rtt);
    if queue <= f {
        let raise = if alpha < 3.0 * f && r.waiting > 0.5 {
            RAISE_BELOW_30 * f
        } else {
            beta
        };
        r.limit + if r.slow_start { 6.0 * f } else { raise }
    } else if queue < alpha {
        r.limit + f
    } else if queue > beta {
        let rtt = r.rtt.min(r.rtt_now).max(r.baseline);
        let excess = waiting * (1.0 - r.baseline / rtt) - alpha;
        (r.limit - f).min(inflight - excess)
    } else {
        r.limit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(limit: f64, peak: f64, baseline: f64, rtt: f64) -> Reading {
        Reading {
            limit,
            peak,
            baseline,
            rtt,
            rtt_now: rtt,
            waiting: 1.0,
            slow_start: false,
        }
    }

    /// The latency at which `limit` calls in flight read `queue` calls queued.
    fn rtt_for(limit: f64, queue: f64, baseline: f64) -> f64 {
        baseline / (1.0 - queue / limit)
    }

    #[test]
    fn log_factor_is_one_below_100_then_floor_log10() {
        assert_eq!(log_factor(0.5), 1.0);
        assert_eq!(log_factor(20.0), 1.0);
        assert_eq!(log_factor(99.0), 1.0);
        assert_eq!(log_factor(100.0), 2.0);
        assert_eq!(log_factor(999.0), 2.0);
    }

    #[test]
    fn thresholds_are_1_and_2_queued_calls_below_20_rising_to_3_and_4_at_30() {
        assert_eq!(thresholds(60.0), (3.0, 4.0));
        assert_eq!(thresholds(30.0), (3.0, 4.0));
        assert_eq!(thresholds(25.0), (2.0, 3.0));
        assert_eq!(thresholds(20.0), (1.0, 2.0));
        assert_eq!(thresholds(8.0), (1.0, 2.0));
        // f = 2 from 100: alpha 6, beta 8.
        assert_eq!(thresholds(150.0), (6.0, 8.0));
        // Streams: a tenth and a fifth of the limit below 30.
        assert_eq!(share_thresholds(20.0), (2.0, 3.0));
        assert_eq!(share_thresholds(8.0), (0.8, 1.6));
        assert_eq!(share_thresholds(60.0), (3.0, 4.0));
    }

    #[test]
    fn no_queue_raises_by_a_constant_step_below_30_by_beta_above_and_by_6f_in_slow_start() {
        assert_eq!(on_window(&reading(20.0, 20.0, 50.0, 50.0)), 22.0);
        assert_eq!(on_window(&reading(5.0, 5.0, 50.0, 50.0)), 7.0);
        // 20 × (1 − 50/52) = 0.77 ≤ f: still no queue.
        assert_eq!(on_window(&reading(20.0, 20.0, 50.0, 52.0)), 22.0);
        assert_eq!(on_window(&reading(60.0, 60.0, 50.0, 50.0)), 64.0);
        let slow = Reading {
            slow_start: true,
            ..reading(20.0, 20.0, 50.0, 50.0)
        };
        assert_eq!(on_window(&slow), 26.0);
    }

    #[test]
    fn a_small_queue_raises_by_f() {
        // 60 in flight, 2 queued: between f and alpha (3).
        assert_eq!(
            on_window(&reading(60.0, 60.0, 50.0, rtt_for(60.0, 2.0, 50.0))),
            61.0
        );
    }

    #[test]
    fn alpha_to_beta_holds() {
        for q in [3.0, 3.5, 4.0] {
            assert_eq!(
                on_window(&reading(60.0, 60.0, 50.0, rtt_for(60.0, q, 50.0))),
                60.0,
                "{q}"
            );
        }
        assert_eq!(
            on_window(&reading(20.0, 20.0, 50.0, rtt_for(20.0, 1.5, 50.0))),
            20.0
        );
    }

    #[test]
    fn processes_of_one_fleet_keep_the_same_queue_whatever_their_limits() {
        // One upstream, read alike by two processes at 20 and 8: 12 % above the baseline, so
        // 2.4 and 0.96 calls queued. A tenth to a fifth of the limit (2-4 and 0.8-1.6) held
        // the 20 and raised the 8; one to two calls each cut the 20 and raise the 8.
        let (base, rtt) = (100.0, 100.0 / 0.88);
        let big = on_window(&reading(20.0, 20.0, base, rtt));
        assert!((big - 18.6).abs() < 1e-9, "{big}");
        assert_eq!(on_window(&reading(8.0, 8.0, base, rtt)), 10.0);
    }

    #[test]
    fn just_above_beta_removes_the_queue_beyond_alpha() {
        // 60 in flight, 4.5 queued → ceil 5 > beta 4: the 1.5 beyond alpha go, min(59, 58.5).
        let next = on_window(&reading(60.0, 60.0, 50.0, rtt_for(60.0, 4.5, 50.0)));
        assert!((next - 58.5).abs() < 1e-9, "{next}");
        // 4.1 queued: the 1.1 beyond alpha go.
        let next = on_window(&reading(60.0, 60.0, 50.0, rtt_for(60.0, 4.1, 50.0)));
        assert!((next - 58.9).abs() < 1e-9, "{next}");
    }

    #[test]
    fn a_deep_queue_is_removed_in_one_step() {
        // 60 in flight at 5 × the baseline: 12 cause no queue, so 12 + alpha.
        assert!((on_window(&reading(60.0, 60.0, 100.0, 500.0)) - 15.0).abs() < 1e-9);
        // The same on 40 in flight (demand below the limit): 8 + 3.
        assert!((on_window(&reading(60.0, 40.0, 100.0, 500.0)) - 11.0).abs() < 1e-9);
    }

    #[test]
    fn the_cut_uses_the_windows_own_latency_when_it_already_fell() {
        // Smoothed 500 lags; this window read 200: 60 × 100/200 + 3 = 33.
        let r = Reading {
            rtt_now: 200.0,
            ..reading(60.0, 60.0, 100.0, 500.0)
        };
        assert!((on_window(&r) - 33.0).abs() < 1e-9);
        // A window faster than the baseline reads no queue: only −f.
        let r = Reading {
            rtt_now: 10.0,
            ..reading(60.0, 60.0, 100.0, 500.0)
        };
        assert_eq!(on_window(&r), 59.0);
    }

    #[test]
    fn streams_past_their_first_token_queue_nothing() {
        // 16 streams in flight, each waiting for its response 1 % of its slot time, at twice
        // the baseline latency: 16 × 0.01 × 0.5 = 0.08 ≤ f, no queue to speak of.
        let r = Reading {
            waiting: 0.01,
            ..reading(20.0, 16.0, 100.0, 200.0)
        };
        assert_eq!(on_window(&r), 23.0, "streams raise by beta");
        // The same 16 as plain calls: 8 queued, cut to 8 + alpha.
        assert!((on_window(&reading(20.0, 16.0, 100.0, 200.0)) - 9.0).abs() < 1e-9);
    }

    #[test]
    fn processes_that_read_the_same_latency_hold_alike_whatever_their_limits() {
        // Two processes of a fleet, 9 and 14 in flight, at the same latency: 1.27 and 1.97
        // calls queued, each within its band (1 to 2). Rounded up, the 2 calls of the smaller
        // would be above a beta of a fifth of its limit (1.88) and cut it alone.
        let (base, rtt) = (101.8, 118.5);
        assert_eq!(on_window(&reading(9.4, 9.0, base, rtt)), 9.4);
        assert_eq!(on_window(&reading(14.4, 14.0, base, rtt)), 14.4);
    }

    #[test]
    fn above_100_the_thresholds_double() {
        // f = 2: alpha 6, beta 8. 150 in flight, 7 queued: hold.
        assert_eq!(
            on_window(&reading(150.0, 150.0, 50.0, rtt_for(150.0, 7.0, 50.0))),
            150.0
        );
        // No queue: +beta.
        assert_eq!(on_window(&reading(150.0, 150.0, 50.0, 50.0)), 158.0);
    }
}
