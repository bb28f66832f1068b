//! The bounded sorted ring, specialised for an upper quantile: it keeps the
//! largest `N` (= 64) samples of the window, sorted. For q = 0.9 the answer is the
//! (1 − q)·(n − 1)-th value from the top, so the estimate is *exact* up to ~620 samples per
//! window. Beyond that the window is thinned: one sample in `stride` is accepted, the kept
//! tail drops every second rank (alternating parity so the thinning does not bias up or
//! down) and the accepted count halves. The result is the exact tail of a uniform thinning of
//! the window. Memory: 64 f32 + counters = 272 bytes; no allocation.

use super::QuantileEstimator;

/// Capacity: 64 samples keep p90 exact up to ~620 samples per window (ADR 0101).
pub const RING_CAPACITY: usize = 64;

#[derive(Clone, Debug)]
pub struct SortedRing {
    /// The largest accepted samples, ascending, in `[0, len)`.
    tail: [f32; RING_CAPACITY],
    len: u8,
    /// Alternates the rank parity dropped at each thinning.
    parity: bool,
    /// Accepted samples at the current stride (the `n` of the thinned window).
    accepted: u32,
    /// Accept one sample in `stride`.
    stride: u32,
    /// Samples seen since the last accepted one.
    skipped: u32,
    q: f32,
}

impl SortedRing {
    pub fn new(q: f64) -> Self {
        SortedRing {
            tail: [0.0; RING_CAPACITY],
            len: 0,
            parity: false,
            accepted: 0,
            stride: 1,
            skipped: 0,
            q: q as f32,
        }
    }

    /// Ranks from the top needed to answer (plus one for interpolation).
    #[inline]
    fn needed(&self, n: u32) -> f32 {
        (1.0 - self.q) * n.saturating_sub(1) as f32 + 2.0
    }

    fn thin(&mut self) {
        let len = self.len as usize;
        // Keep ranks counted from the top so the maximum survives on one parity and the
        // value just under it on the other.
        let start = if self.parity { 0 } else { 1 };
        let mut w = 0;
        let mut r = start;
        // The top of the array is what matters; walk from the bottom keeping every second.
        let offset = (len - start) % 2; // align so the kept set ends at len-1 or len-2
        r += offset;
        while r < len {
            self.tail[w] = self.tail[r];
            w += 1;
            r += 2;
        }
        self.len = w as u8;
        self.parity = !self.parity;
        self.accepted /= 2;
        self.stride *= 2;
    }

    #[inline]
    fn insert(&mut self, x: f32) {
        let len = self.len as usize;
        if len == RING_CAPACITY {
            if x <= self.tail[0] {
                return; // below the kept tail: it cannot be the answer
            }
            // Drop the smallest, then insert.
            let mut i = 0;
            while i + 1 < len && self.tail[i + 1] < x {
                self.tail[i] = self.tail[i + 1];
                i += 1;
            }
            self.tail[i] = x;
            return;
        }
        let mut i = len;
        while i > 0 && self.tail[i - 1] > x {
            self.tail[i] = self.tail[i - 1];
            i -= 1;
        }
        self.tail[i] = x;
        self.len += 1;
    }
}

impl SortedRing {
    /// True while no thinning happened: the answer is the exact window quantile.
    #[inline]
    pub fn is_exact(&self) -> bool {
        self.stride == 1
    }
}

impl QuantileEstimator for SortedRing {
    fn clear(&mut self) {
        self.len = 0;
        self.accepted = 0;
        self.stride = 1;
        self.skipped = 0;
    }

    #[inline]
    fn add(&mut self, x: f64) {
        self.skipped += 1;
        if self.skipped < self.stride {
            return;
        }
        self.skipped = 0;
        if self.needed(self.accepted + 1) > RING_CAPACITY as f32 {
            self.thin();
        }
        self.accepted += 1;
        self.insert(x as f32);
    }

    fn quantile(&self) -> Option<f64> {
        let len = self.len as usize;
        if len == 0 {
            return None;
        }
        // Type-7 interpolation (numpy's default) on the accepted sample, counted from the top.
        let n = self.accepted.max(len as u32);
        let pos = self.q * (n - 1) as f32; // rank from the bottom of the accepted sample
        let bottom = (n as usize) - len; // ranks below the kept tail
        let lo = (pos.floor() as usize).saturating_sub(bottom).min(len - 1);
        let hi = (lo + 1).min(len - 1);
        let frac = pos - pos.floor();
        Some((self.tail[lo] + (self.tail[hi] - self.tail[lo]) * frac) as f64)
    }
}
