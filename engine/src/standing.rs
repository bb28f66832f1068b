//! Tells a standing queue from a burst that drains (ADR 0114). Pure: times and counts in.
//!
//! A burst (a batch fired at once) is a good queue: it forms and then shrinks, interval after
//! interval. A standing queue does not shrink, because arrivals keep up with what the upstream
//! serves. CoDel (RFC 8289) draws the line by sojourn time, which cannot tell a long batch from
//! overload: every waiter of a 10 000-call batch waits long. The queue's length across
//! consecutive intervals can: a queue that has not shrunk over `STREAK` intervals in a row is
//! standing, and it stays so until it has emptied (ADR 0614; until it had drained into the
//! factors' free zone, it grew again for two intervals each time before it was shed).
//! An interval ends only once a call has left the key since it began: a queue that had no
//! chance to shrink (a batch dispatched in one long synchronous turn of the event loop, or a
//! stall of this process) is no evidence (ADR 0614).

use crate::Nanos;

/// CoDel's interval (RFC 8289: 100 ms), the shortest interval over which a queue is judged.
pub const MIN_INTERVAL_NS: u64 = 100_000_000;
/// Departures an interval should see at the key's drain rate, so that a draining queue shows
/// its drain above the noise of single departures. 8: ours, a guess (ADR 0114 measures 4, 16).
pub const DEPARTURES: f64 = 8.0;
/// Intervals in a row without shrinking before a queue counts as standing. 2: ours (ADR 0114:
/// one interval cannot tell a burst that landed mid-interval from growth).
pub const STREAK: u8 = 2;

#[derive(Clone, Copy, Debug, Default)]
pub struct Standing {
    /// When the current interval began (ms, wrapping: 49 days apart still compare right
    /// for intervals shorter than that), and the queue's length then.
    since_ms: u32,
    queued_then: u32,
    /// Intervals in a row the queue did not shrink.
    streak: u8,
    standing: bool,
    /// A call left the key (settled) since the interval began.
    departed: bool,
}

impl Standing {
    /// Judge the queue at an arrival. `queued`: waiting now; `free_zone`: waiting calls at or
    /// below which no queue is standing; `interval_ns`: the key's interval (see [`interval_ns`]).
    #[inline]
    pub fn observe(&mut self, now: Nanos, queued: u32, free_zone: u32, interval_ns: u64) -> bool {
        if queued <= free_zone {
            self.streak = 0;
            if queued == 0 {
                self.standing = false;
            }
        }
        let now_ms = (now / 1_000_000) as u32;
        if self.departed && now_ms.wrapping_sub(self.since_ms) as u64 * 1_000_000 >= interval_ns {
            self.departed = false;
            if queued > 0 && queued >= self.queued_then {
                self.streak = self.streak.saturating_add(1);
                if self.streak >= STREAK && queued > free_zone {
                    self.standing = true;
                }
            } else {
                self.streak = 0;
            }
            self.since_ms = now_ms;
            self.queued_then = queued;
        }
        self.standing
    }

    /// A call left the key: its slot turned over, so the queue could have shrunk.
    #[inline]
    pub fn depart(&mut self) {
        self.departed = true;
    }

    pub fn is_standing(&self) -> bool {
        self.standing
    }
}

/// The interval over which a key's queue is judged: long enough for `DEPARTURES` calls to leave
/// at the key's drain rate (`limit` slots each held `hold_ns` on average), and at least CoDel's.
#[inline]
pub fn interval_ns(hold_ns: f64, limit: u32) -> u64 {
    let spacing = hold_ns / limit.max(1) as f64;
    (DEPARTURES * spacing).max(MIN_INTERVAL_NS as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    const I: u64 = MIN_INTERVAL_NS;

    /// Judge at `now` with `queued` waiting, after a call left the key.
    fn after_departure(s: &mut Standing, now: Nanos, queued: u32) -> bool {
        s.depart();
        s.observe(now, queued, 20, I)
    }

    #[test]
    fn a_burst_that_drains_never_stands() {
        let mut s = Standing::default();
        // A batch lands mid-interval: 0 → 1 000 waiting, then drains 64 per interval.
        assert!(!after_departure(&mut s, 0, 0));
        assert!(!after_departure(&mut s, I / 2, 1_000));
        let mut q = 1_000;
        for k in 1..15 {
            q -= 64;
            assert!(
                !after_departure(&mut s, k * I + I / 2, q),
                "interval {k}, {q} waiting"
            );
        }
    }

    #[test]
    fn a_queue_that_does_not_shrink_for_two_intervals_stands_until_it_empties() {
        let mut s = Standing::default();
        assert!(!after_departure(&mut s, 0, 30));
        assert!(
            !after_departure(&mut s, I, 40),
            "one interval of growth is not enough"
        );
        assert!(
            after_departure(&mut s, 2 * I, 40),
            "flat for a second interval: standing"
        );
        // It stays standing while it shrinks, into the free zone too (where the factors shed
        // nothing): growing past it again, it is shed at once (ADR 0614)…
        assert!(after_departure(&mut s, 3 * I, 35));
        assert!(after_departure(&mut s, 3 * I + 1, 20));
        assert!(after_departure(&mut s, 3 * I + 2, 1));
        assert!(after_departure(&mut s, 3 * I + 3, 40));
        // …and stops once it has emptied.
        assert!(!after_departure(&mut s, 3 * I + 4, 0));
        assert!(
            !after_departure(&mut s, 4 * I, 25),
            "the streak starts again from nothing"
        );
    }

    #[test]
    fn a_queue_that_had_no_departure_is_not_judged() {
        // A batch dispatched in one synchronous turn that lasts 1 s (a cold process on a busy
        // machine): the queue grows across ten intervals, but no call could leave meanwhile.
        let mut s = Standing::default();
        assert!(!after_departure(&mut s, I, 0));
        for k in 2..=11 {
            assert!(!s.observe(k * I, 100 * k as u32, 20, I), "interval {k}");
        }
        // Calls leave from then on: the growth is judged over intervals with departures.
        assert!(
            !after_departure(&mut s, 12 * I, 1_000),
            "one judged interval"
        );
        assert!(
            after_departure(&mut s, 13 * I, 1_000),
            "flat across two: standing"
        );
    }

    #[test]
    fn a_queue_inside_the_free_zone_never_stands() {
        let mut s = Standing::default();
        for k in 0..10 {
            assert!(!after_departure(&mut s, k * I, 10));
        }
    }

    #[test]
    fn the_interval_scales_with_the_departure_spacing() {
        assert_eq!(
            interval_ns(25e6, 20),
            MIN_INTERVAL_NS,
            "fast calls: CoDel's floor"
        );
        // 45 s streams on 16 slots: a departure every 2.8 s, 8 of them.
        assert_eq!(interval_ns(45e9, 16), 22_500_000_000);
        assert_eq!(interval_ns(0.0, 0), MIN_INTERVAL_NS);
    }
}
