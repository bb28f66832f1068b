//! Helpers the engine's property and unit tests share: how many cases a property runs, a
//! step of a test clock, an algorithm, a first attempt to ask the retry policy about,
//! and a header reading.
#![allow(dead_code)] // not every test binary that includes this module uses all of it

use proptest::prelude::*;
use resilix_engine::quota_headers::{DimReading, Dimension, Reading};
use resilix_engine::retry::Settled;
use resilix_engine::{Algorithm, Verdict, NANOS_PER_MS};

/// Cases: `PROPTEST_CASES` if set, else the property's own `default`.
pub fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The clock after a step of `d` ns: back when asked and the clock may go back, else forwards;
/// saturating both ways.
pub fn tick(now: u64, d: u64, back: bool, monotonic: bool) -> u64 {
    if back && !monotonic {
        now.saturating_sub(d)
    } else {
        now.saturating_add(d)
    }
}

/// A clock step: mostly under `short_ms`, sometimes none, under `long_ms`, or up to two days.
pub fn step_ns(short_ms: u64, long_ms: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..short_ms * NANOS_PER_MS,
        1 => Just(0u64),
        1 => 0u64..long_ms * NANOS_PER_MS,
        1 => 0u64..48 * 3_600_000 * NANOS_PER_MS
    ]
}

/// Any of the limit algorithms, evenly.
pub fn algorithm() -> impl Strategy<Value = Algorithm> {
    prop_oneof![
        Just(Algorithm::Vegas),
        Just(Algorithm::Gradient2),
        Just(Algorithm::Aimd),
        Just(Algorithm::Fixed)
    ]
}

/// A first attempt that ended with `verdict`, with no hint, deadline or earlier delay.
pub fn first_attempt(verdict: Verdict) -> Settled {
    Settled {
        attempts: 1,
        verdict,
        hint_ns: None,
        remaining_ns: None,
        previous_delay_ns: 0,
    }
}

/// A header reading of one dimension: its limit, what remains, and its reset in ms.
pub fn reading(dim: Dimension, limit: u64, remaining: u64, reset_ms: u64) -> Reading {
    Reading {
        dims: vec![DimReading {
            dim,
            limit: Some(limit),
            remaining: Some(remaining),
            reset_ns: Some(reset_ms * NANOS_PER_MS),
        }],
        retry_after_ns: None,
    }
}
