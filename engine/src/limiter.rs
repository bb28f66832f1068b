//! The limiter owns the permits' concurrency accounting and the queue counts; the limit
//! algorithm only says how many may run (Netflix's Limiter / Limit split).

use crate::limit::{Limit, LimitStats};
use crate::options::{LimiterOptions, QueueOptions};
use crate::queue::{admit, Admission};
use crate::rng::SplitMix64;
use crate::{Nanos, Sample};

/// Outstanding calls a key may hold before its first sample, whatever the queue factors say
/// (ADR 0607: a guess; at 500 and 2 000 see its measurements).
pub const COLD_BURST: u32 = 1_000;

#[derive(Clone, Debug)]
pub struct Limiter {
    limit: Limit,
    queue: Option<QueueOptions>,
    inflight: u32,
    queued: u32,
    /// A sample arrived: the limit is no longer only `initialLimit`'s guess.
    sampled: bool,
}

impl Limiter {
    pub fn new(opts: &LimiterOptions, now: Nanos) -> Self {
        Limiter {
            limit: Limit::new(opts, now),
            queue: opts.queue,
            inflight: 0,
            queued: 0,
            sampled: false,
        }
    }

    /// Decide a new call; counts it as in flight or queued accordingly. `budget_ns` is the
    /// time the caller will wait at most (`u64::MAX`: no deadline): a call that would have to
    /// queue longer than its budget allows is refused at once (`'queue'`) rather than left to
    /// time out in the queue (queueing must not silently eat a deadline: ADR 0110).
    #[inline]
    pub fn admit(&mut self, now: Nanos, rng: &mut SplitMix64, budget_ns: u64) -> Admission {
        self.limit.on_acquire(now, self.inflight);
        let limit = self.limit.current();
        let run_limit = self.limit.admit_limit();
        let mut decision = admit(
            self.inflight,
            self.queued,
            run_limit,
            limit,
            self.queue.as_ref(),
            rng,
        );
        if decision == Admission::Queue && budget_ns != u64::MAX {
            // Expected wait: the waiters ahead leave at about `limit` per latency; then the call
            // itself takes about one latency. The latency is the smoothed p90: a cautious guess.
            let lat = self.limit.expected_latency_ns();
            if lat > 0.0
                && lat * ((self.queued + 1) as f64 / limit.max(1) as f64 + 1.0) > budget_ns as f64
            {
                decision = Admission::RejectQueue;
            }
        }
        if decision == Admission::RejectQueue
            && budget_ns == u64::MAX
            && !self.sampled
            && self.inflight + self.queued < COLD_BURST
        {
            // No call has settled yet, so the limit is still a guess (`initialLimit`): a burst
            // of calls without a deadline on a new key waits rather than being shed against a
            // guess. Calls with a deadline keep the deadline-aware admission (ADR 0607).
            decision = Admission::Queue;
        }
        match decision {
            Admission::Run => {
                self.inflight += 1;
                self.limit.on_admit(now);
            }
            Admission::Queue => self.queued += 1,
            Admission::RejectLimit | Admission::RejectQueue => {}
        }
        decision
    }

    /// Turn one waiter into a running call if the limit allows it now.
    #[inline]
    pub fn admit_queued(&mut self, now: Nanos) -> bool {
        self.limit.on_acquire(now, self.inflight);
        if self.queued == 0 || self.inflight >= self.limit.admit_limit() {
            return false;
        }
        self.queued -= 1;
        self.inflight += 1;
        self.limit.on_admit(now);
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
            self.sampled = true;
            self.limit.on_sample(now, s, self.inflight);
        }
    }

    /// How many waiters could be admitted right now.
    #[inline]
    pub fn wakeable(&self) -> u32 {
        self.queued
            .min(self.limit.admit_limit().saturating_sub(self.inflight))
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

#[cfg(test)]
mod tests {
    //! The queue boundaries are factors of the *current* limit: they move with it.
    //! A test-only setter stands in for an adapting algorithm.
    use super::*;
    use crate::limit::FixedLimit;
    use crate::options::Algorithm;

    impl Limiter {
        fn set_limit(&mut self, n: u32) {
            self.limit = Limit::Fixed(FixedLimit::new(n));
        }
    }

    fn limiter(limit: u32) -> Limiter {
        let opts = LimiterOptions {
            algorithm: Algorithm::Fixed,
            initial_limit: limit,
            min_limit: 1,
            max_limit: 1_000,
            ..LimiterOptions::default()
        };
        // Past its first sample: the factors alone (the cold start is tested on its own).
        let mut l = Limiter::new(&opts, 0);
        l.sampled = true;
        l
    }

    /// Fill to `inflight` running and `queued` waiting (below 2L nothing is random).
    fn fill(l: &mut Limiter, rng: &mut SplitMix64, n: u32) {
        for _ in 0..n {
            assert!(matches!(
                l.admit(0, rng, u64::MAX),
                Admission::Run | Admission::Queue
            ));
        }
    }

    #[test]
    fn a_grown_limit_admits_waiters_at_once() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(4);
        fill(&mut l, &mut rng, 8); // 4 running, 4 waiting
        assert_eq!((l.inflight(), l.queued(), l.wakeable()), (4, 4, 0));
        l.set_limit(6);
        assert_eq!(l.wakeable(), 2);
        assert!(l.admit_queued(0));
        assert!(l.admit_queued(0));
        assert!(!l.admit_queued(0));
        assert_eq!((l.inflight(), l.queued()), (6, 2));
        l.set_limit(100);
        assert_eq!(l.wakeable(), 2);
    }

    #[test]
    fn a_shrunk_limit_drops_no_waiter_and_admits_none_until_inflight_falls_under_it() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(4);
        fill(&mut l, &mut rng, 8);
        l.set_limit(2);
        assert_eq!(
            (l.inflight(), l.queued()),
            (4, 4),
            "nobody already waiting is dropped"
        );
        for _ in 0..2 {
            l.release(0, None);
            assert_eq!(l.wakeable(), 0);
            assert!(!l.admit_queued(0));
        }
        // inflight 2 == limit 2: still nobody. One more release: inflight 1 < 2.
        l.release(0, None);
        assert_eq!(l.wakeable(), 1);
        assert!(l.admit_queued(0));
        assert_eq!((l.inflight(), l.queued()), (2, 3));
    }

    #[test]
    fn the_reject_boundary_moves_with_the_limit() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(4);
        fill(&mut l, &mut rng, 8);
        // Outstanding 8..12 is the ramp at L = 4; force 12 outstanding.
        l.queued = 8;
        assert_eq!(
            l.admit(0, &mut rng, u64::MAX),
            Admission::RejectQueue,
            "3L = 12 rejects"
        );
        l.set_limit(8);
        // 12 outstanding is below 2L = 16 now: waits without any chance of rejection.
        for _ in 0..4 {
            assert_eq!(l.admit(0, &mut rng, u64::MAX), Admission::Queue);
        }
        l.set_limit(2);
        // 16 outstanding is far beyond 3L = 6: rejected, and the waiters stay.
        assert_eq!(l.admit(0, &mut rng, u64::MAX), Admission::RejectQueue);
        assert_eq!((l.inflight(), l.queued()), (4, 12));
    }

    #[test]
    fn without_a_queue_it_rejects_at_the_current_limit() {
        let mut rng = SplitMix64::new(1);
        let opts = LimiterOptions {
            algorithm: Algorithm::Fixed,
            initial_limit: 3,
            min_limit: 1,
            max_limit: 10,
            queue: None,
            ..LimiterOptions::default()
        };
        let mut l = Limiter::new(&opts, 0);
        for _ in 0..3 {
            assert_eq!(l.admit(0, &mut rng, u64::MAX), Admission::Run);
        }
        assert_eq!(l.admit(0, &mut rng, u64::MAX), Admission::RejectLimit);
        l.set_limit(5);
        assert_eq!(l.admit(0, &mut rng, u64::MAX), Admission::Run);
        l.set_limit(1);
        assert_eq!(l.admit(0, &mut rng, u64::MAX), Admission::RejectLimit);
        assert_eq!((l.inflight(), l.queued()), (4, 0));
    }

    #[test]
    fn a_burst_on_a_new_key_waits_until_the_first_sample() {
        let mut rng = SplitMix64::new(1);
        let mut l = Limiter::new(&LimiterOptions::default(), 0); // vegas, limit 20
        for _ in 0..COLD_BURST {
            assert_ne!(l.admit(0, &mut rng, u64::MAX), Admission::RejectQueue);
        }
        assert_eq!((l.inflight(), l.queued()), (20, COLD_BURST - 20));
        assert_eq!(
            l.admit(0, &mut rng, u64::MAX),
            Admission::RejectQueue,
            "bounded"
        );
        // A call with a deadline keeps the factors (3 × 20 outstanding is long past).
        assert_eq!(l.admit(0, &mut rng, 1 << 40), Admission::RejectQueue);
        // After the first sample, the factors alone, moving with the limit.
        let sample = Sample {
            latency_ns: 5_000_000,
            duration_ns: 5_000_000,
            inflight: 20,
            verdict: crate::Verdict::Success,
            waited: false,
        };
        l.release(1, Some(&sample));
        while l.queued() > 0 {
            l.leave_queue();
        }
        let mut admitted = 0;
        while l.admit(2, &mut rng, u64::MAX) != Admission::RejectQueue {
            admitted += 1;
        }
        assert!(
            admitted < 3 * l.limit(),
            "{admitted} outstanding past the first sample"
        );
    }
}
