// Per-call events on node:diagnostics_channel: one `resilix:call:settle` per call that ran (or
// permit), one `resilix:call:reject` per refusal, one `resilix:call:leave` per call that left the
// queue; the times they carry; calls admitted while nobody subscribes are not timed. Retries,
// quota waits and the quota store's state changes on their own channels.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import dc from 'node:diagnostics_channel'
import http from 'node:http'
import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Agent } from 'undici'
import { Resilix } from '../index.js'
import { interceptor } from '../undici.js'
import { redisQuotaStore } from '../redis.js'
import { startPolicyUpstream, failingStore } from './fixtures/policy-upstream.mjs'
import { sleep, deferred, fixed, keepAlive } from './helpers.mjs'

/** Records this test's instance's messages on the three channels; `stop()` unsubscribes. */
function record(rx) {
  const seen = { settle: [], reject: [], leave: [] }
  const subs = Object.keys(seen).map((kind) => {
    const name = `resilix:call:${kind}`
    const f = (m) => m.rx === rx && seen[kind].push(m)
    dc.subscribe(name, f)
    return () => dc.unsubscribe(name, f)
  })
  seen.stop = () => subs.forEach((u) => u())
  return seen
}

test('a call admitted while nobody subscribes is not timed: subscribing later publishes nothing for it', async () => {
  const rx = fixed()
  const hold = deferred()
  const untimed = rx.execute(() => hold.promise, { key: 'k' })
  const seen = record(rx)
  const timed = rx.execute(() => 1, { key: 'k' })
  hold.resolve()
  await Promise.all([untimed, timed])
  seen.stop()
  assert.equal(seen.settle.length, 1, 'only the call admitted after the subscription')
  await rx.execute(() => 1, { key: 'k' })
  assert.equal(seen.settle.length, 1, 'nothing after unsubscribing')
})

test('a settle message per call that ran: key, verdict, latency to mark(), duration, wait, the instance', async () => {
  const rx = fixed(1, { queue: { initialFactor: 5, maxFactor: 5 } })
  const seen = record(rx)
  const first = rx.execute(async (ctx) => {
    await sleep(40)
    ctx.mark()
    await sleep(40)
    return { status: 404 }
  }, { key: 'api' })
  // Waits for the first call's slot: its wait is about the first call's 80 ms.
  const second = rx.execute(() => Promise.reject(new Error('boom')), { key: 'api', timeoutMs: 5000 })
  await first
  await assert.rejects(second, /boom/)
  seen.stop()
  assert.equal(seen.settle.length, 2)
  const [a, b] = seen.settle
  assert.equal(a.rx, rx)
  assert.deepEqual([a.key, a.verdict, a.stuck, b.key, b.verdict], ['api', 'answered', false, 'api', 'failure'])
  assert.ok(a.latencyMs >= 35 && a.latencyMs < a.durationMs, `latency to mark ${a.latencyMs}, duration ${a.durationMs}`)
  assert.ok(a.durationMs >= 75 && a.durationMs < 2000, `duration ${a.durationMs}`)
  assert.equal(a.waitMs, 0, 'ran at once')
  assert.ok(b.waitMs >= 70 && b.waitMs < 2000, `queued behind the first: ${b.waitMs}`)
  assert.equal(b.latencyMs, b.durationMs, 'no mark: the latency is the whole call')
})

test('permits, stuck calls and cancelled ones are settle messages too', async () => {
  const rx = fixed(2)
  const seen = record(rx)
  const permit = await rx.acquire({ key: 'p' })
  await sleep(20)
  permit.mark()
  permit.release('overload')
  // A fn that ignores its deadline is released as stuck 1 s after its caller's answer.
  const stop = keepAlive()
  await assert.rejects(rx.execute(() => new Promise(() => {}), { key: 's', timeoutMs: 20 }), { name: 'TimeoutError' })
  const ac = new AbortController()
  const cancelled = rx.execute(() => sleep(50), { key: 'c', signal: ac.signal })
  ac.abort()
  await assert.rejects(cancelled)
  for (let i = 0; i < 100 && !seen.settle.some((m) => m.stuck); i++) await sleep(50)
  stop()
  await sleep(80) // the cancelled fn settles
  seen.stop()
  const byKey = Object.fromEntries(seen.settle.map((m) => [m.key, m]))
  assert.equal(byKey.p.verdict, 'overload')
  assert.ok(byKey.p.latencyMs >= 15 && byKey.p.latencyMs <= byKey.p.durationMs)
  assert.deepEqual([byKey.s.verdict, byKey.s.stuck], ['timeout', true])
  assert.ok(byKey.s.durationMs >= 900, `released about 1 s after the deadline: ${byKey.s.durationMs}`)
  assert.equal(byKey.c.verdict, 'cancelled')
  assert.equal(seen.settle.length, 3)
})

test('refusals are reject messages; calls leaving the queue are leave messages, with their reason', async () => {
  const noQueue = fixed(1, { queue: false })
  const a = record(noQueue)
  const hold = deferred()
  const running = noQueue.execute(() => hold.promise, { key: 'k' })
  await assert.rejects(noQueue.execute(() => 1, { key: 'k' }), { name: 'RejectedError' })
  hold.resolve()
  await running
  a.stop()
  assert.deepEqual(a.reject.map((m) => [m.rx === noQueue, m.key, m.reason]), [[true, 'k', 'limit']])

  const rx = fixed(1, { queue: { initialFactor: 5, maxFactor: 5 } })
  const seen = record(rx)
  const busy = deferred()
  const holder = rx.execute(() => busy.promise, { key: 'q' })
  const stop = keepAlive()
  const late = rx.execute(() => 1, { key: 'q', timeoutMs: 30 })
  const ac = new AbortController()
  const aborted = rx.execute(() => 1, { key: 'q', signal: ac.signal })
  const closed = rx.execute(() => 1, { key: 'q' })
  await assert.rejects(late, { name: 'TimeoutError' })
  ac.abort()
  await assert.rejects(aborted)
  rx.close()
  await assert.rejects(closed, { code: 'ERR_RESILIX_CLOSED' })
  stop()
  busy.resolve()
  await holder
  seen.stop()
  assert.deepEqual(seen.leave.map((m) => [m.key, m.reason]), [['q', 'timeout'], ['q', 'abort'], ['q', 'close']])
  assert.ok(seen.leave[0].waitMs >= 25 && seen.leave[0].waitMs < 2000, `waited ${seen.leave[0].waitMs}`)
  assert.equal(seen.settle.length, 1, 'only the holder ran')
})

test('requests through the undici interceptor are settle messages, marked at the headers', async () => {
  const server = http.createServer((req, res) => {
    res.writeHead(503)
    res.flushHeaders()
    setTimeout(() => res.end('late body'), 60)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const origin = `http://127.0.0.1:${server.address().port}`
  const rx = new Resilix()
  const seen = record(rx)
  const agent = new Agent().compose(interceptor(rx))
  try {
    const res = await fetch(origin + '/', { dispatcher: agent })
    assert.equal(await res.text(), 'late body')
  } finally {
    seen.stop()
    await agent.close()
    server.close()
  }
  assert.equal(seen.settle.length, 1)
  const [m] = seen.settle
  assert.deepEqual([m.key, m.verdict], [origin, 'overload'])
  assert.ok(m.durationMs - m.latencyMs >= 40, `the slot is held for the body, marked at the headers: ${m.latencyMs} / ${m.durationMs}`)
})

// In a child process: node:test counts any uncaught exception against the running test.
test('a subscriber that throws does not disturb the call or its accounting', () => {
  const script = `
    const dc = require('node:diagnostics_channel')
    const { Resilix } = require(${JSON.stringify(fileURLToPath(new URL('../index.js', import.meta.url)))})
    const uncaught = []
    process.on('uncaughtException', (e) => uncaught.push(e.message))
    dc.subscribe('resilix:call:settle', () => { throw new Error('subscriber bug') })
    const rx = new Resilix()
    rx.execute(() => 7, { key: 'k' }).then((v) => setTimeout(() => {
      const s = rx.stats('k')
      console.log(JSON.stringify({ v, inflight: s.inflight, success: s.verdicts.success, uncaught }))
    }, 20))
  `
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { encoding: 'utf8' }))
  assert.deepEqual(out, { v: 7, inflight: 0, success: 1, uncaught: ['subscriber bug'] })
})

/** This instance's messages on `names` (channel names), in order as [name, message]; `stop()` unsubscribes. */
function recordAll(rx, names) {
  const seen = []
  const subs = names.map((name) => {
    const f = (m) => m.rx === rx && seen.push([name, m])
    dc.subscribe(name, f)
    return () => dc.unsubscribe(name, f)
  })
  seen.stop = () => subs.forEach((u) => u())
  return seen
}

test('retries on resilix:call:retry, with the attempt, its delay and the verdict retried', async () => {
  const up = await startPolicyUpstream()
  const rx = new Resilix({ breaker: false, throttle: false, retry: { attempts: 3, baseMs: 0, maxDelayMs: 0 } })
  const seen = recordAll(rx, ['resilix:call:retry'])
  try {
    const res = await up.get(rx, 'up', '/overloaded')
    assert.equal(res.status, 429)
    assert.deepEqual(seen.map(([, m]) => [m.key, m.attempt, m.delayMs, m.reason]), [['up', 2, 0, 'overload'], ['up', 3, 0, 'overload']])
    seen.stop()
    await up.get(rx, 'up', '/overloaded')
    assert.equal(seen.length, 2, 'nothing after unsubscribing')
  } finally {
    seen.stop()
    rx.close()
    await up.close()
  }
})

test('a quota wait on resilix:quota:wait and resilix:quota:resume (granted, or left), a store fallback on resilix:quota:store', async () => {
  const up = await startPolicyUpstream()
  // One request a second: the second call waits for the budget to come back, the third leaves.
  const rx = new Resilix({ quota: { requests: 1, windowMs: 1000 }, quotaStore: redisQuotaStore(failingStore(), { processes: 1 }) })
  const seen = recordAll(rx, ['resilix:quota:wait', 'resilix:quota:resume', 'resilix:quota:store'])
  try {
    await up.get(rx, 'llm', '/ok')
    await up.get(rx, 'llm', '/ok', { timeoutMs: 10_000 })
    const ac = new AbortController()
    const left = up.get(rx, 'llm', '/ok', { timeoutMs: 10_000, signal: ac.signal })
    await sleep(20)
    ac.abort()
    await assert.rejects(left, { name: 'AbortError' })
    const names = seen.map(([name, m]) => [name, m.key, m.state ?? m.outcome ?? null])
    // The first call waits for the store's first answer, which fails: the key falls back.
    assert.deepEqual(names, [
      ['resilix:quota:wait', 'llm', null],
      ['resilix:quota:store', 'llm', 'fallback'],
      ['resilix:quota:resume', 'llm', 'granted'],
      ['resilix:quota:wait', 'llm', null],
      ['resilix:quota:resume', 'llm', 'granted'],
      ['resilix:quota:wait', 'llm', null],
      ['resilix:quota:resume', 'llm', 'left'],
    ])
    assert.equal(seen[1][1].error, 'store down')
    const granted = seen[4][1]
    assert.ok(granted.waitMs > 100 && granted.waitMs < 5000, `waited for the budget to come back: ${granted.waitMs} ms`)
  } finally {
    seen.stop()
    rx.close()
    await up.close()
  }
})
