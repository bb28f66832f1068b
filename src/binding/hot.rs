//! The hot path as raw N-API callbacks: `acquire(handle)` and `settle(handle, permit, verdict)`.
//!
//! napi-derive's generated wrapper costs about 8 ns more per call than a hand-written callback
//! (benches/node/napi-probes.mjs, BENCHMARKS.md), and these two run twice per protected call. They
//! keep the derive functions' contract exactly: a number that is not a valid handle, permit or
//! verdict is a negative code (codes.rs); a value of the wrong JS type throws an Error with
//! code `NumberExpected` and a "Failed to convert" message, as napi-rs's conversion does; a
//! panic is caught (`catch_unwind`) and thrown as a JS Error, never unwinding into Node.
//! Acquires publish their time to the clock cell (cell.rs); this file installs the cell.

use std::cell::Cell;
use std::ffi::{c_void, CStr};
use std::ptr;

use napi::bindgen_prelude::{JsValue, Object};
use napi::{sys, Env, Result};
use napi_derive::napi;

use super::cell::{answer, budget_of, publish, slot, stalled_at, CLOCK_CELL, CLOCK_REF};
use super::codes::*;
use super::engines::{acquired_code, now, permit_of, whole, with_engine};
use super::raw::{number, numbers, panicked};
use resilix_engine::Verdict;

/// The engine clock in ms, the time base of the clock cell (for the deadline timer).
#[napi(catch_unwind)]
pub fn now_ms() -> f64 {
    now() as f64 * 1e-6
}

fn acquire_impl(handle: f64) -> f64 {
    let t = now();
    publish(t);
    with_engine(handle, |e, k| {
        e.acquire(k, t).map_or(STALE_HANDLE, acquired_code)
    })
    .unwrap_or(STALE_HANDLE)
}

fn acquire_within_impl(handle: f64, budget_ms: f64) -> f64 {
    let t = now();
    publish(t);
    let budget = budget_of(budget_ms);
    with_engine(handle, |e, k| {
        e.acquire_within(k, t, budget)
            .map_or(STALE_HANDLE, acquired_code)
    })
    .unwrap_or(STALE_HANDLE)
}

fn settle_impl(handle: f64, permit: f64, verdict: f64) -> f64 {
    let t = now();
    // A verdict is a small integer code; NaN, fractions and out-of-range values are refused.
    if !(0.0..=u8::MAX as f64).contains(&verdict) || !whole(verdict) {
        return BAD_VERDICT;
    }
    // A 503 without Retry-After: an overload, which the throttle reads as a failure (ADR 1004).
    let (mut v, mut seen) = if verdict as u32 == UNAVAILABLE {
        (Verdict::Overload, Verdict::Failure)
    } else {
        let Some(v) = Verdict::from_code(verdict as u32) else {
            return BAD_VERDICT;
        };
        (v, v)
    };
    let Some(p) = permit_of(permit) else {
        return STALE_PERMIT;
    };
    if !v.is_ignored() && stalled_at(t) {
        (v, seen) = (Verdict::Cancelled, Verdict::Cancelled);
    }
    with_engine(handle, |e, k| match e.settle_seen(k, p, v, seen, t) {
        Ok(Ok(wake)) => wake as f64,
        Ok(Err(_)) => STALE_PERMIT,
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE)
}

/// How a callback answers: its number returned, or written to the clock cell's `answer` slot.
const RETURNED: bool = false;
const TO_CELL: bool = true;

/// Runs `f` (an acquire or a settle) for a raw callback and answers with its number as `to_cell`
/// says; a panic is thrown as a JS Error. Always inlined: `to_cell` is a constant at each site.
#[inline(always)]
unsafe fn respond(
    env: sys::napi_env,
    to_cell: bool,
    f: impl FnOnce() -> f64 + std::panic::UnwindSafe,
) -> sys::napi_value {
    match std::panic::catch_unwind(f) {
        Ok(x) if to_cell => {
            answer(x);
            ptr::null_mut()
        }
        Ok(x) => number(env, x),
        Err(e) => panicked(env, e),
    }
}

/// `acquire(handle)`: see engines.rs for the codes.
unsafe extern "C" fn acquire_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let Some([h]) = numbers::<1>(env, info) else {
        return ptr::null_mut();
    };
    respond(env, RETURNED, || acquire_impl(h))
}

/// `acquireToCell(handle)`: `acquire`, its answer written to the clock cell's `answer` slot and
/// nothing returned. A permit is a 52-bit number (ADR 0002), above V8's small integers, so
/// returning it allocates a heap number through V8's C++ factory: ≈ 7 ns of an acquire+settle
/// pair, more than the JS read of the cell and JS's own allocation of the number (ADR 1218).
unsafe extern "C" fn acquire_to_cell_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let Some([h]) = numbers::<1>(env, info) else {
        return ptr::null_mut();
    };
    respond(env, TO_CELL, || acquire_impl(h))
}

/// `acquireWithinToCell(handle, budgetMs)`: `acquireWithin`, answered as `acquireToCell` is.
unsafe extern "C" fn acquire_within_to_cell_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let Some([h, b]) = numbers::<2>(env, info) else {
        return ptr::null_mut();
    };
    respond(env, TO_CELL, || acquire_within_impl(h, b))
}

/// `acquireWithin(handle, budgetMs)`: acquire for a call with a deadline `budgetMs` away.
unsafe extern "C" fn acquire_within_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let Some([h, b]) = numbers::<2>(env, info) else {
        return ptr::null_mut();
    };
    respond(env, RETURNED, || acquire_within_impl(h, b))
}

/// `settle(handle, permit, verdict)`: see engines.rs for the codes.
unsafe extern "C" fn settle_cb(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let Some([h, p, v]) = numbers::<3>(env, info) else {
        return ptr::null_mut();
    };
    respond(env, RETURNED, || settle_impl(h, p, v))
}

unsafe extern "C" fn clear_clock_cell(_arg: *mut c_void) {
    CLOCK_CELL.with(|c| c.set(ptr::null_mut()));
    CLOCK_REF.with(|r| r.set(ptr::null_mut()));
}

unsafe fn define(
    env: sys::napi_env,
    exports: sys::napi_value,
    name: &CStr,
    cb: sys::napi_callback,
) -> Result<()> {
    let mut f = ptr::null_mut();
    napi::check_status!(sys::napi_create_function(
        env,
        name.as_ptr(),
        name.count_bytes() as isize,
        cb,
        ptr::null_mut(),
        &mut f
    ))?;
    napi::check_status!(sys::napi_set_named_property(env, exports, name.as_ptr(), f))
}

/// The clock cell for `exports`: created with the first load on this thread, the same one for
/// every later load. Each acquire writes one cell; a second cell would leave the first load's
/// deadlines reading a stopped clock. The cleanup hook is added once per environment: Node
/// aborts the process on a second `(hook, arg)` pair that is already registered (ADR 0608).
unsafe fn clock_cell(env: sys::napi_env) -> Result<sys::napi_value> {
    let existing = CLOCK_REF.with(Cell::get);
    if !existing.is_null() {
        let mut cell = ptr::null_mut();
        napi::check_status!(sys::napi_get_reference_value(env, existing, &mut cell))?;
        if !cell.is_null() {
            return Ok(cell);
        }
    }
    let mut data = ptr::null_mut();
    let mut buffer = ptr::null_mut();
    napi::check_status!(sys::napi_create_arraybuffer(
        env,
        slot::LEN * 8,
        &mut data,
        &mut buffer
    ))?;
    let mut cell = ptr::null_mut();
    napi::check_status!(sys::napi_create_typedarray(
        env,
        sys::TypedarrayType::float64_array,
        slot::LEN,
        buffer,
        0,
        &mut cell
    ))?;
    // Never released: the memory must outlive every acquire on this thread.
    let mut reference = ptr::null_mut();
    napi::check_status!(sys::napi_create_reference(env, cell, 1, &mut reference))?;
    let p = data as *mut f64;
    for i in 0..slot::LEN {
        *p.add(i) = 0.0;
    }
    *p.add(slot::NOW) = now() as f64 * 1e-6;
    *p.add(slot::STALLED_FROM) = f64::INFINITY;
    CLOCK_CELL.with(|c| c.set(p));
    CLOCK_REF.with(|r| r.set(reference));
    if existing.is_null() {
        napi::check_status!(sys::napi_add_env_cleanup_hook(
            env,
            Some(clear_clock_cell),
            ptr::null_mut()
        ))?;
    }
    Ok(cell)
}

/// Runs once per load of the addon in an environment (main thread, each worker, and again for
/// a load after `require.cache` was cleared). napi-rs keeps a single `module_exports` hook per
/// addon: anything else to register goes through here.
#[napi(module_exports)]
pub fn init_hot_path(exports: Object, env: Env) -> Result<()> {
    unsafe {
        let env = env.raw();
        let exports = exports.raw();
        define(env, exports, c"acquire", Some(acquire_cb))?;
        define(env, exports, c"acquireWithin", Some(acquire_within_cb))?;
        define(env, exports, c"acquireToCell", Some(acquire_to_cell_cb))?;
        define(
            env,
            exports,
            c"acquireWithinToCell",
            Some(acquire_within_to_cell_cb),
        )?;
        define(env, exports, c"settle", Some(settle_cb))?;
        define(
            env,
            exports,
            c"acquireCosting",
            Some(super::quota::acquire_costing_cb),
        )?;
        #[cfg(feature = "probes")]
        super::probes::register(env, exports);
        let cell = clock_cell(env)?;
        napi::check_status!(sys::napi_set_named_property(
            env,
            exports,
            c"clockCell".as_ptr(),
            cell
        ))?;
    }
    Ok(())
}
