//! Engines live in a per-thread table (each worker thread loading the addon has its own), and
//! JS refers to them through numeric handles: `engine × 2^41 + key handle`.

use std::cell::RefCell;

use napi::{Env, Error, Result, Status};
use napi_derive::napi;

use super::codes::*;
use super::options::{to_budget, to_options, NativeOptions};
use resilix_engine::{Acquired, Engine, RegistryError, RejectReason, Verdict};

const KEY_BITS: u32 = resilix_engine::registry::INDEX_BITS + resilix_engine::registry::GEN_BITS;
const KEY_SPAN: f64 = (1u64 << KEY_BITS) as f64;
/// Handles are exact integers in a double.
const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

thread_local! {
    /// Boxed: the list keeps as many slots as engines were ever live at once, and an engine
    /// inline is 608 bytes, so 3 000 instances made and dropped left 2.4 MiB behind (ADR 1225).
    static ENGINES: RefCell<Vec<Option<Box<Engine>>>> = const { RefCell::new(Vec::new()) };
}

pub(crate) use super::clock::now;

/// `x`, known to lie in [0, 2^53], is a whole number. `f64::fract` calls libm's `trunc` on the
/// baseline x86-64 target (no SSE4.1): 2-3 % of an acquire+settle pair under `perf` (ADR 1218).
#[inline(always)]
pub(crate) fn whole(x: f64) -> bool {
    (x as u64) as f64 == x
}

/// Splits a JS handle into (engine index, key handle); `None` for anything not a valid handle.
#[inline]
fn split(handle: f64) -> Option<(usize, u64)> {
    if !(0.0..=MAX_SAFE).contains(&handle) || !whole(handle) {
        return None;
    }
    let h = handle as u64;
    Some(((h >> KEY_BITS) as usize, h & ((1u64 << KEY_BITS) - 1)))
}

#[inline]
pub(crate) fn with_engine<R>(handle: f64, f: impl FnOnce(&mut Engine, u64) -> R) -> Option<R> {
    let (e, key) = split(handle)?;
    ENGINES.with(|cell| {
        let mut engines = cell.borrow_mut();
        let engine = engines.get_mut(e)?.as_mut()?;
        Some(f(engine, key))
    })
}

#[cfg(feature = "probes")]
pub(crate) fn probe_with_engine<R>(
    handle: f64,
    f: impl FnOnce(&mut Engine, u64) -> R,
) -> Option<R> {
    with_engine(handle, f)
}

/// An engine id as JS passes it: a whole number, else `None` (never coerced to another engine).
#[inline]
pub(crate) fn engine_id(id: f64) -> Option<usize> {
    ((0.0..=u32::MAX as f64).contains(&id) && id.fract() == 0.0).then_some(id as usize)
}

pub(crate) fn with_engine_id<R>(id: f64, f: impl FnOnce(&mut Engine) -> R) -> Result<R> {
    let Some(index) = engine_id(id) else {
        return Err(Error::new(
            Status::InvalidArg,
            format!("engine id must be a whole number, got {id}"),
        ));
    };
    ENGINES.with(|cell| {
        let mut engines = cell.borrow_mut();
        match engines.get_mut(index).and_then(Option::as_mut) {
            Some(engine) => Ok(f(engine)),
            None => Err(Error::new(
                Status::InvalidArg,
                format!("no live engine {id} (was it destroyed?)"),
            )),
        }
    })
}

#[inline]
pub(crate) fn permit_of(permit: f64) -> Option<u64> {
    ((0.0..=MAX_SAFE).contains(&permit) && whole(permit)).then_some(permit as u64)
}

#[inline]
pub(crate) fn acquired_code(a: Acquired) -> f64 {
    match a {
        Acquired::Permit(id) => id as f64,
        Acquired::Queued => QUEUED,
        Acquired::Rejected(r) => REJECTED_BASE - r as u8 as f64,
    }
}

/// Live engines per thread: an engine id has 12 bits in a handle (53 − 41 key bits).
const MAX_ENGINES: usize = 1 << (53 - KEY_BITS);

/// The native memory V8 is told an engine holds: one engine with one key (engine/tests/memory.rs
/// measures about 2.3 KiB per key). V8 does not see native memory otherwise, and dropped
/// instances made per request would wait for a full GC that their JS size never triggers.
const ENGINE_BYTES: i64 = 2304;

/// Creates an engine from validated options; returns its id, or -1 when the thread already
/// holds `MAX_ENGINES` live engines (JS turns that into an error that says what to do).
#[napi(catch_unwind)]
pub fn create_engine(env: Env, options: NativeOptions, seed: Option<f64>) -> Result<f64> {
    let (policies, registry) = to_options(&options)?;
    let seed = seed
        .filter(|s| s.is_finite())
        .map(|s| s as u64)
        .unwrap_or_else(|| {
            // No seed: vary per engine so that two processes do not reject in lockstep.
            now() ^ (&options as *const _ as u64).rotate_left(32)
        });
    let mut engine = Engine::new(policies, registry, seed)
        .map_err(|e| Error::new(Status::InvalidArg, e.message))?;
    engine
        .set_retry_budget(to_budget(&options)?)
        .map_err(|e| Error::new(Status::InvalidArg, e.message))?;
    ENGINES.with(|cell| {
        let mut engines = cell.borrow_mut();
        let id = if let Some(i) = engines.iter().position(Option::is_none) {
            engines[i] = Some(Box::new(engine));
            i
        } else if engines.len() >= MAX_ENGINES {
            return Ok(TOO_MANY_ENGINES);
        } else {
            engines.push(Some(Box::new(engine)));
            engines.len() - 1
        };
        let _ = env.adjust_external_memory(ENGINE_BYTES);
        Ok(id as f64)
    })
}

/// Frees an engine (`close()`, or a FinalizationRegistry when its Resilix is collected).
#[napi(catch_unwind)]
pub fn destroy_engine(env: Env, id: f64) {
    let Some(index) = engine_id(id) else { return };
    let freed = ENGINES.with(|cell| {
        cell.borrow_mut()
            .get_mut(index)
            .and_then(Option::take)
            .is_some()
    });
    if freed {
        let _ = env.adjust_external_memory(-ENGINE_BYTES);
    }
}

/// Resolves a key to its handle. Returns `REGISTRY_FULL` when every key is busy.
#[napi(catch_unwind)]
pub fn resolve_key(id: f64, key: String) -> Result<f64> {
    let t = now();
    with_engine_id(id, |engine| match engine.resolve(&key, t) {
        Ok(r) => Ok(id * KEY_SPAN + r.handle as f64),
        Err(RegistryError::Full { .. }) => Ok(REGISTRY_FULL),
        Err(e @ RegistryError::KeyTooLong { .. }) => {
            Err(Error::new(Status::InvalidArg, e.to_string()))
        }
    })?
}

// `acquire` and `settle` are raw N-API callbacks: see hot.rs.

/// Admit the oldest waiter, whose deadline is `deadline_ms` (engine clock, as `nowMs`; 0:
/// none): a permit, `KEEP_WAITING`, a breaker or queue rejection, or `STALE_HANDLE`.
#[napi(catch_unwind)]
pub fn admit_queued(handle: f64, deadline_ms: f64) -> f64 {
    let t = now();
    let deadline = deadline_ns(deadline_ms);
    with_engine(handle, |e, k| {
        let Ok(level) = e.highest_waiting(k) else {
            return STALE_HANDLE;
        };
        let Some(level) = level else {
            return KEEP_WAITING;
        };
        match e.admit_queued_by(k, t, level, 0, deadline) {
            Ok(Some(a)) => acquired_code(a),
            Ok(None) => KEEP_WAITING,
            Err(_) => STALE_HANDLE,
        }
    })
    .unwrap_or(STALE_HANDLE)
}

/// A waiter of `level`, `ahead` waiters from the front, whose deadline is `deadline_ms` (engine
/// clock; 0: none): the queue's rejection code if the key's latency says it cannot leave the
/// queue in time (it is out of the engine's queue then), `KEEP_WAITING` if it can, `QUEUED`
/// until a call that had waited settled on the key, or `STALE_HANDLE` (ADR 0615).
#[napi(catch_unwind)]
pub fn refuse_late_waiter(handle: f64, level: u32, ahead: f64, deadline_ms: f64) -> f64 {
    let t = now();
    let level = level.min(resilix_engine::priority::LEVELS as u32 - 1) as u8;
    let ahead = if ahead.is_finite() && ahead > 0.0 {
        ahead.min(u32::MAX as f64) as u32
    } else {
        0
    };
    let deadline = deadline_ns(deadline_ms);
    with_engine(handle, |e, k| {
        match e.refuse_late_waiter(k, t, level, ahead, deadline) {
            Ok(Some(true)) => acquired_code(Acquired::Rejected(RejectReason::Queue)),
            Ok(Some(false)) => KEEP_WAITING,
            Ok(None) => QUEUED,
            Err(_) => STALE_HANDLE,
        }
    })
    .unwrap_or(STALE_HANDLE)
}

/// A waiter's deadline in engine-clock ms (0, negative or not finite: none) as engine ns.
pub(crate) fn deadline_ns(ms: f64) -> u64 {
    if ms.is_finite() && ms > 0.0 {
        ((ms * 1e6) as u64).max(1)
    } else {
        0
    }
}

/// Why a key's queue refused a call.
#[napi(object)]
pub struct QueueRefusalInfo {
    /// `'standing'`: the queue stood and its factors shed the call; `'deadline'`: the call could
    /// not leave the queue by its deadline; `'full'`: `maxQueued` calls already wait; `'turn'`:
    /// a stream's turn came with less deadline left than it would hold its slot.
    pub cause: String,
    pub max_queued: u32,
}

/// Why the key's queue last refused a call, read after a `'queue'` refusal; null for an
/// evicted key.
#[napi(catch_unwind)]
pub fn queue_refusal(handle: f64) -> Option<QueueRefusalInfo> {
    with_engine(handle, |e, k| {
        e.last_queue_refusal(k)
            .ok()
            .map(|(r, max_queued)| QueueRefusalInfo {
                cause: r.name().to_owned(),
                max_queued,
            })
    })
    .flatten()
}

/// A waiter left the queue without running: 1 when one was queued, 0 when none, or `STALE_HANDLE`.
#[napi(catch_unwind)]
pub fn leave_queue(handle: f64) -> f64 {
    with_engine(handle, |e, k| {
        e.leave_queue(k).map_or(STALE_HANDLE, |b| b as u8 as f64)
    })
    .unwrap_or(STALE_HANDLE)
}

/// Settles a permit whose fn never settled, counting it as stuck: as `settle` (codes.rs).
#[napi(catch_unwind)]
pub fn settle_stuck(handle: f64, permit: f64, verdict: u32) -> f64 {
    let t = now();
    let Some(v) = Verdict::from_code(verdict) else {
        return BAD_VERDICT;
    };
    let Some(p) = permit_of(permit) else {
        return STALE_PERMIT;
    };
    with_engine(handle, |e, k| match e.settle_stuck(k, p, v, t) {
        Ok(Ok(wake)) => wake as f64,
        Ok(Err(_)) => STALE_PERMIT,
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE)
}

/// Records the first byte of a call: 0, or `STALE_PERMIT` / `STALE_HANDLE`.
#[napi(catch_unwind)]
pub fn mark(handle: f64, permit: f64) -> f64 {
    let t = now();
    let Some(p) = permit_of(permit) else {
        return STALE_PERMIT;
    };
    with_engine(handle, |e, k| match e.mark(k, p, t) {
        Ok(true) => 0.0,
        Ok(false) => STALE_PERMIT,
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE)
}

/// Live keys of an engine, most recently used first.
#[napi(catch_unwind)]
pub fn keys(id: f64) -> Result<Vec<String>> {
    with_engine_id(id, |e| e.keys().map(str::to_owned).collect())
}

/// Panics on purpose: proves that a panic surfaces as a JS error (reliability tests). Built only
/// with the `test-hooks` feature (`npm run build`; `npm run build:release` leaves it out) and kept
/// out of the typings, so native.js and native.d.ts are the same for both builds.
#[cfg(feature = "test-hooks")]
#[napi(catch_unwind, skip_typescript)]
pub fn force_panic_for_test() {
    panic!("forced panic for test");
}

/// `limit × 4 + breaker` (0 closed, 1 open, 2 half-open, 3 no breaker; limit 0 when the
/// limiter is off), or `STALE_HANDLE`. Polled after acquire/settle only while someone listens
/// to limit or breaker events.
#[napi(catch_unwind)]
pub fn observe(handle: f64) -> f64 {
    let t = now();
    with_engine(handle, |e, k| match e.stats(k, t) {
        Ok(s) => {
            let b = breaker_code(s.breaker);
            let limit = if s.algorithm.is_some() {
                s.limit as f64
            } else {
                0.0
            };
            limit * 4.0 + b
        }
        Err(_) => STALE_HANDLE,
    })
    .unwrap_or(STALE_HANDLE)
}

/// Test builds only: engines alive on this thread (dropped instances leave once collected).
#[cfg(feature = "test-hooks")]
#[napi(catch_unwind, skip_typescript)]
pub fn live_engine_count() -> f64 {
    ENGINES.with(|cell| cell.borrow().iter().filter(|e| e.is_some()).count() as f64)
}
