//! What one settled call tells the limit algorithm (Netflix's `(startTime, rtt, inflight, didDrop)`).

use crate::Verdict;

/// One observation. Time enters the algorithms only through samples and `now`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sample {
    /// Start → `mark()` when mark was called, else start → settle.
    pub latency_ns: u64,
    /// Start → settle: how long the call held its slot (a 45 s stream holds it 45 s).
    pub duration_ns: u64,
    /// Calls in flight at acquire, this one included (Netflix's convention).
    pub inflight: u32,
    /// How the call ended. `Rejected` and `Cancelled` never reach an algorithm.
    pub verdict: Verdict,
    /// The call waited in our queue first: a timeout may have spent its deadline with us.
    pub waited: bool,
    /// It was counted while in flight as queued at the upstream (no first byte long past the
    /// usual): the limit already answered for its wait (ADR 0118).
    pub late: bool,
}
