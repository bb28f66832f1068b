// The quota store in Redis, in one process against a real redis-server: its options and their
// errors, that nothing of it loads unused, its Redis keys (prefixed, one hash slot, expiring),
// the keys it covers, a 429 cooldown and a header reading shared between processes (two
// instances here, each its own process to the store), the fallback and the refusal while
// Redis cannot be reached, its stats and events, close(), node-redis, and an ioredis Cluster.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
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
  const opts = (c) => ({ quota: { requests: 100, windowMs: 60_000, pace: true }, quotaStore: redisQuotaStore(c, { prefix: 'test-cool' }) })
  const [x, y] = [new Resilix(opts(a)), new Resilix(opts(b))]
  try {
    await y.execute(() => 1, { key: 'k' })
    const refused = { status: 429, headers: { 'retry-after-ms': '1500' } }
    await x.execute(() => refused, { key: 'k' })
    assert.ok(x.stats('k').quota.coolingMs > 1000)
    // y learns it with its next lease: its lease runs out within a bucket (a second).
    await sleep(1100)
    const t0 = Date.now()
    const err = await y.execute(() => 1, { key: 'k', timeoutMs: 200 }).catch((e) => e)
    assert.ok(isRejectedError(err) && err.reason === 'quota', String(err))
    assert.ok(Date.now() - t0 < 150, 'refused at once: the cooldown outlasts its deadline')
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

test('a store not connected: the process falls back to its share at once, and says so', async () => {
  const c = await ioredis(1, { lazyConnect: true }) // never connects
  const rx = new Resilix({ quota: { requests: 8, windowMs: 60_000 }, quotaStore: redisQuotaStore(c) })
  const events = []
  rx.onStore((e) => events.push(e))
  try {
    const t0 = Date.now()
    const out = await Promise.all(Array.from({ length: 10 }, () => rx.execute(() => 1, { key: 'k', timeoutMs: 200 }).catch((e) => e.reason)))
    assert.ok(Date.now() - t0 < 400, 'nothing waited on the store')
    // Alone, its share is the whole budget.
    assert.equal(out.filter((x) => x === 1).length, 8)
    assert.equal(out.filter((x) => x === 'quota').length, 2)
    const s = rx.stats('k').quota.store
    assert.equal(s.state, 'fallback')
    assert.equal(s.fallbacks, 1)
    assert.match(s.lastError, /not connected/)
    assert.deepEqual(events, [{ key: 'k', state: 'fallback', error: 'the store is not connected' }])
  } finally {
    rx.close()
  }
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
