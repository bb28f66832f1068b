// Misbehaving fns. Each case runs on the three paths a call can take: plain (no
// deadline, no signal), guarded (a deadline) and woken from the queue (fn starts inside a
// settle). The caller gets exactly what fn did, and the accounting is exact afterwards.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isTimeoutError } from '../index.js'
import { fixed, deferred, sleep, keepAlive } from './helpers.mjs'

const PATHS = ['plain', 'guarded', 'queued']

/** Runs fn on `path`; returns { outcome, rx }. */
async function runOn(path, fn) {
  const rx = fixed(1)
  let blocker
  if (path === 'queued') {
    const d = deferred()
    blocker = { p: rx.execute(() => d.promise, { key: 'k' }), release: d.resolve }
  }
  const opts = path === 'plain' ? { key: 'k' } : { key: 'k', timeoutMs: 60_000 }
  const p = rx.execute(fn, opts)
  if (blocker) {
    assert.equal(rx.stats('k').queued, 1)
    blocker.release()
    await blocker.p
  }
  const outcome = await p.then((v) => ({ ok: true, v }), (e) => ({ ok: false, e }))
  await sleep(0)
  return { outcome, rx }
}

function exact(rx, expect) {
  const s = rx.stats('k')
  assert.equal(s.inflight, 0, 'inflight')
  assert.equal(s.queued, 0, 'queued')
  for (const [verdict, n] of Object.entries(expect)) assert.equal(s.verdicts[verdict], n, verdict)
}

const cases = [
  ['throws an Error synchronously', () => { throw new Error('sync') }, (o) => !o.ok && o.e.message === 'sync', { failure: 1 }],
  ['throws null synchronously', () => { throw null }, (o) => !o.ok && o.e === null, { failure: 1 }],
  ['returns a non-promise', () => 42, (o) => o.ok && o.v === 42, { success: 1 }],
  ['returns undefined', () => {}, (o) => o.ok && o.v === undefined, { success: 1 }],
  ['rejects with undefined', () => Promise.reject(undefined), (o) => !o.ok && o.e === undefined, { failure: 1 }],
  ['rejects with a string', async () => { throw 'just a string' }, (o) => !o.ok && o.e === 'just a string', { failure: 1 }],
  ['returns a thenable whose then throws', () => ({ then() { throw new Error('then threw') } }), (o) => !o.ok && o.e.message === 'then threw', { failure: 1 }],
  ['returns an object whose then getter throws', () => ({ get then() { throw new Error('getter threw') } }), (o) => !o.ok && o.e.message === 'getter threw', { failure: 1 }],
  ['returns a thenable that calls back three times', () => ({ then(a, b) { a('first'); b(new Error('second')); a('third') } }), (o) => o.ok && o.v === 'first', { success: 1, failure: 0 }],
  ['returns a thenable that resolves then throws', () => ({ then(a) { a('first'); throw new Error('late') } }), (o) => o.ok && o.v === 'first', { success: 1, failure: 0 }],
  ['marks, then throws', (ctx) => { ctx.mark(); throw new Error('after mark') }, (o) => !o.ok && o.e.message === 'after mark', { failure: 1 }],
  ['passes mark as a callback, then rejects', async (ctx) => { setTimeout(ctx.mark, 0); await sleep(5); throw new Error('x') }, (o) => !o.ok, { failure: 1 }],
  ['calls mark unbound and on another this', (ctx) => { const m = ctx.mark; m(); m.call({}); return 'ok' }, (o) => o.ok && o.v === 'ok', { success: 1 }],
]

for (const path of PATHS) {
  for (const [name, fn, check, verdicts] of cases) {
    test(`misbehaving fn (${path}): ${name}`, async () => {
      const { outcome, rx } = await runOn(path, fn)
      assert.ok(check(outcome), `outcome ${JSON.stringify(outcome, (k, v) => (v instanceof Error ? v.message : v))}`)
      exact(rx, { ...verdicts, success: (verdicts.success ?? 0) + (path === 'queued' ? 1 : 0) })
    })
  }
}

test('misbehaving fn: mark() timing survives a throw (latency = start → mark)', async () => {
  const rx = fixed(1)
  await rx.execute(async (ctx) => {
    ctx.mark()
    await sleep(120)
    throw new Error('after a long tail')
  }, { key: 'k', timeoutMs: 60_000 }).catch(() => {})
  assert.ok(rx.stats('k').lastLatencyMs < 80, `latency ${rx.stats('k').lastLatencyMs}`)
  // mark() after the call settled is a no-op, even through a kept reference.
  let kept
  await rx.execute((ctx) => { kept = ctx.mark }, { key: 'k' })
  kept()
  kept()
  assert.equal(rx.stats('k').inflight, 0)
})

test('misbehaving fn: never settles — TimeoutError for the caller, the slot stays held (until released as stuck, lifetimes.test.mjs)', async () => {
  const rx = fixed(2)
  const stop = keepAlive()
  const errs = await Promise.all([
    rx.execute(() => new Promise(() => {}), { key: 'k', timeoutMs: 20 }).catch((e) => e),
    rx.execute(() => ({ then() {} }), { key: 'k', timeoutMs: 20 }).catch((e) => e),
  ])
  stop()
  for (const e of errs) assert.ok(isTimeoutError(e) && e.queued === false)
  const s = rx.stats('k')
  assert.equal(s.inflight, 2, 'a fn that never settles is still load on the upstream')
  assert.equal(s.verdicts.timeout, 0, 'no verdict until it settles')
})

test('misbehaving fn: settles after its deadline — the caller already has TimeoutError; verdict timeout', async () => {
  const rx = fixed(4)
  const stop = keepAlive()
  const late = [deferred(), deferred(), deferred()]
  const ps = [
    rx.execute(() => late[0].promise, { key: 'k', timeoutMs: 15 }),
    rx.execute(() => late[1].promise, { key: 'k', timeoutMs: 15 }),
    rx.execute(() => late[2].promise, { key: 'k', timeoutMs: 15 }),
  ].map((p) => p.then((v) => ({ ok: true, v }), (e) => ({ ok: false, e })))
  const outs = await Promise.all(ps)
  stop()
  for (const o of outs) assert.ok(!o.ok && isTimeoutError(o.e))
  assert.equal(rx.stats('k').inflight, 3)
  late[0].resolve('late value')
  late[1].reject(new Error('late error'))
  late[2].resolve({ status: 200 })
  await sleep(1)
  const s = rx.stats('k')
  assert.equal(s.inflight, 0)
  assert.equal(s.verdicts.timeout, 3)
  assert.equal(s.verdicts.success + s.verdicts.failure, 0)
})

const deepQueue = { queue: { initialFactor: 20, maxFactor: 30 } }

test('misbehaving fn: a throw inside a woken fn does not stop the queue', async () => {
  const rx = fixed(1, deepQueue)
  const d = deferred()
  const first = rx.execute(() => d.promise, { key: 'k' })
  const order = []
  const ps = []
  for (let i = 0; i < 5; i++) {
    ps.push(rx.execute(() => {
      order.push(i)
      if (i % 2 === 0) throw new Error(`sync ${i}`)
      return i
    }, { key: 'k' }).catch((e) => e.message))
  }
  assert.equal(rx.stats('k').queued, 5)
  d.resolve()
  await first
  const outs = await Promise.all(ps)
  assert.deepEqual(order, [0, 1, 2, 3, 4])
  assert.deepEqual(outs, ['sync 0', 1, 'sync 2', 3, 'sync 4'])
  exact(rx, { failure: 3, success: 3 })
})

test('misbehaving fn: re-entrant execute from inside a woken fn keeps FIFO and accounting', async () => {
  const rx = fixed(1, deepQueue)
  const d = deferred()
  const first = rx.execute(() => d.promise, { key: 'k' })
  const order = []
  const inner = []
  const ps = []
  for (let i = 0; i < 3; i++) {
    ps.push(rx.execute(() => {
      order.push(`w${i}`)
      // Queued behind the others already waiting, not ahead of them.
      inner.push(rx.execute(() => { order.push(`inner${i}`) }, { key: 'k' }))
    }, { key: 'k' }))
  }
  d.resolve()
  await first
  await Promise.all(ps)
  await Promise.all(inner)
  assert.deepEqual(order, ['w0', 'w1', 'w2', 'inner0', 'inner1', 'inner2'])
  exact(rx, { success: 7 })
})

test('misbehaving classify: throwing or unknown verdicts reject with a clear error on every path', async () => {
  for (const path of PATHS) {
    for (const [classify, pattern] of [
      [() => { throw new Error('classify bug') }, /classify bug/],
      [() => 'great', /classify returned/],
      [() => 42, /classify returned/],
    ]) {
      for (const fn of [async () => 'v', async () => { throw new Error('fn error') }]) {
        const rx = fixed(1, { classify })
        let blocker
        if (path === 'queued') {
          const d = deferred()
          blocker = { p: rx.execute(() => d.promise, { key: 'k' }).catch(() => {}), release: d.resolve }
        }
        const p = rx.execute(fn, path === 'plain' ? { key: 'k' } : { key: 'k', timeoutMs: 60_000 })
        if (blocker) {
          blocker.release()
          await blocker.p
        }
        await assert.rejects(p, pattern, `${path}`)
        assert.equal(rx.stats('k').inflight, 0)
      }
    }
  }
})
