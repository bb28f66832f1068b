// The calls waiting for quota budget follow the limiter queue's rules: a deadline that passed
// during a stall of this process is kept when the call's turn comes (ADR 0609, 1108), and a
// call waits only behind the waiters of its level or above, its priority's and its tenant's
// (ADR 1001, 1002, 1108). Timing bounds are wide: a busy 2-core machine delays timers.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix, isTimeoutError } from '../index.js'

const quiet = { breaker: false, throttle: false }

/** Blocks the event loop for at least `ms`. */
function block(ms) {
  const t0 = performance.now()
  while (performance.now() - t0 < ms);
}

const outcome = (p) => p.then((v) => ({ ok: v }), (e) => ({ err: e }))

test('stall: a call waiting for budget whose deadline passed while the loop was blocked never runs', async () => {
  // One request a second: the second call waits about 1.1 s for budget, within its 1.8 s.
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 1000 } })
  await rx.execute(() => 1, { key: 'k' })
  let ran = 0
  const waiting = outcome(rx.execute(() => ++ran, { key: 'k', timeoutMs: 1800 }))
  assert.equal(rx.stats('k').quota.waiting, 1)
  // Blocked past both its turn (≈ 1.1 s) and its deadline (1.8 s): the budget's timer, due
  // first, runs before the deadline's.
  block(2000)
  const r = await waiting
  assert.equal(ran, 0, 'fn ran after its deadline')
  assert.ok(isTimeoutError(r.err) && r.err.queued === true, `got ${r.err ?? `the value ${r.ok}`}`)
  assert.equal(rx.stats('k').quota.waiting, 0)
  assert.equal(rx.stats('k').quota.budgets[0].spent, 0, 'the timed-out call was charged')
  rx.close()
})

test('stall: an acquire waiting for budget whose deadline passed while the loop was blocked gets no permit', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 1000 } })
  ;(await rx.acquire('k')).release()
  const waiting = outcome(rx.acquire('k', { timeoutMs: 1800 }))
  block(2000)
  const r = await waiting
  if (r.ok) r.ok.release()
  assert.ok(isTimeoutError(r.err) && r.err.queued === true, `got ${r.ok ? 'a permit' : r.err}`)
  assert.equal(rx.stats('k').inflight, 0)
  assert.equal(rx.stats('k').quota.waiting, 0)
  rx.close()
})
