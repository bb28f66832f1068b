//! Options as they cross from JS: all optional, defaults applied here from the engine's
//! `Default`s. `index.js` has already checked types; ranges are checked by the
//! engine's `validate`, which names the option.

use napi::{Error, Result, Status};
use napi_derive::napi;
use resilix_engine::quota::{
    QuotaDim, QuotaOptions, COSTS, DEFAULT_MAX_COOLDOWN_MS, MAX_DIMS, MAX_LIMIT,
};
use resilix_engine::quota_headers::Dimension;
use resilix_engine::NANOS_PER_MS;

use resilix_engine::{
    Algorithm, BreakerOptions, BudgetOptions, BulkheadOptions, LimiterOptions, PolicyOptions,
    QueueOptions, RegistryOptions, ThrottleOptions,
};

/// Flat options for one engine. The public, documented shape is `ResilixOptions` in index.d.ts.
#[napi(object)]
#[derive(Default)]
pub struct NativeOptions {
    /// `false` turns the limiter off. Default true.
    pub limiter: Option<bool>,
    /// 'vegas' (default) | 'gradient2' | 'aimd' | 'fixed'.
    pub algorithm: Option<String>,
    /// Default 20 (Netflix).
    pub initial_limit: Option<f64>,
    /// Default 4 (ours, a guess).
    pub min_limit: Option<f64>,
    /// Default 200 (Netflix Gradient2Limit).
    pub max_limit: Option<f64>,
    /// Default 0.9 (Envoy, Uber).
    pub quantile: Option<f64>,
    /// Default 0.2 (Netflix Gradient2Limit).
    pub smoothing: Option<f64>,
    /// Default 1.5 (Netflix Gradient2Limit).
    pub rtt_tolerance: Option<f64>,
    /// Default 2000 (Uber).
    pub window_min_ms: Option<f64>,
    /// Default 30000 (Uber).
    pub window_max_ms: Option<f64>,
    /// Default 50 (failsafe-go).
    pub min_samples: Option<f64>,
    /// Default 10000: how often the no-load latency is re-measured by a probe; 0: never.
    pub probe_interval_ms: Option<f64>,
    /// Default 100 (Envoy).
    pub update_interval_ms: Option<f64>,
    /// Default 0.9 (Netflix AIMDLimit).
    pub backoff_ratio: Option<f64>,
    /// `false` rejects at the limit. Default true.
    pub queue: Option<bool>,
    /// Default 2 (failsafe-go).
    pub queue_initial_factor: Option<f64>,
    /// Default 3 (failsafe-go).
    pub queue_max_factor: Option<f64>,
    /// Default 20000 (ours, a guess: twice the largest batch measured): the most calls that may
    /// wait on one key, a bound on memory.
    pub queue_max_queued: Option<f64>,
    /// `false` turns the breaker off. Default true.
    pub breaker: Option<bool>,
    pub breaker_failure_rate: Option<f64>,
    pub breaker_slow_call_rate: Option<f64>,
    pub breaker_slow_call_ms: Option<f64>,
    pub breaker_minimum_calls: Option<f64>,
    pub breaker_window_ms: Option<f64>,
    pub breaker_consecutive_failures: Option<f64>,
    pub breaker_open_ms: Option<f64>,
    pub breaker_half_open_probes: Option<f64>,
    /// Maximum concurrent calls per key; absent: no bulkhead.
    pub bulkhead_max_concurrent: Option<f64>,
    /// `false` turns the adaptive throttle off. Default true (ADR 1000).
    pub throttle: Option<bool>,
    /// Default 1.2 (ours, a guess; ADR 1000).
    pub throttle_multiplier: Option<f64>,
    /// Default 30000 (Envoy admission_control).
    pub throttle_window_ms: Option<f64>,
    /// Default 0.9 (failsafe-go).
    pub throttle_max_rejection: Option<f64>,
    /// Each key's quota, flat: `[cost, limit, windowMs]` per budget (ADR 1100); absent: none.
    pub quota: Option<Vec<f64>>,
    /// Which header dimension each cost is: 0 none, 1 requests, 2 tokens, 3 input tokens,
    /// 4 output tokens.
    pub quota_names: Option<Vec<u32>>,
    /// The longest a hint from the upstream cools a key down, ms (ADR 1104); absent: the
    /// engine's DEFAULT_MAX_COOLDOWN_MS.
    pub quota_max_cooldown_ms: Option<f64>,
    /// The per-key retry budget: default 0.2 (Envoy, failsafe-go, Finagle).
    pub retry_budget_ratio: Option<f64>,
    /// Default 3 retries a second (Envoy's and failsafe-go's minimum of 3, as a rate).
    pub retry_budget_min_per_second: Option<f64>,
    /// Default 10000 (Finagle's retry budget ttl).
    pub retry_budget_window_ms: Option<f64>,
    /// Default 1000.
    pub max_keys: Option<f64>,
    /// Default 512 bytes (ours).
    pub max_key_length: Option<f64>,
}

fn range_err(msg: String) -> Error {
    Error::new(Status::InvalidArg, msg)
}

/// A whole number for an integer option; the engine checks its range afterwards.
fn int(name: &str, v: Option<f64>, default: u64) -> Result<u64> {
    match v {
        None => Ok(default),
        Some(x)
            if x.is_finite() && x.fract() == 0.0 && x >= 0.0 && x <= u32::MAX as f64 * 1024.0 =>
        {
            Ok(x as u64)
        }
        Some(x) => Err(range_err(format!(
            "{name} must be a whole number (see its range in the README), got {x}"
        ))),
    }
}

fn int32(name: &str, v: Option<f64>, default: u32) -> Result<u32> {
    let x = int(name, v, default as u64)?;
    u32::try_from(x).map_err(|_| range_err(format!("{name} is too large, got {x}")))
}

pub(crate) fn to_options(o: &NativeOptions) -> Result<(PolicyOptions, RegistryOptions)> {
    let ld = LimiterOptions::default();
    let limiter = if o.limiter == Some(false) {
        None
    } else {
        let algorithm = match &o.algorithm {
            None => ld.algorithm,
            Some(s) => Algorithm::parse(s).ok_or_else(|| {
                range_err(format!(
                    "algorithm must be one of 'vegas', 'gradient2', 'aimd', 'fixed', got '{s}'"
                ))
            })?,
        };
        let qd = QueueOptions::default();
        Some(LimiterOptions {
            algorithm,
            initial_limit: int32("initialLimit", o.initial_limit, ld.initial_limit)?,
            min_limit: int32("minLimit", o.min_limit, ld.min_limit)?,
            max_limit: int32("maxLimit", o.max_limit, ld.max_limit)?,
            quantile: o.quantile.unwrap_or(ld.quantile),
            smoothing: o.smoothing.unwrap_or(ld.smoothing),
            rtt_tolerance: o.rtt_tolerance.unwrap_or(ld.rtt_tolerance),
            window_min_ms: int("windowMinMs", o.window_min_ms, ld.window_min_ms)?,
            window_max_ms: int("windowMaxMs", o.window_max_ms, ld.window_max_ms)?,
            min_samples: int32("minSamples", o.min_samples, ld.min_samples)?,
            probe_interval_ms: int("probeIntervalMs", o.probe_interval_ms, ld.probe_interval_ms)?,
            clock_offset_ns: crate::binding::clock::wall_clock_offset_ns(),
            update_interval_ms: int(
                "updateIntervalMs",
                o.update_interval_ms,
                ld.update_interval_ms,
            )?,
            backoff_ratio: o.backoff_ratio.unwrap_or(ld.backoff_ratio),
            queue: if o.queue == Some(false) {
                None
            } else {
                Some(QueueOptions {
                    initial_factor: o.queue_initial_factor.unwrap_or(qd.initial_factor),
                    max_factor: o.queue_max_factor.unwrap_or(qd.max_factor),
                    max_queued: int32("queue.maxQueued", o.queue_max_queued, qd.max_queued)?,
                })
            },
        })
    };
    let bd = BreakerOptions::default();
    let breaker = if o.breaker == Some(false) {
        None
    } else {
        Some(BreakerOptions {
            failure_rate: o.breaker_failure_rate.unwrap_or(bd.failure_rate),
            slow_call_rate: o.breaker_slow_call_rate.unwrap_or(bd.slow_call_rate),
            slow_call_ms: int(
                "breaker.slowCallMs",
                o.breaker_slow_call_ms,
                bd.slow_call_ms,
            )?,
            minimum_calls: int32(
                "breaker.minimumCalls",
                o.breaker_minimum_calls,
                bd.minimum_calls,
            )?,
            window_ms: int("breaker.windowMs", o.breaker_window_ms, bd.window_ms)?,
            consecutive_failures: int32(
                "breaker.consecutiveFailures",
                o.breaker_consecutive_failures,
                bd.consecutive_failures,
            )?,
            open_ms: int("breaker.openMs", o.breaker_open_ms, bd.open_ms)?,
            half_open_probes: int32(
                "breaker.halfOpenProbes",
                o.breaker_half_open_probes,
                bd.half_open_probes,
            )?,
        })
    };
    let bulkhead = match o.bulkhead_max_concurrent {
        None => None,
        v => Some(BulkheadOptions {
            max_concurrent: int32("bulkhead.maxConcurrent", v, 0)?,
        }),
    };
    let td = ThrottleOptions::default();
    let throttle = if o.throttle == Some(false) {
        None
    } else {
        Some(ThrottleOptions {
            multiplier: o.throttle_multiplier.unwrap_or(td.multiplier),
            window_ms: int("throttle.windowMs", o.throttle_window_ms, td.window_ms)?,
            max_rejection: o.throttle_max_rejection.unwrap_or(td.max_rejection),
        })
    };
    let quota = match &o.quota {
        None => None,
        Some(flat) => {
            let mut q = to_quota(flat, o.quota_names.as_deref().unwrap_or(&[]))?;
            let max_ms = int(
                "quota.maxCooldownMs",
                o.quota_max_cooldown_ms,
                DEFAULT_MAX_COOLDOWN_MS,
            )?;
            q.max_cooldown_ns = max_ms.saturating_mul(NANOS_PER_MS);
            Some(q)
        }
    };
    let rd = RegistryOptions::default();
    let registry = RegistryOptions {
        max_keys: int32("maxKeys", o.max_keys, rd.max_keys)?,
        max_key_length: int32("maxKeyLength", o.max_key_length, rd.max_key_length)?,
    };
    Ok((
        PolicyOptions {
            breaker,
            limiter,
            bulkhead,
            throttle,
            quota,
        },
        registry,
    ))
}

/// A quota from its flat form (the engine checks the ranges).
fn to_quota(flat: &[f64], names: &[u32]) -> Result<QuotaOptions> {
    let mut q = QuotaOptions::default();
    if !flat.len().is_multiple_of(3) || flat.len() / 3 > MAX_DIMS || flat.is_empty() {
        return Err(range_err(format!(
            "quota must have from 1 to {MAX_DIMS} budgets"
        )));
    }
    for (i, d) in flat.chunks(3).enumerate() {
        let cost = int("quota cost", Some(d[0]), 0)?;
        let limit = match d[1] {
            x if x.is_finite() && x.fract() == 0.0 && x >= 1.0 && x <= MAX_LIMIT as f64 => x as u64,
            x => {
                return Err(range_err(format!(
                    "a quota budget must be a whole number from 1 to {MAX_LIMIT}, got {x}"
                )))
            }
        };
        let window_ms = int("quota.windowMs", Some(d[2]), 0)?;
        q.dims[i] = QuotaDim {
            cost: cost.min(u8::MAX as u64) as u8,
            limit,
            window_ns: window_ms.saturating_mul(NANOS_PER_MS),
        };
    }
    q.len = (flat.len() / 3) as u8;
    for (c, n) in names.iter().take(COSTS).enumerate() {
        q.names[c] = Dimension::from_code(*n);
    }
    Ok(q)
}

/// The retry budget's options (the engine validates their ranges).
pub(crate) fn to_budget(o: &NativeOptions) -> Result<BudgetOptions> {
    let d = BudgetOptions::default();
    Ok(BudgetOptions {
        ratio: o.retry_budget_ratio.unwrap_or(d.ratio),
        min_per_second: o.retry_budget_min_per_second.unwrap_or(d.min_per_second),
        window_ms: int(
            "retryBudget.windowMs",
            o.retry_budget_window_ms,
            d.window_ms,
        )?,
    })
}
