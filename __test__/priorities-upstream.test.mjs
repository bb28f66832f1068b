// Priorities and tenants against a real upstream (a fixed number of requests served at once,
// 100 ms each, the rest queue inside the server), driven open loop through global fetch at
// twice its capacity, with default options plus a priority or a tenant per call. The judged
// half is the second: the first is the limit learning the capacity from its default of 20.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix } from '../index.js'
import { sleep } from './helpers.mjs'
import { startUpstream } from './fixtures/upstream.mjs'

const CAPACITY = 8
const SERVICE_MS = 100
const RATE = 2 * CAPACITY * (1000 / SERVICE_MS) // calls a second offered: twice what it serves
const RUN_MS = 12_000
const TIMEOUT_MS = 2_000

/** Offers `RATE` calls a second for `RUN_MS`; `classOf(i)` names each call's group and options. */
async function offer(url, classOf, rx) {
  const groups = new Map()
  const group = (name) => {
    if (!groups.has(name)) groups.set(name, { offered: 0, ok: 0, refused: 0, late: 0, latencies: [] })
    return groups.get(name)
  }
  const calls = []
  const t0 = performance.now()
  const judged = t0 + RUN_MS / 2
  for (let i = 0; performance.now() - t0 < RUN_MS; ) {
    // Catch up on the schedule in batches of a tick, so a late timer does not lower the rate.
    const due = ((performance.now() - t0) / 1000) * RATE
    while (i < due) {
      const [name, opts] = classOf(i++)
      const start = performance.now()
      const g = start >= judged ? group(name) : null
      if (g !== null) g.offered++
      calls.push(
        rx.execute(async (ctx) => {
          const r = await fetch(url, { signal: ctx.signal })
          ctx.mark()
          await r.text()
          return r.status
        }, { key: 'up', timeoutMs: TIMEOUT_MS, ...opts }).then(
          () => {
            if (g === null) return
            g.ok++
            g.latencies.push(performance.now() - start)
          },
          (e) => {
            if (g === null) return
            if (e.name === 'RejectedError') g.refused++
            else g.late++
          },
        ),
      )
    }
    await sleep(5)
  }
  await Promise.all(calls)
  return groups
}

const p90 = (a) => {
  const s = a.slice().sort((x, y) => x - y)
  return s.length === 0 ? NaN : s[Math.floor(0.9 * (s.length - 1))]
}
const line = (name, g) =>
  `${name}: ${g.offered} offered, ${g.ok} ok (${((100 * g.ok) / g.offered).toFixed(1)} %), ${g.refused} refused, ${g.late} timed out, p90 ${p90(g.latencies).toFixed(0)} ms`

test(`priorities on a real upstream at 2 x its capacity (${CAPACITY} x ${SERVICE_MS} ms): 30 % critical are served, the shedding falls on the 70 % sheddable`, async (t) => {
  const ups = await Promise.all([startUpstream(0, CAPACITY, SERVICE_MS), startUpstream(0, CAPACITY, SERVICE_MS)])
  try {
    const url = (up) => `http://127.0.0.1:${up.port}/`
    const mix = (i) => (i % 10 < 3 ? ['critical', { priority: 'critical' }] : ['sheddable', { priority: 'sheddable' }])
    const same = (i) => (i % 10 < 3 ? ['critical', {}] : ['sheddable', {}])
    const rxs = [new Resilix(), new Resilix()]
    const [withP, without] = await Promise.all([offer(url(ups[0]), mix, rxs[0]), offer(url(ups[1]), same, rxs[1])])
    for (const [name, g] of withP) t.diagnostic(`with priorities, ${line(name, g)}`)
    for (const [name, g] of without) t.diagnostic(`without (the same calls, no priority), ${line(name, g)}`)
    t.diagnostic(`limits at the end: ${rxs[0].stats('up').limit} with, ${rxs[1].stats('up').limit} without`)
    const c = withP.get('critical')
    const s = withP.get('sheddable')
    // Critical: 0.6 x the capacity on its own, so all of it fits; measured 100 %.
    assert.ok(c.ok >= 0.97 * c.offered, line('critical', c))
    const c0 = without.get('critical')
    // Critical calls wait behind critical calls only. Measured: p90 379 ms with priorities
    // against 856 ms without, over a half that still holds the limit's descent from 20; once
    // settled, 40 ms of wait (p50; 80 p90) and 102 ms of service.
    assert.ok(p90(c.latencies) <= 0.6 * p90(c0.latencies), `${line('critical with', c)}; ${line('critical without', c0)}`)
    // The refusals and timeouts fall on sheddable calls.
    const lost = (g) => g.refused + g.late
    assert.ok(lost(s) >= 0.95 * (lost(s) + lost(c)), `${line('sheddable', s)}; ${line('critical', c)}`)
    // Without priorities the critical calls are shed like the rest: the comparison is real.
    assert.ok(c0.ok < c.ok, `${line('critical without', c0)}; ${line('critical with', c)}`)
    for (const rx of rxs) rx.close()
  } finally {
    for (const up of ups) up.child.kill()
  }
})

test(`tenants on a real upstream at 2 x its capacity: one tenant sends 10 x what each of 9 others sends; the 9 keep their fair share`, async (t) => {
  const ups = await Promise.all([startUpstream(0, CAPACITY, SERVICE_MS), startUpstream(0, CAPACITY, SERVICE_MS)])
  try {
    const url = (up) => `http://127.0.0.1:${up.port}/`
    // Of every 19 calls, 10 are the heavy tenant's and one each the 9 light tenants'.
    const who = (i) => (i % 19 < 10 ? 'heavy' : `light-${i % 19 - 10}`)
    const named = (i) => [who(i), { tenant: who(i) }]
    const anonymous = (i) => [who(i), {}]
    const rxs = [new Resilix(), new Resilix()]
    const [withT, without] = await Promise.all([offer(url(ups[0]), named, rxs[0]), offer(url(ups[1]), anonymous, rxs[1])])
    const secs = RUN_MS / 2000
    const capacityRate = CAPACITY * (1000 / SERVICE_MS)
    const rate = (g) => g.ok / secs
    const lights = (groups) => [...groups].filter(([n]) => n !== 'heavy').map(([, g]) => g)
    for (const [label, groups] of [['with tenants', withT], ['without', without]]) {
      const l = lights(groups)
      t.diagnostic(`${label}: heavy ${rate(groups.get('heavy')).toFixed(1)}/s, light ${l.map((g) => rate(g).toFixed(1)).join(' ')} /s (fair share ${(capacityRate / 10).toFixed(1)}/s each, offered ${(RATE / 19).toFixed(1)}/s)`)
    }
    // Each light tenant offers 8.4 a second against a fair share of 8 (a tenth of 80).
    // The upstream serves fewer than 80 a second when the machine is busy: judged against
    // what it served, split fairly. Over 15 runs of the whole suite the worst light tenant got
    // 0.88-1.0 of that with tenants (the lowest on a loaded machine), 0.29-0.63 without.
    const served = [...withT.values()].reduce((n, g) => n + g.ok, 0) / secs
    const fair = Math.min(RATE / 19, served / 10)
    for (const g of lights(withT)) assert.ok(rate(g) >= 0.8 * fair, `a light tenant got ${rate(g).toFixed(1)}/s of a fair ${fair.toFixed(1)}/s`)
    const worstWithout = Math.min(...lights(without).map(rate))
    const worstWith = Math.min(...lights(withT).map(rate))
    assert.ok(worstWith > worstWithout, `the worst light tenant: ${worstWith.toFixed(1)}/s with tenants, ${worstWithout.toFixed(1)}/s without`)
    for (const rx of rxs) rx.close()
  } finally {
    for (const up of ups) up.child.kill()
  }
})
