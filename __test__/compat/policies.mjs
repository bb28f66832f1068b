// The breaker, the bulkhead, and the events.
import assert from 'node:assert/strict'
import process from 'node:process'
import { Resilix, isRejectedError } from 'resilix'
import { check } from './harness.mjs'
import { deferred, fixed, sleep } from './calls.mjs'

check('the breaker opens on consecutive failures, refuses, probes half-open and closes', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 4, breaker: { consecutiveFailures: 2, openMs: 40, halfOpenProbes: 1 } })
  const states = []
  rx.onBreakerStateChange((e) => states.push(`${e.previous}>${e.state}`))
  for (let i = 0; i < 2; i++) await rx.execute(async () => ({ status: 500 }), { key: 'k' })
  assert.equal(rx.stats('k').breaker, 'open')
  let ran = false
  await assert.rejects(rx.execute(() => (ran = true), { key: 'k' }), (e) => isRejectedError(e) && e.reason === 'breaker' && e.key === 'k')
  assert.equal(ran, false)
  await sleep(60)
  assert.equal(await rx.execute(async () => 'probe', { key: 'k' }), 'probe')
  assert.equal(rx.stats('k').breaker, 'closed')
  assert.deepEqual(states, ['closed>open', 'open>half-open', 'half-open>closed'])
})

check('the bulkhead refuses past maxConcurrent', async () => {
  const rx = new Resilix({ limiter: false, breaker: false, bulkhead: { maxConcurrent: 1 } })
  const gate = deferred()
  const first = rx.execute(() => gate.promise, { key: 'k' })
  await assert.rejects(rx.execute(() => 1, { key: 'k' }), (e) => isRejectedError(e) && e.reason === 'bulkhead')
  gate.resolve()
  await first
  assert.equal(rx.stats('k').rejections.bulkhead, 1)
})

check('events: rejections, limit changes and evictions reach listeners; dispose() and [Symbol.dispose]() end them', async () => {
  const rx = new Resilix({ algorithm: 'aimd', initialLimit: 10, updateIntervalMs: 1, queue: false, breaker: false, maxKeys: 2 })
  const rejects = []
  const limits = []
  const evicted = []
  const r = rx.onReject((e) => rejects.push(e))
  const l = rx.onLimitChange((e) => limits.push(e))
  const v = rx.onEvict((e) => evicted.push(e.key))
  const permits = []
  for (let i = 0; i < 10; i++) permits.push(await rx.acquire('k'))
  await assert.rejects(rx.acquire('k'), (e) => isRejectedError(e) && e.reason === 'limit')
  assert.deepEqual(rejects, [{ key: 'k', reason: 'limit', priority: 'normal' }])
  await sleep(5)
  for (const p of permits) p.release('overload')
  assert.deepEqual(limits, [{ key: 'k', limit: 9, previous: 10 }])
  await rx.execute(() => 1, { key: 'a' })
  await rx.execute(() => 1, { key: 'b' })
  assert.equal(evicted.length, 1)
  assert.equal(rx.registryStats().evicted, 1)
  r.dispose()
  l[Symbol.dispose]()
  v.dispose()
  v.dispose() // a second time does nothing
  const held = await rx.acquire('c')
  assert.equal(rx.keys().length, 2)
  const more = []
  for (let i = 0; i < 9; i++) more.push(await rx.acquire('c'))
  await assert.rejects(rx.acquire('c'), (e) => isRejectedError(e))
  assert.equal(rejects.length, 1, 'no event after dispose()')
  assert.equal(evicted.length, 1, 'no event after dispose()')
  for (const p of [held, ...more]) p.release()
})

check('a listener that throws never disturbs the call', async () => {
  const rx = fixed(1, { queue: false })
  const thrown = []
  const onError = (e) => thrown.push(e.message)
  process.on('uncaughtException', onError)
  try {
    rx.onReject(() => {
      throw new Error('listener failed')
    })
    const gate = deferred()
    const first = rx.execute(() => gate.promise, { key: 'k' })
    await assert.rejects(rx.execute(() => 1, { key: 'k' }), (e) => isRejectedError(e) && e.reason === 'limit')
    gate.resolve('done')
    assert.equal(await first, 'done')
    await sleep(5)
    assert.deepEqual(thrown, ['listener failed'])
    assert.equal(rx.stats('k').inflight, 0)
  } finally {
    process.off('uncaughtException', onError)
  }
})

check('a quota: a call waits for budget, an oversize one is refused, usage settles, a 429 cools the key down', async () => {
  const rx = new Resilix({ breaker: false, throttle: false, quota: { requests: 1, tokens: 100, windowMs: 200, pace: true } })
  let ran = false
  await assert.rejects(rx.execute(() => (ran = true), { key: 'k', cost: { tokens: 101 } }), (e) => isRejectedError(e) && e.reason === 'quota')
  assert.equal(ran, false)
  await rx.execute((ctx) => ctx.charge({ tokens: 10 }), { key: 'k', cost: { tokens: 90 } })
  const t0 = performance.now()
  await rx.execute(() => 1, { key: 'k' }) // the request budget waits a window
  assert.ok(performance.now() - t0 >= 150, 'waited for the request budget')
  const q = rx.stats('k').quota
  assert.deepEqual(q.budgets.map((b) => [b.name, b.spent]), [['requests', 1], ['tokens', 0]])
  await rx.execute(() => ({ status: 429, headers: new Headers({ 'retry-after-ms': '100' }) }), { key: 'j' })
  assert.equal(rx.stats('j').quota.cooldowns, 1)
  rx.close()
})
