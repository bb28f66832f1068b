//! The no-load reference latency (ADR 0113).
//!
//! - Down: it follows the smoothed window quantile whenever that is lower. A baseline above
//!   the latency it is compared with reads as a negative queue and drives the limit up, so it
//!   never survives a window (a cold first window once held it at 4 × the true latency for
//!   15 s). A single lucky fast response cannot reach it: it is one sample of a window's p90,
//!   then a median of three windows.
//! - Up, or down at once: a probe's measurement replaces it (see `probe.rs`). That is how a
//!   baseline first taken under load, or a permanent shift of the upstream's normal latency,
//!   is corrected: by looking at the upstream at low load, not by inferring it from how latency
//!   and throughput move together, which a shared upstream makes unreadable (ADR 0113).

use super::filter::LatencyFilter;
use super::tuning::{PROBE_JUMP, PROBE_WEIGHT, SURE_LOWER};

#[derive(Clone, Debug, Default)]
pub struct Baseline {
    /// ns; 0 until the first healthy window.
    pub value: f64,
}

impl Baseline {
    /// One healthy window's smoothed latency (ns).
    #[inline]
    pub fn observe(&mut self, smoothed: f64) {
        if smoothed > 0.0 && (self.value == 0.0 || smoothed < self.value) {
            self.value = smoothed;
        }
    }

    /// A probe's measurement of the no-load latency (ns), with its standard error (infinite
    /// where unknown). Far from the baseline (beyond `PROBE_JUMP` either way) or surely below
    /// it (`SURE_LOWER`) it replaces it; nearer, it moves `PROBE_WEIGHT` of the way to it, so
    /// that the noise of a p90 of a few dozen calls averages out over probes.
    /// Returns whether it jumped up: latencies measured before are then stale.
    #[inline]
    pub fn measured(&mut self, m: f64, se: f64) -> bool {
        if m <= 0.0 {
            return false;
        }
        let b = self.value;
        let up = b > 0.0 && m > b * PROBE_JUMP;
        let down = m * PROBE_JUMP < b || m + SURE_LOWER * se < b;
        self.value = if b == 0.0 || up || down {
            m
        } else {
            b + PROBE_WEIGHT * (m - b)
        };
        up
    }
}

/// One latency reading of the windows (their p90, or their mean), smoothed, with its baseline.
#[derive(Clone, Debug, Default)]
pub struct Track {
    pub filter: LatencyFilter,
    pub baseline: Baseline,
}

impl Track {
    /// A closed window's reading (ns). A full window (`minSamples` or more) may lower the
    /// baseline to the smoothed reading at once; a sparse one only to the steady average.
    pub fn close(&mut self, reading: Option<f64>, healthy: bool, full: bool) {
        let Some(x) = reading else { return };
        self.filter.push(x);
        if healthy {
            let f = &self.filter;
            self.baseline
                .observe(if full { f.smoothed } else { f.steady });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn it_follows_lower_windows_down_at_once_and_never_up() {
        let mut b = Baseline::default();
        b.observe(137.0);
        assert_eq!(b.value, 137.0, "the first window sets it");
        b.observe(34.0);
        assert_eq!(
            b.value, 34.0,
            "a cold first window does not survive the next"
        );
        b.observe(60.0);
        assert_eq!(b.value, 34.0);
    }

    #[test]
    fn a_probe_far_off_replaces_it_and_a_near_one_nudges_it() {
        let mut b = Baseline { value: 200.0 };
        assert!(
            !b.measured(100.0, f64::INFINITY),
            "down by more than a jump: replaced, not up"
        );
        assert_eq!(b.value, 100.0);
        assert!(
            b.measured(300.0, f64::INFINITY),
            "up by more than a jump: replaced"
        );
        assert_eq!(b.value, 300.0);
        assert!(!b.measured(340.0, f64::INFINITY));
        assert_eq!(b.value, 300.0 + PROBE_WEIGHT * 40.0);
        assert!(!b.measured(0.0, f64::INFINITY));
        assert_eq!(b.value, 310.0);
    }

    #[test]
    fn a_reading_surely_below_replaces_it_however_near() {
        let mut b = Baseline { value: 110.0 };
        b.measured(100.0, 1.0);
        assert_eq!(b.value, 100.0, "10 below, 1 of noise: taken whole");
        let mut b = Baseline { value: 110.0 };
        b.measured(100.0, 2.0);
        assert_eq!(
            b.value, 107.5,
            "10 below, 2 of noise: walked a quarter of the way"
        );
    }
}
