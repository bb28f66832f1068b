//! The event queue: a binary heap ordered by (time, sequence), so simultaneous events run in
//! the order they were scheduled and a run is reproducible.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

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
    /// A failed call's caller tries again (RetryStorm scenarios).
    Retry { call: u32 },
    /// The client's event loop sees a finished call's response.
    Seen { call: u32 },
    /// A call's new connection is set up: it goes to the upstream.
    Connected { call: u32 },
    /// A client that joins late starts its callers.
    Join { client: u16 },
    /// The scenario's change number `index`.
    Change { index: u32 },
    /// Record the limiters' state.
    Tick,
}

/// A heap, plus a FIFO lane for caller attempts: refused closed-loop callers retry exactly
/// 10 ms later, so their events arrive in time order and a deque holds them for O(1) instead
/// of a heap operation each (they are most of the events under overload). `pop` merges the
/// two by (time, sequence), so the order is exactly the heap-only order.
#[derive(Default)]
pub struct Queue {
    heap: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    lane: VecDeque<(u64, u64, Ev)>,
    seq: u64,
}

impl Queue {
    pub fn push(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        let in_order = self.lane.back().is_none_or(|b| b.0 <= at);
        if matches!(ev, Ev::Attempt { .. }) && in_order {
            self.lane.push_back((at, self.seq, ev));
        } else {
            self.heap.push(Reverse((at, self.seq, ev)));
        }
    }

    pub fn pop(&mut self) -> Option<(u64, Ev)> {
        let lane_first = match (self.heap.peek(), self.lane.front()) {
            (Some(Reverse(h)), Some(l)) => (l.0, l.1) < (h.0, h.1),
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if lane_first {
            self.lane.pop_front().map(|(t, _, ev)| (t, ev))
        } else {
            self.heap.pop().map(|Reverse((t, _, ev))| (t, ev))
        }
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

    #[test]
    fn the_attempt_lane_merges_in_exact_heap_order() {
        let mut q = Queue::default();
        let a = |c| Ev::Attempt {
            client: 0,
            caller: c,
        };
        q.push(10, a(1)); // lane
        q.push(10, Ev::Tick); // heap, same time, later sequence
        q.push(5, a(2)); // out of order for the lane: heap
        q.push(20, a(3)); // lane
        q.push(15, Ev::Complete { call: 9 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, a(2)),
                (10, a(1)),
                (10, Ev::Tick),
                (15, Ev::Complete { call: 9 }),
                (20, a(3))
            ]
        );
    }
}
