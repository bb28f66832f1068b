//! Limit *algorithms* (Netflix's split): each turns samples into a concurrency limit. They own
//! no permits and read no clock; the [`Limiter`](crate::engine::limiter::Limiter) owns permits.

mod fixed;
pub mod quantile;

pub use fixed::FixedLimit;

use crate::engine::options::{Algorithm, LimiterOptions};
use crate::engine::{Nanos, Sample};

/// What an algorithm reports to `stats()`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LimitStats {
    /// The current limit.
    pub limit: u32,
    /// The no-load reference latency in ms (0 when the algorithm has none yet).
    pub baseline_ms: f64,
    /// The smoothed latency the algorithm compares against the baseline, in ms.
    pub smoothed_ms: f64,
    /// Samples in the window being filled.
    pub window_samples: u32,
}

/// Enum dispatch: no allocation, no virtual call on the hot path.
#[derive(Clone, Debug)]
pub enum Limit {
    Fixed(FixedLimit),
}

impl Limit {
    pub fn new(opts: &LimiterOptions, _now: Nanos) -> Limit {
        match opts.algorithm {
            // The adaptive algorithms arrive with the issue "The adaptive limit".
            Algorithm::Fixed | Algorithm::Vegas | Algorithm::Gradient2 | Algorithm::Aimd => {
                Limit::Fixed(FixedLimit::new(opts.initial_limit))
            }
        }
    }

    /// The limit in force now.
    #[inline]
    pub fn current(&self) -> u32 {
        match self {
            Limit::Fixed(l) => l.current(),
        }
    }

    /// Called on every acquire before the admission decision; lets an algorithm account for
    /// idle time lazily (spec §9.5: no timers). Must be cheap.
    #[inline]
    pub fn on_acquire(&mut self, _now: Nanos, _inflight: u32) {}

    /// One settled call. `Rejected` and `Cancelled` verdicts never arrive here.
    #[inline]
    pub fn on_sample(&mut self, _now: Nanos, _sample: &Sample) {
        match self {
            Limit::Fixed(_) => {}
        }
    }

    pub fn stats(&self) -> LimitStats {
        match self {
            Limit::Fixed(l) => LimitStats {
                limit: l.current(),
                ..LimitStats::default()
            },
        }
    }
}
