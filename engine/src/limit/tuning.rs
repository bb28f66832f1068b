//! The tuned constants of the adaptive limit, in one table. Each says where it came from: the
//! ADR and the measurement that chose it, or that it is a guess, with what was measured at
//! half and at twice its value where that was done. docs/limiter.md describes the rules they
//! tune. The options (`initialLimit`, `probeIntervalMs`, …) carry their own provenance in
//! `options.rs`; the queue's constants sit with the queue (`standing.rs`, `limiter.rs`), and the
//! quantile ring's capacity with the ring (`quantile/ring.rs`, ADR 0101).
//! `__test__/limit-tuning.test.mjs` holds that no other file of the limit declares one.

// ---------------------------------------------------------------------------------------------
// The latency filter (filter.rs)
// ---------------------------------------------------------------------------------------------

/// EMA weight of a new median: failsafe-go's age-5 EMA (2 / (5 + 1)) for rises; a fall is
/// taken at once (ADR 0103: with a symmetric EMA a 5 s timeout p90 took ~10 windows to decay
/// after the upstream healed).
pub const SMOOTHING_ALPHA: f64 = 1.0 / 3.0;

// ---------------------------------------------------------------------------------------------
// The baseline and what a probe's reading does to it (baseline.rs)
// ---------------------------------------------------------------------------------------------

/// A probe that reads this far from the baseline (either way) replaces it. Ours, a guess: well
/// above the ±7 % a p90 of 32 calls swings by in the simulator, well below the ×2-5 of a
/// baseline taken under load. ADR 0113: at 1.25 and 3 nothing moved by more than noise
/// (`baseline-shift` 96.3 % both, 96.4 % at 1.5).
pub const PROBE_JUMP: f64 = 1.5;

/// How far a probe within `PROBE_JUMP` moves the baseline towards its reading. Ours, a guess:
/// a quarter averages the ±7 % of one probe down to about ±3 % over the last few. ADR 0113:
/// `converge` oscillated 1.9 % at an eighth, 4.7 % at a quarter, 6.7 % at a half.
pub const PROBE_WEIGHT: f64 = 0.25;

/// A probe reading this many of its standard errors below the baseline replaces it, however
/// near: the baseline held another process's queue (a probe polluted by one that let go first),
/// and walking a quarter of the way left the processes of one fleet reading 1.3 × apart for a
/// minute (ADR 0121). Ours, a guess: at 2 lucky low probes on a noisy upstream cut `converge`'s
/// and `capacity-halves`' goodput, at 4 `modest-overload`'s; ADR 0121 has 4 and 16.
pub const SURE_LOWER: f64 = 8.0;

// ---------------------------------------------------------------------------------------------
// The baseline probe (probe.rs)
// ---------------------------------------------------------------------------------------------

/// The interval doubles (from `probeIntervalMs`) until it is at least this many expected
/// probe durations, so that a slow upstream is not probed for a larger share of the time.
/// Ours, a guess: about 4 % of the time held low. ADR 0113: at 12.5 `baseline-shift` goodput
/// 94.4 % (96.4 % at 25), at 50 97.5 % and nothing else moved.
pub const INTERVAL_OVER_PROBE: f64 = 25.0;

/// The most calls a probe times (it admits three rounds at its level, at least 8). Ours: a p90 of
/// 8 swung ±15 % between probes of one steady upstream in the simulator, of 32 ±7 %. A guess;
/// ADR 0113: at 16 `fleet-3` fell to 0.93 × C and 91.1 % goodput (1.03, 98.7 %), at 64 nothing
/// moved.
pub const PROBE_SAMPLES: usize = 32;

/// The rounds at its level a probe times (`PROBE_ROUNDS` × its level calls, from
/// `PROBE_MIN_CALLS` to `PROBE_SAMPLES`). Ours, a guess (ADR 0113); not measured at half and
/// twice.
pub const PROBE_ROUNDS: usize = 3;

/// The fewest calls a probe times, however low its level: a p90 of 8 calls swung ±15 % between
/// probes of a steady upstream (ADR 0113). Three rounds at any level instead (3 calls at a
/// level of 1), on top of a constant queued call, read a real fleet of 4 × C 32 at Jain 0.620,
/// 0.716, 0.883, 0.966 and 0.594 (ADR 0119); not measured at 4 and 16.
pub const PROBE_MIN_CALLS: usize = 8;

/// The probe's admission limit, as a fraction of the learnt limit (at least `minLimit`). A
/// quarter drains the upstream whenever the limit is within 4 × its capacity, and a limit
/// further above converges in two probes (a half drains only a limit within 2 × the capacity).
/// Ours, a guess. ADR 0113: at an eighth `capacity-halves` re-converged in 88.2 s (6.3 s), at a
/// half as at a quarter (`converge` goodput 99.7 % against 99.0 %).
pub const PROBE_LEVEL: f64 = 0.25;

/// The same once two probes in a row read near the baseline (`SETTLED`): the limit is then near
/// what the upstream serves, a third of it drains the upstream as surely, and the probe holds
/// fewer calls back for less time. Ours, a guess (ADR 0125, `converge` goodput): a quarter
/// 98.99 %, a third 99.30 %, 0.4 99.50 % but `modest-overload` settled in 18.3 s (8.2 s), a
/// half 99.60 % but `modest-overload` settled in 192 s (its probes read low: the timed calls
/// that run out of deadline are counted at the usual mean).
pub const SETTLED_PROBE_LEVEL: f64 = 1.0 / 3.0;

/// How long draining may take, in smoothed latencies (at least `PROBE_MIN_NS`): a full client
/// drains in about one. Ours, a guess; at 1.5 and 6 the simulator read the same (ADR 0113).
pub const DRAIN_LATENCIES: f64 = 3.0;

/// How long the timed calls may take to start, and then to finish, each in smoothed latencies
/// (at least `PROBE_MIN_NS`). Ours, a guess; at 1.5 and 6 only `baseline-shift` moved, 96.3 and
/// 96.5 % goodput against 96.4 % (ADR 0113).
pub const MEASURE_LATENCIES: f64 = 3.0;

/// A timed call slower than the probe's median by this many median absolute deviations is left
/// out of its mean: in a fleet it waited behind another process that had not drained yet, or
/// that refilled first (a real fleet's probes read 100-103 ms with such calls at 111-258 ms),
/// and one of them walked a process's baseline 25 % above the others' for a whole interval (ADR
/// 0122). A lognormal latency (σ 0.3) leaves out fewer than 1 in 10 000 calls. Ours, a guess: at
/// 5 the simulator's `baseline-shift` goodput fell to 92.4 %; at 20, 111 ms passes.
pub const OUTLIER_MADS: f64 = 10.0;

/// The median absolute deviation counts as at least this share of the median, so that a
/// fixed-time upstream (all calls within a millisecond) does not leave out every call above its
/// median. Ours: a fifth of the spread a real fixed 100 ms upstream's probes read (ADR 0122);
/// not measured at half and twice.
pub const MAD_FLOOR: f64 = 0.002;

/// The fewest cold calls that make a reading (see `Probe::cold_sample`). Ours, a guess: a p90
/// of 3 is their largest, within the ±15 % of a probe of 8 on a steady upstream (ADR 0116);
/// not measured at half and twice.
pub const COLD_SAMPLES: usize = 3;

/// The floor of each of the probe's bounds, ns (BBR holds ProbeRTT for at least 200 ms; ADR
/// 0113).
pub const PROBE_MIN_NS: f64 = 200_000_000.0;

/// A probe that starts this many smoothed latencies after its phase settles nothing: the other
/// processes sharing the upstream drained at the phase and are timing their own calls, or done.
/// Ours, a guess: a process sees the phase at its next call, within milliseconds under load; a
/// new key's first probe waits for its first window, seconds after. ADR 0121 has 0.25 and 1.
pub const LATE_FOR_PHASE: f64 = 0.5;

// ---------------------------------------------------------------------------------------------
// A key's start: the cold calls against its first window (adaptive.rs)
// ---------------------------------------------------------------------------------------------

/// How much lower the cold calls must read than the first window for the window to count as
/// loaded (see `Adaptive::cold_start`). Ours: a few cold calls read up to 1.9 × lower than a
/// window of an unloaded upstream in the simulator, streams queued for a slot 19 × (ADR 0116).
/// A guess between: at 1.5 `open-loop-2x` goodput fell from 99.5 % to 92.9 %; at 3 no
/// scenario but the streams' changes; twice (6) was not measured.
pub const COLD_JUMP: f64 = 3.0;

/// Where calls stream, the gap between two neighbouring cold calls (sorted) past which the
/// slower ones waited inside the upstream for a slot and the faster ones are the reading (see
/// `Probe::cold_fast`; ADR 1222). Ours, `COLD_JUMP`'s value: a call that waited for a slot
/// waits for a stream to end, 16–160 × a first token of 20–200 ms. At 1.5 the simulator's
/// `llm-slots` scenarios read the same; at 6 `llm-slots-above-start` read the baseline 1.22 ×
/// the first token (1.00 at 3).
pub const COLD_GAP: f64 = 3.0;

/// A first window this much slower than the cold calls, but not `COLD_JUMP`, may have been
/// loaded: the first probe comes at once instead of at the next phase (ADR 0119). Ours, a
/// guess: a few cold calls read up to 1.9 × lower than an unloaded window in the simulator,
/// where the probe then only costs its hold. ADR 0119: at 3 `real-from-above` came into the
/// band at 10.9 s (3.8 s), at 2 as at 1.5, at 1.25 `fleet-real-8` read Jain 0.86 (0.91).
pub const EARLY_PROBE: f64 = 1.5;

/// As `EARLY_PROBE`, for cold calls that never settled with the client at or below the probe's
/// level (admitted together with many more, and served among them in any order): their p90 is
/// then near the window's, and the means are compared instead (ADR 0120). Ours: a real
/// upstream read 1.52–1.77 × under load; at 1.15 the simulator's `fleet-real-8` fell from 0.91
/// to 0.86 and `baseline-shift` from 98.1 to 97.8 %; at 1.6 the engine's shuffled start waits
/// for the phase.
pub const EARLY_PROBE_CROWDED: f64 = 1.3;

// ---------------------------------------------------------------------------------------------
// Streams queued at the upstream (adaptive.rs)
// ---------------------------------------------------------------------------------------------

/// A call that holds its slot past its first byte (a stream) and has waited `STREAM_LATE` × the
/// no-load latency without one is queued at the upstream (for a generation slot, say); `LATE`
/// in ADR 0118. Ours, a
/// guess. ADR 0118 (throughput of `llm-slots`, `llm-slots-4`, `llm-slots-45s`): at 2 99.1, 97.5,
/// 100 %; at 4 98.6, 97.5, 100 %; at 8 98.8, 93.2, 99.7 % (a call waiting for one of 4 slots
/// is often not counted before a slot frees).
pub const STREAM_LATE: f64 = 4.0;

/// A slot given back within `HANDOVER` × the no-load latency went to a call queued at the
/// upstream that has not had its first byte yet: it is no longer counted waiting (ADR 1220).
/// Ours, a guess: a call handed a slot has its first byte about one no-load latency later; twice
/// allows for a busy event loop. ADR 1220 (`llm-slots`, `llm-slots-busy`): at 1 1.13 × the slots,
/// 98.8 % and 1.06 ×, 96.0 %; at 4 1.17 ×, 98.4 % and 1.06 ×, 96.0 %; at 0 (off) `llm-slots-busy`
/// 1.01 ×, 92.0 % (seed 1: 0.71 ×, 66.0 %).
pub const HANDOVER: f64 = 2.0;

/// At most this many recent ends are kept for `HANDOVER`: more slots handed over within its span
/// than this are not told apart (ADR 1220). Ours: 4 × the largest slot count the tests serve
/// (16), a 512-byte ring allocated only on keys that stream.
pub const HANDOVERS_KEPT: usize = 64;

// ---------------------------------------------------------------------------------------------
// Vegas's thresholds and raise (vegas.rs)
// ---------------------------------------------------------------------------------------------

/// Alpha below a limit of `SMALL_ALPHA_UNTIL`, in calls. Ours: it keeps the limit within 1.25 × a
/// capacity of 10 in the simulator's long incident, as the tenth of the limit it replaces did.
/// ADR 0122: at 0.5 `real-small` oscillated 20.3 % (0 %), at 2 `long-incident` held 1.27 × C
/// (goal 1.25).
pub const SMALL_ALPHA: f64 = 1.0;

/// From this limit alpha rises to 3 at 30. A step at 30 kept a process that fell below it at a
/// third of the others' queue (`fleet-3` 0.96, `capacity-halves` 83 s to settle); a ramp to 100
/// let noise cut the limit (`baseline-shift` 68 %). Ours (ADR 0122).
pub const SMALL_ALPHA_UNTIL: f64 = 20.0;

/// The raise on a window that reads no queue, in calls × f(L), below a limit of 30: a constant
/// step, not beta (ADR 0121 chose it while beta was a share of the limit there). A raise in
/// proportion to the limit keeps whatever split of a shared upstream the processes hold; an
/// equal step and a cut in proportion move them towards equal shares (Chiu and Jain's
/// additive increase, multiplicative decrease; ADR 0121). Streams, whose calls spend most of
/// their slot past the first byte, keep beta: a step of 2 against 4 slots overshot them. Ours, a
/// guess. ADR 0121, the real fleet of 4 × C 32, Jain over five seeds: at 1 a mean of 0.87, at 2
/// 0.95, at 4 0.87.
pub const RAISE_BELOW_30: f64 = 2.0;

/// The thresholds as a share of the limit below 30, for streams (`vegas::share_thresholds`).
/// Ours: 0.1 keeps the limit within 1.25 × a capacity of 10 in the simulator's long incident
/// (3 calls: 1.40 ×). A guess. ADR 0113: at 0.05 `fleet-3` fell to 0.83 × C and 79.7 % goodput,
/// at 0.2 `long-incident` held 1.28 × C (1.22 at 0.1).
pub const SMALL_LIMIT_QUEUE: f64 = 0.1;
