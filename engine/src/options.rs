//! Validated policy options. Every default carries its provenance; a guess says so.
//! Validation lives here, once, for the binding, the simulator and the tests alike: an error
//! names the option and the allowed range.

pub use crate::option_error::{OptionError, MAX_MS};

/// Which limit algorithm adapts the concurrency limit (docs/design.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// Default: Uber and Netflix both chose Vegas for this problem (ADR 0104).
    Vegas,
    /// Netflix Gradient2 with Envoy's sqrt(limit) headroom (ADR 0105).
    Gradient2,
    /// Error-driven fallback, only when selected.
    Aimd,
    /// The limit never moves: `initialLimit` always.
    Fixed,
}

impl Algorithm {
    /// Every algorithm, the default first.
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Vegas,
        Algorithm::Gradient2,
        Algorithm::Aimd,
        Algorithm::Fixed,
    ];

    pub fn parse(s: &str) -> Option<Algorithm> {
        match s {
            "vegas" => Some(Algorithm::Vegas),
            "gradient2" => Some(Algorithm::Gradient2),
            "aimd" => Some(Algorithm::Aimd),
            "fixed" => Some(Algorithm::Fixed),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Vegas => "vegas",
            Algorithm::Gradient2 => "gradient2",
            Algorithm::Aimd => "aimd",
            Algorithm::Fixed => "fixed",
        }
    }
}

/// Queue boundaries as factors of the current limit (ADR 0005, failsafe-go `WithQueueing(2, 3)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QueueOptions {
    /// Outstanding calls up to `initialFactor × limit` wait without rejection. Default 2.
    pub initial_factor: f64,
    /// Between the two factors the rejection chance rises linearly 0 → 1. Default 3.
    /// The factors shed only a standing queue (ADR 0114).
    pub max_factor: f64,
    /// The most calls that may wait on one key, whatever the queue's state: a bound on memory.
    /// Default 20 000: ours, a guess (twice the largest batch measured; 500–800 B of JS heap a
    /// waiter: at most 16 MB per key at the cap; ADR 0114).
    pub max_queued: u32,
}

impl Default for QueueOptions {
    fn default() -> Self {
        QueueOptions {
            initial_factor: 2.0,
            max_factor: 3.0,
            max_queued: 20_000,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LimiterOptions {
    pub algorithm: Algorithm,
    /// 20: Netflix VegasLimit/Gradient2Limit source.
    pub initial_limit: u32,
    /// 4: ours, a guess: keeps a trickle flowing so recovery is observable.
    pub min_limit: u32,
    /// 200: Netflix Gradient2Limit.
    pub max_limit: u32,
    /// 0.9: Envoy and Uber defaults, independently.
    pub quantile: f64,
    /// 0.2: Netflix Gradient2Limit.
    pub smoothing: f64,
    /// 1.5: Netflix Gradient2Limit.
    pub rtt_tolerance: f64,
    /// 2 000 ms: Uber ("minimum interval 2 seconds").
    pub window_min_ms: u64,
    /// 30 000 ms: Uber ("maximum 30").
    pub window_max_ms: u64,
    /// 50: failsafe-go; adaptive at low traffic (ADR 0103).
    pub min_samples: u32,
    /// 10 000 ms: how often the baseline is re-measured by a probe (ADR 0113); BBR's ProbeRTT
    /// interval. 0: never.
    pub probe_interval_ms: u64,
    /// Added to `now` to give wall-clock ns, so that probes of independent processes coincide.
    /// Set by the binding; 0 in the simulator, whose clients share one clock.
    pub clock_offset_ns: u64,
    /// 100 ms: Envoy "concurrency update interval 0.1s".
    pub update_interval_ms: u64,
    /// 0.9: AIMD backoff ratio, Netflix AIMDLimit default (0.5 is too harsh a cut).
    pub backoff_ratio: f64,
    /// `None` is `queue: false`: reject at the limit with reason `'limit'`.
    pub queue: Option<QueueOptions>,
}

impl Default for LimiterOptions {
    fn default() -> Self {
        LimiterOptions {
            algorithm: Algorithm::Vegas,
            initial_limit: 20,
            min_limit: 4,
            max_limit: 200,
            quantile: 0.9,
            smoothing: 0.2,
            rtt_tolerance: 1.5,
            window_min_ms: 2_000,
            window_max_ms: 30_000,
            min_samples: 50,
            probe_interval_ms: 10_000,
            clock_offset_ns: 0,
            update_interval_ms: 100,
            backoff_ratio: 0.9,
            queue: Some(QueueOptions::default()),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BreakerOptions {
    /// Open when at least this fraction of the window's calls failed. 0.5: resilience4j
    /// `failureRateThreshold` 50, Hystrix `errorThresholdPercentage` 50 (Polly v8's 0.1 trips on
    /// the sporadic 5xx any third-party API has). ADR 0200.
    pub failure_rate: f64,
    /// Open when at least this fraction of the window's calls were slow. 0.5: a guess, equal to
    /// the failure rate (resilience4j uses 1.0, which never trips while a few fast calls remain).
    pub slow_call_rate: f64,
    /// A call whose latency (honouring `mark()`) is at least this is slow. 5 000 ms: a guess
    /// (resilience4j uses 60 s, as long as a typical client timeout: it would never see the
    /// production incident, p50 0.35 s → 10.4 s). The simulator compares against it.
    pub slow_call_ms: u64,
    /// Rates are judged only once the window holds this many calls. 20: Hystrix
    /// `requestVolumeThreshold` and MicroProfile Fault Tolerance `requestVolumeThreshold`
    /// (resilience4j and Polly use 100, which a low-traffic service never reaches).
    pub minimum_calls: u32,
    /// The rolling window the rates are computed over. 30 000 ms: Polly's `SamplingDuration`.
    pub window_ms: u64,
    /// Open on this many consecutive failures whatever the volume. 5: cockatiel's
    /// `ConsecutiveBreaker(5)` README example; the low-traffic backstop.
    pub consecutive_failures: u32,
    /// How long the breaker stays open before half-open probes. 10 000 ms: cockatiel's
    /// documented `halfOpenAfter` default; between Polly's and Hystrix's 5 s and resilience4j's 60 s.
    pub open_ms: u64,
    /// Probes admitted while half-open; all must succeed to close. 3: a guess between Polly's
    /// and cockatiel's 1 (one lucky call closes it) and resilience4j's 10 (too slow at low traffic).
    pub half_open_probes: u32,
}

impl Default for BreakerOptions {
    fn default() -> Self {
        BreakerOptions {
            failure_rate: 0.5,
            slow_call_rate: 0.5,
            slow_call_ms: 5_000,
            minimum_calls: 20,
            window_ms: 30_000,
            consecutive_failures: 5,
            open_ms: 10_000,
            half_open_probes: 3,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BulkheadOptions {
    /// Fixed maximum of concurrent calls. No default: a bulkhead is opt-in (`bulkhead: { maxConcurrent }`).
    pub max_concurrent: u32,
}

/// Client-side adaptive throttling of overloaded upstreams (ADR 1000).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThrottleOptions {
    /// K in `(requests − K × accepts) / (requests + 1)`: about K calls reach an overloaded
    /// upstream per call it accepts. 1.2: ours, a guess (SRE's 2 sends 2 per accepted call;
    /// measured at 0.6 and 2.4 in ADR 1000).
    pub multiplier: f64,
    /// The sliding window the counts cover. 30 000 ms: Envoy `admission_control`'s
    /// `sampling_window`.
    pub window_ms: u64,
    /// The highest refusal probability. 0.9: failsafe-go's `maxRejectionRate` (Envoy: 0.8).
    pub max_rejection: f64,
}

impl Default for ThrottleOptions {
    fn default() -> Self {
        ThrottleOptions {
            multiplier: 1.2,
            window_ms: 30_000,
            max_rejection: 0.9,
        }
    }
}

/// The policy set every key gets. `None` turns a policy off.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PolicyOptions {
    pub breaker: Option<BreakerOptions>,
    pub limiter: Option<LimiterOptions>,
    pub bulkhead: Option<BulkheadOptions>,
    pub throttle: Option<ThrottleOptions>,
    /// Budgets per window (ADR 1100). None by default: a quota is the upstream's, not ours.
    pub quota: Option<crate::quota::QuotaOptions>,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        PolicyOptions {
            breaker: Some(BreakerOptions::default()),
            limiter: Some(LimiterOptions::default()),
            bulkhead: None,
            throttle: Some(ThrottleOptions::default()),
            quota: None,
        }
    }
}

/// Registry bounds (docs/design.md "Registry").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegistryOptions {
    /// 1 000 keys: bounds memory; beyond it an idle key is evicted (ADR 0003).
    pub max_keys: u32,
    /// 512 UTF-8 bytes: ours. A host name is at most 253; longer keys are refused, not truncated.
    pub max_key_length: u32,
}

impl Default for RegistryOptions {
    fn default() -> Self {
        RegistryOptions {
            max_keys: 1_000,
            max_key_length: 512,
        }
    }
}

fn err(option: &'static str, message: String) -> OptionError {
    OptionError { option, message }
}

fn int_range(option: &'static str, v: u64, lo: u64, hi: u64) -> Result<(), OptionError> {
    if v < lo || v > hi {
        return Err(err(
            option,
            format!("{option} must be an integer from {lo} to {hi}, got {v}"),
        ));
    }
    Ok(())
}

fn real_range(
    option: &'static str,
    v: f64,
    lo: f64,
    hi: f64,
    lo_open: bool,
) -> Result<(), OptionError> {
    let below = if lo_open { v <= lo } else { v < lo };
    if !v.is_finite() || below || v > hi {
        let open = if lo_open { "above" } else { "from" };
        return Err(err(
            option,
            format!("{option} must be a number {open} {lo} to {hi}, got {v}"),
        ));
    }
    Ok(())
}

/// Upper bound for any limit: far above any real upstream, small enough for u32 arithmetic.
pub const MAX_LIMIT: u64 = 1_000_000;

impl LimiterOptions {
    pub fn validate(&self) -> Result<(), OptionError> {
        int_range("minLimit", self.min_limit as u64, 1, MAX_LIMIT)?;
        int_range("maxLimit", self.max_limit as u64, 1, MAX_LIMIT)?;
        if self.min_limit > self.max_limit {
            return Err(err(
                "minLimit",
                format!(
                    "minLimit ({}) must not exceed maxLimit ({})",
                    self.min_limit, self.max_limit
                ),
            ));
        }
        // A fixed limit never moves, so its bounds do not constrain it.
        if self.algorithm == Algorithm::Fixed {
            int_range("initialLimit", self.initial_limit as u64, 1, MAX_LIMIT)?;
        } else if self.initial_limit < self.min_limit || self.initial_limit > self.max_limit {
            return Err(err(
                "initialLimit",
                format!(
                    "initialLimit must be an integer from minLimit ({}) to maxLimit ({}), got {}",
                    self.min_limit, self.max_limit, self.initial_limit
                ),
            ));
        }
        real_range("quantile", self.quantile, 0.0, 1.0, true)?;
        real_range("smoothing", self.smoothing, 0.0, 1.0, true)?;
        real_range("rttTolerance", self.rtt_tolerance, 1.0, 100.0, false)?;
        int_range("windowMinMs", self.window_min_ms, 1, MAX_MS)?;
        int_range("windowMaxMs", self.window_max_ms, 1, MAX_MS)?;
        if self.window_min_ms > self.window_max_ms {
            return Err(err(
                "windowMinMs",
                format!(
                    "windowMinMs ({}) must not exceed windowMaxMs ({})",
                    self.window_min_ms, self.window_max_ms
                ),
            ));
        }
        int_range("minSamples", self.min_samples as u64, 1, 100_000)?;
        let probe = self.probe_interval_ms;
        if probe != 0 && !(1_000..=MAX_MS).contains(&probe) {
            return Err(err(
                "probeIntervalMs",
                format!("probeIntervalMs must be 0 (never) or an integer from 1000 to {MAX_MS}, got {probe}"),
            ));
        }
        int_range("updateIntervalMs", self.update_interval_ms, 0, MAX_MS)?;
        real_range("backoffRatio", self.backoff_ratio, 0.0, 1.0, true)?;
        if self.backoff_ratio >= 1.0 {
            return Err(err(
                "backoffRatio",
                format!(
                    "backoffRatio must be a number above 0 and below 1, got {}",
                    self.backoff_ratio
                ),
            ));
        }
        if let Some(q) = self.queue {
            real_range("queue.initialFactor", q.initial_factor, 1.0, 1_000.0, false)?;
            real_range("queue.maxFactor", q.max_factor, 1.0, 1_000.0, false)?;
            int_range("queue.maxQueued", q.max_queued as u64, 1, 10_000_000)?;
            if q.max_factor < q.initial_factor {
                return Err(err(
                    "queue.maxFactor",
                    format!(
                        "queue.maxFactor ({}) must be at least queue.initialFactor ({})",
                        q.max_factor, q.initial_factor
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl BreakerOptions {
    pub fn validate(&self) -> Result<(), OptionError> {
        real_range("breaker.failureRate", self.failure_rate, 0.0, 1.0, true)?;
        real_range("breaker.slowCallRate", self.slow_call_rate, 0.0, 1.0, true)?;
        int_range("breaker.slowCallMs", self.slow_call_ms, 1, MAX_MS)?;
        int_range(
            "breaker.minimumCalls",
            self.minimum_calls as u64,
            1,
            1_000_000,
        )?;
        int_range("breaker.windowMs", self.window_ms, 10, MAX_MS)?;
        int_range(
            "breaker.consecutiveFailures",
            self.consecutive_failures as u64,
            1,
            1_000_000,
        )?;
        int_range("breaker.openMs", self.open_ms, 1, MAX_MS)?;
        int_range(
            "breaker.halfOpenProbes",
            self.half_open_probes as u64,
            1,
            1_000,
        )?;
        Ok(())
    }
}

impl BulkheadOptions {
    pub fn validate(&self) -> Result<(), OptionError> {
        int_range(
            "bulkhead.maxConcurrent",
            self.max_concurrent as u64,
            1,
            MAX_LIMIT,
        )
    }
}

impl ThrottleOptions {
    pub fn validate(&self) -> Result<(), OptionError> {
        // Below 1 it would refuse calls the upstream accepts (ADR 1000).
        real_range("throttle.multiplier", self.multiplier, 1.0, 100.0, false)?;
        int_range("throttle.windowMs", self.window_ms, 1_000, MAX_MS)?;
        real_range("throttle.maxRejection", self.max_rejection, 0.0, 1.0, true)
    }
}

impl PolicyOptions {
    pub fn validate(&self) -> Result<(), OptionError> {
        if let Some(t) = &self.throttle {
            t.validate()?;
        }
        if let Some(b) = &self.breaker {
            b.validate()?;
        }
        if let Some(l) = &self.limiter {
            l.validate()?;
        }
        if let Some(b) = &self.bulkhead {
            b.validate()?;
        }
        if let Some(q) = &self.quota {
            q.validate()?;
        }
        Ok(())
    }
}

impl RegistryOptions {
    pub fn validate(&self) -> Result<(), OptionError> {
        int_range("maxKeys", self.max_keys as u64, 1, 100_000)?;
        int_range("maxKeyLength", self.max_key_length as u64, 1, 65_536)
    }
}
