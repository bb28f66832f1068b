// The adaptive throttle (ADR 1000) against a real local upstream: a node:http server on a free
// loopback port that answers 429 at once above a rate quota, driven through global fetch at
// four times the quota with the default options. Bands are wide (the simulator reads 1.20 calls
// per accepted call and 100 % of the quota): a busy 2-core machine delays calls, it must not
// fail the test.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import http from 'node:http'
import { Agent, request } from 'undici'
import { Resilix, RejectedError, isRejectedError, findRejectedError } from '../index.js'
import { interceptor } from '../undici.js'
import { sleep } from './helpers.mjs'

const QUOTA = 50 // calls a second
const SERVICE_MS = 20 // a call within the quota
const SECONDS = 4
const WARM_S = 1 // the first second fills the throttle's window: not measured

/**
 * `/quota`: a token bucket of QUOTA a second holding one second's worth (starting full, as the simulator's);
 * without a token, 429 at once. `/ok`: always 200 after SERVICE_MS. `/429`: always 429 at once.
 * Every request is recorded.
 */
async function startQuotaUpstream() {
  let tokens = QUOTA
  let at = performance.now()
  const seen = [] // { t, path, ok }
  const server = http.createServer((req, res) => {
    const now = performance.now()
    if (req.url === '/429') {
      seen.push({ t: now, path: req.url, ok: false })
      res.writeHead(429).end('over')
      return
    }
    if (req.url === '/quota') {
      tokens = Math.min(QUOTA, tokens + ((now - at) / 1000) * QUOTA)
      at = now
      if (tokens < 1) {
        seen.push({ t: now, path: req.url, ok: false })
        res.writeHead(429).end('quota')
        return
      }
      tokens -= 1
    }
    seen.push({ t: now, path: req.url, ok: true })
    setTimeout(() => res.writeHead(200).end('ok'), SERVICE_MS)
  })
  server.keepAliveTimeout = 10_000
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address()
  return {
    url: (path) => `http://127.0.0.1:${port}${path}`,
    seen,
    close: () => new Promise((r) => server.close(r)),
  }
}

/**
 * Open loop: `perSecond` calls a second for `seconds`, each through `rx.execute` and fetch.
 * Returns every call's outcome: { t, status } or { t, error }.
 */
async function offer(rx, url, key, perSecond, seconds) {
  const calls = []
  const start = performance.now()
  let made = 0
  while (performance.now() - start < seconds * 1000) {
    const due = Math.floor(((performance.now() - start) / 1000) * perSecond)
    for (; made < due; made++) {
      const t = performance.now()
      calls.push(
        rx
          .execute(async (ctx) => {
            const r = await fetch(url, { signal: ctx.signal })
            await r.text()
            return r
          }, { key })
          .then((r) => ({ t, status: r.status }), (error) => ({ t, error })),
      )
    }
    await sleep(5)
  }
  return Promise.all(calls)
}

test(`a rate quota offered 4 x: about 1.2 calls reach the upstream per accepted call (without the throttle: 4), the quota met; a healthy key beside it is never throttled`, async () => {
  const up = await startQuotaUpstream()
  const rx = new Resilix()
  const off = new Resilix({ throttle: false })
  const rejected = []
  rx.onReject((e) => rejected.push(e))
  try {
    const start = performance.now()
    const [mine, theirs, healthy] = await Promise.all([
      offer(rx, up.url('/quota'), 'quota', 4 * QUOTA, SECONDS),
      // The same load with the throttle off, on a second quota of its own: a second server.
      (async () => {
        const other = await startQuotaUpstream()
        try {
          await offer(off, other.url('/quota'), 'quota', 4 * QUOTA, SECONDS)
          return other.seen
        } finally {
          await other.close()
        }
      })(),
      offer(rx, up.url('/ok'), 'healthy', 4 * QUOTA, SECONDS),
    ])
    const from = start + WARM_S * 1000
    const measured = (seen) => seen.filter((s) => s.path === '/quota' && s.t >= from)
    const ratio = (seen) => {
      const m = measured(seen)
      return m.length / m.filter((s) => s.ok).length
    }
    const withThrottle = ratio(up.seen)
    const without = ratio(theirs)
    const acceptedPerSecond = measured(up.seen).filter((s) => s.ok).length / (SECONDS - WARM_S)
    const report = `with the throttle ${withThrottle.toFixed(2)} calls per accepted call, ${acceptedPerSecond.toFixed(1)}/s accepted; without ${without.toFixed(2)}`
    console.log(`# ${report}`)
    assert.ok(withThrottle <= 1.6, report)
    assert.ok(without >= 2.5, report)
    assert.ok(acceptedPerSecond >= 0.8 * QUOTA, report)

    // Refused locally: RejectedError 'throttle', fn never ran; counted in stats and told to
    // onReject listeners, like every refusal.
    const throttled = mine.filter((c) => c.error !== undefined && findRejectedError(c.error)?.reason === 'throttle')
    assert.ok(throttled.length > mine.length / 2, `${throttled.length} of ${mine.length} throttled`)
    for (const { error } of throttled) {
      assert.ok(error instanceof RejectedError && isRejectedError(error))
      assert.equal(error.key, 'quota')
      assert.match(error.message, /adaptive throttle/)
    }
    const s = rx.stats('quota')
    assert.equal(s.rejections.throttle, throttled.length)
    assert.ok(s.verdicts.overload > 0)
    assert.equal(rejected.filter((e) => e.reason === 'throttle' && e.key === 'quota').length, throttled.length)

    // The healthy key, through the same instance at the same time: never throttled.
    const h = rx.stats('healthy')
    assert.equal(h.verdicts.overload, 0)
    assert.equal(h.rejections.throttle, 0)
    assert.ok(healthy.every((c) => c.error === undefined || findRejectedError(c.error)?.reason !== 'throttle'))
    assert.ok(h.verdicts.success > 0.9 * healthy.length, `${h.verdicts.success} of ${healthy.length}`)
  } finally {
    rx.close()
    off.close()
    await up.close()
  }
})

// A throttled call is a refusal of our own: never retried, so a retry policy cannot turn the
// throttle's refusals into more calls.
test('a call the throttle refuses is never retried: fn never ran, and no retry was scheduled for it', async () => {
  // Every call answers 429: the throttle refuses nearly all of them once it has seen a few.
  const rx = new Resilix({ retry: { attempts: 3, baseMs: 0, maxDelayMs: 0 }, throttle: { multiplier: 1, maxRejection: 1 }, seed: 3 })
  const retries = []
  rx.onRetry((e) => retries.push(e))
  try {
    let ran = 0
    let throttled = 0
    for (let i = 0; i < 200; i++) {
      let mine = 0
      const before = retries.length
      const r = await rx
        .execute(async () => {
          ran++
          mine++
          return { status: 429 }
        }, { key: 'k' })
        .catch((e) => e)
      if (isRejectedError(r) && r.reason === 'throttle') {
        throttled++
        assert.equal(mine, 0, 'a throttled call never ran fn')
        assert.equal(retries.length, before, 'nor was it retried')
      } else {
        // Answered by its last attempt; a retry the throttle refused ends it with that answer.
        assert.equal(r.status, 429)
      }
    }
    assert.ok(throttled > 100, `${throttled} of 200 throttled`)
    // Attempts that reached fn: far fewer than the 600 three attempts each would make.
    assert.ok(ran < 200, `${ran} attempts ran`)
    // Counted: first attempts refused, and retries refused (their call ended with the 429).
    assert.ok(rx.stats('k').rejections.throttle >= throttled)
  } finally {
    rx.close()
  }
})

test('through the undici interceptor, 429s engage the throttle and its refusal is the cause of the request error', async () => {
  const up = await startQuotaUpstream()
  const rx = new Resilix({ throttle: { multiplier: 1, maxRejection: 1 } })
  const agent = new Agent().compose(interceptor(rx))
  try {
    let refusal
    for (let i = 0; i < 200 && refusal === undefined; i++) {
      try {
        const res = await request(up.url('/429'), { dispatcher: agent })
        await res.body.text()
      } catch (e) {
        refusal = e
      }
    }
    assert.ok(refusal !== undefined, 'a call was refused')
    assert.ok(isRejectedError(refusal))
    assert.equal(findRejectedError(refusal).reason, 'throttle')
    const origin = new URL(up.url('/')).origin
    assert.ok(rx.stats(origin).verdicts.overload > 0)
    assert.equal(rx.stats(origin).rejections.throttle, 1)
  } finally {
    await agent.close()
    rx.close()
    await up.close()
  }
})
