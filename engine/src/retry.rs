//! Retry, the outermost policy: whether a settled attempt is retried, after how long, and the
//! per-key retry budget that keeps a fleet's retries from multiplying the load on an upstream
//! that is already overloaded (ADRs 0900–0903). Pure: time, randomness and what the key's
//! policies know are passed in. The JS layer runs the loop (timers, signals, Retry-After).

use crate::{Nanos, Verdict, NANOS_PER_MS};

/// How the exponential backoff is randomised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jitter {
    /// Uniform in `[0, min(cap, base × 2^(retry − 1))]`: AWS's "full jitter", the default.
    Full,
    /// Uniform in `[base, min(cap, 3 × previous delay)]`: AWS's "decorrelated jitter".
    Decorrelated,
}

impl Jitter {
    pub fn parse(s: &str) -> Option<Jitter> {
        match s {
            "full" => Some(Jitter::Full),
            "decorrelated" => Some(Jitter::Decorrelated),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Jitter::Full => "full",
            Jitter::Decorrelated => "decorrelated",
        }
    }
}

/// The verdicts that may be retried: `failure`, `overload` and `timeout`. The others never are:
/// `answered` (the upstream did the work and said no), `rejected` (our own policy refused it),
/// `cancelled` (the caller's signal), `success`.
pub const RETRYABLE: [Verdict; 3] = [Verdict::Failure, Verdict::Overload, Verdict::Timeout];

/// A set of verdicts as a bit mask (`1 << verdict code`), as the binding passes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryOn(u8);

impl RetryOn {
    /// The default: every retryable verdict.
    pub const DEFAULT: RetryOn = RetryOn(
        1 << Verdict::Failure as u8 | 1 << Verdict::Overload as u8 | 1 << Verdict::Timeout as u8,
    );

    /// The mask's retryable verdicts; bits of other verdicts are dropped.
    pub fn from_mask(mask: u32) -> RetryOn {
        RetryOn(mask as u8 & Self::DEFAULT.0)
    }

    pub fn of(verdicts: &[Verdict]) -> RetryOn {
        Self::from_mask(verdicts.iter().fold(0, |m, v| m | 1 << *v as u8))
    }

    pub fn contains(self, v: Verdict) -> bool {
        self.0 & (1 << v as u8) != 0
    }

    pub fn mask(self) -> u32 {
        self.0 as u32
    }
}

/// One call's retry policy (per instance, or per call).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included. 3: the AWS SDKs' standard mode, got's 2 retries.
    pub max_attempts: u32,
    /// The backoff's base. 25 ms: Envoy's `base_interval`.
    pub base_ns: u64,
    /// The backoff's cap. 250 ms: Envoy's 10 × base.
    pub max_delay_ns: u64,
    pub jitter: Jitter,
    pub retry_on: RetryOn,
    /// A Retry-After hint longer than this waits this long. 60 s: ours, a guess (ADR 0902).
    pub max_retry_after_ns: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 3,
            base_ns: 25 * NANOS_PER_MS,
            max_delay_ns: 250 * NANOS_PER_MS,
            jitter: Jitter::Full,
            retry_on: RetryOn::DEFAULT,
            max_retry_after_ns: 60_000 * NANOS_PER_MS,
        }
    }
}

/// The per-key retry budget (ADR 0901): retries within `window_ms` may be at most
/// `ratio` × the first attempts in it, plus `min_per_second` × the window's seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BudgetOptions {
    /// 0.2: Envoy's retry budget (20 % of active requests), failsafe-go's budget (0.2),
    /// Finagle's `percentCanRetry`; Google SRE's per-client budget is 0.1.
    pub ratio: f64,
    /// 3 retries a second: the "at least 3" of Envoy and failsafe-go (theirs concurrent
    /// retries), read as a rate; Finagle's is 10 a second. Low traffic can still retry.
    pub min_per_second: f64,
    /// 10 s: Finagle's retry budget `ttl`.
    pub window_ms: u64,
}

impl Default for BudgetOptions {
    fn default() -> Self {
        BudgetOptions {
            ratio: 0.2,
            min_per_second: 3.0,
            window_ms: 10_000,
        }
    }
}

impl BudgetOptions {
    pub fn validate(&self) -> Result<(), crate::OptionError> {
        let bad = |option: &'static str, message: String| crate::OptionError { option, message };
        if !(self.ratio.is_finite() && (0.0..=10.0).contains(&self.ratio)) {
            return Err(bad(
                "retryBudget.ratio",
                format!(
                    "retryBudget.ratio must be a number from 0 to 10, got {}",
                    self.ratio
                ),
            ));
        }
        if !(self.min_per_second.is_finite() && (0.0..=1e6).contains(&self.min_per_second)) {
            return Err(bad(
                "retryBudget.minPerSecond",
                format!(
                    "retryBudget.minPerSecond must be a number from 0 to 1000000, got {}",
                    self.min_per_second
                ),
            ));
        }
        if !(100..=crate::options::MAX_MS).contains(&self.window_ms) {
            return Err(bad(
                "retryBudget.windowMs",
                format!(
                    "retryBudget.windowMs must be an integer from 100 to {}, got {}",
                    crate::options::MAX_MS,
                    self.window_ms
                ),
            ));
        }
        Ok(())
    }
}

/// Buckets of the budget's sliding window: it slides in tenths.
pub const BUCKETS: usize = 10;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Bucket {
    /// The key's settled-call count when this bucket began.
    base: u64,
    /// Retries granted in this bucket.
    retries: u32,
}

/// One key's retry budget and its counters: allocated only for a key whose calls retry
/// (engine memory per such key: ADR 0901).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryBudget {
    buckets: [Bucket; BUCKETS],
    head: usize,
    head_start: Nanos,
    /// The key's settled-call count when the budget last looked.
    seen: u64,
    /// Retries granted since the key was created.
    pub retried: u64,
    /// Retries the budget refused since the key was created.
    pub refused: u64,
}

impl RetryBudget {
    /// A budget whose window starts now, with `settled` calls already settled on the key.
    pub fn new(now: Nanos, settled: u64) -> Self {
        RetryBudget {
            buckets: [Bucket {
                base: settled,
                retries: 0,
            }; BUCKETS],
            head: 0,
            head_start: now,
            seen: settled,
            retried: 0,
            refused: 0,
        }
    }

    fn advance(&mut self, opts: &BudgetOptions, now: Nanos, settled: u64) {
        let window = opts.window_ms.max(1) * NANOS_PER_MS;
        let width = (window / BUCKETS as u64).max(1);
        let elapsed = now.saturating_sub(self.head_start);
        if elapsed >= window {
            let (retried, refused) = (self.retried, self.refused);
            *self = RetryBudget::new(now, settled);
            (self.retried, self.refused) = (retried, refused);
            return;
        }
        // The budget sees the count only when asked: calls settled since it last looked are
        // taken as settled in the newest bucket (within the window, since it looked less than
        // a window ago); they leave the window with it.
        let steps = elapsed / width;
        for _ in 0..steps {
            self.head = (self.head + 1) % BUCKETS;
            self.buckets[self.head] = Bucket {
                base: self.seen,
                retries: 0,
            };
        }
        self.head_start += steps * width;
        self.seen = settled;
    }

    /// Retries in the window, and first attempts: every call settled in it less the retries
    /// granted in it (`settled`: the key's settled calls since it was created). A granted retry
    /// counts before it settles: conservative while retries are in flight. After a window
    /// without a look, the window starts empty.
    pub fn window(&mut self, opts: &BudgetOptions, now: Nanos, settled: u64) -> (u64, u64) {
        self.advance(opts, now, settled);
        let oldest = self.buckets[(self.head + 1) % BUCKETS].base;
        let retries: u64 = self.buckets.iter().map(|b| b.retries as u64).sum();
        let firsts = settled.saturating_sub(oldest).saturating_sub(retries);
        (retries, firsts)
    }

    /// Takes one retry from the budget if it allows one now; counts a refusal otherwise.
    pub fn try_spend(&mut self, opts: &BudgetOptions, now: Nanos, settled: u64) -> bool {
        let (retries, firsts) = self.window(opts, now, settled);
        let window_s = opts.window_ms as f64 / 1000.0;
        let allowed = opts.ratio * firsts as f64 + opts.min_per_second * window_s;
        if (retries + 1) as f64 <= allowed {
            let b = &mut self.buckets[self.head];
            b.retries = b.retries.saturating_add(1);
            self.retried += 1;
            true
        } else {
            self.refused += 1;
            false
        }
    }
}

/// The backoff before retry number `retry` (1 for the first retry), `previous_ns` the delay
/// before the previous one (0 before the first), `u` uniform in `[0, 1)`. Finite and capped
/// for any input: the exponent stops growing long before a double could overflow (cockatiel
/// #86: NaN after 1 025 attempts).
pub fn backoff_ns(policy: &RetryPolicy, retry: u32, previous_ns: u64, u: f64) -> u64 {
    let u = if u.is_finite() {
        u.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let cap = policy.max_delay_ns as f64;
    let base = (policy.base_ns as f64).min(cap);
    let d = match policy.jitter {
        Jitter::Full => {
            // 2^62 × any base in range is finite; the cap is reached long before.
            let exp = retry.saturating_sub(1).min(62) as i32;
            u * (base * 2f64.powi(exp)).min(cap)
        }
        Jitter::Decorrelated => {
            let prev = (previous_ns as f64).max(base);
            let hi = (prev * 3.0).min(cap).max(base);
            base + u * (hi - base)
        }
    };
    // Past 2^53 ns a double rounds the cap, up as well as down: capped again in integers.
    (d.clamp(0.0, cap) as u64).min(policy.max_delay_ns)
}

/// Why a settled attempt is not retried. The codes are the binding's wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Refusal {
    /// Its verdict is not in `retry_on` (or never retryable).
    NotRetryable = 1,
    /// `max_attempts` attempts were made.
    AttemptsSpent = 2,
    /// The key's breaker is open: retries end with the last attempt's outcome.
    BreakerOpen = 3,
    /// The upstream's Retry-After hint is longer than the time left before the deadline.
    RetryAfterBeyondDeadline = 4,
    /// The backoff plus the key's no-load latency would not end before the deadline.
    Deadline = 5,
    /// The key's retry budget is spent.
    Budget = 6,
    /// The key's adaptive throttle refused the retry, decided before its wait (ADR 1004).
    Throttle = 7,
}

impl Refusal {
    pub const ALL: [Refusal; 7] = [
        Refusal::NotRetryable,
        Refusal::AttemptsSpent,
        Refusal::BreakerOpen,
        Refusal::RetryAfterBeyondDeadline,
        Refusal::Deadline,
        Refusal::Budget,
        Refusal::Throttle,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Refusal::NotRetryable => "not-retryable",
            Refusal::AttemptsSpent => "attempts",
            Refusal::BreakerOpen => "breaker",
            Refusal::RetryAfterBeyondDeadline => "retry-after",
            Refusal::Deadline => "deadline",
            Refusal::Budget => "budget",
            Refusal::Throttle => "throttle",
        }
    }
}

/// What one settled attempt was, as the JS layer saw it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settled {
    /// Attempts made so far, this one included (1 after the first).
    pub attempts: u32,
    pub verdict: Verdict,
    /// The upstream's Retry-After hint, if it gave one.
    pub hint_ns: Option<u64>,
    /// Time left before the call's deadline (`None`: no deadline).
    pub remaining_ns: Option<u64>,
    /// The delay before this attempt (0 for the first).
    pub previous_delay_ns: u64,
}

/// What the key's other policies know, read for the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyView {
    /// Calls settled on the key since it was created (the budget's first attempts).
    pub settled: u64,
    /// The least an attempt is expected to take: the limiter's no-load latency, else the last.
    pub estimate_ns: u64,
    pub breaker_open: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Retry after this delay.
    Retry {
        delay_ns: u64,
    },
    Stop(Refusal),
}

/// Whether `s` is retried, and after how long. The budget is asked last, so that it is spent
/// (and a refusal counted) only for a retry that would otherwise happen.
pub fn decide(
    policy: &RetryPolicy,
    budget: &mut RetryBudget,
    budget_opts: &BudgetOptions,
    s: &Settled,
    key: KeyView,
    now: Nanos,
    u: f64,
) -> Decision {
    decide_with(policy, budget, budget_opts, s, key, now, u, || false)
}

/// As [`decide`], asking `throttle_refuses` (the key's throttle, drawn now) before the budget:
/// a retry the throttle would refuse is refused before its wait, not after (ADR 1004).
#[allow(clippy::too_many_arguments)]
pub fn decide_with(
    policy: &RetryPolicy,
    budget: &mut RetryBudget,
    budget_opts: &BudgetOptions,
    s: &Settled,
    key: KeyView,
    now: Nanos,
    u: f64,
    throttle_refuses: impl FnOnce() -> bool,
) -> Decision {
    if !policy.retry_on.contains(s.verdict) {
        return Decision::Stop(Refusal::NotRetryable);
    }
    if s.attempts >= policy.max_attempts {
        return Decision::Stop(Refusal::AttemptsSpent);
    }
    if key.breaker_open {
        return Decision::Stop(Refusal::BreakerOpen);
    }
    let hint = s.hint_ns.map(|h| h.min(policy.max_retry_after_ns));
    let backoff = backoff_ns(policy, s.attempts, s.previous_delay_ns, u);
    let delay = backoff.max(hint.unwrap_or(0));
    if let Some(left) = s.remaining_ns {
        if hint.is_some_and(|h| h >= left) {
            return Decision::Stop(Refusal::RetryAfterBeyondDeadline);
        }
        if delay.saturating_add(key.estimate_ns) >= left {
            return Decision::Stop(Refusal::Deadline);
        }
    }
    if throttle_refuses() {
        return Decision::Stop(Refusal::Throttle);
    }
    if !budget.try_spend(budget_opts, now, key.settled) {
        return Decision::Stop(Refusal::Budget);
    }
    Decision::Retry { delay_ns: delay }
}
