//! Permits: a slab of slots whose ids carry a generation, so that a stale or double settle is
//! detected and never touches another call's accounting. Grows only to peak concurrency.

use crate::Nanos;

/// Bits of a permit id that hold the slot index (1 048 576 concurrent calls per key).
pub const SLOT_BITS: u32 = 20;
pub const MAX_SLOTS: usize = 1 << SLOT_BITS;
const SLOT_MASK: u64 = (1 << SLOT_BITS) - 1;

/// What a live permit remembers about its call.
#[derive(Clone, Copy, Debug, Default)]
pub struct PermitSlot {
    gen: u32,
    live: bool,
    /// When the call was admitted (queue wait excluded: the upstream never saw it).
    pub start: Nanos,
    /// When `mark()` was first called, 0 if never.
    pub mark: Nanos,
    /// Calls in flight at acquire, this one included.
    pub inflight: u32,
    /// A half-open probe of the breaker.
    pub probe: bool,
    /// The breaker's half-open cycle this probe belongs to; 0 when not a probe.
    pub probe_cycle: u32,
    /// Admitted from the queue: part of the caller's deadline was spent waiting with us.
    pub waited: bool,
    /// Counted while in flight as waiting for its first byte past the usual (ADR 0118).
    pub late: bool,
    /// The call's tenant (`tenants::tenant_id`), 0 for none: charged its slot time at settle.
    pub tenant: u32,
}

#[derive(Clone, Debug, Default)]
pub struct PermitSlab {
    slots: Vec<PermitSlot>,
    free: Vec<u32>,
    next_gen: u32,
    live: u32,
}

impl PermitSlab {
    /// A new permit id, or `None` when the key already holds `MAX_SLOTS` calls.
    #[inline]
    pub fn alloc(&mut self, start: Nanos, inflight: u32, probe: bool) -> Option<u64> {
        self.alloc_probe(start, inflight, probe as u32)
    }

    /// As [`alloc`](Self::alloc), remembering the breaker's half-open cycle (0: not a probe).
    #[inline]
    pub fn alloc_probe(&mut self, start: Nanos, inflight: u32, probe_cycle: u32) -> Option<u64> {
        self.next_gen = self.next_gen.wrapping_add(1);
        let gen = self.next_gen;
        let index = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                if self.slots.len() >= MAX_SLOTS {
                    return None;
                }
                self.slots.push(PermitSlot::default());
                self.slots.len() - 1
            }
        };
        self.slots[index] = PermitSlot {
            gen,
            live: true,
            start,
            mark: 0,
            inflight,
            probe: probe_cycle != 0,
            probe_cycle,
            waited: false,
            late: false,
            tenant: 0,
        };
        self.live += 1;
        Some(((gen as u64) << SLOT_BITS) | index as u64)
    }

    #[inline]
    fn index_of(&self, id: u64) -> Option<usize> {
        let index = (id & SLOT_MASK) as usize;
        let gen = (id >> SLOT_BITS) as u32;
        let slot = self.slots.get(index)?;
        (slot.live && slot.gen == gen && (id >> (SLOT_BITS + 32)) == 0).then_some(index)
    }

    /// The live slot of `id`, or `None` when the id is stale, settled or was never issued.
    #[inline]
    pub fn get(&self, id: u64) -> Option<&PermitSlot> {
        self.index_of(id).map(|i| &self.slots[i])
    }

    /// As [`get`](Self::get), to change it.
    #[inline]
    pub fn get_mut(&mut self, id: u64) -> Option<&mut PermitSlot> {
        let i = self.index_of(id)?;
        Some(&mut self.slots[i])
    }

    /// Retire `id` and return what it held; `None` when stale or already settled.
    #[inline]
    pub fn release(&mut self, id: u64) -> Option<PermitSlot> {
        let i = self.index_of(id)?;
        let slot = &mut self.slots[i];
        slot.live = false;
        let out = *slot;
        // The free list never outgrows the slot vector, whose capacity it mirrors: reserve once.
        if self.free.capacity() < self.slots.len() {
            self.free.reserve(self.slots.len() - self.free.len());
        }
        self.free.push(i as u32);
        self.live -= 1;
        Some(out)
    }

    /// Permits issued and not yet settled.
    #[inline]
    pub fn live(&self) -> u32 {
        self.live
    }

    /// Live calls admitted before `t` that have not marked their first byte, each flagged
    /// `late`: O(slots), at most once per update interval of a streaming key (ADR 0118).
    pub fn count_late(&mut self, t: Nanos) -> u32 {
        let mut n = 0;
        for s in self.slots.iter_mut() {
            if s.live && s.mark == 0 && s.start < t {
                s.late = true;
                n += 1;
            }
        }
        n
    }

    /// Approximate heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<PermitSlot>() + self.free.capacity() * 4
    }
}
