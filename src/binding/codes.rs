//! Numeric results of the hot-path functions. Non-negative values are permits or counts;
//! negative values are outcomes. JS reads every code from `wireCodes()` once at load, so each
//! is written only here.

use napi_derive::napi;
use resilix_engine::breaker::BreakerState;
use resilix_engine::options::MAX_MS;
use resilix_engine::priority::{DEFAULT_LEVEL, LEVELS, RANKS};
use resilix_engine::quota_headers::Dimension;
use resilix_engine::registry::INDEX_BITS;
use resilix_engine::{Algorithm, Priority, Refusal, RejectReason, Verdict};

use super::cell::slot;

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
/// `acquireCosting`: wait for budget; the time to ask again is in the clock cell.
pub const QUOTA_WAIT: f64 = -6.0;
/// `acquireCosting`: the call costs more than a budget's whole window: refused as `'quota'`.
pub const QUOTA_OVERSIZE: f64 = -7.0;
/// A rejection is `-10 - reason`: -11 limit, -12 queue, -13 bulkhead, -14 breaker,
/// -16 throttle, -17 quota.
pub const REJECTED_BASE: f64 = -10.0;
/// `resolveKey`: the registry is full of keys that are protecting something.
pub const REGISTRY_FULL: f64 = REJECTED_BASE - RejectReason::Registry as u8 as f64;

/// `settle`'s code for an `overload` that asked no wait (a 503 without `Retry-After`): an
/// overload to every policy but the throttle, which reads it as a failure (ADR 1004).
pub const UNAVAILABLE: u32 = Verdict::ALL.len() as u32;

/// `retryDecide`: a refusal is `-100 - refusal` (`retryRefusals` names them).
pub const RETRY_REFUSED_BASE: f64 = -100.0;

/// `createEngine`: the thread already holds the most engines a handle can address.
pub const TOO_MANY_ENGINES: f64 = -1.0;

/// Every reason, at its code.
const REASONS: [RejectReason; 7] = [
    RejectReason::Limit,
    RejectReason::Queue,
    RejectReason::Bulkhead,
    RejectReason::Breaker,
    RejectReason::Registry,
    RejectReason::Throttle,
    RejectReason::Quota,
];

/// `observe`'s breaker code (`limit × 4 + code`): `BREAKER_STATES[code]` in JS.
pub fn breaker_code(state: Option<BreakerState>) -> f64 {
    match state {
        Some(BreakerState::Closed) => 0.0,
        Some(BreakerState::Open) => 1.0,
        Some(BreakerState::HalfOpen) => 2.0,
        None => 3.0,
    }
}

#[napi(object)]
pub struct WireCodes {
    pub queued: f64,
    pub stale_handle: f64,
    pub keep_waiting: f64,
    pub stale_permit: f64,
    pub bad_verdict: f64,
    pub rejected_base: f64,
    pub registry_full: f64,
    /// Reason names by code: a rejection `c` is `reasons[REJECTED_BASE - c]`; index 0 is unused.
    pub reasons: Vec<Option<String>>,
    /// Key handles modulo this are the key's registry slot.
    pub slot_span: f64,
    /// Breaker state names by `observe`'s code; the last (no breaker) is null.
    pub breaker_states: Vec<Option<String>>,
    /// Verdict names by the code `settle` takes.
    pub verdicts: Vec<String>,
    /// `settle`'s code for an overload that is no evidence for the throttle (ADR 1004).
    pub unavailable: u32,
    pub too_many_engines: f64,
    pub retry_refused_base: f64,
    /// Why a retry was refused, by code: `retryRefusals[RETRY_REFUSED_BASE - c]`; index 0 unused.
    pub retry_refusals: Vec<Option<String>>,
    /// The verdicts a retry may follow (`retryOn`'s default, and all it may name).
    pub retryable: Vec<String>,
    /// Priority class names by class code (0 sheddable … 4 critical).
    pub priorities: Vec<String>,
    /// Ranks per class: a call naming no tenant is at `class × ranks + ranks − 1`.
    pub ranks: u32,
    /// Levels a key's queue orders its waiters by (classes × ranks).
    pub levels: u32,
    /// The level of a call of each class (by class code) that names no tenant: its top rank.
    pub class_levels: Vec<u32>,
    /// The level of a call that names no priority and no tenant (normal).
    pub default_level: u32,
    /// The clock cell's elements by name (ADR 1210).
    pub cell: CellSlots,
    /// Limiter algorithm names, the default first.
    pub algorithms: Vec<String>,
    /// The longest a millisecond option may be (what `setTimeout` accepts).
    pub max_ms: f64,
    /// Distinct costs a quota may name.
    pub quota_costs: u32,
    /// Budgets (a cost over a window) a quota may hold.
    pub quota_budgets: u32,
    /// Rate-limit header dimensions by code, as cost names (index 0, no dimension, unused).
    pub quota_dimensions: Vec<Option<String>>,
    pub quota_wait: f64,
    pub quota_oversize: f64,
    /// A quota budget's window when it names none, ms.
    pub quota_window_ms: f64,
    /// The longest a hint from the upstream holds a key back when `maxCooldownMs` names none, ms.
    pub quota_max_cooldown_ms: f64,
    /// How many buckets a quota charge is kept for: a store that shares the window must keep
    /// charges as long (each bucket as long as `quotaBucketUs` says).
    pub quota_ring: f64,
}

/// The clock cell's elements (hot.rs `slot`): which side writes each is said there.
#[napi(object)]
pub struct CellSlots {
    /// The engine clock as of the latest acquire, ms.
    pub now: u32,
    /// The engine time from which this thread is stalled, ms (JS writes it).
    pub stalled_from: u32,
    /// When a call told `quotaWait` may ask again, ms.
    pub quota_ask_at: u32,
    /// `acquireCosting`'s deadline budget, ms (≤ 0: none).
    pub budget_ms: u32,
    /// `acquireCosting`'s level.
    pub level: u32,
    /// The tenant id `levelOf` wrote; `acquireCosting` reads it.
    pub tenant: u32,
    /// `acquireCosting`: 1 when the oldest waiter for budget asks again.
    pub head: u32,
    /// `acquireCosting`'s costs, by the quota's cost index, from this element on.
    pub costs: u32,
    /// The answer of `acquireToCell` and `acquireWithinToCell`.
    pub answer: u32,
    /// Elements in the cell.
    pub length: u32,
}

/// A header dimension's name as a quota's cost option names it.
fn cost_name(d: Dimension) -> &'static str {
    match d {
        Dimension::Requests => "requests",
        Dimension::Tokens => "tokens",
        Dimension::InputTokens => "inputTokens",
        Dimension::OutputTokens => "outputTokens",
    }
}

/// Every outcome code of the hot path, read once by the JS layer at load.
#[napi(catch_unwind)]
pub fn wire_codes() -> WireCodes {
    let mut reasons = vec![None; REASONS.len() + 1];
    for r in REASONS {
        reasons[r as usize] = Some(r.name().to_owned());
    }
    let mut breaker_states = vec![None; 4];
    for s in [
        BreakerState::Closed,
        BreakerState::Open,
        BreakerState::HalfOpen,
    ] {
        breaker_states[breaker_code(Some(s)) as usize] = Some(s.name().to_owned());
    }
    WireCodes {
        queued: QUEUED,
        stale_handle: STALE_HANDLE,
        keep_waiting: KEEP_WAITING,
        stale_permit: STALE_PERMIT,
        bad_verdict: BAD_VERDICT,
        rejected_base: REJECTED_BASE,
        registry_full: REGISTRY_FULL,
        reasons,
        slot_span: (1u64 << INDEX_BITS) as f64,
        breaker_states,
        verdicts: Verdict::ALL.iter().map(|v| v.name().to_owned()).collect(),
        unavailable: UNAVAILABLE,
        too_many_engines: TOO_MANY_ENGINES,
        retry_refused_base: RETRY_REFUSED_BASE,
        retry_refusals: {
            let mut names = vec![None; Refusal::ALL.len() + 1];
            for r in Refusal::ALL {
                names[r as usize] = Some(r.name().to_owned());
            }
            names
        },
        retryable: resilix_engine::retry::RETRYABLE
            .iter()
            .map(|v| v.name().to_owned())
            .collect(),
        priorities: Priority::ALL.iter().map(|p| p.name().to_owned()).collect(),
        ranks: RANKS as u32,
        levels: LEVELS as u32,
        class_levels: Priority::ALL
            .iter()
            .map(|p| p.level(RANKS - 1) as u32)
            .collect(),
        default_level: DEFAULT_LEVEL as u32,
        cell: CellSlots {
            now: slot::NOW as u32,
            stalled_from: slot::STALLED_FROM as u32,
            quota_ask_at: slot::QUOTA_ASK_AT as u32,
            budget_ms: slot::BUDGET_MS as u32,
            level: slot::LEVEL as u32,
            tenant: slot::TENANT as u32,
            head: slot::HEAD as u32,
            costs: slot::COSTS as u32,
            answer: slot::ANSWER as u32,
            length: slot::LEN as u32,
        },
        algorithms: Algorithm::ALL.iter().map(|a| a.name().to_owned()).collect(),
        max_ms: MAX_MS as f64,
        quota_costs: resilix_engine::quota::COSTS as u32,
        quota_budgets: resilix_engine::quota::MAX_DIMS as u32,
        quota_dimensions: std::iter::once(None)
            .chain(Dimension::ALL.map(|d| Some(cost_name(d).to_owned())))
            .collect(),
        quota_wait: QUOTA_WAIT,
        quota_oversize: QUOTA_OVERSIZE,
        quota_window_ms: resilix_engine::quota::DEFAULT_WINDOW_MS as f64,
        quota_max_cooldown_ms: resilix_engine::quota::DEFAULT_MAX_COOLDOWN_MS as f64,
        quota_ring: resilix_engine::quota_fleet::STORE_RING as f64,
    }
}
