//! What ships: the sorted ring while it is exact, P² beyond. The ring keeps the window's
//! largest 64 samples, which answers p90 exactly up to ~620 samples per window (every
//! low- and mid-traffic window); P² (five markers) runs alongside and answers for busier
//! windows, where its error is lowest (error table in BENCHMARKS.md, ADR 0101).
//! Memory: 272 + 136 bytes; per sample one insertion into 64 f32 and one P² update.

use super::p2::P2;
use super::ring::SortedRing;
use super::QuantileEstimator;

#[derive(Clone, Debug)]
pub struct Hybrid {
    ring: SortedRing,
    p2: P2,
}

impl Hybrid {
    pub fn new(q: f64) -> Self {
        Hybrid {
            ring: SortedRing::new(q),
            p2: P2::new(q),
        }
    }
}

impl QuantileEstimator for Hybrid {
    fn clear(&mut self) {
        self.ring.clear();
        self.p2.clear();
    }
    #[inline]
    fn add(&mut self, x: f64) {
        self.ring.add(x);
        self.p2.add(x);
    }
    fn quantile(&self) -> Option<f64> {
        if self.ring.is_exact() {
            self.ring.quantile()
        } else {
            self.p2.quantile()
        }
    }
}
