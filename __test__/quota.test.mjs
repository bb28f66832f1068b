// Quotas (ADR 1100, 1101) through execute() and acquire(): options and costs checked, the
// oversize refusal at once, waiting for budget, the deadline refusal, settled usage refunding,
// every retry paying, a 429's one cooldown, close() and abort of a waiter, and stats. Timing
// bounds are wide: a busy 2-core machine delays timers, it must not fail these.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix, RejectedError, isRejectedError } from '../index.js'
import { sleep } from './helpers.mjs'

const quiet = { breaker: false, throttle: false }

test('a quota is checked: shape, names, budgets, and a cost needs one', async () => {
  assert.throws(() => new Resilix({ quota: 5 }), /option quota must be an object/)
  assert.throws(() => new Resilix({ quota: [] }), /at least one budget/)
  assert.throws(() => new Resilix({ quota: { windowMs: 1000 } }), /must name at least one limit/)
  assert.throws(() => new Resilix({ quota: { tokens: 0 } }), RangeError)
  assert.throws(() => new Resilix({ quota: { tokens: 1.5 } }), /whole number of tokens/)
  assert.throws(() => new Resilix({ quota: { tokens: 10, windowMs: 0 } }), /quota.windowMs/)
  assert.throws(() => new Resilix({ quota: { 'x-y': 10 } }), /identifier/)
  assert.throws(() => new Resilix({ quota: { a: 1, b: 1, c: 1, d: 1, e: 1 } }), /at most 4/)
  assert.throws(() => new Resilix({ quota: { tokens: 10, pace: 'yes' } }), /quota.pace must be a boolean/)
  const plain = new Resilix()
  await assert.rejects(plain.execute(() => 1, { cost: { tokens: 5 } }), /cost needs a quota/)
  const rx = new Resilix({ quota: { requests: 5, tokens: 100 } })
  await assert.rejects(rx.execute(() => 1, { cost: { token: 5 } }), /cost.token is not a budget of this quota.*tokens/)
  await assert.rejects(rx.execute(() => 1, { cost: { tokens: -1 } }), RangeError)
  await assert.rejects(rx.execute(() => 1, { cost: 'many' }), /cost must be an object/)
  await assert.rejects(plain.execute((ctx) => ctx.charge({ tokens: 1 })), /charge\(usage\) needs a quota/)
  plain.close()
  rx.close()
})

test('a call costing more than a whole budget is refused at once, never sent, never retried', async () => {
  const rx = new Resilix({ ...quiet, quota: { tokens: 1000, windowMs: 60_000 }, retry: true })
  let ran = 0
  const t0 = performance.now()
  const err = await rx.execute(() => ran++, { cost: { tokens: 1001 } }).catch((e) => e)
  const ms = performance.now() - t0
  assert.ok(isRejectedError(err), String(err))
  assert.equal(err.reason, 'quota')
  assert.match(err.message, /costs 1001 tokens, more than the whole budget of 1000 tokens per 60000 ms/)
  assert.equal(ran, 0)
  assert.ok(ms < 50, `refused in ${ms} ms`) // the benchmark measures it properly
  assert.equal(rx.stats('default').rejections.quota, 1)
  assert.equal(rx.stats('default').quota.budgets[0].spent, 0)
  rx.close()
})

test('a call that does not fit waits for budget, in order, and runs when it comes back', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 2, windowMs: 300 } })
  const started = []
  const t0 = performance.now()
  const calls = [0, 1, 2, 3].map((i) => rx.execute(() => started.push([i, performance.now() - t0])))
  await sleep(30)
  assert.deepEqual(started.map(([i]) => i), [0, 1])
  assert.equal(rx.stats('default').quota.waiting, 2)
  await Promise.all(calls)
  assert.deepEqual(started.map(([i]) => i), [0, 1, 2, 3])
  // Freed a window and two of its buckets after the first two: never before 300 ms.
  assert.ok(started[2][1] >= 300, `the third started at ${started[2][1]} ms`)
  assert.ok(started[2][1] < 2000, `the third started at ${started[2][1]} ms`)
  assert.equal(rx.stats('default').quota.waiting, 0)
  rx.close()
})

test('a call that could not fit before its deadline is refused at once, not timed out', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 5000 } })
  await rx.execute(() => 1)
  const t0 = performance.now()
  const err = await rx.execute(() => 1, { timeoutMs: 1000 }).catch((e) => e)
  assert.ok(err instanceof RejectedError, String(err))
  assert.equal(err.reason, 'quota')
  assert.match(err.message, /before its deadline/)
  assert.ok(performance.now() - t0 < 500)
  rx.close()
})

test('settled usage below the estimate lets a waiting call through at once', async () => {
  const rx = new Resilix({ ...quiet, quota: { tokens: 100, windowMs: 5000 } })
  let bStarted = 0
  const t0 = performance.now()
  const a = rx.execute(async (ctx) => {
    await sleep(50)
    ctx.charge({ tokens: 10 })
  }, { cost: { tokens: 100 } })
  const b = rx.execute(() => (bStarted = performance.now() - t0), { cost: { tokens: 80 } })
  await Promise.all([a, b])
  assert.ok(bStarted >= 40 && bStarted < 1500, `b started at ${bStarted} ms, not at the window's end (5 s)`)
  assert.equal(rx.stats('default').quota.budgets[0].spent, 90)
  // A usage above the estimate charges the difference; after the call settled too.
  let ctxOf
  await rx.execute((ctx) => (ctxOf = ctx), { cost: { tokens: 1 } })
  ctxOf.charge({ tokens: 6 })
  assert.equal(rx.stats('default').quota.budgets[0].spent, 96)
  assert.throws(() => ctxOf.charge({ tokens: Infinity }), RangeError)
  assert.throws(() => ctxOf.charge({ words: 1 }), /words is not a budget/)
  rx.close()
})

test('every attempt of a retrying call pays the quota', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 10, tokens: 1000 }, retry: { attempts: 3, baseMs: 1, maxDelayMs: 2 } })
  let n = 0
  const r = await rx.execute(() => ({ status: 500, n: ++n }), { cost: { tokens: 100 } })
  assert.equal(r.n, 3)
  const [req, tok] = rx.stats('default').quota.budgets
  assert.deepEqual([req.spent, tok.spent], [3, 300])
  rx.close()
})

test("a 429 cools the key down once, for calls in flight and waiting alike", async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 100, windowMs: 1000, pace: true } })
  const refused = () => ({ status: 429, headers: new Headers({ 'retry-after-ms': '400' }) })
  // Three calls in flight all meet the refusal.
  await Promise.all([0, 1, 2].map(() => rx.execute(async () => {
    await sleep(5)
    return refused()
  })))
  let q = rx.stats('default').quota
  assert.equal(q.cooldowns, 1)
  assert.ok(q.coolingMs > 200 && q.coolingMs <= 400, `cooling ${q.coolingMs} ms`)
  const t0 = performance.now()
  await rx.execute(() => 1)
  assert.ok(performance.now() - t0 >= 300, 'the next call waited for the cooldown')
  // Headers read from an undici-style plain object too: none left, one back in 300 ms.
  const head = { 'x-ratelimit-limit-requests': '1', 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '300ms' }
  await rx.execute(() => ({ statusCode: 200, headers: head }))
  const t1 = performance.now()
  await rx.execute(() => 1)
  assert.ok(performance.now() - t1 >= 150, 'the upstream said none were left')
  q = rx.stats('default').quota
  assert.equal(q.cooldowns, 1)
  rx.close()
})

test('a waiter for budget leaves on abort and on close, and nothing is left waiting', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 60_000 } })
  await rx.execute(() => 1)
  const ac = new AbortController()
  const aborted = rx.execute(() => 1, { signal: ac.signal })
  const closed = rx.execute(() => 1)
  await sleep(5)
  assert.equal(rx.stats('default').quota.waiting, 2)
  ac.abort(new Error('gone'))
  await assert.rejects(aborted, /gone/)
  assert.equal(rx.stats('default').quota.waiting, 1)
  rx.close()
  await assert.rejects(closed, (e) => e.code === 'ERR_RESILIX_CLOSED')
})

test('acquire() takes a cost and its permit settles the usage', async () => {
  const rx = new Resilix({ ...quiet, quota: { tokens: 1000 } })
  const p = await rx.acquire('llm', { cost: { tokens: 400 } })
  p.release()
  p.charge({ tokens: 150 })
  const q = rx.stats('llm').quota
  assert.deepEqual(q.budgets, [{ name: 'tokens', windowMs: 60_000, limit: 1000, spent: 150 }])
  const big = await rx.acquire({ key: 'llm', cost: { tokens: 5000 } }).catch((e) => e)
  assert.equal(big.reason, 'quota')
  rx.close()
})

test('a call admitted at once with a quota and no deadline runs on the plain path with its cost', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 5 } })
  const v = await rx.execute((ctx) => {
    ctx.charge({ requests: 1 })
    return 7
  })
  assert.equal(v, 7)
  assert.equal(rx.stats('default').quota.budgets[0].spent, 1)
  rx.close()
})

test('soak: 6 000 calls with random costs, deadlines, aborts, usage and retries leave nothing waiting or charged', async () => {
  const { prng } = await import('./fixtures/prng.mjs')
  const rand = prng(11)
  const rx = new Resilix({ ...quiet, seed: 3, quota: { requests: 400, tokens: 40_000, windowMs: 200 } })
  const calls = []
  for (let i = 0; i < 6_000; i++) {
    const r = rand()
    const ac = r < 0.1 ? new AbortController() : undefined
    const opts = {
      key: r < 0.5 ? 'a' : 'b',
      cost: { tokens: Math.floor(rand() * 1500) },
      timeoutMs: rand() < 0.3 ? 1 + Math.floor(rand() * 300) : undefined,
      signal: ac?.signal,
      priority: rand() < 0.2 ? 'critical' : undefined,
      retry: rand() < 0.1 ? { attempts: 2, baseMs: 1, maxDelayMs: 2 } : undefined,
    }
    const used = Math.floor(rand() * 1000)
    const fail = rand() < 0.05
    calls.push(
      rx
        .execute(async (ctx) => {
          await sleep(rand() * 3)
          ctx.charge({ tokens: used })
          return fail ? { status: 503 } : 1
        }, opts)
        .catch(() => {}),
    )
    if (ac !== undefined) setTimeout(() => ac.abort(new Error('gone')), rand() * 50)
    if (i % 500 === 0) await sleep(1)
  }
  await Promise.all(calls)
  for (const key of ['a', 'b']) {
    const s = rx.stats(key)
    assert.equal(s.inflight, 0, `${key}: inflight`)
    assert.equal(s.queued, 0, `${key}: queued`)
    assert.equal(s.quota.waiting, 0, `${key}: waiting for budget`)
  }
  // Two windows later every charge has left the window: none was lost or doubled for good.
  await sleep(500)
  for (const key of ['a', 'b']) {
    assert.deepEqual(rx.stats(key).quota.budgets.map((b) => b.spent), [0, 0], key)
  }
  rx.close()
})

test('a critical call waiting for budget goes before normal ones that waited longer', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 300 } })
  await rx.execute(() => 0)
  const order = []
  const normal = [1, 2].map((i) => rx.execute(() => order.push(`normal${i}`)))
  await sleep(5)
  const critical = rx.execute(() => order.push('critical'), { priority: 'critical' })
  await Promise.all([...normal, critical])
  assert.deepEqual(order, ['critical', 'normal1', 'normal2'])
  rx.close()
})

test('a retrying call waits for budget like any call, with or without a deadline per attempt', async () => {
  const rx = new Resilix({ ...quiet, quota: { requests: 1, windowMs: 200 } })
  await rx.execute(() => 0)
  assert.equal(await rx.execute(() => 'waited', { retry: true }), 'waited')
  assert.equal(await rx.execute(() => 'per attempt', { retry: { attemptTimeoutMs: 1000 }, timeoutMs: 2000 }), 'per attempt')
  assert.equal(rx.stats('default').quota.waiting, 0)
  rx.close()
})

test('several budgets at once: per short window and per long window, the tighter one holds', async () => {
  const rx = new Resilix({ ...quiet, quota: [{ requests: 2, windowMs: 150 }, { requests: 3, windowMs: 1500 }] })
  const t0 = performance.now()
  const at = []
  await Promise.all([0, 1, 2, 3].map(() => rx.execute(() => at.push(performance.now() - t0))))
  at.sort((a, b) => a - b)
  assert.ok(at[1] < 100, `two at once: ${at}`)
  assert.ok(at[2] >= 150 && at[2] < 1000, `the third after the short window: ${at}`)
  assert.ok(at[3] >= 1500, `the fourth after the long window: ${at}`)
  const b = rx.stats('default').quota.budgets
  assert.deepEqual(b.map((x) => [x.name, x.windowMs, x.limit]), [['requests', 150, 2], ['requests', 1500, 3]])
  rx.close()
})
