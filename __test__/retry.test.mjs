// Retry through execute() against real local HTTP upstreams (node:http, fetch): 429 with
// Retry-After in seconds and as an HTTP-date, 503, connection resets, a hint beyond the
// deadline, the one deadline across attempts; and what is never retried.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { Resilix, attemptsOf, isRejectedError, isTimeoutError } from '../index.js'
import { sleep, deferred } from './helpers.mjs'

/** A server whose n-th request (1-based) is answered by `answer(n, req, res)`. */
async function upstream(answer) {
  let n = 0
  const server = createServer((req, res) => {
    n++
    answer(n, req, res)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const url = `http://127.0.0.1:${server.address().port}/`
  return {
    url,
    get requests() {
      return n
    },
    close: () => new Promise((r) => server.close(r)),
  }
}

const ok = (res) => res.end('ok')
const status = (res, code, headers = {}) => {
  res.writeHead(code, headers)
  res.end()
}

/** fn for execute: fetch with the call's signal; a Response resolves whatever its status. */
const get = (url) => (ctx) => fetch(url, { signal: ctx.signal })

function retries(rx) {
  const seen = []
  rx.onRetry((e) => seen.push(e))
  return seen
}

test('429 with Retry-After in seconds waits the hint, then succeeds', async () => {
  const up = await upstream((n, req, res) => (n === 1 ? status(res, 429, { 'retry-after': '1' }) : ok(res)))
  const rx = new Resilix({ retry: true })
  const seen = retries(rx)
  try {
    const t = performance.now()
    const res = await rx.execute(get(up.url), { key: 'api', timeoutMs: 5000 })
    const took = performance.now() - t
    assert.equal(res.status, 200)
    assert.equal(up.requests, 2)
    assert.equal(attemptsOf(res), 2)
    assert.equal(seen.length, 1)
    assert.deepEqual({ ...seen[0], delayMs: Math.round(seen[0].delayMs) }, { key: 'api', attempt: 2, delayMs: 1000, reason: 'overload' })
    assert.ok(took >= 990, `waited ${took} ms`)
    assert.equal(rx.stats('api').retries, 1)
    assert.equal(rx.stats('api').verdicts.overload, 1, 'each attempt is a sample')
    assert.equal(rx.stats('api').verdicts.success, 1)
  } finally {
    rx.close()
    await up.close()
  }
})

test('429 with Retry-After as an HTTP-date waits until that date', async () => {
  // An HTTP-date has whole seconds: 2 s ahead is 1–2 s away.
  const up = await upstream((n, req, res) =>
    n === 1 ? status(res, 429, { 'retry-after': new Date(Date.now() + 2000).toUTCString() }) : ok(res),
  )
  const rx = new Resilix({ retry: true })
  const seen = retries(rx)
  try {
    const res = await rx.execute(get(up.url), { key: 'api', timeoutMs: 5000 })
    assert.equal(res.status, 200)
    assert.equal(seen.length, 1)
    assert.ok(seen[0].delayMs > 900 && seen[0].delayMs <= 2000, `delay ${seen[0].delayMs}`)
  } finally {
    rx.close()
    await up.close()
  }
})

test('503 is retried with backoff; a 404 is answered and never retried', async () => {
  const up = await upstream((n, req, res) => {
    if (req.url === '/missing') return status(res, 404)
    return n <= 2 ? status(res, 503) : ok(res)
  })
  const rx = new Resilix({ retry: true })
  const seen = retries(rx)
  try {
    const res = await rx.execute(get(up.url), { key: 'api' })
    assert.equal(res.status, 200)
    assert.equal(attemptsOf(res), 3)
    assert.deepEqual(seen.map((e) => [e.attempt, e.reason]), [[2, 'overload'], [3, 'overload']])
    for (const e of seen) assert.ok(e.delayMs >= 0 && e.delayMs <= 250, `capped at maxDelayMs: ${e.delayMs}`)
    const before = up.requests
    const missing = await rx.execute(get(up.url + 'missing'), { key: 'api' })
    assert.equal(missing.status, 404)
    assert.equal(up.requests, before + 1, 'answered: one attempt')
    assert.equal(attemptsOf(missing), 1)
  } finally {
    rx.close()
    await up.close()
  }
})

test('connection resets are retried; the final error is exactly the last attempt’s', async () => {
  const up = await upstream((n, req, res) => (n <= 2 ? req.socket.destroy() : ok(res)))
  const rx = new Resilix({ retry: true })
  try {
    const res = await rx.execute(get(up.url), { key: 'api' })
    assert.equal(res.status, 200)
    assert.equal(attemptsOf(res), 3)
    // Every attempt reset: the caller gets fetch's own error of the third.
    const always = await upstream((n, req) => req.socket.destroy())
    const errors = []
    const err = await rx
      .execute(async (ctx) => {
        try {
          return await fetch(always.url, { signal: ctx.signal })
        } catch (e) {
          errors.push(e)
          throw e
        }
      }, { key: 'reset' })
      .then(() => assert.fail('resolved'), (e) => e)
    assert.equal(errors.length, 3)
    assert.equal(err, errors[2], 'the last attempt’s error itself')
    assert.equal(attemptsOf(err), 3)
    assert.equal(rx.stats('reset').verdicts.failure, 3)
    await always.close()
  } finally {
    rx.close()
    await up.close()
  }
})

test('a Retry-After hint beyond the deadline ends the call at once with a clear error', async () => {
  const up = await upstream((n, req, res) => status(res, 429, { 'retry-after': '30' }))
  const rx = new Resilix({ retry: true })
  try {
    const t = performance.now()
    const err = await rx.execute(get(up.url), { key: 'api', timeoutMs: 2000 }).then(() => assert.fail('resolved'), (e) => e)
    assert.ok(performance.now() - t < 1000, 'at once, not at the deadline')
    assert.ok(isTimeoutError(err))
    assert.match(err.message, /cannot be retried within its timeoutMs \(2000 ms\): the upstream asked to wait 30000 ms \(Retry-After\)/)
    assert.equal(err.retryAfterMs, 30_000)
    assert.equal(err.cause.status, 429, 'the last attempt’s response is its cause')
    assert.equal(attemptsOf(err), 1)
    assert.equal(up.requests, 1)
    // maxRetryAfterMs caps the hint: 30 s becomes 100 ms, which fits.
    const res = await rx.execute(get(up.url), { key: 'api', timeoutMs: 2000, retry: { maxRetryAfterMs: 100, attempts: 2 } })
    assert.equal(res.status, 429, 'attempts spent: the last attempt’s response')
    assert.equal(attemptsOf(res), 2)
  } finally {
    rx.close()
    await up.close()
  }
})

test('the deadline holds across attempts: no call outlives timeoutMs + 50 ms', async () => {
  // Every answer is a 503 after 60 ms: attempts, backoffs and the last attempt's deadline must
  // all fit in timeoutMs. A reference timer started with each call measures how late this busy
  // machine's event loop runs timers; that lateness is not the call's.
  const up = await upstream((n, req, res) => setTimeout(() => status(res, 503), 60))
  // Every answer is an overload, so the adaptive throttle would refuse most attempts: off, as
  // this is about the deadline (the throttle's own tests are in throttle.test.mjs).
  const rx = new Resilix({ retry: { attempts: 50, baseMs: 20, maxDelayMs: 80 }, throttle: false })
  const TIMEOUT = 400
  try {
    const runs = await Promise.all(
      Array.from({ length: 10 }, async () => {
        const t = performance.now()
        let late = 0
        const ref = new Promise((r) => setTimeout(() => r((late = performance.now() - t - TIMEOUT)), TIMEOUT))
        const out = await rx.execute(get(up.url), { key: 'api', timeoutMs: TIMEOUT }).then((v) => v, (e) => e)
        const took = performance.now() - t
        await ref
        return { took, late, out }
      }),
    )
    for (const { took, late, out } of runs) {
      assert.ok(took <= TIMEOUT + 50 + Math.max(0, late), `took ${took.toFixed(0)} ms (timers ${late.toFixed(0)} ms late)`)
      // Either the last attempt's 503 (no retry could finish in time) or our TimeoutError.
      assert.ok(out.status === 503 || isTimeoutError(out), String(out))
      assert.ok(attemptsOf(out) >= 2, `several attempts: ${attemptsOf(out)}`)
    }
  } finally {
    rx.close()
    await up.close()
  }
})

test('attemptTimeoutMs bounds each attempt; a timed-out attempt is retried within the deadline', async () => {
  const up = await upstream((n, req, res) => (n === 1 ? setTimeout(() => ok(res), 1000) : ok(res)))
  const rx = new Resilix({ retry: { attemptTimeoutMs: 100 } })
  const seen = retries(rx)
  try {
    const res = await rx.execute(get(up.url), { key: 'api', timeoutMs: 3000 })
    assert.equal(res.status, 200)
    assert.deepEqual(seen.map((e) => e.reason), ['timeout'])
    assert.equal(rx.stats('api').verdicts.timeout, 1)
  } finally {
    rx.close()
    await up.close()
  }
})

test('never retried: our own refusal at once, an aborted caller, an open breaker', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, queue: false, breaker: { consecutiveFailures: 2 }, retry: { attempts: 5 } })
  try {
    // The one slot is held: the limiter refuses at once, fn never runs, nothing is retried.
    const hold = deferred()
    const held = rx.execute(() => hold.promise, { key: 'a' })
    let ran = 0
    const refused = await rx.execute(() => ran++, { key: 'a' }).then(() => assert.fail('resolved'), (e) => e)
    assert.ok(isRejectedError(refused) && refused.reason === 'limit')
    assert.equal(ran, 0)
    hold.resolve(1)
    await held
    // The caller aborts while its attempt runs: that attempt is the last.
    const ac = new AbortController()
    let calls = 0
    const aborted = await rx
      .execute((ctx) => {
        calls++
        setTimeout(() => ac.abort(new Error('caller gave up')), 10)
        return new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason)))
      }, { key: 'b', signal: ac.signal })
      .then(() => assert.fail('resolved'), (e) => e)
    assert.equal(aborted.message, 'caller gave up')
    assert.equal(calls, 1)
    // Two failures open the breaker: the retries end with the second failure itself.
    const errors = []
    const failing = async () => {
      const e = new Error(`failure ${errors.length + 1}`)
      errors.push(e)
      throw e
    }
    const broke = await rx.execute(failing, { key: 'c' }).then(() => assert.fail('resolved'), (e) => e)
    assert.equal(errors.length, 2)
    assert.equal(broke, errors[1])
    assert.equal(attemptsOf(broke), 2)
    assert.equal(rx.stats('c').breaker, 'open')
  } finally {
    rx.close()
  }
})

test('retryOn narrows what is retried; retry: false turns it off per call', async () => {
  // Counts attempts through 503s: the adaptive throttle, which would refuse some, is off.
  const rx = new Resilix({ retry: { retryOn: ['overload'] }, throttle: false })
  try {
    let n = 0
    const fail = async () => {
      n++
      throw new Error('5xx-like failure')
    }
    await assert.rejects(rx.execute(fail, { key: 'k' }))
    assert.equal(n, 1, 'failure is not in retryOn')
    n = 0
    const busy = async () => {
      n++
      throw Object.assign(new Error('busy'), { status: 503 })
    }
    await assert.rejects(rx.execute(busy, { key: 'k' }))
    assert.equal(n, 3)
    n = 0
    await assert.rejects(rx.execute(busy, { key: 'k', retry: false }))
    assert.equal(n, 1)
    n = 0
    await assert.rejects(rx.execute(fail, { key: 'k', retry: { retryOn: ['failure'], attempts: 2 } }))
    assert.equal(n, 2)
  } finally {
    rx.close()
  }
})

test('the retry budget refuses retries beyond its ratio and counts the refusals', async () => {
  // No ratio, one retry per 10 s window: the first failing call retries, the next do not.
  const rx = new Resilix({ retry: true, retryBudget: { ratio: 0, minPerSecond: 0.1, windowMs: 10_000 }, breaker: false })
  try {
    let n = 0
    const fail = async () => {
      n++
      throw new Error('down')
    }
    for (let i = 0; i < 3; i++) await assert.rejects(rx.execute(fail, { key: 'k' }), /down/)
    // 3 + 1 + 1: the first call's second retry and the next calls' first are refused.
    assert.equal(n, 4)
    const s = rx.stats('k')
    assert.equal(s.retries, 1)
    assert.equal(s.retryBudgetRefusals, 3)
  } finally {
    rx.close()
  }
})

test('an exhausted budget returns the last error at once, without waiting', async () => {
  const rx = new Resilix({ retry: { baseMs: 200, maxDelayMs: 200, backoff: 'decorrelated' }, retryBudget: { ratio: 0, minPerSecond: 0 }, breaker: false })
  try {
    const t = performance.now()
    await assert.rejects(rx.execute(async () => Promise.reject(new Error('x')), { key: 'k' }), /x/)
    assert.ok(performance.now() - t < 150, 'no backoff was waited')
    assert.equal(rx.stats('k').retryBudgetRefusals, 1)
  } finally {
    rx.close()
  }
})

test('a listener may close the instance from onRetry: the call rejects, nothing leaks', async () => {
  const rx = new Resilix({ retry: true })
  rx.onRetry(() => rx.close())
  const err = await rx.execute(async () => Promise.reject(new Error('x')), { key: 'k' }).then(() => assert.fail('resolved'), (e) => e)
  assert.equal(err.code, 'ERR_RESILIX_CLOSED')
  assert.equal(rx._backoffs.size, 0)
  await sleep(5)
})
