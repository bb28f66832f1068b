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
// served from the backlog. Offered 160 calls a second, open loop.
const WORKERS = 4
const SERVICE_MS = 50
const RATE = 160
const RUN_MS = 15_000

test(`attemptTimeoutMs keeps the limiter on: ${WORKERS} sequential workers x ${SERVICE_MS} ms that serve abandoned requests, ${RATE} calls/s offered, retry { attempts: 3, attemptTimeoutMs: 500 }, timeoutMs 1500: at most 1.25 attempts per call and at least 90 % of the capacity served`, async (t) => {
  const up = await startChildServer(server, [0, WORKERS, SERVICE_MS], 'the backlog upstream')
  const rx = new Resilix()
  try {
    let attempts = 0
    let served = 0
    let timedOut = 0
    const fn = async (ctx) => {
      attempts++
      const r = await fetch(`${up.origin}/`, { signal: ctx.signal })
      await r.text()
      return r
    }
    const opts = { key: 'up', timeoutMs: 1500, retry: { attempts: 3, attemptTimeoutMs: 500 } }
    const calls = []
    const limits = []
    const t0 = performance.now()
    let offeredMs = 0
    await new Promise((done) => {
      const offer = setInterval(() => {
        const elapsed = performance.now() - t0
        const due = Math.min(RATE * RUN_MS, Math.floor((elapsed * RATE) / 1000))
        while (calls.length < due) {
          calls.push(rx.execute(fn, opts).then(
            () => served++,
            (e) => {
              if (e.name === 'TimeoutError') timedOut++
            },
          ))
        }
        if (elapsed >= RUN_MS) {
          offeredMs = elapsed
          clearInterval(offer)
          clearInterval(watch)
          done()
        }
      }, 5)
      const watch = setInterval(() => limits.push(rx.stats('up')?.limit), 1000)
    })
    await Promise.all(calls)
    const s = await (await fetch(`${up.origin}/stats`)).json()
    // What the workers could serve in that time, their timers' lateness included.
    const capacity = (WORKERS * 1000) / (s.serviceMs / (s.served + s.abandoned))
    const perSecond = (served * 1000) / offeredMs
    const perCall = attempts / calls.length
    t.diagnostic(`served ${perSecond.toFixed(1)}/s of a capacity of ${capacity.toFixed(1)}/s (${((100 * perSecond) / capacity).toFixed(1)} %), ${perCall.toFixed(2)} attempts per call, ${timedOut} calls timed out, ${s.abandoned} abandoned requests served`)
    t.diagnostic(`the limit every second: ${limits.join(' ')}`)
    assert.ok(perCall <= 1.25, `${perCall.toFixed(2)} attempts per call`)
    assert.ok(perSecond >= 0.9 * capacity, `served ${perSecond.toFixed(1)}/s, under 90 % of ${capacity.toFixed(1)}/s`)
  } finally {
    rx.close()
    await up.close()
  }
})
