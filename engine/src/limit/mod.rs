//! Limit *algorithms* (Netflix's split): each turns samples into a concurrency limit. They own
//! no permits and read no clock; the [`Limiter`](crate::limiter::Limiter) owns permits.

mod adaptive;
mod aimd;
mod baseline;
mod filter;
mod fixed;
mod gates;
mod gradient2;
mod handovers;
mod probe;
pub mod quantile;
mod tuning;
mod vegas;
mod window;

#[cfg(test)]
mod tests;

pub use adaptive::{Adaptive, Kind};
pub use fixed::FixedLimit;

use crate::options::{Algorithm, LimiterOptions};
use crate::{Nanos, Sample};

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
    /// Probes that measured the baseline so far.
    pub probes: u32,
    /// A probe holds admission below the limit now.
    pub probing: bool,
}

/// What a closed window tells a limit algorithm (Netflix's `onSample → new limit`, per window).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reading {
    /// The limit now.
    pub limit: f64,
    /// The most calls in flight at once during the window.
    pub peak: f64,
    /// The no-load latency, ns.
    pub baseline: f64,
    /// The smoothed window quantile, ns.
    pub rtt: f64,
    /// This window's own quantile, ns (the smoothed one lags it by up to two windows).
    pub rtt_now: f64,
    /// The share of in-flight calls still waiting for their response (1 unless they stream).
    pub waiting: f64,
    /// The limit has not been cut since the key started (or came back from idle).
    pub slow_start: bool,
}

/// Enum dispatch: no allocation, no virtual call on the hot path.
// Adaptive is the default and hot: boxing it would add an allocation per key and a pointer chase
// per call to save ~0.9 KB on fixed-limit keys only (ADR 1215).
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Limit {
    Fixed(FixedLimit),
    Adaptive(Adaptive),
}

impl Limit {
    pub fn new(opts: &LimiterOptions, now: Nanos) -> Limit {
        match opts.algorithm {
            Algorithm::Fixed => Limit::Fixed(FixedLimit::new(opts.initial_limit)),
            Algorithm::Vegas => Limit::Adaptive(Adaptive::new(Kind::Vegas, opts, now)),
            Algorithm::Gradient2 => Limit::Adaptive(Adaptive::new(Kind::Gradient2, opts, now)),
            Algorithm::Aimd => Limit::Adaptive(Adaptive::new(Kind::Aimd, opts, now)),
        }
    }

    /// The learnt limit: what `stats()` reports, and what the queue's bounds are factors of.
    #[inline]
    pub fn current(&self) -> u32 {
        match self {
            Limit::Fixed(l) => l.current(),
            Limit::Adaptive(a) => a.current(),
        }
    }

    /// The limit admission obeys now: lower than `current` only while a baseline probe holds.
    #[inline]
    pub fn admit_limit(&self) -> u32 {
        match self {
            Limit::Fixed(l) => l.current(),
            Limit::Adaptive(a) => a.admit_limit(),
        }
    }

    /// Called on every acquire before the admission decision; lets an algorithm account for
    /// idle time and probe phases lazily (no timers). Must be cheap.
    #[inline]
    pub fn on_acquire(&mut self, now: Nanos, inflight: u32) {
        if let Limit::Adaptive(a) = self {
            a.on_acquire(now, inflight)
        }
    }

    /// A call was admitted (a baseline probe counts the calls it times).
    #[inline]
    pub fn on_admit(&mut self, now: Nanos) {
        if let Limit::Adaptive(a) = self {
            a.on_admit(now)
        }
    }

    /// See [`Adaptive::queued_upstream`]: never for a fixed limit.
    #[inline]
    pub fn queued_upstream(&self) -> bool {
        match self {
            Limit::Fixed(_) => false,
            Limit::Adaptive(a) => a.queued_upstream(),
        }
    }

    /// Whether the limit has been learnt from at least one window (a fixed one always is).
    #[inline]
    pub fn sized(&self) -> bool {
        match self {
            Limit::Fixed(_) => true,
            Limit::Adaptive(a) => a.sized(),
        }
    }

    /// The latency a call can expect now (the smoothed window quantile), ns; 0 when unknown.
    #[inline]
    pub fn expected_latency_ns(&self) -> f64 {
        match self {
            Limit::Fixed(_) => 0.0,
            Limit::Adaptive(a) => a.expected_latency_ns(),
        }
    }

    /// The limiter's smoothed tail (ns): how long calls hold their slot after their response
    /// started. A fixed limit has no use for it.
    #[inline]
    pub fn note_tail(&mut self, tail_ns: f32) {
        if let Limit::Adaptive(a) = self {
            a.note_tail(tail_ns);
        }
    }

    /// See [`Adaptive::late_after`]: `None` for a fixed limit.
    #[inline]
    pub fn late_after(&self, now: Nanos, s: &Sample) -> Option<Nanos> {
        match self {
            Limit::Fixed(_) => None,
            Limit::Adaptive(a) => a.late_after(now, s),
        }
    }

    /// See [`Adaptive::note_late`].
    #[inline]
    pub fn note_late(&mut self, late: u32, now: Nanos, after: Nanos) {
        if let Limit::Adaptive(a) = self {
            a.note_late(late, now, after);
        }
    }

    /// One settled call, with the calls still in flight after it. `Rejected` and `Cancelled`
    /// verdicts never arrive here.
    #[inline]
    pub fn on_sample(&mut self, now: Nanos, sample: &Sample, inflight: u32) {
        match self {
            Limit::Fixed(_) => {}
            Limit::Adaptive(a) => a.on_sample(now, sample, inflight),
        }
    }

    pub fn stats(&self) -> LimitStats {
        match self {
            Limit::Fixed(l) => LimitStats {
                limit: l.current(),
                ..LimitStats::default()
            },
            Limit::Adaptive(a) => a.stats(),
        }
    }
}
