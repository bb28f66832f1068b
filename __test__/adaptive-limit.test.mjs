// Issue 5's "a 429 storm lowers the limit", for the adaptive algorithms. This file tests the
// limit ALGORITHMS (issue 3); before they are merged every algorithm behaves as a fixed limit
// and these tests fail by design. The breaker half (the storm leaves it closed) is in
// policies.test.mjs and holds today.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix } from '../index.js'
import { sleep } from './helpers.mjs'

// Short windows so the limiter updates within a fraction of a second of real time.
const fast = { initialLimit: 20, minLimit: 2, maxLimit: 100, windowMinMs: 10, minSamples: 5, updateIntervalMs: 0 }

async function storm(rx, key, ms) {
  const end = performance.now() + ms
  while (performance.now() < end) {
    const batch = []
    for (let i = 0; i < 10; i++) {
      batch.push(rx.execute(async () => { await sleep(2); return new Response(null, { status: 429 }) }, { key }).catch(() => {}))
    }
    await Promise.all(batch)
  }
}

for (const algorithm of ['aimd', 'vegas', 'gradient2']) {
  test(`adaptive: a 429 storm lowers the ${algorithm} limit and leaves the breaker closed`, async () => {
    const rx = new Resilix({ algorithm, ...fast, breaker: { consecutiveFailures: 3, minimumCalls: 5 } })
    const changes = []
    rx.onLimitChange((e) => changes.push(e))
    await storm(rx, 'k', 400)
    const s = rx.stats('k')
    assert.equal(s.breaker, 'closed')
    assert.ok(s.verdicts.overload > 50, `${s.verdicts.overload} overloads`)
    assert.ok(s.limit < 20, `${algorithm}: limit ${s.limit} after a 429 storm (initial 20)`)
    assert.ok(s.limit >= 2, 'never below minLimit')
    assert.ok(changes.length > 0 && changes.at(-1).limit === s.limit, 'onLimitChange reported it')
  })
}
