// Calls: execute, acquire and release, the queue, deadlines, aborts, AsyncLocalStorage, close().
import assert from 'node:assert/strict'
import { AsyncLocalStorage } from 'node:async_hooks'
import { createRequire } from 'node:module'
import { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError } from 'resilix'
import { check } from './harness.mjs'

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
export function deferred() {
  let resolve
  const promise = new Promise((r) => (resolve = r))
  return { promise, resolve }
}
/** A fixed limit and no breaker: these checks do not depend on the algorithm. */
export const fixed = (limit, extra = {}) => new Resilix({ algorithm: 'fixed', initialLimit: limit, breaker: false, ...extra })

check('ESM and CommonJS load one instance of the addon', () => {
  const cjs = createRequire(import.meta.url)('resilix')
  assert.equal(cjs.Resilix, Resilix)
  assert.equal(cjs.RejectedError, RejectedError)
})

check('execute resolves with what fn returns and rejects with what it throws; the verdicts are counted', async () => {
  const rx = fixed(4)
  assert.equal(await rx.execute((ctx) => ctx.key, { key: 'k' }), 'k')
  assert.equal(await rx.execute(async () => ({ status: 503 }), { key: 'k' }).then((r) => r.status), 503)
  const boom = new Error('boom')
  await assert.rejects(rx.execute(async () => { throw boom }, { key: 'k' }), (e) => e === boom)
  const s = rx.stats('k')
  assert.deepEqual([s.inflight, s.verdicts.success, s.verdicts.overload, s.verdicts.failure], [0, 1, 1, 1])
  assert.deepEqual(rx.keys(), ['k'])
})

check('a burst of 200 calls over a limit of 10 all run, never more than 10 at once', async () => {
  const rx = fixed(10, { queue: { initialFactor: 100, maxFactor: 101 } })
  let running = 0
  let most = 0
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => rx.execute(async () => {
    most = Math.max(most, ++running)
    await sleep(1)
    running--
    return i
  }, { key: 'burst' })))
  assert.deepEqual(results, Array.from({ length: 200 }, (_, i) => i))
  assert.equal(most, 10)
  assert.equal(rx.stats('burst').verdicts.success, 200)
})

check('acquire and release: a permit holds its slot until released, exactly once', async () => {
  const rx = fixed(1, { queue: false })
  const p = await rx.acquire('k')
  assert.equal(rx.stats('k').inflight, 1)
  await assert.rejects(rx.acquire('k'), (e) => isRejectedError(e) && e.reason === 'limit')
  p.mark()
  p.release('overload')
  assert.equal(p.released, true)
  assert.throws(() => p.release(), /released/)
  const s = rx.stats('k')
  assert.deepEqual([s.inflight, s.verdicts.overload, s.rejections.limit], [0, 1, 1])
})

check('the queue: calls over the limit wait, then run in order', async () => {
  const rx = fixed(1, { queue: { initialFactor: 4, maxFactor: 5 } })
  const gate = deferred()
  const order = []
  const first = rx.execute(() => gate.promise, { key: 'q' })
  const waiting = [1, 2, 3].map((n) => rx.execute(() => order.push(n), { key: 'q' }))
  assert.equal(rx.stats('q').queued, 3)
  gate.resolve()
  await Promise.all([first, ...waiting])
  assert.deepEqual(order, [1, 2, 3])
  assert.deepEqual([rx.stats('q').queued, rx.stats('q').inflight], [0, 0])
})

check('a deadline rejects a running call with TimeoutError and aborts ctx.signal with it', async () => {
  const rx = fixed(2)
  let signal
  const t0 = Date.now()
  await assert.rejects(
    rx.execute((ctx) => {
      signal = ctx.signal
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }))
    }, { key: 'slow', timeoutMs: 50 }),
    (e) => isTimeoutError(e) && e instanceof TimeoutError && e.timeoutMs === 50 && e.queued === false,
  )
  assert.ok(Date.now() - t0 >= 45, 'not before its deadline')
  assert.equal(signal.aborted, true)
  assert.ok(isTimeoutError(signal.reason))
  await sleep(1)
  assert.deepEqual([rx.stats('slow').inflight, rx.stats('slow').verdicts.timeout], [0, 1])
})

check('a deadline that passes in the queue: TimeoutError with queued, and fn never runs', async () => {
  const rx = fixed(1)
  const gate = deferred()
  const first = rx.execute(() => gate.promise, { key: 'k' })
  let ran = false
  await assert.rejects(rx.execute(() => (ran = true), { key: 'k', timeoutMs: 30 }), (e) => isTimeoutError(e) && e.queued === true)
  assert.equal(rx.stats('k').queued, 0)
  gate.resolve()
  await first
  assert.equal(ran, false)
})

check("the caller's signal: an abort rejects a running call with its reason, and a waiting call leaves the queue", async () => {
  const rx = fixed(1)
  const running = new AbortController()
  const gate = deferred()
  const first = rx.execute(() => gate.promise, { key: 'k', signal: running.signal })
  const waiting = new AbortController()
  let ran = false
  const second = rx.execute(() => (ran = true), { key: 'k', signal: waiting.signal })
  assert.equal(rx.stats('k').queued, 1)
  waiting.abort(new Error('caller gave up'))
  await assert.rejects(second, /caller gave up/)
  assert.equal(rx.stats('k').queued, 0)
  running.abort(new Error('stop'))
  await assert.rejects(first, /stop/)
  gate.resolve()
  await sleep(1)
  assert.equal(ran, false)
  assert.deepEqual([rx.stats('k').inflight, rx.stats('k').verdicts.cancelled], [0, 1])
})

check("AsyncLocalStorage: fn sees its caller's store, for a direct and for a queued call", async () => {
  const als = new AsyncLocalStorage()
  const rx = fixed(1, { queue: { initialFactor: 4, maxFactor: 5 } })
  const gate = deferred()
  const first = als.run('first', () => rx.execute(async () => {
    await gate.promise
    return als.getStore()
  }))
  const queued = ['q1', 'q2'].map((id) => als.run(id, () => rx.execute(async () => {
    const atStart = als.getStore()
    await sleep(1)
    return [atStart, als.getStore()]
  })))
  assert.equal(rx.stats('default').queued, 2)
  als.run('releaser', () => gate.resolve())
  assert.equal(await first, 'first')
  assert.deepEqual(await Promise.all(queued), [['q1', 'q1'], ['q2', 'q2']])
})

check('close(): waiting calls reject with ERR_RESILIX_CLOSED, running ones finish, later ones reject', async () => {
  const rx = fixed(1)
  const gate = deferred()
  const running = rx.execute(() => gate.promise, { key: 'k', timeoutMs: 60_000 })
  const waiting = rx.execute(() => 'never', { key: 'k' })
  rx.close()
  await assert.rejects(waiting, (e) => e.code === 'ERR_RESILIX_CLOSED')
  await assert.rejects(rx.execute(() => 1), (e) => e.code === 'ERR_RESILIX_CLOSED')
  await assert.rejects(rx.acquire('k'), (e) => e.code === 'ERR_RESILIX_CLOSED')
  gate.resolve('finished')
  assert.equal(await running, 'finished')
  assert.deepEqual(rx.keys(), [])
  const other = fixed(1)
  other[Symbol.dispose]()
  await assert.rejects(other.execute(() => 1), (e) => e.code === 'ERR_RESILIX_CLOSED')
})

check('bad input: a clear TypeError or RangeError naming it, as a rejected promise', async () => {
  assert.throws(() => new Resilix({ initialLimit: -1 }), (e) => e instanceof RangeError && /initialLimit/.test(e.message))
  assert.throws(() => new Resilix({ tiemoutMs: 5 }), /unknown option tiemoutMs/)
  const rx = fixed(1)
  await assert.rejects(rx.execute(() => 1, { key: 42 }), TypeError)
  await assert.rejects(rx.execute(() => 1, { key: 'x'.repeat(513) }), (e) => e instanceof RangeError && /maxKeyLength/.test(e.message))
})

check('a panic in the engine becomes a JS Error, and the instance keeps working', async () => {
  const native = createRequire(import.meta.url)('../../native.js')
  const rx = fixed(2)
  const running = rx.execute(() => sleep(5).then(() => 'ran'), { key: 'k' })
  assert.throws(() => native.forcePanicForTest(), (e) => e instanceof Error && /forced panic for test/.test(e.message))
  assert.equal(rx.stats('k').inflight, 1)
  assert.equal(await running, 'ran')
  assert.equal(await rx.execute(() => 'after', { key: 'k' }), 'after')
})
