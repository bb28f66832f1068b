// A batch is not overload (ADR 0114), with default options and real time: on a warm key a
// Promise.allSettled batch waits whole and drains at the limit's pace; a call that could not
// leave the queue before its deadline is refused at once; open-loop traffic at twice what the
// upstream serves is shed as a standing queue. Every test prints what it measured.
import { test, describe, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Resilix, isRejectedError } from '../index.js'
import { sleep } from './helpers.mjs'
import { startUpstream } from './fixtures/upstream.mjs'

const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length
const quantile = (a, q) => {
  const s = [...a].sort((x, y) => x - y)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]
}

/** Steady traffic: `callers` closed loops of `fn` on `key` for `ms`. */
async function warm(rx, key, fn, ms, callers = 10) {
  let stop = false
  const loop = async () => {
    while (!stop) await rx.execute(fn, { key }).catch(() => sleep(20)) // refused: back off
  }
  const loops = Array.from({ length: callers }, loop)
  await sleep(ms)
  stop = true
  await Promise.all(loops)
}

/** Reads `read()` every `everyMs` until `stop()` is called; resolves to the readings. */
function sampler(read, everyMs) {
  const out = []
  let on = true
  const done = (async () => {
    while (on) {
      out.push(read())
      await sleep(everyMs)
    }
    return out
  })()
  return () => {
    on = false
    return done
  }
}

/**
 * Fires `n` calls at once and waits for all of them. Each outcome: `{ ok, err, settledMs, early }`:
 * its time from execute() to its answer, and whether it was answered before the event loop's
 * next turn after the firing (when no timer and no I/O could have run: at admission).
 */
async function batch(rx, key, n, fn, opts = {}) {
  const outs = new Array(n)
  const t0 = performance.now()
  const ps = Array.from({ length: n }, (_, i) => {
    const fired = performance.now()
    return rx.execute(fn, { key, ...opts }).then(
      () => (outs[i] = { ok: true, settledMs: performance.now() - fired }),
      (err) => (outs[i] = { ok: false, err, settledMs: performance.now() - fired }),
    )
  })
  await new Promise((r) => setImmediate(r))
  for (const o of outs) if (o !== undefined) o.early = true
  await Promise.all(ps)
  return { outs, ms: performance.now() - t0 }
}

const refused = (outs) => outs.filter((o) => !o.ok)
const tally = (outs) => {
  const t = {}
  for (const o of refused(outs)) {
    const k = isRejectedError(o.err) ? `${o.err.reason}: ${o.err.message.split(': ').at(-1)}` : `${o.err.name}${o.err.queued ? ' (while waiting)' : ''}`
    t[k] = (t[k] ?? 0) + 1
  }
  return t
}

// A plain 20 ms fn: an upstream without a capacity limit. The key is warmed with 10 concurrent
// calls for 3 s (its limit and latency are known), then batches are fired one after another.
for (const opts of [{}, { timeoutMs: 60_000 }]) {
  test(`a warm key against a healthy unbounded upstream, ${JSON.stringify(opts)}: batches of 100, 1 000 and 10 000 refuse none; the limit grows during the 10 000`, async (t) => {
    const fn = () => sleep(20)
    const rx = new Resilix(opts)
    await warm(rx, 'api', fn, 3000)
    t.diagnostic(`warm: limit ${rx.stats('api').limit}`)
    const rows = []
    for (const n of [100, 1000, 10_000]) {
      const stop = sampler(() => rx.stats('api').limit, 100)
      const { outs, ms } = await batch(rx, 'api', n, fn)
      const limits = await stop()
      rows.push({ n, refused: refused(outs).length, tally: tally(outs), limits })
      t.diagnostic(`batch of ${n}: ${ms.toFixed(0)} ms, ${refused(outs).length} refused ${JSON.stringify(tally(outs))}, the limit every 100 ms: ${limits.join(' ')}`)
    }
    for (const r of rows) assert.equal(r.refused, 0, `${r.refused} of ${r.n} refused ${JSON.stringify(r.tally)}`)
    const s = rx.stats('api')
    assert.deepEqual([s.inflight, s.queued, s.rejections.queue], [0, 0, 0], 'inflight, queued, queue refusals at the end')
    // The long batch: demand is there and the latency flat, so the limit rises and never falls.
    const limits = rows[2].limits
    assert.ok(Math.min(...limits) >= limits[0], `the limit fell during the batch of 10 000: ${limits.join(' ')}`)
    assert.ok(limits.at(-1) > limits[0], `the limit did not grow during the batch of 10 000: ${limits.join(' ')}`)
  })
}

// A real HTTP upstream in a child process: 16 workers of 25 ms (640 requests a second at most);
// requests beyond 16 wait FIFO inside the server, so its latency grows with concurrency.
describe('a real HTTP upstream, 16 workers of 25 ms', () => {
  const WORKERS = 16
  const SERVICE_MS = 25
  const CAPACITY = (WORKERS * 1000) / SERVICE_MS // requests per second
  let up
  let call
  before(async () => {
    up = await startUpstream(0, WORKERS, SERVICE_MS)
    const url = `http://127.0.0.1:${up.port}/`
    call = async (ctx) => {
      const r = await fetch(url, { signal: ctx.signal })
      await r.text()
      return r.status
    }
  })
  after(async () => {
    up.child.kill('SIGKILL')
    await once(up.child, 'exit')
  })

  describe('a warm key (10 concurrent callers for 3 s)', () => {
    let rx
    before(async () => {
      rx = new Resilix()
      await warm(rx, 'up', call, 3000)
    })

    test('a batch of 1 000 refuses none, drains within 3 x the ideal time, and the mean limit stays within 2 x the workers', async (t) => {
      const ideal = (1000 * SERVICE_MS) / WORKERS
      const stop = sampler(() => rx.stats('up').limit, 20)
      const { outs, ms } = await batch(rx, 'up', 1000, call)
      const limits = await stop()
      t.diagnostic(`batch of 1 000: ${ms.toFixed(0)} ms (ideal ${ideal.toFixed(0)}), ${refused(outs).length} refused ${JSON.stringify(tally(outs))}, mean limit ${mean(limits).toFixed(1)} (${Math.min(...limits)}-${Math.max(...limits)})`)
      assert.equal(refused(outs).length, 0, JSON.stringify(tally(outs)))
      assert.ok(ms <= 3 * ideal, `drained in ${ms.toFixed(0)} ms, over 3 x ${ideal.toFixed(0)}`)
      assert.ok(mean(limits) <= 2 * WORKERS, `mean limit ${mean(limits).toFixed(1)} over 2 x ${WORKERS}`)
    })

    test('a batch of 1 000 with a 500 ms deadline: at least 200 served, the rest refused at once with queue, at most 2 % time out', async (t) => {
      // A key of its own, warmed the same way: the batch above grows the limit past the
      // workers, where the windows' latency, read at a lower concurrency, overstates the drain.
      await warm(rx, 'up-500', call, 3000)
      const before = rx.stats('up-500')
      const { outs, ms } = await batch(rx, 'up-500', 1000, call, { timeoutMs: 500 })
      const served = outs.filter((o) => o.ok).length
      const queue = outs.filter((o) => !o.ok && isRejectedError(o.err) && o.err.reason === 'queue')
      const late = queue.filter((o) => !o.early).length
      const timeouts = outs.filter((o) => !o.ok && o.err.name === 'TimeoutError')
      const slowest = Math.max(0, ...queue.map((o) => o.settledMs))
      const s = rx.stats('up-500')
      t.diagnostic(`at limit ${before.limit}, smoothed p90 ${before.smoothedMs.toFixed(1)} ms: ${ms.toFixed(0)} ms, ${served} served, ${JSON.stringify(tally(outs))}; the refusals answered within ${slowest.toFixed(1)} ms of execute() (the firing included), ${late} after the next turn; then limit ${s.limit}, breaker ${s.breaker}`)
      assert.equal(served + queue.length + timeouts.length, 1000, JSON.stringify(tally(outs)))
      for (const o of queue) assert.match(o.err.message, /could not leave the queue before its deadline/)
      // At once: at admission, before any timer or response could have run.
      assert.equal(late, 0, 'queue refusals answered after the next turn of the event loop')
      assert.ok(served >= 200, `${served} served`)
      assert.ok(timeouts.length <= 20, `${timeouts.length} of 1 000 timed out, ${timeouts.filter((o) => o.err.queued).length} of them while waiting`)
    })
  })

  /**
   * Open-loop arrivals, evenly spaced at 2 x the upstream's capacity, for `ms`, on a new key.
   * Goodput counts the calls served from the first second on (a new key's connections open in
   * the first); queue wait is from execute() to fn's start. `capacity`: what the upstream's 16
   * workers could serve over the same span on this machine, from the time they held each request
   * (a busy machine fires their 25 ms timers late).
   */
  async function overload(opts, ms = 10_000) {
    const rx = new Resilix(opts)
    const rate = 2 * CAPACITY
    const waits = []
    const done = []
    const errors = []
    const ps = []
    const upstreamStats = async () => JSON.parse(await (await fetch(`http://127.0.0.1:${up.port}/stats`)).text())
    const t0 = performance.now()
    const stop = sampler(() => rx.stats('up') ?? { queued: 0, limit: 0, inflight: 0 }, 5)
    let from
    let fired = 0
    while (performance.now() - t0 < ms) {
      for (const due = Math.floor(((performance.now() - t0) * rate) / 1000); fired < due; fired++) {
        const at = performance.now()
        const fn = (ctx) => {
          waits.push(performance.now() - at)
          return call(ctx)
        }
        ps.push(rx.execute(fn, { key: 'up', ...opts }).then(() => done.push(performance.now() - t0), (e) => errors.push(e)))
      }
      if (from === undefined && performance.now() - t0 >= 1000) from = upstreamStats()
      await sleep(5)
    }
    const to = await upstreamStats()
    const stats = await stop()
    await Promise.all(ps)
    from = await from
    const meanServiceMs = (to.serviceMs - from.serviceMs) / (to.served - from.served)
    const e = { queue: errors.filter((x) => isRejectedError(x) && x.reason === 'queue').length, timeouts: errors.filter((x) => x.name === 'TimeoutError').length }
    e.other = errors.length - e.queue - e.timeouts
    return {
      fired,
      goodput: done.filter((x) => x >= 1000 && x < ms).length / ((ms - 1000) / 1000),
      all: done.filter((x) => x < ms).length / (ms / 1000),
      capacity: (WORKERS * 1000) / meanServiceMs,
      meanServiceMs,
      p50: quantile(waits, 0.5),
      p99: quantile(waits, 0.99),
      maxQueued: Math.max(...stats.map((s) => s.queued)),
      outstanding: mean(stats.map((s) => s.inflight + s.queued)),
      meanLimit: mean(stats.map((s) => s.limit)),
      underfed: stats.filter((s) => s.inflight < WORKERS).length / stats.length,
      errors: e,
    }
  }
  const pct = (x, of) => `${((100 * x) / of).toFixed(1)} %`
  const describeOverload = (r) =>
    `${r.fired} calls fired; goodput ${r.goodput.toFixed(0)}/s from 1 s on = ${pct(r.goodput, CAPACITY)} of ${CAPACITY}/s, ${pct(r.goodput, r.capacity)} of the ${r.capacity.toFixed(0)}/s the workers could serve here (mean service ${r.meanServiceMs.toFixed(1)} ms); ${r.all.toFixed(0)}/s over the whole 10 s; fewer than ${WORKERS} in flight ${pct(r.underfed, 1)} of the time; queue wait p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms; most waiting ${r.maxQueued}; mean limit ${r.meanLimit.toFixed(1)}, mean outstanding (in flight + waiting) ${r.outstanding.toFixed(0)}; ${JSON.stringify(r.errors)}`
  // Goodput is held to the workers' capacity on this machine: the limiter's part is to keep them
  // busy. A machine too busy to serve even 75 % of the nominal rate says nothing about it.
  const assertGoodput = (r) => {
    assert.ok(r.capacity >= 0.75 * CAPACITY, `the machine is too busy: the workers could serve ${r.capacity.toFixed(0)}/s`)
    assert.ok(r.goodput >= 0.9 * Math.min(CAPACITY, r.capacity), `goodput ${r.goodput.toFixed(0)}/s under 90 % of ${Math.min(CAPACITY, r.capacity).toFixed(0)}/s`)
  }

  test('sustained open-loop overload at 2 x capacity for 10 s, no deadline: goodput >= 90 % of capacity, p99 queue wait <= 1 s, the waiting calls far under the cap', async (t) => {
    const r = await overload({})
    t.diagnostic(describeOverload(r))
    assertGoodput(r)
    assert.ok(r.p99 <= 1000, `p99 queue wait ${r.p99.toFixed(0)} ms`)
    // A queue that never shed would hold about 6 400 calls after 10 s (640 more a second).
    assert.ok(r.maxQueued <= 2000, `${r.maxQueued} calls waited at once (queue.maxQueued: 20 000)`)
    assert.deepEqual([r.errors.timeouts, r.errors.other], [0, 0], JSON.stringify(r.errors))
  })

  test('the same overload with a 1.5 s deadline: goodput >= 90 % of capacity', async (t) => {
    const r = await overload({ timeoutMs: 1500 })
    t.diagnostic(describeOverload(r))
    assertGoodput(r)
    assert.ok(r.maxQueued <= 2000, `${r.maxQueued} calls waited at once`)
  })
})

// A warm key whose last calls were slowed by one stall of the event loop (a long synchronous
// task, a long GC pause): the upstream is as healthy as before, and a batch with a deadline it
// meets many times over is still a batch.
test('after a 300 ms stall of the event loop, a warm key still takes a batch of 1 000 with timeoutMs 5 000 whole (it drains in about 1 s)', async (t) => {
  const fn = () => sleep(20)
  const rx = new Resilix({ timeoutMs: 5000 })
  let stop = false
  const loops = Array.from({ length: 10 }, async () => {
    while (!stop) await rx.execute(fn, { key: 'api' })
  })
  await sleep(3000)
  const end = performance.now() + 300
  while (performance.now() < end); // the stall, while 10 calls are in flight
  stop = true
  await Promise.all(loops)
  const s = rx.stats('api')
  const { outs, ms } = await batch(rx, 'api', 1000, fn)
  t.diagnostic(`limit ${s.limit}, smoothed p90 ${s.smoothedMs.toFixed(1)} ms, last latency ${s.lastLatencyMs.toFixed(0)} ms; batch of 1 000: ${ms.toFixed(0)} ms, ${refused(outs).length} refused ${JSON.stringify(tally(outs))}`)
  assert.equal(refused(outs).length, 0, JSON.stringify(tally(outs)))
})
