// Error messages that name the fix for what newcomers write first: other libraries' option names,
// a promise instead of a function, a URL or an empty string as a key, acquire() with execute()'s
// options object.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix } from '../index.js'
import { interceptor } from '../undici.js'

const throwsWith = (f, cls, re) => assert.throws(f, (e) => e instanceof cls && re.test(e.message))
const rejectsWith = (p, cls, re) => assert.rejects(p, (e) => e instanceof cls && re.test(e.message))

test('an unknown option suggests the name resilix uses, for other libraries\' names and typos', () => {
  const cases = [
    [{ timeout: 5000 }, /unknown option timeout: did you mean timeoutMs\?/],
    [{ breaker: { resetTimeout: 30_000 } }, /unknown option breaker\.resetTimeout: did you mean breaker\.openMs\? \(opossum's resetTimeout\)/],
    [{ resetTimeout: 30_000 }, /unknown option resetTimeout: did you mean breaker\.openMs\?/],
    [{ halfOpenAfter: 10_000 }, /did you mean breaker\.openMs\? \(cockatiel's halfOpenAfter\)/],
    [{ errorThresholdPercentage: 50 }, /did you mean breaker\.failureRate\? \(a fraction: 50 % is 0\.5\)/],
    [{ openMs: 5000 }, /unknown option openMs: did you mean breaker\.openMs\?/],
    [{ maxFactor: 3 }, /unknown option maxFactor: did you mean queue\.maxFactor\?/],
    [{ concurrency: 10 }, /did you mean initialLimit\? \(with algorithm: 'fixed'/],
    [{ tiemoutMs: 5 }, /unknown option tiemoutMs: did you mean timeoutMs\?/],
    [{ timeoutms: 5 }, /unknown option timeoutms: did you mean timeoutMs\?/],
    [{ breaker: { opnMs: 5 } }, /unknown option breaker\.opnMs: did you mean breaker\.openMs\?/],
    [{ queue: { size: 100 } }, /unknown option queue\.size: did you mean queue\.maxFactor\? \(the queue is bounded by factors of the limit/],
    [{ bulkhead: { maxConcurent: 3 } }, /did you mean bulkhead\.maxConcurrent\?/],
  ]
  for (const [options, re] of cases) throwsWith(() => new Resilix(options), TypeError, re)
  // Nothing close: no guess.
  throwsWith(() => new Resilix({ zzz: 1 }), TypeError, /unknown option zzz$/)
})

test('unknown execute, acquire and interceptor options suggest too', async () => {
  const rx = new Resilix()
  await rejectsWith(rx.execute(() => 1, { timeout: 100 }), TypeError, /unknown execute option timeout \(execute takes key, timeoutMs, signal, retry, priority, tenant, cost\): did you mean timeoutMs\?/)
  await rejectsWith(rx.acquire('k', { timeout: 100 }), TypeError, /unknown acquire option timeout .*did you mean timeoutMs\?/)
  throwsWith(() => interceptor(rx, { bodyTimeout: 5 }), TypeError, /unknown interceptor option bodyTimeout: did you mean bodyTimeoutMs\?/)
  throwsWith(() => interceptor(rx, { headersTimeout: 5 }), TypeError, /did you mean timeoutMs\? \(it runs to the response headers/)
})

test('a promise passed to execute: pass a function that returns a promise', async () => {
  const rx = new Resilix()
  const started = Promise.resolve('already running')
  await rejectsWith(rx.execute(started), TypeError, /execute expects a function, got a promise: .*pass a function that returns a promise/i)
  await rejectsWith(rx.execute({ then() {} }), TypeError, /got a promise/)
  await rejectsWith(rx.execute(42), TypeError, /execute expects a function, got number/)
  const hostile = new Proxy({}, { get() { throw new Error('trap') } })
  await rejectsWith(rx.execute(hostile), TypeError, /execute expects a function, got object/)
  assert.deepEqual(rx.keys(), [], 'nothing was acquired')
})

test('a URL as a key is refused, naming url.host and url.origin; an empty key is refused', async () => {
  const rx = new Resilix()
  const url = new URL('https://api.example.com/users/42?x=1')
  const named = /got a URL object: key by the part that names the upstream, url\.host \("api\.example\.com"\) or url\.origin \("https:\/\/api\.example\.com"/
  await rejectsWith(rx.execute(() => 1, { key: url }), TypeError, named)
  await rejectsWith(rx.acquire(url), TypeError, named)
  throwsWith(() => rx.stats(url), TypeError, named)
  throwsWith(() => interceptor(rx, { key: url }), TypeError, /got a URL object: use url\.origin \("https:\/\/api\.example\.com"\)/)

  const empty = /key must not be empty: name the upstream/
  await rejectsWith(rx.execute(() => 1, { key: '' }), RangeError, empty)
  await rejectsWith(rx.acquire(''), RangeError, empty)
  throwsWith(() => rx.stats(''), RangeError, empty)
  throwsWith(() => interceptor(rx, { key: '' }), RangeError, /option key must not be empty/)
  assert.deepEqual(rx.keys(), [], 'no key was made')
  // A key that is a URL's text is a string like any other (the interceptor's keys are origins).
  assert.equal(await rx.execute(() => 2, { key: url.origin }), 2)
})

test('acquire takes execute()\'s options object too: acquire({ key, timeoutMs, signal })', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1 })
  const p = await rx.acquire({ key: 'api', timeoutMs: 100 })
  assert.equal(p.key, 'api')
  // The object form waits and times out as the two-argument form does.
  await assert.rejects(rx.acquire({ key: 'api', timeoutMs: 30 }), { name: 'TimeoutError', queued: true })
  p.release()
  const d = await rx.acquire({})
  assert.equal(d.key, 'default')
  d.release()
  assert.equal(rx.stats('api').inflight, 0)
  await rejectsWith(rx.acquire({ key: 'api' }, { timeoutMs: 5 }), TypeError, /acquire takes \(key, options\) or one object \{ key, timeoutMs, signal \}/)
  await rejectsWith(rx.acquire({ kee: 'api' }), TypeError, /unknown acquire option kee \(acquire takes key, timeoutMs, signal, priority, tenant, cost\): did you mean key\?/)
  await rejectsWith(rx.acquire('api', { key: 'api' }), TypeError, /unknown acquire option key .*the key is acquire's first argument, acquire\(key, \{ timeoutMs \}\), or pass one object, acquire\(\{ key, timeoutMs \}\)/)
  const hostile = new Proxy({}, { ownKeys() { throw new Error('trap') } })
  await assert.rejects(rx.acquire(hostile), /trap/, 'an options object that throws rejects, never throws')
})
