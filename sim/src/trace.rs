//! What one run records: the limiters' state every tick and every call that ended.

use resilix_engine::breaker::TripCause;
use resilix_engine::Verdict;

pub const TICK_NS: u64 = 100_000_000;

#[derive(Clone, Copy, Debug)]
pub struct CallRecord {
    pub client: u16,
    /// How the call ended for its caller. A call that timed out while still in our own queue
    /// is a `Timeout` with `admitted == false` (the limiter saw nothing).
    pub verdict: Verdict,
    pub admitted: bool,
    /// When the caller made the call.
    pub created: u64,
    /// When the limiter admitted it (0: never).
    pub started: u64,
    /// When the call ended for its caller (settle, or queue timeout).
    pub end: u64,
    /// What the limiter saw: admission → response start (mark), else → settle.
    pub latency_ns: u64,
    /// The call's group in a scenario with a `Mix` (its class or tenant), else 0.
    pub group: u8,
}

#[derive(Clone, Debug, Default)]
pub struct Trace {
    /// `[client][tick]`, one tick every `TICK_NS` from t = 0.
    pub limit: Vec<Vec<u32>>,
    pub inflight: Vec<Vec<u32>>,
    pub queued: Vec<Vec<u32>>,
    /// `[client][tick]`: the limiter's baseline in ms (NaN for a limiter without one).
    pub baseline_ms: Vec<Vec<f64>>,
    /// Upstream servers and median service time per tick (for capacity and no-load latency).
    pub servers: Vec<u32>,
    pub median_ns: Vec<f64>,
    pub calls: Vec<CallRecord>,
    /// Acquire attempts and refusals per tick, all clients together.
    pub attempts: Vec<u32>,
    pub refused: Vec<u32>,
    /// Refusal times, at most one per 10 ms (enough to find the first refusal after a time).
    pub refusal_times: Vec<u64>,
    /// When (and why) the engine's own breaker, watching alongside, would have opened.
    pub breaker_trips: Vec<(u64, TripCause)>,
    /// The same from the breaker's documented rule (breaker_rule.rs), as a cross-check.
    pub rule_trips: Vec<u64>,
    /// Calls sent to the upstream: `(when, attempt)`, attempt 1 a first attempt (RetryStorm).
    pub sent: Vec<(u64, u8)>,
    /// Refused calls of a scenario with a `Mix`: `(when, group)`.
    pub group_refusals: Vec<(u64, u8)>,
}

impl Trace {
    pub fn ticks(&self) -> usize {
        self.servers.len()
    }

    pub fn tick_of(t_ns: u64) -> usize {
        (t_ns / TICK_NS) as usize
    }
}
