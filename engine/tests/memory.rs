//! Engine memory per key (target: ≤ 2.5 KiB with the default policies, ADR 1000). A byte-counting
//! allocator measures what the engine really holds — registry map, entry, name, policy set,
//! permit slab — for 1000 keys that each ran a few concurrent calls, divided by 1000.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use steps::first_attempt;

#[path = "support/steps.rs"]
mod steps;

use resilix_engine::quota::{QuotaDim, QuotaOptions};
use resilix_engine::{
    tenant_id, Acquired, Engine, PolicyOptions, PolicySet, Priority, RegistryOptions, RetryPolicy,
    Verdict, NANOS_PER_MS,
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
fn engine_memory_per_key_is_at_most_2_5_kib() {
    let (total, per_key) = measure(false, false, false);
    assert!(per_key <= 2560.0, "{per_key:.0} bytes per key");
    // Printed last: captured test output allocates on this thread.
    println!(
        "engine memory: {total} bytes for {KEYS} keys = {per_key:.0} bytes per key \
         (PolicySet inline {} bytes; permit slab grown to {PEAK} concurrent calls)",
        std::mem::size_of::<PolicySet>()
    );
}

/// A key whose calls retry holds its retry budget too: at most 256 bytes more (ADR 0901).
#[test]
fn a_key_that_retries_holds_at_most_256_bytes_more() {
    let (total, per_key) = measure(true, false, false);
    let (_, base) = measure(false, false, false);
    assert!(per_key <= base + 256.0, "{per_key:.0} bytes per key");
    println!(
        "engine memory with retries: {total} bytes for {KEYS} keys = {per_key:.0} bytes per key"
    );
}

/// A key whose calls name tenants tracks at most 128 one by one, 12 bytes each, and remembers
/// 32 newcomers: at most 2 KiB more, however many tenants its calls name (ADR 1109).
#[test]
fn a_key_whose_calls_name_tenants_holds_at_most_2_kib_more() {
    let (total, per_key) = measure(false, true, false);
    let (_, base) = measure(false, false, false);
    assert!(per_key <= base + 2_048.0, "{per_key:.0} bytes per key");
    println!(
        "engine memory with 200 tenants a key, each named twice: {total} bytes for {KEYS} keys = {per_key:.0} bytes per key ({:.0} more)",
        per_key - base
    );
}

/// A key that saw an overload holds its throttle's window too, and stays within 2.5 KiB
/// (ADR 1000); a key that never did holds none.
#[test]
fn a_key_that_saw_an_overload_holds_its_throttle_window_within_2_5_kib() {
    let (total, per_key) = measure(false, false, true);
    let (_, base) = measure(false, false, false);
    assert!(per_key > base, "{per_key:.0} bytes per key: no window");
    assert!(per_key <= 2560.0, "{per_key:.0} bytes per key");
    println!(
        "engine memory with an overload: {total} bytes for {KEYS} keys = {per_key:.0} bytes per key"
    );
}

/// A key with a quota of two budgets (requests and tokens per minute) holds two windows of 62
/// buckets and the quota's caps: 1.4 KiB more (ADR 1100); a key without one, one pointer.
#[test]
fn a_key_with_a_quota_of_two_budgets_holds_at_most_1_5_kib_more() {
    let mut q = QuotaOptions::default();
    for (i, limit) in [500, 200_000].into_iter().enumerate() {
        q.dims[i] = QuotaDim {
            cost: i as u8,
            limit,
            window_ns: 60_000 * NANOS_PER_MS,
        };
    }
    q.len = 2;
    let p = PolicyOptions {
        quota: Some(q),
        ..PolicyOptions::default()
    };
    let (total, per_key) = measure_with(p, false, false, false);
    let (_, base) = measure(false, false, false);
    assert!(per_key <= base + 1_536.0, "{per_key:.0} bytes per key");
    println!(
        "engine memory with a quota of two budgets: {total} bytes for {KEYS} keys = {per_key:.0} bytes per key"
    );
}

/// (bytes, bytes per key) held by an engine whose keys ran a few calls; `retry`: each key's
/// calls also asked for a retry; `tenants`: each key's calls named 200 tenants twice each; `overload`: one
/// of each key's calls was answered overloaded.
fn measure(retry: bool, tenants: bool, overload: bool) -> (i64, f64) {
    measure_with(PolicyOptions::default(), retry, tenants, overload)
}

/// `measure` with these policies.
fn measure_with(policies: PolicyOptions, retry: bool, tenants: bool, overload: bool) -> (i64, f64) {
    let before = LIVE.with(|l| l.get());
    let mut e = Engine::new(policies, RegistryOptions::default(), 1).unwrap();
    let t = 1_000 * NANOS_PER_MS;
    let mut held = Vec::with_capacity(PEAK);
    for i in 0..KEYS {
        // A realistic key: a host and port.
        let h = e
            .resolve(&format!("upstream-{i:04}.internal:8080"), t)
            .unwrap()
            .handle;
        if tenants {
            for n in 0..400 {
                let id = tenant_id(&format!("tenant-{}", n / 2));
                let level = e.level_of(h, Priority::Normal, id, t).unwrap();
                match e.acquire_at(h, t, u64::MAX, level, id).unwrap() {
                    Acquired::Permit(p) => {
                        e.settle(h, p, Verdict::Success, t + NANOS_PER_MS)
                            .unwrap()
                            .unwrap();
                    }
                    other => panic!("{other:?}"),
                }
            }
        }
        for _ in 0..PEAK {
            match e.acquire(h, t).unwrap() {
                Acquired::Permit(p) => held.push(p),
                other => panic!("{other:?}"),
            }
        }
        for (i, p) in held.drain(..).enumerate() {
            let v = if overload && i == 0 {
                Verdict::Overload
            } else {
                Verdict::Success
            };
            e.settle(h, p, v, t + 10 * NANOS_PER_MS).unwrap().unwrap();
        }
        if retry {
            let s = first_attempt(Verdict::Failure);
            e.retry(h, &RetryPolicy::default(), &s, t + 20 * NANOS_PER_MS)
                .unwrap();
        }
    }
    drop(held);
    let total = LIVE.with(|l| l.get()) - before;
    drop(e);
    // Everything is returned: no hidden global state.
    assert_eq!(LIVE.with(|l| l.get()), before);
    (total, total as f64 / KEYS as f64)
}
