//! A quota shared by a fleet through a store (ADR 1102). The store keeps the fleet's window;
//! each process spends a *lease*, budget the store has already counted, so that the fleet's
//! spend never passes the budget however many processes share it. A lease is spent locally
//! (no store call on a call's path) until it runs out or its time ends; then the calls wait
//! for the next one. While the store cannot be reached, the process falls back to a local
//! share of the budget, or refuses.

use crate::quota_shape::{MAX_DIMS, RING};
use crate::Nanos;

/// How a key's quota decides while it is shared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FleetMode {
    /// The store answers: calls spend the lease.
    Leased,
    /// The store is down: each window holds a local share of its budget.
    Shared,
    /// The store is down and the key refuses rather than guess a share.
    Refusing,
}

/// The lease of a key whose quota a fleet shares.
#[derive(Clone, Debug)]
pub struct Fleet {
    pub(crate) mode: FleetMode,
    /// Budget left in the lease, by dimension.
    pub(crate) left: [u64; MAX_DIMS],
    /// The lease may be spent before this time.
    pub(crate) until: Nanos,
    /// The most a waiting call asked that the lease did not hold, by dimension.
    pub(crate) need: [u64; MAX_DIMS],
    /// The store said the fleet's window has no room before this time.
    pub(crate) ready_at: Nanos,
    /// How long a call waits for a lease before it asks again.
    pub(crate) wait_ns: u64,
    /// When the store was lost (mode `Shared` or `Refusing`).
    pub(crate) down_since: Nanos,
    /// The window's spend the upstream's headers implied, by dimension, since the last lease
    /// (0: none): the store raises the fleet's window to it.
    pub(crate) floors: [u64; MAX_DIMS],
    /// Back from a fallback, the local shares hold until this time as well as the leases:
    /// the store does not know yet what the processes still down spend (ADR 1102).
    pub(crate) shares_until: Nanos,
    /// Room the store's window had left, by dimension, when it last answered (unknown: all).
    pub(crate) room: [u64; MAX_DIMS],
}

impl Fleet {
    pub fn new(wait_ns: u64) -> Self {
        Fleet {
            mode: FleetMode::Leased,
            left: [0; MAX_DIMS],
            until: 0,
            need: [0; MAX_DIMS],
            ready_at: 0,
            wait_ns: wait_ns.max(1),
            down_since: 0,
            floors: [0; MAX_DIMS],
            shares_until: 0,
            room: [u64::MAX; MAX_DIMS],
        }
    }

    /// The window's spend the upstream's headers implied since the last lease, by dimension.
    pub fn floors(&self) -> &[u64; MAX_DIMS] {
        &self.floors
    }

    pub fn mode(&self) -> FleetMode {
        self.mode
    }

    /// Budget left in the lease, by dimension.
    pub fn left(&self) -> &[u64; MAX_DIMS] {
        &self.left
    }

    /// What waiting calls asked that the lease did not hold, by dimension.
    pub fn need(&self) -> &[u64; MAX_DIMS] {
        &self.need
    }

    /// When the store was lost (0: never).
    pub fn down_since(&self) -> Nanos {
        self.down_since
    }

    /// Whether the lease holds `want` (by dimension) at `now`. Records what it lacks.
    pub(crate) fn holds(&mut self, now: Nanos, want: &[u64]) -> bool {
        let fits = now < self.until && want.iter().zip(&self.left).all(|(w, l)| w <= l);
        if !fits {
            for (n, w) in self.need.iter_mut().zip(want) {
                *n = (*n).max(*w);
            }
        }
        fits
    }

    pub(crate) fn spend(&mut self, want: &[u64]) {
        for (l, w) in self.left.iter_mut().zip(want) {
            *l = l.saturating_sub(*w);
        }
    }

    /// When a call that the lease does not hold asks again, within `budget_ns`; `None`: the
    /// fleet's window has no room before its deadline.
    pub(crate) fn retry_at(&self, now: Nanos, budget_ns: u64) -> Option<Nanos> {
        if self.ready_at > now {
            return (self.ready_at - now <= budget_ns).then_some(self.ready_at);
        }
        Some(now.saturating_add(self.wait_ns.min(budget_ns).max(1)))
    }

    /// A new lease of `granted` (by dimension) to spend before `until`; the fleet's window has
    /// no more room before `ready_at`, and `room` left after this lease. Returns what the lease
    /// it replaces left unspent.
    pub fn install(
        &mut self,
        granted: &[u64],
        until: Nanos,
        ready_at: Nanos,
        room: &[u64],
    ) -> [u64; MAX_DIMS] {
        self.room = [u64::MAX; MAX_DIMS];
        for (r, x) in self.room.iter_mut().zip(room) {
            *r = *x;
        }
        let old = self.left;
        self.left = [0; MAX_DIMS];
        for (l, g) in self.left.iter_mut().zip(granted) {
            *l = *g;
        }
        self.until = until;
        self.ready_at = ready_at;
        self.need = [0; MAX_DIMS];
        self.floors = [0; MAX_DIMS];
        self.mode = FleetMode::Leased;
        old
    }

    /// The lease's unspent budget, given back: it leaves the lease.
    pub fn surrender(&mut self) -> [u64; MAX_DIMS] {
        let old = self.left;
        self.left = [0; MAX_DIMS];
        self.until = 0;
        old
    }
}

/// Buckets a charge is kept for, as the quota's windows keep them: re-exported for the store,
/// whose window must free a charge no earlier than the local one.
pub const STORE_RING: u64 = RING;
