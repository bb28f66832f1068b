//! resilix: an adaptive concurrency limiter, circuit breaker and bulkhead for Node services.
//!
//! `engine` is pure Rust (tested with `cargo test`, no Node needed); `binding` is the thin
//! N-API layer the npm package loads.

pub mod engine;

mod binding;
