//! Retry decisions for the JS layer's retry loop: one plain synchronous call per settled
//! attempt that is not a success, off the hot path. The engine decides; JS waits and runs.

use napi_derive::napi;

use super::codes::{RETRY_REFUSED_BASE, STALE_HANDLE};
use super::engines::{now, permit_of, with_engine};
use resilix_engine::retry::Settled;
use resilix_engine::{Decision, Jitter, RetryOn, RetryPolicy, Verdict};

/// The next acquire on `handle` is a retry its throttle let through when `retryDecide`
/// decided it: it is not drawn again (ADR 1004). Called right before that acquire.
#[napi(catch_unwind)]
pub fn throttle_pass(handle: f64) {
    let t = now();
    let _ = with_engine(handle, |e, k| e.grant_throttle_pass(k, t));
}

/// Milliseconds as nanoseconds; NaN, negatives and infinities are `None`.
fn ns(ms: f64) -> Option<u64> {
    (ms.is_finite() && ms >= 0.0).then(|| (ms.min(u64::MAX as f64 / 1e6) * 1e6) as u64)
}

/// Whether the attempt that just settled on `handle` is retried: the delay in ms (≥ 0), or
/// `RETRY_REFUSED_BASE - refusal` (codes.rs), or `STALE_HANDLE`. `attempts`: attempts made;
/// `hintMs`, `remainingMs`: negative for none. `permit`: the attempt's permit when it is still
/// held (an HTTP response decided on at its headers): no retry when its verdict would open the
/// breaker; -1 for a settled attempt. The policy's numbers were validated in JS; out-of-range
/// ones are clamped here, never trusted.
#[allow(clippy::too_many_arguments)]
#[napi(catch_unwind)]
pub fn retry_decide(
    handle: f64,
    permit: f64,
    attempts: f64,
    verdict: u32,
    hint_ms: f64,
    remaining_ms: f64,
    previous_delay_ms: f64,
    max_attempts: f64,
    base_ms: f64,
    max_delay_ms: f64,
    decorrelated: bool,
    retry_on: u32,
    max_retry_after_ms: f64,
) -> f64 {
    let t = now();
    let count = |x: f64| x.clamp(0.0, u32::MAX as f64) as u32;
    let Some(verdict) = Verdict::from_code(verdict) else {
        return RETRY_REFUSED_BASE - 1.0;
    };
    let max_delay_ns = ns(max_delay_ms).unwrap_or(0);
    let policy = RetryPolicy {
        max_attempts: count(max_attempts),
        base_ns: ns(base_ms).unwrap_or(0).min(max_delay_ns),
        max_delay_ns,
        jitter: if decorrelated {
            Jitter::Decorrelated
        } else {
            Jitter::Full
        },
        retry_on: RetryOn::from_mask(retry_on),
        max_retry_after_ns: ns(max_retry_after_ms).unwrap_or(0),
    };
    let s = Settled {
        attempts: count(attempts),
        verdict,
        hint_ns: ns(hint_ms),
        remaining_ns: ns(remaining_ms),
        previous_delay_ns: ns(previous_delay_ms).unwrap_or(0),
    };
    let held = permit_of(permit);
    with_engine(handle, |e, k| {
        match e.retry_unsettled(k, held, &policy, &s, t) {
            Ok(Decision::Retry { delay_ns }) => delay_ns as f64 / 1e6,
            Ok(Decision::Stop(r)) => RETRY_REFUSED_BASE - r as u8 as f64,
            Err(_) => STALE_HANDLE,
        }
    })
    .unwrap_or(STALE_HANDLE)
}
