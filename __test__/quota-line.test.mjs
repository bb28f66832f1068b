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

test('waiting for budget admits higher priorities first and keeps arrival order within one', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 200 } })
  await rx.execute(() => 1, { key: 'k' })
  const order = []
  const plan = [['sheddable', 's1'], ['normal', 'n1'], [undefined, 'd1'], ['critical', 'c1'], ['low', 'l1'], ['critical', 'c2'], ['sheddable', 's2']]
  const calls = plan.map(([priority, name]) => rx.execute(async () => order.push(name), priority === undefined ? { key: 'k' } : { key: 'k', priority }))
  assert.equal(rx.stats('k').quota.waiting, 7)
  await Promise.all(calls)
  assert.deepEqual(order, ['c1', 'c2', 'n1', 'd1', 'l1', 's1', 's2'])
  assert.equal(rx.stats('k').quota.waiting, 0)
  rx.close()
})

test('waiting for budget, calls that name no priority keep their order when the first prioritised call arrives mid-line', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 200 } })
  await rx.execute(() => 1, { key: 'k' })
  const order = []
  const calls = [1, 2, 3].map((i) => rx.execute(async () => order.push(`d${i}`), { key: 'k' }))
  calls.push(rx.execute(async () => order.push('c'), { key: 'k', priority: 'critical' }))
  calls.push(rx.execute(async () => order.push('d4'), { key: 'k' }))
  calls.push(rx.execute(async () => order.push('s'), { key: 'k', priority: 'sheddable' }))
  await Promise.all(calls)
  assert.deepEqual(order, ['c', 'd1', 'd2', 'd3', 'd4', 's'])
  rx.close()
})

test('a critical call is not refused for the sheddable calls waiting for budget, a sheddable one is', async () => {
  // One request a second, spent: each waiter adds a second of wait.
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 1000 } })
  const t0 = performance.now()
  await rx.execute(() => 1, { key: 'k' })
  const sheddable = Array.from({ length: 60 }, () => outcome(rx.execute(() => 's', { key: 'k', priority: 'sheddable' })))
  assert.equal(rx.stats('k').quota.waiting, 60)
  // Alone it would run in about 1.1 s: it waits ahead of all 60 and runs.
  const critical = await outcome(rx.execute(() => 'c', { key: 'k', priority: 'critical', timeoutMs: 2000 }))
  assert.equal(critical.ok, 'c', `the critical call: ${critical.err}`)
  const ms = performance.now() - t0
  assert.ok(ms >= 1000, `ran ${ms} ms after the budget was spent, before it came back`)
  // A sheddable one with the same deadline would wait behind the 60: refused at once.
  const late = await outcome(rx.execute(() => 's', { key: 'k', priority: 'sheddable', timeoutMs: 2000 }))
  assert.equal(late.err?.reason, 'quota', String(late.err ?? late.ok))
  rx.close()
  for (const r of await Promise.all(sheddable)) assert.ok(r.err !== undefined)
  assert.equal(rx.stats('k')?.quota?.waiting ?? 0, 0)
})

test('waiting for budget, a tenant that used less of the key goes ahead of one that used more, within its class', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 2, windowMs: 1000 } })
  // The heavy tenant held a slot for 300 ms, the light one for a moment: both spent the budget.
  await rx.execute(() => new Promise((r) => setTimeout(r, 300)), { key: 'k', tenant: 'heavy' })
  await rx.execute(async () => {}, { key: 'k', tenant: 'light' })
  const order = []
  // A flood of the heavy tenant's calls waits for budget, 40 seconds of it.
  const flood = Array.from({ length: 40 }, () => outcome(rx.execute(async () => order.push('heavy'), { key: 'k', tenant: 'heavy' })))
  // The light tenant's call, with 2 s, waits ahead of the flood: alone it fits in about 1 s.
  const light = await outcome(rx.execute(async () => order.push('light'), { key: 'k', tenant: 'light', timeoutMs: 2000 }))
  assert.equal(light.ok, 1, `the light tenant's call: ${light.err}`)
  assert.equal(order[0], 'light')
  rx.close()
  for (const r of await Promise.all(flood)) assert.ok(r.ok !== undefined || r.err !== undefined)
})

test('waiters for budget that time out, abort or are closed, at any level, leave no count behind', async () => {
  const rx = new Resilix({ ...quiet, quota: { tokens: 100, windowMs: 500 } })
  await rx.execute(() => 1, { key: 'k', cost: { tokens: 100 } })
  const ac = new AbortController()
  const waiting = [
    rx.execute(() => 'a', { key: 'k', priority: 'critical', cost: { tokens: 60 }, signal: ac.signal }),
    rx.execute(() => 'b', { key: 'k', priority: 'sheddable', cost: { tokens: 60 }, timeoutMs: 2000 }),
    rx.execute(() => 'c', { key: 'k', tenant: 't', cost: { tokens: 60 }, signal: ac.signal }),
    rx.execute(() => 'd', { key: 'k', priority: 'high', tenant: 'u', cost: { tokens: 60 }, timeoutMs: 2000 }),
  ].map(outcome)
  assert.equal(rx.stats('k').quota.waiting, 4)
  ac.abort(new Error('gone'))
  // The other two time out during a stall: they leave when their turn comes.
  block(2100)
  const results = await Promise.all(waiting)
  const how = results.map((r) => (r.err?.message === 'gone' ? 'abort' : isTimeoutError(r.err) ? 'timeout' : String(r.err ?? r.ok)))
  assert.deepEqual(how, ['abort', 'timeout', 'abort', 'timeout'])
  assert.equal(rx.stats('k').quota.waiting, 0)
  // Nothing of theirs is counted ahead: a call of the whole budget fits alone, at every level.
  for (const priority of ['sheddable', 'normal', 'critical']) {
    const r = await outcome(rx.execute(() => priority, { key: 'k', priority, cost: { tokens: 100 }, timeoutMs: 3000 }))
    assert.equal(r.ok, priority, String(r.err))
    assert.equal(rx.stats('k').quota.waiting, 0)
  }
  // close() answers the waiters of every level and leaves none counted.
  const closed = ['critical', 'low'].map((priority) => outcome(rx.execute(() => 1, { key: 'k', priority, cost: { tokens: 100 } })))
  assert.equal(rx.stats('k').quota.waiting, 2)
  rx.close()
  for (const r of await Promise.all(closed)) assert.ok(r.err !== undefined)
})
