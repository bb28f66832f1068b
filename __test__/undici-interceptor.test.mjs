// resilix/undici against a real local upstream, through undici's own request() on a composed
// Agent or Pool. Timing assertions use generous bounds and wait for conditions (until), so a
// busy machine slows them down without failing them.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { after, before, test } from 'node:test'
import { Agent, Pool, request, upgrade } from 'undici'
import { Resilix, RejectedError, isRejectedError, isTimeoutError } from 'resilix'
import { interceptor } from 'resilix/undici'
import { startUpstream, until } from './fixtures/http-upstream.mjs'

let up
before(async () => {
  up = await startUpstream()
})
after(() => up.close())

const fixed = (limit, extra = {}) => new Resilix({ algorithm: 'fixed', initialLimit: limit, breaker: false, ...extra })
const through = (rx, options) => new Agent().compose(interceptor(rx, options))
const stats = (rx) => rx.stats(up.origin)

test('a 200: keyed by origin, marked, settled as success when the body is read', async () => {
  const rx = fixed(4)
  const agent = through(rx)
  const res = await request(up.url('/ok'), { dispatcher: agent })
  assert.equal(res.statusCode, 200)
  assert.equal(await res.body.text(), 'ok')
  assert.deepEqual(rx.keys(), [up.origin])
  assert.equal(stats(rx).inflight, 0)
  assert.equal(stats(rx).verdicts.success, 1)
  await agent.close()
})

test('statuses: 429 and 503 overload, 404 answered, 500 failure; each response reaches the caller as it is', async () => {
  const rx = fixed(4)
  const agent = through(rx)
  for (const code of [429, 503, 404, 500]) {
    const res = await request(up.url(`/status/${code}`), { dispatcher: agent })
    assert.equal(res.statusCode, code)
    assert.equal(await res.body.text(), `status ${code}`)
  }
  const v = stats(rx).verdicts
  assert.deepEqual([v.overload, v.answered, v.failure, v.success], [2, 1, 1, 0])
  assert.equal(stats(rx).inflight, 0)
  await agent.close()
})

test('latency is marked at the response headers; the slot is held until the body ends', async () => {
  const rx = fixed(4)
  const agent = through(rx)
  const t0 = performance.now()
  const res = await request(up.url('/late-body/800'), { dispatcher: agent })
  assert.equal(stats(rx).inflight, 1)
  assert.equal(await res.body.text(), 'late')
  const total = performance.now() - t0
  assert.ok(total >= 750, `the body took ${total} ms`)
  assert.equal(stats(rx).inflight, 0)
  // The sample ends at the headers (a few ms), not at the end of the body (800 ms).
  assert.ok(stats(rx).lastLatencyMs < 500, `latency sample ${stats(rx).lastLatencyMs} ms`)
  await agent.close()
})

test('a connection reset before the response: the caller gets the error, verdict failure, slot freed', async () => {
  const rx = fixed(4)
  const agent = through(rx)
  await assert.rejects(request(up.url('/reset'), { dispatcher: agent }), (err) => {
    assert.ok(!isRejectedError(err) && !isTimeoutError(err))
    assert.match(err.code ?? err.message, /SOCKET|ECONNRESET|closed/i)
    return true
  })
  assert.equal(stats(rx).inflight, 0)
  assert.equal(stats(rx).verdicts.failure, 1)
  await agent.close()
})

test('a connection reset mid-body: the body errors, verdict failure, slot freed', async () => {
  const rx = fixed(4)
  const agent = through(rx)
  const res = await request(up.url('/reset-mid-body'), { dispatcher: agent })
  assert.equal(res.statusCode, 200)
  await assert.rejects(res.body.text())
  await until(() => stats(rx).inflight === 0, 5000, 'the slot to be freed')
  assert.equal(stats(rx).verdicts.failure, 1)
  assert.equal(stats(rx).verdicts.success, 0)
  await agent.close()
})

test('an upstream slower than timeoutMs: TimeoutError at the deadline, verdict timeout, slot freed, request aborted', async () => {
  const rx = fixed(4)
  const agent = through(rx, { timeoutMs: 150 })
  const closedBefore = up.closed
  const t0 = performance.now()
  await assert.rejects(request(up.url('/slow/5000'), { dispatcher: agent }), (err) => {
    assert.ok(isTimeoutError(err), String(err))
    assert.equal(err.timeoutMs, 150)
    assert.equal(err.key, up.origin)
    return true
  })
  assert.ok(performance.now() - t0 < 3000, 'answered at the deadline, not when the upstream answers')
  assert.equal(stats(rx).inflight, 0)
  assert.equal(stats(rx).verdicts.timeout, 1)
  await until(() => up.closed > closedBefore, 5000, 'the upstream connection to be closed')
  await agent.close()
})

test('SSE: the slot is held for the whole stream, past timeoutMs; freed with its status verdict when the reader stops', async () => {
  const rx = fixed(4)
  const agent = through(rx, { timeoutMs: 400 })
  const res = await request(up.url('/sse'), { dispatcher: agent })
  let events = 0
  const t0 = performance.now()
  for await (const chunk of res.body) {
    events += String(chunk).split('\n\n').length - 1
    if (performance.now() - t0 > 1000 && events >= 5) break // well past the 400 ms deadline
    assert.equal(stats(rx).inflight, 1)
  }
  assert.ok(events >= 5)
  await until(() => stats(rx).inflight === 0, 5000, 'the slot to be freed when the reader stops')
  assert.equal(stats(rx).verdicts.success, 1)
  assert.equal(stats(rx).verdicts.timeout, 0)
  assert.ok(stats(rx).lastLatencyMs < 400, `latency sample ${stats(rx).lastLatencyMs} ms: the time to the headers`)
  await agent.close()
})

test('an event stream (SSE, NDJSON) is marked at its first body chunk by default: the sample is the time to the first event, not to the headers', async () => {
  for (const route of ['/sse-first/600', '/ndjson-first/600']) {
    const rx = fixed(4)
    const agent = through(rx)
    const res = await request(up.url(route), { dispatcher: agent })
    assert.equal(stats(rx).inflight, 1)
    const text = await res.body.text()
    assert.match(text, /5/, 'the whole stream reached the caller')
    const sample = stats(rx).lastLatencyMs
    assert.ok(sample >= 550 && sample < 5000, `${route}: latency sample ${sample} ms, not the time to the first event (600 ms)`)
    assert.equal(stats(rx).verdicts.success, 1)
    assert.equal(stats(rx).inflight, 0)
    await agent.close()
  }
})

test("mark: 'headers' keeps the sample at the headers for any response; 'firstChunk' moves it to the first chunk for any response", async () => {
  const rx = fixed(4)
  const atHeaders = through(rx, { key: 'headers', mark: 'headers' })
  await (await request(up.url('/sse-first/600'), { dispatcher: atHeaders })).body.text()
  assert.ok(rx.stats('headers').lastLatencyMs < 400, `marked at the headers: ${rx.stats('headers').lastLatencyMs} ms`)
  const atChunk = through(rx, { key: 'chunk', mark: 'firstChunk' })
  await (await request(up.url('/late-body/600'), { dispatcher: atChunk })).body.text()
  assert.ok(rx.stats('chunk').lastLatencyMs >= 550, `marked at the first chunk of a text/plain body: ${rx.stats('chunk').lastLatencyMs} ms`)
  // The default for a body that is not an event stream stays at the headers.
  const byDefault = through(rx, { key: 'default-plain' })
  await (await request(up.url('/late-body/600'), { dispatcher: byDefault })).body.text()
  assert.ok(rx.stats('default-plain').lastLatencyMs < 400, `text/plain by default: ${rx.stats('default-plain').lastLatencyMs} ms`)
  await Promise.all([atHeaders.close(), atChunk.close(), byDefault.close()])
})

test('mark as a function of the response picks per response; a bad answer fails that request with a TypeError naming it, slot freed', async () => {
  const rx = fixed(4)
  const seen = []
  const byPath = through(rx, {
    mark: (response) => {
      seen.push([response.statusCode, response.headers['content-type']])
      return response.headers['content-type'] === 'text/plain' ? 'firstChunk' : 'headers'
    },
  })
  await (await request(up.url('/late-body/600'), { dispatcher: byPath })).body.text()
  assert.ok(stats(rx).lastLatencyMs >= 550, `marked at the first chunk: ${stats(rx).lastLatencyMs} ms`)
  await (await request(up.url('/sse-first/600'), { dispatcher: byPath })).body.text()
  assert.ok(stats(rx).lastLatencyMs < 400, `marked at the headers: ${stats(rx).lastLatencyMs} ms`)
  assert.deepEqual(seen, [[200, 'text/plain'], [200, 'text/event-stream; charset=utf-8']])

  const odd = through(rx, { mark: () => 'body' })
  await assert.rejects(request(up.url('/ok'), { dispatcher: odd }), (err) => err instanceof TypeError && /mark function returned the string "body"; expected 'headers' or 'firstChunk'/.test(err.message))
  const boom = through(rx, {
    mark: () => {
      throw new Error('mark bug')
    },
  })
  await assert.rejects(request(up.url('/ok'), { dispatcher: boom }), /mark bug/)
  assert.equal(stats(rx).inflight, 0)
  await Promise.all([byPath.close(), odd.close(), boom.close()])
})

test('marking at the first chunk, timeoutMs runs to it: headers at once and no event in time is a timeout, the body errors, slot freed', async () => {
  const rx = fixed(4)
  const agent = through(rx, { timeoutMs: 300 })
  const t0 = performance.now()
  const res = await request(up.url('/sse-first/3000'), { dispatcher: agent })
  assert.equal(res.statusCode, 200, 'the headers reach the caller at once')
  await assert.rejects(res.body.text(), (err) => {
    assert.ok(isTimeoutError(err), String(err))
    assert.equal(err.timeoutMs, 300)
    assert.match(err.message, /no body chunk within 300 ms/)
    return true
  })
  assert.ok(performance.now() - t0 < 2500, 'answered at the deadline, not at the first event')
  assert.equal(stats(rx).inflight, 0)
  assert.equal(stats(rx).verdicts.timeout, 1)
  // Marked at the headers, the same stream is past its deadline once they came.
  const atHeaders = through(rx, { timeoutMs: 300, mark: 'headers' })
  const text = await (await request(up.url('/sse-first/600'), { dispatcher: atHeaders })).body.text()
  assert.match(text, /data: 5/)
  assert.equal(stats(rx).verdicts.success, 1)
  await Promise.all([agent.close(), atHeaders.close()])
})

test('a large body never read: aborted bodyTimeoutMs after its last chunk, slot freed, status verdict (nobody read it)', async () => {
  const rx = fixed(4)
  const agent = through(rx, { bodyTimeoutMs: 1000 })
  const closedBefore = up.closed
  const res = await request(up.url('/endless'), { dispatcher: agent })
  assert.equal(res.statusCode, 200)
  assert.equal(stats(rx).inflight, 1)
  await until(() => stats(rx).inflight === 0, 5000, 'the unread body to free its slot')
  assert.equal(stats(rx).verdicts.success, 1, 'the upstream answered; the reader was idle')
  assert.equal(stats(rx).verdicts.timeout, 0)
  await until(() => up.closed > closedBefore, 5000, 'the upstream connection to be closed')
  await assert.rejects(res.body.text(), (err) => {
    assert.ok(isTimeoutError(err))
    assert.match(err.message, /bodyTimeoutMs/)
    return true
  })
  await agent.close()
})

test('a body that stops arriving while read: aborted after bodyTimeoutMs with verdict timeout', async () => {
  const rx = fixed(4)
  const agent = through(rx, { bodyTimeoutMs: 200 })
  const res = await request(up.url('/late-body/5000'), { dispatcher: agent })
  await assert.rejects(res.body.text(), (err) => isTimeoutError(err))
  assert.equal(stats(rx).inflight, 0)
  assert.equal(stats(rx).verdicts.timeout, 1)
  await agent.close()
})

test('a small body never read frees its slot at once: it completes in the buffers', async () => {
  const rx = fixed(4)
  const agent = through(rx)
  const res = await request(up.url('/ok'), { dispatcher: agent })
  await until(() => stats(rx).inflight === 0, 2000, 'the completed body to free the slot')
  assert.equal(stats(rx).verdicts.success, 1)
  res.body.resume()
  await agent.close()
})

test('an upgrade frees its slot when the connection is handed over (101 is a success)', async () => {
  const rx = fixed(4)
  const agent = through(rx)
  const { socket, headers } = await upgrade(up.url('/echo'), { dispatcher: agent, protocol: 'echo' })
  assert.equal(headers.upgrade, 'echo')
  assert.equal(stats(rx).inflight, 0)
  assert.equal(stats(rx).verdicts.success, 1)
  socket.write('ping')
  const [echo] = await once(socket, 'data')
  assert.equal(String(echo), 'ping')
  socket.destroy()
  await agent.close()
})

test('Pool of 4 connections, 10 requests whose bodies are never read: every request answered, nothing stuck', async () => {
  const rx = fixed(20)
  const pool = new Pool(up.origin, { connections: 4 }).compose(interceptor(rx, { key: 'pool', timeoutMs: 5000, bodyTimeoutMs: 200 }))
  const results = await Promise.allSettled(Array.from({ length: 10 }, () => pool.request({ path: '/endless', method: 'GET' })))
  // The first four hold the connections until their unread bodies pass bodyTimeoutMs; then the
  // other six get connections and their headers, well inside the 5 s deadline.
  assert.deepEqual(results.map((r) => r.status), Array(10).fill('fulfilled'))
  await until(() => rx.stats('pool').inflight === 0, 5000, 'every unread body to free its slot')
  assert.equal(rx.stats('pool').verdicts.success, 10)
  for (const r of results) r.value.body.on('error', () => {}).resume()
  await pool.close()
})

test('requests stuck in the dispatcher queue past their deadline: TimeoutError at once, slot freed, never sent', async () => {
  const rx = fixed(20)
  const pool = new Pool(up.origin, { connections: 1 }).compose(interceptor(rx, { key: 'q', timeoutMs: 500 }))
  const sse = await pool.request({ path: '/sse', method: 'GET' }) // holds the only connection
  const before = up.seen('/ok')
  await assert.rejects(pool.request({ path: '/ok', method: 'GET' }), (err) => isTimeoutError(err) && err.queued === false)
  assert.equal(rx.stats('q').inflight, 1, 'only the stream holds a slot')
  assert.equal(rx.stats('q').verdicts.timeout, 1)
  sse.body.destroy()
  await until(() => rx.stats('q').inflight === 0, 5000, 'the stream to free its slot')
  // The connection is free now; the timed-out request was stopped before it was sent.
  const after = await pool.request({ path: '/ok', method: 'GET' })
  await after.body.text()
  assert.equal(up.seen('/ok'), before + 1)
  await pool.close()
})

test('caller abort while waiting for a permit: rejects at once with the reason, leaves the queue, never sent', async () => {
  const rx = fixed(1)
  const agent = through(rx)
  const first = await request(up.url('/sse'), { dispatcher: agent })
  const ac = new AbortController()
  const before = up.seen('/ok')
  const p = request(up.url('/ok'), { dispatcher: agent, signal: ac.signal })
  await until(() => stats(rx).queued === 1, 2000, 'the second request to queue')
  ac.abort(new Error('changed my mind'))
  await assert.rejects(p, /changed my mind/)
  assert.equal(stats(rx).queued, 0)
  first.body.destroy()
  await until(() => stats(rx).inflight === 0, 5000, 'the stream to free its slot')
  assert.equal(up.seen('/ok'), before)
  await agent.close()
})

test('caller abort before the headers: cancelled (no observation), slot freed, connection closed', async () => {
  const rx = fixed(4)
  const agent = through(rx)
  const ac = new AbortController()
  const closedBefore = up.closed
  const p = request(up.url('/slow/5000'), { dispatcher: agent, signal: ac.signal })
  await until(() => up.seen('/slow/5000') > 0, 5000, 'the request to reach the upstream')
  ac.abort(new Error('stop'))
  await assert.rejects(p, /stop/)
  assert.equal(stats(rx).inflight, 0)
  const v = stats(rx).verdicts
  assert.deepEqual([v.success, v.failure, v.timeout], [0, 0, 0], 'no observation')
  await until(() => up.closed > closedBefore, 5000, 'the connection to close')
  await agent.close()
})

test('refusals reach the caller as the same RejectedError: limit, breaker', async () => {
  const rx = fixed(1, { queue: false })
  const agent = through(rx)
  const held = await request(up.url('/sse'), { dispatcher: agent })
  const before = up.seen('/ok')
  await assert.rejects(request(up.url('/ok'), { dispatcher: agent }), (err) => {
    assert.ok(err instanceof RejectedError)
    assert.equal(err.reason, 'limit')
    assert.equal(err.key, up.origin)
    return true
  })
  assert.equal(up.seen('/ok'), before, 'the upstream was not called')
  held.body.destroy()
  await until(() => stats(rx).inflight === 0, 5000, 'the stream to free its slot')

  const rb = new Resilix({ breaker: { consecutiveFailures: 2 } })
  const agent2 = through(rb)
  for (let i = 0; i < 2; i++) await (await request(up.url('/status/500'), { dispatcher: agent2 })).body.text()
  await assert.rejects(request(up.url('/status/500'), { dispatcher: agent2 }), (err) => isRejectedError(err) && err.reason === 'breaker')
  await Promise.all([agent.close(), agent2.close()])
})

test('a dispatcher destroyed by its owner is no observation: requests in flight and waiting get undici\'s error, no failure counted', async () => {
  const rx = fixed(1)
  const agent = through(rx)
  const first = await request(up.url('/sse'), { dispatcher: agent })
  first.body.on('error', () => {})
  const waiting = request(up.url('/ok'), { dispatcher: agent })
  await until(() => stats(rx).queued === 1, 2000, 'the second request to queue')
  await agent.destroy()
  await assert.rejects(waiting, (err) => err.code === 'UND_ERR_DESTROYED')
  await until(() => stats(rx).inflight === 0, 5000, 'both slots to be freed')
  assert.equal(stats(rx).verdicts.failure, 0)
  assert.equal(stats(rx).verdicts.rejected, 2)
})

test('key: a string or a function overrides the origin; a Pool without one is refused with a clear error', async () => {
  const rx = fixed(4)
  const byPath = through(rx, { key: (opts) => `route:${opts.path.split('/')[1]}` })
  await (await request(up.url('/status/200'), { dispatcher: byPath })).body.text()
  assert.equal(rx.stats('route:status').verdicts.success, 1)

  const bad = through(rx, { key: () => 42 })
  await assert.rejects(request(up.url('/ok'), { dispatcher: bad }), /key function returned number; expected a string/)

  const pool = new Pool(up.origin).compose(interceptor(rx))
  await assert.rejects(pool.request({ path: '/ok', method: 'GET' }), /no origin to key it by[\s\S]*key: 'payments'/)
  const named = new Pool(up.origin).compose(interceptor(rx, { key: 'payments' }))
  await (await named.request({ path: '/ok', method: 'GET' })).body.text()
  assert.equal(rx.stats('payments').verdicts.success, 1)
  assert.equal(rx.stats('payments').inflight, 0)
  await Promise.all([byPath.close(), bad.close(), pool.close(), named.close()])
})

test('classify overrides the default; a throwing classify rejects the request with its error, slot freed', async () => {
  const rx = fixed(4)
  const agent = through(rx, { classify: (o) => (o.ok && o.value.statusCode === 404 ? 'success' : undefined) })
  await (await request(up.url('/status/404'), { dispatcher: agent })).body.text()
  assert.equal(stats(rx).verdicts.success, 1)

  const boom = through(rx, {
    classify: () => {
      throw new Error('classify bug')
    },
  })
  await assert.rejects(request(up.url('/ok'), { dispatcher: boom }), /classify bug/)
  assert.equal(stats(rx).inflight, 0)
  const odd = through(rx, { classify: () => 'great' })
  await assert.rejects(request(up.url('/ok'), { dispatcher: odd }), /classify returned the string "great"/)
  assert.equal(stats(rx).inflight, 0)
  await Promise.all([agent.close(), boom.close(), odd.close()])
})

test('timeoutMs defaults to the instance timeoutMs', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 4, timeoutMs: 150 })
  const agent = through(rx)
  await assert.rejects(request(up.url('/slow/5000'), { dispatcher: agent }), (err) => isTimeoutError(err) && err.timeoutMs === 150)
  await agent.close()
})

test('interceptor options are checked when it is built, naming the problem', () => {
  const rx = fixed(4)
  assert.throws(() => interceptor({}), /expects a Resilix instance as rx, got object/)
  assert.throws(() => interceptor(rx, { tiemoutMs: 5 }), (e) => e instanceof TypeError && /unknown interceptor option tiemoutMs/.test(e.message))
  assert.throws(() => interceptor(rx, 'fast'), /options must be an object/)
  assert.throws(() => interceptor(rx, { key: 5 }), /option key must be a string or a function/)
  assert.throws(() => interceptor(rx, { classify: 'x' }), /option classify must be a function/)
  assert.throws(() => interceptor(rx, { timeoutMs: -1 }), RangeError)
  assert.throws(() => interceptor(rx, { bodyTimeoutMs: '5s' }), /bodyTimeoutMs must be a number of milliseconds or false/)
  assert.throws(() => interceptor(rx, { mark: 'body' }), (e) => e instanceof TypeError && /option mark must be 'headers', 'firstChunk' or a function/.test(e.message))
  assert.throws(() => interceptor(rx)(null), /wraps a dispatch function/)
  const dispatch = interceptor(rx)(() => true)
  assert.throws(() => dispatch({ origin: up.origin, path: '/', method: 'GET' }, { onConnect() {} }), /Dispatcher\.compose\(\) of undici 7/)
})

test('neither resilix nor resilix/undici loads undici', () => {
  const code = `
    require('resilix'); require('resilix/undici')
    const loaded = Object.keys(require.cache).filter((p) => /[\\\\/]node_modules[\\\\/]undici[\\\\/]/.test(p))
    console.log(JSON.stringify(loaded))`
  const r = spawnSync(process.execPath, ['-e', code], { cwd: new URL('..', import.meta.url), encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), [])
})
