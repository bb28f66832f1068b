//! `stats()` crosses as an object: off the hot path, so clarity over speed.

use napi::Result;
use napi_derive::napi;

use super::engines::{now, with_engine_id};
use resilix_engine::KeyStats;

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
    /// Latency of the last observed call (start → mark, or start → settle), ms.
    pub last_latency_ms: f64,
    /// Calls released as stuck (fn unsettled long after the caller's answer) since creation.
    pub stuck: f64,
    /// Settled calls by verdict since the key was created.
    pub verdicts: NativeVerdictCounts,
    /// Refused calls by reason since the key was created.
    pub rejections: NativeRejectionCounts,
    /// Calls waiting, by priority class.
    pub queued_by_priority: NativePriorityCounts,
    /// `'queue'` refusals by the refused call's priority class, since the key was created.
    pub queue_refusals_by_priority: NativePriorityCounts,
    /// Tenants whose recent usage the key tracks (at most 16).
    pub tenants: u32,
    /// The throttle's refusal probability now (0 when off or without overload in its window).
    pub throttle_probability: f64,
    /// Retries granted since the key was created.
    pub retries: f64,
    /// Retries its retry budget refused since the key was created.
    pub retry_budget_refusals: f64,
    /// The key's quota, or null without one.
    pub quota: Option<NativeQuotaStats>,
}

/// A quota's state: flat numbers, named by the JS layer.
#[napi(object)]
pub struct NativeQuotaStats {
    /// `[cost, spent, limit, windowMs]` per budget.
    pub budgets: Vec<f64>,
    /// Calls waiting for budget.
    pub waiting: u32,
    /// Cooldowns begun since the key was created.
    pub cooldowns: f64,
    /// How long the key still cools down, ms.
    pub cooling_ms: f64,
}

#[napi(object)]
pub struct NativePriorityCounts {
    pub critical: f64,
    pub high: f64,
    pub normal: f64,
    pub low: f64,
    pub sheddable: f64,
}

impl NativePriorityCounts {
    fn of<T: Copy + Into<f64>>(c: [T; 5]) -> Self {
        NativePriorityCounts {
            sheddable: c[0].into(),
            low: c[1].into(),
            normal: c[2].into(),
            high: c[3].into(),
            critical: c[4].into(),
        }
    }
}

#[napi(object)]
pub struct NativeVerdictCounts {
    pub success: f64,
    pub failure: f64,
    pub overload: f64,
    pub answered: f64,
    pub timeout: f64,
    pub rejected: f64,
    pub cancelled: f64,
}

#[napi(object)]
pub struct NativeRejectionCounts {
    pub limit: f64,
    pub queue: f64,
    pub bulkhead: f64,
    pub breaker: f64,
    pub throttle: f64,
    pub quota: f64,
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
            last_latency_ms: s.last_latency_ns as f64 / 1e6,
            stuck: s.stuck as f64,
            verdicts: NativeVerdictCounts {
                success: s.verdicts[0] as f64,
                failure: s.verdicts[1] as f64,
                overload: s.verdicts[2] as f64,
                answered: s.verdicts[3] as f64,
                timeout: s.verdicts[4] as f64,
                rejected: s.verdicts[5] as f64,
                cancelled: s.verdicts[6] as f64,
            },
            rejections: NativeRejectionCounts {
                limit: s.rejections[1] as f64,
                queue: s.rejections[2] as f64,
                bulkhead: s.rejections[3] as f64,
                breaker: s.rejections[4] as f64,
                throttle: s.rejections[6] as f64,
                quota: s.rejections[7] as f64,
            },
            queued_by_priority: NativePriorityCounts::of(s.queued_by_priority),
            queue_refusals_by_priority: NativePriorityCounts::of(
                s.queue_refusals_by_priority.map(|n| n as f64),
            ),
            tenants: s.tenants,
            throttle_probability: s.throttle_probability,
            retries: 0.0,
            retry_budget_refusals: 0.0,
            quota: None,
        }
    }
}

/// The stats of a live key, or null when the key is not in the registry.
#[napi(catch_unwind)]
pub fn stats(id: f64, key: String) -> Result<Option<NativeStats>> {
    let t = now();
    with_engine_id(id, |e| {
        let mut s = NativeStats::from(e.stats_by_name(&key, t)?);
        let (retried, refused) = e.retry_counts_by_name(&key).unwrap_or((0, 0));
        s.retries = retried as f64;
        s.retry_budget_refusals = refused as f64;
        s.quota = e
            .quota_stats_by_name(&key, t)
            .map(|(budgets, waiting, cooldowns, cooling)| NativeQuotaStats {
                budgets,
                waiting,
                cooldowns: cooldowns as f64,
                cooling_ms: cooling as f64 / 1e6,
            });
        Some(s)
    })
}
