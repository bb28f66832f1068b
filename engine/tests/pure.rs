//! The engine crate stays pure: no napi (or any other runtime dependency), so that it builds and
//! tests with no Node present and the binding stays a thin layer over it.

#[test]
fn the_engine_crate_has_no_runtime_dependency() {
    let manifest =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
    let deps: Vec<&str> = manifest
        .split("\n[")
        .filter(|table| table.starts_with("dependencies]") || table.starts_with("target."))
        .flat_map(|table| table.lines().skip(1))
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .collect();
    assert!(
        deps.is_empty(),
        "engine/Cargo.toml has runtime dependencies: {deps:?}"
    );
}
