//! The clock cell: a Float64Array both languages share, its elements named in `slot` and handed
//! to JS by `wireCodes().cell` (ADR 1210). Every acquire stores its `now` (ms) at `slot::NOW`,
//! which JS reads to start a deadline, so a timed call needs no `performance.now()` of its own.
//! `slot::STALLED_FROM` goes the other way: JS writes the engine time (ms) from which this
//! thread is known to have stalled (its deadline timer is that late), and a settle at or after
//! it carries no observation: its latency and outcome are the stall's, not the upstream's
//! (ADR 0610). Installed and torn down by hot.rs's module setup.

use std::cell::Cell;
use std::ptr;

use napi::sys;
use resilix_engine::Nanos;

thread_local! {
    /// The clock cell's memory (an ArrayBuffer held by a never-released reference), or null
    /// before the module was initialised on this thread or after its environment was torn down.
    pub(super) static CLOCK_CELL: Cell<*mut f64> = const { Cell::new(ptr::null_mut()) };
    /// The reference that keeps the clock cell's Float64Array alive: a second load of the addon
    /// on this thread (a cleared `require.cache`) exports the same cell (ADR 0608).
    pub(super) static CLOCK_REF: Cell<sys::napi_ref> = const { Cell::new(ptr::null_mut()) };
}

/// Writes the engine clock `t` (ns) to `slot::NOW`, in ms.
#[inline]
pub(super) fn publish(t: Nanos) {
    set_cell(slot::NOW, t as f64 * 1e-6);
}

/// The clock cell's elements by name, the only place their positions are written; JS reads
/// them from `wireCodes().cell` (ADR 1210). Numbers through memory cost less than N-API
/// arguments, each of which is a call (ADR 0501).
pub(super) mod slot {
    use resilix_engine::quota::COSTS as COST_COUNT;

    /// Written by every acquire: the engine clock, ms.
    pub const NOW: usize = 0;
    /// Written by JS: the engine time (ms) from which this thread is stalled (ADR 0610).
    pub const STALLED_FROM: usize = 1;
    /// Written by `acquireCosting` with `QUOTA_WAIT`: when the call may ask again, ms.
    pub const QUOTA_ASK_AT: usize = 2;
    /// Written by JS before `acquireCosting`: the call's deadline budget, ms (≤ 0: none).
    pub const BUDGET_MS: usize = 3;
    /// Written by JS before `acquireCosting`: the call's level.
    pub const LEVEL: usize = 4;
    /// Written by `levelOf` (the tenant's id, 0: none); read by `acquireCosting`.
    pub const TENANT: usize = 5;
    /// Written by JS before `acquireCosting`: 1 when the oldest waiter for budget asks again.
    pub const HEAD: usize = 6;
    /// Written by JS before `acquireCosting`: the costs by the quota's cost index, from here on.
    pub const COSTS: usize = 7;
    /// Written by `acquireToCell` and `acquireWithinToCell`: their answer (a permit or a code),
    /// which as a return value would be a heap number V8 allocates per call (ADR 1218).
    pub const ANSWER: usize = COSTS + COST_COUNT;
    /// The cell's length.
    pub const LEN: usize = ANSWER + 1;
}

/// Element `i` of the clock cell (0 before the module is initialised on this thread).
#[inline]
pub(super) fn cell(i: usize) -> f64 {
    CLOCK_CELL.with(|c| {
        let p = c.get();
        // SAFETY: as in `set_cell`; `i` is below slot::LEN.
        if p.is_null() || i >= slot::LEN {
            0.0
        } else {
            unsafe { *p.add(i) }
        }
    })
}

/// Writes `x` at element `i` of the clock cell (nothing before the module is initialised).
/// Always inlined: on the call path `i` is a constant and its bound check folds away.
#[inline(always)]
pub(super) fn set_cell(i: usize, x: f64) {
    CLOCK_CELL.with(|c| {
        let p = c.get();
        if !p.is_null() && i < slot::LEN {
            // SAFETY: p points into an ArrayBuffer kept alive by a strong reference until the
            // environment's cleanup hook nulls the cell; `i` is below slot::LEN.
            unsafe { *p.add(i) = x }
        }
    });
}

/// The time a call waiting for budget may ask again (`slot::QUOTA_ASK_AT`, ms).
#[inline]
pub(super) fn publish_ready(t: Nanos) {
    set_cell(slot::QUOTA_ASK_AT, t as f64 * 1e-6);
}

/// The thread stalled before `t` (`slot::STALLED_FROM`): the verdict becomes no observation.
#[inline]
pub(super) fn stalled_at(t: Nanos) -> bool {
    CLOCK_CELL.with(|c| {
        let p = c.get();
        // SAFETY: as in `set_cell`; STALLED_FROM is below slot::LEN.
        !p.is_null() && t as f64 * 1e-6 >= unsafe { *p.add(slot::STALLED_FROM) }
    })
}

/// Writes `x` to the clock cell's element `slot::ANSWER`.
#[inline]
pub(super) fn answer(x: f64) {
    set_cell(slot::ANSWER, x);
}

/// A call's deadline in ms as the engine's budget in ns; none finite and positive: no deadline.
#[inline]
pub(super) fn budget_of(budget_ms: f64) -> u64 {
    if budget_ms.is_finite() && budget_ms > 0.0 {
        (budget_ms * 1e6) as u64
    } else {
        u64::MAX
    }
}
