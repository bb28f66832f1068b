//! Vegas (spec §4.1), Netflix VegasLimit's update rule on windowed, smoothed latency.
//! alpha/beta use f(L) = max(1, floor(log10 L)) as Netflix's code does, not the spec's bare
//! 3·log10(L) (ADR 0104): it gives exactly Brakmo & Peterson's 3 and 6 buffers for L < 100,
//! and a bare log10 would make alpha → 0 at small limits, so any queue reads as "decrease".

#[inline]
pub fn log_factor(limit: f64) -> f64 {
    limit.max(1.0).log10().floor().max(1.0)
}

/// The next limit from the current one, the baseline and the smoothed latency.
/// `inflight` is the concurrency the queue is estimated on: Netflix uses the limit, which is the
/// same thing when the limit is full; when app-limited the upstream cannot hold more of our
/// calls in its queue than we have in flight.
pub fn next(limit: f64, inflight: f64, baseline: f64, rtt: f64) -> f64 {
    let f = log_factor(limit);
    let (alpha, beta) = (3.0 * f, 6.0 * f);
    let queue = (inflight * (1.0 - baseline / rtt)).ceil();
    if queue <= f {
        limit + beta
    } else if queue < alpha {
        limit + f
    } else if queue > beta {
        limit - f
    } else {
        limit
    }
}
