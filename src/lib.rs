//! The N-API binding of resilix: the thin layer the npm package loads. It reads the clock,
//! converts numbers and maps engine outcomes to codes or JS errors; the policies themselves live
//! in the pure `resilix-engine` crate (engine/), which is tested with `cargo test`, no Node needed.

mod binding;
