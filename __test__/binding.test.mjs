// The binding under bad input, called directly (native.js), and a forced panic.
// Contract (src/binding/codes.rs): hot-path functions never throw for a bad number; they return
// a negative code (STALE_HANDLE, STALE_PERMIT, BAD_VERDICT) and change nothing. A value
// of the wrong JS type is a thrown Error (code NumberExpected / StringExpected). Neither ever
// crashes the process or corrupts an engine's accounting.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { createRequire } from 'node:module'
import { Resilix } from '../index.js'

const require = createRequire(import.meta.url)
const native = require('../native.js')

const { STALE_HANDLE, STALE_PERMIT, BAD_VERDICT } = require('../lib/native.js')
const BAD_NUMBERS = [NaN, Infinity, -Infinity, -1, -0.5, 1.5, 1e300, 2 ** 53, Number.MAX_VALUE, -Number.MAX_VALUE]
const WRONG_TYPES = ['1', null, undefined, {}, [], 10n, true, () => 1, Symbol('s')]

function engine(opts = { algorithm: 'fixed', initialLimit: 2 }) {
  const id = native.createEngine(opts, 1)
  const h = native.resolveKey(id, 'k')
  return { id, h, stats: () => native.stats(id, 'k') }
}

const accounting = (s) => ({ inflight: s.inflight, queued: s.queued, verdicts: s.verdicts, rejections: s.rejections })

test('binding: bad numbers as handle or permit are a negative code and change nothing', () => {
  const e = engine()
  const p = native.acquire(e.h)
  assert.ok(p >= 0)
  const before = accounting(e.stats())
  for (const x of BAD_NUMBERS) {
    const what = String(x)
    assert.equal(native.acquire(x), STALE_HANDLE, `acquire(${what})`)
    assert.equal(native.admitQueued(x, 0), STALE_HANDLE, `admitQueued(${what}, 0)`)
    assert.equal(native.leaveQueue(x), STALE_HANDLE, `leaveQueue(${what})`)
    assert.equal(native.observe(x), STALE_HANDLE, `observe(${what})`)
    assert.equal(native.mark(x, p), STALE_HANDLE, `mark(${what}, p)`)
    assert.equal(native.settle(x, p, 0), STALE_HANDLE, `settle(${what}, p)`)
    if (x !== 0) {
      assert.equal(native.mark(e.h, x), STALE_PERMIT, `mark(h, ${what})`)
      assert.equal(native.settle(e.h, x, 0), STALE_PERMIT, `settle(h, ${what})`)
    }
  }
  assert.deepEqual(accounting(e.stats()), before)
  assert.ok(native.settle(e.h, p, 0) >= 0, 'the real permit still settles')
  assert.equal(e.stats().inflight, 0)
  native.destroyEngine(e.id)
})

test('binding: wrong JS types are a clear thrown error, never a crash', () => {
  const e = engine()
  for (const x of WRONG_TYPES) {
    const calls = [
      () => native.acquire(x),
      () => native.admitQueued(x, 0),
      () => native.admitQueued(e.h, x),
      () => native.leaveQueue(x),
      () => native.observe(x),
      () => native.mark(e.h, x),
      () => native.settle(e.h, x, 0),
      () => native.settle(e.h, 0, x),
      () => native.resolveKey(x, 'k'),
      () => native.resolveKey(e.id, x),
      () => native.stats(x, 'k'),
      () => native.stats(e.id, x),
      () => native.keys(x),
      () => native.createEngine({ initialLimit: x }),
    ]
    for (const f of calls) {
      if (x === undefined && /createEngine/.test(f.toString())) continue // undefined = option absent
      if (typeof x === 'string' && /, x\)$/.test(f.toString()) && /resolveKey|stats/.test(f.toString())) continue // a key
      assert.throws(f, (err) => err instanceof Error && /Expected$/.test(err.code) && /convert/.test(err.message), f.toString())
    }
  }
  // napi reads a primitive as an object with no properties: an engine with the defaults. The
  // public constructor refuses it (TypeError) before it reaches the binding.
  for (const o of ['str', 5, true]) {
    const id = native.createEngine(o)
    assert.equal(native.stats(id, 'x'), null)
    native.destroyEngine(id)
    assert.throws(() => new Resilix(o), TypeError)
  }
  assert.throws(() => native.createEngine(null), /convert undefined or null/)
  assert.throws(() => native.createEngine({ algorithm: 42 }), /String/)
  assert.equal(e.stats().inflight, 0)
  native.destroyEngine(e.id)
})

test('binding: bad option values are RangeErrors naming the option (through the public API)', () => {
  for (const v of [NaN, Infinity, -Infinity, -1, 1.5, 1e300]) {
    assert.throws(() => new Resilix({ initialLimit: v }), (err) => err instanceof RangeError && /initialLimit/.test(err.message), String(v))
    assert.throws(() => new Resilix({ breaker: { openMs: v } }), (err) => err instanceof RangeError && /openMs/.test(err.message), String(v))
    assert.throws(() => new Resilix({ bulkhead: { maxConcurrent: v } }), (err) => err instanceof RangeError && /maxConcurrent/.test(err.message), String(v))
    if (v !== 1.5) assert.throws(() => new Resilix({ timeoutMs: v }), (err) => err instanceof RangeError && /timeoutMs/.test(err.message), String(v))
    assert.throws(() => new Resilix({ seed: v }), (err) => err instanceof RangeError && /seed/.test(err.message), String(v))
  }
})

test('binding: unknown verdict codes are refused and the permit stays live', () => {
  const e = engine()
  const p = native.acquire(e.h)
  // 7, past the verdicts, is settle's code for a 503 without Retry-After (ADR 1004).
  for (const v of [8, 99, 2 ** 31, 2 ** 32 - 1, -1]) {
    assert.equal(native.settle(e.h, p, v), BAD_VERDICT, `verdict ${v}`)
    assert.equal(e.stats().inflight, 1)
  }
  assert.ok(native.settle(e.h, p, 2) >= 0)
  assert.equal(e.stats().verdicts.overload, 1)
  assert.equal(e.stats().inflight, 0)
  native.destroyEngine(e.id)
})

test('binding: double, stale and never-issued permits are STALE_PERMIT and change nothing', () => {
  const e = engine({ algorithm: 'fixed', initialLimit: 4 })
  const a = native.acquire(e.h)
  const b = native.acquire(e.h)
  assert.ok(native.settle(e.h, a, 0) >= 0)
  const before = accounting(e.stats())
  assert.equal(native.settle(e.h, a, 0), STALE_PERMIT, 'double settle')
  assert.equal(native.mark(e.h, a), STALE_PERMIT, 'mark after settle')
  // The slot of `a` is reused by the next permit: the old id must not settle the new call.
  const c = native.acquire(e.h)
  assert.notEqual(c, a, 'a reused slot gets a new generation')
  assert.equal(native.settle(e.h, a, 1), STALE_PERMIT, 'stale permit of a reused slot')
  assert.equal(native.settle(e.h, 123456, 0), STALE_PERMIT, 'never issued')
  assert.deepEqual(accounting(e.stats()).verdicts, before.verdicts)
  assert.equal(e.stats().inflight, 2)
  assert.ok(native.settle(e.h, b, 0) >= 0)
  assert.ok(native.settle(e.h, c, 0) >= 0)
  assert.equal(e.stats().inflight, 0)
  // leaveQueue with nobody waiting is a no-op (0), never a negative count.
  assert.equal(native.leaveQueue(e.h), 0)
  assert.equal(e.stats().queued, 0)
  native.destroyEngine(e.id)
})

test('binding: a handle of an evicted key is STALE_HANDLE, never another key', () => {
  const id = native.createEngine({ algorithm: 'fixed', maxKeys: 1 }, 1)
  const h1 = native.resolveKey(id, 'one')
  const h2 = native.resolveKey(id, 'two') // evicts 'one' (idle) and reuses its slot
  assert.notEqual(h1, h2)
  assert.equal(native.acquire(h1), STALE_HANDLE)
  assert.equal(native.leaveQueue(h1), STALE_HANDLE)
  assert.equal(native.settle(h1, 0, 0), STALE_HANDLE)
  assert.equal(native.stats(id, 'two').inflight, 0)
  assert.deepEqual(native.keys(id), ['two'])
  native.destroyEngine(id)
  // A destroyed engine: hot path says STALE_HANDLE, the rest a clear error.
  assert.equal(native.acquire(h2), STALE_HANDLE)
  assert.throws(() => native.stats(id, 'two'), /no live engine/)
  assert.throws(() => native.keys(id), /no live engine/)
  assert.throws(() => native.resolveKey(id, 'x'), /no live engine/)
  native.destroyEngine(id) // twice: a no-op
})

test('binding: a panic in the engine becomes a JS error and the process keeps working', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 2 })
  const running = rx.execute(() => new Promise((r) => setTimeout(r, 5, 'ran')), { key: 'k' })
  for (let i = 0; i < 3; i++) {
    assert.throws(() => native.forcePanicForTest(), (err) => err instanceof Error && /forced panic for test/.test(err.message))
  }
  assert.equal(rx.stats('k').inflight, 1, 'accounting intact after the panics')
  assert.equal(await running, 'ran')
  assert.equal(await rx.execute(async () => 'after', { key: 'k' }), 'after')
  const s = rx.stats('k')
  assert.equal(s.inflight, 0)
  assert.equal(s.verdicts.success, 2)
})

test('public API: bad keys, verdicts and permits are clear errors; accounting stays exact', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, queue: false })
  await assert.rejects(rx.execute(() => 1, { key: 'x'.repeat(513) }), (e) => e instanceof RangeError && /maxKeyLength/.test(e.message))
  assert.equal(await rx.execute(() => 1, { key: 'x'.repeat(512) }), 1, 'exactly at the bound is fine')
  for (const key of [42, null, {}, Symbol('k'), ['a']]) {
    await assert.rejects(rx.execute(() => 1, { key }), TypeError)
  }
  await assert.rejects(rx.acquire(7), TypeError)
  for (const t of [NaN, Infinity, -Infinity, 0, -5, 2 ** 31, '100']) {
    await assert.rejects(rx.execute(() => 1, { timeoutMs: t }), (e) => e instanceof RangeError || e instanceof TypeError, String(t))
    await assert.rejects(rx.acquire('k', { timeoutMs: t }), (e) => e instanceof RangeError || e instanceof TypeError, String(t))
  }
  const p = await rx.acquire('k')
  for (const v of ['cancelled', 'SUCCESS', '', 0, null, {}]) assert.throws(() => p.release(v), TypeError)
  assert.equal(rx.stats('k').inflight, 1)
  p.release('failure')
  assert.throws(() => p.release('failure'), /already released/)
  p.mark() // after release: a no-op
  assert.equal(rx.stats('k').inflight, 0)
  assert.equal(rx.stats('k').verdicts.failure, 1)
  assert.throws(() => rx.stats(5), TypeError)
  assert.equal(rx.stats('never-seen'), undefined)
  assert.throws(() => rx.onReject('not a function'), TypeError)
})

test('a key evicted behind the JS layer (stale handle) recovers with one FIFO: no stranded waiter', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, maxKeys: 1 })
  await rx.execute(() => 1, { key: 'a' })
  native.resolveKey(rx._id, 'intruder') // evicts 'a' in the engine; the JS layer still holds its handle
  let release
  const first = rx.execute(() => new Promise((r) => (release = r)), { key: 'a' })
  const second = rx.execute(() => 'second ran', { key: 'a' })
  assert.equal(rx.stats('a').queued, 1)
  release('first')
  assert.equal(await first, 'first')
  let timer
  const hang = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error('the waiter was stranded')), 1000) })
  assert.equal(await Promise.race([second, hang]), 'second ran')
  clearTimeout(timer)
  assert.equal(rx.stats('a').inflight, 0)
  assert.equal(rx.stats('a').queued, 0)
})
