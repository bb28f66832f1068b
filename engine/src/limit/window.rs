//! One measurement window: the latencies for the quantile, plus what the gates need (health,
//! peak inflight, how many calls started after the limit last moved). Closing rule (ADR 0103):
//! a window may close once it is `window_min` old AND holds enough samples, where "enough"
//! falls linearly from `min_samples` at `window_min` to 1 at `window_max`. A busy key closes
//! every 2 s; at 8 calls a minute a window closes at 30 s with whatever it has.

use super::quantile::{Hybrid, QuantileEstimator};
use crate::Nanos;

#[derive(Clone, Debug)]
pub struct Window {
    pub start: Nanos,
    /// Every sample that reached the algorithm, latency or not.
    pub count: u32,
    /// Samples that carried a latency (all but overloads).
    pub latencies: u32,
    sum_latency: f64,
    sum_duration: f64,
    /// Successes and answered calls: evidence of health.
    pub healthy: u32,
    /// Healthy calls counted late while in flight (queued at the upstream, ADR 0118): they
    /// carry no latency.
    pub late: u16,
    /// Calls in flight still without their first byte long past the usual, counted by the
    /// limiter's owner for the evaluation at hand (ADR 0118); 0 unless calls stream.
    pub late_now: u16,
    /// Highest `inflight` reported by a sample: the demand the window saw.
    pub peak_inflight: u32,
    /// Samples whose call started at or after the limit last moved (counted by `Adaptive` for
    /// the once-per-round-trip gates, ADR 0112).
    pub fresh: u32,
    estimator: Hybrid,
}

impl Window {
    pub fn new(q: f64, now: Nanos) -> Self {
        Window {
            start: now,
            count: 0,
            latencies: 0,
            sum_latency: 0.0,
            sum_duration: 0.0,
            healthy: 0,
            late: 0,
            late_now: 0,
            peak_inflight: 0,
            fresh: 0,
            estimator: Hybrid::new(q),
        }
    }

    pub fn reset(&mut self, now: Nanos) {
        self.start = now;
        self.count = 0;
        self.latencies = 0;
        self.sum_latency = 0.0;
        self.sum_duration = 0.0;
        self.healthy = 0;
        self.late = 0;
        self.peak_inflight = 0;
        self.fresh = 0;
        self.estimator.clear();
    }

    /// Count a sample; `latency_ns` is `None` for a verdict that carries no latency.
    #[inline]
    pub fn add(&mut self, latency_ns: Option<f64>, duration_ns: f64, inflight: u32, healthy: bool) {
        self.count += 1;
        self.peak_inflight = self.peak_inflight.max(inflight);
        if healthy {
            self.healthy += 1;
        }
        if let Some(l) = latency_ns {
            self.latencies += 1;
            if healthy {
                self.sum_latency += l;
                self.sum_duration += duration_ns.max(l);
            }
            self.estimator.add(l);
        }
    }

    /// The window's latency quantile in ns.
    /// The share of its slot time a healthy call spent waiting for its response (latency over
    /// duration): 1 for a plain call, ~0.01 for a 45 s stream whose first token came at 0.3 s.
    /// By Little's law it is the share of the calls in flight that the upstream can be
    /// queueing (ADR 0113).
    pub fn waiting_share(&self) -> f64 {
        if self.sum_duration > 0.0 {
            (self.sum_latency / self.sum_duration).min(1.0)
        } else {
            1.0
        }
    }

    /// The mean latency of the healthy calls: a timeout's latency is cut short by the caller's
    /// deadline (and may have been spent in our queue), a failure's is censored.
    pub fn mean(&self) -> Option<f64> {
        let n = self.healthy.saturating_sub(self.late as u32);
        (n > 0).then(|| self.sum_latency / n as f64)
    }

    pub fn quantile(&self) -> Option<f64> {
        self.estimator.quantile()
    }

    /// Age-based closing with a sample requirement that decays with age.
    #[inline]
    pub fn ready(&self, now: Nanos, min_ns: u64, max_ns: u64, min_samples: u32) -> bool {
        let age = now.saturating_sub(self.start);
        if self.count == 0 || age < min_ns {
            return false;
        }
        if age >= max_ns || self.count >= min_samples {
            return true;
        }
        let span = (max_ns - min_ns).max(1) as f64;
        let frac = (age - min_ns) as f64 / span; // 0 at window_min, 1 at window_max
        let needed = min_samples as f64 - (min_samples as f64 - 1.0) * frac;
        self.count as f64 >= needed
    }
}
