// A standing queue is held near 3 × L outstanding (ADR 0614): open-loop arrivals at twice what a
// pinned limit serves, with real timers. Once the queue stands it stays standing until it has
// emptied; before, it stopped at L waiting and grew for two more intervals each time, and held
// 6–13 × L. Prints what it measured.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix } from '../index.js'
import { sleep } from './helpers.mjs'

const quantile = (a, q) => {
  const s = [...a].sort((x, y) => x - y)
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]
}

/** Open loop at `rate` a second for `ms` on a limit pinned at `limit`, calls of `serviceMs`. */
async function openLoop(limit, serviceMs, rate, ms) {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: limit, breaker: false })
  const outstanding = []
  const waits = []
  let held = 0
  let served = 0
  let fired = 0
  const ps = []
  const t0 = performance.now()
  const sampler = setInterval(() => {
    const s = rx.stats('k')
    // Past the first second: the queue has formed.
    if (s !== undefined && performance.now() - t0 > 1000) outstanding.push(s.inflight + s.queued)
  }, 5)
  const fn = async () => {
    const start = performance.now()
    await sleep(serviceMs)
    held += performance.now() - start
  }
  while (performance.now() - t0 < ms) {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate)
    for (; fired < due; fired++) {
      const at = performance.now()
      const call = () => {
        waits.push(performance.now() - at)
        return fn()
      }
      ps.push(rx.execute(call, { key: 'k' }).then(() => served++, () => {}))
    }
    await sleep(1)
  }
  clearInterval(sampler)
  await Promise.all(ps)
  rx.close()
  // What the limit could serve at the calls' real duration (timers run late on a busy machine).
  const capacity = (limit * 1000) / (held / served)
  return { outstanding, waits, served, fired, goodput: served / ((capacity * ms) / 1000) }
}

for (const [limit, serviceMs] of [
  [4, 20],
  [16, 25],
]) {
  const rate = (2 * limit * 1000) / serviceMs
  test(`open loop at twice a pinned limit of ${limit} (${serviceMs} ms calls, ${rate}/s for 4 s): outstanding p50 <= 3 x L and p90 <= 4 x L, goodput >= 90 %`, async (t) => {
    const r = await openLoop(limit, serviceMs, rate, 4000)
    const p50 = quantile(r.outstanding, 0.5)
    const p90 = quantile(r.outstanding, 0.9)
    const w = (q) => quantile(r.waits, q).toFixed(0)
    t.diagnostic(
      `outstanding p50 ${p50} (${(p50 / limit).toFixed(1)} x L), p90 ${p90} (${(p90 / limit).toFixed(1)} x L); ` +
        `queue wait p50 ${w(0.5)} ms, p90 ${w(0.9)} ms, p99 ${w(0.99)} ms; served ${r.served} of ${r.fired}, goodput ${(100 * r.goodput).toFixed(1)} %`,
    )
    assert.ok(p50 <= 3 * limit, `outstanding p50 ${p50} at L = ${limit}`)
    assert.ok(p90 <= 4 * limit, `outstanding p90 ${p90} at L = ${limit}`)
    assert.ok(r.goodput >= 0.9, `goodput ${r.goodput}`)
  })
}
