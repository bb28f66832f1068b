// A fleet sharing one quota through a real Redis (redis-server from the system package, on a
// free loopback port), against the mock LLM API that enforces 500 requests and 200 000 tokens
// per window as OpenAI does, its window scaled from a minute to 3 s. Every process is its own
// Node process with its own Resilix and Redis client, started 0–2 s apart, each offering twice
// the whole quota. Goals: no 429 at all; at least 90 % of the budget used; shares within
// 0.7–1.3 × the mean; an idle process's share taken by the others within a window; Redis
// killed or paused: no call hangs or errors, the fleet stays within 1.25 × the quota, and it
// shares through Redis again afterwards. Each run prints its figures.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { startRedis } from './fixtures/redis-server.mjs'
import { startLlmUpstream } from './fixtures/llm-upstream.mjs'
import { runFleet, budgetUsed, shares, steadyPeriod, peakSpend } from './fixtures/fleet.mjs'

const WINDOW_MS = 3_000
const quota = { requests: 500, tokens: 200_000, windowMs: WINDOW_MS }
const DEADLINE_MS = 2 * WINDOW_MS // each process's timeoutMs
let redis

before(async () => {
  redis = await startRedis()
})
after(async () => {
  await redis?.close()
})

function report(name, s, reports, extra = {}) {
  const errors = reports.reduce((a, p) => a + p.errorCount, 0)
  const line = {
    processes: reports.length, sent: s.requests, '429': s.rejected429, errors, maxTokensInWindow: s.maxTokensInWindow,
    slowestMs: Math.max(...reports.map((p) => p.slowestMs)), storeCalls: reports.map((p) => p.store.leases), ...extra,
  }
  console.log(`# ${name}: ${JSON.stringify(line)}`)
  return errors
}

async function fairFleet(n, clients) {
  const up = await startLlmUpstream(quota)
  try {
    const reports = await runFleet({ n, redis, upstream: up, quota, durationMs: 16_000, seed: n, each: (i) => ({ client: clients(i) }) })
    const s = await up.stats()
    const { from, to } = steadyPeriod(reports, WINDOW_MS)
    const used = budgetUsed(s, from, to)
    const sh = shares(reports, from, to)
    const errors = report(`${n} processes`, s, reports, { used: used.toFixed(3), shares: sh.map((x) => x.toFixed(2)).join(' ') })
    assert.equal(s.rejected429, 0, 'the upstream refused no call')
    assert.equal(errors, 0, reports.flatMap((p) => p.errors)[0])
    assert.ok(used >= 0.9, `the fleet used ${used} of the budget`)
    for (const x of sh) assert.ok(x >= 0.7 && x <= 1.3, `shares ${sh}`)
    for (const p of reports) assert.equal(p.store.state, 'leased')
  } finally {
    await up.close()
  }
}

test('4 processes (ioredis): no 429, at least 90 % of the budget, fair shares', async () => {
  await fairFleet(4, () => 'ioredis')
})

test('8 processes, half on ioredis and half on node-redis: no 429, at least 90 % of the budget, fair shares', async () => {
  await fairFleet(8, (i) => (i % 2 === 0 ? 'ioredis' : 'node-redis'))
})

test('a process that goes idle gives its share to the others within a window', async () => {
  const up = await startLlmUpstream(quota)
  try {
    const idleAfterMs = 7_000
    const reports = await runFleet({ n: 4, redis, upstream: up, quota, durationMs: 15_000, seed: 5, each: (i) => (i === 0 ? { idleAfterMs } : {}) })
    const s = await up.stats()
    const idleAt = reports[0].offerEnd
    const others = reports.slice(1)
    const to = Math.min(...others.map((p) => p.offerEnd))
    // From one window after it went idle, the three others use the whole budget between them.
    const used = budgetUsed(s, idleAt + WINDOW_MS, to)
    const before = shares(reports, steadyPeriod(reports, WINDOW_MS).from, idleAt)
    // What the four used before, on this machine: a busy one lowers both.
    const usedBefore = budgetUsed(s, steadyPeriod(reports, WINDOW_MS).from, idleAt)
    const errors = report('one goes idle', s, reports, {
      usedBeforeIdle: usedBefore.toFixed(3), usedAfterIdle: used.toFixed(3), sharesBefore: before.map((x) => x.toFixed(2)).join(' '),
    })
    assert.equal(s.rejected429, 0)
    assert.equal(errors, 0, reports.flatMap((p) => p.errors)[0])
    // Had the idle one kept its share, the three others could use 0.75 of the budget at most;
    // 0.85 lies between that and what they use with it (0.89-0.97 here, lower as the machine is
    // busier: the calls they offer are late then too).
    assert.ok(used >= 0.85, `after the idle one's window, the others used ${used} of the budget`)
    assert.ok(before[0] >= 0.7, `the idle one had its share before: ${before}`)
  } finally {
    await up.close()
  }
})

/**
 * A fleet before it has reached Redis: the upstream counts without refusing (10 × the quota),
 * and the most the fleet spent in any window, as a multiple of the budget, is judged against
 * the bound the README states for a fleet without Redis (ADR 1105). Spent as the processes
 * admitted it: the upstream's own count also holds calls that a loaded machine delivered late,
 * after their charge left the window (printed beside it).
 */
async function unreachedFleet(name, { n, redisOf, durationMs, each }) {
  const up = await startLlmUpstream({ requests: quota.requests * 10, tokens: quota.tokens * 10, windowMs: WINDOW_MS })
  try {
    const reports = await runFleet({ n, redis: redisOf, upstream: up, quota, durationMs, staggerMs: 0, seed: 11, each })
    const s = await up.stats()
    const peak = peakSpend(reports, quota)
    const atUpstream = Math.max(s.maxTokensInWindow / quota.tokens, s.maxRequestsInWindow / quota.requests)
    const admitted = reports.map((p) => p.admitted.length)
    const errors = report(name, s, reports, {
      peakOfBudget: peak.toFixed(3), atUpstream: atUpstream.toFixed(3), admitted: admitted.join(' '), connectMs: reports.map((p) => p.connectMs).join(' '), lastError: reports[0].store.lastError,
    })
    assert.equal(errors, 0, reports.flatMap((p) => p.errors)[0])
    assert.ok(peak <= 1.25, `the fleet spent ${peak.toFixed(3)} × the budget in one window`)
    return { reports, peak, admitted }
  } finally {
    await up.close()
  }
}

test('4 processes calling as soon as they are created, their clients still connecting: within the budget from the first call', async () => {
  const { reports } = await unreachedFleet('calling while connecting', { n: 4, redisOf: redis, durationMs: 2 * WINDOW_MS, each: () => ({ eager: true }) })
  // They waited for their clients, then leased: the fleet's window in Redis counted every call
  // (0.997-0.999 here); a lease slower than timeoutMs on a loaded machine falls back to ADR
  // 1102's share, which the bound above allows for (1.068 once at load 14).
  for (const p of reports) {
    // A client slower to connect than the wait refuses until it is (never a guessed share); a
    // lease slower than timeoutMs later on falls back to the share ADR 1102 gives.
    assert.equal(p.store.state, 'leased', `events ${p.events.map(([, e]) => e)}`)
    assert.ok(p.admitted.length > 0)
  }
})

test('3 processes against a Redis that needs a password they lack: within the budget, and the error is NOAUTH', async () => {
  const locked = await startRedis({ password: 'not-given' })
  try {
    // Told nothing of the fleet, they refuse rather than each spend the whole budget.
    const refusing = await unreachedFleet('no password', { n: 3, redisOf: locked, durationMs: WINDOW_MS, each: () => ({ eager: true }) })
    assert.deepEqual(refusing.admitted, [0, 0, 0])
    // Told the fleet's size, each keeps to an equal share.
    const sharing = await unreachedFleet('no password, processes: 3', { n: 3, redisOf: locked, durationMs: 2 * WINDOW_MS, each: () => ({ eager: true, processes: 3 }) })
    // Equal shares sum to the budget (0.991-0.996 here); a stall between a call's charge and its
    // fn starting moves its recorded time a little.
    assert.ok(sharing.peak <= 1.05, `${sharing.peak.toFixed(3)} × the budget`)
    for (const p of [...refusing.reports, ...sharing.reports]) {
      assert.match(p.store.lastError, /NOAUTH Authentication required/)
      assert.equal(p.store.state, p.events[0][1])
    }
  } finally {
    await locked.close()
  }
})

/**
 * The upstream enforces 1.25 × the quota the fleet is given, so that no 429 means the fleet
 * stayed within 1.25 × while Redis was away. `fault(redis)` runs 6 s after the start.
 */
async function faultyFleet(name, fault) {
  const up = await startLlmUpstream({ requests: quota.requests * 1.25, tokens: quota.tokens * 1.25, windowMs: WINDOW_MS })
  try {
    const run = runFleet({ n: 4, redis, upstream: up, quota, durationMs: 16_000, staggerMs: 1_000, seed: 9 })
    await new Promise((r) => setTimeout(r, 6_000))
    const faultAt = Date.now()
    await fault(redis)
    const reports = await run
    const s = await up.stats()
    const stalls = reports.map((p) => p.stalls.filter(([t]) => t > faultAt - 1_000).reduce((a, [, ms]) => Math.max(a, ms), 0))
    const errors = report(name, s, reports, { events: reports.map((p) => p.events.map(([t, e]) => `${e}@${t - faultAt}`).join(',')).join(' | '), longestStallMs: stalls.join(' ') })
    assert.equal(s.rejected429, 0, 'within 1.25 × the quota throughout')
    assert.equal(errors, 0, reports.flatMap((p) => p.errors)[0])
    for (const p of reports) {
      // Nothing hung on Redis: every call was answered within its deadline (and a little).
      assert.ok(p.slowestMs <= DEADLINE_MS + 250, `a call took ${p.slowestMs} ms`)
      const states = p.events.map(([, e]) => e)
      assert.deepEqual(states.slice(0, 1), ['fallback'], `events ${states}`)
      assert.equal(states.at(-1), 'leased', `shares through Redis again: ${states}`)
      assert.equal(p.store.state, 'leased')
      // It fell back within a second of the fault, of the time it ran: a loaded machine that
      // did not run the process (its stalls) delays every timer of it, the store's too.
      const after = p.events[0][0] - faultAt
      const stalled = p.stalls.filter(([t]) => t > faultAt && t <= p.events[0][0] + 100).reduce((a, [, ms]) => a + ms, 0)
      assert.ok(after - stalled <= 1_000 + 250, `fell back ${after} ms after, ${stalled} ms of it stalled`)
    }
    return reports
  } finally {
    await up.close()
  }
}

test('Redis killed mid-run and restarted: no call hangs or errors, within 1.25 × the quota, leased again after', async () => {
  await faultyFleet('Redis killed for 4 s', async (r) => {
    await r.kill()
    await new Promise((res) => setTimeout(res, 4_000))
    await r.restart()
  })
})

test('Redis paused (SIGSTOP) for 3 s: nothing waits on it beyond its timeout, within 1.25 × the quota', async () => {
  await faultyFleet('Redis paused for 3 s', async (r) => {
    r.pause()
    await new Promise((res) => setTimeout(res, 3_000))
    r.resume()
  })
})
