// The runtime agrees with index.d.ts where users meet it first: error constructors, disposable
// subscriptions, unknown call options, and the boolean policy switches.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError } from '../index.js'

test('error constructors take (reason, key) and (key, timeoutMs, queued = false), as typed', () => {
  const r = new RejectedError('breaker', 'api')
  assert.equal(r.reason, 'breaker')
  assert.equal(r.key, 'api')
  assert.match(r.message, /call to "api" rejected: the circuit breaker is open/)
  assert.ok(isRejectedError(r))
  const t = new TimeoutError('api', 300, true)
  assert.deepEqual([t.key, t.timeoutMs, t.queued], ['api', 300, true])
  assert.ok(isTimeoutError(t))
  assert.equal(new TimeoutError('api', 300).queued, false)
})

test('error constructors refuse what the typings refuse, naming the argument', () => {
  assert.throws(() => new RejectedError('oops'), /new RejectedError\(reason, key\): reason must be one of 'limit', 'queue', 'bulkhead', 'breaker', 'registry', 'throttle', 'quota', got the string "oops"/)
  assert.throws(() => new RejectedError('breaker'), /key must be a string, got undefined/)
  assert.throws(() => new TimeoutError(300, 'api'), /new TimeoutError\(key, timeoutMs, queued = false\): key must be a string, got number/)
  assert.throws(() => new TimeoutError('api'), /timeoutMs must be a number of milliseconds above 0, got undefined/)
  assert.throws(() => new TimeoutError('api', NaN), /timeoutMs must be a number/)
  assert.throws(() => new TimeoutError('api', 300, 'yes'), /queued must be a boolean/)
  for (const f of [() => new RejectedError(1, 'k'), () => new TimeoutError('k', -1)]) assert.throws(f, TypeError)
})

test('subscriptions are disposable: [Symbol.dispose] ends them like dispose()', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, queue: false })
  const seen = []
  const sub = rx.onReject((e) => seen.push(e.reason))
  assert.equal(typeof sub[Symbol.dispose], 'function')
  let release
  const hold = rx.execute(() => new Promise((r) => (release = r)))
  await assert.rejects(rx.execute(() => 1), (e) => isRejectedError(e))
  assert.deepEqual(seen, ['limit'])
  sub[Symbol.dispose]()
  sub[Symbol.dispose]() // a second time does nothing
  sub.dispose()
  await assert.rejects(rx.execute(() => 1), (e) => isRejectedError(e))
  assert.deepEqual(seen, ['limit'], 'no event after disposal')
  release()
  await hold
})

test('an unknown execute option rejects, naming it, as an unknown constructor option throws', async () => {
  const rx = new Resilix()
  let ran = false
  const p = rx.execute(() => (ran = true), { key: 'k', tiemout: 5 })
  assert.ok(p instanceof Promise, 'a rejected promise, not a synchronous throw')
  await assert.rejects(p, (e) => e instanceof TypeError && /unknown execute option tiemout \(execute takes key, timeoutMs, signal, retry, priority, tenant, cost\)/.test(e.message))
  assert.equal(ran, false)
  assert.equal(rx.stats('k'), undefined, 'nothing was acquired')
  await assert.rejects(rx.acquire('k', { key: 'k' }), /unknown acquire option key \(acquire takes timeoutMs, signal, priority, tenant, cost\)/)
  assert.throws(() => new Resilix({ tiemoutMs: 5 }), /unknown option tiemoutMs/)
  // Known options, even undefined ones, pass.
  assert.equal(await rx.execute(() => 2, { key: 'k', timeoutMs: undefined, signal: undefined }), 2)
})

test('limiter, queue and breaker accept true (their default), as typed', async () => {
  const rx = new Resilix({ limiter: true, queue: true, breaker: true })
  assert.equal(await rx.execute(() => 3, { key: 'k' }), 3)
  const s = rx.stats('k')
  assert.equal(s.algorithm, 'vegas')
  assert.equal(s.breaker, 'closed')
  assert.throws(() => new Resilix({ limiter: 'off' }), /option limiter must be a boolean/)
})

// Every entry point exports, from CommonJS and ESM alike, exactly what its typings declare.
test('each entry point exports what its .d.ts declares, the same from require and import', async () => {
  const { readFileSync } = await import('node:fs')
  const { createRequire } = await import('node:module')
  const require = createRequire(import.meta.url)
  for (const entry of ['index', 'undici', 'otel', 'prometheus', 'redis']) {
    const dts = readFileSync(new URL(`../${entry}.d.ts`, import.meta.url), 'utf8')
    const declared = [...dts.matchAll(/^export declare (?:class|function) (\w+)/gm)].map((m) => m[1]).sort()
    const cjs = require(`../${entry}.js`)
    const esm = await import(`../${entry}.mjs`)
    assert.deepEqual(Object.keys(cjs).sort(), declared, `${entry}.js`)
    assert.deepEqual(Object.keys(esm).filter((k) => k !== 'default').sort(), declared, `${entry}.mjs`)
    for (const name of declared) assert.equal(esm[name], cjs[name], `${entry}: ${name} is one value`)
  }
})
