// Node side: breaker, bulkhead and timeout as a caller sees them, and the events.
// Limits are pinned (algorithm 'fixed'); the adaptive half of "a 429 storm lowers the limit"
// is in adaptive-limit.test.mjs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { once } from 'node:events'
import { Resilix, isRejectedError, isTimeoutError } from '../index.js'
import { deferred, sleep, keepAlive, honoursSignal } from './helpers.mjs'

const withBreaker = (breaker, extra = {}) =>
  new Resilix({ algorithm: 'fixed', initialLimit: 10, breaker: { openMs: 60_000, ...breaker }, ...extra })

test('breaker: a run of 5xx opens it and open rejects with reason breaker before the limiter', async () => {
  const rx = withBreaker({ consecutiveFailures: 5 })
  for (let i = 0; i < 4; i++) await rx.execute(async () => new Response(null, { status: 502 }), { key: 'k' })
  assert.equal(rx.stats('k').breaker, 'closed', '4 failures < 5')
  await rx.execute(async () => new Response(null, { status: 500 }), { key: 'k' })
  assert.equal(rx.stats('k').breaker, 'open')
  let ran = false
  const err = await rx.execute(() => { ran = true }, { key: 'k' }).catch((e) => e)
  assert.ok(isRejectedError(err))
  assert.equal(err.reason, 'breaker')
  assert.equal(ran, false)
  const s = rx.stats('k')
  assert.equal(s.rejections.breaker, 1)
  assert.equal(s.rejections.limit + s.rejections.queue, 0, 'never reached the limiter')
  assert.equal(s.inflight, 0)
  assert.equal(s.verdicts.failure, 5)
})

test('breaker: thrown errors and our own timeouts count as failures too', async () => {
  const rx = withBreaker({ consecutiveFailures: 3 })
  const stop = keepAlive()
  await rx.execute(async () => { throw new Error('ECONNRESET') }, { key: 'k' }).catch(() => {})
  await rx.execute(honoursSignal, { key: 'k', timeoutMs: 10 }).catch(() => {})
  stop()
  await sleep(1)
  assert.equal(rx.stats('k').verdicts.timeout, 1)
  assert.equal(rx.stats('k').breaker, 'closed')
  await rx.execute(() => { throw new Error('sync') }, { key: 'k' }).catch(() => {})
  assert.equal(rx.stats('k').breaker, 'open', 'failure, timeout, failure: three in a row')
  assert.equal(rx.stats('k').inflight, 0)
})

test('breaker: a 429 / 503 storm leaves it closed (overload is not a failure)', async () => {
  // The adaptive throttle would refuse most of these calls itself: off, so that all 60 reach
  // the breaker as overloads.
  const rx = withBreaker({ consecutiveFailures: 3, minimumCalls: 5 }, { throttle: false })
  for (let i = 0; i < 60; i++) {
    const status = i % 3 === 0 ? 503 : 429
    await rx.execute(async () => new Response(null, { status }), { key: 'k' })
  }
  const s = rx.stats('k')
  assert.equal(s.breaker, 'closed')
  assert.equal(s.verdicts.overload, 60)
  assert.equal(s.rejections.breaker, 0)
})

test('breaker: 404s leave it closed (answered is not a failure)', async () => {
  const rx = withBreaker({ consecutiveFailures: 3, minimumCalls: 5 })
  for (let i = 0; i < 60; i++) {
    await rx.execute(async () => new Response(null, { status: 404 }), { key: 'k' })
    await rx.execute(async () => { throw Object.assign(new Error('nope'), { statusCode: 400 }) }, { key: 'k' }).catch(() => {})
  }
  const s = rx.stats('k')
  assert.equal(s.breaker, 'closed')
  assert.equal(s.verdicts.answered, 120)
})

test('breaker: open → half-open after openMs → closed after the probes succeed', async () => {
  const rx = withBreaker({ consecutiveFailures: 2, openMs: 50, halfOpenProbes: 2 })
  for (let i = 0; i < 2; i++) await rx.execute(async () => ({ status: 500 }), { key: 'k' })
  assert.equal(rx.stats('k').breaker, 'open')
  await sleep(80)
  // Half-open admits 2 probes and refuses a third while they are out.
  const d = deferred()
  const probes = [rx.execute(() => d.promise, { key: 'k' }), rx.execute(() => d.promise, { key: 'k' })]
  const third = await rx.execute(async () => 1, { key: 'k' }).catch((e) => e)
  assert.ok(isRejectedError(third) && third.reason === 'breaker', 'half-open refuses beyond its probes')
  assert.equal(rx.stats('k').breaker, 'half-open')
  d.resolve({ status: 200 })
  await Promise.all(probes)
  assert.equal(rx.stats('k').breaker, 'closed')
  assert.equal(await rx.execute(async () => 'ok', { key: 'k' }), 'ok')
})

test('bulkhead: the third call on a bulkhead of 2 is rejected with reason bulkhead', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 10, breaker: false, bulkhead: { maxConcurrent: 2 } })
  const d = deferred()
  const a = rx.execute(() => d.promise, { key: 'k' })
  const b = rx.execute(() => d.promise, { key: 'k' })
  let ran = false
  const err = await rx.execute(() => { ran = true }, { key: 'k' }).catch((e) => e)
  assert.ok(isRejectedError(err))
  assert.equal(err.reason, 'bulkhead')
  assert.equal(ran, false)
  assert.equal(rx.stats('k').bulkheadActive, 2)
  assert.equal(rx.stats('k').inflight, 2)
  d.resolve('x')
  await Promise.all([a, b])
  assert.equal(rx.stats('k').bulkheadActive, 0)
  assert.equal(await rx.execute(async () => 'again', { key: 'k' }), 'again', 'places come back')
  // Without a limiter the bulkhead still holds.
  const nl = new Resilix({ limiter: false, breaker: false, bulkhead: { maxConcurrent: 2 } })
  const e = deferred()
  const held = [nl.execute(() => e.promise), nl.execute(() => e.promise)]
  await assert.rejects(nl.execute(async () => 1), (x) => x.reason === 'bulkhead')
  e.resolve()
  await Promise.all(held)
})

test('timeout: a hung call rejects with TimeoutError near its deadline and its signal aborts', async () => {
  const rx = new Resilix({ algorithm: 'fixed', breaker: false })
  const stop = keepAlive()
  let signal
  const t0 = performance.now()
  const err = await rx
    .execute((ctx) => {
      signal = ctx.signal
      return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason)))
    }, { key: 'k', timeoutMs: 100 })
    .catch((e) => e)
  const took = performance.now() - t0
  stop()
  assert.ok(isTimeoutError(err))
  assert.equal(err.queued, false)
  assert.ok(took >= 99 && took < 1500, `took ${took} ms`)
  assert.equal(signal.aborted, true)
  assert.ok(isTimeoutError(signal.reason))
  await sleep(1)
  assert.equal(rx.stats('k').verdicts.timeout, 1)
  assert.equal(rx.stats('k').inflight, 0)
})

test('timeout: a policy-level timeoutMs applies, a per-call one overrides it, false turns it off', async () => {
  const rx = new Resilix({ algorithm: 'fixed', breaker: false, timeoutMs: 30 })
  const stop = keepAlive()
  const e1 = await rx.execute(() => new Promise(() => {}), { key: 'a' }).catch((e) => e)
  assert.ok(isTimeoutError(e1) && e1.timeoutMs === 30)
  const e2 = await rx.execute(() => new Promise(() => {}), { key: 'b', timeoutMs: 10 }).catch((e) => e)
  assert.ok(isTimeoutError(e2) && e2.timeoutMs === 10)
  assert.equal(await rx.execute(async () => { await sleep(60); return 'slow ok' }, { key: 'c', timeoutMs: false }), 'slow ok')
  stop()
})

test("timeout: a successful call's signal is never aborted, so a streamed body stays readable", async () => {
  // The upstream sends headers at once and the body 150 ms later; the deadline is 60 ms.
  // fn returns the Response after the headers: the caller reads the body after the deadline.
  const server = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' })
    res.write('head-')
    setTimeout(() => res.end('tail'), 150)
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const url = `http://127.0.0.1:${server.address().port}/`
  try {
    const rx = new Resilix({ algorithm: 'fixed', breaker: false })
    let signal
    const res = await rx.execute(async (ctx) => {
      signal = ctx.signal
      const r = await fetch(url, { signal: ctx.signal })
      ctx.mark()
      return r
    }, { key: 'k', timeoutMs: 60 })
    assert.equal(res.status, 200)
    assert.equal(await res.text(), 'head-tail')
    assert.equal(signal.aborted, false)
    await sleep(80)
    assert.equal(signal.aborted, false, 'still not aborted well after the deadline')
    assert.equal(rx.stats('k').verdicts.success, 1)
    // The same with a plain ReadableStream body read long after fn returned.
    const res2 = await rx.execute(async (ctx) => {
      signal = ctx.signal
      const body = new ReadableStream({
        async pull(c) {
          await sleep(100)
          c.enqueue(new TextEncoder().encode('late'))
          c.close()
        },
      })
      return new Response(body)
    }, { key: 'k', timeoutMs: 30 })
    assert.equal(await res2.text(), 'late')
    assert.equal(signal.aborted, false)
  } finally {
    server.closeAllConnections()
    server.close()
  }
})

test('timeout: a fn that ignores its signal keeps its slot (stats.inflight) until it settles', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, breaker: false, queue: false })
  const stop = keepAlive()
  const d = deferred()
  const err = await rx.execute(() => d.promise, { key: 'k', timeoutMs: 20 }).catch((e) => e)
  stop()
  assert.ok(isTimeoutError(err))
  assert.equal(rx.stats('k').inflight, 1, 'still load on the upstream')
  await assert.rejects(rx.execute(async () => 1, { key: 'k' }), (e) => e.reason === 'limit')
  d.resolve('too late')
  await sleep(1)
  const s = rx.stats('k')
  assert.equal(s.inflight, 0)
  assert.equal(s.verdicts.timeout, 1, 'settled late: counted as a timeout, not a success')
  assert.equal(s.verdicts.success, 0)
})

test('events: breaker transitions and rejections reach listeners; dispose() stops them', async () => {
  const rx = withBreaker({ consecutiveFailures: 2, openMs: 40, halfOpenProbes: 1 }, { initialLimit: 1, queue: false })
  const breaker = []
  const rejects = []
  const limits = []
  const b = rx.onBreakerStateChange((e) => breaker.push(e))
  const r = rx.onReject((e) => rejects.push(e))
  const l = rx.onLimitChange((e) => limits.push(e))
  for (let i = 0; i < 2; i++) await rx.execute(async () => ({ status: 500 }), { key: 'k' })
  assert.deepEqual(breaker, [{ key: 'k', state: 'open', previous: 'closed' }])
  await rx.execute(async () => 1, { key: 'k' }).catch(() => {})
  assert.deepEqual(rejects, [{ key: 'k', reason: 'breaker', priority: 'normal' }])
  await sleep(60)
  const d = deferred()
  const probe = rx.execute(() => d.promise, { key: 'k' })
  assert.deepEqual(breaker.at(-1), { key: 'k', state: 'half-open', previous: 'open' })
  await rx.execute(async () => 1, { key: 'k' }).catch(() => {})
  assert.deepEqual(rejects.at(-1), { key: 'k', reason: 'breaker', priority: 'normal' })
  d.resolve('ok')
  await probe
  assert.deepEqual(breaker.at(-1), { key: 'k', state: 'closed', previous: 'half-open' })
  assert.deepEqual(limits, [], 'a fixed limit never changes')
  // A limit rejection is reported too.
  const hold = deferred()
  const busy = rx.execute(() => hold.promise, { key: 'k' })
  await rx.execute(async () => 1, { key: 'k' }).catch(() => {})
  assert.deepEqual(rejects.at(-1), { key: 'k', reason: 'limit', priority: 'normal' })
  hold.resolve()
  await busy
  const nb = breaker.length
  const nr = rejects.length
  b.dispose()
  r.dispose()
  l.dispose()
  b.dispose() // idempotent
  for (let i = 0; i < 2; i++) await rx.execute(async () => ({ status: 500 }), { key: 'k' })
  assert.equal(rx.stats('k').breaker, 'open')
  await rx.execute(async () => 1, { key: 'k' }).catch(() => {})
  assert.equal(breaker.length, nb, 'no breaker event after dispose')
  assert.equal(rejects.length, nr, 'no reject event after dispose')
})

test('events: a throwing listener does not break the call or its accounting', async () => {
  const rx = withBreaker({ consecutiveFailures: 1 })
  const seen = []
  const uncaught = []
  const onUncaught = (e) => uncaught.push(e)
  process.prependListener('uncaughtException', onUncaught)
  const origListeners = process.listeners('uncaughtException').filter((f) => f !== onUncaught)
  for (const f of origListeners) process.removeListener('uncaughtException', f)
  try {
    rx.onBreakerStateChange(() => { throw new Error('listener bug') })
    rx.onBreakerStateChange((e) => seen.push(e.state))
    const v = await rx.execute(async () => ({ status: 500 }), { key: 'k' })
    assert.equal(v.status, 500)
    await sleep(1)
  } finally {
    process.removeListener('uncaughtException', onUncaught)
    for (const f of origListeners) process.on('uncaughtException', f)
  }
  assert.deepEqual(seen, ['open'])
  assert.equal(uncaught.length, 1)
  assert.equal(uncaught[0].message, 'listener bug')
  assert.equal(rx.stats('k').inflight, 0)
})
