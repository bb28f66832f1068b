//! The limiter owns the permits' concurrency accounting and the queue counts; the limit
//! algorithm only says how many may run (Netflix's Limiter / Limit split).

use crate::engine::limit::{Limit, LimitStats};
use crate::engine::options::{LimiterOptions, QueueOptions};
use crate::engine::queue::{admit, Admission};
use crate::engine::rng::SplitMix64;
use crate::engine::{Nanos, Sample};

#[derive(Clone, Debug)]
pub struct Limiter {
    limit: Limit,
    queue: Option<QueueOptions>,
    inflight: u32,
    queued: u32,
}

impl Limiter {
    pub fn new(opts: &LimiterOptions, now: Nanos) -> Self {
        Limiter { limit: Limit::new(opts, now), queue: opts.queue, inflight: 0, queued: 0 }
    }

    /// Decide a new call; counts it as in flight or queued accordingly.
    #[inline]
    pub fn admit(&mut self, now: Nanos, rng: &mut SplitMix64) -> Admission {
        self.limit.on_acquire(now, self.inflight);
        let decision = admit(self.inflight, self.queued, self.limit.current(), self.queue.as_ref(), rng);
        match decision {
            Admission::Run => self.inflight += 1,
            Admission::Queue => self.queued += 1,
            Admission::RejectLimit | Admission::RejectQueue => {}
        }
        decision
    }

    /// Turn one waiter into a running call if the limit allows it now.
    #[inline]
    pub fn admit_queued(&mut self, now: Nanos) -> bool {
        self.limit.on_acquire(now, self.inflight);
        if self.queued == 0 || self.inflight >= self.limit.current() {
            return false;
        }
        self.queued -= 1;
        self.inflight += 1;
        true
    }

    /// A waiter left the queue without running (deadline, abort, or refused later on).
    #[inline]
    pub fn leave_queue(&mut self) -> bool {
        if self.queued == 0 {
            return false;
        }
        self.queued -= 1;
        true
    }

    /// A call this limiter admitted ended; `sample` is `None` for ignored verdicts.
    #[inline]
    pub fn release(&mut self, now: Nanos, sample: Option<&Sample>) {
        debug_assert!(self.inflight > 0, "limiter released more than admitted");
        self.inflight = self.inflight.saturating_sub(1);
        if let Some(s) = sample {
            self.limit.on_sample(now, s);
        }
    }

    /// How many waiters could be admitted right now.
    #[inline]
    pub fn wakeable(&self) -> u32 {
        self.queued.min(self.limit.current().saturating_sub(self.inflight))
    }

    #[inline]
    pub fn inflight(&self) -> u32 {
        self.inflight
    }
    #[inline]
    pub fn queued(&self) -> u32 {
        self.queued
    }
    #[inline]
    pub fn limit(&self) -> u32 {
        self.limit.current()
    }
    pub fn limit_stats(&self) -> LimitStats {
        self.limit.stats()
    }
    pub fn algorithm(&self) -> &Limit {
        &self.limit
    }
}
