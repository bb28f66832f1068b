//! Circuit breaker (v0.1): closed → open → half-open → closed, lazily driven by `now`.
//! FOUNDATION VERSION: consecutive-failure trip only. The rate/slow-call window and the full
//! half-open protocol arrive with the policies issue.

use crate::engine::options::BreakerOptions;
use crate::engine::{Nanos, Verdict, NANOS_PER_MS};

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

#[derive(Clone, Debug)]
pub struct Breaker {
    opts: BreakerOptions,
    state: BreakerState,
    opened_at: Nanos,
    consecutive: u32,
    probes_out: u32,
    probes_ok: u32,
}

impl Breaker {
    pub fn new(opts: &BreakerOptions) -> Self {
        Breaker { opts: *opts, state: BreakerState::Closed, opened_at: 0, consecutive: 0, probes_out: 0, probes_ok: 0 }
    }

    /// `Some(is_probe)` when the call may pass, `None` when the breaker refuses it.
    #[inline]
    pub fn try_acquire(&mut self, now: Nanos) -> Option<bool> {
        match self.state {
            BreakerState::Closed => Some(false),
            BreakerState::Open => {
                if now.saturating_sub(self.opened_at) < self.opts.open_ms * NANOS_PER_MS {
                    return None;
                }
                self.state = BreakerState::HalfOpen;
                self.probes_out = 0;
                self.probes_ok = 0;
                self.try_acquire(now)
            }
            BreakerState::HalfOpen => {
                if self.probes_out >= self.opts.half_open_probes {
                    return None;
                }
                self.probes_out += 1;
                Some(true)
            }
        }
    }

    /// A probe the breaker admitted was refused further in: give its place back.
    pub fn release_probe(&mut self) {
        self.probes_out = self.probes_out.saturating_sub(1);
    }

    pub fn on_result(&mut self, now: Nanos, verdict: Verdict, _latency_ns: u64, probe: bool) {
        let failed = matches!(verdict, Verdict::Failure | Verdict::Timeout);
        if verdict.is_ignored() {
            if probe {
                self.release_probe();
            }
            return;
        }
        match self.state {
            BreakerState::Closed => {
                if failed {
                    self.consecutive += 1;
                    if self.consecutive >= self.opts.consecutive_failures {
                        self.open(now);
                    }
                } else {
                    self.consecutive = 0;
                }
            }
            BreakerState::HalfOpen if probe => {
                if failed {
                    self.open(now);
                } else {
                    self.probes_ok += 1;
                    if self.probes_ok >= self.opts.half_open_probes {
                        self.state = BreakerState::Closed;
                        self.consecutive = 0;
                    }
                }
            }
            _ => {}
        }
    }

    fn open(&mut self, now: Nanos) {
        self.state = BreakerState::Open;
        self.opened_at = now;
        self.consecutive = 0;
    }

    /// The state as of `now` (an open breaker whose wait is over reads as half-open).
    pub fn state(&self, now: Nanos) -> BreakerState {
        if self.state == BreakerState::Open && now.saturating_sub(self.opened_at) >= self.opts.open_ms * NANOS_PER_MS {
            return BreakerState::HalfOpen;
        }
        self.state
    }
}
