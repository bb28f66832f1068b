//! Where calls stream: the recent ends of calls that held an upstream slot (they had their
//! first byte). A slot freed that recently went to a call queued at the upstream, which has not
//! had its first byte yet and so still counts late: the late count is lowered by these ends, or
//! every stream ending before the queued calls' first bytes would cut the limit by one more
//! (ADR 1220).

use super::tuning::HANDOVERS_KEPT as KEPT;
use crate::Nanos;

/// The ends in the order they came, oldest at `head`.
#[derive(Clone, Debug)]
struct Ring {
    ends: [Nanos; KEPT],
    head: usize,
    len: usize,
}

#[derive(Clone, Debug, Default)]
pub struct Handovers {
    /// Boxed and made at the first end: a pointer on keys that never stream (per-key memory).
    ring: Option<Box<Ring>>,
}

impl Handovers {
    /// A call that had its first byte gave its slot back at `end`.
    #[inline]
    pub fn record(&mut self, end: Nanos) {
        let r = self.ring.get_or_insert_with(|| {
            Box::new(Ring {
                ends: [0; KEPT],
                head: 0,
                len: 0,
            })
        });
        if r.len == KEPT {
            r.head = (r.head + 1) % KEPT;
            r.len -= 1;
        }
        r.ends[(r.head + r.len) % KEPT] = end;
        r.len += 1;
    }

    /// Ends at or after `t`; older ones are dropped (`t` only moves forward with the clock).
    pub fn since(&mut self, t: Nanos) -> u32 {
        let Some(r) = self.ring.as_mut() else {
            return 0;
        };
        while r.len > 0 && r.ends[r.head] < t {
            r.head = (r.head + 1) % KEPT;
            r.len -= 1;
        }
        r.len as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_the_ends_since_a_time_and_keeps_the_last_64() {
        let mut h = Handovers::default();
        assert_eq!(h.since(0), 0, "nothing recorded");
        for end in 1..=100 {
            h.record(end);
        }
        assert_eq!(h.since(0), 64, "the oldest 36 were dropped");
        assert_eq!(h.since(90), 11);
        h.record(101);
        assert_eq!(h.since(95), 7);
        assert_eq!(h.since(200), 0);
    }
}
