//! The discrete-event world: an upstream with C servers and a FIFO, callers, and one limiter
//! per client, on a virtual clock. Everything random comes from one seeded `SplitMix64`.

use std::collections::VecDeque;

use resilix_engine::breaker::Breaker;
use resilix_engine::priority::LEVELS;
use resilix_engine::retry::Settled;
use resilix_engine::{
    tenant_id, BreakerOptions, LimiterOptions, Priority, RetryPolicy, SplitMix64, Verdict,
    DEFAULT_LEVEL,
};

use crate::breaker_rule::BreakerRule;
use crate::client::{Acq, ClientLimiter, Row, Wake};
use crate::dist::{exponential, lognormal};
use crate::events::{Ev, Queue};
use crate::scenario::{Change, Fault, Load, Measure, Mix, Scenario, Service, MS, SEC};
use crate::trace::{CallRecord, Trace, TICK_NS};

const RETRY_NS: u64 = 10 * MS;
const NO_CALLER: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Queued,
    Running,
    /// The caller has its answer (or gave up); the upstream may still be serving it.
    Ended,
}

/// Who retries a failed call in a RetryStorm scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retrier {
    /// The engine decides (`ClientLimiter::retry`): resilix, its budget included.
    Engine,
    /// cockatiel 3's `retry(handleAll, { maxAttempts, backoff: new ExponentialBackoff() })`:
    /// every failure, its decorrelated jitter from 128 ms, no budget.
    Cockatiel,
    /// p-retry 7's defaults: every failure, 1 s × 2^(retry − 1), no jitter, no budget.
    PRetry,
}

#[derive(Clone, Copy, Debug)]
struct Call {
    client: u16,
    caller: u32,
    created: u64,
    /// When the first attempt of this request was made: its one deadline counts from here.
    origin: u64,
    /// 1 for a first attempt.
    attempt: u8,
    /// The upstream will reject it (`Fault::Shed`).
    shed: bool,
    /// The wait before this attempt (0 for a first); cockatiel's jitter state (`t` before).
    delay: u64,
    jitter: f64,
    admitted: u64,
    mark: u64,
    permit: u64,
    state: State,
    /// Another tenant's call: no limiter, no caller, not recorded.
    background: bool,
    /// What the upstream will answer.
    outcome: Verdict,
    /// Its group in a `Mix` (0 without one), the level it waits at, and its tenant id.
    group: u8,
    level: u8,
    tenant: u32,
}

struct Client {
    limiter: Box<dyn ClientLimiter>,
    /// Waiting calls by level: the highest level is admitted first, FIFO within one.
    waiters: Vec<VecDeque<u32>>,
    load: Load,
    arrival_gen: u32,
    busy: Vec<bool>,
    breaker: Breaker,
    rule: BreakerRule,
    /// Connections opened so far (`Realism`): one more whenever inflight exceeds them.
    connections: u32,
}

struct Upstream {
    /// `Fault::RateQuota`: tokens left, as of `tokens_at`.
    tokens: f64,
    tokens_at: u64,
    servers: u32,
    busy: u32,
    fifo: VecDeque<u32>,
    service: Service,
    fault: Fault,
    background_gen: u32,
    background_rate: Option<f64>,
}

pub struct World<'a> {
    sc: &'a Scenario,
    now: u64,
    q: Queue,
    rng: SplitMix64,
    clients: Vec<Client>,
    calls: Vec<Call>,
    up: Upstream,
    trace: Trace,
    last_refusal: u64,
    /// RetryStorm scenarios: who retries, and up to how many attempts in all.
    retrier: Option<(Retrier, u32)>,
}

/// Run one scenario with one limiter row and one seed.
pub fn run(sc: &Scenario, row: Row, seed: u64) -> Trace {
    // A real fleet starts at any point of the probes' wall-clock phase; the same for all its
    // clients (they share the clock).
    let phase = if sc.stagger_ns > 0 {
        SplitMix64::new(seed ^ 0x5ca1ab1e).next_u64()
            % (LimiterOptions::default().probe_interval_ms * 1_000_000)
    } else {
        0
    };
    let interval = LimiterOptions::default().probe_interval_ms * 1_000_000;
    run_with(
        sc,
        &|s| {
            let phase = if sc.jittered_probes {
                SplitMix64::new(s ^ 0x5ca1ab1e).next_u64() % interval
            } else {
                phase
            };
            row.build(s, sc.initial_limit, phase)
        },
        seed,
    )
}

/// Run one scenario with clients built by `build` (from a seed the world draws for each client).
pub fn run_with(sc: &Scenario, build: &dyn Fn(u64) -> Box<dyn ClientLimiter>, seed: u64) -> Trace {
    run_retrying(sc, build, Retrier::Engine, seed)
}

/// As `run_with`; in a RetryStorm scenario, failed calls are retried by `retrier`.
pub fn run_retrying(
    sc: &Scenario,
    build: &dyn Fn(u64) -> Box<dyn ClientLimiter>,
    retrier: Retrier,
    seed: u64,
) -> Trace {
    let mut w = World::new(sc, build, seed);
    if let Measure::RetryStorm { attempts, .. } = sc.measure {
        w.retrier = Some((retrier, attempts));
    }
    w.run();
    w.trace
}

impl<'a> World<'a> {
    fn new(sc: &'a Scenario, build: &dyn Fn(u64) -> Box<dyn ClientLimiter>, seed: u64) -> Self {
        let mut rng = SplitMix64::new(seed);
        let clients = (0..sc.clients)
            .map(|_| Client {
                limiter: build(rng.next_u64()),
                connections: 0,
                waiters: vec![VecDeque::new(); LEVELS],
                load: Load::Closed { callers: 0 },
                arrival_gen: 0,
                busy: Vec::new(),
                breaker: Breaker::new(&BreakerOptions::default()),
                rule: BreakerRule::new(BreakerOptions::default()),
            })
            .collect();
        let n = sc.clients as usize;
        World {
            sc,
            now: 0,
            q: Queue::default(),
            rng,
            clients,
            calls: Vec::new(),
            up: Upstream {
                tokens: match sc.fault {
                    Fault::RateQuota { per_s, .. } => per_s,
                    _ => 0.0,
                },
                tokens_at: 0,
                servers: sc.servers,
                busy: 0,
                fifo: VecDeque::new(),
                service: sc.service,
                fault: sc.fault,
                background_gen: 0,
                background_rate: None,
            },
            trace: Trace {
                limit: vec![Vec::new(); n],
                inflight: vec![Vec::new(); n],
                queued: vec![Vec::new(); n],
                baseline_ms: vec![Vec::new(); n],
                ..Trace::default()
            },
            last_refusal: 0,
            retrier: None,
        }
    }

    fn run(&mut self) {
        for _ in 0..self.sc.initial_backlog {
            let id = self.new_call(0, NO_CALLER, true);
            self.dispatch(id);
        }
        for c in 0..self.clients.len() {
            if self.sc.stagger_ns > 0 {
                let t = self.rng.next_f64() * self.sc.stagger_ns as f64;
                self.q.push(t as u64, Ev::Join { client: c as u16 });
            } else if self.sc.join_every_ns == 0 || c == 0 {
                self.set_load(c, self.sc.load);
            } else {
                self.q.push(
                    c as u64 * self.sc.join_every_ns,
                    Ev::Join { client: c as u16 },
                );
            }
        }
        for (i, (t, _)) in self.sc.changes.iter().enumerate() {
            self.q.push(*t, Ev::Change { index: i as u32 });
        }
        self.q.push(0, Ev::Tick);
        while let Some((t, ev)) = self.q.pop() {
            if t > self.sc.duration_ns {
                break;
            }
            self.now = t;
            match ev {
                Ev::Attempt { client, caller } => self.attempt(client as usize, caller),
                Ev::Arrival { client, gen } => self.arrival(client as usize, gen),
                Ev::Background { gen } => self.background(gen),
                Ev::FirstToken { call } => self.first_token(call),
                Ev::Complete { call } => self.complete(call),
                Ev::Deadline { call } => self.deadline(call),
                Ev::Retry { call } => self.retry_call(call),
                Ev::Seen { call } => {
                    if self.calls[call as usize].state == State::Running {
                        self.settle(call, self.calls[call as usize].outcome)
                    }
                }
                Ev::Connected { call } => {
                    if self.calls[call as usize].state == State::Running {
                        self.dispatch(call)
                    }
                }
                Ev::Join { client } => self.set_load(client as usize, self.sc.load),
                Ev::Change { index } => self.change(self.sc.changes[index as usize].1),
                Ev::Tick => self.tick(),
            }
        }
    }

    // ---- callers ------------------------------------------------------------------------

    fn set_load(&mut self, c: usize, load: Load) {
        self.clients[c].load = load;
        self.clients[c].arrival_gen += 1;
        match load {
            Load::Closed { callers } => {
                let n = callers as usize;
                if self.clients[c].busy.len() < n {
                    self.clients[c].busy.resize(n, false);
                }
                for i in 0..n {
                    if !self.clients[c].busy[i] {
                        self.clients[c].busy[i] = true;
                        self.q.push(
                            self.now,
                            Ev::Attempt {
                                client: c as u16,
                                caller: i as u32,
                            },
                        );
                    }
                }
            }
            Load::Open { per_s } => {
                if per_s > 0.0 {
                    let gen = self.clients[c].arrival_gen;
                    let dt = exponential(&mut self.rng, per_s) * SEC as f64;
                    self.q.push(
                        self.now + dt as u64,
                        Ev::Arrival {
                            client: c as u16,
                            gen,
                        },
                    );
                }
            }
        }
    }

    fn arrival(&mut self, c: usize, gen: u32) {
        let Load::Open { per_s } = self.clients[c].load else {
            return;
        };
        if gen != self.clients[c].arrival_gen {
            return;
        }
        let dt = exponential(&mut self.rng, per_s) * SEC as f64;
        self.q.push(
            self.now + dt.max(1.0) as u64,
            Ev::Arrival {
                client: c as u16,
                gen,
            },
        );
        self.make_call(c, NO_CALLER);
    }

    fn attempt(&mut self, c: usize, caller: u32) {
        let active = match self.clients[c].load {
            Load::Closed { callers } => caller < callers,
            Load::Open { .. } => false,
        };
        if !active {
            self.clients[c].busy[caller as usize] = false;
            return;
        }
        self.make_call(c, caller);
    }

    /// A caller makes a call: acquire, then run, wait or be refused.
    fn make_call(&mut self, c: usize, caller: u32) {
        self.make_attempt(c, caller, None);
    }

    /// A call, or the next attempt of `retry_of`: its deadline is the first attempt's.
    fn make_attempt(&mut self, c: usize, caller: u32, retry_of: Option<(Call, u64, f64)>) {
        let bin = Trace::tick_of(self.now);
        bump(&mut self.trace.attempts, bin);
        let budget = match retry_of {
            Some((first, _, _)) if self.sc.timeout_ns != u64::MAX => {
                (first.origin + self.sc.timeout_ns).saturating_sub(self.now)
            }
            _ => self.sc.timeout_ns,
        };
        let group = match retry_of {
            Some((first, _, _)) => first.group,
            None => self.draw_group(),
        };
        let (priority, tenant) = self.named(group);
        let new = |w: &mut Self| {
            let id = w.new_call(c, caller, false);
            w.calls[id as usize].group = group;
            w.calls[id as usize].tenant = tenant;
            if let Some((first, delay, jitter)) = retry_of {
                let call = &mut w.calls[id as usize];
                call.origin = first.origin;
                call.attempt = first.attempt.saturating_add(1);
                call.delay = delay;
                call.jitter = jitter;
            }
            // resilix's one deadline across attempts; the retry libraries wrap a plain call
            // that has none.
            if matches!(w.retrier, Some((Retrier::Engine, _))) && w.sc.timeout_ns != u64::MAX {
                let at = w.calls[id as usize].origin + w.sc.timeout_ns;
                w.q.push(at, Ev::Deadline { call: id });
            }
            id
        };
        if retry_of.is_some() && matches!(self.retrier, Some((Retrier::Engine, _))) {
            self.clients[c].limiter.retry_pass(self.now);
        }
        let (acq, level) = match priority {
            Some(p) => self.clients[c]
                .limiter
                .acquire_as(self.now, budget, p, tenant),
            None => (
                self.clients[c].limiter.acquire(self.now, budget),
                DEFAULT_LEVEL,
            ),
        };
        match acq {
            Acq::Run(permit) => {
                let id = new(self);
                self.start_running(id, permit);
            }
            Acq::Queued => {
                let id = new(self);
                self.calls[id as usize].state = State::Queued;
                self.calls[id as usize].level = level;
                self.clients[c].waiters[level as usize].push_back(id);
            }
            Acq::Refused => {
                self.refusal(bin);
                if self.sc.mix.is_some() {
                    self.trace.group_refusals.push((self.now, group));
                }
                if caller != NO_CALLER {
                    self.q.push(
                        self.now + RETRY_NS,
                        Ev::Attempt {
                            client: c as u16,
                            caller,
                        },
                    );
                }
            }
        }
    }

    /// A new request's group in the scenario's `Mix` (0 without one: no draw).
    fn draw_group(&mut self) -> u8 {
        match self.sc.mix {
            None => 0,
            Some(Mix::Priorities { critical, .. }) => (self.rng.next_f64() >= critical) as u8,
            Some(Mix::Tenants { heavy, light, .. }) => {
                let x = self.rng.next_f64() * (heavy + light) as f64;
                if x < heavy as f64 {
                    0
                } else {
                    (1 + (x as u32 - heavy).min(light - 1)) as u8
                }
            }
        }
    }

    /// What a call of `group` tells the limiter: its priority (`None`: nothing, the old
    /// path) and tenant id.
    fn named(&self, group: u8) -> (Option<Priority>, u32) {
        match self.sc.mix {
            Some(Mix::Priorities { named: true, .. }) => (
                Some(if group == 0 {
                    Priority::Critical
                } else {
                    Priority::Sheddable
                }),
                0,
            ),
            Some(Mix::Tenants { named: true, .. }) => (
                Some(Priority::Normal),
                tenant_id(&format!("tenant-{group}")),
            ),
            _ => (None, 0),
        }
    }

    fn refusal(&mut self, bin: usize) {
        bump(&mut self.trace.refused, bin);
        if self.trace.refusal_times.is_empty() || self.now >= self.last_refusal + 10 * MS {
            self.trace.refusal_times.push(self.now);
            self.last_refusal = self.now;
        }
    }

    fn new_call(&mut self, c: usize, caller: u32, background: bool) -> u32 {
        let id = self.calls.len() as u32;
        self.calls.push(Call {
            client: c as u16,
            caller,
            created: self.now,
            origin: self.now,
            attempt: 1,
            shed: false,
            delay: 0,
            jitter: 0.0,
            admitted: 0,
            mark: 0,
            permit: 0,
            state: State::Running,
            background,
            outcome: Verdict::Success,
            group: 0,
            level: DEFAULT_LEVEL,
            tenant: 0,
        });
        if !background && self.sc.timeout_ns != u64::MAX && self.retrier.is_none() {
            self.q
                .push(self.now + self.sc.timeout_ns, Ev::Deadline { call: id });
        }
        id
    }

    fn start_running(&mut self, id: u32, permit: u64) {
        let call = &mut self.calls[id as usize];
        call.state = State::Running;
        call.permit = permit;
        call.admitted = self.now;
        let c = call.client as usize;
        if let Some(r) = self.sc.realism {
            // A call beyond the client's open connections opens one: it reaches the upstream
            // only after the setup.
            let (_, inflight, _) = self.clients[c].limiter.snapshot(self.now);
            if inflight > self.clients[c].connections {
                self.clients[c].connections = inflight;
                self.q
                    .push(self.now + r.connect_ns as u64, Ev::Connected { call: id });
                return;
            }
        }
        self.dispatch(id);
    }

    /// The caller is done with a call: a closed-loop caller makes its next one at once.
    fn caller_done(&mut self, id: u32) {
        let call = self.calls[id as usize];
        if call.caller != NO_CALLER {
            self.q.push(
                self.now,
                Ev::Attempt {
                    client: call.client,
                    caller: call.caller,
                },
            );
        }
    }

    /// Settle a running call with the limiter, record it, admit waiters.
    fn settle(&mut self, id: u32, verdict: Verdict) {
        let call = self.calls[id as usize];
        let c = call.client as usize;
        self.calls[id as usize].state = State::Ended;
        self.clients[c]
            .limiter
            .settle(call.permit, verdict, self.now);
        let seen_end = if call.mark != 0 { call.mark } else { self.now };
        let latency_ns = seen_end - call.admitted;
        self.trace.calls.push(CallRecord {
            client: call.client,
            verdict,
            admitted: true,
            created: call.created,
            started: call.admitted,
            end: self.now,
            latency_ns,
            group: call.group,
        });
        // As the engine's breaker does: a timeout of a call that waited in our queue, after its
        // response started (or before the upstream could be slow), is not the upstream's.
        let waited = call.admitted > call.created;
        let ours = verdict == Verdict::Timeout
            && waited
            && (call.mark != 0
                || self.now - call.admitted < BreakerOptions::default().slow_call_ms * MS);
        let seen = if ours { Verdict::Cancelled } else { verdict };
        // And before the limit is learnt from a window, no call is slow.
        let latency_ns = if self.clients[c].limiter.sized() {
            latency_ns
        } else {
            latency_ns.min(BreakerOptions::default().slow_call_ms * MS - 1)
        };
        self.watch_breaker(c, seen, latency_ns);
        self.admit_waiters(c);
        if !self.retried(id, verdict) {
            self.caller_done(id);
        }
    }

    // ---- retries (RetryStorm) -----------------------------------------------------------

    /// A settled call of a RetryStorm scenario is retried by its retrier: true when its next
    /// attempt is scheduled (its caller is not done yet).
    fn retried(&mut self, id: u32, verdict: Verdict) -> bool {
        let Some((retrier, attempts)) = self.retrier else {
            return false;
        };
        if !matches!(
            verdict,
            Verdict::Failure | Verdict::Overload | Verdict::Timeout
        ) {
            return false;
        }
        let call = self.calls[id as usize];
        if call.attempt as u32 >= attempts {
            return false;
        }
        let retry = call.attempt as u32; // the retry this would be: 1 for the first
        let (delay, jitter) = match retrier {
            Retrier::Engine => {
                let policy = RetryPolicy {
                    max_attempts: attempts,
                    ..RetryPolicy::default()
                };
                let remaining = (self.sc.timeout_ns != u64::MAX)
                    .then(|| (call.origin + self.sc.timeout_ns).saturating_sub(self.now));
                let s = Settled {
                    attempts: call.attempt as u32,
                    verdict,
                    hint_ns: None,
                    remaining_ns: remaining,
                    previous_delay_ns: call.delay,
                };
                let c = call.client as usize;
                match self.clients[c].limiter.retry(&policy, &s, self.now) {
                    Some(d) => (d, 0.0),
                    None => return false,
                }
            }
            Retrier::Cockatiel => {
                // cockatiel's decorrelatedJitterGenerator (Polly's DecorrelatedJitterV2):
                // exponent 2, initialDelay 128 ms, maxDelay 30 s.
                let t = (retry - 1) as f64 + self.rng.next_f64();
                let next = 2f64.powf(t) * (4.0 * t).sqrt().tanh();
                let ms = ((next - call.jitter).max(0.0) / 1.4 * 128.0).min(30_000.0);
                ((ms * MS as f64) as u64, next)
            }
            Retrier::PRetry => ((1_000 * MS) << (retry - 1).min(20), 0.0),
        };
        self.q.push(self.now + delay, Ev::Retry { call: id });
        self.calls[id as usize].delay = delay;
        self.calls[id as usize].jitter = jitter;
        true
    }

    /// The next attempt of call `id`'s request.
    fn retry_call(&mut self, id: u32) {
        let call = self.calls[id as usize];
        let (delay, jitter) = (call.delay, call.jitter);
        self.make_attempt(
            call.client as usize,
            call.caller,
            Some((call, delay, jitter)),
        );
    }

    fn watch_breaker(&mut self, c: usize, verdict: Verdict, latency_ns: u64) {
        let cl = &mut self.clients[c];
        // A shadow breaker: fed every settled call, never asked to gate one (`observe`). Its
        // first trip is recorded, then a fresh one watches on.
        if let Some(cause) = cl.breaker.observe(self.now, verdict, latency_ns) {
            self.trace.breaker_trips.push((self.now, cause));
            cl.breaker = Breaker::new(&BreakerOptions::default());
        }
        if cl.rule.on_result(self.now, verdict, latency_ns) {
            self.trace.rule_trips.push(self.now);
        }
    }

    /// The oldest waiter of the highest level still waiting (ended ones are dropped).
    fn next_waiter(&mut self, c: usize) -> Option<(usize, u32)> {
        for level in (0..LEVELS).rev() {
            while let Some(&id) = self.clients[c].waiters[level].front() {
                if self.calls[id as usize].state == State::Queued {
                    return Some((level, id));
                }
                self.clients[c].waiters[level].pop_front();
            }
        }
        None
    }

    fn admit_waiters(&mut self, c: usize) {
        while let Some((level, id)) = self.next_waiter(c) {
            let call = self.calls[id as usize];
            // The JS layer passes the waiter's deadline, counted from the request's first attempt.
            let deadline = match self.sc.timeout_ns {
                u64::MAX => 0,
                t => call.origin + t,
            };
            let wake = self.clients[c].limiter.admit_queued_by(
                self.now,
                level as u8,
                call.tenant,
                deadline,
            );
            match wake {
                Wake::Run(permit) => {
                    self.clients[c].waiters[level].pop_front();
                    self.start_running(id, permit);
                }
                Wake::Wait => break,
                Wake::Drop => {
                    self.clients[c].waiters[level].pop_front();
                    self.calls[id as usize].state = State::Ended;
                    self.refusal(Trace::tick_of(self.now));
                    self.caller_done(id);
                }
            }
        }
    }

    fn deadline(&mut self, id: u32) {
        let call = self.calls[id as usize];
        match call.state {
            State::Ended => {}
            State::Queued => {
                // The JS layer's deadline fires while the call waits: it leaves the queue and
                // its caller gets a TimeoutError; the limiter observes nothing.
                self.calls[id as usize].state = State::Ended;
                self.clients[call.client as usize]
                    .limiter
                    .leave_queue_at(call.level);
                self.trace.calls.push(CallRecord {
                    client: call.client,
                    verdict: Verdict::Timeout,
                    admitted: false,
                    created: call.created,
                    started: 0,
                    end: self.now,
                    latency_ns: 0,
                    group: call.group,
                });
                self.caller_done(id);
            }
            // The upstream keeps serving it; the caller settles Timeout now.
            State::Running => self.settle(id, Verdict::Timeout),
        }
    }

    // ---- upstream -----------------------------------------------------------------------

    fn dispatch(&mut self, id: u32) {
        let call = self.calls[id as usize];
        let quota = matches!(self.sc.measure, Measure::RateQuota { .. });
        if (self.retrier.is_some() || quota) && !call.background {
            self.trace.sent.push((self.now, call.attempt));
        }
        if self.up.fault == Fault::BlackHole && !call.background {
            return;
        }
        if let Fault::RateQuota { per_s, .. } = self.up.fault {
            let dt = (self.now - self.up.tokens_at) as f64 / SEC as f64;
            self.up.tokens = (self.up.tokens + dt * per_s).min(per_s);
            self.up.tokens_at = self.now;
            if self.up.tokens >= 1.0 {
                self.up.tokens -= 1.0;
            } else {
                // No token: answered 429 at once (serve() sees `shed`).
                self.calls[id as usize].shed = true;
            }
        }
        if self.up.busy < self.up.servers {
            self.serve(id);
        } else if let Fault::Shed { queue, .. } = self.up.fault {
            // Found the queue full: it will be rejected when its turn comes (serve()).
            self.calls[id as usize].shed = self.up.fifo.len() >= queue as usize;
            self.up.fifo.push_back(id);
        } else {
            self.up.fifo.push_back(id);
        }
    }

    fn serve(&mut self, id: u32) {
        self.up.busy += 1;
        let rng = &mut self.rng;
        let drawn = match self.up.fault {
            Fault::Shed { cost, .. } if self.calls[id as usize].shed => {
                Some((cost * self.up.service.median_ns, Verdict::Overload))
            }
            Fault::RateQuota { refuse_ns, .. } if self.calls[id as usize].shed => {
                Some((refuse_ns as f64, Verdict::Overload))
            }
            Fault::FixedLatency(d) => Some((d as f64, Verdict::Success)),
            Fault::FastFail {
                fraction,
                latency_ns,
            } if rng.next_f64() < fraction => Some((latency_ns as f64, Verdict::Failure)),
            Fault::LuckyFast {
                fraction,
                latency_ns,
            } if rng.next_f64() < fraction => Some((latency_ns as f64, Verdict::Success)),
            _ => None,
        };
        let (t, outcome) = match drawn {
            Some(d) => d,
            None => {
                let s = self.up.service;
                let median = match s.bimodal {
                    Some((p, m2)) if rng.next_f64() < p => m2,
                    _ => s.median_ns,
                };
                let t = lognormal(rng, median, s.sigma);
                let outcome = match self.up.fault {
                    Fault::Errors { fraction, overload } if rng.next_f64() < fraction => {
                        if overload {
                            Verdict::Overload
                        } else {
                            Verdict::Failure
                        }
                    }
                    _ => Verdict::Success,
                };
                (t, outcome)
            }
        };
        self.calls[id as usize].outcome = outcome;
        match self.sc.streaming {
            Some(st) if !self.calls[id as usize].background && drawn.is_none() => {
                let ttft =
                    lognormal(&mut self.rng, st.ttft_median_ns, st.ttft_sigma).max(1.0) as u64;
                let len = lognormal(&mut self.rng, st.length_median_ns, st.length_sigma) as u64;
                self.q.push(self.now + ttft, Ev::FirstToken { call: id });
                self.q
                    .push(self.now + ttft + len, Ev::Complete { call: id });
            }
            _ => self
                .q
                .push(self.now + (t.max(1.0) as u64), Ev::Complete { call: id }),
        }
    }

    fn first_token(&mut self, id: u32) {
        let call = self.calls[id as usize];
        if call.state == State::Running && self.sc.streaming.is_some_and(|s| s.mark) {
            self.calls[id as usize].mark = self.now;
            self.clients[call.client as usize]
                .limiter
                .mark(call.permit, self.now);
        }
    }

    fn complete(&mut self, id: u32) {
        self.up.busy -= 1;
        self.pump_upstream();
        let call = self.calls[id as usize];
        if !call.background && call.state == State::Running {
            match self.sc.realism {
                // The client's event loop sees the response a little later.
                Some(r) if r.lag_ns > 0.0 => {
                    let lag = exponential(&mut self.rng, SEC as f64 / r.lag_ns) * SEC as f64;
                    self.q.push(self.now + lag as u64, Ev::Seen { call: id });
                }
                _ => self.settle(id, call.outcome),
            }
        }
    }

    fn pump_upstream(&mut self) {
        while self.up.busy < self.up.servers {
            match self.up.fifo.pop_front() {
                // A streaming server drops a request whose client went away while it waited
                // for a slot, as an SSE server sees the connection close (ADR 1222).
                Some(next)
                    if self.sc.streaming.is_some()
                        && !self.calls[next as usize].background
                        && self.calls[next as usize].state != State::Running => {}
                Some(next) => self.serve(next),
                None => break,
            }
        }
    }

    fn background(&mut self, gen: u32) {
        let Some(rate) = self.up.background_rate else {
            return;
        };
        if gen != self.up.background_gen {
            return;
        }
        let dt = exponential(&mut self.rng, rate) * SEC as f64;
        self.q
            .push(self.now + dt.max(1.0) as u64, Ev::Background { gen });
        let id = self.new_call(0, NO_CALLER, true);
        self.dispatch(id);
    }

    // ---- scenario -----------------------------------------------------------------------

    fn change(&mut self, ch: Change) {
        match ch {
            Change::Servers(n) => {
                self.up.servers = n;
                self.pump_upstream();
            }
            Change::Median(m) => self.up.service.median_ns = m,
            Change::Fault(f) => self.up.fault = f,
            Change::Load(load) => {
                for c in 0..self.clients.len() {
                    self.set_load(c, load);
                }
            }
            Change::Batch(n) => {
                for _ in 0..n {
                    self.make_call(0, NO_CALLER);
                }
            }
            Change::Background(rate) => {
                self.up.background_gen += 1;
                self.up.background_rate = rate;
                if rate.is_some() {
                    let gen = self.up.background_gen;
                    self.q.push(self.now, Ev::Background { gen });
                }
            }
        }
    }

    fn tick(&mut self) {
        for (c, cl) in self.clients.iter().enumerate() {
            let (limit, inflight, queued) = cl.limiter.snapshot(self.now);
            self.trace.limit[c].push(limit);
            self.trace.inflight[c].push(inflight);
            self.trace.queued[c].push(queued);
            self.trace.baseline_ms[c].push(cl.limiter.baseline_ms(self.now));
        }
        self.trace.servers.push(self.up.servers);
        self.trace.median_ns.push(self.up.service.median_ns);
        let bin = Trace::tick_of(self.now);
        for v in [&mut self.trace.attempts, &mut self.trace.refused] {
            if v.len() <= bin {
                v.resize(bin + 1, 0);
            }
        }
        if self.now + TICK_NS <= self.sc.duration_ns {
            self.q.push(self.now + TICK_NS, Ev::Tick);
        }
    }
}

fn bump(v: &mut Vec<u32>, bin: usize) {
    if v.len() <= bin {
        v.resize(bin + 1, 0);
    }
    v[bin] += 1;
}
