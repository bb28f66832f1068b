//! One key's policies, composed in this order, outermost first:
//! breaker → quota → throttle → limiter (+ queue) → bulkhead. The timeout lives in JS.

use crate::breaker::{Breaker, BreakerState, BreakerTransition};
use crate::bulkhead::Bulkhead;
use crate::limiter::Limiter;
use crate::options::{Algorithm, PolicyOptions};
use crate::permit::{PermitSlab, PermitSlot};
use crate::priority::{class_of, Priority, DEFAULT_LEVEL, RANKS};
use crate::queue::Admission;
use crate::quota::{Costs, Quota, QuotaCheck, COSTS};
use crate::rng::SplitMix64;
use crate::tenants::Tenants;
use crate::throttle::Throttle;
use crate::{Nanos, Sample, Verdict};

/// Why our own policy refused a call. The codes are the binding's wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RejectReason {
    Limit = 1,
    Queue = 2,
    Bulkhead = 3,
    Breaker = 4,
    Registry = 5,
    /// The adaptive throttle refused it: the upstream refuses most calls as overloaded (ADR 1000).
    Throttle = 6,
    /// The key's quota has no budget for it before its deadline, or ever (ADR 1100).
    Quota = 7,
}

impl RejectReason {
    pub fn name(self) -> &'static str {
        match self {
            RejectReason::Limit => "limit",
            RejectReason::Queue => "queue",
            RejectReason::Bulkhead => "bulkhead",
            RejectReason::Breaker => "breaker",
            RejectReason::Registry => "registry",
            RejectReason::Throttle => "throttle",
            RejectReason::Quota => "quota",
        }
    }
}

/// The outcome of an acquire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// Run now; settle this permit id exactly once.
    Permit(u64),
    /// Wait: the caller holds the waiter and calls `admit_queued` / `leave_queue`.
    Queued,
    Rejected(RejectReason),
}

/// The outcome of an acquire on a key with a quota.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Costed {
    /// Past the quota (charged), or refused before it: as any acquire.
    Now(Acquired),
    /// Wait for budget until this time, then ask again as the head of the wait.
    Wait(Nanos),
    /// Its cost exceeds a dimension's whole budget: refused, it can never fit.
    Oversize,
}

/// A settle that named no live permit: stale, double, or never issued. Accounting is untouched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StalePermit;

/// Everything `stats()` reports for one key.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyStats {
    /// The concurrency limit in force (`u32::MAX` when the limiter is off).
    pub limit: u32,
    /// Calls holding a permit: admitted and not yet settled.
    pub inflight: u32,
    /// Calls waiting in the queue.
    pub queued: u32,
    pub breaker: Option<BreakerState>,
    pub algorithm: Option<Algorithm>,
    pub baseline_ms: f64,
    pub smoothed_ms: f64,
    pub window_samples: u32,
    pub bulkhead_active: u32,
    /// Settled calls by verdict, indexed by `Verdict as usize`.
    pub verdicts: [u64; 7],
    /// Refused calls by reason, indexed by `RejectReason as usize` (index 0 unused).
    pub rejections: [u64; 8],
    /// The latency of the last observed call (start → mark, or start → settle), ns.
    pub last_latency_ns: u64,
    /// Calls released as stuck: their fn had not settled long after the caller's answer.
    pub stuck: u64,
    /// Calls waiting, by priority class (`Priority as usize`).
    pub queued_by_priority: [u32; 5],
    /// `'queue'` refusals, by the refused call's priority class.
    pub queue_refusals_by_priority: [u64; 5],
    /// Tenants whose usage the key tracks now.
    pub tenants: u32,
    /// The throttle's refusal probability now: 0 when off or while its window holds no overload.
    pub throttle_probability: f64,
}

#[derive(Clone, Debug)]
pub struct PolicySet {
    breaker: Option<Breaker>,
    limiter: Option<Limiter>,
    bulkhead: Option<Bulkhead>,
    throttle: Throttle,
    /// Boxed: a key without a quota pays one pointer (ADR 1100).
    quota: Option<Box<Quota>>,
    algorithm: Option<Algorithm>,
    permits: PermitSlab,
    verdicts: [u64; 7],
    rejections: [u64; 8],
    last_latency_ns: u64,
    stuck: u64,
    /// `'queue'` refusals by priority class (ADR 1001).
    queue_refusals_by_priority: [u64; 5],
    /// Slot time by tenant, for calls that name one (ADR 1002).
    tenants: Tenants,
    /// When a call last settled here (creation time before any): how fresh its state is.
    last_active: Nanos,
}

impl PolicySet {
    pub fn new(opts: &PolicyOptions, now: Nanos) -> Self {
        PolicySet {
            breaker: opts.breaker.as_ref().map(Breaker::new),
            limiter: opts.limiter.as_ref().map(|l| Limiter::new(l, now)),
            bulkhead: opts.bulkhead.as_ref().map(Bulkhead::new),
            throttle: Throttle::new(opts.throttle.as_ref()),
            quota: opts.quota.as_ref().map(|q| Box::new(Quota::new(q, now))),
            algorithm: opts.limiter.map(|l| l.algorithm),
            permits: PermitSlab::default(),
            verdicts: [0; 7],
            rejections: [0; 8],
            last_latency_ns: 0,
            stuck: 0,
            queue_refusals_by_priority: [0; 5],
            tenants: Tenants::default(),
            last_active: now,
        }
    }

    /// Acquire for a new call.
    #[inline(always)]
    pub fn acquire(&mut self, now: Nanos, rng: &mut SplitMix64) -> Acquired {
        self.acquire_within(now, rng, u64::MAX)
    }

    /// Acquire for a call that will wait at most `budget_ns` (its deadline): one that could
    /// not leave the queue in time is refused with `Queue` at once.
    /// Always inline, down to `enter`: see `Engine::acquire` (ADR 0503).
    #[inline(always)]
    pub fn acquire_within(&mut self, now: Nanos, rng: &mut SplitMix64, budget_ns: u64) -> Acquired {
        self.acquire_at(now, rng, budget_ns, DEFAULT_LEVEL, 0)
    }

    /// As [`acquire_within`](Self::acquire_within) for a call of `level` (see
    /// [`level_of`](Self::level_of)) by tenant `tenant` (`tenants::tenant_id`; 0: none). A
    /// queued call is admitted with [`admit_queued_at`](Self::admit_queued_at) at its level.
    #[inline(always)]
    pub fn acquire_at(
        &mut self,
        now: Nanos,
        rng: &mut SplitMix64,
        budget_ns: u64,
        level: u8,
        tenant: u32,
    ) -> Acquired {
        let a = self.acquire_inner(now, rng, budget_ns, level, tenant);
        if let Acquired::Rejected(r) = a {
            self.rejections[r as usize] += 1;
            if r == RejectReason::Queue {
                self.queue_refusals_by_priority[class_of(level) as usize] += 1;
            }
        }
        a
    }

    /// Acquire on a key with a quota for a call that costs `costs`, as
    /// [`acquire_at`](Self::acquire_at) past the quota. `head`: the next call waiting for
    /// budget asks again (it leaves the wait unless told to wait more); a new call waits
    /// behind the waiters at its level or above, as in the limiter's queue (ADR 1108). A call refused past the quota is refunded. A key without a quota
    /// acquires as `acquire_at`.
    #[allow(clippy::too_many_arguments)]
    pub fn acquire_costing(
        &mut self,
        now: Nanos,
        rng: &mut SplitMix64,
        budget_ns: u64,
        level: u8,
        tenant: u32,
        costs: &Costs,
        head: bool,
    ) -> Costed {
        let Some(q) = &mut self.quota else {
            return Costed::Now(self.acquire_at(now, rng, budget_ns, level, tenant));
        };
        // Breaker first: an open breaker refuses without waiting for budget.
        if self
            .breaker
            .as_ref()
            .is_some_and(|b| b.state(now) == BreakerState::Open)
        {
            if head {
                q.dequeue_at(level, costs);
            }
            self.throttle.drop_pass();
            self.rejections[RejectReason::Breaker as usize] += 1;
            return Costed::Now(Acquired::Rejected(RejectReason::Breaker));
        }
        // A call waits for budget only while it would still have its usual running time left,
        // with the limiter queue's margin: one admitted with less times out after all (ADR 1102).
        let run = self.limiter.as_ref().map_or(0, |l| l.expected_run_ns());
        let wait_budget = if budget_ns == u64::MAX {
            budget_ns
        } else {
            ((budget_ns as f64 * crate::limiter::DEADLINE_SHARE) as u64).saturating_sub(run)
        };
        match q.check_at(now, costs, wait_budget, head, level) {
            QuotaCheck::Take => {}
            QuotaCheck::Wait(t) => {
                if !head {
                    q.enqueue_at(level, costs);
                }
                self.throttle.drop_pass();
                return Costed::Wait(t);
            }
            QuotaCheck::Refuse | QuotaCheck::Oversize => {
                if head {
                    q.dequeue_at(level, costs);
                }
                self.throttle.drop_pass();
                self.rejections[RejectReason::Quota as usize] += 1;
                return if q.check(now, costs, u64::MAX, true) == QuotaCheck::Oversize {
                    Costed::Oversize
                } else {
                    Costed::Now(Acquired::Rejected(RejectReason::Quota))
                };
            }
        }
        if head {
            q.dequeue_at(level, costs);
        }
        q.take(now, costs);
        let a = self.acquire_at(now, rng, budget_ns, level, tenant);
        match a {
            Acquired::Rejected(_) => self.quota_refund(now, now, costs),
            // It waited for budget: a deadline it then runs out of was spent with us too
            // (the breaker's rule for calls that waited in the queue, ADR 0114).
            Acquired::Permit(id) if head => {
                if let Some(slot) = self.permits.get_mut(id) {
                    slot.waited = true;
                }
            }
            _ => {}
        }
        Costed::Now(a)
    }

    /// Refunds a call charged `costs` at `at` that was refused or left before running.
    pub fn quota_refund(&mut self, now: Nanos, at: Nanos, costs: &Costs) {
        let mut d = [0i64; COSTS];
        for (d, c) in d.iter_mut().zip(costs) {
            *d = -((*c).min(i64::MAX as u64) as i64);
        }
        self.quota_adjust(now, at, &d);
    }

    /// Settles the real usage of a call charged at `at`: `deltas` is usage less charge.
    pub fn quota_adjust(&mut self, now: Nanos, at: Nanos, deltas: &[i64; COSTS]) {
        if let Some(q) = &mut self.quota {
            q.adjust(now, at, deltas);
        }
    }

    /// A call charged `costs` at `at` waited in the limiter's queue and starts now: its charge
    /// moves to now, when the upstream will count it.
    pub fn quota_restamp(&mut self, now: Nanos, at: Nanos, costs: &Costs) {
        if let Some(q) = &mut self.quota {
            let mut d = [0i64; COSTS];
            for (d, c) in d.iter_mut().zip(costs) {
                *d = -((*c).min(i64::MAX as u64) as i64);
            }
            q.adjust(now, at, &d);
            for (d, c) in d.iter_mut().zip(costs) {
                *d = (*c).min(i64::MAX as u64) as i64;
            }
            q.adjust(now, now, &d);
        }
    }

    /// A call of `level` waiting for budget gave up. `false` when none waited there.
    pub fn quota_leave(&mut self, level: u8, costs: &Costs) -> bool {
        self.quota
            .as_mut()
            .is_some_and(|q| q.dequeue_at(level, costs))
    }

    /// The quota, if the key has one.
    pub fn quota(&self) -> Option<&Quota> {
        self.quota.as_deref()
    }

    /// The quota, if the key has one, to read headers into or report.
    pub fn quota_mut(&mut self) -> Option<&mut Quota> {
        self.quota.as_deref_mut()
    }

    /// The level of a call of `priority` by `tenant` (0: none): its class, ranked by the
    /// tenant's recent usage of this key (ADR 1002). Starts tracking a new tenant.
    pub fn level_of(&mut self, priority: Priority, tenant: u32, now: Nanos) -> u8 {
        if tenant == 0 {
            return priority.level(RANKS - 1);
        }
        priority.level(self.tenants.rank(tenant, now))
    }

    #[inline(always)]
    fn acquire_inner(
        &mut self,
        now: Nanos,
        rng: &mut SplitMix64,
        budget_ns: u64,
        level: u8,
        tenant: u32,
    ) -> Acquired {
        let probe = match &mut self.breaker {
            Some(b) => match b.try_acquire(now) {
                Some(p) => p,
                None => {
                    self.throttle.drop_pass();
                    return Acquired::Rejected(RejectReason::Breaker);
                }
            },
            None => 0,
        };
        // One comparison while the key's window holds no overload (ADR 1000).
        if self.throttle.engaged(now) && self.throttle.refuse(now, rng) {
            return self.refuse(probe, RejectReason::Throttle, false);
        }
        if let Some(l) = &mut self.limiter {
            match l.admit(now, rng, budget_ns, level) {
                Admission::Run => {}
                Admission::Queue => {
                    // The probe place is taken again when the waiter is admitted.
                    self.give_back_probe(probe);
                    return Acquired::Queued;
                }
                Admission::RejectLimit => return self.refuse(probe, RejectReason::Limit, false),
                Admission::RejectQueue => return self.refuse(probe, RejectReason::Queue, false),
            }
        }
        self.enter(now, probe, tenant)
    }

    /// Admit the oldest waiter of the highest level waiting, if the limit allows it now (for
    /// callers whose waiters name no tenant).
    #[inline]
    pub fn admit_queued(&mut self, now: Nanos) -> Option<Acquired> {
        let level = self.highest_waiting()?;
        self.admit_queued_at(now, level, 0)
    }

    /// Admit the oldest waiter of `level`, by `tenant`, if the limit allows it now. The caller
    /// keeps its waiters in FIFOs by level and admits from the highest first
    /// ([`highest_waiting`](Self::highest_waiting)). The breaker is asked again: a call it
    /// would refuse now never reaches the upstream (and leaves the queue).
    #[inline]
    pub fn admit_queued_at(&mut self, now: Nanos, level: u8, tenant: u32) -> Option<Acquired> {
        self.admit_queued_by(now, level, tenant, 0)
    }

    /// As [`admit_queued_at`](Self::admit_queued_at) for a waiter whose deadline is `deadline`
    /// (engine clock; 0: none). Where calls hold their slot mostly past their first byte
    /// (streams), a waiter that would be admitted now with less deadline left than a slot is
    /// held is refused with `Queue` (cause `Turn`) and leaves the queue (ADR 0118).
    #[inline]
    pub fn admit_queued_by(
        &mut self,
        now: Nanos,
        level: u8,
        tenant: u32,
        deadline: Nanos,
    ) -> Option<Acquired> {
        if deadline != 0 {
            if let Some(l) = &mut self.limiter {
                if l.refuses_to_start(now, deadline) {
                    l.leave_queue(level);
                    self.rejections[RejectReason::Queue as usize] += 1;
                    self.queue_refusals_by_priority[class_of(level) as usize] += 1;
                    return Some(Acquired::Rejected(RejectReason::Queue));
                }
            }
        }
        let a = self.admit_queued_inner(now, level, tenant);
        if let Some(Acquired::Rejected(r)) = a {
            self.rejections[r as usize] += 1;
        }
        a
    }

    /// A waiter of `level` with `ahead` waiters ahead of it and `deadline` (engine clock; 0:
    /// none): refused now, and out of the queue, when the key's latency says it cannot leave
    /// the queue in time (the deadline rule, ADR 0615). `None` until a call that waited settled.
    pub fn refuse_late_waiter(
        &mut self,
        now: Nanos,
        level: u8,
        ahead: u32,
        deadline: Nanos,
    ) -> Option<bool> {
        let limiter = self.limiter.as_mut()?;
        let left = if deadline == 0 {
            u64::MAX
        } else {
            deadline.saturating_sub(now)
        };
        if !limiter.waiter_misses(ahead, left)? || !limiter.refuse_waiter(level) {
            return Some(false);
        }
        self.rejections[RejectReason::Queue as usize] += 1;
        self.queue_refusals_by_priority[class_of(level) as usize] += 1;
        Some(true)
    }

    /// The highest level a call waits at (`None`: nobody waits).
    #[inline]
    pub fn highest_waiting(&self) -> Option<u8> {
        self.limiter.as_ref().and_then(|l| l.highest_waiting())
    }

    #[inline]
    fn admit_queued_inner(&mut self, now: Nanos, level: u8, tenant: u32) -> Option<Acquired> {
        let limiter = self.limiter.as_mut()?;
        if limiter.queued() == 0 {
            return None;
        }
        let probe = match &mut self.breaker {
            Some(b) => match b.try_acquire(now) {
                Some(p) => p,
                None => {
                    limiter.leave_queue(level);
                    return Some(Acquired::Rejected(RejectReason::Breaker));
                }
            },
            None => 0,
        };
        if !limiter.admit_queued(now, level) {
            self.give_back_probe(probe);
            return None;
        }
        let a = self.enter(now, probe, tenant);
        if let Acquired::Permit(id) = a {
            if let Some(slot) = self.permits.get_mut(id) {
                slot.waited = true;
            }
        }
        Some(a)
    }

    /// A waiter that named no priority left the queue without running. `false` when nobody
    /// was queued.
    #[inline]
    pub fn leave_queue(&mut self) -> bool {
        self.leave_queue_at(DEFAULT_LEVEL)
    }

    /// A waiter of `level` left the queue without running. `false` when none waited there.
    #[inline]
    pub fn leave_queue_at(&mut self, level: u8) -> bool {
        self.limiter.as_mut().is_some_and(|l| l.leave_queue(level))
    }

    /// Past the limiter: the bulkhead, then a permit. Always inline: returned from a call, the
    /// `Acquired` went through the stack and was copied on byte by byte, and reading it back
    /// stalled on store forwarding (perf, ADR 0503).
    #[inline(always)]
    fn enter(&mut self, now: Nanos, probe: u32, tenant: u32) -> Acquired {
        if let Some(b) = &mut self.bulkhead {
            if !b.try_acquire() {
                return self.refuse(probe, RejectReason::Bulkhead, true);
            }
        }
        let inflight = match &self.limiter {
            Some(l) => l.inflight(),
            None => self.permits.live() + 1,
        };
        match self.permits.alloc_probe(now, inflight, probe) {
            Some(id) => {
                if tenant != 0 {
                    if let Some(slot) = self.permits.get_mut(id) {
                        slot.tenant = tenant;
                    }
                }
                Acquired::Permit(id)
            }
            None => {
                if let Some(b) = &mut self.bulkhead {
                    b.release();
                }
                self.refuse(probe, RejectReason::Limit, true)
            }
        }
    }

    /// Undo what the outer policies granted to a call refused further in.
    fn refuse(&mut self, probe: u32, reason: RejectReason, limiter_admitted: bool) -> Acquired {
        if limiter_admitted {
            if let Some(l) = &mut self.limiter {
                l.release(0, None);
            }
        }
        self.give_back_probe(probe);
        Acquired::Rejected(reason)
    }

    fn give_back_probe(&mut self, probe: u32) {
        if probe != 0 {
            if let Some(b) = &mut self.breaker {
                b.release_probe(probe);
            }
        }
    }

    /// Record the first `mark()` of a live permit. `false` when the permit is not live.
    #[inline]
    pub fn mark(&mut self, id: u64, now: Nanos) -> bool {
        match self.permits.get_mut(id) {
            Some(slot) => {
                if slot.mark == 0 {
                    slot.mark = now.max(slot.start);
                }
                true
            }
            None => false,
        }
    }

    /// Whether settling the live permit `id` with `verdict` at `now` would open the breaker
    /// (a copy of it is told; nothing changes). False for a stale permit or no breaker.
    pub fn breaker_would_open(&self, id: u64, verdict: Verdict, now: Nanos) -> bool {
        let (Some(b), Some(slot)) = (&self.breaker, self.permits.get(id)) else {
            return false;
        };
        let end = now.max(slot.start);
        if b.state(end) == BreakerState::Open {
            return false;
        }
        let duration_ns = end - slot.start;
        let latency_ns = if slot.mark != 0 {
            slot.mark - slot.start
        } else {
            duration_ns
        };
        let (seen, latency_ns) = breaker_reads(
            b,
            sized(&self.limiter),
            slot,
            verdict,
            duration_ns,
            latency_ns,
        );
        let mut copy = b.clone();
        copy.on_result(end, seen, latency_ns, slot.probe_cycle);
        copy.state(end) == BreakerState::Open
    }

    /// Settle a permit with its verdict. Returns how many waiters may be admitted now.
    #[inline]
    pub fn settle(&mut self, id: u64, verdict: Verdict, now: Nanos) -> Result<u32, StalePermit> {
        self.settle_seen(id, verdict, verdict, now)
    }

    /// As [`settle`](Self::settle), the throttle reading the call as `throttle_sees`: an
    /// `Overload` that asked no wait (a 503 without `Retry-After`) is no refusal, and the
    /// throttle reads it as the `Failure` it is to the throttle (ADR 1004).
    #[inline]
    pub fn settle_seen(
        &mut self,
        id: u64,
        verdict: Verdict,
        throttle_sees: Verdict,
        now: Nanos,
    ) -> Result<u32, StalePermit> {
        let slot = self.permits.release(id).ok_or(StalePermit)?;
        // A clock that went backwards yields 0, never a wrapped-around huge latency.
        let end = now.max(slot.start);
        self.last_active = end;
        let duration_ns = end - slot.start;
        let latency_ns = if slot.mark != 0 {
            slot.mark - slot.start
        } else {
            duration_ns
        };
        self.verdicts[verdict as usize] += 1;
        self.throttle.on_settle(end, throttle_sees);
        if !verdict.is_ignored() {
            self.last_latency_ns = latency_ns;
        }
        if let Some(b) = &mut self.breaker {
            let (seen, latency_ns) = breaker_reads(
                b,
                sized(&self.limiter),
                &slot,
                verdict,
                duration_ns,
                latency_ns,
            );
            b.on_result(end, seen, latency_ns, slot.probe_cycle);
        }
        if let Some(b) = &mut self.bulkhead {
            b.release();
        }
        if slot.tenant != 0 {
            self.tenants.charge(slot.tenant, duration_ns, end);
        }
        match &mut self.limiter {
            Some(l) => {
                let sample = Sample {
                    latency_ns,
                    duration_ns,
                    inflight: slot.inflight,
                    verdict,
                    waited: slot.waited,
                    late: slot.late,
                };
                if !verdict.is_ignored() {
                    if let Some(after) = l.late_after(end, &sample) {
                        let late = self.permits.count_late(end.saturating_sub(after));
                        l.note_late(late, end, after);
                    }
                }
                l.release(end, (!verdict.is_ignored()).then_some(&sample));
                Ok(l.wakeable())
            }
            None => Ok(0),
        }
    }

    /// Settle a call whose fn never settled, long after its caller was answered (ADR 0602):
    /// as [`settle`](Self::settle), and counted as stuck.
    pub fn settle_stuck(
        &mut self,
        id: u64,
        verdict: Verdict,
        now: Nanos,
    ) -> Result<u32, StalePermit> {
        let n = self.settle(id, verdict, now)?;
        self.stuck += 1;
        Ok(n)
    }

    /// When a call last settled on this key (its creation time before the first).
    #[inline]
    pub fn last_active(&self) -> Nanos {
        self.last_active
    }

    /// How many waiters could be admitted right now (0 without a limiter). The binding asks
    /// after an acquire that queued: a limit that grew on that acquire admits waiters at once.
    #[inline]
    pub fn wakeable(&self) -> u32 {
        self.limiter.as_ref().map_or(0, |l| l.wakeable())
    }

    /// The breaker's last state change (`None`: no breaker, or no change yet). O(1): poll its
    /// `seq` after acquire / admit_queued / settle to emit state-change events.
    #[inline]
    pub fn breaker_transition(&self) -> Option<BreakerTransition> {
        self.breaker.as_ref().and_then(|b| b.last_transition())
    }

    /// The breaker, if on (read-only: window counts, probes, options).
    pub fn breaker(&self) -> Option<&Breaker> {
        self.breaker.as_ref()
    }

    /// The throttle's refusal probability at `now` (0 when off or while its window holds no
    /// overload), and its window's `(requests, accepts)`.
    pub fn throttle_state(&self, now: Nanos) -> (f64, (u64, u64)) {
        (self.throttle.probability(now), self.throttle.counts(now))
    }

    /// Decides a retry before its wait (ADR 1004): `true` when the throttle refuses it, counted
    /// as a throttle refusal.
    pub fn throttle_refuses_retry(&mut self, now: Nanos, rng: &mut SplitMix64) -> bool {
        let refused = self.throttle.refuse_retry(now, rng);
        if refused {
            self.rejections[RejectReason::Throttle as usize] += 1;
        }
        refused
    }

    /// The next acquire is a retry the throttle let through when it was decided: it is not
    /// drawn again (ADR 1004).
    pub fn grant_throttle_pass(&mut self, now: Nanos) {
        self.throttle.grant_pass(now);
    }

    /// The limiter, if on (read-only).
    pub fn limiter(&self) -> Option<&Limiter> {
        self.limiter.as_ref()
    }

    /// Why the key's queue last refused a call (`Standing` before any refusal, or without a
    /// limiter), with the key's `maxQueued`.
    pub fn last_queue_refusal(&self) -> (crate::QueueRefusal, u32) {
        self.limiter
            .as_ref()
            .map_or((crate::QueueRefusal::Standing, 0), |l| {
                (l.last_refusal(), l.max_queued())
            })
    }

    /// Nothing in flight and nobody waiting: the registry may evict this key.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.permits.live() == 0
            && self.limiter.as_ref().is_none_or(|l| l.queued() == 0)
            && self.quota.as_ref().is_none_or(|q| q.waiting() == 0)
    }

    /// The quota still counts charges at `now`: forgetting the key would forget them.
    pub fn quota_holds(&self, now: Nanos) -> bool {
        self.quota.as_ref().is_some_and(|q| q.holds(now))
    }

    pub fn stats(&self, now: Nanos) -> KeyStats {
        let ls = self
            .limiter
            .as_ref()
            .map(|l| l.limit_stats())
            .unwrap_or_default();
        KeyStats {
            limit: self.limiter.as_ref().map_or(u32::MAX, |l| l.limit()),
            inflight: self.permits.live(),
            queued: self.limiter.as_ref().map_or(0, |l| l.queued()),
            breaker: self.breaker.as_ref().map(|b| b.state(now)),
            algorithm: self.algorithm,
            baseline_ms: ls.baseline_ms,
            smoothed_ms: ls.smoothed_ms,
            window_samples: ls.window_samples,
            bulkhead_active: self.bulkhead.as_ref().map_or(0, |b| b.active()),
            verdicts: self.verdicts,
            rejections: self.rejections,
            last_latency_ns: self.last_latency_ns,
            stuck: self.stuck,
            queued_by_priority: self
                .limiter
                .as_ref()
                .map_or([0; 5], |l| l.queued_by_class()),
            queue_refusals_by_priority: self.queue_refusals_by_priority,
            tenants: self.tenants.len() as u32,
            throttle_probability: self.throttle.probability(now),
        }
    }

    /// Approximate heap bytes this key holds beyond its inline size.
    pub fn heap_bytes(&self) -> usize {
        self.permits.heap_bytes()
            + self.tenants.heap_bytes()
            + self.throttle.heap_bytes()
            + self.quota.as_ref().map_or(0, |q| q.heap_bytes())
    }
}

/// What the breaker `b` reads of a call that ends with `verdict` after `duration_ns` (its first
/// byte after `latency_ns`): the verdict it counts and the latency it judges slow or not.
/// `sized`: the key's limit has been learnt from a window, or is not adaptive.
fn breaker_reads(
    b: &Breaker,
    sized: bool,
    slot: &PermitSlot,
    verdict: Verdict,
    duration_ns: u64,
    latency_ns: u64,
) -> (Verdict, u64) {
    // A call that waited in our own queue and then ran out of deadline after its response had
    // started, or before the upstream could even be slow, spent its deadline with us: no
    // evidence against the upstream (ADR 0114).
    let ours = verdict == Verdict::Timeout
        && slot.waited
        && (slot.mark != 0 || duration_ns < b.slow_call_ns());
    // Before the limit has been learnt from one window, a slow call may only have queued at the
    // upstream behind our own first burst (streams queued for a generation slot): no evidence
    // of a slow upstream (ADR 0116). Nor is such a call that ran out of deadline while counted
    // queued there (ADR 1222).
    let queued_there = verdict == Verdict::Timeout && slot.late && slot.mark == 0 && !sized;
    let seen = if ours || queued_there {
        Verdict::Cancelled
    } else {
        verdict
    };
    let latency_ns = if sized {
        latency_ns
    } else {
        latency_ns.min(b.slow_call_ns().saturating_sub(1))
    };
    (seen, latency_ns)
}

/// Whether the limiter's limit has been learnt from a window (always, with no limiter or a
/// fixed one): before, the breaker discounts slow calls (ADR 0116).
#[inline]
fn sized(limiter: &Option<Limiter>) -> bool {
    limiter.as_ref().is_none_or(|l| l.algorithm().sized())
}
