//! Numeric results of the hot-path functions. Non-negative values are permits or counts;
//! negative values are outcomes, mirrored as constants in `index.js`.

/// The call must wait in the queue.
pub const QUEUED: f64 = -1.0;
/// The key handle names no live key (evicted): resolve the key again.
pub const STALE_HANDLE: f64 = -2.0;
/// `admitQueued`: the oldest waiter must keep waiting.
pub const KEEP_WAITING: f64 = -3.0;
/// `settle`/`mark`: the permit is stale, already settled, or was never issued.
pub const STALE_PERMIT: f64 = -4.0;
/// `settle`: the verdict code is unknown.
pub const BAD_VERDICT: f64 = -5.0;
/// `resolveKey`: the registry is full of busy keys.
pub const REGISTRY_FULL: f64 = -15.0;
/// A rejection is `-10 - reason`: -11 limit, -12 queue, -13 bulkhead, -14 breaker.
pub const REJECTED_BASE: f64 = -10.0;
