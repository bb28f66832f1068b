//! The baseline probe (ADR 0113): the no-load latency is re-measured, not inferred. At every
//! probe phase the admission limit steps down to a quarter of the learnt limit (a third once
//! settled, ADR 0125; at least `minLimit`) until this client's own calls have drained to it; the
//! calls then started at that low concurrency are timed, and their mean and p90 correct the
//! baselines. BBR's ProbeRTT does the same (4 packets, at least 200 ms, every 10 s). The tuned
//! constants are in `tuning.rs`.
//!
//! - Nothing is refused for it: the queue keeps the bounds of the learnt limit, so the extra
//!   calls wait. Without a queue they are refused: it could not drain otherwise (ADR 0113
//!   "Without the queue"). The learnt limit itself is untouched (and is what `stats()` reports).
//! - Phases are aligned to the wall clock (`clock_offset_ns`), so independent processes that
//!   share an upstream drain it together, with no coordination: a probe alone would see the
//!   queue the others keep full.
//! - The timed calls are those that *started* while admission was held, each timed to its
//!   end: stopping at the first n to finish would keep the fast ones (the simulator's baseline
//!   then sat 20 % low).
//! - A probe that cannot drain, or times too few calls within its bounds, measures nothing.

use super::tuning::{
    COLD_GAP, COLD_SAMPLES, DRAIN_LATENCIES, INTERVAL_OVER_PROBE, LATE_FOR_PHASE, MAD_FLOOR,
    MEASURE_LATENCIES, OUTLIER_MADS, PROBE_LEVEL, PROBE_MIN_CALLS, PROBE_MIN_NS, PROBE_ROUNDS,
    PROBE_SAMPLES, SETTLED_PROBE_LEVEL,
};
use crate::Nanos;

/// How a probe holds admission.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    No,
    /// At the probe's level.
    Level,
    /// Shut, for the rest of this instant.
    Shut,
}

/// What a probe measured, ns.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    pub p90: f64,
    pub mean: f64,
    /// The standard error of `mean`: how far the next probe's mean may read from it by chance.
    pub se: f64,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Off,
    /// Waiting for the next phase.
    Idle,
    /// Admission held at the probe level, less `room`, until inflight falls to it.
    Draining {
        until: Nanos,
        /// Calls that hold their slot long after responding (streams) free none while the
        /// probe measures: it drains `room` below its level, so that the calls it times can
        /// start at once (ADR 0115). 0 otherwise.
        room: u8,
    },
    /// Admission held; calls that start from `drained` on are timed, up to `want` of them.
    Measuring {
        drained: Nanos,
        until: Nanos,
        want: u8,
        started: u8,
    },
    /// All timed calls admitted; admission stays shut until the next event, so that no call
    /// admitted later shares their start time.
    Closing {
        drained: Nanos,
        at: Nanos,
        want: u8,
        started: u8,
    },
    /// Admission restored; the `started` timed calls (those admitted from `drained` to
    /// `closed`) are still finishing.
    Settling {
        drained: Nanos,
        closed: Nanos,
        until: Nanos,
        want: u8,
        started: u8,
    },
}

#[derive(Clone, Debug)]
pub struct Probe {
    state: State,
    offset: u64,
    interval: u64,
    /// Wall-clock ns (now + offset) at which the next probe may start.
    next_at: u64,
    /// Wall-clock ns of the last probe's end (or of creation).
    last: u64,
    samples: [f32; PROBE_SAMPLES],
    n: u8,
    /// The no-load latency, ns: what the interval is scaled by.
    base: f32,
    /// How long a call holds its slot after its response started, ns (a stream's body; ~0 for
    /// plain calls): draining waits for it, and the interval scales with it (ADR 0115).
    tail: f32,
    /// Probes that produced a measurement (stats, tests).
    pub measured: u32,
    /// `SETTLED`, `SETTLED_ONCE`, `SOON`, `OFF_PHASE`, `LATE`, `COLD_QUIET`: one byte of flags
    /// keeps a key within its memory budget.
    flags: u8,
}

/// The last two measurements moved the baseline by less than a jump (see `note_settled`).
const SETTLED: u8 = 1;
/// The last measurement did.
const SETTLED_ONCE: u8 = 16;
/// The next probe comes at once (see `soon`).
const SOON: u8 = 2;
/// This probe came at once, off the phase: other processes sharing the upstream did not drain
/// with it, and its reading may hold their queue.
const OFF_PHASE: u8 = 4;
/// This probe started `LATE_FOR_PHASE` after its phase (see there). It settles nothing; its
/// reading still counts, as a lone key's sparse calls see every phase late.
const LATE: u8 = 32;
/// A cold call settled with at most the probe's level still in flight: the cold calls ran, at
/// least once, as a probe's calls do (see `take_cold`).
const COLD_QUIET: u8 = 8;
/// Every timed call counts in the mean (see `keep_outliers`).
const KEEP_OUTLIERS: u8 = 64;

impl Probe {
    /// Every timed call counts in the mean, `OUTLIER_MADS` none the less: Gradient2's fleet
    /// rows in the simulator read less fair with them left out (`fleet-real` 0.80 → 0.70).
    pub fn keep_outliers(&mut self) {
        self.set_flag(KEEP_OUTLIERS, true);
    }

    /// The probe's admission limit as a fraction of the learnt limit (ADR 0125).
    #[inline]
    pub fn level_share(&self) -> f64 {
        if self.flag(SETTLED) {
            SETTLED_PROBE_LEVEL
        } else {
            PROBE_LEVEL
        }
    }

    /// This probe came off the phase (see `OFF_PHASE`).
    #[inline]
    pub fn off_phase(&self) -> bool {
        self.flag(OFF_PHASE)
    }

    #[inline]
    fn flag(&self, f: u8) -> bool {
        self.flags & f != 0
    }

    #[inline]
    fn set_flag(&mut self, f: u8, on: bool) {
        if on {
            self.flags |= f;
        } else {
            self.flags &= !f;
        }
    }

    /// `enabled`: the algorithm reads a baseline. `interval_ms`: `probeIntervalMs` (0: never).
    /// `offset`: add to `now` for wall-clock ns.
    pub fn new(enabled: bool, now: Nanos, interval_ms: u64, offset: u64) -> Self {
        let enabled = enabled && interval_ms > 0;
        let mut p = Probe {
            state: if enabled { State::Idle } else { State::Off },
            offset,
            interval: interval_ms.saturating_mul(1_000_000),
            next_at: u64::MAX,
            last: now.wrapping_add(offset),
            samples: [0.0; PROBE_SAMPLES],
            n: 0,
            base: 0.0,
            tail: 0.0,
            measured: 0,
            flags: 0,
        };
        if enabled {
            p.schedule();
        }
        p
    }

    /// The next phase boundary after the last probe: a multiple of the interval in wall-clock
    /// time, so that every process with the same interval picks the same instants (and nested
    /// intervals, 10 s and 20 s, still meet every 20 s).
    fn schedule(&mut self) {
        if self.flag(SOON) {
            self.next_at = self.last;
            return;
        }
        let mut interval = self.interval;
        // Draining takes about one loaded latency and timing about two no-load ones: a few
        // no-load latencies is the scale (a loaded one, far above the capacity, would put the
        // next probe minutes away).
        // Until a probe has measured it, and while probes still move it far, the baseline may
        // be a loaded latency: no scaling. Except where calls hold their slot past their first
        // byte for longer than the interval (long streams): draining can take a whole stream,
        // and probing at every phase would hold admission low most of the time (ADR 0118).
        let long_streams = self.base > 0.0 && self.tail as f64 > self.interval as f64;
        let expected = if self.flag(SETTLED) || long_streams {
            3.0 * self.base as f64 + self.tail as f64
        } else {
            0.0
        };
        while (interval as f64) < INTERVAL_OVER_PROBE * expected && interval < (1 << 50) {
            interval *= 2;
        }
        self.next_at = (self.last / interval + 1).saturating_mul(interval);
    }

    /// The next probe comes as soon as it may (at the next event), not at the next phase: the
    /// baseline is known to be loaded (ADR 0119).
    pub fn soon(&mut self) {
        self.set_flag(SOON, true);
        if self.state == State::Idle {
            self.schedule();
        }
    }

    /// Whether the last measurement was near the baseline (then later intervals scale with the
    /// baseline; after a jump the next probe comes at the next `probeIntervalMs` phase).
    /// A probe off the phase never settles it: the next one comes at the phase.
    pub fn note_settled(&mut self, settled: bool) {
        // Two in a row: the first probes of a fleet starting together all read its startup's
        // queue, and one of them alone would hold that for a doubled interval (ADR 0121).
        let settled = settled && !self.flag(OFF_PHASE) && !self.flag(LATE);
        let twice = settled && self.flag(SETTLED_ONCE);
        self.set_flag(SETTLED_ONCE, settled);
        self.set_flag(SETTLED, twice);
        if self.state == State::Idle {
            self.schedule();
        }
    }

    /// The key's first window set the baseline. Where calls hold their slot long past their
    /// first byte (streams), the next probe comes at a phase after it. A phase that passed while
    /// the first streams ran would start a probe as they end, holding admission low while the
    /// calls still queued at the upstream drain, for up to a whole stream with the freed slots
    /// idle (ADR 0124).
    pub fn note_first_window(&mut self, now: Nanos, base_ns: f64) {
        if self.state == State::Idle && !self.flag(SOON) && self.tail as f64 > base_ns {
            self.last = now.wrapping_add(self.offset);
            self.schedule();
        }
    }

    /// The baseline changed (ns): later intervals scale with it.
    #[inline]
    pub fn note_baseline(&mut self, base_ns: f64) {
        if self.base != base_ns as f32 {
            self.base = base_ns as f32;
            if self.state == State::Idle {
                self.schedule();
            }
        }
    }

    /// How long calls hold their slot after their response started (ns, the limiter's
    /// smoothed tail).
    #[inline]
    pub fn note_tail(&mut self, tail_ns: f32) {
        self.tail = tail_ns;
    }

    /// How long calls hold their slot after their response started, ns, smoothed (a stream's
    /// body; ~0 for plain calls).
    #[inline]
    pub fn tail(&self) -> f64 {
        self.tail as f64
    }

    /// Whether calls hold their slot long after their response started (streams): longer
    /// than the no-load latency (the smoothed one before a baseline; a loaded latency includes
    /// the wait for a slot, which is as long as a stream).
    #[inline]
    fn streams(&self, latency_ns: f64) -> bool {
        let base = if self.base > 0.0 {
            self.base as f64
        } else {
            latency_ns
        };
        self.tail as f64 > base
    }

    /// The admission limit while held at `level`: lower by the room a probe of streams makes.
    #[inline]
    pub fn held_level(&self, level: u32) -> u32 {
        match self.state {
            State::Draining { room, .. } => level.saturating_sub(room as u32),
            _ => level,
        }
    }

    /// How admission is held now.
    #[inline]
    pub fn hold(&self) -> Hold {
        match self.state {
            State::Draining { .. } | State::Measuring { .. } => Hold::Level,
            State::Closing { .. } => Hold::Shut,
            _ => Hold::No,
        }
    }

    /// Nothing for `tick` to do: no probe, or the next phase has not come yet. Lets the caller
    /// skip working out the probe's level on almost every call (perf, ADR 0503).
    #[inline]
    pub fn quiet(&self, now: Nanos) -> bool {
        match self.state {
            State::Off => true,
            State::Idle => now.wrapping_add(self.offset) < self.next_at,
            _ => false,
        }
    }

    /// Advance on acquire or settle. `inflight`: this client's calls in flight now; `level`:
    /// the probe's admission limit; `latency_ns`: the smoothed latency (0 when unknown).
    /// Returns the measurement when a probe ends with one.
    #[inline]
    pub fn tick(
        &mut self,
        now: Nanos,
        inflight: u32,
        level: u32,
        latency_ns: f64,
    ) -> Option<Measured> {
        match self.state {
            State::Off => None,
            State::Idle => {
                if latency_ns <= 0.0 || now.wrapping_add(self.offset) < self.next_at {
                    return None;
                }
                // No healthy window has set a baseline yet, but the first calls were timed
                // cold: they are this phase's measurement (ADR 0116).
                if self.base == 0.0 && self.measured == 0 && self.n as usize >= COLD_SAMPLES {
                    let m = self.cold_reading();
                    self.finish(now);
                    self.measured += 1;
                    return Some(m);
                }
                self.n = 0;
                // Half a latency after the phase, the other processes have drained and are
                // timing their calls: a probe that starts then reads them refill (ADR 0121).
                let late = now.wrapping_add(self.offset)
                    > self
                        .next_at
                        .saturating_add((latency_ns * LATE_FOR_PHASE) as u64);
                let soon = self.flag(SOON);
                self.set_flag(OFF_PHASE, soon);
                self.set_flag(LATE, late);
                self.set_flag(SOON, false);
                // Calls whose response has started still hold their slots until they end.
                let drain = bound(DRAIN_LATENCIES, latency_ns).saturating_add(self.tail as u64);
                let room = if self.streams(latency_ns) {
                    (level as usize / 2).clamp(2, PROBE_SAMPLES) as u8
                } else {
                    0
                };
                self.state = State::Draining {
                    until: now.saturating_add(drain),
                    room,
                };
                self.tick(now, inflight, level, latency_ns)
            }
            State::Draining { until, room } => {
                // Streams: as soon as there is room below the level; the next event may be a
                // whole stream away (ADR 0115).
                let ready = if room > 0 {
                    inflight < level
                } else {
                    inflight <= level
                };
                if ready {
                    // Streams: it times the calls that can start at once (ADR 0115);
                    // otherwise three rounds at its level.
                    let want = if room > 0 {
                        ((level - inflight.min(level)) as usize).min(PROBE_SAMPLES)
                    } else {
                        (PROBE_ROUNDS * level as usize).clamp(PROBE_MIN_CALLS, PROBE_SAMPLES)
                    };
                    self.state = State::Measuring {
                        drained: now,
                        until: now.saturating_add(bound(MEASURE_LATENCIES, latency_ns)),
                        want: want as u8,
                        started: 0,
                    };
                } else if now >= until {
                    self.finish(now); // could not drain: nothing measured
                }
                None
            }
            State::Measuring {
                drained,
                until,
                want,
                started,
            } => {
                if now >= until {
                    self.settle(now, drained, want, started, latency_ns);
                }
                None
            }
            State::Closing {
                drained,
                at,
                want,
                started,
            } => {
                if now > at {
                    self.settle(now, drained, want, started, latency_ns);
                }
                None
            }
            State::Settling { until, want, .. } => {
                if now < until {
                    return None;
                }
                self.conclude(now, want)
            }
        }
    }

    /// A call is admitted now: while measuring, it is one of the timed calls.
    #[inline]
    pub fn admitted(&mut self, now: Nanos, latency_ns: f64) {
        if let State::Measuring {
            drained,
            want,
            ref mut started,
            ..
        } = self.state
        {
            *started += 1;
            if *started >= want {
                let started = *started;
                if self.streams(latency_ns) {
                    // Streams: the next event may be a whole stream away, and admission must
                    // not stay shut until then (ADR 0115). A call admitted at this very instant
                    // after them would be timed with them.
                    self.settle(now, drained, want, started, latency_ns);
                } else {
                    self.state = State::Closing {
                        drained,
                        at: now,
                        want,
                        started,
                    };
                }
            }
        }
    }

    fn settle(&mut self, now: Nanos, drained: Nanos, want: u8, started: u8, latency_ns: f64) {
        // A timed stream's sample comes when it ends, a tail after its first byte.
        let until = bound(MEASURE_LATENCIES, latency_ns).saturating_add(self.tail as u64);
        self.state = State::Settling {
            drained,
            closed: now,
            until: now.saturating_add(until),
            want,
            started,
        };
    }

    /// A healthy sample of a call that started at `start`. Returns the measurement when the
    /// last timed call has finished.
    #[inline]
    pub fn sample(&mut self, now: Nanos, start: Nanos, latency_ns: f64) -> Option<Measured> {
        let (drained, closed, want, started) = match self.state {
            State::Measuring { drained, want, .. } => (drained, now, want, u8::MAX),
            State::Closing {
                drained, at, want, ..
            } => (drained, at, want, u8::MAX),
            State::Settling {
                drained,
                closed,
                want,
                started,
                ..
            } => (drained, closed, want, started),
            _ => return None,
        };
        if start < drained || start > closed || self.n as usize >= PROBE_SAMPLES {
            return None;
        }
        self.samples[self.n as usize] = latency_ns as f32;
        self.n += 1;
        if self.n < started {
            return None;
        }
        self.conclude(now, want)
    }

    /// The probe ends; half the calls it wanted (at least 1) make a measurement: timed calls
    /// that waited in the queue first may run out of deadline.
    fn conclude(&mut self, now: Nanos, want: u8) -> Option<Measured> {
        let m = (self.n >= (want / 2).max(1)).then(|| self.reading());
        self.finish(now);
        if m.is_some() {
            self.measured += 1;
        }
        m
    }

    fn finish(&mut self, now: Nanos) {
        self.state = State::Idle;
        self.last = now.wrapping_add(self.offset);
        self.schedule();
    }

    /// Before any probe, while the key is cold: one healthy latency (ns) of a call admitted
    /// with at most the probe's level in flight. The first calls on a new key meet an upstream
    /// this client has not loaded yet; they are timed as a probe's calls are (ADR 0116).
    /// `quiet`: it settled with at most that level still in flight.
    #[inline]
    pub fn cold_sample(&mut self, latency_ns: f64, quiet: bool) {
        if self.measured == 0 && self.state == State::Idle && (self.n as usize) < PROBE_SAMPLES {
            self.samples[self.n as usize] = latency_ns as f32;
            self.n += 1;
            if quiet {
                self.flags |= COLD_QUIET;
            }
        }
    }

    /// The cold calls' reading, once (at the first window), if at least `COLD_SAMPLES` were
    /// timed; the buffer is then the probes' again. With it, whether they were crowded: none
    /// settled with the client at or below the probe's level (admitted together with many more
    /// and queued among them at the upstream, in any order, so that their p90 says little about
    /// the upstream unloaded; ADR 0120).
    pub fn take_cold(&mut self) -> Option<(Measured, bool)> {
        if self.measured != 0 || self.state != State::Idle {
            return None;
        }
        let m = (self.n as usize >= COLD_SAMPLES)
            .then(|| (self.cold_reading(), !self.flag(COLD_QUIET)));
        self.n = 0;
        m
    }

    /// The reading of the cold calls that met the upstream unloaded (see `cold_fast`).
    fn cold_reading(&self) -> Measured {
        let (sorted, n) = self.sorted_samples();
        reading_of(
            &sorted[..self.cold_fast(&sorted[..n])],
            self.flag(KEEP_OUTLIERS),
        )
    }

    /// How many of the sorted cold calls read the upstream unloaded. Where calls stream, some
    /// of the first calls wait inside the upstream for a slot that other streams hold (a
    /// server's generation slots): they read a whole stream or more, the others the time to the
    /// first token. The first gap of more than `COLD_GAP` between neighbours splits the two; the
    /// faster calls are the reading (ADR 1222). Calls that do not stream keep all of theirs.
    fn cold_fast(&self, sorted: &[f32]) -> usize {
        if self.tail() <= sorted[0] as f64 {
            return sorted.len();
        }
        sorted
            .windows(2)
            .position(|w| w[1] as f64 > w[0] as f64 * COLD_GAP)
            .map_or(sorted.len(), |i| i + 1)
    }

    /// The cold calls' p90 so far (see `cold_sample`), once `COLD_SAMPLES` were timed; the
    /// buffer is kept for `take_cold`.
    pub fn cold_p90(&self) -> Option<f64> {
        (self.measured == 0 && self.state == State::Idle && self.n as usize >= COLD_SAMPLES).then(
            || {
                let (sorted, n) = self.sorted_samples();
                p90_of(&sorted[..self.cold_fast(&sorted[..n])])
            },
        )
    }

    /// A sorted copy of the samples taken, and how many there are.
    fn sorted_samples(&self) -> ([f32; PROBE_SAMPLES], usize) {
        let n = self.n as usize;
        let mut sorted = self.samples;
        sorted[..n].sort_unstable_by(|a, b| a.total_cmp(b));
        (sorted, n)
    }

    /// The p90 of the samples taken (at least one), and the mean and its standard error of
    /// those not slower than `OUTLIER_MADS` allows.
    fn reading(&self) -> Measured {
        let (sorted, n) = self.sorted_samples();
        reading_of(&sorted[..n], self.flag(KEEP_OUTLIERS))
    }
}

/// The p90 of sorted samples (at least one), and the mean and its standard error of those not
/// slower than `OUTLIER_MADS` allows (all of them with `keep_outliers`).
fn reading_of(sorted: &[f32], keep_outliers: bool) -> Measured {
    let cut = if keep_outliers {
        f64::INFINITY
    } else {
        outlier_cut(sorted)
    };
    // Sorted: the calls kept are a prefix.
    let kept = sorted.partition_point(|&x| x as f64 <= cut);
    let xs = || sorted[..kept].iter().map(|&x| x as f64);
    let mean = xs().sum::<f64>() / kept as f64;
    let var =
        xs().map(|x| (x - mean) * (x - mean)).sum::<f64>() / kept.saturating_sub(1).max(1) as f64;
    Measured {
        p90: p90_of(sorted),
        mean,
        se: (var / kept as f64).sqrt(),
    }
}

/// The latency above which a call of a probe is an outlier: `OUTLIER_MADS` median absolute
/// deviations above the median of the sorted samples.
fn outlier_cut(sorted: &[f32]) -> f64 {
    let n = sorted.len();
    let median = sorted[n / 2] as f64;
    let mut dev = [0f32; PROBE_SAMPLES];
    let dev = &mut dev[..n];
    for (d, &x) in dev.iter_mut().zip(sorted) {
        *d = (x as f64 - median).abs() as f32;
    }
    dev.sort_unstable_by(|a, b| a.total_cmp(b));
    let mad = (dev[n / 2] as f64).max(MAD_FLOOR * median);
    median + OUTLIER_MADS * mad
}

/// The p90 of sorted samples: the order statistic k with k / (n + 1) ≥ 0.9, whose expected
/// quantile is 0.9 (nearest rank, ceil(0.9 n), reads low on a few samples: the 9th of 10 is the
/// 0.82 quantile on average).
fn p90_of(sorted: &[f32]) -> f64 {
    let n = sorted.len();
    let rank = ((0.9 * (n + 1) as f64).ceil() as usize).clamp(1, n);
    sorted[rank - 1] as f64
}

#[inline]
fn bound(latencies: f64, latency_ns: f64) -> u64 {
    (latencies * latency_ns).max(PROBE_MIN_NS) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;
    const LAT: f64 = 100.0 * MS as f64;
    /// At level 5 a probe times three rounds: 15 calls.
    const WANT: u64 = 15;

    fn probe() -> Probe {
        Probe::new(true, 3 * S, 10_000, 0)
    }

    /// Drive one probe at `at` with `inflight` calls in flight, level 5: drain, admit `want`
    /// calls, close. Returns the drained instant.
    fn drain_and_admit(p: &mut Probe, at: Nanos) -> Nanos {
        assert_eq!(p.tick(at, 20, 5, LAT), None);
        assert_eq!(p.hold(), Hold::Level, "draining holds at the level");
        let drained = at + 50 * MS;
        p.tick(drained, 5, 5, LAT);
        for _ in 0..WANT {
            p.admitted(drained, LAT);
        }
        assert_eq!(
            p.hold(),
            Hold::Shut,
            "all timed calls admitted: shut for this instant"
        );
        p.tick(drained + 1, 5, 5, LAT);
        assert_eq!(p.hold(), Hold::No, "admission restored while they finish");
        drained
    }

    #[test]
    fn it_starts_at_the_next_wall_clock_phase() {
        let mut p = probe();
        assert_eq!(p.tick(9 * S, 20, 5, LAT), None);
        assert_eq!(p.hold(), Hold::No);
        p.tick(10 * S, 20, 5, LAT);
        assert_eq!(p.hold(), Hold::Level);
        // Another process, created at another time, with the same wall clock: same phase.
        let mut q = Probe::new(true, 7 * S + 123, 10_000, 0);
        q.tick(9_999 * MS, 20, 5, LAT);
        assert_eq!(q.hold(), Hold::No);
        q.tick(10 * S, 20, 5, LAT);
        assert_eq!(q.hold(), Hold::Level);
        // The offset maps `now` to the wall clock: 2 s on this clock is 10 s on the wall.
        let mut r = Probe::new(true, S, 10_000, 8 * S);
        r.tick(2 * S, 20, 5, LAT);
        assert_eq!(r.hold(), Hold::Level);
    }

    #[test]
    fn it_times_the_calls_admitted_while_held_each_to_its_end() {
        let mut p = probe();
        let drained = drain_and_admit(&mut p, 10 * S);
        // A call that started before the drain is not one of them.
        let early = p.sample(drained + 10 * MS, drained - MS, 900.0 * MS as f64);
        assert_eq!(early, None);
        // All but one finish at 100..113 ms; the last one, slow, concludes the probe.
        for i in 0..WANT - 1 {
            let lat = (100 + i) as f64 * MS as f64;
            assert_eq!(p.sample(drained + 120 * MS, drained, lat), None);
        }
        let last = p.sample(drained + 400 * MS, drained, 300.0 * MS as f64);
        let m = last.expect("measured");
        // The slow one counts in the p90, not in the mean: 187 ms beyond the median, where
        // the rest are within 7 (`OUTLIER_MADS`).
        let mean = (100..100 + WANT - 1).sum::<u64>() as f64 / (WANT - 1) as f64;
        assert!((m.mean - mean * MS as f64).abs() < 1.0, "{m:?}");
        assert_eq!(
            m.p90,
            300.0 * MS as f64,
            "p90 of 15 is the worst: k/(n+1) >= 0.9"
        );
        assert_eq!(p.measured, 1);
    }

    #[test]
    fn a_probe_that_cannot_drain_measures_nothing_and_lets_go() {
        let mut p = probe();
        p.tick(10 * S, 20, 5, LAT);
        assert_eq!(p.hold(), Hold::Level);
        // The drain bound is 3 smoothed latencies, at least 200 ms.
        assert_eq!(p.tick(10 * S + 299 * MS, 20, 5, LAT), None);
        assert_eq!(p.hold(), Hold::Level);
        assert_eq!(p.tick(10 * S + 300 * MS, 20, 5, LAT), None);
        assert_eq!(p.hold(), Hold::No);
        assert_eq!(p.measured, 0);
    }

    #[test]
    fn a_probe_with_half_its_calls_back_still_measures_at_its_bound() {
        let mut p = probe();
        let drained = drain_and_admit(&mut p, 10 * S);
        for _ in 0..WANT / 2 {
            assert_eq!(p.sample(drained + 120 * MS, drained, LAT), None);
        }
        let m = p.tick(drained + 1 + 300 * MS, 5, 5, LAT);
        assert_eq!(m.expect("7 of 15 measure").mean, LAT);
        let mut q = probe();
        let drained = drain_and_admit(&mut q, 10 * S);
        for _ in 0..WANT / 2 - 1 {
            q.sample(drained + 120 * MS, drained, LAT);
        }
        let none = q.tick(drained + 1 + 300 * MS, 5, 5, LAT);
        assert_eq!(none, None, "6 of 15 do not");
    }

    #[test]
    fn a_probe_that_starts_late_for_its_phase_settles_nothing() {
        // The phase is at 10 s; half a latency (50 ms) later the others are timing their calls.
        for (start, off) in [(10 * S + 40 * MS, false), (10 * S + 60 * MS, true)] {
            let mut p = probe();
            p.tick(start, 20, 5, LAT);
            assert_eq!(p.hold(), Hold::Level);
            let late = (start - 10 * S) / MS;
            assert_eq!(p.flag(LATE), off, "started {late} ms late");
            assert!(!p.off_phase(), "its reading still counts");
            p.note_settled(true);
            p.note_settled(true);
            assert_eq!(p.flag(SETTLED), !off);
        }
    }

    #[test]
    fn a_probe_mean_carries_its_standard_error() {
        let mut p = probe();
        let drained = drain_and_admit(&mut p, 10 * S);
        let mut m = None;
        // 15 calls at 93..107 ms, the last one 120 ms: 13 ms above the rest, within
        // `OUTLIER_MADS` of a spread of ±7 ms, so it counts.
        let lats: Vec<f64> = (0..WANT)
            .map(|i| {
                if i + 1 == WANT {
                    120.0
                } else {
                    93.0 + i as f64
                }
            })
            .collect();
        for &lat in &lats {
            m = p.sample(drained + 120 * MS, drained, lat * MS as f64);
        }
        let m = m.expect("the last timed call concludes it");
        let n = WANT as f64;
        let mean = lats.iter().sum::<f64>() / n;
        let var = lats.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        assert!((m.mean / MS as f64 - mean).abs() < 1e-6, "{m:?}");
        assert!((m.se / MS as f64 - (var / n).sqrt()).abs() < 1e-6, "{m:?}");
    }

    #[test]
    fn disabled_or_interval_zero_never_holds() {
        for mut p in [Probe::new(false, 0, 10_000, 0), Probe::new(true, 0, 0, 0)] {
            for t in 0..100 {
                p.tick(t * S, 20, 5, LAT);
                assert_eq!(p.hold(), Hold::No);
            }
        }
    }

    #[test]
    fn the_interval_doubles_for_a_slow_upstream_once_settled_twice() {
        // A 1 s upstream: 25 × 3 s = 75 s → 80 s once doubled. Whether the probe at 10 s
        // holds, after these probes settled (true) or jumped (false).
        let holds_at_10s = |settles: &[bool]| {
            let mut p = probe();
            p.note_baseline(1_000.0 * MS as f64);
            for &s in settles {
                p.note_settled(s);
            }
            p.tick(10 * S, 20, 5, LAT);
            p
        };
        assert_eq!(holds_at_10s(&[]).hold(), Hold::Level, "not settled yet");
        assert_eq!(holds_at_10s(&[true]).hold(), Hold::Level, "settled once");
        assert_eq!(
            holds_at_10s(&[true, false, true]).hold(),
            Hold::Level,
            "a jump between: not twice in a row"
        );
        let mut q = holds_at_10s(&[true, true]);
        assert_eq!(q.hold(), Hold::No);
        q.tick(80 * S, 20, 5, LAT);
        assert_eq!(q.hold(), Hold::Level);
    }

    #[test]
    fn streams_cold_calls_that_waited_for_a_slot_are_not_the_reading() {
        // Five cold calls on 4 generation slots: 4 read the first token (20 ms), the fifth
        // waited a 3.2 s stream for a slot. Streams: the four are the reading. Plain calls
        // with the same spread keep all five (ADR 1222).
        let ms = MS as f64;
        let cold = |tail_ms: f64| {
            let mut p = probe();
            p.note_tail((tail_ms * ms) as f32);
            for lat in [20.0, 21.0, 20.0, 22.0, 3_220.0] {
                p.cold_sample(lat * ms, false);
            }
            (p.cold_p90().unwrap() / ms, p.take_cold().unwrap().0)
        };
        let (p90, m) = cold(3_200.0);
        assert_eq!((p90, m.p90 / ms), (22.0, 22.0));
        assert!((m.mean / ms - 20.75).abs() < 1e-6, "mean {}", m.mean / ms);
        let (p90, m) = cold(0.0);
        assert_eq!((p90, m.p90 / ms), (3_220.0, 3_220.0));
    }
}
