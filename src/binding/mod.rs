//! The N-API binding: thin, no policy logic. It reads the clock, converts numbers, and maps
//! engine outcomes to numeric codes (hot path) or JS errors (construction, bad input).
//!
//! Hot-path functions are plain functions taking a numeric handle: measured at half
//! the cost of class methods (ADR 0500). Every function is `catch_unwind`: a Rust panic becomes a
//! JS exception, never an abort of the Node process.

#[cfg(feature = "test-hooks")]
mod alloc_count;
mod cell;
mod clock;
mod codes;
mod engines;
mod hot;
mod levels;
mod options;
#[cfg(feature = "probes")]
mod probes;
mod quota;
mod quota_fleet;
mod raw;
mod retry;
mod stats;
