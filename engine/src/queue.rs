//! The queue factors' ramp (ADR 0005). Pure: counts in, decision out.
//!
//! Counted on total outstanding calls `o = inflight + queued` (ADR 0005; failsafe-go
//! counts only waiters, see README): below `L` run at once; up to `initialFactor·L` wait; up to
//! `maxFactor·L` wait with a rejection chance rising linearly from 0 to 1; beyond, reject.
//! The limiter applies the ramp only to a standing queue (ADR 0114, `standing.rs`).

use crate::options::QueueOptions;
use crate::rng::SplitMix64;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Take a slot now.
    Run,
    /// Wait in the caller's FIFO queue.
    Queue,
    /// Refused at the limit with no queue configured (`reason: 'limit'`).
    RejectLimit,
    /// Refused by the queue's ramp or bound (`reason: 'queue'`).
    RejectQueue,
}

/// Why the queue refused a call (ADR 0114); the binding tells the caller which.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum QueueRefusal {
    /// The queue is standing and the factors' ramp shed the call.
    Standing = 1,
    /// The call could not leave the queue within its deadline.
    Deadline = 2,
    /// The key already holds `maxQueued` waiting calls.
    Full = 3,
    /// Its turn came with less of its deadline left than a stream holds its slot: run, it
    /// would have been cut mid-stream (ADR 0118).
    Turn = 4,
}

impl QueueRefusal {
    pub fn name(self) -> &'static str {
        match self {
            QueueRefusal::Standing => "standing",
            QueueRefusal::Deadline => "deadline",
            QueueRefusal::Full => "full",
            QueueRefusal::Turn => "turn",
        }
    }
}

/// Decide what a new call does. `run_limit` is what may run now; the queue's bounds are
/// factors of `limit` (the two differ only while a baseline probe holds admission lower: its
/// extra calls wait; without a queue they are refused). `rng` is drawn only inside the ramp.
#[inline]
pub fn admit(
    inflight: u32,
    queued: u32,
    run_limit: u32,
    limit: u32,
    queue: Option<&QueueOptions>,
    rng: &mut SplitMix64,
) -> Admission {
    // Waiters go first (FIFO): a newcomer runs at once only when nobody is waiting.
    if queued == 0 && inflight < run_limit {
        return Admission::Run;
    }
    let Some(q) = queue else {
        // Without a queue a probe's hold refuses: a probe that let calls run up to `limit` never
        // drained, and a baseline learnt under load stayed (ADR 0113 "Without the queue").
        return Admission::RejectLimit;
    };
    let p_reject = shed_share(inflight, queued, limit, q);
    if p_reject >= 1.0 {
        return Admission::RejectQueue;
    }
    if p_reject <= 0.0 {
        return Admission::Queue;
    }
    if rng.next_f64() < p_reject {
        Admission::RejectQueue
    } else {
        Admission::Queue
    }
}

/// The share of arrivals the factors' ramp sheds at `inflight + queued` outstanding calls:
/// 0 below `initialFactor·L`, rising linearly to 1 at `maxFactor·L`.
#[inline]
pub fn shed_share(inflight: u32, queued: u32, limit: u32, q: &QueueOptions) -> f64 {
    let outstanding = (inflight + queued) as f64;
    let l = limit as f64;
    let wait_bound = q.initial_factor * l;
    let reject_bound = q.max_factor * l;
    if outstanding < wait_bound {
        return 0.0;
    }
    if outstanding >= reject_bound {
        return 1.0;
    }
    (outstanding - wait_bound) / (reject_bound - wait_bound)
}
