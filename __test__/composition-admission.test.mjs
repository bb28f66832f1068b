// The composition of the breaker and the quota with each policy below them (retry → breaker →
// quota → throttle → limiter and queue → bulkhead → timeout), through execute, acquire and the
// undici interceptor's fetch and request(), against a real local upstream, public API only.
// acquire()'s timeoutMs bounds its wait for a permit only: a permit has no deadline once held,
// so the cases of a running call's deadline (a timeout that is a breaker failure, a timed-out
// call that was charged) do not apply to it; the waiting ones do.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SURFACES, until, overloads, inWorld } from './fixtures/composition-surfaces.mjs'
import { deadlinePassesInQueue } from './fixtures/composition-steps.mjs'

const RUNNING_DEADLINE = ['execute', 'fetch', 'request']
const fixed1 = { algorithm: 'fixed', initialLimit: 1 }

/**
 * With one request spent by a held call: three calls refused by `next` spend nothing, and one
 * over the quota is refused by the quota before it.
 */
async function quotaBefore(w, next) {
  for (let i = 0; i < 3; i++) assert.equal((await w.call('/ok')).reason, next)
  assert.equal(w.spent(), 1, 'the refused calls spent nothing')
  assert.equal((await w.call('/ok', { cost: { requests: 11 } })).reason, 'quota')
  assert.deepEqual([w.stats().rejections[next], w.stats().rejections.quota], [3, 1])
}

for (const surface of SURFACES) {
  test(`breaker → quota [${surface}]: an open breaker refuses before the quota spends budget; a quota refusal is no breaker failure`, async () => {
    await inWorld(surface, { breaker: { consecutiveFailures: 1 }, quota: { requests: 10 } }, async (w) => {
      for (let i = 0; i < 3; i++) assert.equal((await w.call('/ok', { cost: { requests: 11 } })).reason, 'quota')
      assert.equal(w.stats().breaker, 'closed')
      assert.equal(w.spent(), 0)
      assert.deepEqual(await w.call('/status/500'), { status: 500 })
      assert.equal(w.stats().breaker, 'open')
      assert.equal(w.spent(), 1)
      for (let i = 0; i < 3; i++) assert.equal((await w.call('/ok')).reason, 'breaker')
      assert.equal(w.spent(), 1, 'the refused calls spent nothing')
      assert.equal(w.up.hits('/ok'), 0)
      assert.deepEqual([w.stats().rejections.breaker, w.stats().rejections.quota], [3, 3])
    })
  })

  test(`breaker → throttle [${surface}]: a throttle refusal is no breaker failure; an open breaker refuses before the throttle draws`, async () => {
    await inWorld(surface, { breaker: { consecutiveFailures: 1 }, seed: 3 }, async (w) => {
      await overloads(w, 30)
      const outs = []
      for (let i = 0; i < 20; i++) outs.push(await w.call('/ok'))
      assert.ok(outs.some((o) => o.reason === 'throttle'), 'the throttle refused some')
      assert.equal(w.stats().breaker, 'closed', 'neither the 429s nor the throttle refusals are failures')
      for (let i = 0; i < 200 && w.up.hits('/status/500') === 0; i++) await w.call('/status/500')
      assert.equal(w.stats().breaker, 'open')
      const throttled = w.stats().rejections.throttle
      for (let i = 0; i < 20; i++) assert.equal((await w.call('/ok')).reason, 'breaker')
      assert.equal(w.stats().rejections.throttle, throttled, 'the throttle was not asked')
    })
  })

  test(`breaker → limiter and queue [${surface}]: a waiting call is asked the breaker again when its turn comes`, async () => {
    await inWorld(surface, { ...fixed1, breaker: { consecutiveFailures: 1 } }, async (w) => {
      const a = w.call('/hold/a')
      await w.up.arrived('a')
      const b = w.call('/ok')
      await until(() => w.stats().queued === 1, 'the second call to wait')
      w.up.release('a', 500)
      assert.deepEqual(await a, { status: 500 })
      assert.equal((await b).reason, 'breaker')
      assert.equal(w.up.hits('/ok'), 0)
      const s = w.stats()
      assert.deepEqual([s.breaker, s.inflight, s.queued, s.rejections.breaker, s.verdicts.failure], ['open', 0, 0, 1, 1])
    })
  })

  test(`breaker → bulkhead [${surface}]: a bulkhead refusal is no breaker failure and gives its limiter slot back`, async () => {
    await inWorld(surface, { breaker: { consecutiveFailures: 1 }, bulkhead: { maxConcurrent: 1 } }, async (w) => {
      const a = w.call('/hold/a')
      await w.up.arrived('a')
      for (let i = 0; i < 5; i++) assert.equal((await w.call('/ok')).reason, 'bulkhead')
      let s = w.stats()
      assert.deepEqual([s.breaker, s.verdicts.failure, s.inflight, s.bulkheadActive, s.rejections.bulkhead], ['closed', 0, 1, 1, 5])
      w.up.release('a')
      assert.deepEqual(await a, { status: 200 })
      assert.deepEqual(await w.call('/ok'), { status: 200 })
      s = w.stats()
      assert.deepEqual([s.inflight, s.bulkheadActive, s.verdicts.success], [0, 0, 2])
    })
  })

  test(`breaker → bulkhead [${surface}]: a half-open probe the bulkhead refuses gives its probe place back`, async () => {
    await inWorld(surface, { bulkhead: { maxConcurrent: 2 }, breaker: { consecutiveFailures: 1, openMs: 300, halfOpenProbes: 2 } }, async (w) => {
      const a = w.call('/hold/a')
      await w.up.arrived('a')
      assert.deepEqual(await w.call('/status/500'), { status: 500 })
      assert.equal(w.stats().breaker, 'open')
      await new Promise((r) => setTimeout(r, 450)) // past openMs: the next call finds it half-open
      const b = w.call('/hold/b') // the first probe, and the bulkhead's second place
      await w.up.arrived('b')
      assert.equal((await w.call('/ok')).reason, 'bulkhead', 'the second probe met a full bulkhead')
      w.up.release('a') // admitted before the breaker opened: no probe
      assert.deepEqual(await a, { status: 200 })
      // The refused probe's place was given back: this call is the second probe, not refused.
      assert.deepEqual(await w.call('/ok'), { status: 200 })
      w.up.release('b')
      assert.deepEqual(await b, { status: 200 })
      assert.equal(w.stats().breaker, 'closed')
      assert.equal(w.stats().rejections.breaker, 0)
    })
  })

  test(`breaker → timeout [${surface}]: a deadline that passes while the call waits is no breaker failure`, async () => {
    await inWorld(surface, { ...fixed1, breaker: { consecutiveFailures: 1 } }, async (w) => {
      const { held: a } = await deadlinePassesInQueue(w)
      const s = w.stats()
      assert.deepEqual([s.breaker, s.verdicts.timeout, s.queued], ['closed', 0, 0])
      w.up.release('a')
      assert.deepEqual(await a, { status: 200 })
    })
  })

  test(`quota → limiter and queue [${surface}]: a limit refusal spends no quota; the quota refuses before the limiter`, async () => {
    await inWorld(surface, { ...fixed1, queue: false, breaker: false, quota: { requests: 10 } }, async (w) => {
      const a = w.call('/hold/a')
      await w.up.arrived('a')
      assert.equal(w.spent(), 1)
      await quotaBefore(w, 'limit')
      w.up.release('a')
      assert.deepEqual(await a, { status: 200 })
    })
  })

  test(`quota → limiter [${surface}]: a call waiting for budget holds no limiter slot, and runs once the budget is back`, async () => {
    await inWorld(surface, { breaker: false, quota: { requests: 1, windowMs: 1000 } }, async (w) => {
      assert.deepEqual(await w.call('/ok'), { status: 200 })
      const b = w.call('/ok')
      await until(() => w.stats().quota.waiting === 1, 'the second call to wait for budget')
      const s = w.stats()
      assert.deepEqual([s.inflight, s.queued, w.up.hits('/ok')], [0, 0, 1])
      assert.deepEqual(await b, { status: 200 })
      assert.deepEqual([w.stats().quota.waiting, w.up.hits('/ok'), w.spent()], [0, 2, 1])
    })
  })

  test(`quota → bulkhead [${surface}]: a bulkhead refusal spends no quota; the quota refuses before the bulkhead`, async () => {
    await inWorld(surface, { breaker: false, bulkhead: { maxConcurrent: 1 }, quota: { requests: 10 } }, async (w) => {
      const a = w.call('/hold/a')
      await w.up.arrived('a')
      await quotaBefore(w, 'bulkhead')
      w.up.release('a')
      assert.deepEqual(await a, { status: 200 })
      assert.equal(w.up.hits('/ok'), 0)
    })
  })

  test(`quota → timeout [${surface}]: a call whose budget cannot come back before its deadline is refused 'quota' at once, not timed out`, async () => {
    await inWorld(surface, { breaker: false, quota: { requests: 1, windowMs: 60_000 } }, async (w) => {
      assert.deepEqual(await w.call('/ok'), { status: 200 })
      const o = await w.call('/ok', { timeoutMs: 2000 })
      assert.equal(o.reason, 'quota', `refused, not left to time out: ${o.error ?? o.status}`)
      assert.equal(w.up.hits('/ok'), 1)
      assert.equal(w.spent(), 1)
      assert.equal(w.stats().quota.waiting, 0)
    })
  })
}

for (const surface of SURFACES) {
  test(`quota → throttle [${surface}]: a throttle refusal spends no quota`, async () => {
    // The interceptor with pace: false, so that a 429 does not cool the key down (the quota's own answer).
    await inWorld(surface, { breaker: false, seed: 5, quota: { requests: 1000 } }, async (w) => {
      await overloads(w, 30)
      const outs = []
      for (let i = 0; i < 20; i++) outs.push(await w.call('/status/429'))
      assert.ok(outs.some((o) => o.reason === 'throttle'), 'the throttle refused some')
      assert.equal(w.spent(), w.up.hits('/status/429'), 'charged: exactly the calls that reached the upstream')
      assert.equal(w.stats().rejections.quota, 0)
    }, { pace: false })
  })
}

for (const surface of RUNNING_DEADLINE) {
  test(`breaker → timeout [${surface}]: a running call past its deadline is a breaker failure; the open breaker then refuses`, async () => {
    await inWorld(surface, { breaker: { consecutiveFailures: 2 } }, async (w) => {
      // Until two are counted: one settled in a stall of this process is no observation.
      for (let i = 0; i < 20 && (w.stats()?.verdicts.timeout ?? 0) < 2; i++) {
        const o = await w.call('/slow/10000', { timeoutMs: 200 })
        assert.ok(o.timeout, `a TimeoutError: ${o.error ?? o.status}`)
        assert.equal(o.timeout.queued, false)
        await until(() => w.stats().inflight === 0, 'the timed-out call to settle')
      }
      assert.deepEqual([w.stats().verdicts.timeout, w.stats().breaker], [2, 'open'])
      assert.equal((await w.call('/ok', { timeoutMs: 200 })).reason, 'breaker')
      assert.equal(w.up.hits('/ok'), 0)
    })
  })

  test(`quota → timeout [${surface}]: a call past its deadline reached the upstream and stays charged`, async () => {
    await inWorld(surface, { breaker: false, quota: { requests: 10 } }, async (w) => {
      const o = await w.call('/slow/10000', { timeoutMs: 200 })
      assert.ok(o.timeout, `a TimeoutError: ${o.error ?? o.status}`)
      await until(() => w.stats().inflight === 0, 'the timed-out call to settle')
      assert.equal(w.up.hits('/slow/10000'), 1)
      assert.equal(w.spent(), 1)
    })
  })
}
