// Hostile values: results and errors whose status getters throw, keys that are not well-formed
// UTF-16, look-alike signals, options that throw when read, `__proto__` as a key, the largest
// timeoutMs. Every call is answered exactly once, as a promise, and no slot is left held.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix } from '../index.js'
import { fixed, deferred, sleep } from './helpers.mjs'

/** Resolves to what p settled with, or 'hung' after ms. */
const within = (p, ms = 2000) =>
  Promise.race([p.then((v) => ({ ok: true, v }), (e) => ({ ok: false, e })), sleep(ms).then(() => 'hung')])

const throwingStatus = () => ({ get status() { throw new Error('status getter') } })
const throwingStatusCode = () => ({ statusCode: undefined, get response() { throw new Error('response getter') } })
function revoked() {
  const { proxy, revoke } = Proxy.revocable({}, {})
  revoke()
  return proxy
}

test('hostile values: a status/statusCode/response getter that throws means verdict failure; the caller gets what fn did', async () => {
  for (const timeoutMs of [undefined, 60_000]) {
    for (const classify of [undefined, () => undefined]) {
      const rx = fixed(2, classify ? { classify } : {})
      const opts = { key: 'k', timeoutMs }
      const a = throwingStatus()
      const b = throwingStatusCode()
      const c = revoked()
      const outs = await Promise.all([
        within(rx.execute(async () => a, opts)),
        within(rx.execute(async () => { throw b }, opts)),
        within(rx.execute(() => { throw c }, opts)),
        within(rx.execute(() => b, opts)),
      ])
      assert.ok(outs[0].ok && outs[0].v === a, `resolved value passed through (timeoutMs ${timeoutMs})`)
      assert.ok(!outs[1].ok && outs[1].e === b, 'thrown value passed through')
      assert.ok(!outs[2].ok && outs[2].e === c, 'thrown revoked proxy passed through')
      assert.ok(outs[3].ok && outs[3].v === b, 'sync return passed through')
      const s = rx.stats('k')
      assert.equal(s.inflight, 0, 'no slot held')
      assert.equal(s.verdicts.failure, 4)
    }
  }
})

test('hostile values: a poisoned waiter woken inside another call’s settle leaves that call answered', async () => {
  const rx = fixed(1)
  const d = deferred()
  const first = rx.execute(() => d.promise, { key: 'k' })
  const poisoned = throwingStatus()
  const second = rx.execute(() => poisoned, { key: 'k' })
  assert.equal(rx.stats('k').queued, 1)
  d.resolve('first value')
  const [o1, o2] = await Promise.all([within(first), within(second)])
  assert.deepEqual(o1, { ok: true, v: 'first value' })
  assert.ok(o2.ok && o2.v === poisoned)
  assert.equal(rx.stats('k').inflight, 0)
  assert.equal(rx.stats('k').queued, 0)
})

test('hostile values: keys that are not well-formed UTF-16 are refused with a TypeError; no waiter is stranded', async () => {
  const rx = fixed(1)
  for (const key of ['host\uD800', 'host\uDC00', '\uDFFFx']) {
    const o = await within(rx.execute(() => 1, { key }))
    assert.ok(!o.ok && o.e instanceof TypeError && /well-formed|lone surrogate/.test(o.e.message), String(o.e))
    const a = await within(rx.acquire(key))
    assert.ok(!a.ok && a.e instanceof TypeError)
    assert.throws(() => rx.stats(key), TypeError)
  }
  // A key with U+FFFD itself is an ordinary key, distinct from every other.
  const d = deferred()
  const p1 = rx.execute(() => d.promise, { key: 'host\uFFFD' })
  const p2 = rx.execute(() => 2, { key: 'host\uFFFD' })
  assert.equal(rx.stats('host\uFFFD').queued, 1)
  d.resolve(1)
  assert.deepEqual(await Promise.all([p1, p2]), [1, 2])
  assert.equal(rx.stats('host\uFFFD').queued, 0)
  assert.deepEqual(rx.keys(), ['host\uFFFD'])
})

test('hostile values: a look-alike signal is refused with a TypeError, nothing held', async () => {
  const rx = fixed(2)
  const lookAlikes = [
    { aborted: false, addEventListener() {} },
    { aborted: false, addEventListener() {}, removeEventListener() { throw new Error('remove') } },
    { aborted: false, addEventListener() { throw new Error('add') }, removeEventListener() {} },
  ]
  for (const signal of lookAlikes) {
    for (const timeoutMs of [undefined, 60_000]) {
      let p
      assert.doesNotThrow(() => { p = rx.execute(() => 1, { key: 'k', signal, timeoutMs }) })
      const o = await within(p)
      assert.ok(!o.ok && o.e instanceof TypeError && /AbortSignal/.test(o.e.message), String(o.e && o.e.message))
    }
  }
  assert.equal(rx.stats('k'), undefined, 'refused before any key was touched')
})

test('hostile values: options and signals that throw when read reject, never throw synchronously', async () => {
  const rx = fixed(2)
  const boom = () => { throw new Error('getter boom') }
  const hostile = [
    { get key() { return boom() } },
    { get timeoutMs() { return boom() } },
    { get signal() { return boom() } },
    new Proxy({}, { get: boom }),
    new Proxy({}, { getPrototypeOf: boom, get: boom, has: boom, ownKeys: boom }),
    revoked(),
    { signal: new Proxy(new AbortController().signal, { get: boom }) },
    { signal: new Proxy(new AbortController().signal, { getPrototypeOf: boom }) },
    { signal: revoked() },
  ]
  for (const opts of hostile) {
    const calls = [() => rx.execute(() => 1, opts)]
    if (opts !== hostile[0]) calls.push(() => rx.acquire('k', opts)) // acquire takes its key apart
    for (const call of calls) {
      let p
      assert.doesNotThrow(() => { p = call() })
      const o = await within(p)
      assert.ok(!o.ok, 'rejected')
    }
  }
  for (const k of rx.keys()) {
    assert.equal(rx.stats(k).inflight, 0)
    assert.equal(rx.stats(k).queued, 0)
  }
})

test('hostile values: stats() keeps a key named __proto__ as an own key and its prototype', async () => {
  const rx = fixed(2)
  await rx.execute(() => 1, { key: '__proto__' })
  await rx.execute(() => 1, { key: 'constructor' })
  const all = rx.stats()
  assert.equal(Object.getPrototypeOf(all), Object.prototype)
  assert.deepEqual(Object.keys(all).sort(), ['__proto__', 'constructor'])
  assert.equal(Object.getOwnPropertyDescriptor(all, '__proto__').value.key, '__proto__')
  assert.equal(rx.stats('__proto__').inflight, 0)
})

test('hostile values: timeoutMs 2147483647 does not overflow the timer (no early fire, no warning)', async () => {
  const warnings = []
  const onWarning = (w) => warnings.push(w)
  process.on('warning', onWarning)
  const rx = new Resilix({ algorithm: 'fixed', breaker: false })
  const d = deferred()
  const p = within(rx.execute(() => d.promise, { key: 'k', timeoutMs: 2147483647 }), 150)
  assert.equal(await p, 'hung', 'not timed out after 150 ms')
  d.resolve('done')
  await sleep(10)
  process.off('warning', onWarning)
  assert.deepEqual(warnings.map((w) => w.name), [])
  assert.equal(rx.stats('k').inflight, 0)
  assert.equal(rx.stats('k').verdicts.success, 1)
})
