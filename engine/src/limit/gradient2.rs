//! Gradient2: Netflix's smoothed update with Envoy's sqrt(limit) headroom (not configurable).
//! One change (ADR 0105): headroom is added only when the gradient is 1, i.e. latency is within
//! `rttTolerance` of the baseline. With headroom always added, a modest overload (gradient
//! ≈ 0.8) still grows the limit while sqrt(L) > 0.2·L, the creep of Netflix PR #134.

use super::Reading;

pub fn on_window(r: &Reading, tolerance: f64, smoothing: f64) -> f64 {
    let gradient = (tolerance * r.baseline / r.rtt).clamp(0.5, 1.0);
    let headroom = if gradient >= 1.0 { r.limit.sqrt() } else { 0.0 };
    let target = r.limit * gradient + headroom;
    r.limit * (1.0 - smoothing) + target * smoothing
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(limit: f64, baseline: f64, rtt: f64) -> f64 {
        let r = Reading {
            limit,
            peak: limit,
            baseline,
            rtt,
            rtt_now: rtt,
            waiting: 1.0,
            slow_start: false,
        };
        on_window(&r, 1.5, 0.2)
    }

    #[test]
    fn within_tolerance_it_grows_by_a_fifth_of_sqrt_l() {
        // gradient min(1, 1.5 × 50/60) = 1: 0.8 × 16 + 0.2 × (16 + 4) = 16.8.
        assert!((at(16.0, 50.0, 60.0) - 16.8).abs() < 1e-9);
    }

    #[test]
    fn past_tolerance_it_shrinks_in_proportion() {
        // gradient 1.5 × 50/100 = 0.75: 0.8 × 40 + 0.2 × 30 = 38.
        assert!((at(40.0, 50.0, 100.0) - 38.0).abs() < 1e-9);
        // The gradient is floored at 0.5: 0.8 × 40 + 0.2 × 20 = 36.
        assert!((at(40.0, 50.0, 1000.0) - 36.0).abs() < 1e-9);
    }

    #[test]
    fn at_gradient_0_8_any_limit_shrinks() {
        // Netflix PR #134: no creep under modest overload.
        for l in [4.0, 10.0, 50.0, 200.0] {
            assert!(at(l, 80.0, 150.0) < l, "{l}");
        }
    }
}
