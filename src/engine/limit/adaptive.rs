//! The adaptive limit: windows → quantile → median/EMA → baseline → algorithm, plus the
//! verdict pressure path, the app-limited rule and idle recovery. No timers (spec §9.5):
//! everything runs on `on_sample` (settle) and `on_acquire`.
//!
//! Two cadences, both evaluated on settle once `updateIntervalMs` has passed since the last
//! evaluation:
//! - pressure: overload/timeout verdicts since the last evaluation cut the limit at once
//!   (×backoff, ×backoff² for a timeout) when they exceed (1 − quantile) of those calls —
//!   the fraction at which the window's own p90 would be a dropped call anyway;
//! - latency: when the window is ready (`Window::ready`), its quantile feeds the filter, the
//!   baseline and the algorithm.

use super::baseline::Baseline;
use super::filter::LatencyFilter;
use super::window::Window;
use super::{aimd, gradient2, vegas, LimitStats};
use crate::engine::options::LimiterOptions;
use crate::engine::{Nanos, Sample, Verdict, NANOS_PER_MS};

/// Healthy windows at the minimum limit before its latency becomes the baseline. 5: Envoy's
/// "recalculation is forced after 5 consecutive windows at the minimum limit".
pub const FLOOR_RESET_WINDOWS: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Vegas,
    Gradient2,
    Aimd,
}

#[derive(Clone, Copy, Debug, Default)]
struct Pressure {
    total: u32,
    overload: u32,
    timeout: u32,
    healthy: u32,
    peak_inflight: u32,
}

#[derive(Clone, Debug)]
pub struct Adaptive {
    kind: Kind,
    limit: f64,
    /// The limit at the last window that closed without any decrease: what idle recovery
    /// returns towards.
    healthy_limit: f32,
    min: f32,
    max: f32,
    initial: f32,
    quantile: f32,
    smoothing: f32,
    tolerance: f32,
    backoff: f64,
    min_samples: u32,
    window_min_ns: u64,
    window_max_ns: u64,
    update_ns: u64,
    last_eval: Nanos,
    last_activity: Nanos,
    /// Vegas hold dither direction (see `close_window`).
    dither_up: bool,
    /// Consecutive closed windows with the limit at `min` (see `close_window`).
    floor_windows: u32,
    /// When the limit was last raised by a latency reading (see `close_window`: once per
    /// round trip; the window counts the samples that started after it).
    last_raise: Nanos,
    pressure: Pressure,
    window: Window,
    filter: LatencyFilter,
    baseline: Baseline,
}

impl Adaptive {
    pub fn new(kind: Kind, o: &LimiterOptions, now: Nanos) -> Self {
        Adaptive {
            kind,
            limit: o.initial_limit as f64,
            healthy_limit: o.initial_limit as f32,
            min: o.min_limit as f32,
            max: o.max_limit as f32,
            initial: o.initial_limit as f32,
            quantile: o.quantile as f32,
            smoothing: o.smoothing as f32,
            tolerance: o.rtt_tolerance as f32,
            backoff: o.backoff_ratio,
            min_samples: o.min_samples,
            window_min_ns: o.window_min_ms.saturating_mul(NANOS_PER_MS),
            window_max_ns: o.window_max_ms.saturating_mul(NANOS_PER_MS),
            update_ns: o.update_interval_ms.saturating_mul(NANOS_PER_MS),
            last_eval: now,
            last_activity: now,
            dither_up: true,
            floor_windows: 0,
            last_raise: now,
            pressure: Pressure::default(),
            window: Window::new(o.quantile, now),
            filter: LatencyFilter::default(),
            baseline: Baseline::new(o.correlation_window),
        }
    }

    #[inline]
    pub fn current(&self) -> u32 {
        // The epsilon keeps 20 × 0.9 at 18, not 17.999… → 17.
        (self.limit + 1e-9) as u32
    }

    #[inline]
    fn clamp(&self, l: f64) -> f64 {
        l.clamp(self.min as f64, self.max as f64)
    }

    /// Spec §9.5: a limiter nobody calls must not stay clamped. After more than `windowMax`
    /// with nothing in flight and nothing settled, the limit returns towards the last healthy
    /// limit, halving the gap for every further `windowMax` of idleness; the stale latency
    /// filter is dropped so the first new window is judged on its own (ADR 0106).
    #[inline]
    pub fn on_acquire(&mut self, now: Nanos, inflight: u32) {
        if inflight != 0 {
            return;
        }
        let idle = now.saturating_sub(self.last_activity);
        if idle <= self.window_max_ns {
            return;
        }
        let target = self.healthy_limit as f64;
        if self.limit < target {
            let halvings = (idle - self.window_max_ns) as f64 / self.window_max_ns.max(1) as f64;
            self.limit = self.clamp(target - (target - self.limit) * 0.5f64.powf(halvings));
        }
        self.filter.reset();
        self.window.reset(now);
        self.pressure = Pressure::default();
        self.last_eval = now;
        self.last_activity = now;
    }

    #[inline]
    pub fn on_sample(&mut self, now: Nanos, s: &Sample) {
        self.last_activity = now;
        let lat = s.latency_ns as f64;
        let p = &mut self.pressure;
        p.total += 1;
        p.peak_inflight = p.peak_inflight.max(s.inflight);
        match s.verdict {
            Verdict::Success | Verdict::Answered => {
                p.healthy += 1;
                self.window.add(Some(lat), s.inflight, true);
            }
            Verdict::Failure => {
                // Netflix #176: a fast failure is not evidence of a fast upstream. Its latency is
                // censored from below at the smoothed latency: a slow failure still counts as slow.
                let floor = self.filter.smoothed;
                self.window.add(Some(lat.max(floor)), s.inflight, false);
            }
            Verdict::Overload => {
                // A 429 is answered fast by design: pressure, not a latency reading.
                p.overload += 1;
                self.window.add(None, s.inflight, false);
            }
            Verdict::Timeout => {
                let usual = self.filter.smoothed * self.tolerance as f64;
                if s.waited && self.kind != Kind::Aimd && usual > 0.0 && lat < usual {
                    // The call waited in *our* queue and its deadline ran out after the upstream
                    // had it for no longer than its usual p90 (within `rttTolerance`): the
                    // deadline was spent with us, so the timeout says nothing about the upstream.
                    // Counting it cut the limit to the floor again and again after a permanent
                    // latency shift (simulator baseline-shift: goodput 77 % with, 98 % without).
                    return self.maybe_evaluate(now);
                }
                // The deadline is a lower bound on the true latency: it belongs in the window.
                p.timeout += 1;
                self.window.add(Some(lat), s.inflight, false);
            }
            Verdict::Rejected | Verdict::Cancelled => {
                debug_assert!(false, "ignored verdicts never reach the algorithm");
            }
        }
        if now.saturating_sub(s.duration_ns) >= self.last_raise {
            self.window.fresh += 1;
        }
        self.maybe_evaluate(now);
    }

    #[inline]
    fn maybe_evaluate(&mut self, now: Nanos) {
        if now.saturating_sub(self.last_eval) >= self.update_ns {
            self.evaluate(now);
        }
    }

    /// Increases need demand: the window's peak inflight reached half the limit (Netflix's
    /// app-limited rule), or the limit is below `initialLimit`, which a healthy upstream may
    /// always climb back to (the cure for "never heals after heavy load", ADR 0107).
    #[inline]
    fn demand(&self, peak: u32) -> bool {
        peak as f64 * 2.0 >= self.limit || self.limit < self.initial as f64
    }

    fn evaluate(&mut self, now: Nanos) {
        self.last_eval = now;
        let p = std::mem::take(&mut self.pressure);
        let drops = p.overload + p.timeout;
        let mut decreased = false;
        if drops > 0 && drops as f64 > (1.0 - self.quantile as f64) * p.total as f64 {
            let b = self.backoff;
            let factor = if p.timeout > 0 { b * b } else { b };
            self.limit = self.clamp(self.limit * factor);
            decreased = true;
            self.baseline.forget(); // an incident: evidence from before it is moot
        } else if self.kind == Kind::Aimd
            && p.healthy > 0
            && p.healthy * 2 >= p.total
            && self.demand(p.peak_inflight)
        {
            self.limit = self.clamp(aimd::increase(self.limit));
        }
        if self.window.ready(
            now,
            self.window_min_ns,
            self.window_max_ns,
            self.min_samples,
        ) {
            self.close_window(now, decreased);
        }
    }

    fn close_window(&mut self, now: Nanos, decreased: bool) {
        let w = &self.window;
        let healthy = w.healthy * 2 >= w.count;
        let peak = w.peak_inflight;
        let mean_inflight = w.mean_inflight();
        let had_pressure = decreased || w.healthy < w.count;
        // Most of the window's calls started before the last raise (see the rule below).
        let stale = w.fresh * 2 < w.count;
        if let Some(q) = w.quantile() {
            let smoothed = self.filter.push(q);
            if healthy {
                self.baseline
                    .observe(smoothed, self.filter.steady, q, mean_inflight);
            }
        }
        if self.kind != Kind::Aimd
            && self.limit <= self.min as f64 + 1e-9
            && healthy
            && self.filter.smoothed > 0.0
        {
            self.floor_windows += 1;
            if self.floor_windows >= FLOOR_RESET_WINDOWS
                && self.filter.smoothed > self.baseline.value
            {
                // Held at the floor for FLOOR_RESET_WINDOWS healthy windows, the limiter adds as
                // little queueing of its own as it can: the latency it sees there is the best
                // no-load estimate it will get. Take it as the baseline (Envoy forces a minRTT
                // recalculation after 5 windows at its minimum limit). Without this, a permanent
                // shift of the upstream's normal latency clamped Vegas at the floor for good:
                // a held limit gives the correlation reset no variance to read.
                self.baseline.reset_to(self.filter.smoothed);
                self.floor_windows = 0;
            }
        } else {
            self.floor_windows = 0;
        }
        let (base, rtt) = (self.baseline.value, self.filter.smoothed);
        if !decreased && base > 0.0 && rtt > 0.0 {
            let before = self.limit;
            let mut next = match self.kind {
                // The queue we can cause is at most our own inflight: when app-limited, estimate it
                // on the window's peak inflight, not on an unused limit.
                Kind::Vegas => vegas::next(before, (peak as f64).min(before), base, rtt),
                Kind::Gradient2 => gradient2::next(
                    before,
                    base,
                    rtt,
                    self.tolerance as f64,
                    self.smoothing as f64,
                ),
                Kind::Aimd => before, // error-driven only: moved by `evaluate`
            };
            if next > before && !(healthy && self.demand(peak)) {
                next = before; // hold: no evidence of health or no demand (app-limited)
            }
            if next < before && (peak as f64) * 2.0 < before {
                // App-limited: the limit is not what holds calls back, so a latency reading is
                // no reason to lower it (Netflix Vegas holds before any latency decision when
                // inflight < L/2). At 8 calls a minute a window's p90 of ~4 calls is noise; without
                // this a healthy low-traffic key drifted from 20 to 13 in the simulator. Drops
                // still cut it (`evaluate`).
                next = before;
            }
            // Raise at most once per round trip (TCP Vegas adjusts its window once per RTT):
            // a raise is judged on the window's latency only when most of its calls started
            // after the last raise. A window shorter than the latency, or the smoothed latency
            // lagging it, otherwise reads the latency from before the raise again and repeats
            // it: on a real upstream +6 five windows running, 10 → 40 against a capacity of 8
            // (`__test__/upstream-limit.test.mjs`). With windows longer than the latency (the
            // 2 s default) nearly every call of a window is fresh, and this never holds.
            if next > before && stale {
                next = before;
            }
            // The algorithm itself lowered the limit on the latency it read (before the
            // saturation and dither rules below, which move it for evidence).
            let latency_cut = self.kind == Kind::Vegas && next < before;
            let full = peak as f64 >= 0.8 * before;
            if self.kind == Kind::Vegas && full && next >= before && self.baseline.saturated() {
                // More inflight buys only latency: the baseline is stale (taken under load).
                next = before - vegas::log_factor(before);
            } else if self.kind == Kind::Vegas && full && healthy && next == before && !stale {
                // A Vegas hold freezes inflight, and a frozen inflight gives the baseline's
                // correlation nothing to read: a limit held at 8 after a permanent latency shift
                // would stay there forever. Alternate +f / −f while holding: one extra call in
                // flight every other window is the whole cost of the evidence (ADR 0102).
                let f = vegas::log_factor(before);
                next = if self.dither_up {
                    before + f
                } else {
                    before - f
                };
                self.dither_up = !self.dither_up;
            } else if self.kind == Kind::Gradient2 && next > before && self.baseline.saturated() {
                next = before;
            }
            self.baseline.note_cut(latency_cut);
            if next > before {
                self.last_raise = now;
            }
            self.limit = self.clamp(next);
            if !had_pressure && self.limit >= before {
                self.healthy_limit = self.limit as f32;
            }
        }
        self.window.reset(now);
    }

    /// The smoothed window quantile (p90 by default), ns; 0 before the first window.
    #[inline]
    pub fn expected_latency_ns(&self) -> f64 {
        self.filter.smoothed
    }

    pub fn stats(&self) -> LimitStats {
        LimitStats {
            limit: self.current(),
            baseline_ms: self.baseline.value / NANOS_PER_MS as f64,
            smoothed_ms: self.filter.smoothed / NANOS_PER_MS as f64,
            window_samples: self.window.count,
        }
    }

    #[cfg(test)]
    pub fn debug(&self) -> String {
        self.baseline.debug()
    }

    #[cfg(test)]
    pub fn baseline_resets(&self) -> u32 {
        self.baseline.resets
    }
}
