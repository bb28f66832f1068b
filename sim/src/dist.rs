//! Random draws for the synthetic world, all from the engine's own seeded `SplitMix64`, so a
//! run is a pure function of its seed.

use resilix_engine::SplitMix64;

/// The log-normal's mean is `median · exp(σ²/2)`; for σ = 0.3 that is 1.046 · S.
pub fn lognormal_mean_factor(sigma: f64) -> f64 {
    (sigma * sigma / 2.0).exp()
}

/// z of the 90th percentile of the standard normal.
pub const Z90: f64 = 1.281_551_565_545;

/// Standard normal by Box–Muller (one of the pair; simplicity over speed).
pub fn normal(rng: &mut SplitMix64) -> f64 {
    // 1 − u keeps the argument of ln in (0, 1].
    let u1 = 1.0 - rng.next_f64();
    let u2 = rng.next_f64();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// Log-normal with the given median and shape σ.
pub fn lognormal(rng: &mut SplitMix64, median: f64, sigma: f64) -> f64 {
    median * (sigma * normal(rng)).exp()
}

/// Exponential with the given rate (per unit of the result's time).
pub fn exponential(rng: &mut SplitMix64, rate: f64) -> f64 {
    -(1.0 - rng.next_f64()).ln() / rate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lognormal_median_and_mean_match_the_formulas() {
        let mut rng = SplitMix64::new(7);
        let mut xs: Vec<f64> = (0..200_000)
            .map(|_| lognormal(&mut rng, 50.0, 0.3))
            .collect();
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        xs.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let median = xs[xs.len() / 2];
        let p90 = xs[xs.len() * 9 / 10];
        assert!((median - 50.0).abs() < 0.5, "median {median}");
        assert!(
            (mean - 50.0 * lognormal_mean_factor(0.3)).abs() < 0.5,
            "mean {mean}"
        );
        assert!((p90 - 50.0 * (0.3 * Z90).exp()).abs() < 1.0, "p90 {p90}");
    }

    #[test]
    fn exponential_has_the_requested_mean() {
        let mut rng = SplitMix64::new(9);
        let n = 200_000;
        let mean = (0..n).map(|_| exponential(&mut rng, 4.0)).sum::<f64>() / n as f64;
        assert!((mean - 0.25).abs() < 0.005, "mean {mean}");
    }
}
