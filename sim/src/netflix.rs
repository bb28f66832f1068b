//! The `netflix-vegas` comparison row: a model of Netflix concurrency-limits' SimpleLimiter
//! over `WindowedLimit(VegasLimit)` with their defaults, as their source and docs describe it
//! (ADR 0301). Written from that description for comparison only; resilix's own code is in
//! engine/src.
//!
//! - Admission Netflix's way: run if `inflight < limit`, else refuse (no queue).
//! - Release outcomes: success → sample; timeout or 429/503 → dropped (their `onDropped`:
//!   "rejected by an external limit or hitting a timeout"); a 5xx → ignored (their
//!   `onIgnore`: "failed before any meaningful RTT measurement could be made").
//! - WindowedLimit: a window closes when a sample's end passes `nextUpdateTime`, which is then
//!   set to `end + clamp(2·minRtt, 1 s, 1 s)`; the window passes the delegate its average RTT,
//!   max inflight and whether anything dropped, if it holds ≥ 10 samples. Samples < 100 µs
//!   are skipped.
//! - VegasLimit: f(L) = max(1, floor(log10 L)); alpha 3f, beta 6f, threshold f; running
//!   minimum baseline, probed every `30·L·jitter[0.5, 1)` windows by taking the current one.

use resilix_engine::{Nanos, SplitMix64, Verdict};

use crate::client_limiter::{Acq, ClientLimiter, Wake};

const MIN_WINDOW_NS: u64 = 1_000_000_000;
const MAX_WINDOW_NS: u64 = 1_000_000_000;
const MIN_RTT_THRESHOLD_NS: u64 = 100_000;
const WINDOW_SIZE: u32 = 10;
const PROBE_MULTIPLIER: f64 = 30.0;
const MAX_LIMIT: f64 = 1000.0;
const INITIAL_LIMIT: f64 = 20.0;

fn log10_root(limit: i64) -> i64 {
    if limit <= 1 {
        1
    } else {
        ((limit as f64).log10() as i64).max(1)
    }
}

#[derive(Clone, Debug)]
pub struct VegasLimit {
    estimated: f64,
    rtt_noload: u64,
    probe_count: u64,
    probe_jitter: f64,
    rng: SplitMix64,
}

impl VegasLimit {
    pub fn new(seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed ^ 0x6e66_6c78);
        let probe_jitter = 0.5 + 0.5 * rng.next_f64();
        VegasLimit {
            estimated: INITIAL_LIMIT,
            rtt_noload: 0,
            probe_count: 0,
            probe_jitter,
            rng,
        }
    }

    pub fn limit(&self) -> u32 {
        self.estimated as u32
    }

    /// Netflix `VegasLimit._update`; smoothing 1.0 (their default).
    pub fn update(&mut self, rtt: u64, inflight: u32, did_drop: bool) {
        let rtt = rtt.max(1);
        self.probe_count += 1;
        if self.probe_jitter * PROBE_MULTIPLIER * self.estimated <= self.probe_count as f64 {
            self.probe_jitter = 0.5 + 0.5 * self.rng.next_f64();
            self.probe_count = 0;
            self.rtt_noload = rtt;
            return;
        }
        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return;
        }
        let est = self.estimated;
        let f = log10_root(est as i64) as f64;
        let queue = (est * (1.0 - self.rtt_noload as f64 / rtt as f64)).ceil();
        let new = if did_drop {
            est - f
        } else if (inflight as f64) * 2.0 < est {
            return;
        } else if queue <= f {
            est + 6.0 * f
        } else if queue < 3.0 * f {
            est + f
        } else if queue > 6.0 * f {
            est - f
        } else {
            return;
        };
        self.estimated = new.clamp(1.0, MAX_LIMIT);
    }
}

/// Netflix `WindowedLimit` with the average sample window.
#[derive(Clone, Debug)]
pub struct WindowedVegas {
    vegas: VegasLimit,
    next_update: u64,
    min_rtt: u64,
    sum: u64,
    max_inflight: u32,
    count: u32,
    drop: bool,
}

impl WindowedVegas {
    pub fn new(seed: u64) -> Self {
        WindowedVegas {
            vegas: VegasLimit::new(seed),
            next_update: 0,
            min_rtt: u64::MAX,
            sum: 0,
            max_inflight: 0,
            count: 0,
            drop: false,
        }
    }

    pub fn limit(&self) -> u32 {
        self.vegas.limit()
    }

    pub fn on_sample(&mut self, start: u64, rtt: u64, inflight: u32, did_drop: bool) {
        let end = start + rtt;
        if rtt < MIN_RTT_THRESHOLD_NS {
            return;
        }
        self.min_rtt = self.min_rtt.min(rtt);
        self.sum += rtt;
        self.max_inflight = self.max_inflight.max(inflight);
        self.count += 1;
        self.drop |= did_drop;
        if end > self.next_update {
            let ready = self.min_rtt < u64::MAX && self.count >= WINDOW_SIZE;
            let candidate = if self.min_rtt == u64::MAX {
                u64::MAX
            } else {
                self.min_rtt.saturating_mul(2)
            };
            self.next_update = end + candidate.clamp(MIN_WINDOW_NS, MAX_WINDOW_NS);
            if ready {
                let avg = self.sum / self.count as u64;
                self.vegas.update(avg, self.max_inflight, self.drop);
            }
            self.min_rtt = u64::MAX;
            self.sum = 0;
            self.max_inflight = 0;
            self.count = 0;
            self.drop = false;
        }
    }
}

/// Netflix `SimpleLimiter`: permits counted here, `inflight < limit` to run, no queue.
pub struct NetflixVegas {
    limit: WindowedVegas,
    inflight: u32,
    /// Per permit: (start, inflight at acquire including this call, mark).
    slots: Vec<(u64, u32, u64)>,
    free: Vec<u64>,
}

impl NetflixVegas {
    pub fn new(seed: u64) -> Self {
        NetflixVegas {
            limit: WindowedVegas::new(seed),
            inflight: 0,
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl ClientLimiter for NetflixVegas {
    fn acquire(&mut self, now: Nanos, _budget_ns: u64) -> Acq {
        if self.inflight >= self.limit.limit() {
            return Acq::Refused;
        }
        self.inflight += 1;
        let slot = (now, self.inflight, 0);
        let id = match self.free.pop() {
            Some(id) => {
                self.slots[id as usize] = slot;
                id
            }
            None => {
                self.slots.push(slot);
                self.slots.len() as u64 - 1
            }
        };
        Acq::Run(id)
    }

    fn admit_queued(&mut self, _now: Nanos) -> Wake {
        Wake::Wait
    }

    fn leave_queue(&mut self) {}

    fn mark(&mut self, permit: u64, now: Nanos) {
        let s = &mut self.slots[permit as usize];
        if s.2 == 0 {
            s.2 = now;
        }
    }

    fn settle(&mut self, permit: u64, verdict: Verdict, now: Nanos) {
        let (start, inflight, mark) = self.slots[permit as usize];
        self.free.push(permit);
        self.inflight -= 1;
        let end = if mark != 0 { mark } else { now };
        let rtt = end.saturating_sub(start);
        match verdict {
            Verdict::Success | Verdict::Answered => {
                self.limit.on_sample(start, rtt, inflight, false)
            }
            Verdict::Timeout | Verdict::Overload => {
                self.limit.on_sample(start, rtt, inflight, true)
            }
            Verdict::Failure | Verdict::Rejected | Verdict::Cancelled => {}
        }
    }

    fn snapshot(&self, _now: Nanos) -> (u32, u32, u32) {
        (self.limit.limit(), self.inflight, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log10_root_matches_netflix() {
        assert_eq!(log10_root(1), 1);
        assert_eq!(log10_root(9), 1);
        assert_eq!(log10_root(99), 1);
        assert_eq!(log10_root(100), 2);
        assert_eq!(log10_root(999), 2);
    }

    #[test]
    fn no_queue_grows_by_beta_and_a_drop_shrinks_by_f() {
        let mut v = VegasLimit::new(1);
        v.update(50, 20, false); // first sample sets the baseline
        assert_eq!(v.limit(), 20);
        v.update(50, 20, false); // queue 0 ≤ threshold 1: + 6
        assert_eq!(v.limit(), 26);
        v.update(50, 26, true);
        assert_eq!(v.limit(), 25);
    }

    #[test]
    fn an_app_limited_sample_holds() {
        let mut v = VegasLimit::new(1);
        v.update(50, 20, false);
        v.update(50, 5, false);
        assert_eq!(v.limit(), 20);
    }

    #[test]
    fn a_loaded_rtt_decreases() {
        let mut v = VegasLimit::new(1);
        v.update(50, 20, false);
        v.update(100, 20, false); // queue = ceil(20·0.5) = 10 > beta 6
        assert_eq!(v.limit(), 19);
    }

    #[test]
    fn windowed_needs_ten_samples_and_a_passed_window() {
        let mut w = WindowedVegas::new(1);
        // The first window closes at the first sample (nextUpdate 0) with 1 sample: discarded.
        w.on_sample(0, 50_000_000, 20, false);
        assert_eq!(w.vegas.rtt_noload, 0);
        for i in 0..20 {
            w.on_sample(i * 10_000_000, 50_000_000, 20, false);
        }
        assert_eq!(w.limit(), 20);
        w.on_sample(1_100_000_000, 50_000_000, 20, false);
        assert_eq!(w.vegas.rtt_noload, 50_000_000);
    }
}
