// "A 429 storm lowers the limit", for each adaptive algorithm (aimd, vegas, gradient2): overloads
// cut the limit between windows, and the breaker stays closed (overload is not a failure).
// The breaker half with pinned limits is in policies.test.mjs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix } from '../index.js'
import { sleep } from './helpers.mjs'

// Short windows so the limiter updates within a fraction of a second of real time.
const fast = { initialLimit: 20, minLimit: 2, maxLimit: 100, windowMinMs: 10, minSamples: 5, updateIntervalMs: 0 }

// Node loads the Response class on first use, which can take longer than a storm on a busy
// machine (a CI run once saw only 10 calls in 400 ms): load it before any timing starts.
new Response(null, { status: 429 })

/** At least `ms` and at least `calls` calls (so a slow machine still storms), at most 10 s. */
async function storm(rx, key, ms, calls = 200) {
  const start = performance.now()
  let n = 0
  while ((performance.now() < start + ms || n < calls) && performance.now() < start + 10_000) {
    n += 10
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
