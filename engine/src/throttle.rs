//! Client-side adaptive throttling (ADR 1000): while the upstream refuses calls (429, or 503 with
//! `Retry-After`: ADR 1004), refuse locally the share of calls it would refuse anyway.
//!
//! Per key, over a sliding window, `requests` counts the calls asked about (those refused here
//! included) and `accepts` those the upstream did not answer `Overload`. A call is refused with
//! probability `max(0, (requests − multiplier × accepts) / (requests + 1))`, at most
//! `max_rejection` (Google SRE, "Handling Overload", client-side throttling).
//!
//! A key pays for it only once it has seen an overload: the window is allocated at the first
//! `Overload` verdict, and `acquire` asks nothing while the window holds none (one comparison).

use crate::options::ThrottleOptions;
use crate::rng::SplitMix64;
use crate::{Nanos, Verdict};

/// Requests the window must hold before anything is refused: failsafe-go's adaptive throttler
/// documents its threshold as "after 5 executions". Below it, a lone 429 refused the retry its
/// `Retry-After` asked for, one time in two (ADR 1000).
pub const MIN_REQUESTS: u64 = 5;

/// Buckets of the sliding window: failsafe-go's 20 (its 1 min window in 20 buckets).
pub const BUCKETS: usize = 20;

/// u32: four billion calls in one window are beyond any client; a full window stops counting.
#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    requests: u32,
    accepts: u32,
}

#[derive(Clone, Debug)]
struct Window {
    buckets: [Bucket; BUCKETS],
    /// The bucket epoch (`now / bucket_ns`) of the newest bucket.
    head: u64,
    requests: u32,
    accepts: u32,
    /// The next call decided is a retry the throttle let through when it was decided (ADR
    /// 1004): it is not drawn again. Here, not in `Throttle`: only an engaged throttle (one with
    /// a window) decides, and a key's size stays as it was (u32 totals make the room).
    pass: bool,
}

impl Window {
    fn new(epoch: u64) -> Self {
        Window {
            buckets: [Bucket::default(); BUCKETS],
            head: epoch,
            requests: 0,
            accepts: 0,
            pass: false,
        }
    }

    /// Clear the buckets that left the window by `epoch`. A clock that went backwards counts
    /// into the newest bucket.
    fn roll(&mut self, epoch: u64) {
        if epoch <= self.head {
            return;
        }
        let n = (epoch - self.head).min(BUCKETS as u64);
        for i in 1..=n {
            let b = &mut self.buckets[((self.head + i) % BUCKETS as u64) as usize];
            self.requests -= b.requests;
            self.accepts -= b.accepts;
            *b = Bucket::default();
        }
        self.head = epoch;
    }

    /// `(requests, accepts)` as of `epoch`, without rolling.
    fn counts_at(&self, epoch: u64) -> (u64, u64) {
        let (mut r, mut a) = (self.requests as u64, self.accepts as u64);
        // The buckets of epochs up to `epoch − BUCKETS` have left the window.
        let oldest = self.head.saturating_sub(BUCKETS as u64 - 1);
        // Nothing has left before the window's first whole length (epoch < BUCKETS).
        let Some(gone) = epoch.checked_sub(BUCKETS as u64) else {
            return (r, a);
        };
        let mut e = oldest;
        while e <= gone.min(self.head) {
            let b = &self.buckets[(e % BUCKETS as u64) as usize];
            r -= b.requests as u64;
            a -= b.accepts as u64;
            e += 1;
        }
        (r, a)
    }

    fn add(&mut self, epoch: u64, accepted: bool) {
        self.roll(epoch);
        if self.requests == u32::MAX {
            return;
        }
        let b = &mut self.buckets[(self.head % BUCKETS as u64) as usize];
        b.requests += 1;
        self.requests += 1;
        if accepted {
            b.accepts += 1;
            self.accepts += 1;
        }
    }
}

/// One key's throttle. Off (`ThrottleOptions` absent), it never engages.
#[derive(Clone, Debug)]
pub struct Throttle {
    /// Calls are decided only before this: when the bucket of the last overload leaves the
    /// window. 0 before any overload (and always, when off).
    live_until: Nanos,
    /// The window's length / `BUCKETS`; 0 when off.
    bucket_ns: u64,
    multiplier: f64,
    max_rejection: f64,
    window: Option<Box<Window>>,
}

impl Throttle {
    pub fn new(opts: Option<&ThrottleOptions>) -> Self {
        Throttle {
            live_until: 0,
            bucket_ns: opts.map_or(0, |o| (o.window_ms * 1_000_000 / BUCKETS as u64).max(1)),
            multiplier: opts.map_or(0.0, |o| o.multiplier),
            max_rejection: opts.map_or(0.0, |o| o.max_rejection),
            window: None,
        }
    }

    /// Whether the window holds an overload at `now`: only then is a call decided.
    #[inline(always)]
    pub fn engaged(&self, now: Nanos) -> bool {
        now < self.live_until
    }

    fn p_of(&self, (r, a): (u64, u64)) -> f64 {
        if r < MIN_REQUESTS {
            return 0.0;
        }
        let (r, a) = (r as f64, a as f64);
        ((r - self.multiplier * a) / (r + 1.0)).clamp(0.0, self.max_rejection)
    }

    /// The refusal probability at `now`: 0 while the window holds no overload.
    pub fn probability(&self, now: Nanos) -> f64 {
        if !self.engaged(now) {
            return 0.0;
        }
        self.p_of(self.counts(now))
    }

    /// Decide a call while engaged: `true` refuses it, counted as a request (as in SRE: the
    /// calls refused here keep the probability up while the upstream keeps refusing).
    #[inline(never)]
    pub fn refuse(&mut self, now: Nanos, rng: &mut SplitMix64) -> bool {
        if self
            .window
            .as_deref_mut()
            .is_some_and(|w| std::mem::take(&mut w.pass))
        {
            return false;
        }
        self.draw(now, rng)
    }

    /// Decide a retry before its wait (ADR 1004), as [`refuse`](Self::refuse) decides a call:
    /// `true` refuses it, counted as a request. Never refuses while not engaged.
    pub fn refuse_retry(&mut self, now: Nanos, rng: &mut SplitMix64) -> bool {
        self.engaged(now) && self.draw(now, rng)
    }

    fn draw(&mut self, now: Nanos, rng: &mut SplitMix64) -> bool {
        let epoch = now / self.bucket_ns;
        let Some(w) = self.window.as_deref_mut() else {
            return false;
        };
        w.roll(epoch);
        let (r, a) = (w.requests as u64, w.accepts as u64);
        let p = self.p_of((r, a));
        if p <= 0.0 || rng.next_f64() >= p {
            return false;
        }
        if let Some(w) = self.window.as_deref_mut() {
            w.add(epoch, false);
        }
        true
    }

    /// A settled call: a request, accepted unless `Overload`. Timeouts and failures count as
    /// accepted (the breaker's and the limit's evidence, not this one's); calls that told
    /// nothing about the upstream (`Rejected`, `Cancelled`) count as neither.
    #[inline]
    pub fn on_settle(&mut self, now: Nanos, verdict: Verdict) {
        if verdict == Verdict::Overload {
            self.overload(now);
        } else if let Some(w) = self.window.as_deref_mut() {
            if !verdict.is_ignored() {
                w.add(now / self.bucket_ns, true);
            }
        }
    }

    /// Lets the next call decided through without a draw: a retry decided (and drawn) before
    /// its wait (ADR 1004). Only while engaged: a pass set now is taken by the next acquire.
    pub fn grant_pass(&mut self, now: Nanos) {
        let engaged = self.engaged(now);
        if let Some(w) = self.window.as_deref_mut() {
            w.pass = engaged;
        }
    }

    /// Drops a pass the next acquire did not reach the throttle to take (an open breaker, a
    /// call waiting for quota).
    #[inline]
    pub fn drop_pass(&mut self) {
        if let Some(w) = self.window.as_deref_mut() {
            w.pass = false;
        }
    }

    #[cold]
    fn overload(&mut self, now: Nanos) {
        if self.bucket_ns == 0 {
            return;
        }
        let engaged = self.engaged(now);
        let epoch = now / self.bucket_ns;
        let w = self
            .window
            .get_or_insert_with(|| Box::new(Window::new(epoch)));
        if !engaged {
            // A pass granted while engaged and never taken is stale.
            w.pass = false;
        }
        w.add(epoch, false);
        let newest = w.head.max(epoch);
        self.live_until = (newest + BUCKETS as u64).saturating_mul(self.bucket_ns);
    }

    /// `(requests, accepts)` in the window at `now`; `(0, 0)` before any overload.
    pub fn counts(&self, now: Nanos) -> (u64, u64) {
        match self.window.as_deref() {
            Some(w) => w.counts_at(now / self.bucket_ns),
            None => (0, 0),
        }
    }

    /// Heap bytes: the window, once an overload allocated it.
    pub fn heap_bytes(&self) -> usize {
        self.window
            .as_ref()
            .map_or(0, |_| std::mem::size_of::<Window>())
    }
}
