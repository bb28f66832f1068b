//! resilix-sim: a deterministic discrete-event simulator that drives the real resilix engine
//! (`resilix_engine`, the same code the npm package runs) on a virtual clock (ADR 0300).

pub mod breaker_rule;
pub mod client;
pub mod client_limiter;
pub mod dist;
pub mod events;
pub mod goals;
pub mod metrics;
pub mod netflix;
pub mod plot;
pub mod report;
pub mod runner;
pub mod scenario;
pub mod trace;
pub mod world;
