//! A counting global allocator for the allocation tests: it counts the allocations of the
//! current thread only, so that the test harness's threads and parallel tests cannot disturb a
//! test's count.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

fn note() {
    // try_with: the allocator may run while this thread's locals are being torn down.
    let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Allocations made on this thread so far.
pub fn allocs() -> u64 {
    ALLOCS.with(|c| c.get())
}

/// Allocations made by `f` on this thread.
#[allow(dead_code)] // not every test binary that includes this module uses it
pub fn allocations(f: impl FnOnce()) -> u64 {
    let before = allocs();
    f();
    allocs() - before
}
