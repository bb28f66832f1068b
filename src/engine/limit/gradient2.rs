//! Gradient2 (spec §4.2): Netflix's smoothed update with Envoy's sqrt(limit) headroom (not
//! configurable). One change (ADR 0105): headroom is added only when the gradient is 1, i.e.
//! latency is within `rttTolerance` of the baseline. With headroom always added, a modest
//! overload (gradient ≈ 0.8) still grows the limit while sqrt(L) > 0.2·L, the creep of
//! Netflix PR #134.

pub fn next(limit: f64, baseline: f64, rtt: f64, tolerance: f64, smoothing: f64) -> f64 {
    let gradient = (tolerance * baseline / rtt).clamp(0.5, 1.0);
    let headroom = if gradient >= 1.0 { limit.sqrt() } else { 0.0 };
    let target = limit * gradient + headroom;
    limit * (1.0 - smoothing) + target * smoothing
}
