//! Circuit breaker (v0.1): closed → open → half-open → closed, lazily driven by `now`.
//!
//! - **Closed**: every observed result lands in a rolling window of `BUCKETS` time buckets over
//!   `window_ms`. Once the window holds `minimum_calls`, the breaker opens when the failure
//!   rate reaches `failure_rate` or the slow-call rate reaches `slow_call_rate` (resilience4j's
//!   "equal or greater"). Independently, `consecutive_failures` failures in a row open it
//!   whatever the volume: the low-traffic backstop (8 calls a minute never fill a window).
//! - **Open**: every call is refused. After `open_ms` the *next acquire* moves it to half-open
//!   (no timer: ADR 0001).
//! - **Half-open**: admits `half_open_probes` probes and refuses the rest. A probe that fails or
//!   is slow reopens it; when all probes succeed it closes with an empty window.
//!
//! Verdicts (ADR 0108): `Failure` and `Timeout` are failures; `Overload` and `Answered` are not
//! (the upstream answered); `Rejected` and `Cancelled` are ignored, and a probe whose call was
//! ignored gives its probe place back. Slowness is judged on the latency sample (start → first
//! `mark()`, else start → settle), so a 45 s stream with a 280 ms first token is not slow.
//!
//! Probes carry the half-open *cycle* they were admitted in, so a probe from an earlier cycle
//! that settles late (it hung until its timeout) cannot decide a later cycle.
//!
//! Fixed size, no allocation: the window is an inline array; time only moves forwards here (a
//! clock that goes backwards is read as standing still).

use crate::options::BreakerOptions;
use crate::{Nanos, Verdict, NANOS_PER_MS};

/// Buckets in the rolling window. 10 is resilience4j's and Polly's granularity (Polly splits
/// its sampling duration into 10 windows): the window slides in steps of `window_ms / 10`, so
/// it covers between 90 % and 100 % of `window_ms` at any moment.
pub const BUCKETS: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerState {
    pub fn name(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half-open",
        }
    }
}

/// Why a breaker opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TripCause {
    /// The window's failure rate reached `failure_rate` (with `minimum_calls` in the window).
    FailureRate,
    /// The window's slow-call rate reached `slow_call_rate` (with `minimum_calls` in the window).
    SlowCallRate,
    /// `consecutive_failures` failures in a row, whatever the volume.
    Consecutive,
    /// A half-open probe failed or was slow.
    Probe,
}

impl TripCause {
    pub fn name(self) -> &'static str {
        match self {
            TripCause::FailureRate => "failure-rate",
            TripCause::SlowCallRate => "slow-call-rate",
            TripCause::Consecutive => "consecutive-failures",
            TripCause::Probe => "probe",
        }
    }
}

/// The last state change, for events. `seq` counts every change since the breaker was made,
/// so a poller that remembers the last `seq` it saw knows whether (and how many) changes
/// happened since. One engine call changes the state at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BreakerTransition {
    pub seq: u64,
    pub from: BreakerState,
    pub to: BreakerState,
    /// Engine time of the change (for open → half-open: the acquire that noticed it).
    pub at: Nanos,
    /// Why it opened; `None` for changes to half-open or closed.
    pub cause: Option<TripCause>,
}

/// What the rolling window holds now (results of calls settled while closed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowCounts {
    pub calls: u32,
    pub failures: u32,
    pub slow: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    /// `now / bucket_ns + 1` of the bucket's slice of time; 0 = never used.
    epoch: u64,
    calls: u32,
    failures: u32,
    slow: u32,
}

#[derive(Clone, Debug)]
pub struct Breaker {
    opts: BreakerOptions,
    state: BreakerState,
    opened_at: Nanos,
    open_ns: u64,
    slow_ns: u64,
    bucket_ns: u64,
    buckets: [Bucket; BUCKETS],
    consecutive: u32,
    /// The current (or last) half-open cycle; never 0, which means "not a probe".
    cycle: u32,
    /// Probe places taken in this cycle (given back by ignored probes).
    probes_taken: u32,
    /// Probes of this cycle that succeeded.
    probes_ok: u32,
    /// The latest `now` seen: time never runs backwards inside the breaker.
    latest: Nanos,
    /// `epoch(latest)` and the first instant of the next epoch, kept by `advance` so that a
    /// settle divides the clock once per bucket slice, not twice per call (perf, ADR 0502).
    latest_epoch: u64,
    next_epoch_at: Nanos,
    /// The window's counts as of `latest_epoch`: summed from the buckets once per bucket slice
    /// (in `advance`), then kept by `record`, so that a settle does not add up 10 buckets
    /// (perf, ADR 0503). Saturating like the buckets, so equal to `window_at(latest_epoch)`.
    totals: WindowCounts,
    last: Option<BreakerTransition>,
}

impl Breaker {
    pub fn new(opts: &BreakerOptions) -> Self {
        let window_ns = opts.window_ms.saturating_mul(NANOS_PER_MS);
        Breaker {
            opts: *opts,
            state: BreakerState::Closed,
            opened_at: 0,
            open_ns: opts.open_ms.saturating_mul(NANOS_PER_MS),
            slow_ns: opts.slow_call_ms.saturating_mul(NANOS_PER_MS),
            bucket_ns: (window_ns / BUCKETS as u64).max(1),
            buckets: [Bucket::default(); BUCKETS],
            consecutive: 0,
            cycle: 0,
            probes_taken: 0,
            probes_ok: 0,
            latest: 0,
            latest_epoch: 0,
            next_epoch_at: 0,
            totals: WindowCounts::default(),
            last: None,
        }
    }

    #[inline]
    fn advance(&mut self, now: Nanos) -> Nanos {
        self.latest = self.latest.max(now);
        if self.latest >= self.next_epoch_at {
            self.latest_epoch = self.epoch(self.latest);
            // epoch e covers [(e - 1)·bucket, e·bucket).
            self.next_epoch_at = self.latest_epoch.saturating_mul(self.bucket_ns);
            self.totals = self.window_at(self.latest_epoch);
        }
        self.latest
    }

    /// `Some(0)` when the call may pass, `Some(cycle)` (never 0) when it passes as a half-open
    /// probe of that cycle, `None` when the breaker refuses it.
    #[inline]
    pub fn try_acquire(&mut self, now: Nanos) -> Option<u32> {
        // Closed, the usual case, inline; the rest out of line (perf, ADR 0503).
        if self.state == BreakerState::Closed {
            return Some(0);
        }
        self.try_acquire_not_closed(now)
    }

    fn try_acquire_not_closed(&mut self, now: Nanos) -> Option<u32> {
        match self.state {
            BreakerState::Closed => Some(0),
            BreakerState::Open => {
                let now = self.advance(now);
                if now - self.opened_at < self.open_ns {
                    return None;
                }
                self.cycle = self.cycle.wrapping_add(1).max(1);
                self.probes_taken = 0;
                self.probes_ok = 0;
                self.transition(now, BreakerState::HalfOpen, None);
                self.take_probe()
            }
            BreakerState::HalfOpen => self.take_probe(),
        }
    }

    #[inline]
    fn take_probe(&mut self) -> Option<u32> {
        if self.probes_taken >= self.opts.half_open_probes {
            return None;
        }
        self.probes_taken += 1;
        Some(self.cycle)
    }

    /// A probe the breaker admitted was refused further in (or queued): give its place back.
    /// `probe` is what `try_acquire` returned; 0 and probes of an old cycle are no-ops.
    #[inline]
    pub fn release_probe(&mut self, probe: u32) {
        if probe != 0 && probe == self.cycle && self.state == BreakerState::HalfOpen {
            self.probes_taken = self.probes_taken.saturating_sub(1);
        }
    }

    /// A call the breaker admitted settled. `probe` is what `try_acquire` returned for it.
    /// A call at least this slow (ns) is slow (`slowCallMs`).
    #[inline]
    pub fn slow_call_ns(&self) -> u64 {
        self.slow_ns
    }

    pub fn on_result(&mut self, now: Nanos, verdict: Verdict, latency_ns: u64, probe: u32) {
        if verdict.is_ignored() {
            self.release_probe(probe);
            return;
        }
        let now = self.advance(now);
        let failed = matches!(verdict, Verdict::Failure | Verdict::Timeout);
        let slow = latency_ns >= self.slow_ns;
        match self.state {
            BreakerState::Closed => {
                // Every result observed while closed counts, even one admitted as a probe of a
                // cycle that already closed: it is a real observation of the upstream now.
                self.record(now, failed, slow);
                if failed {
                    self.consecutive = self.consecutive.saturating_add(1);
                } else {
                    self.consecutive = 0;
                }
                if self.consecutive >= self.opts.consecutive_failures {
                    self.open(now, TripCause::Consecutive);
                } else if let Some(cause) = self.rate_trip(now) {
                    self.open(now, cause);
                }
            }
            BreakerState::HalfOpen if probe != 0 && probe == self.cycle => {
                if failed || slow {
                    self.open(now, TripCause::Probe);
                } else {
                    self.probes_ok += 1;
                    if self.probes_ok >= self.opts.half_open_probes {
                        self.close(now);
                    }
                }
            }
            // Open: results of calls admitted before the trip are old news. Half-open: only
            // this cycle's probes decide.
            _ => {}
        }
    }

    /// Feed one result of a call the breaker did not gate (not a probe) and say whether this
    /// result opened it. For the simulator: a *shadow* breaker fed every settled call tells
    /// when the breaker's conditions (e.g. `TripCause::SlowCallRate` on the defaults) would
    /// have tripped, without refusing anything. Same rules as [`on_result`](Self::on_result).
    pub fn observe(&mut self, now: Nanos, verdict: Verdict, latency_ns: u64) -> Option<TripCause> {
        let seq = self.transitions();
        self.on_result(now, verdict, latency_ns, 0);
        match self.last {
            Some(t) if t.seq != seq && t.to == BreakerState::Open => t.cause,
            _ => None,
        }
    }

    #[inline]
    fn epoch(&self, now: Nanos) -> u64 {
        now / self.bucket_ns + 1
    }

    /// Count a result at `now`, which `advance` returned (so its epoch is `latest_epoch`).
    #[inline]
    fn record(&mut self, now: Nanos, failed: bool, slow: bool) {
        debug_assert_eq!(self.epoch(now), self.latest_epoch);
        let epoch = self.latest_epoch;
        let b = &mut self.buckets[(epoch % BUCKETS as u64) as usize];
        if b.epoch != epoch {
            *b = Bucket {
                epoch,
                ..Bucket::default()
            };
        }
        b.calls = b.calls.saturating_add(1);
        b.failures = b.failures.saturating_add(failed as u32);
        b.slow = b.slow.saturating_add(slow as u32);
        // The current bucket is always in the window; one it replaced never was (its slice is
        // 10 or more slices old). A saturated bucket leaves its total saturated too.
        let t = &mut self.totals;
        t.calls = t.calls.saturating_add(1);
        t.failures = t.failures.saturating_add(failed as u32);
        t.slow = t.slow.saturating_add(slow as u32);
        debug_assert_eq!(self.totals, self.window_at(epoch));
    }

    /// The window's counts as of `now` (buckets older than the window are skipped, not cleared).
    pub fn window(&self, now: Nanos) -> WindowCounts {
        self.window_at(self.epoch(now.max(self.latest)))
    }

    #[inline]
    fn window_at(&self, current: u64) -> WindowCounts {
        let mut w = WindowCounts::default();
        for b in &self.buckets {
            if b.epoch != 0 && current - b.epoch < BUCKETS as u64 {
                w.calls = w.calls.saturating_add(b.calls);
                w.failures = w.failures.saturating_add(b.failures);
                w.slow = w.slow.saturating_add(b.slow);
            }
        }
        w
    }

    #[inline]
    fn rate_trip(&self, now: Nanos) -> Option<TripCause> {
        debug_assert_eq!(self.epoch(now.max(self.latest)), self.latest_epoch);
        let w = self.totals;
        if w.calls < self.opts.minimum_calls || w.calls == 0 {
            return None;
        }
        // No failure and no slow call, the usual window: both rates are exactly 0.0, which
        // reaches no rate above 0 (every valid one); skip the two divisions (perf, ADR 0503).
        let (failure_rate, slow_rate) = (self.opts.failure_rate, self.opts.slow_call_rate);
        if w.failures == 0 && w.slow == 0 && failure_rate > 0.0 && slow_rate > 0.0 {
            return None;
        }
        let calls = w.calls as f64;
        if w.failures as f64 / calls >= failure_rate {
            return Some(TripCause::FailureRate);
        }
        if w.slow as f64 / calls >= slow_rate {
            return Some(TripCause::SlowCallRate);
        }
        None
    }

    fn open(&mut self, now: Nanos, cause: TripCause) {
        self.opened_at = now;
        self.consecutive = 0;
        self.transition(now, BreakerState::Open, Some(cause));
    }

    fn close(&mut self, now: Nanos) {
        // A fresh start: what tripped the breaker must not trip it again straight away.
        self.buckets = [Bucket::default(); BUCKETS];
        self.totals = WindowCounts::default();
        self.consecutive = 0;
        self.transition(now, BreakerState::Closed, None);
    }

    fn transition(&mut self, now: Nanos, to: BreakerState, cause: Option<TripCause>) {
        let seq = self.last.map_or(0, |t| t.seq) + 1;
        self.last = Some(BreakerTransition {
            seq,
            from: self.state,
            to,
            at: now,
            cause,
        });
        self.state = to;
    }

    /// The state as of `now` (an open breaker whose wait is over reads as half-open). Pure: the
    /// simulator and `stats()` may call it at any time without changing anything.
    pub fn state(&self, now: Nanos) -> BreakerState {
        if self.state == BreakerState::Open && now.max(self.latest) - self.opened_at >= self.open_ns
        {
            return BreakerState::HalfOpen;
        }
        self.state
    }

    /// The last state change, `None` before the first. O(1), no allocation: the binding polls
    /// `seq` after an acquire or settle and emits an event when it moved.
    #[inline]
    pub fn last_transition(&self) -> Option<BreakerTransition> {
        self.last
    }

    /// How many state changes happened so far (the `seq` of the last one).
    #[inline]
    pub fn transitions(&self) -> u64 {
        self.last.map_or(0, |t| t.seq)
    }

    /// Probe places taken in the current half-open cycle (0 outside half-open).
    pub fn probes_taken(&self) -> u32 {
        if self.state == BreakerState::HalfOpen {
            self.probes_taken
        } else {
            0
        }
    }

    pub fn options(&self) -> &BreakerOptions {
        &self.opts
    }
}
