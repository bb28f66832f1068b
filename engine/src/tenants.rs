//! How much of a key's slot time each tenant used recently, to rank its calls within their
//! class (ADR 1002). Pure: times in, ranks out. failsafe-go's `UsageTracker` is the anchor.
//!
//! Usage is slot time (admission to settle), decayed with a half-life. A tenant at or below
//! the mean usage of the key's tracked tenants ranks highest; at 2, 4 and more than 4 times the
//! mean, one, two and three ranks lower. A key tracks at most `MAX_TENANTS`, least recently
//! seen out first: a tenant that stops calling is forgotten, one that keeps calling stays.

use crate::priority::RANKS;
use crate::Nanos;

/// Tenants tracked per key. 16: ours, a guess; 16 B each, allocated at a key's first call
/// that names a tenant, so a key stays within 2.5 KiB (ADR 1002).
pub const MAX_TENANTS: usize = 16;
/// Half-life of a tenant's usage. 10 s: ours, a guess (ADR 1002 measures 5 and 20 s).
pub const HALF_LIFE_MS: f64 = 10_000.0;

#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The tenant's name, hashed (`tenant_id`); two names that collide share one usage.
    id: u32,
    /// Slot seconds, decayed to `at_ms`.
    usage: f32,
    at_ms: u32,
    /// When a call last named this tenant (least recently seen is evicted first).
    seen_ms: u32,
}

#[derive(Clone, Debug, Default)]
pub struct Tenants {
    entries: Vec<Entry>,
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

impl Entry {
    fn usage_at(&self, now_ms: u32) -> f64 {
        let dt = now_ms.wrapping_sub(self.at_ms) as f64;
        self.usage as f64 * (-dt / HALF_LIFE_MS * std::f64::consts::LN_2).exp()
    }
}

impl Tenants {
    /// The rank (0 … RANKS − 1, higher first) of a call by tenant `id` at `now`; starts
    /// tracking the tenant if new.
    pub fn rank(&mut self, id: u32, now: Nanos) -> u8 {
        let now_ms = ms(now);
        let i = self.find_or_insert(id, now_ms);
        self.entries[i].seen_ms = now_ms;
        let total: f64 = self.entries.iter().map(|e| e.usage_at(now_ms)).sum();
        if total <= 0.0 {
            return RANKS - 1;
        }
        let mean = total / self.entries.len() as f64;
        let r = self.entries[i].usage_at(now_ms) / mean;
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

    /// Charge a settled call's slot time to tenant `id` (nothing if no longer tracked).
    pub fn charge(&mut self, id: u32, slot_ns: u64, now: Nanos) {
        let now_ms = ms(now);
        if let Some(e) = self.entries.iter_mut().find(|e| e.id == id) {
            e.usage = (e.usage_at(now_ms) + slot_ns as f64 * 1e-9) as f32;
            e.at_ms = now_ms;
        }
    }

    fn find_or_insert(&mut self, id: u32, now_ms: u32) -> usize {
        if let Some(i) = self.entries.iter().position(|e| e.id == id) {
            return i;
        }
        let e = Entry {
            id,
            usage: 0.0,
            at_ms: now_ms,
            seen_ms: now_ms,
        };
        if self.entries.len() < MAX_TENANTS {
            if self.entries.capacity() == 0 {
                self.entries.reserve_exact(MAX_TENANTS);
            }
            self.entries.push(e);
            return self.entries.len() - 1;
        }
        let oldest = (0..self.entries.len())
            .max_by_key(|&i| now_ms.wrapping_sub(self.entries[i].seen_ms))
            .unwrap_or(0);
        self.entries[oldest] = e;
        oldest
    }

    /// Tenants tracked now.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.entries.capacity() * std::mem::size_of::<Entry>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;

    #[test]
    fn a_heavy_tenant_ranks_below_light_ones() {
        let mut t = Tenants::default();
        let (heavy, light) = (tenant_id("heavy"), tenant_id("light"));
        assert_eq!(t.rank(heavy, 0), 3, "nobody used anything yet");
        assert_eq!(t.rank(light, 0), 3);
        // 10 s of slot time against 1 s: mean 5.5, heavy at 1.8 × → one rank down.
        t.charge(heavy, 10 * S, S);
        t.charge(light, S, S);
        assert_eq!(t.rank(heavy, S), 2);
        assert_eq!(t.rank(light, S), 3);
        // Add two idle tenants: mean 2.75, heavy at 3.6 × the mean.
        t.rank(tenant_id("a"), S);
        t.rank(tenant_id("b"), S);
        assert_eq!(t.rank(heavy, S), 1);
        t.rank(tenant_id("c"), S);
        t.rank(tenant_id("d"), S);
        t.rank(tenant_id("e"), S);
        assert_eq!(t.rank(heavy, S), 0, "10 of 11 s among 7 tenants");
        assert_eq!(t.rank(light, S), 3);
    }

    #[test]
    fn usage_decays_with_its_half_life() {
        let mut t = Tenants::default();
        let a = tenant_id("a");
        t.rank(a, 0);
        t.charge(a, 8 * S, 0);
        let e = t.entries[0];
        let half = (HALF_LIFE_MS as u64) * 1_000_000;
        assert!((e.usage_at(ms(half)) - 4.0).abs() < 1e-4);
        assert!((e.usage_at(ms(3 * half)) - 1.0).abs() < 1e-4);
    }

    #[test]
    fn at_most_max_tenants_the_least_recently_seen_out_first() {
        let mut t = Tenants::default();
        for i in 0..MAX_TENANTS as u64 {
            t.rank(tenant_id(&format!("t{i}")), i * S);
        }
        assert_eq!(t.len(), MAX_TENANTS);
        let cap = t.heap_bytes();
        // t0 seen again: t1 is now the least recently seen and goes.
        t.rank(tenant_id("t0"), 100 * S);
        t.rank(tenant_id("new"), 101 * S);
        assert_eq!(t.len(), MAX_TENANTS);
        assert!(t.entries.iter().any(|e| e.id == tenant_id("t0")));
        assert!(!t.entries.iter().any(|e| e.id == tenant_id("t1")));
        assert_eq!(t.heap_bytes(), cap, "no growth past the bound");
        assert_eq!(cap, MAX_TENANTS * 16);
        // A charge for a forgotten tenant is dropped.
        t.charge(tenant_id("t1"), S, 102 * S);
        assert!(t.entries.iter().all(|e| e.usage == 0.0));
    }

    #[test]
    fn tenant_ids_are_never_zero_and_differ() {
        assert_ne!(tenant_id("a"), tenant_id("b"));
        assert_ne!(tenant_id(""), 0);
    }
}
