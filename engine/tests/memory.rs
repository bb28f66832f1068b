//! Engine memory per key (target: ≤ 2 KiB with the default policies). A byte-counting
//! allocator measures what the engine really holds — registry map, entry, name, policy set,
//! permit slab — for 1000 keys that each ran a few concurrent calls, divided by 1000.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use resilix_engine::{
    Acquired, Engine, PolicyOptions, PolicySet, RegistryOptions, Verdict, NANOS_PER_MS,
};

struct Bytes;

thread_local! {
    static LIVE: Cell<i64> = const { Cell::new(0) };
}

fn add(n: i64) {
    let _ = LIVE.try_with(|l| l.set(l.get() + n));
}

unsafe impl GlobalAlloc for Bytes {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        add(layout.size() as i64);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        add(-(layout.size() as i64));
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        add(new_size as i64 - layout.size() as i64);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Bytes = Bytes;

const KEYS: usize = 1000;
/// Concurrent calls per key during warm-up: the permit slab grows to this peak.
const PEAK: usize = 8;

#[test]
fn engine_memory_per_key_is_at_most_2_kib() {
    let before = LIVE.with(|l| l.get());
    let mut e = Engine::new(PolicyOptions::default(), RegistryOptions::default(), 1).unwrap();
    let t = 1_000 * NANOS_PER_MS;
    let mut held = Vec::with_capacity(PEAK);
    for i in 0..KEYS {
        // A realistic key: a host and port.
        let h = e
            .resolve(&format!("upstream-{i:04}.internal:8080"), t)
            .unwrap()
            .handle;
        for _ in 0..PEAK {
            match e.acquire(h, t).unwrap() {
                Acquired::Permit(p) => held.push(p),
                other => panic!("{other:?}"),
            }
        }
        for p in held.drain(..) {
            e.settle(h, p, Verdict::Success, t + 10 * NANOS_PER_MS)
                .unwrap()
                .unwrap();
        }
    }
    drop(held);
    let total = LIVE.with(|l| l.get()) - before;
    let per_key = total as f64 / KEYS as f64;
    assert!(per_key <= 2048.0, "{per_key:.0} bytes per key");
    drop(e);
    // Everything is returned: no hidden global state.
    assert_eq!(LIVE.with(|l| l.get()), before);
    // Printed last: captured test output allocates on this thread.
    println!(
        "engine memory: {total} bytes for {KEYS} keys = {per_key:.0} bytes per key \
         (PolicySet inline {} bytes; permit slab grown to {PEAK} concurrent calls)",
        std::mem::size_of::<PolicySet>()
    );
}
