// Streamed calls against a real streaming upstream, as an LLM server streams
// (fixtures/sse-upstream-server.cjs): 16 generation slots taken in arrival order, the first
// token 200 ms after a stream gets its slot, then tokens every 100 ms; the slot is held until
// the stream ends. 40 closed-loop consumers, default options with the instance deadline of
// 2 s, and a per-call deadline, in each pattern the README shows. Every run prints what it
// measured; each goal is checked and reported by name, and the test fails listing the goals
// that did not hold.
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { Agent, request } from 'undici'
import { Resilix, isRejectedError } from 'resilix'
import { interceptor } from 'resilix/undici'
import { startSseUpstream } from './fixtures/sse-upstream.mjs'
import { drive, figures, unloadedTtft } from './fixtures/stream-consumers.mjs'

const SLOTS = 16
const CONSUMERS = 40
// Long against what a busy 2-core machine adds to a local call, short enough for the suite:
// six 5 s streams per consumer slot; the last half (16 s) is judged.
const RUN_MS = 32_000
// A deadline three times a 5 s stream, as a client allowing for a wait would set it.
const DEADLINE_MS = 15_000
const PROBE_BUDGET_MS = 2000

const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

/** Prints every goal and what was measured; fails naming the goals that did not hold. */
function goals(t, name, f, checks) {
  t.diagnostic(`${name}: ${JSON.stringify(f)}`)
  for (const [goal, ok] of checks) t.diagnostic(`${ok ? 'holds' : 'FAILS'}: ${goal}`)
  const failed = checks.filter(([, ok]) => !ok).map(([goal]) => goal)
  assert.deepEqual(failed, [], `${name}: goals not met`)
}

/**
 * Beside the consumers, from the middle of the run: four calls with a 2 s budget, each made
 * while at least 16 calls wait in our queue (a wait of several 5 s streams, whatever the
 * limit), which must be refused at once with 'queue' rather than time out waiting.
 */
function refusalProbes(runMs = RUN_MS, budgetMs = PROBE_BUDGET_MS) {
  return async (run, env) => {
    for (const share of [0.5, 0.62, 0.75, 0.87]) {
      const at = run.from + share * runMs
      while (!run.stopped.aborted && (performance.timeOrigin + performance.now() < at || (env.rx.stats(env.key)?.queued ?? 0) < 16)) await sleep(50)
      if (run.stopped.aborted) return
      await run.call({ timeoutMs: budgetMs })
    }
  }
}

const common = (f, ttftMs) => [
  [`the breaker never opens (opened at ${JSON.stringify(f.breakerOpenedAtS)} s)`, f.breakerOpenedAtS.length === 0],
  [
    `no call whose deadline was spent mostly in our queue is counted as an upstream timeout (timeout verdicts ${f.verdicts.timeout}, timeouts ${f.timeouts} of which ${f.mostlyQueued} mostly queued)`,
    f.verdicts.timeout <= f.timeouts - f.mostlyQueued,
  ],
  [`no call times out waiting in our queue (${f.queuedTimeouts} did)`, f.queuedTimeouts === 0],
  [`'queue' refusals come at once (slowest ${f.queueRefusalMaxMs} ms of ${f.queueRefusals})`, f.queueRefusalMaxMs < 1000],
  [`stream throughput over the last half ≥ 90 % of what ${SLOTS} slots serve (${(f.goodputLastHalf * 100).toFixed(1)} %)`, f.goodputLastHalf >= 0.9],
  [`baselineMs within 2 × the unloaded TTFT (${f.baselineMs} ms, TTFT ${ttftMs.toFixed(0)} ms)`, f.baselineMs > 0 && f.baselineMs <= 2 * ttftMs],
]

const limitGoal = (f) => [
  `the mean limit over the last half is within 0.75–1.5 × ${SLOTS} (${f.meanLimitLastHalf})`,
  f.meanLimitLastHalf >= 0.75 * SLOTS && f.meanLimitLastHalf <= 1.5 * SLOTS,
]

const probeGoal = (f) => [
  `a call whose expected wait exceeds its ${PROBE_BUDGET_MS} ms budget is refused at once with 'queue' (${JSON.stringify(f.probes)})`,
  f.probes.length > 0 && f.probes.every((p) => p.outcome === 'refused:queue' && p.ms < 1000),
]

async function withUpstream(options, fn) {
  const up = await startSseUpstream({ slots: SLOTS, ...options })
  try {
    const ttftMs = await unloadedTtft(up.url('/v1/stream'))
    return await fn(up, ttftMs)
  } finally {
    await up.close()
  }
}

// The 5 s group runs its tests one after another, beside the 45 s test: the file takes as long
// as the 45 s test.
describe('streams', { concurrency: true }, () => {
describe('streams of 5 s', { concurrency: 1 }, () => {
  test('hold the slot for the whole stream, ctx.mark() at the first token: the breaker stays closed, waits are refused at once, the limit finds the 16 slots, throughput ≥ 90 %, baselineMs is the TTFT', async (t) => {
    await withUpstream({ streamMs: 5000 }, async (up, ttftMs) => {
      const rx = new Resilix({ timeoutMs: 2000 })
      const run = await drive({ rx, key: 'llm', url: up.url('/v1/stream'), pattern: 'hold', consumers: CONSUMERS, ms: RUN_MS, timeoutMs: DEADLINE_MS, during: refusalProbes() })
      const f = await figures(run, up, { rx, key: 'llm', timeoutMs: DEADLINE_MS })
      goals(t, 'hold with mark', f, [...common(f, ttftMs), limitGoal(f), probeGoal(f)])
    })
  })

  test('return after the first token, the body read outside: the breaker stays closed, throughput ≥ 90 % (the limit is not cut below what the upstream serves)', async (t) => {
    await withUpstream({ streamMs: 5000 }, async (up, ttftMs) => {
      const rx = new Resilix({ timeoutMs: 2000 })
      const run = await drive({ rx, key: 'llm', url: up.url('/v1/stream'), pattern: 'returnFirst', consumers: CONSUMERS, ms: RUN_MS, timeoutMs: DEADLINE_MS })
      const f = await figures(run, up, { rx, key: 'llm', timeoutMs: DEADLINE_MS })
      t.diagnostic(`unloaded TTFT ${ttftMs.toFixed(0)} ms (the baseline is not a goal here: the streams read outside the slots keep the upstream's slots full)`)
      goals(t, 'return after the first token', f, [
        common(f, ttftMs)[0],
        common(f, ttftMs)[2],
        common(f, ttftMs)[4],
      ])
    })
  })

  test('the interceptor (undici request(), default marking, the instance deadline of 2 s): the breaker stays closed, waits are refused at once, the limit finds the 16 slots, throughput ≥ 90 %, baselineMs is the TTFT', async (t) => {
    await withUpstream({ streamMs: 5000 }, async (up, ttftMs) => {
      const rx = new Resilix({ timeoutMs: 2000 })
      const run = await drive({ rx, key: up.origin, url: up.url('/v1/stream'), pattern: 'interceptor', consumers: CONSUMERS, ms: RUN_MS })
      const f = await figures(run, up, { rx, key: up.origin, timeoutMs: 2000 })
      goals(t, 'interceptor', f, [...common(f, ttftMs), limitGoal(f)])
    })
  })

  test('without mark(), the slot held for the whole stream: the sample is the whole stream, so baselineMs reads the stream length and every stream past breaker.slowCallMs (5 s) is a slow call: the breaker opens against a healthy upstream', async (t) => {
    await withUpstream({ streamMs: 5000 }, async (up, ttftMs) => {
      const rx = new Resilix({ timeoutMs: 2000 })
      const run = await drive({ rx, key: 'llm', url: up.url('/v1/stream'), pattern: 'holdUnmarked', consumers: CONSUMERS, ms: RUN_MS, timeoutMs: DEADLINE_MS })
      const f = await figures(run, up, { rx, key: 'llm', timeoutMs: DEADLINE_MS })
      goals(t, 'hold without mark', f, [
        [`the latency sample is the whole stream, not the TTFT (last ${f.lastLatencyMs} ms, TTFT ${ttftMs.toFixed(0)} ms)`, f.lastLatencyMs >= 5000],
        [`the breaker opens on slow calls (opened at ${JSON.stringify(f.breakerOpenedAtS)} s)`, f.breakerOpenedAtS.length > 0],
        [`throughput falls below 90 % of the slots (${(f.goodputLastHalf * 100).toFixed(1)} %)`, f.goodputLastHalf < 0.9],
      ])
    })
  })

  test('keyed per route, a short call to the origin of 5 s streams does not queue behind them; keyed per origin it does', async (t) => {
    await withUpstream({ streamMs: 5000 }, async (up) => {
      // The recipe from the README: one key per kind of route, a fixed set of keys.
      const byRoute = (opts) => {
        const origin = new URL(opts.origin).origin
        return opts.path.startsWith('/v1/') ? `${origin} streams` : origin
      }
      const measure = async (rx, options) => {
        const dispatcher = new Agent().compose(interceptor(rx, options))
        const stop = new AbortController()
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
        await sleep(3000) // the streams fill the key
        const short = []
        for (let i = 0; i < 20; i++) {
          const t0 = performance.now()
          try {
            const { body } = await request(up.url('/stats'), { dispatcher })
            await body.text()
            short.push(performance.now() - t0)
          } catch (err) {
            short.push(isRejectedError(err) ? `refused:${err.reason}` : String(err))
          }
          await sleep(250)
        }
        stop.abort()
        await Promise.all(streams)
        await dispatcher.close()
        return short
      }
      const [perRoute, perOrigin] = await Promise.all([
        measure(new Resilix({ timeoutMs: 2000 }), { key: byRoute }),
        measure(new Resilix({ timeoutMs: 2000 }), {}),
      ])
      const show = (a) => a.map((x) => (typeof x === 'number' ? x.toFixed(0) : x)).join(' ')
      t.diagnostic(`/stats beside 40 streaming consumers, keyed per route (ms): ${show(perRoute)}`)
      t.diagnostic(`the same keyed per origin: ${show(perOrigin)}`)
      assert.ok(perRoute.every((x) => typeof x === 'number'), `keyed per route every short call is answered: ${show(perRoute)}`)
      const sorted = perRoute.slice().sort((a, b) => a - b)
      assert.ok(sorted[Math.floor(sorted.length * 0.9)] < 250, `keyed per route, p90 of the short calls ${sorted[18].toFixed(0)} ms`)
      const held = perOrigin.filter((x) => typeof x !== 'number' || x >= 250).length
      assert.ok(held >= perOrigin.length / 2, `keyed per origin, the short calls should queue behind the streams or be refused: ${show(perOrigin)}`)
    })
  })
})

// 45 s streams, as the limiter was designed around: a slot is held 45.2 s, so 150 s of load
// are about three stream lengths (a consumer completes one or two streams), and the last half
// about 1.7. The three patterns run at once, each on its own upstream.
const LONG_RUN_MS = 150_000
const LONG_DEADLINE_MS = 135_000 // three stream lengths, as for 5 s streams

test('streams of 45 s, the three patterns at once: the breaker stays closed, waits are refused at once, throughput ≥ 90 %; hold with mark also finds the 16 slots and the TTFT', { timeout: 179_000 }, async (t) => {
  const one = (pattern, timeoutMs, during) =>
    withUpstream({ streamMs: 45_000 }, async (up, ttftMs) => {
      const rx = new Resilix({ timeoutMs: 2000 })
      const key = pattern === 'interceptor' ? up.origin : 'llm'
      const run = await drive({ rx, key, url: up.url('/v1/stream'), pattern, consumers: CONSUMERS, ms: LONG_RUN_MS, timeoutMs, during })
      return { f: await figures(run, up, { rx, key, timeoutMs: timeoutMs ?? 2000 }), ttftMs }
    })
  const [hold, first, icpt] = await Promise.all([
    one('hold', LONG_DEADLINE_MS, refusalProbes(LONG_RUN_MS)),
    one('returnFirst', DEADLINE_MS),
    one('interceptor', undefined),
  ])
  const checks = [
    ...common(hold.f, hold.ttftMs).map(([g, ok]) => [`hold with mark: ${g}`, ok]),
    [`hold with mark: ${limitGoal(hold.f)[0]}`, limitGoal(hold.f)[1]],
    [`hold with mark: ${probeGoal(hold.f)[0]}`, probeGoal(hold.f)[1]],
    ...[0, 2, 4].map((i) => common(first.f, first.ttftMs)[i]).map(([g, ok]) => [`return after the first token: ${g}`, ok]),
    ...[0, 1, 2, 3, 4].map((i) => common(icpt.f, icpt.ttftMs)[i]).map(([g, ok]) => [`interceptor: ${g}`, ok]),
  ]
  t.diagnostic(`45 s streams, return after the first token: ${JSON.stringify(first.f)}`)
  t.diagnostic(`45 s streams, interceptor: ${JSON.stringify(icpt.f)}`)
  goals(t, '45 s streams, hold with mark', hold.f, checks)
})
})
