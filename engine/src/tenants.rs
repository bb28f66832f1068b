//! How much of a key's slot time each tenant used recently, to rank its calls within their
//! class (ADR 1002, 1109). Pure: times in, ranks out. failsafe-go's `UsageTracker` is the anchor.
//!
//! Usage is slot time (admission to settle), decayed with a half-life. A tenant at or below
//! the mean usage of the key's tenants ranks highest; at 2, 4 and more than 4 times the mean,
//! one, two and three ranks lower. A key tracks up to `MAX_TENANTS` tenants one by one, least
//! recently seen out first. A name is tracked from its second call: until then it is one of
//! the *newcomers*, whose calls are ranked and charged together as one tenant, so that a caller
//! naming a new tenant on every call ranks as one tenant that used all they used (ADR 1109).

use crate::priority::RANKS;
use crate::Nanos;

/// Tenants tracked one by one per key. 128: ours, a guess, room for the 100 tenants ADR 1109
/// measures; 12 B each, grown as tenants come (ADR 1109 has half and twice it).
pub const MAX_TENANTS: usize = 128;
/// Names seen once that a key remembers, to track them from their second call. 32: ours, a
/// guess (ADR 1109 has half and twice it); 8 B each.
pub const NEWCOMERS: usize = 32;
/// Half-life of a tenant's usage. 10 s: ours, a guess (ADR 1002 measures 5 and 20 s).
pub const HALF_LIFE_MS: f64 = 10_000.0;
/// Usage is kept scaled to a landmark time (forward decay: every tenant decays by the same
/// factor, so ranks need no clock); the landmark moves on every this many half-lives.
const REBASE_HALF_LIVES: f64 = 16.0;

#[derive(Clone, Copy, Debug, Default)]
struct Entry {
    /// The tenant's name, hashed (`tenant_id`); two names that collide share one usage.
    id: u32,
    /// Slot seconds, scaled to the landmark (`Table::scale`).
    usage: f32,
    /// When a call last named this tenant, ms (least recently seen is evicted first).
    seen_ms: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Newcomer {
    /// 0: an empty place.
    id: u32,
    usage: f32,
}

#[derive(Clone, Debug)]
struct Table {
    entries: Vec<Entry>,
    newcomers: [Newcomer; NEWCOMERS],
    /// The place the next newcomer takes (the oldest goes).
    next: usize,
    /// Scaled usage of the newcomers no longer remembered and of the tenants evicted.
    others: f64,
    landmark_ns: Nanos,
}

/// A key's tenants: nothing until a call names one (ADR 1109).
#[derive(Clone, Debug, Default)]
pub struct Tenants {
    table: Option<Box<Table>>,
}

/// A tenant's name as the engine keeps it: FNV-1a, never 0 (0 is "no tenant").
pub fn tenant_id(name: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h.max(1)
}

#[inline]
fn ms(now: Nanos) -> u32 {
    (now / 1_000_000) as u32
}

impl Table {
    fn new(now: Nanos) -> Self {
        Table {
            entries: Vec::new(),
            newcomers: [Newcomer::default(); NEWCOMERS],
            next: 0,
            others: 0.0,
            landmark_ns: now,
        }
    }

    /// The factor a usage charged at `now` is scaled by: 2^((now − landmark) / half-life).
    fn scale(&mut self, now: Nanos) -> f64 {
        let half_lives = |t: Nanos, l: Nanos| (t as f64 - l as f64) / (HALF_LIFE_MS * 1e6);
        let h = half_lives(now, self.landmark_ns);
        if h > REBASE_HALF_LIVES {
            // Everything decays to now: the scaled values stay far from f32's range.
            let k = (-h).exp2();
            for e in &mut self.entries {
                e.usage = (e.usage as f64 * k) as f32;
            }
            for n in &mut self.newcomers {
                n.usage = (n.usage as f64 * k) as f32;
            }
            self.others *= k;
            self.landmark_ns = now;
            return 1.0;
        }
        h.exp2()
    }

    /// The newcomers' usage together: they rank as one tenant.
    fn newcomers_usage(&self) -> f64 {
        self.others + self.newcomers.iter().map(|n| n.usage as f64).sum::<f64>()
    }

    /// The rank of a tenant that used `usage` (scaled).
    fn rank_of(&self, usage: f64) -> u8 {
        let newcomers = self.newcomers_usage();
        let total = newcomers + self.entries.iter().map(|e| e.usage as f64).sum::<f64>();
        if total <= 0.0 {
            return RANKS - 1;
        }
        let tenants = self.entries.len() + usize::from(newcomers > 0.0);
        let r = usage / (total / tenants.max(1) as f64);
        if r <= 1.0 {
            RANKS - 1
        } else if r <= 2.0 {
            RANKS - 2
        } else if r <= 4.0 {
            RANKS - 3
        } else {
            0
        }
    }

    /// Tracks newcomer `i` from now on, in place of the least recently seen if full.
    fn promote(&mut self, i: usize, now_ms: u32) -> f64 {
        let n = std::mem::take(&mut self.newcomers[i]);
        let e = Entry {
            id: n.id,
            usage: n.usage,
            seen_ms: now_ms,
        };
        if self.entries.len() < MAX_TENANTS {
            if self.entries.len() == self.entries.capacity() {
                // Grown 16 at a time: a key with a few tenants holds a few.
                self.entries
                    .reserve_exact(16.min(MAX_TENANTS - self.entries.len()));
            }
            self.entries.push(e);
        } else {
            let oldest = (0..self.entries.len())
                .max_by_key(|&j| now_ms.wrapping_sub(self.entries[j].seen_ms))
                .unwrap_or(0);
            self.others += self.entries[oldest].usage as f64;
            self.entries[oldest] = e;
        }
        n.usage as f64
    }
}

impl Tenants {
    /// The rank (0 … RANKS − 1, higher first) of a call by tenant `id` at `now`. A tenant
    /// tracked one by one is ranked by its own usage; a name seen for the first time is
    /// remembered and ranked with the other newcomers; seen again, it is tracked (ADR 1109).
    pub fn rank(&mut self, id: u32, now: Nanos) -> u8 {
        let t = self.table.get_or_insert_with(|| Box::new(Table::new(now)));
        let now_ms = ms(now);
        if let Some(e) = t.entries.iter_mut().find(|e| e.id == id) {
            e.seen_ms = now_ms;
            let usage = e.usage as f64;
            return t.rank_of(usage);
        }
        if let Some(i) = t.newcomers.iter().position(|n| n.id == id) {
            let usage = t.promote(i, now_ms);
            return t.rank_of(usage);
        }
        let place = t.next;
        t.next = (place + 1) % NEWCOMERS;
        t.others += t.newcomers[place].usage as f64;
        t.newcomers[place] = Newcomer { id, usage: 0.0 };
        t.rank_of(t.newcomers_usage())
    }

    /// Charge a settled call's slot time to tenant `id`: its own usage if tracked or
    /// remembered, else the newcomers'.
    pub fn charge(&mut self, id: u32, slot_ns: u64, now: Nanos) {
        let Some(t) = &mut self.table else {
            return;
        };
        let add = slot_ns as f64 * 1e-9 * t.scale(now);
        if let Some(e) = t.entries.iter_mut().find(|e| e.id == id) {
            e.usage = (e.usage as f64 + add) as f32;
        } else if let Some(n) = t.newcomers.iter_mut().find(|n| n.id == id) {
            n.usage = (n.usage as f64 + add) as f32;
        } else {
            t.others += add;
        }
    }

    /// Tenants whose usage the key holds now: tracked, and newcomers remembered.
    pub fn len(&self) -> usize {
        self.table.as_ref().map_or(0, |t| {
            t.entries.len() + t.newcomers.iter().filter(|n| n.id != 0).count()
        })
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.table.as_ref().map_or(0, |t| {
            std::mem::size_of::<Table>() + t.entries.capacity() * std::mem::size_of::<Entry>()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    /// Calls naming `name` at `now` until it is tracked one by one (its second).
    fn seen(t: &mut Tenants, name: &str, now: Nanos) -> u8 {
        t.rank(tenant_id(name), now);
        t.rank(tenant_id(name), now)
    }

    fn usage_at(t: &Tenants, name: &str, now: Nanos) -> f64 {
        let t = t.table.as_ref().unwrap();
        let e = t.entries.iter().find(|e| e.id == tenant_id(name)).unwrap();
        let h = (now as f64 - t.landmark_ns as f64) / (HALF_LIFE_MS * 1e6);
        e.usage as f64 * (-h).exp2()
    }

    #[test]
    fn a_heavy_tenant_ranks_below_light_ones() {
        let mut t = Tenants::default();
        let (heavy, light) = (tenant_id("heavy"), tenant_id("light"));
        assert_eq!(seen(&mut t, "heavy", 0), 3, "nobody used anything yet");
        assert_eq!(seen(&mut t, "light", 0), 3);
        // 10 s of slot time against 1 s: mean 5.5, heavy at 1.8 × → one rank down.
        t.charge(heavy, 10 * S, S);
        t.charge(light, S, S);
        assert_eq!(t.rank(heavy, S), 2);
        assert_eq!(t.rank(light, S), 3);
        // Add two idle tenants: mean 2.75, heavy at 3.6 × the mean.
        seen(&mut t, "a", S);
        seen(&mut t, "b", S);
        assert_eq!(t.rank(heavy, S), 1);
        for n in ["c", "d", "e"] {
            seen(&mut t, n, S);
        }
        assert_eq!(t.rank(heavy, S), 0, "10 of 11 s among 7 tenants");
        assert_eq!(t.rank(light, S), 3);
    }

    #[test]
    fn usage_decays_with_its_half_life_across_landmarks() {
        let mut t = Tenants::default();
        let a = tenant_id("a");
        seen(&mut t, "a", 0);
        t.charge(a, 8 * S, 0);
        let half = (HALF_LIFE_MS as u64) * 1_000_000;
        assert!((usage_at(&t, "a", half) - 4.0).abs() < 1e-4);
        assert!((usage_at(&t, "a", 3 * half) - 1.0).abs() < 1e-4);
        // Past the landmark's reach, a charge moves it: the older usage is decayed to then.
        t.charge(a, 8 * S, 20 * half);
        let expect = 8.0 + 8.0 * (-20f64).exp2();
        assert!((usage_at(&t, "a", 20 * half) - expect).abs() < 1e-4);
        assert_eq!(t.table.as_ref().unwrap().landmark_ns, 20 * half);
    }

    #[test]
    fn a_name_is_tracked_from_its_second_call_and_newcomers_rank_together() {
        let mut t = Tenants::default();
        for q in ["q1", "q2", "q3", "q4"] {
            seen(&mut t, q, 0);
            t.charge(tenant_id(q), S, 0);
        }
        // A flooder naming a new tenant on every call: each call ranks with the newcomers,
        // who used everything it used (past 4 × the mean of 5 tenants after 16 calls).
        let mut ranks = Vec::new();
        for i in 0..40 {
            let id = tenant_id(&format!("flood-{i}"));
            ranks.push(t.rank(id, 0));
            t.charge(id, S, 0);
        }
        assert_eq!(ranks[0], 3, "a first newcomer used nothing yet");
        assert!(ranks.windows(2).all(|w| w[1] <= w[0]), "{ranks:?}");
        assert!(ranks[20..].iter().all(|&r| r == 0), "{ranks:?}");
        assert_eq!(t.rank(tenant_id("q1"), 0), 3);
        let table = t.table.as_ref().unwrap();
        assert_eq!(table.entries.len(), 4, "no flooder name is tracked");
        assert!((table.newcomers_usage() - 40.0).abs() < 1e-3);
        // A name seen again while remembered is tracked, with what it used as a newcomer.
        assert_eq!(t.rank(tenant_id("flood-39"), 0), 3);
        assert!((usage_at(&t, "flood-39", 0) - 1.0).abs() < 1e-4);
        assert!((t.table.as_ref().unwrap().newcomers_usage() - 39.0).abs() < 1e-3);
    }

    #[test]
    fn at_most_max_tenants_the_least_recently_seen_out_first_and_bounded() {
        let mut t = Tenants::default();
        assert_eq!(t.heap_bytes(), 0, "nothing until a call names a tenant");
        for i in 0..MAX_TENANTS as u64 {
            seen(&mut t, &format!("t{i}"), i * S);
        }
        assert_eq!(t.table.as_ref().unwrap().entries.len(), MAX_TENANTS);
        let cap = t.heap_bytes();
        // t0 seen again: t1 is now the least recently seen and goes, its usage to the others.
        t.charge(tenant_id("t1"), S, 199 * S);
        t.rank(tenant_id("t0"), 200 * S);
        seen(&mut t, "new", 201 * S);
        let table = t.table.as_ref().unwrap();
        assert_eq!(table.entries.len(), MAX_TENANTS);
        assert!(table.entries.iter().any(|e| e.id == tenant_id("t0")));
        assert!(!table.entries.iter().any(|e| e.id == tenant_id("t1")));
        assert!(table.others > 0.0);
        assert_eq!(t.heap_bytes(), cap, "no growth past the bound");
        // The bound: the table (newcomers inline) and 128 entries of 12 bytes.
        assert_eq!(std::mem::size_of::<Entry>(), 12);
        assert_eq!(std::mem::size_of::<Newcomer>(), 8);
        assert!(cap <= 2_048, "{cap} bytes");
        assert_eq!(cap, std::mem::size_of::<Table>() + MAX_TENANTS * 12);
    }

    #[test]
    fn tenant_ids_are_never_zero_and_differ() {
        assert_ne!(tenant_id("a"), tenant_id("b"));
        assert_ne!(tenant_id(""), 0);
    }
}
