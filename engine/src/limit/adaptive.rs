//! The adaptive limit: windows → quantile → median/EMA → baseline (with its probe) → the
//! algorithm's rule → the shared gates. Verdict pressure and idle recovery sit beside it. No
//! timers: everything runs on `on_sample` (settle) and `on_acquire`.
//!
//! Two cadences, both evaluated on settle once `updateIntervalMs` has passed since the last
//! evaluation:
//! - pressure: overload/timeout verdicts since the last evaluation cut the limit at once
//!   (×backoff, ×backoff² for a timeout) when they exceed (1 − quantile) of those calls, the
//!   fraction at which the window's own p90 would be a dropped call anyway (ADR 0108);
//! - latency: when the window is ready (`Window::ready`), its quantile feeds the filter, the
//!   baseline and the algorithm.

use super::baseline::Track;
use super::gates;
use super::handovers::Handovers;
use super::probe::{Hold, Measured, Probe};
use super::tuning::{
    COLD_JUMP, EARLY_PROBE, EARLY_PROBE_CROWDED, HANDOVER, PROBE_JUMP, STREAM_LATE,
};
use super::window::Window;
use super::{aimd, gradient2, vegas, LimitStats, Reading};
use crate::options::LimiterOptions;
use crate::{Nanos, Sample, Verdict, NANOS_PER_MS};

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
    /// When the limit last moved on a latency reading (a raise or a deep cut): a window is
    /// "fresh" when most of its calls started after it (gates 3 and 6).
    last_move: Nanos,
    /// No cut yet since the key started or came back from idle: Vegas raises by 6·f(L), its
    /// slow start (ADR 0113).
    slow_start: bool,
    /// A window has closed: the limit is no longer only `initialLimit` (ADR 0116).
    sized: bool,
    /// Calls were counted queued at the upstream in the last window or since (ADR 1222).
    queued_upstream: bool,
    pressure: Pressure,
    /// The last window that read a latency: its peak inflight and mean latency (ns), the
    /// concurrency and the latency it caused. A probe that finds the baseline loaded sizes the
    /// limit from them at once (ADR 0119).
    last_peak: f32,
    last_mean: f32,
    window: Window,
    /// The windows' p90, smoothed, with its baseline (stats, the queue's wait estimate).
    p90: Track,
    /// The windows' mean latency, smoothed, with its baseline: what Vegas and Gradient2 read.
    mean: Track,
    probe: Probe,
    /// Where calls stream: recent ends of calls that had their first byte (ADR 1220).
    handovers: Handovers,
}

impl Adaptive {
    pub fn new(kind: Kind, o: &LimiterOptions, now: Nanos) -> Self {
        let mut a = Adaptive {
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
            last_move: now,
            slow_start: true,
            sized: false,
            queued_upstream: false,
            pressure: Pressure::default(),
            last_peak: 0.0,
            last_mean: 0.0,
            window: Window::new(o.quantile, now),
            p90: Track::default(),
            mean: Track::default(),
            probe: Probe::new(
                kind != Kind::Aimd && o.probe_interval_ms > 0,
                now,
                o.probe_interval_ms,
                o.clock_offset_ns,
            ),
            handovers: Handovers::default(),
        };
        if kind == Kind::Gradient2 {
            a.probe.keep_outliers();
        }
        a
    }

    /// The learnt limit (what `stats()` reports).
    #[inline]
    pub fn current(&self) -> u32 {
        // The epsilon keeps 20 × 0.9 at 18, not 17.999… → 17.
        (self.limit + 1e-9) as u32
    }

    /// The limit admission obeys now: the learnt one, or the probe's level while a probe holds.
    #[inline]
    pub fn admit_limit(&self) -> u32 {
        let l = self.current();
        match self.probe.hold() {
            Hold::No => l,
            Hold::Level => l.min(self.probe.held_level(self.probe_level())),
            Hold::Shut => 0,
        }
    }

    #[inline]
    fn clamp(&self, l: f64) -> f64 {
        l.clamp(self.min as f64, self.max as f64)
    }

    /// A limiter nobody calls must not stay clamped. After more than `windowMax` with nothing
    /// in flight and nothing settled, the limit returns towards the last healthy limit,
    /// halving the gap for every further `windowMax` of idleness; the stale latency filter is
    /// dropped so the first new window is judged on its own (ADR 0106).
    #[inline]
    pub fn on_acquire(&mut self, now: Nanos, inflight: u32) {
        // Both checks inline, the work out of line: they run on every acquire (ADR 0503).
        if inflight == 0 && self.idle_for(now) > self.window_max_ns {
            self.recover_from_idle(now);
        }
        self.tick_probe(now, inflight);
    }

    #[inline]
    fn idle_for(&self, now: Nanos) -> u64 {
        now.saturating_sub(self.last_activity)
    }

    /// The limiter's smoothed tail (ns): how long calls hold their slot after their response
    /// started (ADR 0115).
    #[inline]
    pub fn note_tail(&mut self, tail_ns: f32) {
        self.probe.note_tail(tail_ns);
    }

    /// Where calls hold their slot past their first byte (streams), at a sample `s` settled
    /// `now` that evaluates the limit: the age past which a call still without its first byte
    /// is queued at the upstream. Its own sample comes only when its stream ends, a whole stream
    /// later; the owner counts such calls and passes them to `note_late` (ADR 0118). At most
    /// once per update interval. Before any window the no-load latency is the cold calls' (ADR
    /// 0116), or before them this call's own: the first streams end together, and the next
    /// window may be 30 s away.
    #[inline]
    pub fn late_after(&self, now: Nanos, s: &Sample) -> Option<Nanos> {
        if now.saturating_sub(self.last_eval) < self.update_ns {
            return None;
        }
        self.stream_base(s)
            .map(|base| (base * STREAM_LATE) as Nanos)
    }

    /// The no-load latency where calls hold their slot past their first byte (streams), else
    /// `None`: see `late_after`.
    #[inline]
    fn stream_base(&self, s: &Sample) -> Option<f64> {
        let base = match self.p90.baseline.value {
            b if b > 0.0 => b,
            _ => self.probe.cold_p90().unwrap_or(s.latency_ns as f64),
        };
        let tail = self
            .probe
            .tail()
            .max(s.duration_ns.saturating_sub(s.latency_ns) as f64);
        (base > 0.0 && tail > base).then_some(base)
    }

    /// See `late_after`: `late` calls counted at `now`, older than `after`. A slot freed within
    /// `HANDOVER` × the no-load latency went to one of them, which is being served and has not
    /// had its first byte yet: it no longer waits (ADR 1220).
    #[inline]
    pub fn note_late(&mut self, late: u32, now: Nanos, after: Nanos) {
        let span = (after as f64 * HANDOVER / STREAM_LATE) as Nanos;
        let handed = self.handovers.since(now.saturating_sub(span));
        self.window.late_now = late.saturating_sub(handed).min(u16::MAX as u32) as u16;
    }

    #[inline]
    pub fn on_admit(&mut self, now: Nanos) {
        self.probe.admitted(now, self.p90.filter.smoothed);
    }

    fn recover_from_idle(&mut self, now: Nanos) {
        let idle = self.idle_for(now);
        let target = self.healthy_limit as f64;
        if self.limit < target {
            let halvings = (idle - self.window_max_ns) as f64 / self.window_max_ns.max(1) as f64;
            self.limit = self.clamp(target - (target - self.limit) * 0.5f64.powf(halvings));
        }
        self.p90.filter.reset();
        self.mean.filter.reset();
        self.window.reset(now);
        self.pressure = Pressure::default();
        self.last_eval = now;
        self.last_activity = now;
        self.slow_start = true;
    }

    #[inline]
    fn probe_level(&self) -> u32 {
        ((self.limit * self.probe.level_share()) as u32).max(self.min as u32)
    }

    #[inline]
    fn tick_probe(&mut self, now: Nanos, inflight: u32) {
        if !self.probe.quiet(now) {
            self.tick_active_probe(now, inflight);
        }
    }

    fn tick_active_probe(&mut self, now: Nanos, inflight: u32) {
        let level = self.probe_level();
        if let Some(m) = self
            .probe
            .tick(now, inflight, level, self.p90.filter.smoothed)
        {
            self.on_probe(now, m);
        }
    }

    /// A probe measured the no-load latency. When it jumped the baseline up (the upstream's
    /// normal latency rose), the smoothed latency still carries the old normal, and the
    /// baseline, never above it, would fall straight back: it restarts from the next window.
    fn on_probe(&mut self, now: Nanos, m: Measured) {
        let before = self.mean.baseline.value;
        let vegas = self.kind == Kind::Vegas;
        // Off the phase, the other processes sharing the upstream did not drain with this one:
        // a higher reading may be their queue, and only a lower one is news (ADR 0121).
        let m = if vegas && self.probe.off_phase() && before > 0.0 {
            Measured {
                p90: m.p90.min(self.p90.baseline.value),
                mean: m.mean.min(before),
                se: m.se,
            }
        } else {
            m
        };
        // Only Vegas's mean is taken whole when surely lower (ADR 0121).
        let a = self.p90.baseline.measured(m.p90, f64::INFINITY);
        let b = self
            .mean
            .baseline
            .measured(m.mean, if vegas { m.se } else { f64::INFINITY });
        let down = before > 0.0 && m.mean * PROBE_JUMP < before;
        let jumped = before == 0.0 || m.mean > before * PROBE_JUMP || down;
        self.probe.note_settled(!jumped);
        if a || b {
            self.p90.filter.reset();
            self.mean.filter.reset();
            self.window.reset(now);
        }
        if down && self.kind != Kind::Aimd {
            self.loaded_baseline(now, m.mean);
        }
    }

    /// A probe read the no-load latency far below the baseline: the windows so far were
    /// loaded, by this client's own calls (a start above the capacity) or by others'. The last
    /// window's concurrency and latency then say how many calls the upstream served without a
    /// queue (Little's law: peak × no-load / latency); the limit comes down to that plus
    /// Vegas's alpha now, not a window later, and the next probe comes at once, at a quarter of
    /// the new limit, until one reads near the baseline (ADR 0119).
    fn loaded_baseline(&mut self, now: Nanos, no_load: f64) {
        let (peak, lat) = (self.last_peak as f64, self.last_mean as f64);
        // Not where calls hold their slot past their first byte (streams): a slot is held for
        // the stream, not the latency, and the late count sizes those (ADR 0118).
        let streams = self.probe.tail() > no_load;
        if peak > 0.0 && lat > no_load && !streams {
            let served = peak * no_load / lat;
            // Gradient2 keeps the share of the limit it was measured with (ADR 0122).
            let alpha = if self.kind == Kind::Vegas {
                vegas::thresholds(served).0
            } else {
                vegas::share_thresholds(served).0
            };
            let next = self.clamp(self.limit.min(served + alpha));
            if next < self.limit {
                self.limit = next;
                self.last_move = now;
                self.slow_start = false;
            }
        }
        // The window so far holds calls from before the cut, at the loaded latency.
        self.window.reset(now);
        self.probe.soon();
    }

    /// One settled call; `inflight` is what is still in flight after it.
    #[inline]
    pub fn on_sample(&mut self, now: Nanos, s: &Sample, inflight: u32) {
        self.last_activity = now;
        if s.latency_ns < s.duration_ns && self.stream_base(s).is_some() {
            self.handovers.record(now);
        }
        let lat = s.latency_ns as f64;
        let start = now.saturating_sub(s.duration_ns);
        let p = &mut self.pressure;
        p.total += 1;
        p.peak_inflight = p.peak_inflight.max(s.inflight);
        // A deadline that passed after the response had started (a stream cut mid-body) says
        // nothing about the upstream's latency, which the mark measured: a healthy reading
        // (ADR 0115).
        let verdict = match s.verdict {
            Verdict::Timeout if s.latency_ns < s.duration_ns => Verdict::Success,
            v => v,
        };
        match verdict {
            Verdict::Success | Verdict::Answered => {
                self.pressure.healthy += 1;
                // A call counted late while it waited: the limit already answered for that
                // wait, and reading it again a stream later would cut twice (ADR 0118).
                let read = (!s.late).then_some(lat);
                self.window
                    .add(read, s.duration_ns as f64, s.inflight, true);
                self.window.late = self.window.late.saturating_add(s.late as u16);
                if self.p90.baseline.value == 0.0 {
                    let level = self.probe_level();
                    if s.inflight <= level {
                        self.probe.cold_sample(lat, inflight <= level);
                    }
                }
                if let Some(m) = self.probe.sample(now, start, lat) {
                    self.on_probe(now, m);
                }
            }
            Verdict::Failure => {
                // Netflix #176: a fast failure is not evidence of a fast upstream. Its latency is
                // censored from below at the smoothed latency: a slow failure still counts as slow.
                let floor = self.p90.filter.smoothed;
                self.window.add(
                    Some(lat.max(floor)),
                    s.duration_ns as f64,
                    s.inflight,
                    false,
                );
            }
            Verdict::Overload => {
                // A 429 is answered fast by design: pressure, not a latency reading.
                self.pressure.overload += 1;
                self.window
                    .add(None, s.duration_ns as f64, s.inflight, false);
            }
            Verdict::Timeout => {
                // The usual p90: smoothed, or (just after a probe restarted the filters) the
                // measured baseline.
                let streams_held = self.probe.tail() > self.mean.baseline.value.max(1.0);
                let p90 = match self.p90.filter.smoothed {
                    x if x > 0.0 => x,
                    _ if streams_held => self.p90.baseline.value,
                    _ => 0.0,
                };
                let usual = p90 * self.tolerance as f64;
                let unknown = usual == 0.0 && self.slow_start;
                let censored = s.waited
                    && self.kind != Kind::Aimd
                    && (unknown || (usual > 0.0 && lat < usual));
                // A timed probe call that ran out of deadline (it may have waited in the queue
                // first) still counts, at no less than the usual mean: dropping it would keep
                // the fast calls only and read the baseline low. Not where calls hold their
                // slot long after responding (streams): there a waiter is often admitted with
                // too little deadline left to reach its first byte, and the usual mean is a
                // loaded one (ADR 0115).
                let streams = self.probe.tail() > p90.min(self.mean.baseline.value.max(1.0));
                if !(censored && streams) {
                    let floor = lat.max(self.mean.filter.smoothed);
                    if let Some(m) = self.probe.sample(now, start, floor) {
                        self.on_probe(now, m);
                    }
                }
                if censored {
                    // It waited in *our* queue and the upstream had it for no longer than its
                    // usual p90 (within `rttTolerance`), or the key is new and no usual latency
                    // is known yet: the deadline was spent with us, so the timeout says nothing
                    // about the upstream (ADR 0110; a burst on a new key: ADR 0114).
                    self.tick_probe(now, inflight);
                    return self.maybe_evaluate(now, inflight);
                }
                // The deadline is a lower bound on the true latency: it belongs in the window.
                self.pressure.timeout += 1;
                self.window
                    .add(Some(lat), s.duration_ns as f64, s.inflight, false);
            }
            Verdict::Rejected | Verdict::Cancelled => {
                debug_assert!(false, "ignored verdicts never reach the algorithm");
            }
        }
        if start >= self.last_move {
            self.window.fresh += 1;
        }
        self.tick_probe(now, inflight);
        self.maybe_evaluate(now, inflight);
    }

    #[inline]
    fn maybe_evaluate(&mut self, now: Nanos, inflight: u32) {
        if now.saturating_sub(self.last_eval) >= self.update_ns {
            self.evaluate(now, inflight);
        }
    }

    /// Increases need demand: the window's peak inflight reached half the limit (Netflix's
    /// app-limited rule), or the limit is below `initialLimit` (ADR 0107).
    #[inline]
    fn demand(&self, peak: u32) -> bool {
        peak as f64 * 2.0 >= self.limit || self.limit < self.initial as f64
    }

    fn evaluate(&mut self, now: Nanos, inflight: u32) {
        self.last_eval = now;
        let late = std::mem::take(&mut self.window.late_now) as u32;
        let p = std::mem::take(&mut self.pressure);
        let drops = p.overload + p.timeout;
        let quantile = self.quantile as f64;
        let mut decreased = false;
        if drops > 0 && drops as f64 > (1.0 - quantile) * p.total as f64 {
            let b = self.backoff;
            let factor = if p.timeout > 0 { b * b } else { b };
            self.limit = self.clamp(self.limit * factor);
            decreased = true;
            self.slow_start = false;
        } else if self.kind == Kind::Aimd
            && p.healthy > 0
            && p.healthy * 2 >= p.total
            && self.demand(p.peak_inflight)
        {
            self.limit = self.clamp(aimd::increase(self.limit));
        }
        self.queued_upstream |= late > 0;
        if late > 0 && self.kind != Kind::Aimd && !decreased && !self.sized {
            // Calls queued at the upstream now, that no sample shows yet, before the first
            // window (a first window of streams may be 30 s away): the limit comes down to the
            // calls it was serving as this one ended, at once; after it, the window's close
            // does (ADR 0118, 1222).
            let next = self.clamp(self.limit.min((inflight + 1).saturating_sub(late) as f64));
            if next < self.limit - vegas::log_factor(self.limit) {
                self.last_move = now;
            }
            if next < self.limit {
                self.slow_start = false;
            }
            self.limit = next;
        }
        if self.window.ready(
            now,
            self.window_min_ns,
            self.window_max_ns,
            self.min_samples,
        ) {
            self.close_window(now, decreased, late, inflight);
        }
    }

    fn close_window(&mut self, now: Nanos, decreased: bool, late: u32, inflight: u32) {
        let w = &self.window;
        let gate = gates::Window {
            healthy: w.healthy * 2 >= w.count,
            peak: w.peak_inflight as f64,
            fresh: w.fresh * 2 >= w.count,
            initial: self.initial as f64,
        };
        let had_pressure = decreased || w.healthy < w.count;
        // A full window's latency is precise enough to lower the baseline at once (a cold first
        // window must not survive the next one); a window of a few calls is not, and a
        // minimum over noisy readings drifts low: there the baseline follows the symmetric
        // EMA of the medians instead (ADR 0113).
        let full = w.latencies >= self.min_samples;
        let first = self.p90.baseline.value == 0.0;
        let waiting = w.waiting_share();
        let q = w.quantile();
        self.p90.close(q, gate.healthy, full);
        let mean = w.mean();
        self.mean.close(mean, gate.healthy, full);
        if first && self.p90.baseline.value > 0.0 {
            self.probe.note_first_window(now, self.p90.baseline.value);
            self.cold_start(gate.peak);
        }
        if let Some(m) = mean {
            self.last_peak = gate.peak as f32;
            self.last_mean = m as f32;
        }
        let (base, rtt) = (self.p90.baseline.value, self.p90.filter.smoothed);
        self.probe.note_baseline(base);
        // Drops already moved the limit in this interval: they decide, not latency.
        if !decreased && base > 0.0 && rtt > 0.0 {
            let before = self.limit;
            let r = Reading {
                limit: before,
                peak: gate.peak,
                baseline: base,
                rtt,
                rtt_now: q.unwrap_or(rtt),
                waiting,
                slow_start: self.slow_start,
            };
            let proposed = match self.kind {
                Kind::Vegas if self.mean.baseline.value > 0.0 => vegas::on_window(&Reading {
                    baseline: self.mean.baseline.value,
                    rtt: self.mean.filter.smoothed,
                    rtt_now: mean.unwrap_or(self.mean.filter.smoothed),
                    ..r
                }),
                Kind::Vegas => vegas::on_window(&r),
                Kind::Gradient2 if self.mean.baseline.value > 0.0 => gradient2::on_window(
                    &Reading {
                        baseline: self.mean.baseline.value,
                        rtt: self.mean.filter.smoothed,
                        rtt_now: mean.unwrap_or(self.mean.filter.smoothed),
                        ..r
                    },
                    self.tolerance as f64,
                    self.smoothing as f64,
                ),
                Kind::Gradient2 => {
                    gradient2::on_window(&r, self.tolerance as f64, self.smoothing as f64)
                }
                Kind::Aimd => aimd::on_window(&r),
            };
            let mut next = gates::apply(before, proposed, &gate);
            if self.kind != Kind::Aimd {
                if late > 0 {
                    // Calls queued at the upstream now, that no sample shows yet: no raise, and
                    // no more than the calls it was serving as this one ended (ADR 0118). A
                    // count of what is in flight now: no round trip's lag to wait out (gate 6).
                    next = next
                        .min(before)
                        .min((inflight + 1).saturating_sub(late) as f64);
                } else if self.window.late > 0 {
                    // Queued at the upstream within this window: one call more at most, as
                    // Vegas raises on a small queue.
                    next = next.min(before + vegas::log_factor(before));
                }
            }
            let next = self.clamp(next);
            if next > before || next < before - vegas::log_factor(before) {
                self.last_move = now;
            }
            if next < before {
                self.slow_start = false;
            }
            self.limit = next;
            if !had_pressure && self.limit >= before {
                self.healthy_limit = self.limit as f32;
            }
        }
        self.sized = true;
        self.queued_upstream = late > 0 || self.window.late > 0;
        self.window.reset(now);
    }

    /// Whether a window has closed since creation: before that the limit is the configured
    /// guess, and a slow call may be one that only queued at the upstream behind our own
    /// first burst (ADR 0116).
    #[inline]
    pub fn sized(&self) -> bool {
        self.sized
    }

    /// The first baseline came from a window: when the calls that met the upstream before this
    /// client loaded it read far lower (a start far above the capacity, or streams queued for a
    /// slot), the window was loaded and they are the baseline (ADR 0116). Lower, but not that
    /// far: the first probe comes at once (ADR 0119, 0120). So it does when the cold calls were
    /// crowded and the window's `peak` stayed below the limit: only the callers bounded it, the
    /// limit was never tested, and cold calls slowed by their new connections on a busy machine
    /// can read as slow as a loaded window (ADR 0126).
    fn cold_start(&mut self, peak: f64) {
        let Some((c, crowded)) = self.probe.take_cold() else {
            return;
        };
        if self.p90.baseline.value > c.p90 * COLD_JUMP {
            self.p90.baseline.value = c.p90;
            self.mean.baseline.value = self.mean.baseline.value.min(c.mean);
        } else if crowded
            && (self.mean.baseline.value > c.mean * EARLY_PROBE_CROWDED || self.untested(peak))
            || self.p90.baseline.value > c.p90 * EARLY_PROBE
        {
            self.probe.soon();
        }
    }

    /// Whether calls queued at the upstream for a slot lately (counted late in the last window
    /// or since): a call admitted now may wait there a whole stream first (ADR 1222).
    #[inline]
    pub fn queued_upstream(&self) -> bool {
        self.queued_upstream
    }

    /// A window's `peak` stayed below the limit, with demand for it (more than half of it):
    /// only the callers bounded the window, not the limit. Stricter than `demand` (raises): a
    /// key at exactly half its limit is busy, not loaded (ADR 0126).
    #[inline]
    fn untested(&self, peak: f64) -> bool {
        peak < self.limit && peak * 2.0 > self.limit
    }

    /// The smoothed window quantile (p90 by default), ns; 0 before the first window.
    #[inline]
    pub fn expected_latency_ns(&self) -> f64 {
        self.p90.filter.smoothed
    }

    pub fn stats(&self) -> LimitStats {
        LimitStats {
            limit: self.current(),
            baseline_ms: self.p90.baseline.value / NANOS_PER_MS as f64,
            smoothed_ms: self.p90.filter.smoothed / NANOS_PER_MS as f64,
            window_samples: self.window.count,
            probes: self.probe.measured,
            probing: self.probe.hold() != Hold::No,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tuning::PROBE_WEIGHT;
    use super::*;

    const MS: f64 = NANOS_PER_MS as f64;

    /// A Vegas key whose baselines read 130 ms (mean) and 150 ms (p90), and a probe's reading.
    fn key() -> Adaptive {
        let mut a = Adaptive::new(Kind::Vegas, &LimiterOptions::default(), 0);
        a.mean.baseline.value = 130.0 * MS;
        a.p90.baseline.value = 150.0 * MS;
        a
    }

    fn reading(mean_ms: f64, se_ms: f64) -> Measured {
        Measured {
            p90: mean_ms * 1.05 * MS,
            mean: mean_ms * MS,
            se: se_ms * MS,
        }
    }

    #[test]
    fn a_probe_surely_lower_replaces_the_mean_baseline_and_a_noisy_one_walks_it() {
        let mut a = key();
        a.on_probe(0, reading(102.0, 0.5));
        assert_eq!(a.mean.baseline.value, 102.0 * MS, "28 ms lower, se 0.5 ms");
        let mut a = key();
        a.on_probe(0, reading(102.0, 4.0));
        let walked = 130.0 + PROBE_WEIGHT * (102.0 - 130.0);
        assert!(
            (a.mean.baseline.value / MS - walked).abs() < 1e-9,
            "within 8 se: a quarter"
        );
    }

    #[test]
    fn a_probe_off_the_phase_lowers_the_baselines_but_never_raises_them() {
        for (off, mean_ms, expect_ms) in [
            (true, 160.0, 130.0),
            (true, 110.0, 110.0),
            (false, 160.0, 130.0 + PROBE_WEIGHT * 30.0),
        ] {
            let mut a = key();
            if off {
                a.probe.soon();
            }
            // Start the probe (at the 10 s phase, or at once when soon), so that its phase is set.
            a.probe.tick(10_000 * NANOS_PER_MS, 20, 5, 100.0 * MS);
            assert_eq!(a.probe.off_phase(), off);
            a.on_probe(10_000 * NANOS_PER_MS, reading(mean_ms, 0.5));
            let got = a.mean.baseline.value / MS;
            assert!(
                (got - expect_ms).abs() < 1e-9,
                "off {off}, read {mean_ms}: {got}"
            );
            if off && mean_ms > 130.0 {
                assert_eq!(a.p90.baseline.value, 150.0 * MS, "nor the p90's");
            }
        }
    }
}
