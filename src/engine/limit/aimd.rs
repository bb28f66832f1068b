//! AIMD (spec §4.3), only when selected: error-driven. +1 per evaluation interval with healthy
//! calls and demand (Netflix AIMDLimit adds 1 per sample; per 100 ms keeps it from racing at
//! high rates); multiplicative decrease by `backoffRatio` (0.9, Netflix's default, not the 0.5
//! the spec's audit found) on overload, squared on timeout (shared with the other algorithms).

#[inline]
pub fn increase(limit: f64) -> f64 {
    limit + 1.0
}
