// resilix/undici against a real local HTTP server, with undici loaded the way the README tells
// each runtime's users to: under Bun the specifier 'undici' is Bun's built-in module (its Agent
// has no compose), so real undici is imported as 'undici/index.js'; under Bun and Deno the
// global fetch ignores `dispatcher`, so requests go through undici's own fetch.
import assert from 'node:assert/strict'
import { Resilix, RejectedError, isRejectedError, isTimeoutError } from 'resilix'
import { interceptor } from 'resilix/undici'
import { startUpstream } from '../fixtures/http-upstream.mjs'
import { check, runtime } from './harness.mjs'

const undici = runtime === 'bun' ? await import('undici/index.js') : await import('undici')
const { Agent } = undici
// Node's global fetch is undici's and honours `dispatcher`; Bun's and Deno's do not.
const fetch = runtime === 'node' ? globalThis.fetch : undici.fetch

const fixed = (limit, extra = {}) => new Resilix({ algorithm: 'fixed', initialLimit: limit, breaker: false, ...extra })

async function withUpstream(fn) {
  const up = await startUpstream()
  const agents = []
  const through = (rx, options) => {
    const agent = new Agent().compose(interceptor(rx, options))
    agents.push(agent)
    return agent
  }
  try {
    await fn(up, through)
  } finally {
    await Promise.all(agents.map((a) => a.close()))
    await up.close()
  }
}

check('interceptor: fetches are keyed by origin, classified by status, and free their slot when the body is read', () =>
  withUpstream(async (up, through) => {
    const rx = fixed(4)
    const dispatcher = through(rx)
    for (let i = 0; i < 20; i++) {
      const res = await fetch(up.url('/ok'), { dispatcher })
      assert.equal(await res.text(), 'ok')
    }
    for (const code of [503, 404, 500]) {
      const res = await fetch(up.url(`/status/${code}`), { dispatcher })
      assert.equal(res.status, code)
      await res.text()
    }
    assert.deepEqual(rx.keys(), [up.origin])
    const s = rx.stats(up.origin)
    assert.deepEqual([s.inflight, s.verdicts.success, s.verdicts.overload, s.verdicts.answered, s.verdicts.failure], [0, 20, 1, 1, 1])
  }))

check('interceptor: 50 concurrent fetches over a limit of 5 are all answered, never more than 5 at the upstream', () =>
  withUpstream(async (up, through) => {
    const rx = fixed(5, { queue: { initialFactor: 20, maxFactor: 21 } })
    const dispatcher = through(rx)
    let most = 0
    const watch = setInterval(() => (most = Math.max(most, rx.stats(up.origin)?.inflight ?? 0)), 1)
    const bodies = await Promise.all(Array.from({ length: 50 }, () => fetch(up.url('/slow/5'), { dispatcher }).then((r) => r.text())))
    clearInterval(watch)
    assert.deepEqual(new Set(bodies), new Set(['slow']))
    assert.ok(most <= 5, `${most} in flight`)
    assert.deepEqual([rx.stats(up.origin).inflight, rx.stats(up.origin).verdicts.success], [0, 50])
  }))

check('interceptor: a refusal reaches fetch as the cause of its TypeError, and the upstream is not called', () =>
  withUpstream(async (up, through) => {
    const rx = fixed(1, { queue: false })
    const dispatcher = through(rx)
    const held = await fetch(up.url('/late-body/200'), { dispatcher })
    await assert.rejects(fetch(up.url('/ok'), { dispatcher }), (e) => e instanceof TypeError && isRejectedError(e.cause) && e.cause instanceof RejectedError && e.cause.reason === 'limit')
    assert.equal(up.seen('/ok'), 0)
    assert.equal(await held.text(), 'late')
    assert.equal(rx.stats(up.origin).inflight, 0)
  }))

check("interceptor: timeoutMs aborts a request whose headers are late; fetch's TypeError has the TimeoutError as cause", () =>
  withUpstream(async (up, through) => {
    const rx = fixed(2)
    const dispatcher = through(rx, { timeoutMs: 50 })
    await assert.rejects(fetch(up.url('/slow/2000'), { dispatcher }), (e) => e instanceof TypeError && isTimeoutError(e.cause) && e.cause.timeoutMs === 50)
    const s = rx.stats(up.origin)
    assert.deepEqual([s.inflight, s.verdicts.timeout], [0, 1])
  }))

check('interceptor: an SSE response is marked at its first event, not at its headers that came at once', () =>
  withUpstream(async (up, through) => {
    const rx = fixed(2)
    const res = await fetch(up.url('/sse-first/600'), { dispatcher: through(rx) })
    assert.match(await res.text(), /data: 5/)
    const s = rx.stats(up.origin)
    assert.ok(s.lastLatencyMs >= 550 && s.lastLatencyMs < 5000, `latency sample ${s.lastLatencyMs} ms: the time to the first event (600 ms)`)
    assert.deepEqual([s.inflight, s.verdicts.success], [0, 1])
  }))

check('interceptor: a fetch POST with a JSON body answered 503 is retried with the same body and answers 200', () =>
  withUpstream(async (up, through) => {
    const rx = new Resilix({ retry: true })
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    const res = await fetch(up.url('/first/503/json'), { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: through(rx, { retryMethods: ['POST'] }) })
    assert.equal(res.status, 200)
    assert.equal(await res.text(), body)
    assert.equal(up.seen('/first/503/json'), 2)
    assert.deepEqual([rx.stats(up.origin).retries, rx.stats(up.origin).retryBodyRefusals], [1, 0])
    rx.close()
  }))

if (runtime === 'bun') {
  check("Bun: the specifier 'undici' is Bun's built-in, whose Agent has no compose (why Bun users import 'undici/index.js')", async () => {
    const builtin = await import('undici')
    assert.equal(typeof builtin.Agent, 'function')
    assert.equal(typeof builtin.Agent.prototype.compose, 'undefined')
    assert.notEqual(builtin.Agent, Agent)
    assert.equal(typeof Agent.prototype.compose, 'function')
  })
}

if (runtime !== 'node') {
  check(`${runtime === 'bun' ? 'Bun' : 'Deno'}: the global fetch ignores dispatcher (why the README uses undici's fetch here)`, () =>
    withUpstream(async (up, through) => {
      const rx = fixed(2)
      const res = await globalThis.fetch(up.url('/ok'), { dispatcher: through(rx) })
      assert.equal(await res.text(), 'ok')
      assert.equal(rx.stats(up.origin), undefined, 'the request bypassed the interceptor')
    }))
}
