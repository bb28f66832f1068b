//! The limiter owns the permits' concurrency accounting and the queue counts; the limit
//! algorithm only says how many may run (Netflix's Limiter / Limit split).

use crate::limit::{Limit, LimitStats};
use crate::options::{LimiterOptions, QueueOptions};
use crate::priority::{QueuedByLevel, RecentLevels};
use crate::queue::{shed_share, Admission, QueueRefusal};
use crate::rng::SplitMix64;
use crate::standing::{interval_ns, Standing};
use crate::{Nanos, Sample, Verdict};

/// Weight of one sample in the mean time a call holds its slot. 1/16: ours, a guess (a few
/// windows' worth of calls at the lowest limit; ADR 0114).
const HOLD_WEIGHT: f32 = 1.0 / 16.0;

/// Weight of a shorter wait at the upstream in its estimate (a longer one is taken at once), and
/// the margin the turn rule gives it. Ours: with the hold time's 1/16 and no margin, one call in
/// about 300 on 16 slots with 40 consumers was still cut mid-stream after waiting longer than
/// the estimate; the wait is bounded by a stream anyway. ADR 1222, in the simulator: the weight
/// at 1/128 and 1/32 reads the same; the margin at 0.625 cuts 2–9 admitted streams per scenario,
/// at 2.5 it reads as 1.25.
const UPSTREAM_WAIT_WEIGHT: f32 = 1.0 / 64.0;
const UPSTREAM_WAIT_MARGIN: f64 = 1.25;

/// The share of a call's deadline the expected wait and run may fill before it is refused at
/// once. 0.8: the limit runs up to a quarter above what the upstream serves, where latencies
/// are longer than the windows read them; at 0.85 a 500 ms batch on the real upstream had 21 of
/// 1 000 time out after admission in one run of three, at 0.8 none in four (ADR 0114).
pub(crate) const DEADLINE_SHARE: f64 = 0.8;

/// The queue options as the limiter keeps them: a key's memory is bounded (≤ 2.5 KiB).
#[derive(Clone, Copy, Debug)]
struct Queue {
    initial_factor: f32,
    max_factor: f32,
    max_queued: u32,
}

impl Queue {
    fn options(self) -> QueueOptions {
        QueueOptions {
            initial_factor: self.initial_factor as f64,
            max_factor: self.max_factor as f64,
            max_queued: self.max_queued,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Limiter {
    limit: Limit,
    queue: Option<Queue>,
    inflight: u32,
    queued: u32,
    /// Mean time a call holds its slot (admission to settle), ns; 0 before the first sample.
    hold_ns: f32,
    /// How long calls counted queued at the upstream waited there for a slot (ns; ADR 1222).
    upstream_wait_ns: f32,
    /// Mean time a call holds its slot after its response started (mark to settle), ns: a
    /// stream's body; 0 for calls that do not mark.
    tail_ns: f32,
    standing: Standing,
    /// Waiting calls by level, and the levels recently seen waiting (ADR 1001).
    levels: QueuedByLevel,
    recent: RecentLevels,
    /// Why the last `'queue'` refusal refused (read on the refusal path only).
    last_refusal: QueueRefusal,
    /// A call that had waited in the queue settled: past a new key's first round, which pays a
    /// cold process's one-time costs, the mean hold time restarted from it (ADR 0615).
    waited: bool,
    /// A call with a deadline queued before the key had a hold time to judge it by: its
    /// waiters are judged once a call that waited settles (ADR 0615).
    blind: bool,
}

impl Limiter {
    pub fn new(opts: &LimiterOptions, now: Nanos) -> Self {
        Limiter {
            limit: Limit::new(opts, now),
            queue: opts.queue.map(|q| Queue {
                initial_factor: q.initial_factor as f32,
                max_factor: q.max_factor as f32,
                max_queued: q.max_queued,
            }),
            inflight: 0,
            queued: 0,
            hold_ns: 0.0,
            upstream_wait_ns: 0.0,
            tail_ns: 0.0,
            standing: Standing::default(),
            levels: QueuedByLevel::default(),
            recent: RecentLevels::default(),
            last_refusal: QueueRefusal::Standing,
            waited: false,
            blind: false,
        }
    }

    /// Decide a new call; counts it as in flight or queued accordingly. `budget_ns` is the
    /// time the caller will wait at most (`u64::MAX`: no deadline); `level` ranks it in the
    /// queue (`priority.rs`).
    ///
    /// The queue (ADR 0114): a call waits unless the key already holds `maxQueued` waiters,
    /// or it could not leave the queue within its budget (refused at once rather than left to
    /// time out waiting: ADR 0110), or the queue is standing, where the factors' ramp sheds.
    #[inline]
    pub fn admit(
        &mut self,
        now: Nanos,
        rng: &mut SplitMix64,
        budget_ns: u64,
        level: u8,
    ) -> Admission {
        self.limit.on_acquire(now, self.inflight);
        let run_limit = self.limit.admit_limit();
        if self.queued == 0 && self.inflight < run_limit {
            self.inflight += 1;
            self.limit.on_admit(now);
            return Admission::Run;
        }
        let Some(q) = self.queue else {
            // Without a queue a probe's hold refuses: a probe that let calls run up to `limit`
            // never drained, and a baseline learnt under load stayed (ADR 0113).
            return Admission::RejectLimit;
        };
        let limit = self.limit.current();
        self.recent.record(level);
        let refusal = self.queue_refusal(q, now, limit, rng, budget_ns, level);
        match refusal {
            Some(r) => {
                self.last_refusal = r;
                Admission::RejectQueue
            }
            None => {
                self.queued += 1;
                self.levels.add(level);
                Admission::Queue
            }
        }
    }

    /// How long an admitted call is expected to hold its slot, as the queue's deadline rule
    /// reckons it (0 before any call settled).
    pub fn expected_run_ns(&self) -> u64 {
        self.slot_ns() as u64
    }

    /// A slot is held for a latency plus, for a stream, its body (the tail). The latency is the
    /// windows' smoothed p90: cautious, as calls on the edge of their deadline would time out
    /// after waiting (with the mean, `baseline-shift` goodput fell from 96 % to 19 %), and
    /// unlike the mean hold time it does not jump when our own event loop stalls (ADR 0114).
    /// Before any window, or with a fixed limit, the mean hold time stands in.
    #[inline]
    fn slot_ns(&self) -> f64 {
        match self.limit.expected_latency_ns() {
            p90 if p90 > 0.0 => p90 + self.tail_ns as f64,
            _ => self.hold_ns as f64,
        }
    }

    /// Calls hold a `slot` mostly past their first byte: streams (ADR 0118).
    #[inline]
    fn streams(&self, slot: f64) -> bool {
        2.0 * self.tail_ns as f64 > slot
    }

    /// Why a call that cannot run now may not wait either; `None`: it waits.
    #[inline]
    fn queue_refusal(
        &mut self,
        q: Queue,
        now: Nanos,
        limit: u32,
        rng: &mut SplitMix64,
        budget_ns: u64,
        level: u8,
    ) -> Option<QueueRefusal> {
        if self.queued >= q.max_queued {
            return Some(QueueRefusal::Full);
        }
        let free_zone = ((q.initial_factor - 1.0) * limit as f32) as u32;
        let hold = self.hold_ns as f64;
        let interval = interval_ns(hold, limit);
        // A standing queue sheds the ramp's share of arrivals, lowest levels first. A call is
        // judged by the queue it would wait in: the waiters at its level or above (ADR 1001).
        // With one level in use, that is the whole queue.
        if self.standing.observe(now, self.queued, free_zone, interval) {
            let ahead = self.levels.at_or_above(level);
            let p = shed_share(self.inflight, ahead, limit, &q.options());
            if self.recent.sheds(level, p, rng) {
                return Some(QueueRefusal::Standing);
            }
        }
        // Only the waiters at this call's level or above leave before it (ADR 1001).
        if budget_ns != u64::MAX
            && hold > 0.0
            && self.misses(
                self.slot_ns(),
                self.levels.at_or_above(level),
                limit,
                budget_ns,
            )
        {
            return Some(QueueRefusal::Deadline);
        }
        if hold <= 0.0 && budget_ns != u64::MAX {
            self.blind = true;
        }
        None
    }

    /// The deadline rule: a call with `ahead` waiters ahead of it and `budget_ns` left cannot
    /// leave the queue and run within `DEADLINE_SHARE` of it, each call holding a `slot`.
    #[inline]
    fn misses(&self, slot: f64, ahead: u32, limit: u32, budget_ns: u64) -> bool {
        // Expected wait: the waiters ahead and this call leave at `limit` per slot time;
        // then the call itself runs for one more (`slot_ns`).
        let rounds = (ahead + 1) as f64 / limit.max(1) as f64;
        // Streams that started together end together: slots come back in rounds, and the
        // call waits for whole ones. A call that waited one round too long is cut at its
        // deadline mid-stream, its slot time lost (ADR 0118).
        let rounds = if self.streams(slot) {
            rounds.ceil()
        } else {
            rounds
        };
        rounds * slot + slot > DEADLINE_SHARE * budget_ns as f64
    }

    /// A call already waiting, `ahead` waiters ahead of it and `left_ns` to its deadline: would
    /// the deadline rule refuse it now? `None` until a call that had waited settled. Calls that
    /// waited on a new key, before any settled, are judged so then (ADR 0615): by a mean hold
    /// time restarted from that call, not the first round's, which pays a cold process's
    /// one-time costs.
    pub fn waiter_misses(&self, ahead: u32, left_ns: u64) -> Option<bool> {
        let (slot, limit) = (self.slot_ns(), self.limit.current());
        // Streams whose limit came down below the calls in flight (calls found queued at the
        // upstream): the waiters wait for the excess to drain first. Judged as a round of
        // streams ends, whose slots come back now: a whole round more for every `limit` calls
        // before it. A waiter that cannot make it is refused now, not left to time out in the
        // queue (ADR 1222).
        if self.hold_ns > 0.0 && self.streams(slot) && self.inflight > limit {
            let rounds = ((ahead + self.inflight - limit) / limit.max(1)) as f64;
            return Some(
                left_ns != u64::MAX && rounds * slot + slot > DEADLINE_SHARE * left_ns as f64,
            );
        }
        if !self.waited {
            return None;
        }
        // Every waiter was judged when it came, by a known hold time.
        if !self.blind {
            return Some(false);
        }
        // Streams: a waiter is judged at its turn instead, when a round of slots comes back
        // (ADR 0118); refused here, it would be refused a whole stream after it came (ADR 0615).
        if self.streams(slot) {
            return Some(false);
        }
        Some(left_ns != u64::MAX && self.misses(slot, ahead, self.limit.current(), left_ns))
    }

    /// A waiter of `level` refused by the deadline rule leaves the queue.
    pub fn refuse_waiter(&mut self, level: u8) -> bool {
        if !self.leave_queue(level) {
            return false;
        }
        self.last_refusal = QueueRefusal::Deadline;
        true
    }

    /// A waiter that would be admitted now but whose deadline (engine clock) comes before the
    /// slot it takes would be given back: refused instead, where calls hold their slot mostly
    /// past the first byte (streams). Admitted, it would be cut at its deadline mid-stream and
    /// its slot time lost; refused, the slot goes to a call that can use it (ADR 0118).
    pub fn refuses_to_start(&mut self, now: Nanos, deadline: Nanos) -> bool {
        let slot = self.slot_ns();
        // Where calls queued at the upstream for a slot lately, this one may wait there as
        // long as they did, with a quarter to spare, and at most a stream: the slots of the
        // calls ahead of it free within one (ADR 1222).
        let need = if self.limit.queued_upstream() {
            slot + (self.upstream_wait_ns as f64 * UPSTREAM_WAIT_MARGIN).min(self.tail_ns as f64)
        } else {
            slot
        };
        if !self.streams(slot) || self.queued == 0 || deadline.saturating_sub(now) as f64 >= need {
            return false;
        }
        // Only a waiter the limit would admit now: one that must wait anyway keeps waiting.
        self.limit.on_acquire(now, self.inflight);
        if self.inflight >= self.limit.admit_limit() {
            return false;
        }
        self.last_refusal = QueueRefusal::Turn;
        true
    }

    /// Turn one waiter of `level` into a running call if the limit allows it now. The caller
    /// admits the highest level first ([`highest_waiting`](Self::highest_waiting)).
    #[inline]
    pub fn admit_queued(&mut self, now: Nanos, level: u8) -> bool {
        self.limit.on_acquire(now, self.inflight);
        if self.levels.at(level) == 0 || self.inflight >= self.limit.admit_limit() {
            return false;
        }
        self.levels.remove(level);
        self.queued -= 1;
        self.inflight += 1;
        self.limit.on_admit(now);
        true
    }

    /// A waiter of `level` left the queue without running (deadline, abort, or refused later).
    #[inline]
    pub fn leave_queue(&mut self, level: u8) -> bool {
        if !self.levels.remove(level) {
            return false;
        }
        self.queued -= 1;
        true
    }

    /// Waiting calls by priority class.
    pub fn queued_by_class(&self) -> [u32; 5] {
        let mut out = [0; 5];
        for level in 0..crate::priority::LEVELS as u8 {
            out[crate::priority::class_of(level) as usize] += self.levels.at(level);
        }
        out
    }

    /// The highest level a call waits at: the next to admit.
    pub fn highest_waiting(&self) -> Option<u8> {
        self.levels.highest()
    }

    /// See [`Adaptive::late_after`](crate::limit::Adaptive::late_after).
    #[inline]
    pub fn late_after(&self, now: Nanos, s: &Sample) -> Option<Nanos> {
        self.limit.late_after(now, s)
    }

    /// See [`Adaptive::note_late`](crate::limit::Adaptive::note_late).
    #[inline]
    pub fn note_late(&mut self, late: u32, now: Nanos, after: Nanos) {
        self.limit.note_late(late, now, after);
    }

    /// A call this limiter admitted ended; `sample` is `None` for ignored verdicts.
    #[inline]
    pub fn release(&mut self, now: Nanos, sample: Option<&Sample>) {
        debug_assert!(self.inflight > 0, "limiter released more than admitted");
        self.inflight = self.inflight.saturating_sub(1);
        self.standing.depart();
        if let Some(s) = sample {
            let d = s.duration_ns as f32;
            let tail = s.duration_ns.saturating_sub(s.latency_ns) as f32;
            if self.hold_ns == 0.0 {
                self.hold_ns = d.max(1.0);
                self.tail_ns = tail;
            } else {
                self.hold_ns += (d - self.hold_ns) * HOLD_WEIGHT;
                self.tail_ns += (tail - self.tail_ns) * HOLD_WEIGHT;
            }
            if s.waited && !self.waited {
                self.waited = true;
                // Restarted only where the first round had nothing to go by (ADR 0615).
                if self.blind {
                    self.hold_ns = d.max(1.0);
                    self.tail_ns = tail;
                }
            }
            if s.late && matches!(s.verdict, Verdict::Success | Verdict::Answered) {
                // How long a call counted queued at the upstream waited there for its slot: a
                // rise at once, a fall slowly (ADR 1222).
                let w = s.latency_ns as f32;
                self.upstream_wait_ns = if w > self.upstream_wait_ns {
                    w
                } else {
                    self.upstream_wait_ns + (w - self.upstream_wait_ns) * UPSTREAM_WAIT_WEIGHT
                };
            }
            self.limit.note_tail(self.tail_ns);
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
    /// Why the last `'queue'` refusal refused.
    pub fn last_refusal(&self) -> QueueRefusal {
        self.last_refusal
    }
    /// The most calls that may wait (`maxQueued`); 0 without a queue.
    pub fn max_queued(&self) -> u32 {
        self.queue.map_or(0, |q| q.max_queued)
    }
    /// The queue is standing (ADR 0114): the factors' ramp sheds arrivals.
    pub fn standing(&self) -> bool {
        self.standing.is_standing()
    }
    /// Mean time a call holds its slot, ms (0 before the first sample).
    pub fn hold_ms(&self) -> f64 {
        self.hold_ns as f64 * 1e-6
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
    //! The queue: a burst waits (up to `maxQueued`), a standing queue meets the factors, which
    //! move with the current limit, and a call that cannot make its deadline is refused at once.
    //! A test-only setter stands in for an adapting algorithm.
    use super::*;
    use crate::limit::FixedLimit;
    use crate::options::Algorithm;
    use crate::priority::{Priority, DEFAULT_LEVEL as D};
    use crate::standing::MIN_INTERVAL_NS;
    use crate::Verdict;

    impl Limiter {
        fn set_limit(&mut self, n: u32) {
            self.limit = Limit::Fixed(FixedLimit::new(n));
        }
    }

    fn limiter_with(limit: u32, queue: QueueOptions) -> Limiter {
        let opts = LimiterOptions {
            algorithm: Algorithm::Fixed,
            initial_limit: limit,
            min_limit: 1,
            max_limit: 1_000,
            queue: Some(queue),
            ..LimiterOptions::default()
        };
        Limiter::new(&opts, 0)
    }

    fn limiter(limit: u32) -> Limiter {
        limiter_with(limit, QueueOptions::default())
    }

    fn sample(latency_ns: u64) -> Sample {
        Sample {
            latency_ns,
            duration_ns: latency_ns,
            inflight: 1,
            verdict: Verdict::Success,
            waited: false,
            late: false,
        }
    }

    /// Admit `n` calls at `now`, each expected to run or wait.
    fn fill(l: &mut Limiter, rng: &mut SplitMix64, now: Nanos, n: u32) {
        for i in 0..n {
            let a = l.admit(now, rng, u64::MAX, D);
            assert!(
                matches!(a, Admission::Run | Admission::Queue),
                "call {i}: {a:?}"
            );
        }
    }

    /// Make the queue stand: it does not shrink over two intervals in which a call left
    /// (two arrivals at each).
    fn stand(l: &mut Limiter, rng: &mut SplitMix64) -> Nanos {
        let mut now = 0;
        for _ in 0..3 {
            now += MIN_INTERVAL_NS;
            l.release(now, None);
            let _ = l.admit(now, rng, u64::MAX, D);
            let _ = l.admit(now, rng, u64::MAX, D);
            if l.standing() {
                break;
            }
        }
        assert!(l.standing(), "{} waiting did not stand", l.queued());
        now
    }

    #[test]
    fn a_grown_limit_admits_waiters_at_once() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(4);
        fill(&mut l, &mut rng, 0, 8); // 4 running, 4 waiting
        assert_eq!((l.inflight(), l.queued(), l.wakeable()), (4, 4, 0));
        l.set_limit(6);
        assert_eq!(l.wakeable(), 2);
        assert!(l.admit_queued(0, D));
        assert!(l.admit_queued(0, D));
        assert!(!l.admit_queued(0, D));
        assert_eq!((l.inflight(), l.queued()), (6, 2));
        l.set_limit(100);
        assert_eq!(l.wakeable(), 2);
    }

    #[test]
    fn a_shrunk_limit_drops_no_waiter_and_admits_none_until_inflight_falls_under_it() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(4);
        fill(&mut l, &mut rng, 0, 8);
        l.set_limit(2);
        assert_eq!(
            (l.inflight(), l.queued()),
            (4, 4),
            "nobody already waiting is dropped"
        );
        for _ in 0..2 {
            l.release(0, None);
            assert_eq!(l.wakeable(), 0);
            assert!(!l.admit_queued(0, D));
        }
        // inflight 2 == limit 2: still nobody. One more release: inflight 1 < 2.
        l.release(0, None);
        assert_eq!(l.wakeable(), 1);
        assert!(l.admit_queued(0, D));
        assert_eq!((l.inflight(), l.queued()), (2, 3));
    }

    #[test]
    fn a_burst_waits_far_past_the_factors_with_or_without_a_deadline() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(20);
        // Warm: samples of 20 ms, so the key has a hold time and a latency.
        for _ in 0..100 {
            assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::Run);
            l.release(0, Some(&sample(20_000_000)));
        }
        // 10 000 calls at once: 20 run, the rest wait (the factors would stop at 60).
        fill(&mut l, &mut rng, 1, 10_000);
        assert_eq!((l.inflight(), l.queued()), (20, 9_980));
        // With a 60 s deadline too: 10 000 × 20 ms / 20 = 10 s of waiting fits.
        fill(&mut l, &mut rng, 2, 10_000);
        assert_eq!(l.queued(), 19_980);
        assert!(!l.standing());
    }

    #[test]
    fn a_batch_dispatched_in_one_long_turn_is_not_shed_on_a_new_key() {
        // 1 000 calls arrive 0.5 ms apart (a cold process on a busy machine dispatching a batch
        // in one synchronous turn of 500 ms): no call can leave meanwhile, so no interval is
        // judged (ADR 0614). Before, 580 were shed as a standing queue.
        let mut rng = SplitMix64::new(1);
        let t0 = 1_000_000_000;
        let mut l = Limiter::new(&LimiterOptions::default(), t0);
        let shed = (0..1_000u64)
            .filter(|i| l.admit(t0 + i * 500_000, &mut rng, u64::MAX, D) == Admission::RejectQueue)
            .count();
        assert_eq!((shed, l.inflight(), l.queued()), (0, 20, 980));
        assert!(!l.standing());
    }

    /// A limit of 16 full and 16 waiting; one more call with a 15 s deadline: whether it waits,
    /// where each call held its slot 5.2 s (streams: first byte at 0.2 s; plain: at the end).
    fn waiter_behind_a_round_with_15_s(stream: bool) -> Admission {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(16);
        for _ in 0..32 {
            assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::Run);
            let latency_ns = if stream { 200_000_000 } else { 5_200_000_000 };
            l.release(
                0,
                Some(&Sample {
                    duration_ns: 5_200_000_000,
                    ..sample(latency_ns)
                }),
            );
        }
        fill(&mut l, &mut rng, 1, 32);
        assert_eq!((l.inflight(), l.queued()), (16, 16));
        l.admit(1, &mut rng, 15_000_000_000, D)
    }

    #[test]
    fn streams_wait_for_whole_rounds_of_slots() {
        // Smoothly, 17 calls leave 16 slots in 17/16 slot times (5.5 s), then it runs one:
        // 10.7 s, within 0.8 × 15 s: it waits. Streams that started together end together:
        // slots come back in rounds, so it waits for the second round (10.4 s) and then streams
        // 5.2 s: 15.6 s, refused at once.
        assert_eq!(waiter_behind_a_round_with_15_s(false), Admission::Queue);
        assert_eq!(
            waiter_behind_a_round_with_15_s(true),
            Admission::RejectQueue
        );
    }

    #[test]
    fn a_call_that_cannot_leave_the_queue_by_its_deadline_is_refused_at_once() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(10);
        for _ in 0..50 {
            assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::Run);
            l.release(0, Some(&sample(10_000_000)));
        }
        let budget = 100_000_000; // 100 ms: 10 slots of 10 ms drain 1 call a ms
        let mut waited = 0;
        loop {
            match l.admit(1, &mut rng, budget, D) {
                Admission::Run => {}
                Admission::Queue => waited += 1,
                Admission::RejectQueue => break,
                a => panic!("{a:?}"),
            }
        }
        assert_eq!(l.last_refusal(), QueueRefusal::Deadline);
        // Waiters ahead + itself, at 1 ms each, plus its own run (10 ms) within 80 % of 100 ms.
        assert_eq!(waited, 70);
        // Without a deadline the same call waits.
        assert_eq!(l.admit(1, &mut rng, u64::MAX, D), Admission::Queue);
    }

    #[test]
    fn a_new_key_has_no_estimate_and_queues_a_burst_with_a_deadline() {
        let mut rng = SplitMix64::new(1);
        let mut l = Limiter::new(&LimiterOptions::default(), 0); // vegas, limit 20
        for _ in 0..1_000 {
            assert!(l.admit(0, &mut rng, 2_000_000_000, D).is_run_or_queue());
        }
        assert_eq!((l.inflight(), l.queued()), (20, 980));
    }

    #[test]
    fn a_new_keys_waiters_are_judged_by_the_deadline_rule_once_a_call_that_waited_settled() {
        let mut rng = SplitMix64::new(1);
        let mut l = Limiter::new(&LimiterOptions::default(), 0); // vegas, limit 20
        let budget = 500_000_000;
        for _ in 0..1_000 {
            assert!(l.admit(0, &mut rng, budget, D).is_run_or_queue());
        }
        assert_eq!(l.waiter_misses(0, budget), None, "no estimate yet");
        // The first round pays a cold start (100 ms): no judgement yet, its calls never waited.
        for _ in 0..20 {
            l.release(100_000_000, Some(&sample(100_000_000)));
            assert!(l.admit_queued(100_000_000, D));
        }
        assert_eq!(
            l.waiter_misses(0, budget),
            None,
            "only the first round settled"
        );
        // The first call that had waited settles after 20 ms: 20 slots of 20 ms drain a waiter a
        // ms; with 380 ms left, a waiter fits if (ahead + 1) ms + 20 ms <= 304 ms.
        let waited = Sample {
            waited: true,
            ..sample(20_000_000)
        };
        l.release(120_000_000, Some(&waited));
        let left = budget - 120_000_000;
        assert_eq!(l.waiter_misses(283, left), Some(false));
        assert_eq!(l.waiter_misses(284, left), Some(true));
        assert_eq!(l.waiter_misses(5_000, u64::MAX), Some(false), "no deadline");
        let q = l.queued();
        assert!(l.refuse_waiter(D));
        assert_eq!(
            (l.queued(), l.last_refusal()),
            (q - 1, QueueRefusal::Deadline)
        );
    }

    #[test]
    fn a_warm_keys_waiters_were_judged_when_they_came() {
        // The key's calls took 20 ms before any waited: each waiter was judged by the deadline
        // rule as it queued, and is not judged again by the hold time of the first call that
        // waited (a loaded machine's 60 ms), which refused some of them a turn late.
        let mut rng = SplitMix64::new(1);
        let mut l = Limiter::new(&LimiterOptions::default(), 0); // vegas, limit 20
        for _ in 0..20 {
            assert!(l.admit(0, &mut rng, u64::MAX, D).is_run_or_queue());
        }
        for _ in 0..20 {
            l.release(20_000_000, Some(&sample(20_000_000)));
        }
        let budget = 500_000_000;
        let queued = (0..400)
            .filter(|_| l.admit(20_000_000, &mut rng, budget, D) == Admission::Queue)
            .count();
        assert!(queued > 100, "{queued} queued");
        let waited = Sample {
            waited: true,
            ..sample(60_000_000)
        };
        l.release(80_000_000, Some(&waited));
        assert_eq!(l.waiter_misses(200, budget - 80_000_000), Some(false));
    }

    #[test]
    fn a_new_keys_waiting_streams_are_left_to_their_turn() {
        // 40 streams of 5 s (first token at 200 ms) arrive at once on a new key with 15 s
        // deadlines; the first, which waited a moment, settles at 5.2 s. The deadline rule
        // would refuse the waiters far back now, a whole stream after they came: they are
        // judged at their turn instead (ADR 0118, 0615).
        let mut rng = SplitMix64::new(1);
        let mut l = Limiter::new(&LimiterOptions::default(), 0); // vegas, limit 20
        let budget = 15_000_000_000;
        for _ in 0..40 {
            assert!(l.admit(0, &mut rng, budget, D).is_run_or_queue());
        }
        let stream = Sample {
            latency_ns: 200_000_000,
            duration_ns: 5_000_000_000,
            waited: true,
            ..sample(0)
        };
        l.release(5_200_000_000, Some(&stream));
        let left = budget - 5_200_000_000;
        assert_eq!(l.waiter_misses(19, left), Some(false));
        // The same key's calls were short: the waiter 19th in line would be refused.
        let mut short = Limiter::new(&LimiterOptions::default(), 0);
        for _ in 0..40 {
            assert!(short.admit(0, &mut rng, budget, D).is_run_or_queue());
        }
        let call = Sample {
            latency_ns: 5_000_000_000,
            ..stream
        };
        short.release(5_200_000_000, Some(&call));
        assert_eq!(short.waiter_misses(19, left), Some(true));
    }

    #[test]
    fn the_queue_is_capped_at_max_queued_whatever_its_state() {
        let mut rng = SplitMix64::new(1);
        let q = QueueOptions {
            max_queued: 100,
            ..QueueOptions::default()
        };
        let mut l = limiter_with(4, q);
        fill(&mut l, &mut rng, 0, 104);
        assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::RejectQueue);
        assert_eq!(l.last_refusal(), QueueRefusal::Full);
        assert_eq!((l.inflight(), l.queued()), (4, 100));
        l.leave_queue(D);
        assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::Queue);
    }

    #[test]
    fn a_standing_queue_meets_the_factors_which_move_with_the_limit() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(4);
        fill(&mut l, &mut rng, 0, 12); // 4 running, 8 waiting: 3L outstanding
        let now = stand(&mut l, &mut rng);
        // 12+ outstanding at L = 4 is past 3L: refused, and the waiters stay.
        let q = l.queued();
        assert_eq!(l.admit(now, &mut rng, u64::MAX, D), Admission::RejectQueue);
        assert_eq!(l.last_refusal(), QueueRefusal::Standing);
        assert_eq!(l.queued(), q);
        // A larger limit moves the bound: below 2L = 2 × 8 outstanding waits without chance.
        l.set_limit(8);
        assert_eq!(l.admit(now, &mut rng, u64::MAX, D), Admission::Queue);
        // Drained into the free zone (≤ (2 − 1) × L waiting), it still stands: the factors shed
        // nothing there, and at once past it (ADR 0614). Emptied, it no longer stands.
        while l.queued() > 8 {
            l.leave_queue(D);
        }
        assert_eq!(l.admit(now, &mut rng, u64::MAX, D), Admission::Queue);
        assert!(l.standing());
        while l.queued() > 0 {
            l.leave_queue(D);
        }
        let free = 8 - l.inflight();
        fill(&mut l, &mut rng, now, free);
        assert_eq!(l.admit(now, &mut rng, u64::MAX, D), Admission::Queue);
        assert!(!l.standing());
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
            assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::Run);
        }
        assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::RejectLimit);
        l.set_limit(5);
        assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::Run);
        l.set_limit(1);
        assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::RejectLimit);
        assert_eq!((l.inflight(), l.queued()), (4, 0));
    }

    #[test]
    fn a_higher_level_counts_only_the_waiters_at_or_above_it_against_its_deadline() {
        let mut rng = SplitMix64::new(1);
        let mut l = limiter(10);
        for _ in 0..50 {
            assert_eq!(l.admit(0, &mut rng, u64::MAX, D), Admission::Run);
            l.release(0, Some(&sample(10_000_000)));
        }
        let (low, high) = (Priority::Sheddable.level(3), Priority::Critical.level(3));
        // 10 run; 200 sheddable wait with no deadline: 200 ms of queue ahead at 1 ms each.
        fill(&mut l, &mut rng, 1, 10);
        for _ in 0..200 {
            assert_eq!(l.admit(1, &mut rng, u64::MAX, low), Admission::Queue);
        }
        let budget = 100_000_000;
        assert_eq!(l.admit(1, &mut rng, budget, low), Admission::RejectQueue);
        assert_eq!(l.last_refusal(), QueueRefusal::Deadline);
        // A critical call goes ahead of them all: it waits, 70 of them fit as before.
        let mut waited = 0;
        while l.admit(1, &mut rng, budget, high) == Admission::Queue {
            waited += 1;
        }
        assert_eq!(waited, 70);
        assert_eq!(l.queued_by_class(), [200, 0, 0, 0, 70]);
        assert_eq!(l.highest_waiting(), Some(high));
        // Admission and leaving are per level.
        l.release(2, None);
        assert!(!l.admit_queued(2, D), "nobody waits at the default level");
        assert!(l.admit_queued(2, high));
        assert!(!l.leave_queue(D));
        assert!(l.leave_queue(low));
        assert_eq!(l.queued(), 268);
    }

    #[test]
    fn a_standing_queue_sheds_the_lowest_levels_first() {
        let mut rng = SplitMix64::new(3);
        let mut l = limiter(4);
        let (low, mid, high) = (
            Priority::Sheddable.level(3),
            Priority::Normal.level(3),
            Priority::Critical.level(3),
        );
        fill(&mut l, &mut rng, 0, 4);
        // 4 running, 10 sheddable and 2 critical waiting.
        for i in 0..12 {
            let level = if i < 10 { low } else { high };
            assert_eq!(l.admit(0, &mut rng, u64::MAX, level), Admission::Queue);
        }
        let mut now = 0;
        for _ in 0..3 {
            now += MIN_INTERVAL_NS;
            l.release(now, None);
            assert!(l.admit_queued(now, low));
            let _ = l.admit(now, &mut rng, u64::MAX, low);
        }
        assert!(l.standing());
        // A sheddable call would wait behind all 13+: past maxFactor · L (12), always shed.
        let q = l.queued();
        let shed = |l: &mut Limiter, rng: &mut SplitMix64, level, n| {
            (0..n)
                .filter(|_| match l.admit(now, rng, u64::MAX, level) {
                    Admission::RejectQueue => true,
                    _ => {
                        l.leave_queue(level);
                        false
                    }
                })
                .count()
        };
        assert_eq!(shed(&mut l, &mut rng, low, 100), 100);
        assert_eq!(l.queued(), q);
        // A critical one waits behind 4 running and 2 critical: 1.5 L, inside the free zone.
        assert_eq!(shed(&mut l, &mut rng, high, 100), 0);
        // A normal one behind the same 6: not shed either, its queue does not stand.
        assert_eq!(shed(&mut l, &mut rng, mid, 100), 0);
        // 6 normal calls more: a normal call would wait behind 4 + 8 = 3 L and is always shed,
        // and a critical one still never.
        for _ in 0..6 {
            l.levels.add(mid);
            l.queued += 1;
        }
        let n = shed(&mut l, &mut rng, mid, 1_000);
        assert_eq!(n, 1_000);
        assert_eq!(shed(&mut l, &mut rng, high, 100), 0);
    }

    impl Admission {
        fn is_run_or_queue(self) -> bool {
            matches!(self, Admission::Run | Admission::Queue)
        }
    }
}
