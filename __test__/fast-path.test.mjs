// The fast path (lib/fast-path.js, ADR 1218): a call with no options, deadline, quota or retry
// settles as the general path does, and the hot native functions are read from an object with
// fast properties (the addon's own exports object is a dictionary in V8: a hash lookup per call).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createRequire } from 'node:module'
import { Resilix } from '../index.js'
import { fixed, deferred } from './helpers.mjs'

const verdicts = (rx, key = 'default') => rx.stats(key).verdicts

test('fast path: the native functions are read from an object with fast properties', () => {
  const lib = fileURLToPath(new URL('../lib/native.js', import.meta.url))
  const r = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', `process.stdout.write(String(%HasFastProperties(require(${JSON.stringify(lib)}).native)))`], { encoding: 'utf8' })
  assert.equal(r.status, 0, r.stderr)
  assert.equal(r.stdout, 'true')
})

test('fast path: a plain call settles with the verdict of what fn gave', async () => {
  const rx = fixed()
  assert.equal(await rx.execute(async () => 1), 1)
  assert.equal(await rx.execute(() => 'sync'), 'sync')
  assert.equal(await rx.execute(async () => null), null)
  assert.deepEqual(await rx.execute(async () => ({ status: 503 })), { status: 503 })
  assert.deepEqual(await rx.execute(async () => ({ status: 404 })), { status: 404 })
  const boom = new Error('boom')
  await assert.rejects(rx.execute(async () => Promise.reject(boom)), (e) => e === boom)
  await assert.rejects(
    rx.execute(() => {
      throw boom
    }),
    (e) => e === boom,
  )
  const v = verdicts(rx)
  assert.equal(v.success, 3)
  assert.equal(v.overload, 1)
  assert.equal(v.answered, 1)
  assert.equal(v.failure, 2)
  assert.equal(rx.stats('default').inflight, 0)
  rx.close()
})

test("fast path: a primitive value still goes through the instance's classify", async () => {
  const seen = []
  const rx = fixed(10, {
    classify: (o) => {
      seen.push(o)
      return o.ok && o.value === 2 ? 'failure' : undefined
    },
  })
  assert.equal(await rx.execute(async () => 1), 1)
  assert.equal(await rx.execute(async () => 2), 2)
  assert.deepEqual(seen, [
    { ok: true, value: 1 },
    { ok: true, value: 2 },
  ])
  assert.equal(verdicts(rx).success, 1)
  assert.equal(verdicts(rx).failure, 1)
  rx.close()
})

test('fast path: a classify that throws rejects with its error, the call settles once', async () => {
  const err = new Error('classify')
  const rx = fixed(10, {
    classify: () => {
      throw err
    },
  })
  await assert.rejects(rx.execute(async () => 1), (e) => e === err)
  assert.equal(rx.stats('default').inflight, 0)
  rx.close()
})

test('fast path: its settle starts the call waiting behind it', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, breaker: false })
  const first = deferred()
  const running = rx.execute(() => first.promise)
  let started = false
  const waiting = rx.execute(async () => {
    started = true
    return 'second'
  })
  assert.equal(rx.stats('default').queued, 1)
  first.resolve('first')
  assert.equal(await running, 'first')
  assert.equal(await waiting, 'second')
  assert.ok(started)
  assert.equal(rx.stats('default').queued, 0)
  assert.equal(rx.stats('default').inflight, 0)
  rx.close()
})

test('fast path: acquireToCell and acquireWithinToCell answer as acquire and acquireWithin, through the clock cell', () => {
  const require = createRequire(import.meta.url)
  const native = require('../native.js')
  const { clockCell, STALE_HANDLE, STALE_PERMIT, QUEUED } = require('../lib/native.js')
  const { acquireByCell, acquireWithinByCell } = require('../lib/fast-path.js')
  const id = native.createEngine({ algorithm: 'fixed', initialLimit: 2, breaker: false, limiter: true }, 1)
  const h = native.resolveKey(id, 'k')
  assert.equal(native.acquireToCell(h), undefined)
  const a = clockCell[11]
  assert.ok(Number.isInteger(a) && a >= 0, `a permit, got ${a}`)
  const b = acquireWithinByCell(h, 1000)
  assert.ok(Number.isInteger(b) && b >= 0 && b !== a, `a second permit, got ${b}`)
  // The limit is 2: a third call waits, as acquire says.
  assert.equal(acquireByCell(h), QUEUED)
  assert.equal(native.leaveQueue(h), 1)
  assert.ok(native.settle(h, a, 0) >= 0)
  assert.ok(native.settle(h, b, 0) >= 0)
  // Each permit settles once.
  assert.equal(native.settle(h, a, 0), STALE_PERMIT)
  assert.equal(native.stats(id, 'k').inflight, 0)
  for (const x of [NaN, Infinity, -1, 1.5, 2 ** 53, h + 1]) {
    assert.equal(acquireByCell(x), STALE_HANDLE, `acquireToCell(${x})`)
    assert.equal(acquireWithinByCell(x, 10), STALE_HANDLE, `acquireWithinToCell(${x}, 10)`)
  }
  for (const x of ['1', null, undefined, {}, 10n]) {
    assert.throws(() => native.acquireToCell(x), (e) => e.code === 'NumberExpected', String(x))
    assert.throws(() => native.acquireWithinToCell(h, x), (e) => e.code === 'NumberExpected', String(x))
  }
  assert.equal(native.stats(id, 'k').verdicts.success, 2)
  assert.equal(native.stats(id, 'k').inflight, 0)
  native.destroyEngine(id)
})
