// A quota shared through Redis (resilix/redis): what it costs a call, how often a process calls
// Redis, and a fleet beside bottleneck's clustering mode. Starts its own redis-server (the
// Debian package) on a free loopback port.
//
//   node benches/node/quota-fleet.mjs [--part cost,ops,peers] [--rounds 7] [--calls 200000]
//
// cost   ns per call of `execute(fn, { key, cost })` on a key whose quota Redis shares, against
//        the same key with a local quota, in one process, rounds alternating; budgets no call
//        exhausts, 100 calls in flight, fn returns at once.
// ops    calls to Redis per second per process over 10 s with a minute's window, at several
//        offered rates: flat out with a budget never exhausted, 1 000 calls/s, and twice a
//        budget of 600 requests a minute (calls waiting for budget all along).
// peers  4 processes started up to 2 s apart, each offering 2 × the whole token budget of the
//        mock LLM API (200 000 tokens and 500 requests per 6 s window): resilix with
//        `quotaStore`, then bottleneck's clustering mode (ioredis datastore, a weighted
//        reservoir of the window's tokens refreshed every window, shared by id). 429s, the
//        budget used (mean over windows sliding by 100 ms), each process's share.
import { parseArgs } from 'node:util'
import { createRequire } from 'node:module'
import { Resilix } from '../../index.js'
import { redisQuotaStore } from '../../redis.js'
import { startRedis } from '../../__test__/fixtures/redis-server.mjs'
import { startLlmUpstream } from '../../__test__/fixtures/llm-upstream.mjs'
import { runFleet, budgetUsed, shares, steadyPeriod } from '../../__test__/fixtures/fleet.mjs'

const require = createRequire(import.meta.url)
const Redis = require('ioredis')
const { values: opt } = parseArgs({
  options: {
    part: { type: 'string', default: 'cost,ops,peers' },
    rounds: { type: 'string', default: '7' },
    calls: { type: 'string', default: '200000' },
  },
})
const parts = opt.part.split(',')
const MAX = Number.MAX_SAFE_INTEGER
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

const redis = await startRedis()
const client = new Redis(redis.port, '127.0.0.1', { enableOfflineQueue: false })
await new Promise((r) => client.once('ready', r))
console.log(`node ${process.version}, redis-server ${(await client.info('server')).match(/redis_version:(\S+)/)[1]} on 127.0.0.1:${redis.port}`)

/** ns per call of `calls` executes, 100 in flight. */
async function perCall(rx, calls) {
  const opts = { key: 'api', cost: { tokens: 1200 } }
  const fn = () => 1
  const batch = 100
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < calls; i += batch) {
    const ps = new Array(batch)
    for (let j = 0; j < batch; j++) ps[j] = rx.execute(fn, opts)
    await Promise.all(ps)
  }
  return Number(process.hrtime.bigint() - t0) / calls
}

if (parts.includes('cost')) {
  const quota = { requests: MAX, tokens: MAX }
  const local = new Resilix({ quota, initialLimit: 100 })
  const shared = new Resilix({ quota, initialLimit: 100, quotaStore: redisQuotaStore(client, { prefix: 'bench-cost' }) })
  const calls = Number(opt.calls)
  await perCall(local, calls / 4)
  await perCall(shared, calls / 4)
  const a = []
  const b = []
  for (let r = 0; r < Number(opt.rounds); r++) {
    a.push(await perCall(local, calls))
    b.push(await perCall(shared, calls))
  }
  const s = shared.stats('api').quota.store
  console.log('\ncost per call (median of rounds, ns)')
  console.log(`  local quota            ${median(a).toFixed(0)}`)
  console.log(`  quota shared in Redis  ${median(b).toFixed(0)}   (calls to Redis: ${s.leases} for ${(Number(opt.rounds) + 0.25) * calls} calls)`)
  const d = median(b) - median(a)
  console.log(`  added                  ${d.toFixed(0)} ns, ratio ${(median(b) / median(a)).toFixed(3)}   goal ≤ 50 ns: ${d <= 50 ? 'met' : 'NOT met'}`)
  local.close()
  shared.close()
}

/** Calls to Redis a second by one process over `ms`, offering `offer(rx)` meanwhile. */
async function redisRate(name, quota, offer, ms = 10_000) {
  const rx = new Resilix({ quota, quotaStore: redisQuotaStore(client, { prefix: `bench-ops-${name.replace(/\W/g, '')}` }), timeoutMs: 30_000 })
  await rx.execute(() => 1, { key: 'api' })
  const before = rx.stats('api').quota.store.leases
  let done = 0
  const stop = Date.now() + ms
  await offer(rx, stop, () => done++)
  const after = rx.stats('api').quota.store.leases
  console.log(`  ${name.padEnd(44)} ${((done / ms) * 1000).toFixed(0).padStart(8)} calls/s   ${(((after - before) / ms) * 1000).toFixed(2).padStart(6)} calls to Redis/s`)
  rx.close()
  return ((after - before) / ms) * 1000
}

if (parts.includes('ops')) {
  console.log('\ncalls to Redis per second, one process, a 60 s window   (goal ≤ 10 at any rate)')
  const rates = []
  rates.push(
    await redisRate('flat out, budget never exhausted', { requests: MAX, tokens: MAX }, async (rx, stop, count) => {
      const fn = () => 1
      while (Date.now() < stop) {
        const ps = []
        for (let j = 0; j < 100; j++) ps.push(rx.execute(fn, { key: 'api', cost: { tokens: 500 } }).then(count))
        await Promise.all(ps)
      }
    }),
  )
  /** `perSec` calls a second, open loop, in ticks of 10 ms. */
  const openLoop = (perSec, opts) => async (rx, stop, count) => {
    let due = 0
    while (Date.now() < stop) {
      for (due += perSec / 100; due >= 1; due--) rx.execute(() => 1, opts).then(count, () => {})
      await sleep(10)
    }
  }
  for (const perSec of [1000, 100]) {
    rates.push(await redisRate(`${perSec} calls/s, budget never exhausted`, { requests: MAX, tokens: MAX }, openLoop(perSec, { key: 'api', cost: { tokens: 500 } })))
  }
  // 1 000 offered in 10 s against 600 a minute: spent after 6 s, then calls wait and are refused.
  rates.push(await redisRate('100 calls/s offered, 600 requests a minute', { requests: 600 }, openLoop(100, { key: 'api', timeoutMs: 5_000 })))
  const worst = Math.max(...rates)
  console.log(`  most: ${worst.toFixed(2)} calls to Redis a second   goal ≤ 10: ${worst <= 10 ? 'met' : 'NOT met'}`)
}

if (parts.includes('peers')) {
  const WINDOW_MS = 6_000
  const quota = { requests: 500, tokens: 200_000, windowMs: WINDOW_MS }
  console.log(`\n4 processes, each offering 2 × the whole budget (${quota.tokens} tokens and ${quota.requests} requests per ${WINDOW_MS} ms), 24 s each`)
  for (const lib of ['resilix', 'bottleneck']) {
    const up = await startLlmUpstream(quota)
    await client.flushall()
    const reports = await runFleet({ n: 4, redis, upstream: up, quota, durationMs: 24_000, seed: 3, each: () => ({ lib }) })
    const s = await up.stats()
    const { from, to } = steadyPeriod(reports, WINDOW_MS)
    const used = budgetUsed(s, from, to)
    const sh = shares(reports, from, to)
    const errors = reports.reduce((a, p) => a + p.errorCount, 0)
    const refused = reports.reduce((a, p) => a + Object.values(p.refused).reduce((x, y) => x + y, 0), 0)
    console.log(
      `  ${lib.padEnd(11)} sent ${String(s.requests).padStart(5)}   429s ${String(s.rejected429).padStart(4)} (${((100 * s.rejected429) / Math.max(1, s.requests)).toFixed(1)} %)   ` +
        `budget used ${(100 * used).toFixed(1)} %   shares ${sh.map((x) => x.toFixed(2)).join(' ')}   refused locally ${refused}   errors ${errors}`,
    )
    await up.close()
  }
}

client.disconnect()
await redis.close()
