// A hint from the upstream holds a key back for a bounded time (ADR 1104): a 429's
// `retry-after` or a reset years ahead cools the key down for at most `quota.maxCooldownMs`
// (default 60 s), through execute(), the undici interceptor against a real local upstream, and
// a fleet sharing the quota through a real redis-server, a cooldown an older or hostile writer
// left in Redis included. No timer is armed past what setTimeout accepts: a long wait never
// spins. A refusal during a cooldown says so, and until when. No assertion here is on speed:
// a hang shows as the test's own timeout, a spin as TimeoutOverflowWarnings.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { Agent, request } from 'undici'
import { Resilix, isRejectedError } from '../index.js'
import { interceptor } from '../undici.js'
import { redisQuotaStore } from '../redis.js'
import { startRedis } from './fixtures/redis-server.mjs'
import { sleep } from './helpers.mjs'

const require = createRequire(import.meta.url)
const { Redis } = require('ioredis')
const quiet = { breaker: false, throttle: false }
const BOUND = 60_000

/** Counts the TimeoutOverflowWarnings emitted while it listens. */
function overflows() {
  const seen = []
  const on = (w) => {
    if (w.name === 'TimeoutOverflowWarning') seen.push(w)
  }
  process.on('warning', on)
  return { get count() { return seen.length }, stop: () => process.off('warning', on) }
}

/** A real local upstream whose n-th request (1-based) is answered by `answer(n, res)`. */
async function upstream(answer) {
  let n = 0
  const server = createServer((req, res) => {
    req.resume()
    answer(++n, res)
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const origin = `http://127.0.0.1:${server.address().port}`
  return { origin, url: `${origin}/`, close: () => new Promise((r) => server.close(r)), get requests() { return n } }
}

test('quota.maxCooldownMs is checked and named in its error', async () => {
  for (const bad of [0, -1, 1.5, 2147483648, '1000', Infinity]) {
    assert.throws(() => new Resilix({ quota: { requests: 1, maxCooldownMs: bad } }), /option quota\.maxCooldownMs .*from 1 to 2147483647/)
  }
  assert.throws(() => new Resilix({ quota: { requests: 1, maxCooldownMS: 5000 } }), /option quota\.maxCooldownMS is no budget: did you mean quota\.maxCooldownMs\?/)
  // Given in several budgets, the shortest holds; it is no budget itself.
  const rx = new Resilix({ ...quiet, quota: [{ requests: 10, maxCooldownMs: 5000, pace: true }, { tokens: 10, maxCooldownMs: 2000 }] })
  await rx.execute(() => ({ status: 429, headers: { 'retry-after': '99' } }), { key: 'k' })
  assert.deepEqual(rx.stats('k').quota.budgets.map((b) => b.name), ['requests', 'tokens'])
  const cooling = rx.stats('k').quota.coolingMs
  assert.ok(cooling > 1000 && cooling <= 2000, `cooling ${cooling} ms`)
  rx.close()
})

test('through the interceptor with its defaults, a 429 with retry-after: 99999999 cools the key down for 60 s, and a waiting call arms no overflowing timer', { timeout: 30_000 }, async () => {
  const up = await upstream((n, res) => (n === 1 ? res.writeHead(429, { 'retry-after': '99999999' }).end('slow down') : res.end('ok')))
  const rx = new Resilix({ ...quiet, quota: { requests: 100 } })
  const agent = new Agent().compose(interceptor(rx))
  const warn = overflows()
  try {
    const first = await request(up.url, { dispatcher: agent })
    assert.equal(first.statusCode, 429)
    await first.body.text()
    const q = rx.stats(up.origin).quota
    assert.equal(q.cooldowns, 1)
    assert.ok(q.coolingMs > BOUND - 5_000 && q.coolingMs <= BOUND, `cooling ${q.coolingMs} ms, not at most ${BOUND}`)
    // A request without a deadline waits for the cooldown: its timer is one, not one a millisecond.
    const ac = new AbortController()
    const waiting = request(up.url, { dispatcher: agent, signal: ac.signal }).catch((e) => e)
    await sleep(300)
    assert.equal(warn.count, 0, `${warn.count} TimeoutOverflowWarnings in 300 ms`)
    assert.equal(rx.stats(up.origin).quota.waiting, 1)
    ac.abort()
    await waiting
    assert.equal(up.requests, 1)
  } finally {
    warn.stop()
    await agent.close()
    rx.close()
    await up.close()
  }
})

test('through the interceptor, a request with no deadline after a 429 whose reset is years ahead is answered once the bound is over', { timeout: 30_000 }, async () => {
  const far = { 'x-ratelimit-limit-requests': '100', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '27777h' }
  const up = await upstream((n, res) => (n === 1 ? res.writeHead(429, far).end('slow down') : res.end('ok')))
  const rx = new Resilix({ ...quiet, quota: { requests: 100, maxCooldownMs: 500 } })
  const agent = new Agent().compose(interceptor(rx))
  try {
    const first = await request(up.url, { dispatcher: agent })
    await first.body.text()
    assert.equal(first.statusCode, 429)
    assert.ok(rx.stats(up.origin).quota.coolingMs <= 500, `cooling ${rx.stats(up.origin).quota.coolingMs} ms`)
    const res = await request(up.url, { dispatcher: agent })
    assert.equal(res.statusCode, 200)
    assert.equal(await res.body.text(), 'ok')
    assert.equal(up.requests, 2)
  } finally {
    await agent.close()
    rx.close()
    await up.close()
  }
})

test('a waiting call on a window of 2 147 483 647 ms arms no overflowing timer', { timeout: 30_000 }, async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 2147483647 } })
  const warn = overflows()
  try {
    await rx.execute(() => 1)
    const ac = new AbortController()
    const waiting = rx.execute(() => 2, { signal: ac.signal }).catch((e) => e)
    await sleep(300)
    assert.equal(warn.count, 0, `${warn.count} TimeoutOverflowWarnings in 300 ms`)
    assert.equal(rx.stats('default').quota.waiting, 1)
    ac.abort()
    await waiting
    assert.equal(rx.stats('default').quota.waiting, 0)
  } finally {
    warn.stop()
    rx.close()
  }
})

test('a refusal during a 429 cooldown says the key is cooling down after a 429, and until when', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 100, pace: true } })
  try {
    await rx.execute(() => ({ status: 429, headers: { 'retry-after': '30' } }))
    const t0 = Date.now()
    const err = await rx.execute(() => 1, { timeoutMs: 200 }).catch((e) => e)
    assert.ok(isRejectedError(err) && err.reason === 'quota', String(err))
    assert.match(err.message, /cooling down after a 429 until (\S+) \((\d+) ms from now\)/)
    const [, until, left] = /until (\S+) \((\d+) ms/.exec(err.message)
    const at = Date.parse(until)
    assert.ok(at >= t0 + 25_000 && at <= Date.now() + 30_000, `until ${until}`)
    assert.ok(Number(left) > 25_000 && Number(left) <= 30_000, `${left} ms`)
    assert.doesNotMatch(err.message, /at the rate the budget comes back/)
    // Without a cooldown, the refusal says what it said.
    const rx2 = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 60_000 } })
    await rx2.execute(() => 1)
    const err2 = await rx2.execute(() => 1, { timeoutMs: 100 }).catch((e) => e)
    assert.match(err2.message, /could not fit before its deadline at the rate the budget comes back/)
    rx2.close()
  } finally {
    rx.close()
  }
})

// ---- a fleet, through a real redis-server ---------------------------------------------------

let redis
const clients = []
before(async () => {
  redis = await startRedis()
})
after(async () => {
  for (const c of clients) c.disconnect()
  await redis?.close()
})

async function client() {
  const c = new Redis(redis.port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 100, enableOfflineQueue: false })
  c.on('error', () => {})
  clients.push(c)
  await new Promise((r) => c.once('ready', r))
  return c
}

test('a fleet: a 429 with retry-after: 99999999 cools every process, one started later included, for the bound only', { timeout: 30_000 }, async () => {
  const [a, b] = [await client(), await client()]
  // A store timeout far above Redis's answer: a busy machine must not make a process fall back.
  const opts = (c) => ({ ...quiet, quota: { requests: 100, pace: true }, quotaStore: redisQuotaStore(c, { prefix: 'bound-cool', timeoutMs: 5_000 }) })
  const x = new Resilix(opts(a))
  let y
  try {
    await x.execute(() => ({ status: 429, headers: { 'retry-after': '99999999' } }), { key: 'k' })
    assert.ok(x.stats('k').quota.coolingMs <= BOUND, `x cools ${x.stats('k').quota.coolingMs} ms`)
    // The process that met it tells the store at once.
    let stored = 0
    for (let i = 0; i < 100 && !(stored > 0); i++) {
      await sleep(50)
      stored = Number(await a.hget('bound-cool:{k}:w', 'cool'))
    }
    assert.ok(stored > Date.now() && stored <= Date.now() + BOUND + 1_000, `stored until ${stored}, now ${Date.now()}`)
    // A process started later learns it with its first lease, bounded too.
    y = new Resilix(opts(b))
    const err = await y.execute(() => 1, { key: 'k', timeoutMs: 200 }).catch((e) => e)
    assert.ok(isRejectedError(err) && err.reason === 'quota', String(err))
    assert.match(err.message, /cooling down after a 429/)
    const cooling = y.stats('k').quota.coolingMs
    assert.ok(cooling > 0 && cooling <= BOUND, `y cools ${cooling} ms`)
  } finally {
    x.close()
    y?.close()
  }
})

test('a fleet: a cooldown years ahead left in Redis by an older or hostile writer holds a process for its bound only, and is brought back to it', { timeout: 30_000 }, async () => {
  const c = await client()
  await c.hset('bound-old:{k}:w', 'cool', String(Date.now() + 1e12))
  await c.pexpire('bound-old:{k}:w', 600_000)
  const rx = new Resilix({ ...quiet, quota: { requests: 100, pace: true, maxCooldownMs: 800 }, quotaStore: redisQuotaStore(c, { prefix: 'bound-old', timeoutMs: 5_000 }) })
  const warn = overflows()
  try {
    // No deadline: it waits out the bound, then runs.
    assert.equal(await rx.execute(() => 'ran', { key: 'k' }), 'ran')
    assert.equal(warn.count, 0, `${warn.count} TimeoutOverflowWarnings`)
    assert.equal(rx.stats('k').quota.cooldowns, 1)
    const stored = Number(await c.hget('bound-old:{k}:w', 'cool'))
    assert.ok(stored <= Date.now() + 800, `Redis still holds a cooldown until ${stored}`)
  } finally {
    warn.stop()
    rx.close()
  }
})
