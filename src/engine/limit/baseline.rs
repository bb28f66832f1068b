//! The no-load reference latency (spec §5.3, Uber's shape; ADR 0102).
//!
//! - Down: it follows the *smoothed* window quantile when that is lower. A single lucky fast
//!   response cannot reach it: it is one sample of a window's p90, then a median of three
//!   windows, then an EMA (Netflix #37/#34).
//! - Up: only by a correlation reset. When over a memory of `correlationWindow` windows more
//!   inflight bought more throughput (corr ≥ 0.7), and over the recent `correlationWindow / 5`
//!   windows it still did (≥ 0.7) without buying latency (corr ≤ 0.3), the
//!   upstream was not queueing, so the latency seen now *is* its no-load latency: the baseline
//!   resets to it. That is how a permanent shift of the upstream's normal latency is learnt.
//!   In a saturation incident more inflight buys only latency, so it never resets upward
//!   (failsafe-go #127, Netflix #165).
//! - Only windows whose calls were mostly healthy (success/answered) are shown to it: a
//!   timeout or failure latency is evidence of trouble, not of the upstream's normal.

use super::correlation::Correlation;

/// corr(inflight, throughput) at or above which more concurrency "buys throughput". Ours, a guess
/// between failsafe-go's 0.3 veto line and certainty.
pub const RESET_THROUGHPUT_CORR: f64 = 0.7;
/// corr(inflight, latency) at or below which latency did not grow with concurrency. Ours, a guess
/// (failsafe-go treats > 0.5 as "latency grows with inflight").
pub const RESET_LATENCY_CORR: f64 = 0.3;

/// d ln(throughput) / d ln(inflight) at or above which more concurrency bought throughput in
/// proportion (1 with no queue, 0 saturated). Ours, a guess halfway: on a real upstream
/// starting above its capacity, noise in a saturated regime correlated at ≥ 0.7 and reset the
/// baseline up to the loaded latency (limit 20 → 82 against a capacity of 8).
pub const RESET_ELASTICITY: f64 = 0.5;

/// A reset also needs the window at hand to look like the evidence (within 25 % of its
/// mean): the first window of an incident is not the new normal. Ours, a guess.
pub const STABLE_LATENCY: f64 = 1.25;

/// A window whose latency is this far from the recent mean (either way) starts a new regime.
/// Ours, a guess: well above window-to-window noise of a p90, well below an incident.
pub const REGIME_JUMP: f64 = 2.0;

#[derive(Clone, Debug)]
pub struct Baseline {
    /// ns; 0 until the first healthy window.
    pub value: f64,
    corr: Correlation,
    /// The same with a memory of `min_windows`: a reset needs the evidence to hold *now* too.
    /// Across a regime change (healthy at high inflight, then an incident at lower inflight)
    /// the long memory alone reads "more inflight, more throughput"; the short one sees the
    /// incident's latency growing with inflight and vetoes the reset.
    recent: Correlation,
    /// Windows of evidence needed before a reset or a saturation verdict.
    min_windows: u32,
    /// Upward resets so far (stats/tests).
    pub resets: u32,
    /// The algorithm cut the limit on latency at the last window (see `note_cut`).
    cutting: bool,
}

impl Baseline {
    pub fn new(correlation_window: u32) -> Self {
        let min_windows = (correlation_window / 5).max(5);
        Baseline {
            value: 0.0,
            corr: Correlation::new(correlation_window),
            recent: Correlation::new(min_windows),
            min_windows,
            resets: 0,
            cutting: false,
        }
    }

    /// One healthy window: the smoothed latency, the window's own quantile (ns: the
    /// correlation wants the raw window, not a filter lagging behind inflight) and its mean inflight.
    pub fn observe(&mut self, smoothed: f64, steady: f64, median: f64, mean_inflight: f64) {
        let m = self.recent.mean_latency();
        if self.recent.len() > 0 && (median > REGIME_JUMP * m || median * REGIME_JUMP < m) {
            // A regime change (an incident starts or ends, a deploy): windows from before and
            // after must not be correlated with each other, or "high inflight & fast, then low
            // inflight & slow" reads as "more inflight buys throughput".
            self.forget();
        }
        if median > 0.0 && mean_inflight > 0.0 {
            // Little's law: throughput = inflight / latency (failsafe-go's estimate). Measured
            // throughput (calls per second) was tried (ADR 0111): it let the saturation verdict
            // form sooner on a real upstream but slowed the simulator's recovery after
            // `uniform-timeouts` from 15 s to 130 s.
            self.corr
                .push(mean_inflight, mean_inflight / median, median);
            self.recent
                .push(mean_inflight, mean_inflight / median, median);
        }
        if self.value == 0.0 || steady < self.value {
            self.value = steady;
        } else if self.corr.len() >= self.min_windows
            && self.corr.throughput() >= RESET_THROUGHPUT_CORR
            && self.recent.len() >= self.min_windows
            && self.recent.varied()
            && self.recent.throughput() >= RESET_THROUGHPUT_CORR
            && self.recent.throughput_elasticity() >= RESET_ELASTICITY
            && self.recent.latency() <= RESET_LATENCY_CORR
            && median <= STABLE_LATENCY * self.recent.mean_latency()
        {
            // To the latency the evidence was gathered at, not past it: a window that just
            // turned bad (the first of an incident) must not become the new normal.
            self.value = smoothed.min(self.recent.mean_latency()).max(self.value);
            self.corr.clear();
            self.recent.clear();
            self.resets += 1;
        }
    }

    /// Take `latency` as the no-load reference outright (the floor reset, see `Adaptive`).
    pub fn reset_to(&mut self, latency: f64) {
        self.value = latency;
        self.forget();
        self.resets += 1;
    }

    /// Whether the algorithm cut the limit on latency at this window. The first cut of a run
    /// marks a change of the upstream (its capacity fell): the recent evidence, which a reset
    /// needs to hold *now*, restarts there. Across a capacity drop "fewer in flight, less
    /// throughput" read as "more inflight buys throughput" and reset the baseline up to the
    /// degraded latency (a real upstream halved from 8 to 4: the limit climbed back to 28,
    /// `__test__/upstream-limit.test.mjs`). Windows during the drain stay: when latency does
    /// not fall as inflight does, the drain itself is the evidence of a permanent shift of
    /// the upstream's normal latency. The long memory stays too: the saturation verdict
    /// needs it.
    pub fn note_cut(&mut self, cut: bool) {
        if cut && !self.cutting {
            self.recent.clear();
        }
        self.cutting = cut;
    }

    /// Drop the correlation evidence (a regime change, or the limit was cut by drops).
    pub fn forget(&mut self) {
        self.corr.clear();
        self.recent.clear();
    }

    #[cfg(test)]
    pub fn debug(&self) -> String {
        format!(
            "long n={} thr={:.2} lat={:.2} | recent n={} varied={} thr={:.2} lat={:.2}",
            self.corr.len(),
            self.corr.throughput(),
            self.corr.latency(),
            self.recent.len(),
            self.recent.varied(),
            self.recent.throughput(),
            self.recent.latency()
        )
    }

    /// More inflight buys latency, not throughput: the upstream is saturated, whatever the
    /// baseline says (failsafe-go's veto; the cure for a baseline taken under load, Envoy #38338).
    pub fn saturated(&self) -> bool {
        self.corr.len() >= self.min_windows
            && self.corr.throughput() < RESET_LATENCY_CORR
            && self.corr.latency() > RESET_THROUGHPUT_CORR
    }
}
