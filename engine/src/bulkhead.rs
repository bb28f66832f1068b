//! Bulkhead (v0.2): a fixed maximum of concurrent calls, no queue (`reason: 'bulkhead'`).

use crate::options::BulkheadOptions;

#[derive(Clone, Debug)]
pub struct Bulkhead {
    max: u32,
    active: u32,
}

impl Bulkhead {
    pub fn new(opts: &BulkheadOptions) -> Self {
        Bulkhead {
            max: opts.max_concurrent,
            active: 0,
        }
    }

    /// Take a place, or `false` when all are taken.
    #[inline]
    pub fn try_acquire(&mut self) -> bool {
        if self.active >= self.max {
            return false;
        }
        self.active += 1;
        true
    }

    #[inline]
    pub fn release(&mut self) {
        debug_assert!(self.active > 0, "bulkhead released more than acquired");
        self.active = self.active.saturating_sub(1);
    }

    pub fn active(&self) -> u32 {
        self.active
    }

    pub fn max(&self) -> u32 {
        self.max
    }
}
