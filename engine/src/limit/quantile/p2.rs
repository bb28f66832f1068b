//! P² (Jain & Chlamtac 1985): five markers, O(1) memory and time per sample. Kept for the
//! comparison in the error table; not shipped by default (ADR 0101).

use super::QuantileEstimator;

#[derive(Clone, Debug)]
pub struct P2 {
    q: [f64; 5],
    n: [f64; 5],
    np: [f64; 5],
    dn: [f64; 5],
    count: u32,
    p: f64,
}

impl P2 {
    pub fn new(p: f64) -> Self {
        P2 {
            q: [0.0; 5],
            n: [0.0; 5],
            np: [0.0; 5],
            dn: [0.0, p / 2.0, p, (1.0 + p) / 2.0, 1.0],
            count: 0,
            p,
        }
    }

    fn parabolic(&self, i: usize, d: f64) -> f64 {
        let (q, n) = (&self.q, &self.n);
        q[i] + d / (n[i + 1] - n[i - 1])
            * ((n[i] - n[i - 1] + d) * (q[i + 1] - q[i]) / (n[i + 1] - n[i])
                + (n[i + 1] - n[i] - d) * (q[i] - q[i - 1]) / (n[i] - n[i - 1]))
    }

    /// Marker `i` and its neighbours have one finite, non-zero height. Then every difference
    /// in `parabolic` and `linear` is +0.0 over a non-zero marker gap, and both return `q[i]`
    /// exactly (the parabola is not strictly between its neighbours, so `linear` runs too). A
    /// run of equal samples (a constant latency, a coarse clock) moves a marker on almost
    /// every sample, each time through four divisions (perf, ADR 0503).
    #[inline]
    fn flat(&self, i: usize) -> bool {
        let q = &self.q;
        q[i - 1] == q[i] && q[i] == q[i + 1] && q[i] != 0.0 && q[i].is_finite()
    }

    fn linear(&self, i: usize, d: f64) -> f64 {
        let j = if d > 0.0 { i + 1 } else { i - 1 };
        self.q[i] + d * (self.q[j] - self.q[i]) / (self.n[j] - self.n[i])
    }
}

impl QuantileEstimator for P2 {
    fn clear(&mut self) {
        *self = P2::new(self.p);
    }

    fn add(&mut self, x: f64) {
        let c = self.count as usize;
        self.count += 1;
        if c < 5 {
            self.q[c] = x;
            if c == 4 {
                self.q.sort_by(|a, b| a.total_cmp(b));
                let p = self.p;
                self.n = [0.0, 1.0, 2.0, 3.0, 4.0];
                self.np = [0.0, 2.0 * p, 4.0 * p, 2.0 + 2.0 * p, 4.0];
            }
            return;
        }
        let k = if x < self.q[0] {
            self.q[0] = x;
            0
        } else if x >= self.q[4] {
            self.q[4] = x;
            3
        } else {
            (1..5).find(|&i| x < self.q[i]).unwrap() - 1
        };
        for i in (k + 1)..5 {
            self.n[i] += 1.0;
        }
        for i in 0..5 {
            self.np[i] += self.dn[i];
        }
        for i in 1..4 {
            let d = self.np[i] - self.n[i];
            if (d >= 1.0 && self.n[i + 1] - self.n[i] > 1.0)
                || (d <= -1.0 && self.n[i - 1] - self.n[i] < -1.0)
            {
                let d = d.signum();
                if self.flat(i) {
                    // Both formulas would return q[i] itself: skip their four divisions.
                    self.n[i] += d;
                    continue;
                }
                let qp = self.parabolic(i, d);
                self.q[i] = if self.q[i - 1] < qp && qp < self.q[i + 1] {
                    qp
                } else {
                    self.linear(i, d)
                };
                self.n[i] += d;
            }
        }
    }

    fn quantile(&self) -> Option<f64> {
        let c = self.count as usize;
        if c == 0 {
            return None;
        }
        if c < 5 {
            // Too few for markers: exact on what we have.
            let mut v = self.q;
            let s = &mut v[..c];
            s.sort_by(|a, b| a.total_cmp(b));
            let pos = self.p * (c - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = (lo + 1).min(c - 1);
            return Some(s[lo] + (s[hi] - s[lo]) * (pos - lo as f64));
        }
        Some(self.q[2])
    }
}
