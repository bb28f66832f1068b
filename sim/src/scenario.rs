//! The scenarios (described in sim/README.md), plus one scenario per failure mode reported against
//! other limiters. A scenario is data: the world at t = 0 and a list of timed changes.
//! Modelling choices are written next to the field and in sim/README.md.

use crate::dist::lognormal_mean_factor;

pub const MS: u64 = 1_000_000;
pub const SEC: u64 = 1_000_000_000;

/// How callers of one client generate calls.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Load {
    /// N callers; each starts its next call when the previous ends; a refused call is retried
    /// after 10 ms.
    Closed { callers: u32 },
    /// Poisson arrivals; a refused call is not retried (it counts as shed).
    Open { per_s: f64 },
}

/// How the upstream misbehaves, on top of its service-time distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fault {
    None,
    /// Calls are never answered (and hold no server): every caller times out.
    BlackHole,
    /// Every call takes exactly this long and holds a server meanwhile.
    FixedLatency(u64),
    /// This fraction of calls fail (5xx) after `latency_ns`.
    FastFail {
        fraction: f64,
        latency_ns: u64,
    },
    /// This fraction of calls succeed after only `latency_ns` (a cache hit, a lucky sample).
    LuckyFast {
        fraction: f64,
        latency_ns: u64,
    },
    /// This fraction of calls, after normal service, answer with a 5xx (`overload: false`)
    /// or a 429 (`overload: true`).
    Errors {
        fraction: f64,
        overload: bool,
    },
    /// The upstream's queue holds at most `queue` calls: a call that finds it full is answered
    /// 503 (overload), after waiting its turn and taking `cost` × the median service time of a
    /// server: rejecting a request is cheaper than serving it, not free.
    Shed {
        queue: u32,
        cost: f64,
    },
    /// A rate quota: a token bucket of `per_s` tokens a second holding at most one second's
    /// worth. A call that finds no token is answered 429 (overload) after `refuse_ns`, holding
    /// no server; the others are served as usual.
    RateQuota {
        per_s: f64,
        refuse_ns: u64,
    },
}

/// Service time: log-normal(median, σ); optionally bimodal (a second mode with probability p).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Service {
    pub median_ns: f64,
    pub sigma: f64,
    /// `(p, median2_ns)`: with probability p the median is median2 instead.
    pub bimodal: Option<(f64, f64)>,
}

impl Service {
    pub fn lognormal(median_ns: f64) -> Self {
        Service {
            median_ns,
            sigma: 0.3,
            bimodal: None,
        }
    }
    /// Mean service time in ns.
    pub fn mean_ns(&self) -> f64 {
        let f = lognormal_mean_factor(self.sigma);
        match self.bimodal {
            None => self.median_ns * f,
            Some((p, m2)) => ((1.0 - p) * self.median_ns + p * m2) * f,
        }
    }
    /// The p90 of the service time alone (no-load latency). Unimodal only.
    pub fn p90_ns(&self) -> f64 {
        self.median_ns * (self.sigma * crate::dist::Z90).exp()
    }
}

/// What a real HTTP client on a real machine adds to the idealised world, measured on the
/// project's local upstream (ADR 0113): the first call on each new connection pays for its
/// setup, and the client's event loop delays when a response is seen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Realism {
    /// Extra latency of the first call on each new connection (a client opens one whenever
    /// its calls in flight exceed the connections it has).
    pub connect_ns: f64,
    /// Mean of an exponential delay added to every observed latency (event-loop lag).
    pub lag_ns: f64,
}

/// Streaming calls: the response starts at the first token and the call holds its slot
/// until the stream ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Streaming {
    pub ttft_median_ns: f64,
    pub ttft_sigma: f64,
    pub length_median_ns: f64,
    pub length_sigma: f64,
    /// Whether callers call `mark()` at the first token.
    pub mark: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Change {
    Servers(u32),
    Median(f64),
    Fault(Fault),
    /// New load for every client.
    Load(Load),
    /// Another tenant's unlimited open-loop traffic straight to the upstream (`None` stops it).
    Background(Option<f64>),
    /// This many calls at once from client 0 (`Promise.allSettled(items.map(…))`); a refused
    /// one is not retried (it counts as shed).
    Batch(u32),
}

/// Who the calls are for, in a scenario that mixes them (ADR 1001, 1002). A call's group is
/// drawn at random with these weights; `named`: the calls tell the limiter (else every call is
/// at the default level, for comparison).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Mix {
    /// Group 0 critical (this share of calls), group 1 sheddable.
    Priorities { critical: f64, named: bool },
    /// Group 0 one heavy tenant sending `heavy` × what each of `light` others (groups 1…)
    /// sends; all at normal priority.
    Tenants { heavy: u32, light: u32, named: bool },
}

/// Which metrics a scenario reports (metrics.rs).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Measure {
    /// Steady state over `[from, to)` seconds: limit/C, oscillation, goodput, p90, shed,
    /// convergence (time to stay within ±20 % of the steady mean, counted from `since`).
    Steady {
        since: f64,
        from: f64,
        to: f64,
    },
    CapacityHalves,
    BaselineShift,
    Production,
    Streaming,
    Idle,
    LowTraffic,
    Fleet,
    /// A fleet as the real-process tests judge it: over the last `judged` seconds, and Jain's
    /// index over `early` (seconds), while the last processes to start still settle.
    FleetStart {
        judged: f64,
        early: (f64, f64),
    },
    /// One batch fired at `at` seconds: calls shed, served, timed out after waiting, and the
    /// time the served ones took to drain against the ideal (`size × mean service / C`).
    Batch {
        at: f64,
        size: u32,
    },
    /// An LLM server with `servers` generation slots: breaker trips, the limit against the
    /// slots, streams completed against what the slots serve, the baseline against TTFT.
    LlmSlots,
    /// Open-loop overload over `[from, to)`: goodput, queue wait (p99), the most calls waiting.
    OpenLoop {
        from: f64,
        to: f64,
    },
    /// Retries against an overloaded upstream, over `[from, to)`: attempts that reach the
    /// upstream per first attempt, and goodput, with this row's engine (its retry budget) and,
    /// run beside it on the same world and seed, cockatiel's and p-retry's retries around a
    /// plain call (world.rs `Retrier`). Every client retries up to `attempts` attempts in all.
    RetryStorm {
        attempts: u32,
        from: f64,
        to: f64,
    },
    /// A rate-quota upstream (`Fault::RateQuota`) over `[from, to)`: calls that reach it per
    /// call it accepts, and accepted calls against the quota, with this row's engine and, on
    /// the same world and seed, the same engine with its throttle off.
    RateQuota {
        from: f64,
        to: f64,
    },
    /// A fault over `[fault_from, fault_to)`: the limit during its second half, then recovery
    /// (back within ±20 % of the pre-fault mean measured over `pre`), by the end of the run.
    FaultThenRecover {
        pre: (f64, f64),
        fault_from: f64,
        fault_to: f64,
    },
    /// A `Mix` over `[from, to)`: goodput and end-to-end p90 by group, and who was refused.
    Mixed {
        from: f64,
        to: f64,
    },
}

#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: &'static str,
    /// One line: what it shows (the table's legend and the plot's title).
    pub about: &'static str,
    pub duration_ns: u64,
    pub servers: u32,
    pub service: Service,
    pub fault: Fault,
    pub clients: u32,
    pub load: Load,
    /// Per-call timeout from the moment the call is made (queue wait counts against it).
    pub timeout_ns: u64,
    pub streaming: Option<Streaming>,
    /// Calls already waiting in the upstream's FIFO at t = 0 (someone else's backlog).
    pub initial_backlog: u32,
    /// Client c starts its load at c × this (0: all at once).
    pub join_every_ns: u64,
    /// Each client starts its load at a random time in `[0, this)` (a fleet's processes do not
    /// start in lockstep). 0: at once (or `join_every_ns`).
    pub stagger_ns: u64,
    /// Each client's baseline probes at its own random phase instead of the fleet's common one
    /// (`--jittered-probes`: Envoy's choice, for comparison).
    pub jittered_probes: bool,
    /// What a real client adds (`Realism`); `None`: the idealised world.
    pub realism: Option<Realism>,
    /// `initialLimit` of the clients' limiters (`None`: the default).
    pub initial_limit: Option<u32>,
    /// Who the calls are for (`None`: nobody in particular, every call at the default level).
    pub mix: Option<Mix>,
    pub changes: Vec<(u64, Change)>,
    pub measure: Measure,
}

fn s(x: f64) -> u64 {
    (x * SEC as f64) as u64
}

/// The common world: C = 50, S = 50 ms, N = 200 closed loop, timeout 10 × S.
fn common(name: &'static str, about: &'static str, secs: f64, measure: Measure) -> Scenario {
    Scenario {
        name,
        about,
        duration_ns: s(secs),
        servers: 50,
        service: Service::lognormal(50.0 * MS as f64),
        fault: Fault::None,
        clients: 1,
        load: Load::Closed { callers: 200 },
        timeout_ns: 500 * MS,
        streaming: None,
        initial_backlog: 0,
        join_every_ns: 0,
        stagger_ns: 0,
        jittered_probes: false,
        realism: None,
        initial_limit: None,
        mix: None,
        changes: Vec::new(),
        measure,
    }
}

/// The Node tests' real upstream and client: a fixed 100 ms service (σ 0.02), no deadline, the
/// first call on each new connection 40 ms late, responses seen an exponential 2 ms late.
fn real_upstream(sc: &mut Scenario) {
    sc.service = Service {
        median_ns: 100.0 * MS as f64,
        sigma: 0.02,
        bimodal: None,
    };
    sc.timeout_ns = u64::MAX;
    sc.realism = Some(Realism {
        connect_ns: 40.0 * MS as f64,
        lag_ns: 2.0 * MS as f64,
    });
}

/// The common scenarios, in order, then the reported failure modes.
pub fn all() -> Vec<Scenario> {
    let mut v = Vec::new();

    v.push(common(
        "converge",
        "C=50, S=50ms, N=200 closed loop: the limit finds C and holds",
        300.0,
        Measure::Steady {
            since: 0.0,
            from: 150.0,
            to: 300.0,
        },
    ));

    let mut sc = common(
        "capacity-halves",
        "C=50, 25 at 200s, 50 again at 400s",
        600.0,
        Measure::CapacityHalves,
    );
    sc.changes = vec![
        (s(200.0), Change::Servers(25)),
        (s(400.0), Change::Servers(50)),
    ];
    v.push(sc);

    let mut sc = common(
        "baseline-shift",
        "S=50ms becomes 150ms for good at 200s",
        600.0,
        Measure::BaselineShift,
    );
    sc.changes = vec![(s(200.0), Change::Median(150.0 * MS as f64))];
    v.push(sc);

    let mut sc = common(
        "production",
        "open loop 60/s, S 0.35s -> 10.4s at 200s, 0% errors, timeout 60s",
        600.0,
        Measure::Production,
    );
    sc.service = Service::lognormal(350.0 * MS as f64);
    sc.load = Load::Open { per_s: 60.0 };
    sc.timeout_ns = 60 * SEC;
    sc.changes = vec![(s(200.0), Change::Median(10.4 * SEC as f64))];
    v.push(sc);

    for (name, mark) in [("streaming", true), ("streaming-no-mark", false)] {
        let about = if mark {
            "16 streams, TTFT 280ms, 45s long, mark() at first token"
        } else {
            "the same 16 streams without mark(): the limiter sees 45s"
        };
        let mut sc = common(name, about, 900.0, Measure::Streaming);
        sc.servers = 10_000;
        sc.load = Load::Closed { callers: 16 };
        sc.streaming = Some(Streaming {
            ttft_median_ns: 280.0 * MS as f64,
            ttft_sigma: 0.3,
            length_median_ns: 45.0 * SEC as f64,
            length_sigma: 0.5,
            mark,
        });
        sc.service = Service::lognormal(280.0 * MS as f64);
        // Choice: 10 × the median whole call (TTFT + 45 s), not 10 × TTFT, which would cut
        // every healthy stream at 2.8 s. No stream times out in practice.
        sc.timeout_ns = s(10.0 * 45.28);
        v.push(sc);
    }

    let mut sc = common(
        "idle",
        "fault 200-300s (all time out), no calls 300-900s, N=200 again at 900s",
        1100.0,
        Measure::Idle,
    );
    sc.changes = vec![
        (s(200.0), Change::Fault(Fault::BlackHole)),
        (s(300.0), Change::Load(Load::Closed { callers: 0 })),
        (s(300.0), Change::Fault(Fault::None)),
        (s(900.0), Change::Load(Load::Closed { callers: 200 })),
    ];
    v.push(sc);

    let mut sc = common(
        "low-traffic",
        "8 calls/min; 600-900s every call takes 30s (timeout 5s)",
        1800.0,
        Measure::LowTraffic,
    );
    sc.load = Load::Open { per_s: 8.0 / 60.0 };
    sc.timeout_ns = 5 * SEC;
    sc.changes = vec![
        (s(600.0), Change::Fault(Fault::FixedLatency(30 * SEC))),
        (s(900.0), Change::Fault(Fault::None)),
    ];
    v.push(sc);

    let mut sc = common(
        "fleet",
        "10 clients x 40 callers, one upstream C=100",
        600.0,
        Measure::Fleet,
    );
    sc.servers = 100;
    sc.clients = 10;
    sc.load = Load::Closed { callers: 40 };
    v.push(sc);

    // The fleet at other sizes, and joining one by one (reported, no goal).
    for (name, about, clients, callers, join) in [
        (
            "fleet-3",
            "3 clients x 40 callers, one upstream C=100",
            3,
            40,
            0.0,
        ),
        (
            "fleet-30",
            "30 clients x 40 callers, one upstream C=100",
            30,
            40,
            0.0,
        ),
        (
            "fleet-join",
            "10 clients x 40 callers joining 60s apart, C=100",
            10,
            40,
            60.0,
        ),
    ] {
        let mut sc = common(name, about, 900.0, Measure::Fleet);
        sc.servers = 100;
        sc.clients = clients;
        sc.load = Load::Closed { callers };
        sc.join_every_ns = s(join);
        v.push(sc);
    }

    // The Node tests' fleets: separate processes, each with 64 callers, starting at random
    // within 3 s, against the real upstream's fixed 100 ms service, with the connection setup
    // and event-loop lag a real client adds; 50 s judged over the last 15 s, as the test does,
    // and over 15–25 s, the start a late process still settles from (ADR 0123).
    for (name, about, clients, servers) in [
        (
            "fleet-real",
            "4 clients x 64 callers, C=32, S=100ms fixed, starts within 3s, lag",
            4,
            32,
        ),
        (
            "fleet-real-8",
            "8 clients x 64 callers, C=64, S=100ms fixed, starts within 3s, lag",
            8,
            64,
        ),
    ] {
        let measure = Measure::FleetStart {
            judged: 15.0,
            early: (15.0, 25.0),
        };
        let mut sc = common(name, about, 50.0, measure);
        sc.servers = servers;
        sc.clients = clients;
        real_upstream(&mut sc);
        sc.load = Load::Closed { callers: 64 };
        sc.stagger_ns = s(3.0);
        v.push(sc);
    }

    // A small real upstream as the Node tests drive it: C=8, 100 ms, 40 callers, with the
    // connection setup and event-loop lag a real client adds; from the default limit and from
    // far above (60), and halving at 30 s.
    for (name, about, initial, halves) in [
        (
            "real-small",
            "C=8, S=100ms fixed, N=40, cold connections + loop lag",
            20,
            false,
        ),
        ("real-from-above", "the same from a limit of 60", 60, false),
        ("real-halves", "the same, C=16 -> 8 at 30s", 20, true),
    ] {
        let since = if halves { 30.0 } else { 0.0 };
        let mut sc = common(
            name,
            about,
            60.0,
            Measure::Steady {
                since,
                from: 50.0,
                to: 60.0,
            },
        );
        sc.servers = if halves { 16 } else { 8 };
        real_upstream(&mut sc);
        sc.load = Load::Closed { callers: 40 };
        sc.initial_limit = Some(initial);
        if halves {
            sc.changes = vec![(s(30.0), Change::Servers(8))];
        }
        v.push(sc);
    }

    // Failure modes reported against other limiters, each on the common world.
    let mut sc = common(
        "lucky-fast-sample",
        "Netflix #37/#34: 0.5% of calls answer in 1ms (a cache hit)",
        300.0,
        Measure::Steady {
            since: 0.0,
            from: 150.0,
            to: 300.0,
        },
    );
    sc.fault = Fault::LuckyFast {
        fraction: 0.005,
        latency_ns: MS,
    };
    v.push(sc);

    let mut sc = common(
        "probe-under-load",
        "Netflix #165: N=400 for 600s, the baseline probe only ever sees loaded samples",
        600.0,
        Measure::Steady {
            since: 0.0,
            from: 300.0,
            to: 600.0,
        },
    );
    sc.load = Load::Closed { callers: 400 };
    v.push(sc);

    let mut sc = common(
        "uniform-timeouts",
        "Netflix #137: 100-400s every call ends at the same 500ms timeout",
        600.0,
        Measure::FaultThenRecover {
            pre: (50.0, 100.0),
            fault_from: 100.0,
            fault_to: 400.0,
        },
    );
    sc.changes = vec![
        (s(100.0), Change::Fault(Fault::BlackHole)),
        (s(400.0), Change::Fault(Fault::None)),
    ];
    v.push(sc);

    let mut sc = common(
        "fast-failures",
        "Netflix #176: 200-400s every call fails with a 5xx after 1ms",
        600.0,
        Measure::FaultThenRecover {
            pre: (100.0, 200.0),
            fault_from: 200.0,
            fault_to: 400.0,
        },
    );
    sc.changes = vec![
        (
            s(200.0),
            Change::Fault(Fault::FastFail {
                fraction: 1.0,
                latency_ns: MS,
            }),
        ),
        (s(400.0), Change::Fault(Fault::None)),
    ];
    v.push(sc);

    let mut sc = common(
        "modest-overload",
        "Netflix PR #134: open loop at 1.1 x capacity for 600s",
        600.0,
        Measure::Steady {
            since: 0.0,
            from: 300.0,
            to: 600.0,
        },
    );
    sc.load = Load::Open {
        per_s: 1.1 * capacity_per_s(50, &sc.service),
    };
    v.push(sc);

    let mut sc = common(
        "heavy-load-subsides",
        "go-concurrency-limits #117: a neighbour at 0.95 x capacity 100-300s, then gone",
        600.0,
        Measure::FaultThenRecover {
            pre: (50.0, 100.0),
            fault_from: 100.0,
            fault_to: 300.0,
        },
    );
    sc.changes = vec![
        (
            s(100.0),
            Change::Background(Some(0.95 * capacity_per_s(50, &sc.service))),
        ),
        (s(300.0), Change::Background(None)),
    ];
    v.push(sc);

    let mut sc = common(
        "long-incident",
        "failsafe-go #127: C=50 -> 10 for 20 minutes (200-1400s)",
        1400.0,
        Measure::Steady {
            since: 200.0,
            from: 800.0,
            to: 1400.0,
        },
    );
    sc.changes = vec![(s(200.0), Change::Servers(10))];
    v.push(sc);

    let mut sc = common(
        "start-overloaded",
        "Envoy #38338: starts behind a 20s backlog in the upstream",
        300.0,
        Measure::Steady {
            since: 0.0,
            from: 150.0,
            to: 300.0,
        },
    );
    sc.initial_backlog = (20.0 * capacity_per_s(50, &sc.service)) as u32;
    v.push(sc);

    v.extend(queue_scenarios());
    v.extend(mix_scenarios());
    v.push(retry_storm());
    v.push(rate_quota());
    v.extend(llm_scenarios());
    v
}

/// An LLM server: G generation slots; a stream gets a slot FIFO, its first token 200 ms after
/// (so its time to first token includes the wait for a slot), then tokens for 5 s or 45 s,
/// holding the slot. 40 closed-loop consumers mark at the first token; per-call deadline three
/// stream lengths: 15 s for 5 s streams, 135 s for 45 s ones. The `-exact` ones are the Node
/// tests' SSE server: every stream exactly as long, so streams that start together end
/// together, round after round (ADR 0118).
fn llm_scenarios() -> Vec<Scenario> {
    const VARIED: (f64, f64) = (0.05, 0.1);
    const EXACT: (f64, f64) = (0.0, 0.0);
    // The Node test's exact streams as a busy 2-core machine sees them end: a spread of about
    // 50 ms (ADR 1220).
    const BUSY: (f64, f64) = (0.0, 0.01);
    let mut v = Vec::new();
    for (name, about, slots, len_s, secs, (ttft_sigma, length_sigma)) in [
        (
            "llm-slots",
            "16 slots, TTFT 200ms after a slot, 5s streams, 40 consumers",
            16,
            5.0,
            300.0,
            VARIED,
        ),
        (
            "llm-slots-4",
            "4 slots, TTFT 200ms after a slot, 5s streams, 40 consumers",
            4,
            5.0,
            300.0,
            VARIED,
        ),
        (
            "llm-slots-45s",
            "16 slots, TTFT 200ms after a slot, 45s streams, 40 consumers",
            16,
            45.0,
            900.0,
            VARIED,
        ),
        (
            "llm-slots-exact",
            "16 slots, TTFT 200ms after a slot, every stream 5s, 40 consumers",
            16,
            5.0,
            300.0,
            EXACT,
        ),
        (
            "llm-slots-45s-exact",
            "16 slots, TTFT 200ms after a slot, every stream 45s, 40 consumers",
            16,
            45.0,
            900.0,
            EXACT,
        ),
        (
            "llm-slots-busy",
            "as llm-slots-exact on a busy machine: streams end up to ~100ms apart; 64s",
            16,
            5.0,
            65.0,
            BUSY,
        ),
    ] {
        let mut sc = common(name, about, secs, Measure::LlmSlots);
        sc.servers = slots;
        sc.load = Load::Closed { callers: 40 };
        sc.timeout_ns = s(3.0 * len_s);
        sc.streaming = Some(Streaming {
            ttft_median_ns: 200.0 * MS as f64,
            ttft_sigma,
            length_median_ns: len_s * SEC as f64,
            length_sigma,
            mark: true,
        });
        v.push(sc);
    }
    v
}

/// 4 clients, 3 attempts each, against an upstream at 2 × overload that sheds beyond a queue
/// of C: how many attempts reach it per first attempt (ADR 0904).
fn retry_storm() -> Scenario {
    let mut sc = Scenario {
        servers: 16,
        service: Service::lognormal(25.0 * MS as f64),
        clients: 4,
        // A rejection costs a tenth of a call: ours, a guess (it reads and parses the request).
        fault: Fault::Shed {
            queue: 16,
            cost: 0.1,
        },
        timeout_ns: 2 * SEC,
        ..common(
            "retry-storm",
            "4 clients x 3 attempts, open loop at 2 x capacity, C=16 sheds beyond a queue of 16",
            60.0,
            Measure::RetryStorm {
                attempts: 3,
                from: 10.0,
                to: 60.0,
            },
        )
    };
    sc.load = Load::Open {
        per_s: 2.0 * capacity_per_s(16, &sc.service) / 4.0,
    };
    sc
}

/// An upstream that answers 429 in 1 ms above a rate quota of 100 calls a second, offered four
/// times the quota in Poisson arrivals; calls within the quota take 20 ms (ADR 1000).
fn rate_quota() -> Scenario {
    let quota = 100.0;
    let mut sc = Scenario {
        servers: 10_000,
        service: Service::lognormal(20.0 * MS as f64),
        fault: Fault::RateQuota {
            per_s: quota,
            refuse_ns: MS,
        },
        timeout_ns: 2 * SEC,
        ..common(
            "rate-quota",
            "429 in 1 ms above a quota of 100/s, open loop at 4 x the quota, S=20ms within it",
            60.0,
            Measure::RateQuota {
                from: 10.0,
                to: 60.0,
            },
        )
    };
    sc.load = Load::Open { per_s: 4.0 * quota };
    sc
}

/// The queue's scenarios: C = 16, S = 25 ms. A batch on a warm key (10 s of N = 10 closed-loop
/// callers, who then stop) must drain, not be shed; open-loop traffic at twice the capacity is
/// a standing queue and must be shed.
fn queue_scenarios() -> Vec<Scenario> {
    let small = |name, about, secs, measure| Scenario {
        servers: 16,
        service: Service::lognormal(25.0 * MS as f64),
        ..common(name, about, secs, measure)
    };
    let mut v = Vec::new();
    for (name, about, size, timeout_ns) in [
        (
            "batch-100",
            "C=16, S=25ms, warm key, then 100 calls at once, no deadline",
            100,
            u64::MAX,
        ),
        (
            "batch-1000",
            "C=16, S=25ms, warm key, then 1 000 calls at once, no deadline",
            1_000,
            u64::MAX,
        ),
        (
            "batch-10000",
            "C=16, S=25ms, warm key, then 10 000 calls at once, no deadline",
            10_000,
            u64::MAX,
        ),
        (
            "batch-10000-60s",
            "C=16, S=25ms, warm key, then 10 000 calls at once, 60s deadline",
            10_000,
            s(60.0),
        ),
        (
            "batch-1000-500ms",
            "C=16, S=25ms, warm key, then 1 000 calls at once, 500ms deadline",
            1_000,
            500 * MS,
        ),
    ] {
        let mut sc = small(name, about, 40.0, Measure::Batch { at: 10.0, size });
        sc.load = Load::Closed { callers: 10 };
        sc.timeout_ns = timeout_ns;
        sc.changes = vec![
            (s(10.0), Change::Load(Load::Closed { callers: 0 })),
            (s(10.0), Change::Batch(size)),
        ];
        v.push(sc);
    }
    // An upstream with no capacity bound: the limit should grow while the batch drains.
    let mut sc = small(
        "batch-unbounded",
        "S=20ms, no capacity bound, warm key, then 10 000 calls at once, no deadline",
        40.0,
        Measure::Batch {
            at: 10.0,
            size: 10_000,
        },
    );
    sc.servers = 10_000;
    sc.service = Service::lognormal(20.0 * MS as f64);
    sc.load = Load::Closed { callers: 10 };
    sc.timeout_ns = u64::MAX;
    sc.changes = vec![
        (s(10.0), Change::Load(Load::Closed { callers: 0 })),
        (s(10.0), Change::Batch(10_000)),
    ];
    v.push(sc);
    for (name, about, timeout_ns) in [
        (
            "open-loop-2x",
            "C=16, S=25ms, open loop at 2 x capacity for 60s, no deadline",
            u64::MAX,
        ),
        (
            "open-loop-2x-1.5s",
            "C=16, S=25ms, open loop at 2 x capacity for 60s, 1.5s deadline",
            s(1.5),
        ),
    ] {
        let mut sc = small(
            name,
            about,
            60.0,
            Measure::OpenLoop {
                from: 10.0,
                to: 60.0,
            },
        );
        sc.load = Load::Open {
            per_s: 2.0 * capacity_per_s(16, &sc.service),
        };
        sc.timeout_ns = timeout_ns;
        v.push(sc);
    }
    v.extend(below_start_scenarios());
    v
}

/// A self-hosted LLM server as the Node tests' real one serves (ADR 1222): headers at once, the
/// first token 20 ms after a slot frees, every stream 3.2 s (160 tokens), all consumers starting
/// together, a deadline of three stream lengths; fewer consumers than the starting limit (so the
/// limit never binds by itself) and more.
fn below_start_scenarios() -> Vec<Scenario> {
    const LEN_S: f64 = 3.2;
    let critical = |named| Mix::Priorities {
        critical: 2.0 / 16.0,
        named,
    };
    let mut v = Vec::new();
    for (name, about, slots, callers, mix) in [
        (
            "llm-slots-below-start",
            "4 slots, TTFT 20ms after a slot, 3.2s streams, 16 consumers starting together",
            4,
            16,
            None,
        ),
        (
            "llm-slots-below-start-16",
            "16 slots, TTFT 20ms after a slot, 3.2s streams, 18 consumers starting together",
            16,
            18,
            None,
        ),
        (
            "llm-slots-above-start",
            "4 slots, TTFT 20ms after a slot, 3.2s streams, 32 consumers starting together",
            4,
            32,
            None,
        ),
        (
            "llm-slots-above-start-16",
            "16 slots, TTFT 20ms after a slot, 3.2s streams, 40 consumers starting together",
            16,
            40,
            None,
        ),
        (
            "llm-slots-priorities",
            "as llm-slots-below-start, 1 call in 8 critical and the rest sheddable",
            4,
            16,
            Some(critical(true)),
        ),
        (
            "llm-slots-priorities-off",
            "as llm-slots-priorities, the calls naming no priority (for comparison)",
            4,
            16,
            Some(critical(false)),
        ),
    ] {
        let mut sc = common(name, about, 60.0, Measure::LlmSlots);
        sc.servers = slots;
        sc.load = Load::Closed { callers };
        sc.timeout_ns = s(3.0 * LEN_S);
        sc.mix = mix;
        sc.streaming = Some(Streaming {
            ttft_median_ns: 20.0 * MS as f64,
            ttft_sigma: 0.0,
            length_median_ns: LEN_S * SEC as f64,
            length_sigma: 0.0,
            mark: true,
        });
        v.push(sc);
    }
    v
}

/// Who gets the capacity (ADR 1001, 1002): the queue's world (C = 16, S = 25 ms), open loop at
/// twice the capacity with a 1.5 s deadline, each with its comparison where calls name nothing.
fn mix_scenarios() -> Vec<Scenario> {
    let mut v = Vec::new();
    for (name, about, mix) in [
        (
            "priorities",
            "C=16, S=25ms, open loop at 2 x capacity, 30 % critical and 70 % sheddable",
            Mix::Priorities {
                critical: 0.3,
                named: true,
            },
        ),
        (
            "priorities-off",
            "as priorities, the calls naming no priority (for comparison)",
            Mix::Priorities {
                critical: 0.3,
                named: false,
            },
        ),
        (
            "tenants",
            "C=16, S=25ms, open loop at 2 x capacity, one tenant sends 10 x what each of 9 others sends",
            Mix::Tenants {
                heavy: 10,
                light: 9,
                named: true,
            },
        ),
        (
            "tenants-off",
            "as tenants, the calls naming no tenant (for comparison)",
            Mix::Tenants {
                heavy: 10,
                light: 9,
                named: false,
            },
        ),
    ] {
        let mut sc = Scenario {
            servers: 16,
            service: Service::lognormal(25.0 * MS as f64),
            timeout_ns: s(1.5),
            mix: Some(mix),
            ..common(name, about, 60.0, Measure::Mixed { from: 10.0, to: 60.0 })
        };
        sc.load = Load::Open {
            per_s: 2.0 * capacity_per_s(16, &sc.service),
        };
        v.push(sc);
    }
    v
}

/// Calls per second C servers complete: C / mean service time.
pub fn capacity_per_s(servers: u32, service: &Service) -> f64 {
    servers as f64 * SEC as f64 / service.mean_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_the_canonical_ones_exist() {
        let all = all();
        let mut names: Vec<_> = all.iter().map(|s| s.name).collect();
        for n in [
            "converge",
            "capacity-halves",
            "baseline-shift",
            "production",
            "streaming",
            "idle",
            "low-traffic",
            "fleet",
        ] {
            assert!(names.contains(&n), "{n} missing");
        }
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len());
    }

    #[test]
    fn converge_capacity_is_c_over_the_lognormal_mean() {
        let c = capacity_per_s(50, &Service::lognormal(50.0 * MS as f64));
        assert!((c - 50.0 / 0.05 / 1.046).abs() < 0.5, "{c}");
    }
}
