//! The engine: a registry of keys, each with its policy set, and the seeded random source.
//! Every call takes `now`; nothing here reads a clock, starts a timer or a thread.

use crate::breaker::BreakerTransition;
use crate::options::{OptionError, PolicyOptions, RegistryOptions};
use crate::policy_set::{Acquired, KeyStats, StalePermit};
use crate::registry::{KeyHandle, Registry, RegistryError, Resolved, StaleHandle};
use crate::rng::SplitMix64;
use crate::{Nanos, Verdict};

#[derive(Debug)]
pub struct Engine {
    registry: Registry,
    rng: SplitMix64,
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
        })
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

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.registry.keys()
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}
