// Retry through the undici interceptor, against real local upstreams: idempotent methods only,
// never a body that cannot be sent twice, Retry-After, connection resets, the one deadline, and
// composed with undici's own retry interceptor in either order without retrying twice.
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { Readable } from 'node:stream'
import { test } from 'node:test'
import { Agent, interceptors, request } from 'undici'
import { Resilix, isRejectedError, isTimeoutError } from 'resilix'
import { interceptor } from 'resilix/undici'

/** A server whose n-th request (1-based) is answered by `answer(n, req, res)`; bodies are read. */
async function upstream(answer) {
  let n = 0
  const bodies = []
  const server = createServer(async (req, res) => {
    const i = ++n
    let body = ''
    for await (const c of req) body += c
    bodies.push(body)
    answer(i, req, res)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${server.address().port}/`,
    bodies,
    get requests() {
      return n
    },
    close: () => new Promise((r) => server.close(r)),
  }
}

const status = (res, code, headers = {}) => {
  res.writeHead(code, headers)
  res.end(`status ${code}`)
}
const ok = (res) => res.end('ok')

async function withAgent(rx, options, fn, ...more) {
  const agent = new Agent().compose(interceptor(rx, options), ...more)
  try {
    return await fn(agent)
  } finally {
    await agent.close()
    rx.close()
  }
}

test('a GET answered 503 then 200 is retried: the caller sees only the 200', async () => {
  const up = await upstream((n, req, res) => (n === 1 ? status(res, 503) : ok(res)))
  const rx = new Resilix({ retry: true })
  const seen = []
  rx.onRetry((e) => seen.push(e))
  await withAgent(rx, undefined, async (agent) => {
    const res = await request(up.url, { dispatcher: agent })
    assert.equal(res.statusCode, 200)
    assert.equal(await res.body.text(), 'ok')
    assert.equal(up.requests, 2)
    assert.deepEqual(seen.map((e) => [e.attempt, e.reason]), [[2, 'overload']])
    const s = rx.stats(new URL(up.url).origin)
    assert.deepEqual([s.inflight, s.verdicts.overload, s.verdicts.success, s.retries], [0, 1, 1, 1])
  })
  await up.close()
})

test('429 with Retry-After (seconds, then an HTTP-date) waits the hint', async () => {
  const up = await upstream((n, req, res) => {
    if (n === 1) return status(res, 429, { 'retry-after': '1' })
    if (n === 2) return status(res, 429, { 'retry-after': new Date(Date.now() + 2000).toUTCString() })
    ok(res)
  })
  const rx = new Resilix({ retry: true })
  const seen = []
  rx.onRetry((e) => seen.push(e.delayMs))
  await withAgent(rx, { timeoutMs: 8000 }, async (agent) => {
    const t = performance.now()
    const res = await request(up.url, { dispatcher: agent })
    assert.equal(res.statusCode, 200)
    await res.body.text()
    assert.equal(Math.round(seen[0]), 1000)
    assert.ok(seen[1] > 900 && seen[1] <= 2000, `HTTP-date hint ${seen[1]}`)
    assert.ok(performance.now() - t >= 1900)
  })
  await up.close()
})

test('a hint beyond the deadline ends the request at once with a clear TimeoutError', async () => {
  const up = await upstream((n, req, res) => status(res, 503, { 'retry-after': '60' }))
  const rx = new Resilix({ retry: true })
  await withAgent(rx, { timeoutMs: 1500 }, async (agent) => {
    const t = performance.now()
    await assert.rejects(request(up.url, { dispatcher: agent }), (e) => {
      assert.ok(isTimeoutError(e))
      assert.match(e.message, /cannot be retried within its timeoutMs \(1500 ms\): the upstream asked to wait 60000 ms/)
      return true
    })
    assert.ok(performance.now() - t < 1000)
    assert.equal(up.requests, 1)
    assert.equal(rx.stats(new URL(up.url).origin).inflight, 0)
  })
  await up.close()
})

test('connection resets before the response are retried', async () => {
  const up = await upstream((n, req, res) => (n <= 2 ? req.socket.destroy() : ok(res)))
  const rx = new Resilix({ retry: true })
  await withAgent(rx, undefined, async (agent) => {
    const res = await request(up.url, { dispatcher: agent })
    assert.equal(await res.body.text(), 'ok')
    assert.equal(up.requests, 3)
    const s = rx.stats(new URL(up.url).origin)
    assert.deepEqual([s.inflight, s.verdicts.failure, s.verdicts.success], [0, 2, 1])
  })
  await up.close()
})

test('a non-idempotent POST is not retried; retryMethods can name it', async () => {
  const up = await upstream((n, req, res) => status(res, 503))
  const rx = new Resilix({ retry: true })
  await withAgent(rx, undefined, async (agent) => {
    const res = await request(up.url, { dispatcher: agent, method: 'POST', body: 'order=1' })
    assert.equal(res.statusCode, 503)
    await res.body.text()
    assert.equal(up.requests, 1, 'POST: one attempt')
    // PUT is idempotent: retried, its body sent again each time.
    const put = await request(up.url, { dispatcher: agent, method: 'PUT', body: 'x=1' })
    assert.equal(put.statusCode, 503)
    await put.body.text()
    assert.equal(up.requests, 4)
    assert.deepEqual(up.bodies.slice(1), ['x=1', 'x=1', 'x=1'])
  })
  const rx2 = new Resilix()
  await withAgent(rx2, { retry: { attempts: 2 }, retryMethods: ['POST'] }, async (agent) => {
    const res = await request(up.url, { dispatcher: agent, method: 'POST', body: 'order=2' })
    await res.body.text()
    assert.equal(up.requests, 6, 'named: retried')
  })
  await up.close()
})

test('a request whose body is a stream is never retried (it was consumed by the first attempt)', async () => {
  const up = await upstream((n, req, res) => status(res, 503))
  const rx = new Resilix({ retry: true })
  await withAgent(rx, { retryMethods: ['PUT'] }, async (agent) => {
    const res = await request(up.url, { dispatcher: agent, method: 'PUT', body: Readable.from(['a', 'b']) })
    assert.equal(res.statusCode, 503)
    await res.body.text()
    assert.equal(up.requests, 1)
    assert.deepEqual(up.bodies, ['ab'])
  })
  await up.close()
})

test('the deadline holds across attempts and backoffs', async () => {
  const up = await upstream((n, req, res) => setTimeout(() => status(res, 503), 50))
  // About the deadline: after five 503s the throttle may refuse a retry (ADR 1000), a
  // RejectedError here, depending on how many attempts a busy machine fits in 400 ms.
  const rx = new Resilix({ retry: { attempts: 100, baseMs: 20, maxDelayMs: 60 }, throttle: false })
  await withAgent(rx, { timeoutMs: 400 }, async (agent) => {
    const t = performance.now()
    let late = 0
    const ref = new Promise((r) => setTimeout(() => r((late = performance.now() - t - 400)), 400))
    const out = await request(up.url, { dispatcher: agent }).then(
      async (res) => {
        await res.body.text()
        return res.statusCode
      },
      (e) => e,
    )
    const took = performance.now() - t
    await ref
    assert.ok(took <= 450 + Math.max(0, late), `took ${took.toFixed(0)} ms`)
    assert.ok(out === 503 || isTimeoutError(out), String(out))
    assert.ok(up.requests >= 3, `attempts ${up.requests}`)
  })
  await up.close()
})

test('the caller aborting during the backoff ends the request; close() during it too', async () => {
  const up = await upstream((n, req, res) => status(res, 503))
  const rx = new Resilix({ retry: { baseMs: 400, maxDelayMs: 400, backoff: 'decorrelated' } })
  const ac = new AbortController()
  rx.onRetry(() => setTimeout(() => ac.abort(new Error('gave up')), 20))
  await withAgent(rx, undefined, async (agent) => {
    await assert.rejects(request(up.url, { dispatcher: agent, signal: ac.signal }), /gave up|aborted/)
    await new Promise((r) => setTimeout(r, 500))
    assert.equal(up.requests, 1)
    assert.equal(rx._backoffs.size, 0)
  })
  const rx2 = new Resilix({ retry: { baseMs: 400, maxDelayMs: 400, backoff: 'decorrelated' } })
  rx2.onRetry(() => setTimeout(() => rx2.close(), 20))
  const agent = new Agent().compose(interceptor(rx2))
  await assert.rejects(request(up.url, { dispatcher: agent }), (e) => e.code === 'ERR_RESILIX_CLOSED')
  assert.equal(rx2._backoffs.size, 0)
  await agent.close()
  await up.close()
})

test("composed with undici's retry interceptor, in either order, only one layer retries", async () => {
  const up = await upstream((n, req, res) => status(res, 503))
  const undiciRetry = () => interceptors.retry({ maxRetries: 4, minTimeout: 10, maxTimeout: 20, throwOnError: false })
  // resilix outermost (compose applies the last interceptor outermost): ours retries (3
  // attempts), undici's inside is told not to.
  const rx = new Resilix({ retry: true })
  let agent = new Agent().compose(undiciRetry(), interceptor(rx))
  let res = await request(up.url, { dispatcher: agent })
  assert.equal(res.statusCode, 503)
  await res.body.text()
  assert.equal(up.requests, 3, 'resilix outermost: its 3 attempts, not 3 × 5')
  assert.equal(rx.stats(new URL(up.url).origin).retries, 2)
  await agent.close()
  // undici's outermost: it owns retrying; each of its attempts is one attempt through resilix.
  const rx2 = new Resilix({ retry: true })
  agent = new Agent().compose(interceptor(rx2), undiciRetry())
  res = await request(up.url, { dispatcher: agent })
  assert.equal(res.statusCode, 503)
  await res.body.text()
  assert.equal(up.requests, 3 + 5, "undici's outermost: its 5 attempts, not 5 × 3")
  const s = rx2.stats(new URL(up.url).origin)
  assert.deepEqual([s.retries, s.verdicts.overload, s.inflight], [0, 5, 0])
  await agent.close()
  rx.close()
  rx2.close()
  await up.close()
})

test('an attempt whose failure opens our own breaker is not retried: the request ends with that response', async () => {
  const up = await upstream((n, req, res) => status(res, 500))
  const rx = new Resilix({ retry: { attempts: 5, baseMs: 0, maxDelayMs: 1 }, breaker: { consecutiveFailures: 2 } })
  const retries = []
  const sub = rx.onRetry((e) => retries.push(e.attempt))
  try {
    await withAgent(rx, undefined, async (agent) => {
      // The second failure opens the breaker: decided at its headers as the breaker will read
      // it, so no third attempt is announced or waited for, and the caller reads the 500, as
      // execute's caller gets the attempt's own outcome.
      const res = await request(up.url, { dispatcher: agent })
      assert.equal(res.statusCode, 500)
      await res.body.text()
      assert.equal(up.requests, 2)
      assert.deepEqual(retries, [2])
      assert.equal(rx.stats(new URL(up.url).origin).breaker, 'open')
      // An open breaker ends the retries before any wait: refused at once, nothing sent.
      await assert.rejects(request(up.url, { dispatcher: agent }), (e) => isRejectedError(e))
      assert.equal(up.requests, 2)
      assert.equal(rx.stats(new URL(up.url).origin).inflight, 0)
    })
  } finally {
    sub.dispose()
    await up.close()
  }
})
