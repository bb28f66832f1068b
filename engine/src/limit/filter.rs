//! Uber's aggregation ("take a percentile … and smoothe the percentile" with a "median filter"
//! and "exponential smoothing"). Median of the last 3 window quantiles (width 3: ours, the
//! smallest that rejects one outlier window; failsafe-go uses 5, which at 30 s windows is a
//! 2.5 minute lag), then an EMA with alpha = 1/3 (failsafe-go's "age 5": 2/(5+1)) for rises;
//! a fall is taken at once (the median already demands two good windows).

use super::tuning::SMOOTHING_ALPHA;

#[derive(Clone, Debug, Default)]
pub struct LatencyFilter {
    recent: [f32; 3],
    idx: u8,
    n: u8,
    /// The last median, in ns (0 = none yet).
    pub median: f64,
    /// The smoothed latency in ns (0 = none yet).
    pub smoothed: f64,
    /// A symmetric EMA of the median (ns): what the baseline's running minimum follows. The
    /// fast-falling `smoothed` dips with every lucky low median, and at low traffic (p90 of ~4
    /// calls) a minimum over those dips sits well under the typical latency: the simulator's
    /// low-traffic run then read a permanent queue and never healed.
    pub steady: f64,
}

impl LatencyFilter {
    pub fn reset(&mut self) {
        *self = LatencyFilter::default();
    }

    /// Push one window quantile (ns); returns the smoothed latency.
    pub fn push(&mut self, q: f64) -> f64 {
        self.recent[self.idx as usize] = q as f32;
        self.idx = (self.idx + 1) % 3;
        self.n = (self.n + 1).min(3);
        let have = self.n as usize;
        let med = match have {
            1 => q,
            2 => ((self.recent[0] + self.recent[1]) / 2.0) as f64,
            _ => {
                let [a, b, c] = self.recent;
                a.max(b).min(a.min(b).max(c)) as f64
            }
        };
        self.median = med;
        self.steady = if self.steady == 0.0 {
            med
        } else {
            self.steady + SMOOTHING_ALPHA * (med - self.steady)
        };
        // Up: the EMA. Down: straight to the median. The median of three already needs two
        // good windows, and healing after an incident is where limiters get stuck (ADR 0103).
        self.smoothed = if self.smoothed == 0.0 || med < self.smoothed {
            med
        } else {
            self.smoothed + SMOOTHING_ALPHA * (med - self.smoothed)
        };
        self.smoothed
    }
}
