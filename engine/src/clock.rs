//! Time in the engine is a number passed in: monotonic nanoseconds. Nothing here reads a clock;
//! the binding reads the real one and the simulator and the tests advance their own.

/// Monotonic nanoseconds.
pub type Nanos = u64;

pub const NANOS_PER_MS: u64 = 1_000_000;
