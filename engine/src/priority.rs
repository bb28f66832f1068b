//! Who waits first, and who is shed first, in a key's queue (ADR 1001). Pure: levels in,
//! decisions out.
//!
//! A call's priority is one of five classes; within a class, a tenant that used less of the
//! key's slot time recently ranks higher (`tenants.rs`, ADR 1002). Class and rank make the
//! call's *level*: 4 ranks per class, 20 levels, higher admitted first, FIFO within a level.
//! A standing queue sheds at the rate of the factors' ramp, lowest levels first: the calls
//! below the level at that quantile of the levels recently seen waiting (failsafe-go's rule).

use crate::rng::SplitMix64;

/// Ranks within a class (tenant usage). 4: ours, a guess (ADR 1002).
pub const RANKS: u8 = 4;
/// Classes × ranks.
pub const LEVELS: usize = 5 * RANKS as usize;

/// A call's class. Five, as failsafe-go's bands (very low … very high) and Google SRE's
/// criticalities (sheddable … critical plus) have about as many.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Priority {
    Sheddable = 0,
    Low = 1,
    Normal = 2,
    High = 3,
    Critical = 4,
}

impl Priority {
    pub const ALL: [Priority; 5] = [
        Priority::Sheddable,
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ];

    pub fn from_code(code: u32) -> Option<Priority> {
        Priority::ALL.get(code as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            Priority::Sheddable => "sheddable",
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }

    /// This class's level at `rank` (0 … RANKS − 1, higher first; clamped).
    #[inline]
    pub fn level(self, rank: u8) -> u8 {
        self as u8 * RANKS + rank.min(RANKS - 1)
    }
}

/// The level of a call that names no priority and no tenant: normal, top rank.
pub const DEFAULT_LEVEL: u8 = Priority::Normal as u8 * RANKS + RANKS - 1;

/// The class of a level.
#[inline]
pub fn class_of(level: u8) -> Priority {
    Priority::from_code((level / RANKS) as u32).unwrap_or(Priority::Critical)
}

/// Counts the levels recently seen waiting. Decayed by halving, so it follows the mix of the
/// last few thousand waiters. 4 096: ours, a guess (a batch's worth; ADR 1001).
#[derive(Clone, Copy, Debug)]
pub struct RecentLevels {
    counts: [u16; LEVELS],
    total: u16,
}

const DECAY_AT: u16 = 4_096;

impl Default for RecentLevels {
    fn default() -> Self {
        RecentLevels {
            counts: [0; LEVELS],
            total: 0,
        }
    }
}

impl RecentLevels {
    /// A call of `level` asked to wait.
    #[inline]
    pub fn record(&mut self, level: u8) {
        let i = (level as usize).min(LEVELS - 1);
        self.counts[i] += 1;
        self.total += 1;
        if self.total >= DECAY_AT {
            let mut t = 0;
            for c in &mut self.counts {
                *c /= 2;
                t += *c;
            }
            self.total = t;
        }
    }

    /// Whether to shed a call of `level` when the queue must shed a share `p` of its arrivals:
    /// every level wholly below the `p`-quantile is shed, the level that straddles it in part,
    /// the levels above not at all. With one level in use this is "shed with chance `p`".
    #[inline]
    pub fn sheds(&self, level: u8, p: f64, rng: &mut SplitMix64) -> bool {
        if p <= 0.0 {
            return false;
        }
        let i = (level as usize).min(LEVELS - 1);
        let total = self.total as f64;
        if total == 0.0 || self.counts[i] == 0 {
            // Nothing seen at this level yet: judged alone.
            return p >= 1.0 || rng.next_f64() < p;
        }
        let below: u32 = self.counts[..i].iter().map(|&c| c as u32).sum();
        let below = below as f64 / total;
        let share = self.counts[i] as f64 / total;
        if below >= p {
            return false;
        }
        if below + share <= p {
            return true;
        }
        rng.next_f64() < (p - below) / share
    }

    /// Levels seen, by level (tests and stats).
    pub fn counts(&self) -> &[u16; LEVELS] {
        &self.counts
    }
}

/// What the waiters of one level hold: the limiter's queue counts them, the quota's line also
/// sums what they cost (ADR 1108).
pub trait Waiters: Copy + Default {
    /// `other` joins these.
    fn join(&mut self, other: &Self);
    /// `other` leaves these; `false` (and nothing changes) when none waits.
    fn leave(&mut self, other: &Self) -> bool;
    /// How many wait.
    fn count(&self) -> u32;
}

impl Waiters for u32 {
    #[inline]
    fn join(&mut self, other: &u32) {
        *self += other;
    }
    #[inline]
    fn leave(&mut self, other: &u32) -> bool {
        if *self < *other {
            return false;
        }
        *self -= other;
        true
    }
    #[inline]
    fn count(&self) -> u32 {
        *self
    }
}

/// Waiters by level. The one rule of every line a call waits in, the limiter's queue and the
/// quota's (ADR 1001, 1108): a call waits behind the waiters at its level or above
/// ([`at_or_above`](Self::at_or_above)), the highest level is admitted first.
#[derive(Clone, Copy, Debug)]
pub struct ByLevel<W> {
    at: [W; LEVELS],
}

impl<W: Waiters> Default for ByLevel<W> {
    fn default() -> Self {
        ByLevel {
            at: [W::default(); LEVELS],
        }
    }
}

impl<W: Waiters> ByLevel<W> {
    #[inline]
    pub fn join(&mut self, level: u8, w: &W) {
        self.at[(level as usize).min(LEVELS - 1)].join(w);
    }

    /// `w` leaves `level`; false when none waits there.
    #[inline]
    pub fn leave(&mut self, level: u8, w: &W) -> bool {
        self.at[(level as usize).min(LEVELS - 1)].leave(w)
    }

    /// The waiters a call of `level` waits behind: those at its level or above.
    #[inline]
    pub fn at_or_above(&self, level: u8) -> W {
        let mut out = W::default();
        for w in &self.at[(level as usize).min(LEVELS - 1)..] {
            out.join(w);
        }
        out
    }

    /// The highest level with a waiter.
    pub fn highest(&self) -> Option<u8> {
        (0..LEVELS)
            .rev()
            .find(|&i| self.at[i].count() > 0)
            .map(|i| i as u8)
    }

    pub fn at(&self, level: u8) -> W {
        self.at[(level as usize).min(LEVELS - 1)]
    }
}

/// Waiting calls by level (the limiter's queue).
pub type QueuedByLevel = ByLevel<u32>;

impl QueuedByLevel {
    #[inline]
    pub fn add(&mut self, level: u8) {
        self.join(level, &1);
    }

    /// One fewer at `level`; false when none waits there.
    #[inline]
    pub fn remove(&mut self, level: u8) -> bool {
        self.leave(level, &1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_order_classes_first_then_ranks() {
        assert_eq!(Priority::Sheddable.level(0), 0);
        assert_eq!(Priority::Sheddable.level(3), 3);
        assert_eq!(Priority::Low.level(0), 4);
        assert_eq!(DEFAULT_LEVEL, 11);
        assert_eq!(
            Priority::Critical.level(9),
            19,
            "a rank past the last is clamped"
        );
        assert_eq!(class_of(11), Priority::Normal);
        assert_eq!(class_of(19), Priority::Critical);
        assert!(Priority::High.level(0) > Priority::Normal.level(3));
    }

    #[test]
    fn one_level_sheds_with_chance_p() {
        let mut r = RecentLevels::default();
        for _ in 0..100 {
            r.record(DEFAULT_LEVEL);
        }
        let mut rng = SplitMix64::new(7);
        let shed = (0..10_000)
            .filter(|_| r.sheds(DEFAULT_LEVEL, 0.3, &mut rng))
            .count();
        assert!((2_850..3_150).contains(&shed), "{shed} of 10 000 at p 0.3");
        assert!(!r.sheds(DEFAULT_LEVEL, 0.0, &mut rng));
        assert!(r.sheds(DEFAULT_LEVEL, 1.0, &mut rng));
    }

    #[test]
    fn the_lowest_levels_are_shed_first() {
        // 70 % sheddable, 30 % critical.
        let mut r = RecentLevels::default();
        for i in 0..1_000 {
            r.record(if i % 10 < 7 { 3 } else { 19 });
        }
        let mut rng = SplitMix64::new(1);
        let (s, c) = (3, 19);
        // Shedding half the arrivals: 5/7 of the sheddable calls, no critical one.
        let shed = (0..7_000).filter(|_| r.sheds(s, 0.5, &mut rng)).count();
        assert!((4_850..5_150).contains(&shed), "{shed} of 7 000 sheddable");
        assert!((0..1_000).all(|_| !r.sheds(c, 0.5, &mut rng)));
        assert!((0..1_000).all(|_| !r.sheds(c, 0.7, &mut rng)));
        // Past the sheddable share the critical calls go too, in part.
        assert!((0..1_000).all(|_| r.sheds(s, 0.75, &mut rng)));
        let shed = (0..3_000).filter(|_| r.sheds(c, 0.85, &mut rng)).count();
        assert!(
            (1_400..1_600).contains(&shed),
            "{shed} of 3 000 critical at p 0.85"
        );
    }

    #[test]
    fn recent_levels_decay_by_halving() {
        let mut r = RecentLevels::default();
        for _ in 0..DECAY_AT - 1 {
            r.record(0);
        }
        assert_eq!(r.counts()[0], DECAY_AT - 1);
        r.record(5);
        assert_eq!((r.counts()[0], r.counts()[5]), (2_047, 0));
        assert_eq!(r.total, 2_047);
    }

    #[test]
    fn waiters_ahead_are_those_at_or_above() {
        let mut q = QueuedByLevel::default();
        q.add(3);
        q.add(3);
        q.add(11);
        q.add(19);
        assert_eq!(q.at_or_above(0), 4);
        assert_eq!(q.at_or_above(4), 2);
        assert_eq!(q.at_or_above(19), 1);
        assert_eq!(q.highest(), Some(19));
        assert!(q.remove(19));
        assert!(!q.remove(19));
        assert_eq!(q.highest(), Some(11));
        assert_eq!(q.at(3), 2);
    }
}
