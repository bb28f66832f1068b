//! Calls that name a priority or a tenant: their level, and the queue by level. Off the hot
//! path of calls that name neither (ADR 1001).

use napi::{Error, Result, Status};
use napi_derive::napi;

use super::cell::{budget_of, publish, set_cell, slot};
use super::codes::*;
use super::engines::{acquired_code, now, with_engine};
use resilix_engine::priority::LEVELS;
use resilix_engine::{tenant_id, Priority};

/// The level of a call of priority class `priority` (0 sheddable … 4 critical) by `tenant`
/// (a non-empty string, or null for none) on `handle`, or `STALE_HANDLE`. The tenant's id (0:
/// none) goes to the clock cell's `tenant` slot, where `acquireCosting` reads it: each value
/// crosses once, by name (ADR 1210).
#[napi(catch_unwind)]
pub fn level_of(handle: f64, priority: u32, tenant: Option<String>) -> Result<f64> {
    let p = Priority::from_code(priority).ok_or_else(|| {
        Error::new(
            Status::InvalidArg,
            format!("priority class {priority} is not 0…4"),
        )
    })?;
    let id = tenant.as_deref().map_or(0, tenant_id);
    let t = now();
    Ok(with_engine(handle, |e, k| match e.level_of(k, p, id, t) {
        Ok(level) => {
            set_cell(slot::TENANT, id as f64);
            level as f64
        }
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE))
}

/// Acquire for a call of `level` by `tenant` (from `levelOf`) with `budgetMs` to wait at most
/// (≤ 0 or not finite: no deadline): as `acquireWithin`.
#[napi(catch_unwind)]
pub fn acquire_at(handle: f64, budget_ms: f64, level: u32, tenant: f64) -> f64 {
    let t = now();
    publish(t);
    let budget = budget_of(budget_ms);
    let level = level.min(LEVELS as u32 - 1) as u8;
    let tenant = tenant_of(tenant);
    with_engine(handle, |e, k| {
        e.acquire_at(k, t, budget, level, tenant)
            .map_or(STALE_HANDLE, acquired_code)
    })
    .unwrap_or(STALE_HANDLE)
}

/// Admit the oldest waiter of `level` (the highest level waiting), by `tenant`: as
/// `admitQueued`.
#[napi(catch_unwind)]
pub fn admit_queued_at(handle: f64, level: u32, tenant: f64, deadline_ms: f64) -> f64 {
    let t = now();
    let level = level.min(LEVELS as u32 - 1) as u8;
    let tenant = tenant_of(tenant);
    let deadline = super::engines::deadline_ns(deadline_ms);
    with_engine(handle, |e, k| {
        match e.admit_queued_by(k, t, level, tenant, deadline) {
            Ok(Some(a)) => acquired_code(a),
            Ok(None) => KEEP_WAITING,
            Err(_) => STALE_HANDLE,
        }
    })
    .unwrap_or(STALE_HANDLE)
}

/// A waiter of `level` left the queue without running: as `leaveQueue`.
#[napi(catch_unwind)]
pub fn leave_queue_at(handle: f64, level: u32) -> f64 {
    let level = level.min(LEVELS as u32 - 1) as u8;
    with_engine(handle, |e, k| {
        e.leave_queue_at(k, level)
            .map_or(STALE_HANDLE, |b| b as u8 as f64)
    })
    .unwrap_or(STALE_HANDLE)
}

/// A tenant id as JS passes it back (from `levelOf`); anything else is no tenant.
pub(super) fn tenant_of(x: f64) -> u32 {
    if x.is_finite() && x >= 0.0 && x <= u32::MAX as f64 && x.fract() == 0.0 {
        x as u32
    } else {
        0
    }
}
