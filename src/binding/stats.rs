//! `stats()` crosses as an object: off the hot path, so clarity over speed.

use napi::Result;
use napi_derive::napi;

use super::engines::{now, with_engine_id};
use crate::engine::KeyStats;

/// One key's state, as `Resilix.stats(key)` reports it.
#[napi(object)]
pub struct NativeStats {
    /// The concurrency limit in force (null when the limiter is off).
    pub limit: Option<u32>,
    /// Calls admitted and not yet settled (a call whose fn ignores its signal stays here).
    pub inflight: u32,
    /// Calls waiting in the queue.
    pub queued: u32,
    /// 'closed' | 'open' | 'half-open', or null when the breaker is off.
    pub breaker: Option<String>,
    /// The limit algorithm, or null when the limiter is off.
    pub algorithm: Option<String>,
    /// The limiter's no-load reference latency, ms.
    pub baseline_ms: f64,
    /// The limiter's smoothed latency, ms.
    pub smoothed_ms: f64,
    /// Samples in the limiter's current window.
    pub window_samples: u32,
    /// Calls holding a bulkhead place.
    pub bulkhead_active: u32,
}

impl From<KeyStats> for NativeStats {
    fn from(s: KeyStats) -> Self {
        NativeStats {
            limit: s.algorithm.map(|_| s.limit),
            inflight: s.inflight,
            queued: s.queued,
            breaker: s.breaker.map(|b| b.name().to_owned()),
            algorithm: s.algorithm.map(|a| a.name().to_owned()),
            baseline_ms: s.baseline_ms,
            smoothed_ms: s.smoothed_ms,
            window_samples: s.window_samples,
            bulkhead_active: s.bulkhead_active,
        }
    }
}

/// The stats of a live key, or null when the key is not in the registry.
#[napi(catch_unwind)]
pub fn stats(id: u32, key: String) -> Result<Option<NativeStats>> {
    let t = now();
    with_engine_id(id, |e| e.stats_by_name(&key, t).map(NativeStats::from))
}
