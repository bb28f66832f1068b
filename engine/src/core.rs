//! The engine: a registry of keys, each with its policy set, and the seeded random source.
//! Every call takes `now`; nothing here reads a clock, starts a timer or a thread.

use crate::breaker::BreakerTransition;
use crate::options::{OptionError, PolicyOptions, RegistryOptions};
use crate::policy_set::{Acquired, Costed, KeyStats, PolicySet, StalePermit};
use crate::quota::Costs;
use crate::registry::{KeyHandle, Registry, RegistryError, Resolved, StaleHandle};
use crate::retry::{self, BudgetOptions, Decision, KeyView, RetryBudget, RetryPolicy, Settled};
use crate::rng::SplitMix64;
use crate::{BreakerState, Nanos, Verdict};

#[derive(Debug)]
pub struct Engine {
    registry: Registry,
    rng: SplitMix64,
    budget: BudgetOptions,
    /// Retry budgets by registry slot, each tagged with its key's handle: allocated only for
    /// keys whose calls retry, so a key that never retries costs nothing more (ADR 0901).
    retries: Vec<Option<Box<(KeyHandle, RetryBudget)>>>,
}

impl Engine {
    /// Validates every option; the error names the option and its range.
    pub fn new(
        policies: PolicyOptions,
        registry: RegistryOptions,
        seed: u64,
    ) -> Result<Engine, OptionError> {
        policies.validate()?;
        registry.validate()?;
        Ok(Engine {
            registry: Registry::new(registry, policies),
            rng: SplitMix64::new(seed),
            budget: BudgetOptions::default(),
            retries: Vec::new(),
        })
    }

    /// Sets the per-key retry budget's options (the defaults otherwise).
    pub fn set_retry_budget(&mut self, budget: BudgetOptions) -> Result<(), OptionError> {
        budget.validate()?;
        self.budget = budget;
        Ok(())
    }

    pub fn retry_budget(&self) -> &BudgetOptions {
        &self.budget
    }

    /// Whether `key`'s settled attempt `s` is retried, and after how long (see
    /// [`retry::decide`]); the jitter comes from the engine's random source.
    pub fn retry(
        &mut self,
        key: KeyHandle,
        policy: &RetryPolicy,
        s: &Settled,
        now: Nanos,
    ) -> Result<Decision, StaleHandle> {
        self.retry_unsettled(key, None, policy, s, now)
    }

    /// As [`retry`](Self::retry) for an attempt whose permit is still held (`permit`: an
    /// HTTP response is decided on at its headers and settled at its body's end): the retry
    /// ends, as it would once settled, when `s.verdict` would open the key's breaker (ADR 1224).
    /// `None`, a stale or a settled permit: as `retry`.
    pub fn retry_unsettled(
        &mut self,
        key: KeyHandle,
        permit: Option<u64>,
        policy: &RetryPolicy,
        s: &Settled,
        now: Nanos,
    ) -> Result<Decision, StaleHandle> {
        let ps = self.registry.get(key)?;
        let stats = ps.stats(now);
        let opens = permit.is_some_and(|id| ps.breaker_would_open(id, s.verdict, now));
        let view = KeyView {
            settled: stats.verdicts.iter().sum(),
            estimate_ns: if stats.baseline_ms > 0.0 {
                (stats.baseline_ms * 1e6) as u64
            } else {
                stats.last_latency_ns
            },
            breaker_open: stats.breaker == Some(BreakerState::Open) || opens,
        };
        let u = self.rng.next_f64();
        let budget = self.budget;
        let b = Self::budget_in(&mut self.retries, key, now, view.settled);
        let (registry, rng) = (&mut self.registry, &mut self.rng);
        let throttle = || {
            registry
                .get_mut(key)
                .is_ok_and(|ps| ps.throttle_refuses_retry(now, rng))
        };
        Ok(retry::decide_with(
            policy, b, &budget, s, view, now, u, throttle,
        ))
    }

    /// The next acquire on `key` is a retry its throttle let through when it was decided: it
    /// is not drawn again (ADR 1004). Call it right before that acquire.
    pub fn grant_throttle_pass(&mut self, key: KeyHandle, now: Nanos) -> Result<(), StaleHandle> {
        self.registry.get_mut(key)?.grant_throttle_pass(now);
        Ok(())
    }

    /// As [`settle`](Self::settle), the throttle reading the call as `throttle_sees`
    /// (see `PolicySet::settle_seen`, ADR 1004).
    #[inline]
    pub fn settle_seen(
        &mut self,
        key: KeyHandle,
        permit: u64,
        verdict: Verdict,
        throttle_sees: Verdict,
        now: Nanos,
    ) -> Result<Result<u32, StalePermit>, StaleHandle> {
        Ok(self
            .registry
            .get_mut(key)?
            .settle_seen(permit, verdict, throttle_sees, now))
    }

    /// `key`'s retries granted and refused by its budget, `(0, 0)` for a key that never retried.
    pub fn retry_counts(&self, key: KeyHandle) -> Result<(u64, u64), StaleHandle> {
        self.registry.get(key)?;
        let slot = Registry::slot_of(key);
        Ok(match self.retries.get(slot) {
            Some(Some(b)) if b.0 == key => (b.1.retried, b.1.refused),
            _ => (0, 0),
        })
    }

    /// `retry_counts` by key name; `None` for a key not in the registry.
    pub fn retry_counts_by_name(&self, name: &str) -> Option<(u64, u64)> {
        let h = self.registry.handle(name)?;
        self.retry_counts(h).ok()
    }

    /// The budget of a live `key`, created on first use; a slot's earlier key's is replaced.
    fn budget_in(
        retries: &mut Vec<Option<Box<(KeyHandle, RetryBudget)>>>,
        key: KeyHandle,
        now: Nanos,
        settled: u64,
    ) -> &mut RetryBudget {
        let slot = Registry::slot_of(key);
        if retries.len() <= slot {
            retries.resize_with(slot + 1, || None);
        }
        let e = &mut retries[slot];
        if e.as_ref().is_none_or(|b| b.0 != key) {
            *e = Some(Box::new((key, RetryBudget::new(now, settled))));
        }
        &mut e.as_mut().expect("just set").1
    }

    pub fn resolve(&mut self, key: &str, now: Nanos) -> Result<Resolved, RegistryError> {
        self.registry.resolve(key, now)
    }

    /// Always inline, as `acquire_within`: returned through memory, the result was written
    /// byte-wise and the caller's wider reads of it stalled on store forwarding (ADR 0503).
    #[inline(always)]
    pub fn acquire(&mut self, key: KeyHandle, now: Nanos) -> Result<Acquired, StaleHandle> {
        let rng = &mut self.rng;
        Ok(self.registry.get_mut(key)?.acquire(now, rng))
    }

    /// Acquire for a call with a deadline `budget_ns` from now (see `PolicySet::acquire_within`).
    #[inline(always)]
    pub fn acquire_within(
        &mut self,
        key: KeyHandle,
        now: Nanos,
        budget_ns: u64,
    ) -> Result<Acquired, StaleHandle> {
        let rng = &mut self.rng;
        Ok(self
            .registry
            .get_mut(key)?
            .acquire_within(now, rng, budget_ns))
    }

    /// Admit the oldest waiter of `key` if possible now; `None` when it must keep waiting.
    #[inline]
    pub fn admit_queued(
        &mut self,
        key: KeyHandle,
        now: Nanos,
    ) -> Result<Option<Acquired>, StaleHandle> {
        Ok(self.registry.get_mut(key)?.admit_queued(now))
    }

    /// A waiter gave up (deadline or abort) before running.
    #[inline]
    pub fn leave_queue(&mut self, key: KeyHandle) -> Result<bool, StaleHandle> {
        Ok(self.registry.get_mut(key)?.leave_queue())
    }

    /// Acquire for a call of `level` by `tenant` (see `PolicySet::acquire_at`).
    #[inline]
    pub fn acquire_at(
        &mut self,
        key: KeyHandle,
        now: Nanos,
        budget_ns: u64,
        level: u8,
        tenant: u32,
    ) -> Result<Acquired, StaleHandle> {
        let rng = &mut self.rng;
        Ok(self
            .registry
            .get_mut(key)?
            .acquire_at(now, rng, budget_ns, level, tenant))
    }

    /// Acquire on a key with a quota (see `PolicySet::acquire_costing`).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn acquire_costing(
        &mut self,
        key: KeyHandle,
        now: Nanos,
        budget_ns: u64,
        level: u8,
        tenant: u32,
        costs: &Costs,
        head: bool,
    ) -> Result<Costed, StaleHandle> {
        let rng = &mut self.rng;
        Ok(self
            .registry
            .get_mut(key)?
            .acquire_costing(now, rng, budget_ns, level, tenant, costs, head))
    }

    /// The policies of `key`, for the quota's less frequent operations (adjust, restamp,
    /// leave, observe, stats).
    pub fn policies_mut(&mut self, key: KeyHandle) -> Result<&mut PolicySet, StaleHandle> {
        self.registry.get_mut(key)
    }

    /// The level of a call of `priority` by `tenant` on `key` (see `PolicySet::level_of`).
    pub fn level_of(
        &mut self,
        key: KeyHandle,
        priority: crate::Priority,
        tenant: u32,
        now: Nanos,
    ) -> Result<u8, StaleHandle> {
        Ok(self.registry.get_mut(key)?.level_of(priority, tenant, now))
    }

    /// Admit the oldest waiter of `level` (see `PolicySet::admit_queued_at`).
    #[inline]
    pub fn admit_queued_at(
        &mut self,
        key: KeyHandle,
        now: Nanos,
        level: u8,
        tenant: u32,
    ) -> Result<Option<Acquired>, StaleHandle> {
        Ok(self
            .registry
            .get_mut(key)?
            .admit_queued_at(now, level, tenant))
    }

    /// Admit a waiter whose deadline is `deadline` (see `PolicySet::admit_queued_by`).
    #[inline]
    pub fn admit_queued_by(
        &mut self,
        key: KeyHandle,
        now: Nanos,
        level: u8,
        tenant: u32,
        deadline: Nanos,
    ) -> Result<Option<Acquired>, StaleHandle> {
        Ok(self
            .registry
            .get_mut(key)?
            .admit_queued_by(now, level, tenant, deadline))
    }

    /// A waiter of `level` gave up before running.
    #[inline]
    pub fn leave_queue_at(&mut self, key: KeyHandle, level: u8) -> Result<bool, StaleHandle> {
        Ok(self.registry.get_mut(key)?.leave_queue_at(level))
    }

    /// See [`PolicySet::refuse_late_waiter`].
    pub fn refuse_late_waiter(
        &mut self,
        key: KeyHandle,
        now: Nanos,
        level: u8,
        ahead: u32,
        deadline: Nanos,
    ) -> Result<Option<bool>, StaleHandle> {
        Ok(self
            .registry
            .get_mut(key)?
            .refuse_late_waiter(now, level, ahead, deadline))
    }

    /// The highest level a call waits at on `key`.
    #[inline]
    pub fn highest_waiting(&self, key: KeyHandle) -> Result<Option<u8>, StaleHandle> {
        Ok(self.registry.get(key)?.highest_waiting())
    }

    #[inline]
    pub fn mark(&mut self, key: KeyHandle, permit: u64, now: Nanos) -> Result<bool, StaleHandle> {
        Ok(self.registry.get_mut(key)?.mark(permit, now))
    }

    /// Settle a permit; `Ok(Ok(n))`: n waiters may be admitted now.
    #[inline]
    pub fn settle(
        &mut self,
        key: KeyHandle,
        permit: u64,
        verdict: Verdict,
        now: Nanos,
    ) -> Result<Result<u32, StalePermit>, StaleHandle> {
        Ok(self.registry.get_mut(key)?.settle(permit, verdict, now))
    }

    /// Settle a permit whose fn never settled (see `PolicySet::settle_stuck`).
    pub fn settle_stuck(
        &mut self,
        key: KeyHandle,
        permit: u64,
        verdict: Verdict,
        now: Nanos,
    ) -> Result<Result<u32, StalePermit>, StaleHandle> {
        Ok(self
            .registry
            .get_mut(key)?
            .settle_stuck(permit, verdict, now))
    }

    /// How many waiters of `key` could be admitted now (see [`PolicySet::wakeable`]).
    #[inline]
    pub fn wakeable(&self, key: KeyHandle) -> Result<u32, StaleHandle> {
        Ok(self.registry.get(key)?.wakeable())
    }

    /// The last breaker state change of `key`; compare its `seq` with the last one seen.
    #[inline]
    pub fn breaker_transition(
        &self,
        key: KeyHandle,
    ) -> Result<Option<BreakerTransition>, StaleHandle> {
        Ok(self.registry.get(key)?.breaker_transition())
    }

    /// Why `key`'s queue last refused a call (read after a `'queue'` refusal), and its
    /// `maxQueued`.
    pub fn last_queue_refusal(
        &self,
        key: KeyHandle,
    ) -> Result<(crate::QueueRefusal, u32), StaleHandle> {
        Ok(self.registry.get(key)?.last_queue_refusal())
    }

    pub fn stats(&self, key: KeyHandle, now: Nanos) -> Result<KeyStats, StaleHandle> {
        Ok(self.registry.get(key)?.stats(now))
    }

    pub fn stats_by_name(&self, key: &str, now: Nanos) -> Option<KeyStats> {
        self.registry.find(key).map(|p| p.stats(now))
    }

    /// A key's quota, flat for the binding: `[cost, spent, limit, windowMs]` per budget, the
    /// calls waiting for budget, cooldowns begun, and ns of cooldown left. `None`: no such
    /// key, or no quota.
    pub fn quota_stats_by_name(
        &mut self,
        key: &str,
        now: Nanos,
    ) -> Option<(Vec<f64>, u32, u64, u64)> {
        let q = self.registry.find_mut(key)?.quota_mut()?;
        let budgets = q
            .spent(now)
            .flat_map(|(c, spent, limit, window)| {
                [
                    c as f64,
                    spent as f64,
                    limit as f64,
                    (window / 1_000_000) as f64,
                ]
            })
            .collect();
        Some((budgets, q.waiting(), q.cooldowns(), q.cooling_ns(now)))
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.registry.keys()
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}
