import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix, isRejectedError } from '../index.js'

test('the registry keeps at most maxKeys keys, evicting the least recently used idle key', async () => {
  const rx = new Resilix({ maxKeys: 3 })
  for (const k of ['a', 'b', 'c']) await rx.execute(() => 1, { key: k })
  await rx.execute(() => 1, { key: 'a' }) // a is now the most recent
  await rx.execute(() => 1, { key: 'd' }) // evicts b
  assert.deepEqual(new Set(rx.keys()), new Set(['a', 'c', 'd']))
  assert.equal(rx.stats('b'), undefined)
})

test('busy keys are never evicted; with every key busy a new key is refused with reason registry', async () => {
  const rx = new Resilix({ maxKeys: 2 })
  const a = await rx.acquire('a')
  const b = await rx.acquire('b')
  const err = await rx.execute(() => 1, { key: 'c' }).catch((e) => e)
  assert.ok(isRejectedError(err))
  assert.equal(err.reason, 'registry')
  assert.equal(err.key, 'c')
  assert.deepEqual(new Set(rx.keys()), new Set(['a', 'b']))
  a.release()
  assert.equal(await rx.execute(() => 'ok', { key: 'c' }), 'ok')
  assert.deepEqual(new Set(rx.keys()), new Set(['b', 'c']))
  assert.equal(rx.stats('b').inflight, 1, 'the busy key kept its state')
  b.release()
})

test('many distinct keys: at most maxKeys alive, and the JS-side cache stays bounded', async () => {
  const rx = new Resilix({ maxKeys: 100 })
  for (let i = 0; i < 20000; i++) await rx.execute(() => i, { key: `host-${i}.example.com` })
  assert.equal(rx.keys().length, 100)
  assert.ok(rx._keys.size <= 100, `JS key cache holds ${rx._keys.size}`)
  // an evicted key comes back fresh and works
  assert.equal(await rx.execute(() => 'again', { key: 'host-0.example.com' }), 'again')
})

test('keys longer than maxKeyLength are refused with a RangeError naming the limit', async () => {
  const rx = new Resilix({ maxKeyLength: 16 })
  await assert.rejects(rx.execute(() => 1, { key: 'x'.repeat(17) }), (e) => e instanceof RangeError && /maxKeyLength/.test(e.message))
  assert.equal(await rx.execute(() => 1, { key: 'x'.repeat(16) }), 1)
  assert.equal(rx.keys().length, 1)
})

test('stats() without a key reports every live key', async () => {
  const rx = new Resilix()
  await rx.execute(() => 1, { key: 'a' })
  await rx.execute(() => 1, { key: 'b' })
  const all = rx.stats()
  assert.deepEqual(Object.keys(all).sort(), ['a', 'b'])
  assert.equal(all.a.verdicts.success, 1)
})
