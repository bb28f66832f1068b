// The registry keeps what protects an upstream: traffic on other keys cannot evict an idle key
// whose breaker is open; when only such keys remain, a new key is refused with 'registry' and
// counted; every eviction is an event.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix, isRejectedError } from '../index.js'

const failing = () => Promise.reject(new Error('down'))

async function openBreaker(rx, key) {
  for (let i = 0; i < 2; i++) await rx.execute(failing, { key }).catch(() => {})
  assert.equal(rx.stats(key).breaker, 'open')
}

test('registry: an open breaker survives traffic on 1 000 other keys; evictions are events', async () => {
  const rx = new Resilix({ algorithm: 'fixed', maxKeys: 10, breaker: { consecutiveFailures: 2, openMs: 600_000 } })
  await openBreaker(rx, 'dead.example')
  const evicted = []
  rx.onEvict((e) => evicted.push(e.key))
  for (let i = 0; i < 1000; i++) await rx.execute(() => 'ok', { key: `k${i}` })
  assert.equal(rx.stats('dead.example')?.breaker, 'open', 'protection reset by other keys')
  await assert.rejects(rx.execute(() => 'reached the dead upstream', { key: 'dead.example' }), (e) => isRejectedError(e) && e.reason === 'breaker')
  assert.equal(evicted.length, 1000 - 9)
  assert.ok(!evicted.includes('dead.example'))
  assert.equal(rx.registryStats().evicted, 1000 - 9)
  assert.equal(rx.registryStats().refused, 0)
})

test('registry: only protecting keys left, the new key is refused with registry and counted', async () => {
  const rx = new Resilix({ algorithm: 'fixed', maxKeys: 2, breaker: { consecutiveFailures: 2, openMs: 600_000 } })
  await openBreaker(rx, 'a')
  await openBreaker(rx, 'b')
  const rejected = []
  rx.onReject((e) => rejected.push(e))
  await assert.rejects(rx.execute(() => 1, { key: 'c' }), (e) => isRejectedError(e) && e.reason === 'registry')
  await assert.rejects(rx.acquire('d'), (e) => isRejectedError(e) && e.reason === 'registry')
  assert.deepEqual(rejected.map((e) => e.reason), ['registry', 'registry'])
  assert.deepEqual(rx.registryStats(), { keys: 2, refused: 2, evicted: 0 })
  assert.deepEqual(rx.keys().sort(), ['a', 'b'])
})
