//! Per-window quantile estimators. Both are fixed-size and never allocate.
//! `Hybrid` (the ring while exact, P² beyond) is shipped: see
//! `docs/adr/0101-quantile-estimator.md`; the error table is in BENCHMARKS.md.

pub mod hybrid;
pub mod p2;
pub mod ring;

pub use hybrid::Hybrid;

/// What a window needs from an estimator.
pub trait QuantileEstimator {
    /// Forget everything (a new window).
    fn clear(&mut self);
    /// Add one latency in nanoseconds.
    fn add(&mut self, x: f64);
    /// The estimate, `None` when nothing was added since `clear`.
    fn quantile(&self) -> Option<f64>;
}

#[cfg(test)]
mod compare;
