//! The binding's monotonic clock, read twice per protected call (acquire and settle).
//!
//! `Instant` (the vDSO's `clock_gettime`) costs ~26 ns a read on a VM; the time-stamp counter
//! ~12 ns (ADR 0504). Where the kernel itself keeps time with the TSC (Linux, x86_64,
//! clocksource `tsc`: it found the counter invariant and synchronised across CPUs), the clock
//! switches to the TSC once it has calibrated it against `Instant` over the first 50 ms of use.
//! Everywhere else, and until then, it reads `Instant`.

use std::sync::OnceLock;
use std::time::Instant;

use resilix_engine::Nanos;

static ORIGIN: OnceLock<Instant> = OnceLock::new();

/// Add to `now()` for nanoseconds since the Unix epoch: the limit's baseline probes are
/// phased on the wall clock so that independent processes probe a shared upstream together.
pub(crate) fn wall_clock_offset_ns() -> u64 {
    static OFFSET: OnceLock<u64> = OnceLock::new();
    *OFFSET.get_or_init(|| {
        let wall = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        wall.wrapping_sub(now())
    })
}

/// Monotonic nanoseconds (+1 s so that 0 never reads as a real time).
#[inline]
pub(crate) fn now() -> Nanos {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if let Some(c) = tsc::CALIBRATED.get() {
        return c.at(tsc::read());
    }
    slow_now()
}

/// Test builds only: which clock `now()` reads now.
#[cfg(feature = "test-hooks")]
#[napi_derive::napi(catch_unwind, skip_typescript)]
pub fn clock_source() -> &'static str {
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    if tsc::CALIBRATED.get().is_some() {
        return "tsc";
    }
    "instant"
}

/// Test builds only: `now()`'s elapsed time over `Instant`'s across a busy wait of `ms`.
#[cfg(feature = "test-hooks")]
#[napi_derive::napi(catch_unwind, skip_typescript)]
pub fn clock_rate_against_instant(ms: f64) -> f64 {
    let (n0, i0) = (now(), instant_now());
    while instant_now() < i0 + (ms * 1e6) as u64 {}
    let (n1, i1) = (now(), instant_now());
    (n1 - n0) as f64 / (i1 - i0) as f64
}

#[cold]
fn slow_now() -> Nanos {
    let ns = instant_now();
    #[cfg(all(target_arch = "x86_64", target_os = "linux"))]
    tsc::calibrate(ns);
    ns
}

fn instant_now() -> Nanos {
    ORIGIN.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1_000_000_000
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
mod tsc {
    use super::{instant_now, Nanos};
    use std::sync::OnceLock;

    /// Calibrating over 50 ms keeps the rate's error near 1e-6 even when one of the two
    /// readings was delayed by a microsecond or two (a guess; ADR 0504).
    const CALIBRATE_NS: u64 = 50_000_000;
    /// A calibration point whose two counter reads straddle more than this (~0.3 µs at 3 GHz;
    /// an undisturbed pair takes ~100 ticks) is discarded.
    const MAX_STRADDLE_TICKS: u64 = 1_000;

    pub(super) struct Calibrated {
        base_ns: Nanos,
        base_tsc: u64,
        /// Nanoseconds per tick, 32.32 fixed point.
        scale: u64,
    }

    impl Calibrated {
        #[inline]
        pub(super) fn at(&self, tsc: u64) -> Nanos {
            let ticks = tsc.saturating_sub(self.base_tsc) as u128;
            self.base_ns + ((ticks * self.scale as u128) >> 32) as u64
        }
    }

    pub(super) static CALIBRATED: OnceLock<Calibrated> = OnceLock::new();
    static START: OnceLock<Option<(Nanos, u64)>> = OnceLock::new();

    #[inline]
    pub(super) fn read() -> u64 {
        // SAFETY: rdtsc exists on every x86_64 CPU.
        unsafe { core::arch::x86_64::_rdtsc() }
    }

    fn kernel_uses_tsc() -> bool {
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .is_ok_and(|s| s.trim() == "tsc")
    }

    /// A reading of both clocks at (nearly) the same instant: the tightest of five, or None if
    /// every one was interrupted.
    fn pair() -> Option<(Nanos, u64)> {
        let mut best: Option<(u64, Nanos, u64)> = None;
        for _ in 0..5 {
            let a = read();
            let ns = instant_now();
            let b = read();
            let straddle = b.wrapping_sub(a);
            if b >= a && straddle <= MAX_STRADDLE_TICKS && best.is_none_or(|(s, _, _)| straddle < s)
            {
                best = Some((straddle, ns, a + straddle / 2));
            }
        }
        best.map(|(_, ns, tsc)| (ns, tsc))
    }

    /// Called on the `Instant` path: remembers the first pair, and switches to the counter once
    /// 50 ms separate it from a second one.
    pub(super) fn calibrate(ns: Nanos) {
        let Some(start) = *START.get_or_init(|| if kernel_uses_tsc() { pair() } else { None })
        else {
            return;
        };
        if ns < start.0 + CALIBRATE_NS {
            return;
        }
        let Some(end) = pair() else { return };
        if end.1 <= start.1 || end.0 <= start.0 {
            return;
        }
        let scale = (((end.0 - start.0) as u128) << 32) / (end.1 - start.1) as u128;
        if scale == 0 || scale > u64::MAX as u128 {
            return;
        }
        let _ = CALIBRATED.set(Calibrated {
            base_ns: end.0,
            base_tsc: end.1,
            scale: scale as u64,
        });
    }
}
