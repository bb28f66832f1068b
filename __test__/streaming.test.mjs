// Streamed calls against a real streaming upstream, as an LLM server streams
// (fixtures/sse-upstream-server.cjs): 16 generation slots taken in arrival order, the first
// token 200 ms after a stream gets its slot, then a token every 100 ms; the slot is held until
// the stream ends. 40 closed-loop consumers, `new Resilix({ timeoutMs: 2000 })` and a per-call
// deadline, in each pattern the streaming guide (docs/guides/streaming.md) shows. Each run prints what it measured and every goal
// by name, holding or not; the test fails listing the goals that did not hold.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Agent, request } from 'undici'
import { Resilix, isRejectedError } from 'resilix'
import { interceptor } from 'resilix/undici'
import { startSseUpstream } from './fixtures/sse-upstream.mjs'
import { drive, figures, unloadedTtft } from './fixtures/stream-consumers.mjs'

const SLOTS = 16
const CONSUMERS = 40
const INSTANCE_TIMEOUT_MS = 2000 // also the interceptor's deadline, to the first token
// Eleven 5 s streams per slot: the last half (30 s) is judged, once the limit has been learnt
// (a window of 5 s streams takes 10-15 s to fill) and a probe has come and gone.
const RUN_MS = 60_000
// Three stream lengths, as a client that allows for a wait would set it (with the body read
// outside, the first token still waits for a slot that other streams hold).
const DEADLINE_MS = 15_000
// 45 s streams: a slot is held 45.2 s, so 150 s of load are about three stream lengths and the
// last half about 1.7; within the 3 minutes a test may take.
const LONG_RUN_MS = 150_000
const LONG_DEADLINE_MS = 135_000
const PROBE_BUDGET_MS = 2000

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const pct = (x) => `${(x * 100).toFixed(1)} %`

/**
 * Prints what was measured and every goal; returns the asserted goals that did not hold, each
 * as `pattern/goal (figure)`. `reported` goals are printed and not asserted: not yet met with a
 * margin a busy machine cannot eat (see NOT_YET).
 */
function judge(t, name, f, goals, reported, ttftMs) {
  t.diagnostic(`${name}: ${JSON.stringify(f)}`)
  const failed = []
  for (const g of [...goals, ...reported]) {
    const [what, ok, figure] = goal[g](f, ttftMs)
    const asserted = goals.includes(g)
    t.diagnostic(`${ok ? 'holds' : asserted ? 'FAILS' : 'not yet met'}: ${name}: ${what}`)
    if (!ok && asserted) failed.push(`${name}/${g} (${figure})`)
  }
  return failed
}

// The goals, each `[what was measured, whether it holds, the figure a failure is named with]`.
const goal = {
  breaker: (f) => [`the breaker never opens (opened at ${JSON.stringify(f.breakerOpenedAtS)} s)`, f.breakerOpenedAtS.length === 0, `opened at ${f.breakerOpenedAtS.join(', ')} s`],
  // An opening is seen at the settle that caused it: no opening may follow the settle of such a
  // timeout. With 5 or more of them in a row (breaker.consecutiveFailures) and no opening, the
  // breaker did not count them. stats().verdicts still names how each call ended.
  mostlyQueued: (f) => [
    `no call whose deadline was spent mostly in our queue is counted as an upstream timeout: ${f.mostlyQueued} such timeouts (${f.mostlyQueuedInARow} in a row; verdicts.timeout ${f.verdicts.timeout}); the breaker opened on ${JSON.stringify(f.breakerOpenedBy)}`,
    f.breakerOpenedBy.every((b) => !b.mostlyQueued),
    `${f.breakerOpenedBy.filter((b) => b.mostlyQueued).length} openings`,
  ],
  // Before a call has given its slot back (the first burst on a new key) no wait can be
  // expected: those are reported, not judged.
  noQueueTimeout: (f) => [
    `no call times out waiting in our queue once a slot time is known (${f.queuedTimeouts} did; ${f.queuedTimeoutsBeforeFirstSlotBack} of the first burst, before the first slot came back at ${f.firstSlotBackAtS} s)`,
    f.queuedTimeouts === 0,
    `${f.queuedTimeouts}`,
  ],
  // A waiter whose turn comes with less deadline left than a stream holds its slot is refused
  // then ('queue', "its turn came"), not run to be cut mid-stream: reported apart (waits that ran
  // longer than expected: the first burst, the first window's cut, a probe).
  refusedAtOnce: (f) => [
    `'queue' refusals come at once (slowest ${f.laterQueueRefusalMaxMs} ms of ${f.queueRefusals} for calls made once a slot had come back; ${f.queueRefusalMaxMs} ms of all: the first burst's waiters are judged when the first streams end); refused when their turn came: ${f.turnRefusals} (${f.turnRefusalsBeforeFirstSlotBack} of the first burst; slowest after ${f.turnRefusalMaxMs} ms)`,
    f.laterQueueRefusalMaxMs < 1000,
    `${f.laterQueueRefusalMaxMs} ms`,
  ],
  throughput: (f) => [`stream throughput over the last half ≥ 90 % of what ${SLOTS} slots serve (${pct(f.goodputLastHalf)})`, f.goodputLastHalf >= 0.9, pct(f.goodputLastHalf)],
  baseline: (f, ttftMs) => [
    `baselineMs within 2 × the unloaded TTFT (${f.baselineMs} ms; TTFT ${ttftMs.toFixed(0)} ms)`,
    f.baselineMs > 0 && f.baselineMs <= 2 * ttftMs,
    `${f.baselineMs} ms`,
  ],
  limit: (f) => [
    `the mean limit over the last half is within 0.75–1.5 × ${SLOTS} (${f.meanLimitLastHalf})`,
    f.meanLimitLastHalf >= 0.75 * SLOTS && f.meanLimitLastHalf <= 1.5 * SLOTS,
    `${f.meanLimitLastHalf}`,
  ],
  // Without mark(): what the streaming guide says happens.
  wholeStream: (f) => [`the latency sample is the whole stream, not the TTFT (last ${f.lastLatencyMs} ms, baselineMs ${f.baselineMs})`, f.lastLatencyMs >= 5000, `${f.lastLatencyMs} ms`],
  opensOnSlowCalls: (f) => [
    `every stream is a slow call (≥ breaker.slowCallMs, 5 s): the breaker opens (at ${JSON.stringify(f.breakerOpenedAtS)} s; throughput ${pct(f.goodputLastHalf)}, limit ${f.meanLimitLastHalf})`,
    f.breakerOpenedAtS.length > 0,
    'never opened',
  ],
  probes: (f) => [
    `a call whose expected wait exceeds its ${PROBE_BUDGET_MS} ms budget is refused at once with 'queue' (${JSON.stringify(f.probes)})`,
    f.probes.length > 0 && f.probes.every((p) => p.outcome === 'refused:queue' && p.ms < 1000),
    f.probes.map((p) => `${p.outcome} ${p.ms} ms`).join(', ') || 'none made',
  ],
}

/** The goals of each pattern. */
const GOALS = {
  hold: ['breaker', 'mostlyQueued', 'noQueueTimeout', 'refusedAtOnce', 'limit', 'throughput', 'baseline', 'probes'],
  // The streams read outside the slots keep the upstream's slots full, so the probe cannot
  // see an idle upstream: the baseline is no goal here, nor a limit (any limit above a few
  // keeps the slots busy); throughput says whether the limit was cut too far.
  returnFirst: ['breaker', 'mostlyQueued', 'noQueueTimeout', 'refusedAtOnce', 'throughput'],
  interceptor: ['breaker', 'mostlyQueued', 'noQueueTimeout', 'refusedAtOnce', 'limit', 'throughput', 'baseline'],
  holdUnmarked: ['wholeStream', 'opensOnSlowCalls'],
}

/**
 * Goals measured and printed but not asserted yet, by pattern and stream length:
 * - the interceptor: the instance deadline (2 s to the first token) times out the call that a
 *   limit one above the slots sends to wait for a slot, and the cut that follows holds the
 *   limit 13-17, below the 16 slots for part of the time: 90.4-91.1 % of the slots' throughput,
 *   too near the 90 % goal to assert;
 * - 45 s streams through the interceptor: the first burst's calls above the slots time out at
 *   2 s, before any stream has ended, and the first window closes on them with a single stream's
 *   time to first token: the baseline is taken from a loaded window (about 1.2 s).
 */
const NOT_YET = {
  5000: { interceptor: ['throughput'] },
  45000: { interceptor: ['throughput', 'baseline'] },
}

/**
 * Beside the consumers, from the middle of the run: four calls with a 2 s budget, each made
 * while calls wait in our queue: their wait and then a 5 s stream cannot fit in 2 s, so each
 * must be refused at once with 'queue' rather than time out waiting.
 */
const refusalProbes = (runMs) => async (run, env) => {
  for (const share of [0.5, 0.62, 0.75, 0.87]) {
    const at = run.from + share * runMs
    const ready = () => performance.timeOrigin + performance.now() >= at && (env.rx.stats(env.key)?.queued ?? 0) >= 1
    while (!run.stopped.aborted && !ready()) await sleep(50)
    if (run.stopped.aborted) return
    await run.call({ timeoutMs: PROBE_BUDGET_MS })
  }
}

/** One pattern against its own upstream; resolves with the goals that did not hold. */
async function runPattern(t, name, { pattern, streamMs, runMs, timeoutMs }) {
  const reported = NOT_YET[streamMs]?.[pattern] ?? []
  const goals = GOALS[pattern].filter((g) => !reported.includes(g))
  const up = await startSseUpstream({ slots: SLOTS, streamMs })
  try {
    const ttftMs = await unloadedTtft(up.url('/v1/stream'))
    const rx = new Resilix({ timeoutMs: INSTANCE_TIMEOUT_MS })
    const key = pattern === 'interceptor' ? up.origin : 'llm'
    const during = goals.includes('probes') ? refusalProbes(runMs) : undefined
    const run = await drive({ rx, key, url: up.url('/v1/stream'), pattern, consumers: CONSUMERS, ms: runMs, timeoutMs, during })
    const f = await figures(run, up, { rx, key, timeoutMs: timeoutMs ?? INSTANCE_TIMEOUT_MS })
    f.unloadedTtftMs = Math.round(ttftMs)
    return judge(t, name, f, goals, reported, ttftMs)
  } finally {
    await up.close()
  }
}

const holds = (failed) => assert.ok(failed.length === 0, `goals not met: ${failed.join('; ')}`)

// Every pattern has its own upstream and instance; they all run at once, so the file takes about
// as long as the 45 s test.
describe('streams', { concurrency: true }, () => {
  describe('streams of 5 s', { concurrency: true }, () => {
    test('hold the slot for the whole stream, ctx.mark() at the first token: the breaker stays closed, waits are refused at once, the limit finds the 16 slots, throughput ≥ 90 %, baselineMs is the TTFT', async (t) => {
      holds(await runPattern(t, 'hold with mark', { pattern: 'hold', streamMs: 5000, runMs: RUN_MS, timeoutMs: DEADLINE_MS }))
    })

    test('return after the first token, the body read outside: the breaker stays closed, throughput ≥ 90 % (the limit is not cut below what the upstream serves)', async (t) => {
      holds(await runPattern(t, 'return after the first token', { pattern: 'returnFirst', streamMs: 5000, runMs: RUN_MS, timeoutMs: DEADLINE_MS }))
    })

    test('the interceptor (undici request(), default marking, the instance deadline to the first token): the breaker stays closed, waits are refused at once, the limit finds the 16 slots, baselineMs is the TTFT (throughput reported)', async (t) => {
      holds(await runPattern(t, 'interceptor', { pattern: 'interceptor', streamMs: 5000, runMs: RUN_MS }))
    })

    test('without mark(), the slot held for the whole stream: the sample is the whole stream, so a stream past breaker.slowCallMs (5 s) is a slow call and the breaker opens against a healthy upstream', async (t) => {
      holds(await runPattern(t, 'hold without mark', { pattern: 'holdUnmarked', streamMs: 5000, runMs: RUN_MS, timeoutMs: DEADLINE_MS }))
    })

    test('keyed per route, a short call to the origin of 5 s streams does not queue behind them; keyed per origin it does', async (t) => {
      // The streaming guide's recipe: one key per kind of route, a fixed set of keys.
      const byRoute = (opts) => {
        const origin = new URL(opts.origin).origin
        return opts.path.startsWith('/v1/') ? `${origin} streams` : origin
      }
      const [perRoute, perOrigin] = await Promise.all([shortCalls({ key: byRoute }), shortCalls({})])
      const show = (a) => a.map((x) => (typeof x === 'number' ? x.toFixed(0) : x)).join(' ')
      t.diagnostic(`/stats beside 40 streaming consumers, keyed per route (ms): ${show(perRoute)}`)
      t.diagnostic(`the same keyed per origin: ${show(perOrigin)}`)
      assert.ok(perRoute.every((x) => typeof x === 'number'), `keyed per route every short call is answered: ${show(perRoute)}`)
      const p90 = perRoute.slice().sort((a, b) => a - b)[Math.floor(perRoute.length * 0.9)]
      assert.ok(p90 < 250, `keyed per route, p90 of the short calls ${p90.toFixed(0)} ms`)
      const held = perOrigin.filter((x) => typeof x !== 'number' || x >= 250).length
      assert.ok(held >= perOrigin.length / 2, `keyed per origin, the short calls queue behind the streams or are refused: ${show(perOrigin)}`)
    })
  })

  test('streams of 45 s, the three patterns at once: the breaker stays closed, waits are refused at once; returned after the first token, throughput ≥ 90 %; with the slot held, throughput ≥ 90 %, the limit finds the 16 slots and baselineMs is the TTFT (the interceptor\'s throughput and baseline reported)', { timeout: 179_000 }, async (t) => {
    const failed = await Promise.all([
      runPattern(t, '45 s, hold with mark', { pattern: 'hold', streamMs: 45_000, runMs: LONG_RUN_MS, timeoutMs: LONG_DEADLINE_MS }),
      runPattern(t, '45 s, return after the first token', { pattern: 'returnFirst', streamMs: 45_000, runMs: LONG_RUN_MS, timeoutMs: LONG_DEADLINE_MS }),
      runPattern(t, '45 s, interceptor', { pattern: 'interceptor', streamMs: 45_000, runMs: LONG_RUN_MS }),
    ])
    holds(failed.flat())
  })
})

/**
 * 40 consumers streaming through the interceptor with `options` from their own upstream, and
 * beside them 20 short `/stats` calls to the same origin, one every 250 ms once the streams
 * fill the key: each one's time in ms, or how it was refused.
 */
async function shortCalls(options) {
  const up = await startSseUpstream({ slots: SLOTS, streamMs: 5000 })
  const dispatcher = new Agent().compose(interceptor(new Resilix({ timeoutMs: INSTANCE_TIMEOUT_MS }), options))
  const stop = new AbortController()
  try {
    const streams = Array.from({ length: CONSUMERS }, async () => {
      while (!stop.signal.aborted) {
        try {
          const { body } = await request(up.url('/v1/stream'), { dispatcher, signal: stop.signal })
          for await (const _ of body);
        } catch {
          await sleep(200)
        }
      }
    })
    await sleep(3000)
    const out = []
    for (let i = 0; i < 20; i++) {
      const t0 = performance.now()
      try {
        const { body } = await request(up.url('/stats'), { dispatcher })
        await body.text()
        out.push(performance.now() - t0)
      } catch (err) {
        out.push(isRejectedError(err) ? `refused:${err.reason}` : String(err))
      }
      await sleep(250)
    }
    stop.abort()
    await Promise.all(streams)
    return out
  } finally {
    stop.abort()
    await dispatcher.close()
    await up.close()
  }
}
