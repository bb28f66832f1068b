//! A key whose quota a fleet shares through a store (ADR 1102): the lease the JS layer got
//! from the store, the fallback while the store is down, and what the store must be told.
//! None of these is on a call's path: each runs once per lease, not once per call.

use napi_derive::napi;

use super::codes::STALE_HANDLE;
use super::engines::{now, with_engine};
use resilix_engine::quota::{bucket_ns, Quota, MAX_DIMS};
use resilix_engine::quota_fleet::FleetMode;
use resilix_engine::Nanos;

fn ns_of_ms(ms: f64) -> Nanos {
    if ms.is_finite() && ms > 0.0 {
        (ms * 1e6) as Nanos
    } else {
        0
    }
}

fn amounts(v: &[f64]) -> [u64; MAX_DIMS] {
    let mut out = [0; MAX_DIMS];
    for (o, x) in out.iter_mut().zip(v) {
        *o = if x.is_finite() && *x > 0.0 {
            *x as u64
        } else {
            0
        };
    }
    out
}

/// Runs `f` on the key's quota: `None` for a stale handle or a key without a quota.
fn with_quota<R>(handle: f64, f: impl FnOnce(&mut Quota, Nanos) -> R) -> Option<R> {
    let t = now();
    with_engine(handle, |e, k| {
        e.policies_mut(k)
            .ok()
            .and_then(|p| p.quota_mut())
            .map(|q| f(q, t))
    })
    .flatten()
}

/// A quota window's bucket in µs, as the engine sizes it: a store that shares the window keeps
/// its charges in buckets this long. Longer than the window / 60 under 6 s, so that a charge is
/// held at least 100 ms past its window (ADR 1103).
#[napi(catch_unwind)]
pub fn quota_bucket_us(window_ms: f64) -> f64 {
    (bucket_ns(ns_of_ms(window_ms)) / 1_000) as f64
}

/// The key's quota is shared from now on: calls spend leases. A call the lease does not hold
/// waits up to `waitMs` for the next one before it asks again. 0, or STALE_HANDLE.
#[napi(catch_unwind)]
pub fn quota_share(handle: f64, wait_ms: f64) -> f64 {
    with_quota(handle, |q, _| {
        q.share_through_store(ns_of_ms(wait_ms));
        0.0
    })
    .unwrap_or(STALE_HANDLE)
}

/// A lease asked for at engine time `sentAtMs`: `granted` by budget, to spend within
/// `lifeMs` of the asking; the fleet's window has no more room for `readyInMs` from now, and
/// `room` left by budget. Returns what the lease it replaces left unspent, by budget (empty:
/// a stale handle).
#[napi(catch_unwind)]
pub fn quota_lease(
    handle: f64,
    sent_at_ms: f64,
    life_ms: f64,
    ready_in_ms: f64,
    granted: Vec<f64>,
    room: Vec<f64>,
) -> Vec<f64> {
    with_quota(handle, |q, t| {
        let until = ns_of_ms(sent_at_ms).saturating_add(ns_of_ms(life_ms));
        let ready = if ready_in_ms > 0.0 {
            t.saturating_add(ns_of_ms(ready_in_ms))
        } else {
            0
        };
        let n = q.spent(t).count();
        match q.fleet_mut() {
            Some(f) => f.install(&amounts(&granted), until, ready, &amounts(&room))[..n]
                .iter()
                .map(|x| *x as f64)
                .collect(),
            None => Vec::new(),
        }
    })
    .unwrap_or_default()
}

/// The lease's unspent budget, by budget, given back (it leaves the lease).
#[napi(catch_unwind)]
pub fn quota_surrender(handle: f64) -> Vec<f64> {
    with_quota(handle, |q, t| {
        let n = q.spent(t).count();
        q.fleet_mut().map_or_else(Vec::new, |f| {
            f.surrender()[..n].iter().map(|x| *x as f64).collect()
        })
    })
    .unwrap_or_default()
}

/// The store is lost: each budget admits up to `shares` of its window, or nothing (`refuse`).
#[napi(catch_unwind)]
pub fn quota_fall_back(handle: f64, shares: Vec<f64>, refuse: bool) -> f64 {
    with_quota(handle, |q, t| {
        q.fall_back(t, &amounts(&shares), refuse);
        0.0
    })
    .unwrap_or(STALE_HANDLE)
}

/// The store answers again: calls wait for a lease.
#[napi(catch_unwind)]
pub fn quota_rejoin(handle: f64) -> f64 {
    with_quota(handle, |q, t| {
        q.rejoin(t);
        0.0
    })
    .unwrap_or(STALE_HANDLE)
}

/// What the store is to be told, by budget, for `n` budgets: `[mode, left…, need…, queued…,
/// spent…, floors…, downSinceMs, coolingMs]`, mode 0 leased, 1 shared, 2 refusing (empty: a
/// stale handle).
#[napi(catch_unwind)]
pub fn quota_fleet_state(handle: f64) -> Vec<f64> {
    with_quota(handle, |q, t| {
        let n = q.spent(t).count();
        let spent = q.spent_by_dim(t);
        let queued = q.queued_by_dim();
        let Some(f) = q.fleet() else {
            return Vec::new();
        };
        let mode = match f.mode() {
            FleetMode::Leased => 0.0,
            FleetMode::Shared => 1.0,
            FleetMode::Refusing => 2.0,
        };
        let mut out = vec![mode];
        for part in [f.left(), f.need(), &queued, &spent, f.floors()] {
            out.extend(part[..n].iter().map(|x| *x as f64));
        }
        out.push(f.down_since() as f64 / 1e6);
        out.push(q.cooling_ns(t) as f64 / 1e6);
        out
    })
    .unwrap_or_default()
}

/// The charged buckets of each budget's window, as flat `[budget, age in buckets, amount,
/// charged before sinceMs (1/0)]` quads: what a store that lost them or never saw them lacks.
#[napi(catch_unwind)]
pub fn quota_charged(handle: f64, since_ms: f64) -> Vec<f64> {
    with_quota(handle, |q, t| {
        let mut out = Vec::new();
        for (i, age, a, before) in q.charged_buckets(t, ns_of_ms(since_ms)) {
            out.extend([i as f64, age as f64, a as f64, before as u8 as f64]);
        }
        out
    })
    .unwrap_or_default()
}

/// The fleet cools down: the key waits `ms` from now (a refusal another process met).
#[napi(catch_unwind)]
pub fn quota_cool_down(handle: f64, ms: f64) -> f64 {
    with_quota(handle, |q, t| {
        if q.cooling_ns(t) < ns_of_ms(ms) {
            q.cool_down(t, ns_of_ms(ms));
        }
        0.0
    })
    .unwrap_or(STALE_HANDLE)
}
