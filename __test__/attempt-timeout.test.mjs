// An attempt with its own deadline (retry.attemptTimeoutMs) is judged as a call with that
// deadline: the queue refuses one that could not run within it, and its timeouts teach the
// limit what a timed-out call's do (ADR 0905).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { Resilix, attemptsOf } from '../index.js'
import { sleep, deferred } from './helpers.mjs'
import { startChildServer } from './fixtures/child-server.mjs'

const server = fileURLToPath(new URL('./fixtures/backlog-upstream-server.cjs', import.meta.url))

// A fixed limit whose slot time the queue knows from one 300 ms call: a waiter would run no
// sooner than ~300 ms from now, past a 200 ms deadline, so the queue refuses it at once.
async function fullKey(limit) {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: limit, breaker: false })
  await rx.execute(() => sleep(300), { key: 'k' })
  return rx
}

test('an attempt that could not run within its attemptTimeoutMs is refused by the queue at once, as a call with that timeoutMs is', async () => {
  const rx = await fullKey(1)
  const held = deferred()
  const holder = rx.execute(() => held.promise, { key: 'k' })
  let ran = 0
  const fn = async () => {
    ran++
    return 'ok'
  }
  try {
    const cases = [
      ['timeoutMs: 200', { timeoutMs: 200 }],
      ['timeoutMs: 10000, attemptTimeoutMs: 200', { timeoutMs: 10_000, retry: { attempts: 3, attemptTimeoutMs: 200 } }],
      ['attemptTimeoutMs: 200, no timeoutMs', { retry: { attempts: 3, attemptTimeoutMs: 200 } }],
    ]
    for (const [name, opts] of cases) {
      const err = await rx.execute(fn, { key: 'k', ...opts }).then(
        () => assert.fail(`${name}: the call ran`),
        (e) => e,
      )
      assert.equal(err.name, 'RejectedError', `${name}: ${err.message}`)
      assert.equal(err.reason, 'queue', `${name}: ${err.message}`)
      assert.match(err.message, /could not leave the queue before its deadline \(the call's, or its retry attempt's when sooner\)/)
    }
    assert.equal(ran, 0)
  } finally {
    held.resolve('done')
    await holder
    rx.close()
  }
})

test('a retry that could not run within its attemptTimeoutMs is not queued: the call ends with the attempt before', async () => {
  const rx = await fullKey(2)
  const held = [deferred(), deferred()]
  const holder = rx.execute(() => held[0].promise, { key: 'k' })
  const boom = new Error('boom')
  let attempts = 0
  const call = rx.execute(
    async () => {
      attempts++
      await sleep(50)
      throw boom
    },
    { key: 'k', timeoutMs: 10_000, retry: { attempts: 3, attemptTimeoutMs: 200 } },
  )
  // Queued behind the first attempt: it takes that slot back before the retry asks for one.
  const second = rx.execute(() => held[1].promise, { key: 'k' })
  try {
    const err = await call.then(
      () => assert.fail('the call succeeded'),
      (e) => e,
    )
    assert.equal(err, boom, `ended with ${err?.name}: ${err?.message}`)
    assert.equal(attempts, 1)
    assert.equal(attemptsOf(err), 1)
  } finally {
    for (const h of held) h.resolve('done')
    await Promise.all([holder, second])
    rx.close()
  }
})

// 4 workers serving one request at a time, 50 ms each: 80 a second. Abandoned requests are still
// served from the backlog. Offered 160 calls a second, open loop, from a cold start: told only
// the call's deadline, the queue let attempts spend theirs waiting from the first calls on, and
// the limit, hearing none of their timeouts, rose and stayed (ADR 0905).
const WORKERS = 4
const SERVICE_MS = 50
const LOAD = { ms: 20_000, rate: 160 }

/** Offers calls open loop, `phase.rate` a second for `phase.ms`; resolves with their outcomes. */
async function offer(phase, call, limits, key) {
  const calls = []
  const t0 = performance.now()
  await new Promise((done) => {
    const watch = setInterval(() => limits.push(key()), 1000)
    const tick = setInterval(() => {
      const elapsed = Math.min(phase.ms, performance.now() - t0)
      const due = Math.floor((elapsed * phase.rate) / 1000)
      while (calls.length < due) calls.push(call())
      if (elapsed >= phase.ms) {
        clearInterval(tick)
        clearInterval(watch)
        done()
      }
    }, 5)
  })
  return Promise.all(calls)
}

test(`attemptTimeoutMs keeps the limiter on: ${WORKERS} sequential workers x ${SERVICE_MS} ms that serve abandoned requests, ${LOAD.rate} calls/s offered, retry { attempts: 3, attemptTimeoutMs: 500 }, timeoutMs 1500: at most 1.25 attempts per call and at least 90 % of the capacity served`, async (t) => {
  const up = await startChildServer(server, [0, WORKERS, SERVICE_MS], 'the backlog upstream')
  const rx = new Resilix()
  try {
    const opts = { key: 'up', timeoutMs: 1500, retry: { attempts: 3, attemptTimeoutMs: 500 } }
    // One call: its outcome and how many attempts it made.
    const call = async () => {
      let attempts = 0
      const fn = async (ctx) => {
        attempts++
        const r = await fetch(`${up.origin}/`, { signal: ctx.signal })
        await r.text()
        return r
      }
      const outcome = await rx.execute(fn, opts).then(
        () => 'served',
        (e) => e.name,
      )
      return { outcome, attempts }
    }
    const limits = []
    const limit = () => rx.stats('up')?.limit
    const done = await offer(LOAD, call, limits, limit)
    const s = await (await fetch(`${up.origin}/stats`)).json()
    // What the workers could serve a second, their timers' lateness included.
    const capacity = (WORKERS * 1000) / (s.serviceMs / (s.served + s.abandoned))
    const perCall = done.reduce((n, c) => n + c.attempts, 0) / done.length
    const timedOut = done.filter((c) => c.outcome === 'TimeoutError').length
    const perSecond = (done.filter((c) => c.outcome === 'served').length * 1000) / LOAD.ms
    t.diagnostic(`served ${perSecond.toFixed(1)}/s of a capacity of ${capacity.toFixed(1)}/s (${((100 * perSecond) / capacity).toFixed(1)} %), ${perCall.toFixed(2)} attempts per call, ${timedOut} of ${done.length} calls timed out, ${s.abandoned} abandoned requests served`)
    t.diagnostic(`the limit every second: ${limits.join(' ')}`)
    assert.ok(perCall <= 1.25, `${perCall.toFixed(2)} attempts per call`)
    assert.ok(perSecond >= 0.9 * capacity, `served ${perSecond.toFixed(1)}/s, under 90 % of ${capacity.toFixed(1)}/s`)
  } finally {
    rx.close()
    await up.close()
  }
})
