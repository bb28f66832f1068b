import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError } from '../index.js'
import { fixed, sleep, honoursSignal, keepAlive } from './helpers.mjs'

const verdicts = (rx, key) => rx.stats(key).verdicts

// The verdict table (docs/design.md), one row per case: what fn does → the verdict the policies saw.
const rows = [
  ['resolves with no status', async () => 'ok', 'success'],
  ['resolves with a plain number', () => 7, 'success'],
  ['fetch Response 200', async () => new Response('x', { status: 200 }), 'success'],
  ['status 101', async () => ({ status: 101 }), 'success'],
  ['status 304', async () => ({ status: 304 }), 'success'],
  ['fetch Response 429', async () => new Response(null, { status: 429 }), 'overload'],
  ['undici statusCode 503', async () => ({ statusCode: 503 }), 'overload'],
  ['status 404', async () => new Response(null, { status: 404 }), 'answered'],
  ['undici statusCode 400', async () => ({ statusCode: 400 }), 'answered'],
  ['status 500', async () => new Response(null, { status: 500 }), 'failure'],
  ['status 502', async () => ({ statusCode: 502 }), 'failure'],
  ['throws an Error', async () => { throw new Error('boom') }, 'failure'],
  ['throws synchronously', () => { throw new Error('sync') }, 'failure'],
  ['throws an error with err.status 429', async () => { throw Object.assign(new Error('x'), { status: 429 }) }, 'overload'],
  ['throws an error with err.statusCode 404', async () => { throw Object.assign(new Error('x'), { statusCode: 404 }) }, 'answered'],
  ['throws an error with err.response.status 503', async () => { throw Object.assign(new Error('x'), { response: { status: 503 } }) }, 'overload'],
  ['throws an error with err.response.status 500', async () => { throw Object.assign(new Error('x'), { response: { status: 500 } }) }, 'failure'],
  ['throws a string', async () => { throw 'text' }, 'failure'],
  // A status is an integer 100–599, or a string of three digits that is one.
  ["status '429' (a string)", async () => ({ status: '429' }), 'overload'],
  ["throws with statusCode '404' (a string)", async () => { throw Object.assign(new Error('x'), { statusCode: '404' }) }, 'answered'],
  ["status '500 ' (not three digits: no status)", async () => ({ status: '500 ' }), 'success'],
  ['throws a function carrying status 503', async () => { throw Object.assign(() => {}, { status: 503 }) }, 'overload'],
  ['status NaN (no status)', async () => ({ status: NaN }), 'success'],
  ['status 999 (no status)', async () => ({ status: 999 }), 'success'],
  ['status 503.5 (no status)', async () => ({ status: 503.5 }), 'success'],
  ['throws with status 999 (no status)', async () => { throw Object.assign(new Error('x'), { status: 999 }) }, 'failure'],
  ['status NaN, statusCode 503: the first valid one', async () => ({ status: NaN, statusCode: 503 }), 'overload'],
  ["status 'ok' (a body field), no other", async () => ({ status: 'ok' }), 'success'],
]

for (const [name, fn, expected] of rows) {
  test(`verdict: ${name} → ${expected}`, async () => {
    const rx = fixed()
    await rx.execute(fn, { key: 'k' }).catch(() => {})
    const v = verdicts(rx, 'k')
    for (const [verdict, count] of Object.entries(v)) {
      assert.equal(count, verdict === expected ? 1 : 0, `${verdict} count`)
    }
  })
}

test('verdict: our deadline passing → timeout (fn honours the signal)', async () => {
  // A deadline timer that fires late on a busy machine is a stall of this process, not of the
  // upstream: that settle is `cancelled`, no observation. Such a run is tried again, fresh.
  for (let run = 1; ; run++) {
    const rx = fixed()
    const stop = keepAlive() // deadlines are unref'd timers: alone they do not keep the process alive
    const err = await rx.execute(honoursSignal, { key: 'k', timeoutMs: 30 }).catch((e) => e)
    stop()
    assert.ok(isTimeoutError(err))
    await sleep(5)
    const v = verdicts(rx, 'k')
    assert.equal(v.failure, 0)
    assert.equal(v.timeout + v.cancelled, 1)
    if (v.timeout === 1 || run === 5) {
      assert.equal(v.timeout, 1, 'five runs in a row were each stalled')
      break
    }
  }
})

test('verdict: refused by our own policy → rejected, no observation', async () => {
  const rx = fixed(1, { queue: false })
  let release
  const held = rx.execute(() => new Promise((r) => (release = r)), { key: 'k' })
  const err = await rx.execute(async () => 1, { key: 'k' }).catch((e) => e)
  assert.ok(isRejectedError(err))
  assert.equal(err.reason, 'limit')
  release()
  await held
  const v = verdicts(rx, 'k')
  assert.equal(v.success, 1)
  assert.equal(v.failure + v.overload + v.answered + v.timeout, 0)
  assert.equal(rx.stats('k').rejections.limit, 1)
})

test("verdict: the caller's own abort → no observation (cancelled)", async () => {
  const rx = fixed()
  const ac = new AbortController()
  const p = rx.execute(honoursSignal, { key: 'k', signal: ac.signal })
  ac.abort(new Error('user went away'))
  const err = await p.catch((e) => e)
  assert.equal(err.message, 'user went away')
  await sleep(1)
  const v = verdicts(rx, 'k')
  assert.equal(v.cancelled, 1)
  assert.equal(v.success + v.failure + v.timeout, 0)
  assert.equal(rx.stats('k').inflight, 0)
})

test('classify overrides the default and falls back on undefined', async () => {
  const rx = fixed(10, { classify: (o) => (o.ok && o.value === 'slow-down' ? 'overload' : undefined) })
  await rx.execute(async () => 'slow-down', { key: 'k' })
  await rx.execute(async () => ({ status: 500 }), { key: 'k' })
  assert.equal(verdicts(rx, 'k').overload, 1)
  assert.equal(verdicts(rx, 'k').failure, 1)
})

test('classify returning an unknown verdict rejects the call clearly and keeps accounting exact', async () => {
  const rx = fixed(10, { classify: () => 'great' })
  await assert.rejects(rx.execute(async () => 1, { key: 'k' }), /classify returned the string "great"/)
  assert.equal(rx.stats('k').inflight, 0)
})

test('latency: start → mark() when mark is called, else start → settle', async () => {
  const rx = fixed()
  await rx.execute(async (ctx) => {
    await sleep(10)
    ctx.mark()
    await sleep(120)
  }, { key: 'marked' })
  await rx.execute(async () => {
    await sleep(130)
  }, { key: 'unmarked' })
  const marked = rx.stats('marked').lastLatencyMs
  const unmarked = rx.stats('unmarked').lastLatencyMs
  assert.ok(marked >= 9 && marked < 100, `marked latency ${marked}`)
  assert.ok(unmarked >= 125, `unmarked latency ${unmarked}`)
})

test('only the first mark() counts', async () => {
  const rx = fixed()
  await rx.execute(async (ctx) => {
    ctx.mark()
    await sleep(80)
    ctx.mark()
  }, { key: 'k' })
  assert.ok(rx.stats('k').lastLatencyMs < 60)
})

test('values and errors pass through unchanged', async () => {
  const rx = fixed()
  const obj = { a: 1 }
  assert.equal(await rx.execute(async () => obj), obj)
  assert.equal(await rx.execute(() => obj), obj, 'non-promise return')
  assert.equal(await rx.execute(() => ({ then: (r) => r(5) })), 5, 'thenable')
  const e = new Error('mine')
  assert.equal(await rx.execute(async () => { throw e }).catch((x) => x), e)
  assert.equal(await rx.execute(() => { throw e }).catch((x) => x), e, 'sync throw')
  assert.equal(await rx.execute(async () => { throw 'str' }).catch((x) => x), 'str')
  const u = await rx.execute(async () => { throw undefined }).then(() => 'resolved', (x) => ['rejected', x])
  assert.deepEqual(u, ['rejected', undefined])
  assert.equal(rx.stats('default').inflight, 0)
})

test('execute always returns a promise, even for bad input', async () => {
  const rx = fixed()
  const p = rx.execute('not a function')
  assert.ok(p instanceof Promise)
  await assert.rejects(p, TypeError)
  await assert.rejects(rx.execute(() => 1, { key: 42 }), /key must be a string/)
  await assert.rejects(rx.execute(() => 1, { timeoutMs: -1 }), RangeError)
  await assert.rejects(rx.execute(() => 1, { signal: {} }), /AbortSignal/)
  await assert.rejects(rx.execute(() => 1, 'k'), /options must be an object/)
})

test('an already aborted signal rejects before fn runs', async () => {
  const rx = fixed()
  let ran = false
  const err = await rx.execute(() => { ran = true }, { signal: AbortSignal.abort(new Error('early')) }).catch((e) => e)
  assert.equal(err.message, 'early')
  assert.equal(ran, false)
})

test('ctx has key, signal and mark; signal is the caller signal when no deadline', async () => {
  const rx = fixed()
  const ac = new AbortController()
  await rx.execute((ctx) => {
    assert.equal(ctx.key, 'api')
    assert.equal(ctx.signal, ac.signal)
    assert.equal(typeof ctx.mark, 'function')
  }, { key: 'api', signal: ac.signal })
  await rx.execute((ctx) => {
    assert.ok(ctx.signal instanceof AbortSignal)
    assert.equal(ctx.signal.aborted, false)
  })
})

test('acquire / release: the low-level permit', async () => {
  const rx = fixed(1, { queue: false })
  const p = await rx.acquire('k')
  assert.equal(rx.stats('k').inflight, 1)
  await assert.rejects(rx.acquire('k'), (e) => e instanceof RejectedError && e.reason === 'limit')
  p.mark()
  p.release('answered')
  assert.equal(p.released, true)
  assert.equal(rx.stats('k').inflight, 0)
  assert.equal(rx.stats('k').verdicts.answered, 1)
  assert.throws(() => p.release(), /already released/)
  const q = await rx.acquire('k')
  assert.throws(() => q.release('nope'), TypeError)
  assert.equal(rx.stats('k').inflight, 1, 'a bad verdict changes nothing')
  q.release()
  assert.equal(rx.stats('k').inflight, 0)
})

test('errors are branded and carry key and reason', async () => {
  const rx = fixed(1, { queue: false })
  const p = await rx.acquire('k')
  const err = await rx.execute(() => 1, { key: 'k' }).catch((e) => e)
  assert.ok(err instanceof RejectedError && err instanceof Error)
  assert.equal(err.key, 'k')
  assert.match(err.message, /"k".*concurrency limit/)
  assert.ok(!isTimeoutError(err))
  p.release()
  const stop = keepAlive()
  const t = await rx.execute(() => new Promise(() => {}), { key: 't', timeoutMs: 20 }).catch((e) => e)
  stop()
  assert.ok(t instanceof TimeoutError && isTimeoutError(t) && !isRejectedError(t))
  assert.equal(t.timeoutMs, 20)
})

test('works with a default instance and no options', async () => {
  const rx = new Resilix()
  assert.equal(await rx.execute(async (ctx) => ctx.key), 'default')
  const s = rx.stats('default')
  assert.equal(s.algorithm, 'vegas')
  assert.equal(s.breaker, 'closed')
  assert.equal(s.limit, 20)
})
