// resilix/undici as the global dispatcher: Node's built-in fetch (undici 6 inside Node 20 and
// 22, undici 7 inside Node 24) goes through undici 7's composed Agent, against a real local
// upstream. Waits are bounded conditions, not fixed sleeps.
import assert from 'node:assert/strict'
import { after, afterEach, before, test } from 'node:test'
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici'
import { Resilix, isRejectedError, isTimeoutError } from 'resilix'
import { interceptor } from 'resilix/undici'
import { startUpstream, until } from './fixtures/http-upstream.mjs'

let up
const original = getGlobalDispatcher()
before(async () => {
  up = await startUpstream()
})
after(async () => {
  setGlobalDispatcher(original)
  await up.close()
})
let installed = null
afterEach(async () => {
  setGlobalDispatcher(original)
  if (installed !== null) await installed.destroy()
  installed = null
})

/** Every fetch in the process goes through rx from here on. */
function protect(rx, options) {
  installed = new Agent().compose(interceptor(rx, options))
  setGlobalDispatcher(installed)
}
const fixed = (limit, extra = {}) => new Resilix({ algorithm: 'fixed', initialLimit: limit, breaker: false, ...extra })

test('global dispatcher: every fetch is keyed by origin and classified by status; reading the body frees the slot', async () => {
  const rx = fixed(4)
  protect(rx)
  const ok = await fetch(up.url('/ok'))
  assert.equal(await ok.text(), 'ok')
  const busy = await fetch(up.url('/status/503'))
  assert.equal(busy.status, 503, 'a 503 comes back as a response')
  await busy.text()
  const s = rx.stats(up.origin)
  assert.equal(s.inflight, 0)
  assert.equal(s.verdicts.success, 1)
  assert.equal(s.verdicts.overload, 1)
})

test('fetch: a refusal is the cause of fetch\'s TypeError, and the upstream is not called', async () => {
  const rx = fixed(1, { queue: false })
  protect(rx)
  const stream = await fetch(up.url('/sse'))
  const before = up.seen('/ok')
  await assert.rejects(fetch(up.url('/ok')), (err) => {
    assert.ok(err instanceof TypeError)
    assert.ok(isRejectedError(err.cause), String(err.cause))
    assert.equal(err.cause.reason, 'limit')
    return true
  })
  assert.equal(up.seen('/ok'), before)
  await stream.body.cancel()
  await until(() => rx.stats(up.origin).inflight === 0, 5000, 'the stream to free its slot')
})

test('fetch: SSE holds its slot for the whole stream, past timeoutMs; cancelling the reader frees it', async () => {
  const rx = fixed(4)
  protect(rx, { timeoutMs: 400 })
  const res = await fetch(up.url('/sse'))
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  let text = ''
  const t0 = performance.now()
  while (performance.now() - t0 < 1000 || !text.includes('data: 5')) {
    const { value } = await reader.read()
    text += decoder.decode(value)
    assert.equal(rx.stats(up.origin).inflight, 1)
  }
  await reader.cancel()
  await until(() => rx.stats(up.origin).inflight === 0, 5000, 'the cancelled stream to free its slot')
  assert.equal(rx.stats(up.origin).verdicts.success, 1)
  assert.equal(rx.stats(up.origin).verdicts.timeout, 0)
})

test('fetch: an SSE response is marked at its first event (its headers come at once); past timeoutMs with no event the body errors', async () => {
  const rx = fixed(4)
  protect(rx, { timeoutMs: 2000 })
  const res = await fetch(up.url('/sse-first/600'))
  assert.match(await res.text(), /data: 5/)
  const sample = rx.stats(up.origin).lastLatencyMs
  assert.ok(sample >= 550 && sample < 5000, `latency sample ${sample} ms: the time to the first event (600 ms)`)
  const late = await fetch(up.url('/sse-first/5000'), { dispatcher: new Agent().compose(interceptor(rx, { timeoutMs: 300 })) })
  assert.equal(late.status, 200)
  await assert.rejects(late.text(), (err) => isTimeoutError(err) || isTimeoutError(err?.cause))
  await until(() => rx.stats(up.origin).inflight === 0, 5000, 'the slot to be freed')
  assert.equal(rx.stats(up.origin).verdicts.timeout, 1)
})

test('fetch: a body never read frees its slot after bodyTimeoutMs', async () => {
  const rx = fixed(4)
  protect(rx, { bodyTimeoutMs: 1000 })
  const res = await fetch(up.url('/endless'))
  assert.equal(res.status, 200)
  assert.equal(rx.stats(up.origin).inflight, 1)
  await until(() => rx.stats(up.origin).inflight === 0, 5000, 'the unread body to free its slot')
  assert.equal(rx.stats(up.origin).verdicts.success, 1)
  await assert.rejects(res.arrayBuffer())
})

test('fetch: past timeoutMs the cause is a TimeoutError; the slot is freed at once', async () => {
  const rx = fixed(4)
  protect(rx, { timeoutMs: 150 })
  await assert.rejects(fetch(up.url('/slow/5000')), (err) => isTimeoutError(err.cause) && err.cause.timeoutMs === 150)
  assert.equal(rx.stats(up.origin).inflight, 0)
  assert.equal(rx.stats(up.origin).verdicts.timeout, 1)
})

test('fetch: an AbortSignal aborts a request waiting for a permit; it never reaches the upstream', async () => {
  const rx = fixed(1)
  protect(rx)
  const first = await fetch(up.url('/sse'))
  const before = up.seen('/ok')
  const ac = new AbortController()
  const p = fetch(up.url('/ok'), { signal: ac.signal })
  await until(() => rx.stats(up.origin).queued === 1, 2000, 'the second fetch to queue')
  ac.abort()
  await assert.rejects(p, { name: 'AbortError' })
  await until(() => rx.stats(up.origin).queued === 0, 2000, 'the aborted fetch to leave the queue')
  await first.body.cancel()
  await until(() => rx.stats(up.origin).inflight === 0, 5000, 'the stream to free its slot')
  assert.equal(up.seen('/ok'), before)
})

test('fetch: a connection reset is a failure; the slot is freed', async () => {
  const rx = fixed(4)
  protect(rx)
  await assert.rejects(fetch(up.url('/reset')), TypeError)
  assert.equal(rx.stats(up.origin).inflight, 0)
  assert.equal(rx.stats(up.origin).verdicts.failure, 1)
})
