//! The event queue: a binary heap ordered by (time, sequence), so simultaneous events run in
//! the order they were scheduled and a run is reproducible.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Ev {
    /// A closed-loop caller makes a call (or retries a refused one).
    Attempt { client: u16, caller: u32 },
    /// The next open-loop arrival of a client; `gen` drops chains a rate change replaced.
    Arrival { client: u16, gen: u32 },
    /// The next call of another tenant straight to the upstream; `gen` as above.
    Background { gen: u32 },
    /// A stream's first token.
    FirstToken { call: u32 },
    /// The upstream finished a call (it frees its server).
    Complete { call: u32 },
    /// A caller's deadline.
    Deadline { call: u32 },
    /// The scenario's change number `index`.
    Change { index: u32 },
    /// Record the limiters' state.
    Tick,
}

#[derive(Default)]
pub struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
}

impl Queue {
    pub fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, ev)));
    }

    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        self.heap.pop().map(|Reverse((t, _, ev))| (t, ev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_by_time_then_insertion_order() {
        let mut q = Queue::default();
        q.push(5, Ev::Tick);
        q.push(3, Ev::Complete { call: 1 });
        q.push(3, Ev::Complete { call: 2 });
        assert_eq!(q.pop(), Some((3, Ev::Complete { call: 1 })));
        assert_eq!(q.pop(), Some((3, Ev::Complete { call: 2 })));
        assert_eq!(q.pop(), Some((5, Ev::Tick)));
        assert_eq!(q.pop(), None);
    }
}
