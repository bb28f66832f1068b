//! The key the streaming tests drive by hand: one key `llm`, created at `T0`, with only the
//! limiter (and the breaker when asked), so that each test reads what streams do to the limit.
#![allow(dead_code)] // not every test binary that includes this module uses all of it

use resilix_engine::{
    BreakerOptions, Engine, KeyHandle, LimiterOptions, PolicyOptions, RegistryOptions, NANOS_PER_MS,
};

/// When the key is created.
pub const T0: u64 = 1_000 * NANOS_PER_MS;

/// `n` ms after `T0`.
pub fn ms(n: u64) -> u64 {
    T0 + n * NANOS_PER_MS
}

/// An engine of one key `llm` with `limiter`, and the breaker when `breaker` is set.
pub fn llm_key(limiter: LimiterOptions, breaker: Option<BreakerOptions>) -> (Engine, KeyHandle) {
    let p = PolicyOptions {
        breaker,
        limiter: Some(limiter),
        bulkhead: None,
        throttle: None,
        quota: None,
    };
    let mut e = Engine::new(p, RegistryOptions::default(), 7).expect("valid options");
    let h = e.resolve("llm", T0).unwrap().handle;
    (e, h)
}
