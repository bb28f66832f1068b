//! The limiter under test, seen from one simulated client. `ResilixClient` drives the real
//! engine (`resilix_engine::Engine`, one key); `netflix::NetflixVegas` is the comparison model.

use resilix_engine::retry::Settled;
use resilix_engine::{
    Acquired, Algorithm, Decision, Engine, KeyHandle, LimiterOptions, Nanos, PolicyOptions,
    Priority, RegistryOptions, RetryPolicy, ThrottleOptions, Verdict,
};

pub use crate::client_limiter::{Acq, ClientLimiter, Wake};
use crate::netflix::NetflixVegas;

/// A comparison row: which limiter a scenario is run with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    Resilix(Algorithm),
    NetflixVegas,
}

impl Row {
    /// Every row, in the table's order: resilix's default first.
    pub const ALL: [Row; 5] = [
        Row::Resilix(Algorithm::Vegas),
        Row::Resilix(Algorithm::Gradient2),
        Row::Resilix(Algorithm::Aimd),
        Row::Resilix(Algorithm::Fixed),
        Row::NetflixVegas,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Row::Resilix(Algorithm::Fixed) => "static",
            Row::Resilix(a) => a.name(),
            Row::NetflixVegas => "netflix-vegas",
        }
    }

    pub fn parse(s: &str) -> Option<Row> {
        Row::ALL.into_iter().find(|r| r.name() == s)
    }

    /// The algorithm's window in seconds, to express times in windows; `None` when it has none.
    pub fn window_s(self) -> Option<f64> {
        match self {
            // windowMinMs: the window length whenever enough samples arrive.
            Row::Resilix(Algorithm::Fixed) => None,
            Row::Resilix(_) => Some(LimiterOptions::default().window_min_ms as f64 / 1000.0),
            // Netflix WindowedLimit: min = max window time = 1 s.
            Row::NetflixVegas => Some(1.0),
        }
    }

    /// The row's engine with these throttle options (`None`: off); `None` for a row that is
    /// not resilix.
    pub fn build_throttled(
        self,
        seed: u64,
        throttle: Option<ThrottleOptions>,
    ) -> Option<Box<dyn ClientLimiter>> {
        match self {
            Row::Resilix(algorithm) => {
                let limiter = LimiterOptions {
                    algorithm,
                    ..LimiterOptions::default()
                };
                Some(Box::new(ResilixClient::with_policies(
                    limiter, throttle, seed,
                )))
            }
            Row::NetflixVegas => None,
        }
    }

    /// `initial`: the scenario's `initialLimit` (`None`: the default).
    pub fn build(self, seed: u64, initial: Option<u32>, phase_ns: u64) -> Box<dyn ClientLimiter> {
        match self {
            Row::Resilix(algorithm) => {
                Box::new(ResilixClient::new(algorithm, seed, initial, phase_ns))
            }
            Row::NetflixVegas => Box::new(NetflixVegas::new(seed)),
        }
    }
}

/// The real engine with the project's defaults (the throttle on); only the algorithm differs
/// between rows (`static` is `Algorithm::Fixed` at the default initial limit). The breaker is off inside
/// the engine: the production scenario watches a breaker alongside instead (world.rs), so that
/// its trip does not change what the limiter sees.
pub struct ResilixClient {
    engine: Engine,
    key: KeyHandle,
}

impl ResilixClient {
    /// `phase_ns`: where the clients' wall clock stands at t = 0 (the baseline probes' phase).
    pub fn new(algorithm: Algorithm, seed: u64, initial: Option<u32>, phase_ns: u64) -> Self {
        let d = LimiterOptions::default();
        let limiter = LimiterOptions {
            algorithm,
            initial_limit: initial.unwrap_or(d.initial_limit),
            clock_offset_ns: phase_ns,
            ..d
        };
        Self::with_limiter(limiter, seed)
    }

    /// The engine with these limiter options (tests that need other than the defaults).
    pub fn with_limiter(limiter: LimiterOptions, seed: u64) -> Self {
        Self::with_policies(limiter, Some(ThrottleOptions::default()), seed)
    }

    /// The engine with these limiter and throttle options (`None`: the throttle off).
    pub fn with_policies(
        limiter: LimiterOptions,
        throttle: Option<ThrottleOptions>,
        seed: u64,
    ) -> Self {
        let policies = PolicyOptions {
            breaker: None,
            limiter: Some(limiter),
            bulkhead: None,
            throttle,
            quota: None,
        };
        let mut engine = Engine::new(policies, RegistryOptions::default(), seed)
            .expect("default options are valid");
        let key = engine.resolve("upstream", 0).expect("one key fits").handle;
        ResilixClient { engine, key }
    }

    /// The same with these retry budget options (ADR 0901's measurements).
    pub fn with_budget(mut self, budget: resilix_engine::BudgetOptions) -> Self {
        self.engine
            .set_retry_budget(budget)
            .expect("valid budget options");
        self
    }
}

impl ClientLimiter for ResilixClient {
    fn acquire(&mut self, now: Nanos, budget_ns: u64) -> Acq {
        match self
            .engine
            .acquire_within(self.key, now, budget_ns)
            .expect("the only key is never evicted")
        {
            Acquired::Permit(id) => Acq::Run(id),
            Acquired::Queued => Acq::Queued,
            Acquired::Rejected(_) => Acq::Refused,
        }
    }

    fn admit_queued(&mut self, now: Nanos) -> Wake {
        match self.engine.admit_queued(self.key, now).expect("live key") {
            Some(Acquired::Permit(id)) => Wake::Run(id),
            Some(Acquired::Queued) | None => Wake::Wait,
            Some(Acquired::Rejected(_)) => Wake::Drop,
        }
    }

    fn leave_queue(&mut self) {
        self.engine.leave_queue(self.key).expect("live key");
    }

    fn acquire_as(
        &mut self,
        now: Nanos,
        budget_ns: u64,
        priority: Priority,
        tenant: u32,
    ) -> (Acq, u8) {
        let level = self
            .engine
            .level_of(self.key, priority, tenant, now)
            .expect("live key");
        let a = match self
            .engine
            .acquire_at(self.key, now, budget_ns, level, tenant)
            .expect("live key")
        {
            Acquired::Permit(id) => Acq::Run(id),
            Acquired::Queued => Acq::Queued,
            Acquired::Rejected(_) => Acq::Refused,
        };
        (a, level)
    }

    fn admit_queued_at(&mut self, now: Nanos, level: u8, tenant: u32) -> Wake {
        match self
            .engine
            .admit_queued_at(self.key, now, level, tenant)
            .expect("live key")
        {
            Some(Acquired::Permit(id)) => Wake::Run(id),
            Some(Acquired::Queued) | None => Wake::Wait,
            Some(Acquired::Rejected(_)) => Wake::Drop,
        }
    }

    fn admit_queued_by(&mut self, now: Nanos, level: u8, tenant: u32, deadline: Nanos) -> Wake {
        match self
            .engine
            .admit_queued_by(self.key, now, level, tenant, deadline)
            .expect("live key")
        {
            Some(Acquired::Permit(id)) => Wake::Run(id),
            Some(Acquired::Queued) | None => Wake::Wait,
            Some(Acquired::Rejected(_)) => Wake::Drop,
        }
    }

    fn leave_queue_at(&mut self, level: u8) {
        self.engine
            .leave_queue_at(self.key, level)
            .expect("live key");
    }

    fn mark(&mut self, permit: u64, now: Nanos) {
        self.engine.mark(self.key, permit, now).expect("live key");
    }

    fn settle(&mut self, permit: u64, verdict: Verdict, now: Nanos) {
        let r = self
            .engine
            .settle(self.key, permit, verdict, now)
            .expect("live key");
        debug_assert!(r.is_ok(), "the simulator settles each permit exactly once");
    }

    fn snapshot(&self, now: Nanos) -> (u32, u32, u32) {
        let s = self.engine.stats(self.key, now).expect("live key");
        (s.limit, s.inflight, s.queued)
    }

    fn sized(&self) -> bool {
        let p = self.engine.registry().get(self.key).expect("live key");
        p.limiter().is_none_or(|l| l.algorithm().sized())
    }

    fn baseline_ms(&self, now: Nanos) -> f64 {
        self.engine
            .stats(self.key, now)
            .expect("live key")
            .baseline_ms
    }

    fn retry(&mut self, policy: &RetryPolicy, s: &Settled, now: Nanos) -> Option<u64> {
        match self
            .engine
            .retry(self.key, policy, s, now)
            .expect("live key")
        {
            Decision::Retry { delay_ns } => Some(delay_ns),
            Decision::Stop(_) => None,
        }
    }

    fn retry_pass(&mut self, now: Nanos) {
        self.engine
            .grant_throttle_pass(self.key, now)
            .expect("live key");
    }
}

/// A plain call: no limiter at all, every call runs at once (what a retry library wraps).
#[derive(Default)]
pub struct PlainClient {
    next: u64,
    inflight: u32,
}

impl ClientLimiter for PlainClient {
    fn acquire(&mut self, _now: Nanos, _budget_ns: u64) -> Acq {
        self.next += 1;
        self.inflight += 1;
        Acq::Run(self.next)
    }
    fn admit_queued(&mut self, _now: Nanos) -> Wake {
        Wake::Wait
    }
    fn leave_queue(&mut self) {}
    fn mark(&mut self, _permit: u64, _now: Nanos) {}
    fn settle(&mut self, _permit: u64, _verdict: Verdict, _now: Nanos) {
        self.inflight -= 1;
    }
    fn snapshot(&self, _now: Nanos) -> (u32, u32, u32) {
        (0, self.inflight, 0)
    }
}
