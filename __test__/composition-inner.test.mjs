// The composition of the innermost policies (throttle → limiter and queue → bulkhead →
// timeout), through execute, acquire and the undici interceptor's fetch and request(), against
// a real local upstream, public API only.
// acquire()'s timeoutMs bounds its wait for a permit only: a permit has no deadline once held
// (its holder reports a timeout with `release('timeout')`), so the cases of a running call's
// deadline (timeouts as the throttle's evidence, a timed-out call's slot and place) do not apply
// to it; the waiting ones do.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { SURFACES, until, overloads, inWorld } from './fixtures/composition-surfaces.mjs'
import { deadlinePassesInQueue, reasons, throttleBefore } from './fixtures/composition-steps.mjs'

const RUNNING_DEADLINE = ['execute', 'fetch', 'request']

// At most half the calls refused by the throttle, so that both refusals show among 20 calls.
const halfThrottle = { throttle: { maxRejection: 0.5 }, breaker: false, seed: 11 }

for (const surface of SURFACES) {
  test(`throttle → limiter [${surface}]: the throttle draws before the limit refuses`, async () => {
    await inWorld(surface, { ...halfThrottle, algorithm: 'fixed', initialLimit: 1, queue: false }, async (w) => {
      const held = await throttleBefore(w, 'limit')
      assert.equal(w.up.hits('/ok'), 0)
      w.up.release(held.name)
      assert.deepEqual(await held.done, { status: 200 })
    })
  })

  test(`throttle → bulkhead [${surface}]: the throttle draws before the bulkhead refuses`, async () => {
    await inWorld(surface, { ...halfThrottle, bulkhead: { maxConcurrent: 1 } }, async (w) => {
      const held = await throttleBefore(w, 'bulkhead')
      const s = w.stats()
      assert.deepEqual([s.inflight, s.bulkheadActive], [1, 1], 'a bulkhead refusal gave its limiter slot back')
      w.up.release(held.name)
      assert.deepEqual(await held.done, { status: 200 })
    })
  })

  test(`limiter → bulkhead [${surface}]: a call over the limit waits in the queue before it meets the bulkhead`, async () => {
    await inWorld(surface, { algorithm: 'fixed', initialLimit: 1, breaker: false, bulkhead: { maxConcurrent: 1 } }, async (w) => {
      const a = w.call('/hold/a')
      await w.up.arrived('a')
      const b = w.call('/ok')
      await until(() => w.stats().queued === 1, 'the second call to wait')
      assert.equal(w.stats().rejections.bulkhead, 0)
      w.up.release('a')
      assert.deepEqual(await a, { status: 200 })
      assert.deepEqual(await b, { status: 200 })
      const s = w.stats()
      assert.deepEqual([s.inflight, s.bulkheadActive, s.verdicts.success, s.rejections.bulkhead], [0, 0, 2, 0])
    })
  })

  test(`limiter → bulkhead [${surface}]: under the limit, a full bulkhead refuses and gives the limiter slot back`, async () => {
    await inWorld(surface, { algorithm: 'fixed', initialLimit: 5, breaker: false, bulkhead: { maxConcurrent: 1 } }, async (w) => {
      const a = w.call('/hold/a')
      await w.up.arrived('a')
      for (let i = 0; i < 8; i++) assert.equal((await w.call('/ok')).reason, 'bulkhead')
      const s = w.stats()
      assert.deepEqual([s.inflight, s.queued, s.bulkheadActive, s.rejections.bulkhead, s.rejections.limit], [1, 0, 1, 8, 0])
      w.up.release('a')
      assert.deepEqual(await a, { status: 200 })
    })
  })

  test(`limiter → timeout [${surface}]: the deadline runs while the call waits in the queue; it leaves the queue unsent`, async () => {
    await inWorld(surface, { algorithm: 'fixed', initialLimit: 1, breaker: false }, async (w) => {
      const { held: a } = await deadlinePassesInQueue(w)
      let s = w.stats()
      assert.deepEqual([s.inflight, s.queued, s.verdicts.timeout], [1, 0, 0])
      w.up.release('a')
      assert.deepEqual(await a, { status: 200 })
      assert.deepEqual(await w.call('/ok'), { status: 200 })
      s = w.stats()
      assert.deepEqual([s.inflight, s.verdicts.success], [0, 2])
    })
  })

  test(`bulkhead → timeout [${surface}]: a full bulkhead refuses at once, whatever the deadline`, async () => {
    await inWorld(surface, { breaker: false, bulkhead: { maxConcurrent: 1 } }, async (w) => {
      const a = w.call('/hold/a')
      await w.up.arrived('a')
      const b = await w.call('/ok', { timeoutMs: 60_000 })
      assert.equal(b.reason, 'bulkhead', `refused, not left to wait: ${b.error ?? b.status}`)
      w.up.release('a')
      assert.deepEqual(await a, { status: 200 })
    })
  })
}

for (const surface of RUNNING_DEADLINE) {
  test(`throttle → timeout [${surface}]: a call past its deadline is no refusal to the throttle`, async () => {
    await inWorld(surface, { algorithm: 'fixed', initialLimit: 100, breaker: false, seed: 13 }, async (w) => {
      // One 429 first: a key's throttle counts from its first overload. Then 15 timeouts and 4
      // more 429s: were the timeouts refusals, the throttle would refuse 90 % of what follows.
      // One after another, until 15 are timeouts: one settled in what the deadline timer saw
      // as a stall of this process is no observation (`cancelled`), counted by no policy.
      await overloads(w, 1)
      for (let i = 0; i < 60 && w.stats().verdicts.timeout < 15; i++) {
        assert.ok((await w.call('/slow/10000', { timeoutMs: 80 })).timedOut, 'the slow call timed out')
        await until(() => w.stats().inflight === 0, 'the timed-out call to settle')
      }
      assert.equal(w.stats().verdicts.timeout, 15)
      await overloads(w, 4)
      const rs = await reasons(w, 20)
      const throttled = rs.filter((r) => r === 'throttle').length
      assert.ok(throttled < 10, `${throttled} of 20 refused by the throttle`)
      assert.equal(w.stats().verdicts.overload, 5, 'the 429s were seen')
    })
  })

  test(`limiter → timeout [${surface}]: a running call past its deadline is aborted, settled as a timeout, and frees its slot`, async () => {
    await inWorld(surface, { algorithm: 'fixed', initialLimit: 1, breaker: false }, async (w) => {
      const o = await w.call('/slow/10000', { timeoutMs: 200 })
      assert.ok(o.timeout, `a TimeoutError: ${o.error ?? o.status}`)
      assert.equal(o.timeout.queued, false)
      await until(() => w.stats().inflight === 0, 'the aborted request to free its slot')
      const v = w.stats().verdicts
      assert.deepEqual([v.timeout + v.cancelled, v.success, v.failure], [1, 0, 0])
      assert.deepEqual(await w.call('/ok'), { status: 200 })
    })
  })

  test(`limiter → timeout [${surface}]: timeouts are the limit's strongest reduce signal`, async () => {
    await inWorld(surface, { algorithm: 'aimd', initialLimit: 20, minLimit: 1, updateIntervalMs: 0, breaker: false }, async (w) => {
      // Until five are counted: one settled in a stall of this process is no observation.
      for (let i = 0; i < 40 && (w.stats()?.verdicts.timeout ?? 0) < 5; i++) {
        assert.ok((await w.call('/slow/10000', { timeoutMs: 100 })).timedOut)
        await until(() => w.stats().inflight === 0, 'the timed-out call to settle')
      }
      assert.equal(w.stats().verdicts.timeout, 5)
      await w.call('/ok')
      assert.ok(w.stats().limit < 20, `the limit fell: ${w.stats().limit}`)
    })
  })

  test(`bulkhead → timeout [${surface}]: a running call past its deadline gives its bulkhead place back`, async () => {
    await inWorld(surface, { breaker: false, bulkhead: { maxConcurrent: 1 } }, async (w) => {
      const o = await w.call('/slow/10000', { timeoutMs: 200 })
      assert.ok(o.timeout, `a TimeoutError: ${o.error ?? o.status}`)
      await until(() => w.stats().bulkheadActive === 0, 'the place to be given back')
      assert.deepEqual(await w.call('/ok'), { status: 200 })
      assert.equal(w.stats().rejections.bulkhead, 0)
    })
  })
}
