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

test('registry: a new key is refused with registry, and counted, only while more than half the keys are busy', async () => {
  const rx = new Resilix({ algorithm: 'fixed', maxKeys: 4, breaker: { consecutiveFailures: 2, openMs: 600_000 } })
  await openBreaker(rx, 'a')
  const held = [await rx.acquire('b1'), await rx.acquire('b2'), await rx.acquire('b3')]
  const rejected = []
  rx.onReject((e) => rejected.push(e))
  await assert.rejects(rx.execute(() => 1, { key: 'c' }), (e) => isRejectedError(e) && e.reason === 'registry')
  await assert.rejects(rx.acquire('d'), (e) => isRejectedError(e) && e.reason === 'registry')
  assert.deepEqual(rejected.map((e) => e.reason), ['registry', 'registry'])
  assert.deepEqual(rx.registryStats(), { keys: 4, refused: 2, evicted: 0 })
  assert.deepEqual(rx.keys().sort(), ['a', 'b1', 'b2', 'b3'])
  // One busy of four, three protecting: the least recently used protecting key gives way.
  held[0].release()
  held[1].release()
  await openBreaker(rx, 'b1')
  await openBreaker(rx, 'b2')
  assert.equal(await rx.execute(() => 'in', { key: 'c' }), 'in')
  assert.ok(!rx.keys().includes('a'))
  held[2].release()
})

// Junk keys (user-supplied URLs: webhooks, crawlers, link previews) that fail fast open a
// breaker each. Open breakers may fill the registry, but never lock a legitimate new key out.
test('registry: 1 000 junk keys with open breakers do not lock new keys out', async () => {
  const rx = new Resilix()
  await rx.execute(async () => 'ok', { key: 'api.example' })
  const down = () => Promise.reject(Object.assign(new Error('ECONNREFUSED'), { code: 'ECONNREFUSED' }))
  for (let i = 0; i < 1000; i++) {
    const key = `https://junk-${i}.invalid`
    for (let j = 0; j < 5; j++) await rx.execute(down, { key }).catch(() => {})
  }
  assert.equal(rx.registryStats().keys, 1000)
  const open = rx.keys().filter((k) => rx.stats(k).breaker === 'open').length
  assert.ok(open >= 500, `${open} open breakers`)
  for (let i = 0; i < 100; i++) assert.equal(await rx.execute(async () => i, { key: `https://new-${i}.example` }), i)
  assert.equal(await rx.execute(async () => 'again', { key: 'api.example' }), 'again')
  assert.equal(rx.registryStats().refused, 0)
})
