//! Calls on a key with a quota (ADR 1100): acquire with a cost, and the quota's settle-time
//! operations. A key without a quota never comes here.

use std::ptr;

use napi::{sys, Result};
use napi_derive::napi;

use super::cell::{budget_of, cell, publish, publish_ready, slot};
use super::codes::*;
use super::engines::{acquired_code, now, with_engine};
use super::raw::{number, numbers, panicked};
use resilix_engine::priority::LEVELS;
use resilix_engine::quota::{Costs, COSTS};
use resilix_engine::quota_headers::read_header_block;
use resilix_engine::{Costed, Nanos};

/// A cost as JS passes it: a whole number ≥ 0 (JS checks it); anything else charges nothing.
#[inline]
fn cost_of(x: f64) -> u64 {
    if x.is_finite() && x > 0.0 {
        x as u64
    } else {
        0
    }
}

#[inline]
fn costs_of(c: [f64; COSTS]) -> Costs {
    c.map(cost_of)
}

/// An engine time in ms (the clock cell's base) as ns.
#[inline]
fn at_of(ms: f64) -> Nanos {
    if ms.is_finite() && ms > 0.0 {
        (ms * 1e6) as Nanos
    } else {
        0
    }
}

/// A level as JS passes it; anything else is the default level.
#[inline]
fn level_of_code(level: f64) -> u8 {
    if level.is_finite() && level >= 0.0 {
        (level as u32).min(LEVELS as u32 - 1) as u8
    } else {
        resilix_engine::DEFAULT_LEVEL
    }
}

fn acquire_costing_impl(handle: f64) -> f64 {
    let budget = budget_of(cell(slot::BUDGET_MS));
    let level = level_of_code(cell(slot::LEVEL));
    let tenant = super::levels::tenant_of(cell(slot::TENANT));
    let head = cell(slot::HEAD) == 1.0;
    let costs = costs_of(std::array::from_fn(|i| cell(slot::COSTS + i)));
    let t = now();
    publish(t);
    with_engine(handle, |e, k| {
        match e.acquire_costing(k, t, budget, level, tenant, &costs, head) {
            Ok(Costed::Now(a)) => acquired_code(a),
            Ok(Costed::Wait(ready)) => {
                publish_ready(ready);
                QUOTA_WAIT
            }
            Ok(Costed::Oversize) => QUOTA_OVERSIZE,
            Err(_) => STALE_HANDLE,
        }
    })
    .unwrap_or(STALE_HANDLE)
}

/// `acquireCosting(handle)`, with the clock cell's argument slots written first (hot.rs
/// `slot`): `budgetMs`, `level`, `tenant`, `head` (1: the oldest waiter for budget asks again),
/// and the costs. Acquire on a key with a quota for a call of those costs: a permit or code as
/// `acquireAt`, or `QUOTA_WAIT` (the time to ask again at `slot::QUOTA_ASK_AT`) or
/// `QUOTA_OVERSIZE`.
pub(super) unsafe extern "C" fn acquire_costing_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let Some([h]) = numbers::<1>(env, info) else {
        return ptr::null_mut();
    };
    match std::panic::catch_unwind(|| acquire_costing_impl(h)) {
        Ok(x) => number(env, x),
        Err(e) => panicked(env, e),
    }
}

/// A call charged at `atMs` used `d0…d3` more than it was charged (less: a refund).
#[napi(catch_unwind)]
pub fn quota_adjust(handle: f64, at_ms: f64, d0: f64, d1: f64, d2: f64, d3: f64) -> f64 {
    let d = [d0, d1, d2, d3].map(|x| {
        if x.is_finite() {
            x.clamp(-((1u64 << 53) as f64), (1u64 << 53) as f64) as i64
        } else {
            0
        }
    });
    let t = now();
    with_engine(handle, |e, k| match e.policies_mut(k) {
        Ok(p) => {
            p.quota_adjust(t, at_of(at_ms), &d);
            0.0
        }
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE)
}

/// A call charged `c0…c3` at `atMs` waited in the limiter's queue and starts now.
#[napi(catch_unwind)]
pub fn quota_restamp(handle: f64, at_ms: f64, c0: f64, c1: f64, c2: f64, c3: f64) -> f64 {
    let costs = costs_of([c0, c1, c2, c3]);
    let t = now();
    with_engine(handle, |e, k| match e.policies_mut(k) {
        Ok(p) => {
            p.quota_restamp(t, at_of(at_ms), &costs);
            0.0
        }
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE)
}

/// A call of `level` waiting for budget, of `c0…c3`, gave up: 1, or 0 when none waited there.
#[napi(catch_unwind)]
pub fn quota_leave(handle: f64, level: f64, c0: f64, c1: f64, c2: f64, c3: f64) -> f64 {
    let costs = costs_of([c0, c1, c2, c3]);
    let level = level_of_code(level);
    with_engine(handle, |e, k| match e.policies_mut(k) {
        Ok(p) => p.quota_leave(level, &costs) as u8 as f64,
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE)
}

/// A response's rate-limit headers (`name: value` lines), for a call charged `c0…c3` at
/// `atMs`; `refused`: the upstream answered 429. `wallNowMs`: `Date.now()`, for reset times
/// written as dates. 1 when a cooldown began, else 0.
#[napi(catch_unwind)]
#[allow(clippy::too_many_arguments)]
pub fn quota_observe(
    handle: f64,
    headers: String,
    wall_now_ms: f64,
    refused: bool,
    at_ms: f64,
    c0: f64,
    c1: f64,
    c2: f64,
    c3: f64,
) -> Result<f64> {
    let reading = read_header_block(&headers, wall_now_ms);
    let costs = costs_of([c0, c1, c2, c3]);
    let t = now();
    Ok(with_engine(handle, |e, k| match e.policies_mut(k) {
        Ok(p) => match p.quota_mut() {
            Some(q) => q.observe(t, &reading, refused, at_of(at_ms), &costs) as u8 as f64,
            None => 0.0,
        },
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE))
}

/// How long the key still cools down after a 429, ms (0: it does not); for a refusal's message.
#[napi(catch_unwind)]
pub fn quota_cooling_ms(handle: f64) -> f64 {
    let t = now();
    with_engine(handle, |e, k| match e.policies_mut(k) {
        Ok(p) => p.quota_mut().map_or(0.0, |q| q.cooling_ns(t) as f64 / 1e6),
        Err(_) => 0.0,
    })
    .unwrap_or(0.0)
}
