// The quota store in Redis, in one process against a real redis-server: its options and their
// errors, that nothing of it loads unused, its Redis keys (prefixed, one hash slot, expiring),
// the keys it covers, a 429 cooldown and a header reading shared between processes (two
// instances here, each its own process to the store), the fallback and the refusal while
// Redis cannot be reached, its stats and events, close(), node-redis, and an ioredis Cluster.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import net from 'node:net'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Resilix, isRejectedError } from '../index.js'
import { redisQuotaStore } from '../redis.js'
import { startRedis, command } from './fixtures/redis-server.mjs'

const require = createRequire(import.meta.url)
const { Redis, Cluster } = require('ioredis')
const { createClient } = require('redis')
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))

let redis
const clients = []
before(async () => {
  redis = await startRedis()
})
after(async () => {
  for (const c of clients) c.disconnect?.()
  await redis?.close()
})

async function ioredis(port = redis.port, opts = {}) {
  const c = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 100, enableOfflineQueue: false, ...opts })
  c.on('error', () => {})
  clients.push(c)
  if (!opts.lazyConnect) await new Promise((res) => c.once('ready', res))
  return c
}

test('options: a bad client or option is refused with an error that names it', async () => {
  const c = await ioredis()
  assert.throws(() => redisQuotaStore(null), /needs a connected Redis client/)
  assert.throws(() => redisQuotaStore('redis://127.0.0.1:6379'), /needs a connected Redis client .*got the string/)
  assert.throws(() => redisQuotaStore({ get() {} }), /neither evalsha \(ioredis\) nor evalSha \(node-redis\)/)
  assert.throws(() => redisQuotaStore(c, { prefx: 'a' }), /unknown redisQuotaStore option prefx.*prefix/)
  assert.throws(() => redisQuotaStore(c, { prefix: '' }), /prefix must be a string of 1 to 100/)
  assert.throws(() => redisQuotaStore(c, { prefix: 'app{1}' }), /prefix must be a string of 1 to 100 characters without \{ or \}, got the string "app\{1\}"/)
  assert.throws(() => redisQuotaStore(c, { timeoutMs: 0 }), /timeoutMs must be a number of ms from 1 to 60000, got 0/)
  assert.throws(() => redisQuotaStore(c, { whenDown: 'wait' }), /whenDown must be 'share' or 'refuse'/)
  assert.throws(() => redisQuotaStore(c, { keys: 'api' }), /keys must be an array of keys or a function/)
  assert.throws(() => new Resilix({ quota: { requests: 1 }, quotaStore: {} }), /option quotaStore must be a store such as redisQuotaStore\(redis\)/)
  assert.throws(() => new Resilix({ quotaStore: redisQuotaStore(c) }), /option quotaStore shares a quota: give the instance one too/)
})

test('nothing of the store loads when no instance uses one', () => {
  const code = `
    const { Resilix } = require('./index.js')
    const rx = new Resilix({ quota: { requests: 5 } })
    rx.execute(() => 1, { key: 'k' }).then(() => {
      const loaded = Object.keys(require.cache).filter((f) => /lib[\\\\/](fleet|store)|ioredis|node_modules[\\\\/]@?redis/.test(f))
      console.log(JSON.stringify(loaded))
      rx.close()
    })`
  const r = spawnSync(process.execPath, ['-e', code], { cwd: new URL('..', import.meta.url), encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.deepEqual(JSON.parse(r.stdout), [])
})

test('the Redis keys carry the prefix, share one hash slot, and expire two windows after the last use', async () => {
  const c = await ioredis()
  const rx = new Resilix({ quota: { requests: 50, windowMs: 400 }, quotaStore: redisQuotaStore(c, { prefix: 'test-expiry' }) })
  try {
    for (let i = 0; i < 5; i++) await rx.execute(() => i, { key: 'api.example.com' })
    const keys = (await c.keys('test-expiry:*')).sort()
    assert.deepEqual(keys, ['test-expiry:{api.example.com}:p', 'test-expiry:{api.example.com}:w'])
    for (const k of keys) {
      const ttl = await c.pttl(k)
      assert.ok(ttl > 0 && ttl <= 2 * 400 + 1000, `${k} expires in ${ttl} ms`)
    }
    const slots = await Promise.all(keys.map(async (k) => c.call('CLUSTER', 'KEYSLOT', k).catch(() => null)))
    if (slots[0] !== null) assert.equal(slots[0], slots[1])
    // The window counts what was spent.
    assert.equal(Number(await c.hget('test-expiry:{api.example.com}:w', 's0')) >= 5, true)
    rx.close()
    await sleep(2 * 400 + 1100)
    assert.deepEqual(await c.keys('test-expiry:*'), [])
  } finally {
    rx.close()
  }
})

test('keys: only the keys named share the quota; the others keep their own', async () => {
  const c = await ioredis()
  const rx = new Resilix({ quota: { requests: 50 }, quotaStore: redisQuotaStore(c, { prefix: 'test-keys', keys: (k) => k.startsWith('shared.') }) })
  try {
    await rx.execute(() => 1, { key: 'shared.example.com' })
    await rx.execute(() => 1, { key: 'own.example.com' })
    assert.equal(rx.stats('shared.example.com').quota.store.state, 'leased')
    assert.equal(rx.stats('own.example.com').quota.store, null)
    assert.deepEqual((await c.keys('test-keys:*')).sort(), ['test-keys:{shared.example.com}:p', 'test-keys:{shared.example.com}:w'])
  } finally {
    rx.close()
  }
})

test('two processes share one budget: together they are admitted no more than it', async () => {
  const [a, b] = [await ioredis(), await ioredis()]
  const opts = (c) => ({ quota: { requests: 20, windowMs: 60_000 }, quotaStore: redisQuotaStore(c, { prefix: 'test-two' }) })
  const [x, y] = [new Resilix(opts(a)), new Resilix(opts(b))]
  try {
    let ok = 0
    const calls = []
    for (let i = 0; i < 30; i++) {
      const rx = i % 2 ? x : y
      calls.push(rx.execute(() => ok++, { key: 'k', timeoutMs: 200 }).catch((e) => e))
    }
    const out = await Promise.all(calls)
    assert.equal(ok, 20)
    assert.equal(out.filter((e) => isRejectedError(e) && e.reason === 'quota').length, 10)
    assert.equal(x.stats('k').quota.store.processes, 2)
  } finally {
    x.close()
    y.close()
  }
})

test('a short window holds a charge 100 ms past its end in Redis too: another process spends it no sooner', async () => {
  const [a, b] = [await ioredis(), await ioredis()]
  // A 300 ms window: its sixtieth (5 ms) is below the 100 ms kept against a late arrival.
  const opts = (c) => ({ quota: { requests: 1, windowMs: 300 }, quotaStore: redisQuotaStore(c, { prefix: 'test-late' }) })
  const [x, y] = [new Resilix(opts(a)), new Resilix(opts(b))]
  try {
    let first = 0
    await x.execute(() => (first = performance.now()), { key: 'k' })
    // y has charged nothing itself: only the fleet's window in Redis holds it back.
    let second = 0
    await y.execute(() => (second = performance.now()), { key: 'k', timeoutMs: 5_000 })
    const gap = second - first
    assert.ok(gap >= 390, `the second call ran ${gap.toFixed(0)} ms after the first: the window freed it before 300 + 100 ms`)
    assert.ok(gap < 1_500, `the second call waited ${gap.toFixed(0)} ms`)
  } finally {
    x.close()
    y.close()
  }
})

test('a 429 seen by one process cools the others down through the store', async () => {
  const [a, b] = [await ioredis(), await ioredis()]
  // The lease may take its time on a busy machine: this test is about what it carries.
  const opts = (c) => ({ quota: { requests: 100, windowMs: 60_000, pace: true }, quotaStore: redisQuotaStore(c, { prefix: 'test-cool', timeoutMs: 5000 }) })
  const [x, y] = [new Resilix(opts(a)), new Resilix(opts(b))]
  try {
    await y.execute(() => 1, { key: 'k' })
    const refused = { status: 429, headers: { 'retry-after-ms': '8000' } }
    await x.execute(() => refused, { key: 'k' })
    assert.ok(x.stats('k').quota.coolingMs > 1000)
    // y learns it with its next lease: its lease runs out within a bucket (a second).
    await sleep(1100)
    const t0 = Date.now()
    const err = await y.execute(() => 1, { key: 'k', timeoutMs: 3000 }).catch((e) => e)
    assert.ok(isRejectedError(err) && err.reason === 'quota', String(err))
    // About 7 s of cooldown are left against a 3 s deadline: refused when the lease answers, not
    // at the deadline (a loaded machine has been seen to take over 150 ms for that lease).
    assert.ok(Date.now() - t0 < 2000, `refused at once: the cooldown outlasts its deadline (${Date.now() - t0} ms)`)
    assert.ok(y.stats('k').quota.coolingMs > 0)
    assert.equal(y.stats('k').quota.cooldowns, 1)
  } finally {
    x.close()
    y.close()
  }
})

test('a header reading seen by one process holds the others back', async () => {
  const [a, b] = [await ioredis(), await ioredis()]
  const opts = (c) => ({ quota: { tokens: 10_000, windowMs: 60_000, pace: true }, quotaStore: redisQuotaStore(c, { prefix: 'test-floor' }) })
  const [x, y] = [new Resilix(opts(a)), new Resilix(opts(b))]
  try {
    const reading = { status: 200, headers: { 'x-ratelimit-limit-tokens': '10000', 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '50s' } }
    await x.execute(() => reading, { key: 'k', cost: { tokens: 10 } })
    // x tells the store with its next call to it, within a bucket.
    await sleep(1100)
    await x.execute(() => 1, { key: 'k', cost: { tokens: 1 }, timeoutMs: 100 }).catch(() => {})
    const err = await y.execute(() => 1, { key: 'k', cost: { tokens: 100 }, timeoutMs: 200 }).catch((e) => e)
    assert.ok(isRejectedError(err) && err.reason === 'quota', `y was not held back: ${err}`)
    assert.ok(Number(await a.hget('test-floor:{k}:w', 's0')) >= 9_990)
  } finally {
    x.close()
    y.close()
  }
})

/** A loopback port nothing listens on. */
function closedPort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

/** An ioredis client still connecting (or never able to): not awaited. */
function connecting(port, opts = {}) {
  const c = new Redis(port, '127.0.0.1', { maxRetriesPerRequest: 1, retryStrategy: () => 100, enableOfflineQueue: false, ...opts })
  c.on('error', () => {})
  clients.push(c)
  return c
}

test('a store never reached: a call waits while the client connects, then the key refuses, naming the client\'s error', async () => {
  const c = connecting(await closedPort())
  const listening = c.listenerCount('error')
  const rx = new Resilix({ quota: { requests: 8, windowMs: 60_000 }, quotaStore: redisQuotaStore(c) })
  assert.equal(c.listenerCount('error'), listening + 1, 'the store listens to the client while an instance uses it')
  const events = []
  rx.onStore((e) => events.push(e))
  try {
    const out = await Promise.all(Array.from({ length: 10 }, () => rx.execute(() => 1, { key: 'k', timeoutMs: 2_000 }).catch((e) => e.reason)))
    // It knows nothing of the fleet: spending the whole budget could be N × it (ADR 1105).
    assert.deepEqual(out, new Array(10).fill('quota'))
    const s = rx.stats('k').quota.store
    assert.equal(s.state, 'refusing')
    assert.match(s.lastError, /^the store is not connected \(its client's last error: .*ECONNREFUSED/)
    assert.deepEqual(events.map((e) => e.state), ['refusing'])
    assert.equal(events[0].error, s.lastError)
  } finally {
    rx.close()
  }
  assert.equal(c.listenerCount('error'), listening, 'and stops once it is closed')
  assert.equal(c.listenerCount('ready'), 0)
})

test('a store never reached, with processes: each keeps to an equal share of that many', async () => {
  const c = connecting(await closedPort())
  const rx = new Resilix({ quota: { requests: 8, windowMs: 60_000 }, quotaStore: redisQuotaStore(c, { processes: 4 }) })
  try {
    const out = await Promise.all(Array.from({ length: 10 }, () => rx.execute(() => 1, { key: 'k', timeoutMs: 2_000 }).catch((e) => e.reason)))
    assert.equal(out.filter((x) => x === 1).length, 2)
    assert.equal(rx.stats('k').quota.store.state, 'fallback')
  } finally {
    rx.close()
  }
  assert.throws(() => redisQuotaStore(c, { processes: 0 }), /processes must be a whole number from 1 to 100000 .*got 0/)
  assert.throws(() => redisQuotaStore(c, { processes: '4' }), /processes must be a whole number .*got the string "4"/)
})

test('a client still connecting: the first calls wait for it and are leased, not let through on a guess', async () => {
  const c = connecting(redis.port)
  assert.notEqual(c.status, 'ready')
  // A timeoutMs of 3 s: the wait for the client (the longer of it and 1 s) outlasts a connect on
  // a loaded machine.
  const rx = new Resilix({ quota: { requests: 8, windowMs: 60_000 }, quotaStore: redisQuotaStore(c, { prefix: 'test-connecting', timeoutMs: 3_000 }) })
  try {
    const out = await Promise.all(Array.from({ length: 3 }, (_, i) => rx.execute(() => i, { key: 'k', timeoutMs: 6_000 })))
    assert.deepEqual(out, [0, 1, 2])
    const s = rx.stats('k').quota.store
    assert.equal(s.state, 'leased')
    assert.equal(s.errors, 0)
    assert.ok(Number(await c.hget('test-connecting:{k}:w', 's0')) >= 3, 'the calls were counted in Redis')
  } finally {
    rx.close()
  }
})

test('a Redis that needs a password: the key refuses, and the error is Redis\'s own (NOAUTH), on ioredis and node-redis', async () => {
  const r = await startRedis({ password: 'not-given' })
  const io = connecting(r.port)
  const nr = createClient({ url: r.url, socket: { reconnectStrategy: () => 100 }, disableOfflineQueue: true })
  nr.on('error', () => {})
  await nr.connect()
  const opts = (c) => ({ quota: { requests: 8, windowMs: 60_000 }, quotaStore: redisQuotaStore(c) })
  const [x, y] = [new Resilix(opts(io)), new Resilix(opts(nr))]
  try {
    for (const rx of [x, y]) {
      const out = await Promise.all(Array.from({ length: 4 }, () => rx.execute(() => 1, { key: 'k', timeoutMs: 2_000 }).catch((e) => e.reason)))
      assert.deepEqual(out, new Array(4).fill('quota'))
      const s = rx.stats('k').quota.store
      assert.equal(s.state, 'refusing')
      // ioredis is refused its handshake (NOAUTH); node-redis connects, and Redis refuses the
      // script's long command from a client that has not authenticated.
      assert.match(s.lastError, rx === x ? /NOAUTH Authentication required/ : /unauthenticated/)
    }
  } finally {
    x.close()
    y.close()
    await nr.disconnect().catch(() => {})
    await r.close()
  }
})

/** `c` behind a wrapper whose script calls resolve with `reply.value` while it is set. */
function replying(c, reply) {
  const pass = (name) => (...args) => ('value' in reply ? Promise.resolve(reply.value) : c[name](...args))
  return { get status() { return c.status }, evalsha: pass('evalsha'), eval: pass('eval'), on: c.on.bind(c), off: c.off.bind(c) }
}

test('a reply the lease script cannot have produced is a store error: counted, named, the key falls back, the process lives', async () => {
  const bad = [null, 'OK', [], ['1.2', 1, 0, 40, 0, 'x', 7, 3], ['1.2', 0, 0, 40, 0, 1, 7, 3], [1, 1, 0, 40, 0, 1, 7, 3], ['1.2', 1, 0, 40, -5, 1, 7, 3]]
  for (const [i, value] of bad.entries()) {
    const c = await ioredis()
    const reply = {}
    // A 3 s window: a lease lasts a bucket (50 ms) at most.
    const rx = new Resilix({ quota: { requests: 100, windowMs: 3_000 }, quotaStore: redisQuotaStore(replying(c, reply), { prefix: `test-bad-${i}` }) })
    try {
      assert.equal(await rx.execute(() => 1, { key: 'k' }), 1)
      assert.equal(rx.stats('k').quota.store.state, 'leased')
      reply.value = value
      await sleep(150)
      const out = await Promise.all(Array.from({ length: 5 }, () => rx.execute(() => 1, { key: 'k', timeoutMs: 2_000 }).catch((e) => e)))
      assert.deepEqual(out, [1, 1, 1, 1, 1], `reply ${JSON.stringify(value)}: served from the share`)
      const s = rx.stats('k').quota.store
      assert.equal(s.state, 'fallback', `reply ${JSON.stringify(value)}`)
      assert.ok(s.errors >= 1)
      assert.match(s.lastError, /^the store replied /)
    } finally {
      rx.close()
    }
  }
  // First contact: no share known, so the key refuses at once rather than wait on a lease.
  const c = await ioredis()
  const rx = new Resilix({ quota: { requests: 100, windowMs: 3_000 }, quotaStore: redisQuotaStore(replying(c, { value: null })) })
  try {
    const t0 = Date.now()
    const err = await rx.execute(() => 1, { key: 'k', timeoutMs: 20_000 }).catch((e) => e)
    assert.ok(isRejectedError(err) && err.reason === 'quota', String(err))
    assert.ok(Date.now() - t0 < 10_000, `refused after ${Date.now() - t0} ms, not at once`)
    assert.deepEqual([rx.stats('k').quota.store.state, rx.stats('k').quota.store.lastError], ['refusing', "the store replied null, not the lease script's list of 8 values"])
  } finally {
    rx.close()
  }
})

test('after an outage: every failed retry counts, and lastError is cleared once Redis answers again', async () => {
  const r = await startRedis()
  const c = await ioredis(r.port)
  const rx = new Resilix({ quota: { requests: 100, windowMs: 3_000 }, quotaStore: redisQuotaStore(c) })
  try {
    assert.equal(await rx.execute(() => 1, { key: 'k' }), 1)
    await r.kill()
    await sleep(150)
    assert.equal(await rx.execute(() => 2, { key: 'k', timeoutMs: 2_000 }), 2)
    await sleep(4_500) // a retry a second
    let s = rx.stats('k').quota.store
    assert.equal(s.state, 'fallback')
    assert.ok(s.errors >= 3, `${s.errors} errors over a 4.5 s outage`)
    assert.match(s.lastError, /not connected/)
    await r.restart()
    for (let i = 0; i < 60 && rx.stats('k').quota.store.state !== 'leased'; i++) await sleep(100)
    assert.equal(await rx.execute(() => 3, { key: 'k', timeoutMs: 2_000 }), 3)
    s = rx.stats('k').quota.store
    assert.equal(s.state, 'leased')
    assert.equal(s.lastError, null)
  } finally {
    rx.close()
    await r.close()
  }
})

test('two applications with different budgets on one key: the second is told, and changes nothing in the first\'s window', async () => {
  const [a, b] = [await ioredis(), await ioredis()]
  const x = new Resilix({ quota: { requests: 100, windowMs: 2_000 }, quotaStore: redisQuotaStore(a, { prefix: 'test-budgets' }) })
  const y = new Resilix({ quota: { requests: 500, windowMs: 2_000 }, quotaStore: redisQuotaStore(b, { prefix: 'test-budgets' }) })
  try {
    assert.equal(await x.execute(() => 1, { key: 'k' }), 1)
    const err = await y.execute(() => 1, { key: 'k', timeoutMs: 1_000 }).catch((e) => e)
    assert.ok(isRejectedError(err) && err.reason === 'quota', String(err))
    const s = y.stats('k').quota.store
    assert.equal(s.state, 'refusing')
    assert.equal(
      s.lastError,
      "another process counts this key's window in Redis with other budgets (requests 100 per 2000 ms) than this one's (requests 500 per 2000 ms): give each application its own prefix, or the fleet the same budgets",
    )
    // The script stopped before it counted y among the processes, or kept its budgets.
    assert.equal(await a.zcard('test-budgets:{k}:p'), 1)
    assert.equal(await a.hget('test-budgets:{k}:w', 'b'), '100/2000')
    assert.equal(await x.execute(() => 2, { key: 'k' }), 2)
    assert.equal(x.stats('k').quota.store.errors, 0)
  } finally {
    x.close()
    y.close()
  }
})

test("the fleet guide's Redis snippet listens to the client's errors: nothing unhandled while Redis is down, even once closed", async () => {
  const fleet = readFileSync(new URL('../docs/guides/running-a-fleet.md', import.meta.url), 'utf8')
  let code = /```js\n([\s\S]*?)```/.exec(fleet)[1]
  code = code.replace("from 'resilix/redis'", `from ${JSON.stringify(new URL('../redis.js', import.meta.url).href)}`)
  code = code.replace("from 'resilix'", `from ${JSON.stringify(new URL('../index.js', import.meta.url).href)}`)
  // As the snippet runs, then closed (the store stops listening), while Redis stays down.
  code += '\nawait new Promise((r) => setTimeout(r, 700))\nopenai.close()\nawait new Promise((r) => setTimeout(r, 1500))\nredis.disconnect()\n'
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: new URL('..', import.meta.url), encoding: 'utf8', timeout: 20_000, env: { ...process.env, REDIS_URL: `redis://127.0.0.1:${await closedPort()}` },
  })
  assert.equal(r.status, 0, r.stderr)
  assert.match(r.stderr, /ECONNREFUSED/, 'the client did try')
  assert.doesNotMatch(r.stderr, /Unhandled error event/)
})

test("whenDown: 'refuse' refuses every call while the store is down, and leases again once it is back", async () => {
  const r = await startRedis()
  const c = await ioredis(r.port)
  const rx = new Resilix({ quota: { requests: 100, windowMs: 60_000 }, quotaStore: redisQuotaStore(c, { whenDown: 'refuse', timeoutMs: 100 }) })
  const states = []
  rx.onStore((e) => states.push(e.state))
  try {
    assert.equal(await rx.execute(() => 1, { key: 'k' }), 1)
    r.pause()
    await sleep(1100) // the lease has run out
    const t0 = Date.now()
    const err = await rx.execute(() => 1, { key: 'k', timeoutMs: 1000 }).catch((e) => e)
    assert.ok(isRejectedError(err) && err.reason === 'quota', String(err))
    assert.ok(Date.now() - t0 < 400, `refused after ${Date.now() - t0} ms`)
    assert.equal(rx.stats('k').quota.store.state, 'refusing')
    r.resume()
    await sleep(1300)
    assert.equal(await rx.execute(() => 2, { key: 'k', timeoutMs: 1000 }), 2)
    assert.equal(rx.stats('k').quota.store.state, 'leased')
    assert.deepEqual(states, ['refusing', 'leased'])
  } finally {
    rx.close()
    r.resume()
    await r.close()
  }
})

test('node-redis: the same store, and a process on each client shares one budget', async () => {
  const nr = createClient({ url: redis.url })
  nr.on('error', () => {})
  await nr.connect()
  const io = await ioredis()
  const opts = (c) => ({ quota: { requests: 6, windowMs: 60_000 }, quotaStore: redisQuotaStore(c, { prefix: 'test-nr' }) })
  const [x, y] = [new Resilix(opts(nr)), new Resilix(opts(io))]
  try {
    let ok = 0
    const out = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 ? x : y).execute(() => ok++, { key: 'k', timeoutMs: 200 }).catch((e) => e.reason)))
    assert.equal(ok, 6)
    assert.equal(out.filter((e) => e === 'quota').length, 4)
    assert.equal(x.stats('k').quota.store.state, 'leased')
  } finally {
    x.close()
    y.close()
    await nr.quit()
  }
})

test('an ioredis Cluster: the script runs on the key\'s slot', async () => {
  const r = await startRedis({ cluster: true })
  const c = new Cluster([{ host: '127.0.0.1', port: r.port }])
  c.on('error', () => {})
  try {
    await new Promise((res) => c.once('ready', res))
    const rx = new Resilix({ quota: { requests: 5, windowMs: 60_000 }, quotaStore: redisQuotaStore(c) })
    let ok = 0
    await Promise.all(Array.from({ length: 8 }, () => rx.execute(() => ok++, { key: 'api', timeoutMs: 200 }).catch(() => {})))
    assert.equal(ok, 5)
    assert.equal(rx.stats('api').quota.store.state, 'leased')
    assert.match(await command(r.port, 'CLUSTER', 'KEYSLOT', 'resilix:{api}:w'), /^:\d+/)
    // A brace in the key name does not move the two Redis keys apart (ADR 1107).
    for (const key of ['}api', 'a{b}c', '{}', 'x{']) {
      ok = 0
      await Promise.all(Array.from({ length: 8 }, () => rx.execute(() => ok++, { key, timeoutMs: 200 }).catch(() => {})))
      assert.equal(ok, 5, key)
      const s = rx.stats(key).quota.store
      assert.deepEqual([s.state, s.errors, s.lastError], ['leased', 0, null], key)
    }
    const stored = (await Promise.all(c.nodes('master').map((n) => n.keys('resilix:*')))).flat()
    assert.ok(stored.includes('resilix:{%7Dapi}:w') && stored.includes('resilix:{a%7Bb%7Dc}:p'), stored.join(' '))
    rx.close()
  } finally {
    c.disconnect()
    await r.close()
  }
})

test('close() stops the store\'s timers: a process with a leased key exits by itself', () => {
  const code = `
    const { Resilix } = require('./index.js')
    const { redisQuotaStore } = require('./redis.js')
    const Redis = require('ioredis')
    const c = new Redis(${redis.port}, '127.0.0.1')
    c.once('ready', async () => {
      const rx = new Resilix({ quota: { requests: 50, windowMs: 60000 }, quotaStore: redisQuotaStore(c) })
      for (let i = 0; i < 5; i++) await rx.execute(() => i, { key: 'k' })
      rx.close()
      c.disconnect()
    })`
  const r = spawnSync(process.execPath, ['-e', code], { cwd: new URL('..', import.meta.url), encoding: 'utf8', timeout: 10_000 })
  assert.equal(r.signal, null, 'it exited by itself')
  assert.equal(r.status, 0, r.stderr)
})
