//! What the world asks of a client's limiter, whichever it is: the real engine (`client.rs`)
//! or the comparison model (`netflix.rs`). A leaf, so that neither needs the other for it.

use resilix_engine::retry::Settled;
use resilix_engine::{Nanos, Priority, RetryPolicy, Verdict, DEFAULT_LEVEL};

/// What a new call gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acq {
    Run(u64),
    Queued,
    Refused,
}

/// What the oldest waiter gets when the client tries to admit it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    Run(u64),
    Wait,
    /// Refused while waiting (only a breaker inside the policy set does that).
    Drop,
}

pub trait ClientLimiter {
    /// `budget_ns`: the caller's deadline from now (`u64::MAX`: none).
    fn acquire(&mut self, now: Nanos, budget_ns: u64) -> Acq;
    fn admit_queued(&mut self, now: Nanos) -> Wake;
    fn leave_queue(&mut self);
    /// `acquire` for a call of `priority` by `tenant` (0: none), with the level it waits at.
    /// A limiter without priorities queues every call at the default level.
    fn acquire_as(
        &mut self,
        now: Nanos,
        budget_ns: u64,
        _priority: Priority,
        _tenant: u32,
    ) -> (Acq, u8) {
        (self.acquire(now, budget_ns), DEFAULT_LEVEL)
    }
    /// `admit_queued` for the oldest waiter of `level`, by `tenant`.
    fn admit_queued_at(&mut self, now: Nanos, _level: u8, _tenant: u32) -> Wake {
        self.admit_queued(now)
    }
    /// `admit_queued_at` for a waiter whose deadline is `deadline` (0: none), as the JS layer
    /// passes it.
    fn admit_queued_by(&mut self, now: Nanos, level: u8, tenant: u32, _deadline: Nanos) -> Wake {
        self.admit_queued_at(now, level, tenant)
    }
    /// `leave_queue` for a waiter of `level`.
    fn leave_queue_at(&mut self, _level: u8) {
        self.leave_queue()
    }
    fn mark(&mut self, permit: u64, now: Nanos);
    fn settle(&mut self, permit: u64, verdict: Verdict, now: Nanos);
    /// (limit, inflight, queued) now.
    fn snapshot(&self, now: Nanos) -> (u32, u32, u32);
    /// The no-load latency the limiter compares against, in ms (NaN when it keeps none).
    fn baseline_ms(&self, _now: Nanos) -> f64 {
        f64::NAN
    }
    /// Whether a settled attempt is retried, and after how long (`None`: it is not). Only the
    /// real engine decides retries; a client without one never retries this way.
    fn retry(&mut self, _policy: &RetryPolicy, _s: &Settled, _now: Nanos) -> Option<u64> {
        None
    }
    /// The next acquire is a retry `retry` let through: its throttle does not draw it again
    /// (ADR 1004), as the JS layer does.
    fn retry_pass(&mut self, _now: Nanos) {}
    /// Whether the limit has been learnt from a window (the engine's breaker excuses slow calls
    /// before that).
    fn sized(&self) -> bool {
        true
    }
}
