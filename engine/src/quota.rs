//! Quotas (ADR 1100): budgets per window that an upstream enforces, such as requests and tokens
//! per minute. A call is charged its cost up front and settles its real usage later; a call
//! that does not fit waits for budget within its deadline, or is refused at once when it
//! cannot fit in time, or ever.
//!
//! Each dimension keeps a sliding window in buckets ([`SlidingWindow`]). The window frees a
//! charge only once the upstream's own window has surely dropped it, so that a client alone on
//! its quota never meets a refusal from an upstream that counts a sliding log (ADR 1100).
//! Readings of the upstream's rate-limit headers tighten the budget for a while
//! ([`Cap`]); a refusal with a retry hint cools the whole key down once (ADR 1101).

use crate::option_error::{OptionError, MAX_MS};
use crate::priority::{ByLevel, Waiters, DEFAULT_LEVEL};
use crate::quota_fleet::{Fleet, FleetMode};
use crate::quota_headers::{Dimension, Reading};
use crate::{Nanos, NANOS_PER_MS};

/// The window of a budget that names none: a minute, as OpenAI, Anthropic and Mistral count.
pub const DEFAULT_WINDOW_MS: u64 = 60_000;
/// Distinct costs a key's quota charges: one number per call for each (`requests`, `tokens`…).
pub const COSTS: usize = 4;
use crate::quota_shape::RING;
pub use crate::quota_shape::{BUCKETS, MAX_DIMS};
/// The least time a charge is held past its window, however short the window: a request can
/// reach the upstream this much later than it was charged (ADR 1103). 100 ms, a guess (ADR
/// 1103 has half and twice it).
pub const LATE_ARRIVAL_MS: u64 = 100;

/// A window's bucket: its length / [`BUCKETS`], or longer for a window under 6 s, so that a
/// charge is held at least `max(bucket, LATE_ARRIVAL_MS)` past its window (ADR 1103).
pub fn bucket_ns(window_ns: u64) -> u64 {
    let late = (window_ns / BUCKETS).max(LATE_ARRIVAL_MS * NANOS_PER_MS);
    ((window_ns + late) / (RING - 1)).max(1)
}
/// How long a key cools down after a refusal that names no wait: one second, a guess (the
/// shortest `retry-after` the families send; half and twice it in ADR 1101).
pub const DEFAULT_COOLDOWN_NS: u64 = 1_000_000_000;
/// The longest an upstream's hint (`retry-after`, a reset) holds a key back: a minute, the
/// longest `retry-after` openai-node honours and the window the LLM APIs count (ADR 1104 has
/// half and twice it). Past it, a call goes and asks the upstream again.
pub const DEFAULT_MAX_COOLDOWN_MS: u64 = 60_000;

/// One number per cost, indexed as the key's quota names them.
pub type Costs = [u64; COSTS];

/// Calls waiting for budget at one level: how many, and what they cost together.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Queued {
    pub calls: u32,
    pub costs: Costs,
}

impl Queued {
    /// One call of `costs`.
    pub fn one(costs: &Costs) -> Self {
        Queued {
            calls: 1,
            costs: *costs,
        }
    }
}

impl Waiters for Queued {
    fn join(&mut self, other: &Self) {
        self.calls += other.calls;
        for (q, c) in self.costs.iter_mut().zip(&other.costs) {
            *q = q.saturating_add(*c);
        }
    }
    fn leave(&mut self, other: &Self) -> bool {
        if self.calls < other.calls {
            return false;
        }
        self.calls -= other.calls;
        for (q, c) in self.costs.iter_mut().zip(&other.costs) {
            *q = q.saturating_sub(*c);
        }
        if self.calls == 0 {
            self.costs = [0; COSTS];
        }
        true
    }
    fn count(&self) -> u32 {
        self.calls
    }
}

/// One dimension: what it charges, how much per window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct QuotaDim {
    /// Which cost it charges (an index into [`Costs`]).
    pub cost: u8,
    /// The budget per window.
    pub limit: u64,
    pub window_ns: u64,
}

/// A key's quota: up to [`MAX_DIMS`] dimensions over up to [`COSTS`] costs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuotaOptions {
    pub dims: [QuotaDim; MAX_DIMS],
    pub len: u8,
    /// Which header family dimension each cost is (`None`: a cost no header names).
    pub names: [Option<Dimension>; COSTS],
    /// The longest a hint from the upstream cools the key down or holds a reading (ADR 1104).
    pub max_cooldown_ns: u64,
}

impl Default for QuotaOptions {
    fn default() -> Self {
        QuotaOptions {
            dims: [QuotaDim::default(); MAX_DIMS],
            len: 0,
            names: [None; COSTS],
            max_cooldown_ns: DEFAULT_MAX_COOLDOWN_MS * NANOS_PER_MS,
        }
    }
}

/// The largest budget per window: 2^53, what a JS number holds exactly.
pub const MAX_LIMIT: u64 = 1 << 53;

impl QuotaOptions {
    pub fn dims(&self) -> &[QuotaDim] {
        &self.dims[..self.len as usize]
    }

    pub fn validate(&self) -> Result<(), OptionError> {
        let bad = |message: String| {
            Err(OptionError {
                option: "quota",
                message,
            })
        };
        if self.len == 0 || self.len as usize > MAX_DIMS {
            return bad(format!(
                "quota must have from 1 to {MAX_DIMS} budgets, got {}",
                self.len
            ));
        }
        let ms = self.max_cooldown_ns / NANOS_PER_MS;
        if !self.max_cooldown_ns.is_multiple_of(NANOS_PER_MS) || !(1..=MAX_MS).contains(&ms) {
            return bad(format!(
                "quota.maxCooldownMs must be an integer from 1 to {MAX_MS}, got {}",
                self.max_cooldown_ns as f64 / NANOS_PER_MS as f64
            ));
        }
        for d in self.dims() {
            if d.cost as usize >= COSTS {
                return bad(format!(
                    "quota may charge at most {COSTS} different costs per call"
                ));
            }
            if d.limit == 0 || d.limit > MAX_LIMIT {
                return bad(format!(
                    "a quota budget must be an integer from 1 to {MAX_LIMIT}, got {}",
                    d.limit
                ));
            }
            let ms = d.window_ns / NANOS_PER_MS;
            if d.window_ns % NANOS_PER_MS != 0 || !(1..=MAX_MS).contains(&ms) {
                return bad(format!(
                    "quota.windowMs must be an integer from 1 to {MAX_MS}, got {}",
                    d.window_ns as f64 / NANOS_PER_MS as f64
                ));
            }
        }
        Ok(())
    }
}

/// What a quota answers for a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuotaCheck {
    /// It fits now: charge it ([`Quota::take`]).
    Take,
    /// It fits by this time, within its deadline, if nothing else is charged meanwhile.
    Wait(Nanos),
    /// It cannot fit within its deadline.
    Refuse,
    /// Its cost exceeds a dimension's whole budget: it can never fit.
    Oversize,
}

/// The budget spent in the last window, in [`BUCKETS`] buckets: the quota's state behind the
/// four operations a shared store must offer too (spent, charge, adjust, free_at; ADR 1100).
#[derive(Clone, Debug)]
pub struct SlidingWindow {
    limit: u64,
    window_ns: u64,
    bucket_ns: u64,
    buckets: Box<[u64; RING as usize]>,
    /// The bucket epoch (`now / bucket_ns`) of the newest bucket.
    head: u64,
    spent: u64,
    /// A smaller budget this process keeps to while a fleet's store is down (ADR 1102).
    share: Option<u64>,
}

impl SlidingWindow {
    pub fn new(limit: u64, window_ns: u64, now: Nanos) -> Self {
        let bucket_ns = bucket_ns(window_ns);
        SlidingWindow {
            limit,
            window_ns,
            bucket_ns,
            buckets: Box::new([0; RING as usize]),
            head: now / bucket_ns,
            spent: 0,
            share: None,
        }
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The budget calls are admitted against: the share while one is set, else the limit.
    pub fn admits(&self) -> u64 {
        self.share.unwrap_or(self.limit)
    }

    pub fn set_share(&mut self, share: Option<u64>) {
        self.share = share;
    }

    /// When `amount` comes back to a process sharing the budget, judged by its own charges
    /// leaving the window; one that spent less than that is not held back by its past (ADR 1102).
    pub fn comes_back(&self, now: Nanos, amount: u64) -> Nanos {
        if amount <= self.spent {
            self.free_at(now, amount)
        } else {
            now
        }
    }

    /// Each charged bucket at `now` as (age in buckets, bucket epoch, amount), oldest first.
    pub fn charged(&mut self, now: Nanos) -> impl Iterator<Item = (u64, u64, u64)> + '_ {
        self.roll(now);
        let head = self.head;
        (self.oldest()..=head)
            .map(move |e| (head - e, e, self.buckets[(e % RING) as usize]))
            .filter(|(_, _, a)| *a > 0)
    }

    pub fn bucket_ns(&self) -> u64 {
        self.bucket_ns
    }

    pub fn window_ns(&self) -> u64 {
        self.window_ns
    }

    /// Frees the buckets that left the window by `now`. A clock that went backwards charges
    /// the newest bucket.
    fn roll(&mut self, now: Nanos) {
        let epoch = now / self.bucket_ns;
        if epoch <= self.head {
            return;
        }
        let n = (epoch - self.head).min(RING);
        for i in 1..=n {
            let b = &mut self.buckets[((self.head + i) % RING) as usize];
            self.spent -= *b;
            *b = 0;
        }
        self.head = epoch;
    }

    /// The budget spent within the window at `now`.
    pub fn spent(&mut self, now: Nanos) -> u64 {
        self.roll(now);
        self.spent
    }

    /// Charges `amount` at `now`.
    pub fn charge(&mut self, now: Nanos, amount: u64) {
        self.roll(now);
        let b = &mut self.buckets[(self.head % RING) as usize];
        *b = b.saturating_add(amount);
        self.spent = self.spent.saturating_add(amount);
    }

    /// Refunds (`delta` < 0) or charges more (`delta` > 0) for a call charged at `at`, into
    /// that call's bucket: the upstream counts it from when it arrived. Nothing once that
    /// bucket has left the window.
    pub fn adjust(&mut self, now: Nanos, at: Nanos, delta: i64) {
        self.roll(now);
        let epoch = (at / self.bucket_ns).min(self.head);
        if self.head - epoch >= RING {
            return;
        }
        let b = &mut self.buckets[(epoch % RING) as usize];
        if delta < 0 {
            let d = delta.unsigned_abs().min(*b);
            *b -= d;
            self.spent -= d;
        } else {
            *b = b.saturating_add(delta as u64);
            self.spent = self.spent.saturating_add(delta as u64);
        }
    }

    /// The budget charged at or after `at` (by bucket: its whole bucket counts).
    pub fn spent_since(&mut self, now: Nanos, at: Nanos) -> u64 {
        self.roll(now);
        let from = (at / self.bucket_ns).max(self.oldest());
        (from..=self.head)
            .map(|e| self.buckets[(e % RING) as usize])
            .sum()
    }

    fn oldest(&self) -> u64 {
        self.head.saturating_sub(RING - 1)
    }

    /// The earliest time at which `amount` of the spent budget has left the window, if
    /// nothing more is charged (`now` for nothing to free). Past all that is spent, the
    /// rest is estimated at the window's mean rate.
    pub fn free_at(&self, now: Nanos, amount: u64) -> Nanos {
        if amount == 0 {
            return now;
        }
        let mut freed = 0u64;
        for e in self.oldest()..=self.head {
            freed += self.buckets[(e % RING) as usize];
            if freed >= amount {
                return ((e + RING) * self.bucket_ns).max(now);
            }
        }
        let all = ((self.head + RING) * self.bucket_ns).max(now);
        let rest = (amount - freed) as u128 * self.window_ns as u128 / self.admits().max(1) as u128;
        all.saturating_add(rest.min(u64::MAX as u128) as u64)
    }
}

/// A tighter budget for a while, from a reading of the upstream's headers or after a cooldown:
/// from `from` until `until`, at most `base + rate × (t − from)` may be charged.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Cap {
    pub from: Nanos,
    pub until: Nanos,
    pub base: u64,
    /// Budget per ns that comes back.
    pub rate: f64,
    /// Charged since `from`.
    pub spent: u64,
}

impl Cap {
    fn allowed(&self, now: Nanos) -> f64 {
        self.base as f64 + self.rate * now.saturating_sub(self.from) as f64
    }

    /// When `cost` more fits under the cap.
    fn ready(&self, now: Nanos, cost: u64) -> Nanos {
        if now >= self.until {
            return now;
        }
        let need = self.spent.saturating_add(cost) as f64;
        if need <= self.allowed(now) {
            return now;
        }
        if self.rate <= 0.0 {
            return self.until;
        }
        let t = self.from as f64 + (need - self.base as f64) / self.rate;
        (t.ceil() as Nanos).clamp(now, self.until)
    }
}

/// A key's quota: its dimensions' windows, the caps read from headers, the cooldown, and the
/// calls waiting for budget (held by the caller; counted here).
#[derive(Clone, Debug)]
pub struct Quota {
    dims: Vec<(u8, SlidingWindow)>,
    names: [Option<Dimension>; COSTS],
    caps: [Option<Cap>; COSTS],
    /// The limit the upstream last announced for each cost, if lower than configured: the
    /// rate the budget comes back at after a cooldown.
    announced: [Option<u64>; COSTS],
    cooldown_until: Nanos,
    /// The longest one cooldown, or one reading's hold, lasts (ADR 1104).
    max_cooldown_ns: u64,
    /// The calls waiting for budget, all of them and by level (held by the caller; counted
    /// here). By level from the first that waits: 800 bytes (ADR 1108).
    queued: Queued,
    levels: Option<Box<ByLevel<Queued>>>,
    cooldowns: u64,
    /// The last charge, and how long the longest window keeps one.
    last_charge: Nanos,
    keeps_ns: u64,
    /// The lease, when a fleet shares this quota through a store (ADR 1102).
    fleet: Option<Box<Fleet>>,
}

impl Quota {
    pub fn new(opts: &QuotaOptions, now: Nanos) -> Self {
        Quota {
            dims: opts
                .dims()
                .iter()
                .map(|d| (d.cost, SlidingWindow::new(d.limit, d.window_ns, now)))
                .collect(),
            names: opts.names,
            caps: [None; COSTS],
            announced: [None; COSTS],
            cooldown_until: 0,
            max_cooldown_ns: opts.max_cooldown_ns.max(1),
            queued: Queued::default(),
            levels: None,
            cooldowns: 0,
            last_charge: 0,
            keeps_ns: opts
                .dims()
                .iter()
                .map(|d| RING * bucket_ns(d.window_ns))
                .max()
                .unwrap_or(0),
            fleet: None,
        }
    }

    /// [`check_at`](Self::check_at) for a call of the default level.
    pub fn check(&mut self, now: Nanos, costs: &Costs, budget_ns: u64, head: bool) -> QuotaCheck {
        self.check_at(now, costs, budget_ns, head, DEFAULT_LEVEL)
    }

    /// Whether a call of `costs` and `level` fits now. `head`: the next waiter to let through
    /// asks, and those behind it do not count; a new call waits behind the waiters at its
    /// level or above, as in the limiter's queue (ADR 1001, 1108). `budget_ns`: its deadline.
    pub fn check_at(
        &mut self,
        now: Nanos,
        costs: &Costs,
        budget_ns: u64,
        head: bool,
        level: u8,
    ) -> QuotaCheck {
        if self.dims.iter().any(|(c, w)| costs[*c as usize] > w.limit) {
            return QuotaCheck::Oversize;
        }
        let ahead = match &self.levels {
            Some(l) if !head && self.queued.calls > 0 => l.at_or_above(level),
            _ => Queued::default(),
        };
        let first = ahead.calls == 0;
        let ahead = ahead.costs;
        if self
            .fleet
            .as_ref()
            // Only while the store answers: lost again, the new fallback's shares hold.
            .is_some_and(|f| {
                f.mode == FleetMode::Leased && f.shares_until != 0 && now >= f.shares_until
            })
        {
            self.end_shares();
        }
        let ready = self.ready_at(now, costs, &ahead);
        if let Some(f) = &mut self.fleet {
            match f.mode {
                FleetMode::Leased if ready <= now || !first => {
                    let mut want = by_dim(&self.dims, costs);
                    for (w, a) in want.iter_mut().zip(by_dim(&self.dims, &ahead)) {
                        *w = w.saturating_add(a);
                    }
                    if first && f.holds(now, &want) {
                        return QuotaCheck::Take;
                    }
                    // Past the room the store's window had, this process's share comes back as
                    // its own charges leave its window: a call that cannot fit before its
                    // deadline at that rate is refused now.
                    let mut est = ready.max(now);
                    let dims = self.dims.iter_mut().zip(want.iter().zip(&f.left));
                    for (((_, w), (n, l)), room) in dims.zip(&f.room) {
                        let short = if now < f.until {
                            n.saturating_sub(*l)
                        } else {
                            *n
                        };
                        let short = short.saturating_sub(*room);
                        if short > 0 {
                            est = est.max(w.comes_back(now, short));
                        }
                    }
                    if est.saturating_sub(now) > budget_ns {
                        return QuotaCheck::Refuse;
                    }
                    return match f.retry_at(now, budget_ns) {
                        Some(t) if first => QuotaCheck::Wait(t),
                        Some(_) => QuotaCheck::Wait(ready.max(now)),
                        None => QuotaCheck::Refuse,
                    };
                }
                FleetMode::Refusing if first => return QuotaCheck::Refuse,
                _ => {}
            }
        }
        if ready <= now && first {
            QuotaCheck::Take
        } else if ready.saturating_sub(now) > budget_ns {
            QuotaCheck::Refuse
        } else {
            QuotaCheck::Wait(ready.max(now))
        }
    }

    /// When `costs` would fit behind `ahead`, if nothing else were charged.
    pub fn ready_at(&mut self, now: Nanos, costs: &Costs, ahead: &Costs) -> Nanos {
        let mut t = now.max(self.cooldown_until);
        for (c, w) in &mut self.dims {
            let c = *c as usize;
            let spent = w.spent(now);
            // Saturating: usage settled past any count stops at the largest one.
            let want = spent.saturating_add(costs[c]).saturating_add(ahead[c]);
            let limit = w.admits();
            // A dimension spent to its limit admits nothing, not even a call that names no
            // cost of it: its usage is settled later and would overrun.
            let need = if want > limit {
                want - limit
            } else if spent >= limit {
                spent - limit + 1
            } else {
                0
            };
            if need > 0 {
                t = t.max(w.free_at(now, need));
            }
        }
        for (c, cap) in self.caps.iter().enumerate() {
            if let Some(cap) = cap {
                t = t.max(cap.ready(now, costs[c].saturating_add(ahead[c])));
            }
        }
        t
    }

    /// Charges a call that fitted.
    pub fn take(&mut self, now: Nanos, costs: &Costs) {
        self.last_charge = now;
        if let Some(f) = &mut self.fleet {
            if f.mode == FleetMode::Leased {
                f.spend(&by_dim(&self.dims, costs));
            }
        }
        for (c, w) in &mut self.dims {
            w.charge(now, costs[*c as usize]);
        }
        for (c, slot) in self.caps.iter_mut().enumerate() {
            match slot {
                Some(cap) if now >= cap.until => *slot = None,
                Some(cap) => cap.spent = cap.spent.saturating_add(costs[c]),
                None => {}
            }
        }
    }

    /// Settles a call charged at `at`: `deltas` is what it really used less what it was charged
    /// (a refund below 0). A call refused after its charge is refunded whole.
    pub fn adjust(&mut self, now: Nanos, at: Nanos, deltas: &[i64; COSTS]) {
        for (c, w) in &mut self.dims {
            let d = deltas[*c as usize];
            if d != 0 {
                w.adjust(now, at, d);
            }
        }
        for (c, cap) in self.caps.iter_mut().enumerate() {
            if let Some(cap) = cap {
                if at >= cap.from && deltas[c] != 0 {
                    cap.spent = cap.spent.saturating_add_signed(deltas[c]);
                }
            }
        }
    }

    /// A call of the default level starts waiting for budget.
    pub fn enqueue(&mut self, costs: &Costs) {
        self.enqueue_at(DEFAULT_LEVEL, costs);
    }

    /// A call of `level` starts waiting for budget.
    pub fn enqueue_at(&mut self, level: u8, costs: &Costs) {
        let one = Queued::one(costs);
        self.queued.join(&one);
        self.levels
            .get_or_insert_with(Default::default)
            .join(level, &one);
    }

    /// A waiting call of the default level leaves the wait. `false` when none waited.
    pub fn dequeue(&mut self, costs: &Costs) -> bool {
        self.dequeue_at(DEFAULT_LEVEL, costs)
    }

    /// A waiting call of `level` leaves the wait (let through or given up). `false` when none
    /// waited there.
    pub fn dequeue_at(&mut self, level: u8, costs: &Costs) -> bool {
        let one = Queued::one(costs);
        let left = self.levels.as_mut().is_some_and(|l| l.leave(level, &one));
        left && self.queued.leave(&one)
    }

    /// What a response said about the upstream's budget, for a call charged `costs` at `at`.
    /// `refused`: the upstream refused it for its quota (429). Returns whether a cooldown began.
    pub fn observe(
        &mut self,
        now: Nanos,
        reading: &Reading,
        refused: bool,
        at: Nanos,
        costs: &Costs,
    ) -> bool {
        let mut began = false;
        if refused {
            let wait = reading.retry_after_ns.unwrap_or_else(|| {
                reading
                    .dims
                    .iter()
                    .filter(|d| d.remaining == Some(0))
                    .filter_map(|d| d.reset_ns)
                    .max()
                    .unwrap_or(DEFAULT_COOLDOWN_NS)
            });
            began = self.cool_down(now, wait);
        }
        for d in &reading.dims {
            if let (Some(limit), Some(c)) =
                (d.limit, self.names.iter().position(|n| *n == Some(d.dim)))
            {
                self.announced[c] = Some(limit);
            }
        }
        if now < self.cooldown_until {
            return began;
        }
        for d in &reading.dims {
            let (Some(remaining), Some(reset)) = (d.remaining, d.reset_ns) else {
                continue;
            };
            let Some(c) = self.names.iter().position(|n| *n == Some(d.dim)) else {
                continue;
            };
            let Some(w) = self.first_window(c) else {
                continue;
            };
            // Charged here after this call: the upstream had not counted those yet.
            let later = self.dims[w].1.spent_since(now, at).saturating_sub(costs[c]);
            let limit = d.limit.unwrap_or(u64::MAX).min(self.dims[w].1.limit);
            if let Some(f) = &mut self.fleet {
                // The fleet's window holds at least what the upstream says is spent.
                let floor = self.dims[w].1.limit.saturating_sub(remaining);
                f.floors[w] = f.floors[w].max(floor);
            }
            let reset = reset.max(1);
            // Paced at the rate the reading says, but held no longer than a cooldown may be: a
            // reset years ahead would hold the key for as long (ADR 1104).
            self.caps[c] = Some(Cap {
                from: now,
                until: now.saturating_add(reset.min(self.max_cooldown_ns)),
                base: remaining.saturating_sub(later),
                rate: limit.saturating_sub(remaining) as f64 / reset as f64,
                spent: 0,
            });
        }
        began
    }

    /// The whole key waits `wait_ns`, at most the quota's `max_cooldown_ns` from now; then its
    /// budget comes back at each dimension's mean rate over one window (of the lower of its
    /// configured and its announced limit) rather than all at once. `true` when this began a
    /// cooldown (one that was running is only extended).
    pub fn cool_down(&mut self, now: Nanos, wait_ns: u64) -> bool {
        let began = now >= self.cooldown_until;
        if began {
            self.cooldowns += 1;
        }
        // Whoever asks (a 429 here, or the fleet's store), no hint holds the key longer than
        // the bound from now (ADR 1104).
        let wait_ns = wait_ns.min(self.max_cooldown_ns);
        let until = now.saturating_add(wait_ns).max(self.cooldown_until);
        self.cooldown_until = until;
        for c in 0..COSTS {
            let Some(w) = self.first_window(c) else {
                continue;
            };
            let w = &self.dims[w].1;
            let limit = self.announced[c].map_or(w.limit, |a| a.min(w.limit));
            self.caps[c] = Some(Cap {
                from: until,
                until: until.saturating_add(w.window_ns),
                base: 0,
                rate: limit as f64 / w.window_ns.max(1) as f64,
                spent: 0,
            });
        }
        began
    }

    /// The shortest window that charges cost `c`.
    fn first_window(&self, c: usize) -> Option<usize> {
        self.dims
            .iter()
            .enumerate()
            .filter(|(_, (k, _))| *k as usize == c)
            .min_by_key(|(_, (_, w))| w.window_ns)
            .map(|(i, _)| i)
    }

    /// Calls waiting for budget.
    pub fn waiting(&self) -> u32 {
        self.queued.calls
    }

    /// Cooldowns begun so far.
    pub fn cooldowns(&self) -> u64 {
        self.cooldowns
    }

    /// How long the key still cools down at `now`.
    pub fn cooling_ns(&self, now: Nanos) -> u64 {
        self.cooldown_until.saturating_sub(now)
    }

    /// Each dimension's `(cost, spent, limit, window)` at `now`.
    pub fn spent(&mut self, now: Nanos) -> impl Iterator<Item = (u8, u64, u64, u64)> + '_ {
        self.dims
            .iter_mut()
            .map(move |(c, w)| (*c, w.spent(now), w.limit, w.window_ns))
    }

    /// Something is charged within a window, or a call waits: the key's state matters.
    pub fn holds(&self, now: Nanos) -> bool {
        self.queued.calls > 0
            || (self.last_charge != 0 && now < self.last_charge.saturating_add(self.keeps_ns))
    }

    /// A fleet shares this quota through a store: calls spend leases from now on. A call the
    /// lease does not hold waits up to `wait_ns` for the next before it asks again.
    pub fn share_through_store(&mut self, wait_ns: u64) {
        self.fleet = Some(Box::new(Fleet::new(wait_ns)));
    }

    pub fn fleet(&self) -> Option<&Fleet> {
        self.fleet.as_deref()
    }

    pub fn fleet_mut(&mut self) -> Option<&mut Fleet> {
        self.fleet.as_deref_mut()
    }

    /// The store is lost at `now`: each dimension admits up to `shares` (by dimension) of
    /// its window, spent here before included; `refuse`: admit nothing instead. The lease's
    /// unspent budget stays counted in the store (ADR 1102).
    pub fn fall_back(&mut self, now: Nanos, shares: &[u64], refuse: bool) {
        let Some(f) = &mut self.fleet else {
            return;
        };
        if f.mode == FleetMode::Leased && f.shares_until == 0 {
            f.down_since = now;
        }
        f.surrender();
        f.mode = if refuse {
            FleetMode::Refusing
        } else {
            FleetMode::Shared
        };
        for ((_, w), s) in self.dims.iter_mut().zip(shares) {
            w.set_share(Some((*s).clamp(1, w.limit)));
        }
    }

    /// The store answers again at `now`: calls wait for a lease. For one more window each
    /// dimension also keeps to its share: until every process is back, the store does not
    /// know what the others spend meanwhile.
    pub fn rejoin(&mut self, now: Nanos) {
        let longest = self
            .dims
            .iter()
            .map(|(_, w)| w.window_ns())
            .max()
            .unwrap_or(0);
        if let Some(f) = &mut self.fleet {
            f.surrender();
            f.mode = FleetMode::Leased;
            f.shares_until = now.saturating_add(longest).max(1);
        }
    }

    fn end_shares(&mut self) {
        for (_, w) in &mut self.dims {
            w.set_share(None);
        }
        if let Some(f) = &mut self.fleet {
            f.shares_until = 0;
        }
    }

    /// Each dimension's spend in its window at `now`.
    pub fn spent_by_dim(&mut self, now: Nanos) -> [u64; MAX_DIMS] {
        let mut out = [0; MAX_DIMS];
        for (o, (_, w)) in out.iter_mut().zip(&mut self.dims) {
            *o = w.spent(now);
        }
        out
    }

    /// What the calls waiting for budget cost, by dimension.
    pub fn queued_by_dim(&self) -> [u64; MAX_DIMS] {
        by_dim(&self.dims, &self.queued.costs)
    }

    /// The dimensions' charged buckets at `now` as (dimension, age in buckets, amount,
    /// charged before `since`), for a store that lost them or never saw them.
    pub fn charged_buckets(&mut self, now: Nanos, since: Nanos) -> Vec<(usize, u64, u64, bool)> {
        let mut out = Vec::new();
        for (i, (_, w)) in self.dims.iter_mut().enumerate() {
            let from = since / w.bucket_ns();
            out.extend(w.charged(now).map(|(age, e, a)| (i, age, a, e < from)));
        }
        out
    }

    pub fn heap_bytes(&self) -> usize {
        self.dims.capacity() * std::mem::size_of::<(u8, SlidingWindow)>()
            + self.dims.len() * RING as usize * 8
            + self
                .fleet
                .as_ref()
                .map_or(0, |_| std::mem::size_of::<Fleet>())
            + self
                .levels
                .as_ref()
                .map_or(0, |_| std::mem::size_of::<ByLevel<Queued>>())
    }
}

/// A call's costs by dimension (each dimension charges one of them).
fn by_dim(dims: &[(u8, SlidingWindow)], costs: &Costs) -> [u64; MAX_DIMS] {
    let mut out = [0; MAX_DIMS];
    for (o, (c, _)) in out.iter_mut().zip(dims) {
        *o = costs[*c as usize];
    }
    out
}
