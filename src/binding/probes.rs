//! Measurement probes (feature `probes`, never in the shipped addon): the pieces of one hot-path
//! crossing, each as its own function, so that `benches/node/napi-probes.mjs` can attribute the cost.

use std::ptr;

use napi::sys;
use napi_derive::napi;

use super::engines::{now, probe_with_engine};
use resilix_engine::Verdict;

/// Wrapper only: one f64 in, one out, with catch_unwind.
#[napi(catch_unwind)]
pub fn p_noop(h: f64) -> f64 {
    h
}

/// Wrapper only, no catch_unwind.
#[napi]
pub fn p_noop_nocatch(h: f64) -> f64 {
    h
}

/// Three numeric arguments (settle's shape).
#[napi(catch_unwind)]
pub fn p_noop3(h: f64, p: f64, v: u32) -> f64 {
    h + p + v as f64
}

/// The clock the binding uses.
#[napi(catch_unwind)]
pub fn p_clock(_h: f64) -> f64 {
    now() as f64
}

/// Handle split + thread-local engine table, no engine work.
#[napi(catch_unwind)]
pub fn p_table(h: f64) -> f64 {
    probe_with_engine(h, |_, k| k as f64).unwrap_or(-2.0)
}

/// The engine's acquire with a constant time (no clock read).
#[napi(catch_unwind)]
pub fn p_acquire_noclock(h: f64) -> f64 {
    probe_with_engine(h, |e, k| match e.acquire(k, 2_000_000_000) {
        Ok(resilix_engine::Acquired::Permit(p)) => p as f64,
        _ => -1.0,
    })
    .unwrap_or(-2.0)
}

/// The engine's settle with a constant time (no clock read).
#[napi(catch_unwind)]
pub fn p_settle_noclock(h: f64, p: f64, v: u32) -> f64 {
    let v = Verdict::from_code(v).unwrap_or(Verdict::Success);
    probe_with_engine(h, |e, k| match e.settle(k, p as u64, v, 2_000_000_001) {
        Ok(Ok(n)) => n as f64,
        _ => -4.0,
    })
    .unwrap_or(-2.0)
}

/// Raw N-API (no napi-derive wrapper): the floor of a crossing.
unsafe extern "C" fn raw_noop(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    let mut argc = 1usize;
    let mut argv = [ptr::null_mut(); 1];
    sys::napi_get_cb_info(
        env,
        info,
        &mut argc,
        argv.as_mut_ptr(),
        ptr::null_mut(),
        ptr::null_mut(),
    );
    let mut h = 0f64;
    sys::napi_get_value_double(env, argv[0], &mut h);
    let mut out = ptr::null_mut();
    sys::napi_create_double(env, h, &mut out);
    out
}

/// Called from hot.rs's module hook (napi-rs keeps a single `module_exports` hook).
pub(crate) unsafe fn register(env: sys::napi_env, exports: sys::napi_value) {
    let mut f = ptr::null_mut();
    sys::napi_create_function(
        env,
        c"pRawNoop".as_ptr(),
        8,
        Some(raw_noop),
        ptr::null_mut(),
        &mut f,
    );
    sys::napi_set_named_property(env, exports, c"pRawNoop".as_ptr(), f);
}

/// The pre-0500 hot path: `acquire` as a napi-derive function (for the call-style comparison).
#[napi(catch_unwind)]
pub fn p_acquire_derive(handle: f64) -> f64 {
    let t = now();
    probe_with_engine(handle, |e, k| {
        e.acquire(k, t).map_or(-2.0, super::engines::acquired_code)
    })
    .unwrap_or(-2.0)
}

/// The pre-0500 hot path: `settle` as a napi-derive function.
#[napi(catch_unwind)]
pub fn p_settle_derive(handle: f64, permit: f64, verdict: u32) -> f64 {
    let t = now();
    let Some(v) = Verdict::from_code(verdict) else {
        return -5.0;
    };
    probe_with_engine(handle, |e, k| match e.settle(k, permit as u64, v, t) {
        Ok(Ok(wake)) => wake as f64,
        Ok(Err(_)) => -4.0,
        Err(_) => -2.0,
    })
    .unwrap_or(-2.0)
}

#[repr(C)]
struct Timespec {
    sec: i64,
    nsec: i64,
}
extern "C" {
    fn clock_gettime(id: i32, ts: *mut Timespec) -> i32;
}

/// CLOCK_MONOTONIC through libc directly (no `Instant`/`Duration` arithmetic).
#[napi(catch_unwind)]
pub fn p_clock_libc(_h: f64) -> f64 {
    let mut ts = Timespec { sec: 0, nsec: 0 };
    unsafe { clock_gettime(1, &mut ts) };
    (ts.sec as u64 * 1_000_000_000 + ts.nsec as u64) as f64
}

/// The raw time-stamp counter (what a calibrated TSC clock would cost).
#[napi(catch_unwind)]
pub fn p_clock_tsc(_h: f64) -> f64 {
    #[cfg(target_arch = "x86_64")]
    return unsafe { core::arch::x86_64::_rdtsc() } as f64;
    #[cfg(not(target_arch = "x86_64"))]
    return 0.0;
}
