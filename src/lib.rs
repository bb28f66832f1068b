//! The N-API binding of resilix: the thin layer the npm package loads. It reads the clock,
//! converts numbers and maps engine outcomes to codes or JS errors; the policies themselves live
//! in the pure `resilix-engine` crate (engine/), which is tested with `cargo test`, no Node needed.

// napi-derive registers the exports only outside cfg(test), so in clippy's test build of this
// crate every export looks unused; the normal build still reports dead code (ADR 1215).
#![cfg_attr(test, allow(dead_code))]

mod binding;
