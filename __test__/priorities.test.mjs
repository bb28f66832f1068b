// Priorities and tenants in a key's queue: higher classes first, FIFO within one; a tenant that
// used more of the key's slot time waits behind one that used less; waiters that leave leave no
// count behind; bad values are refused by name. The shapes against a real upstream are in
// priorities-upstream.test.mjs.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix, isRejectedError } from '../index.js'
import { deferred, fixed, sleep } from './helpers.mjs'

/** Holds the key's one slot; resolves the returned gate to free it. */
function hold(rx, key) {
  const gate = deferred()
  const running = rx.execute(() => gate.promise, { key })
  return { gate, running }
}

test('the queue admits higher priorities first and keeps arrival order within one', async () => {
  const rx = fixed(1)
  const { gate, running } = hold(rx, 'k')
  const order = []
  const calls = []
  const plan = [
    ['sheddable', 's1'], ['normal', 'n1'], [undefined, 'd1'], ['critical', 'c1'], ['low', 'l1'],
    ['high', 'h1'], ['sheddable', 's2'], ['critical', 'c2'], [undefined, 'd2'], ['high', 'h2'],
  ]
  for (const [priority, name] of plan) {
    const opts = priority === undefined ? { key: 'k' } : { key: 'k', priority }
    calls.push(rx.execute(async () => order.push(name), opts))
  }
  const s = rx.stats('k')
  assert.equal(s.queued, 10)
  assert.deepEqual(s.queuedByPriority, { critical: 2, high: 2, normal: 3, low: 1, sheddable: 2 })
  gate.resolve()
  await running
  await Promise.all(calls)
  // A call that names no priority is normal, in the same FIFO as 'normal'.
  assert.deepEqual(order, ['c1', 'c2', 'h1', 'h2', 'n1', 'd1', 'd2', 'l1', 's1', 's2'])
  assert.deepEqual(rx.stats('k').queuedByPriority, { critical: 0, high: 0, normal: 0, low: 0, sheddable: 0 })
  rx.close()
})

test('a key whose calls name no priority keeps its order when the first prioritised call arrives mid-queue', async () => {
  const rx = fixed(1)
  const { gate, running } = hold(rx, 'k')
  const order = []
  const calls = [1, 2, 3].map((i) => rx.execute(async () => order.push(`d${i}`), { key: 'k' }))
  calls.push(rx.execute(async () => order.push('c'), { key: 'k', priority: 'critical' }))
  calls.push(rx.execute(async () => order.push('d4'), { key: 'k' }))
  calls.push(rx.execute(async () => order.push('s'), { key: 'k', priority: 'sheddable' }))
  gate.resolve()
  await running
  await Promise.all(calls)
  assert.deepEqual(order, ['c', 'd1', 'd2', 'd3', 'd4', 's'])
  rx.close()
})

test('waiters that time out or abort, at any level, leave no count behind', async () => {
  const rx = fixed(1)
  const { gate, running } = hold(rx, 'k')
  const ac = new AbortController()
  const gone = [
    rx.execute(async () => 'never', { key: 'k', priority: 'critical', timeoutMs: 30 }),
    rx.execute(async () => 'never', { key: 'k', priority: 'sheddable', signal: ac.signal }),
    rx.execute(async () => 'never', { key: 'k', priority: 'high', tenant: 'acme', timeoutMs: 30 }),
  ].map((p) => p.then(() => 'ran', (e) => e.name))
  const stays = rx.execute(async () => 'ran', { key: 'k', priority: 'low', tenant: 'acme' })
  ac.abort()
  assert.deepEqual(await Promise.all(gone), ['TimeoutError', 'AbortError', 'TimeoutError'])
  assert.deepEqual(rx.stats('k').queuedByPriority, { critical: 0, high: 0, normal: 0, low: 1, sheddable: 0 })
  gate.resolve()
  await running
  assert.equal(await stays, 'ran')
  const s = rx.stats('k')
  assert.equal(s.queued, 0)
  assert.equal(s.inflight, 0)
  // The key still admits in order afterwards.
  const order = []
  const again = hold(rx, 'k')
  const calls = [['low', 'l'], ['critical', 'c']].map(([priority, n]) => rx.execute(async () => order.push(n), { key: 'k', priority }))
  again.gate.resolve()
  await again.running
  await Promise.all(calls)
  assert.deepEqual(order, ['c', 'l'])
  rx.close()
})

test('close() rejects prioritised waiters and leaves nothing queued', async () => {
  const rx = fixed(1)
  const { gate } = hold(rx, 'k')
  const waiting = ['critical', 'sheddable', undefined].map((priority) =>
    rx.execute(async () => 1, { key: 'k', ...(priority ? { priority } : {}), tenant: 't' }).then(() => 'ran', (e) => e.name),
  )
  rx.close()
  gate.resolve()
  for (const r of await Promise.all(waiting)) assert.notEqual(r, 'ran')
})

test('a tenant that used more of the key recently waits behind one that used less, within its class', async () => {
  const rx = fixed(1)
  // The heavy tenant holds the slot for 300 ms, the light one for a moment.
  await rx.execute(() => sleep(300), { key: 'k', tenant: 'heavy' })
  await rx.execute(async () => {}, { key: 'k', tenant: 'light' })
  assert.equal(rx.stats('k').tenants, 2)
  const { gate, running } = hold(rx, 'k')
  const order = []
  const calls = [
    rx.execute(async () => order.push('heavy'), { key: 'k', tenant: 'heavy' }),
    rx.execute(async () => order.push('light'), { key: 'k', tenant: 'light' }),
    rx.execute(async () => order.push('new'), { key: 'k', tenant: 'new' }),
    // A higher class still goes first, whatever its tenant used.
    rx.execute(async () => order.push('heavy-high'), { key: 'k', tenant: 'heavy', priority: 'high' }),
  ]
  gate.resolve()
  await running
  await Promise.all(calls)
  assert.deepEqual(order, ['heavy-high', 'light', 'new', 'heavy'])
  rx.close()
})

test('the reject event and the error name the refused call\'s priority', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, breaker: false, queue: { maxQueued: 1 } })
  const events = []
  rx.onReject((e) => events.push(e))
  const { gate, running } = hold(rx, 'k')
  const waiter = rx.execute(async () => 1, { key: 'k' })
  const err = await rx.execute(async () => 1, { key: 'k', priority: 'sheddable', tenant: 'acme' }).catch((e) => e)
  assert.ok(isRejectedError(err))
  assert.equal(err.reason, 'queue')
  assert.match(err.message, /priority sheddable/)
  assert.deepEqual(events, [{ key: 'k', reason: 'queue', priority: 'sheddable', tenant: 'acme' }])
  assert.deepEqual(rx.stats('k').queueRefusalsByPriority, { critical: 0, high: 0, normal: 0, low: 0, sheddable: 1 })
  gate.resolve()
  await running
  await waiter
  rx.close()
})

test('acquire() takes a priority and a tenant too', async () => {
  const rx = fixed(1)
  const first = await rx.acquire('k')
  const order = []
  const low = rx.acquire('k', { priority: 'low' }).then((p) => { order.push('low'); p.release() })
  const crit = rx.acquire({ key: 'k', priority: 'critical', tenant: 'ops' }).then((p) => { order.push('critical'); p.release() })
  first.release()
  await Promise.all([low, crit])
  assert.deepEqual(order, ['critical', 'low'])
  rx.close()
})

test('bad priorities and tenants are refused with errors that name them', async () => {
  const rx = new Resilix()
  const bad = async (opts) => (await rx.execute(async () => 1, opts).catch((e) => e))
  let e = await bad({ priority: 'urgent' })
  assert.ok(e instanceof TypeError)
  assert.match(e.message, /execute option priority must be one of 'critical', 'high', 'normal', 'low', 'sheddable', got the string "urgent"/)
  e = await bad({ priority: 4 })
  assert.match(e.message, /option priority must be one of .* got number/)
  e = await bad({ priority: 'Critical' })
  assert.match(e.message, /did you mean critical\?/)
  e = await bad({ tenant: '' })
  assert.ok(e instanceof RangeError)
  assert.match(e.message, /option tenant must not be empty/)
  e = await bad({ tenant: 42 })
  assert.match(e.message, /option tenant must be a string naming who the call is for, got number/)
  e = await bad({ tenant: 'x'.repeat(257) })
  assert.match(e.message, /tenant is 257 characters long; tenant names may be at most 256/)
  e = await bad({ tenant: '\ud800' })
  assert.match(e.message, /well-formed/)
  e = await rx.acquire('k', { priority: null }).catch((x) => x)
  assert.match(e.message, /acquire option priority must be one of/)
  // Refused before the key was resolved: nothing admitted, no key made.
  assert.equal(rx.stats('k'), undefined)
  rx.close()
})

test('a retried call keeps its priority and tenant for every attempt', async () => {
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, breaker: false, retry: { baseMs: 1, maxDelayMs: 2 } })
  const { gate, running } = hold(rx, 'k')
  const order = []
  const s1Gate = deferred()
  let attempt = 0
  const c = rx.execute(async () => {
    order.push(`c${++attempt}`)
    if (attempt === 1) throw new Error('first attempt fails')
    return 'c'
  }, { key: 'k', priority: 'critical', tenant: 'ops' })
  const s1 = rx.execute(async () => {
    order.push('s1')
    await s1Gate.promise
  }, { key: 'k', priority: 'sheddable' })
  const s2 = rx.execute(async () => order.push('s2'), { key: 'k', priority: 'sheddable' })
  gate.resolve()
  await running
  // c1 ran and failed; s1 took the slot during c's backoff; c's second attempt now waits.
  while (rx.stats('k').queuedByPriority.critical === 0) await sleep(2)
  assert.deepEqual(order, ['c1', 's1'])
  s1Gate.resolve()
  assert.equal(await c, 'c')
  await Promise.all([s1, s2])
  assert.deepEqual(order, ['c1', 's1', 'c2', 's2'])
  assert.equal(rx.stats('k').retries, 1)
  rx.close()
})

test('the interceptor gives each request the priority and tenant its options name', async () => {
  const { Agent, request } = await import('undici')
  const { interceptor } = await import('../undici.js')
  const http = await import('node:http')
  const srv = http.createServer((req, res) => setTimeout(() => res.end(req.url), 20)).listen(0, '127.0.0.1')
  await new Promise((r) => srv.once('listening', r))
  const base = `http://127.0.0.1:${srv.address().port}`
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, breaker: false })
  try {
    const agent = new Agent().compose(interceptor(rx, {
      priority: (o) => (o.path.startsWith('/vip') ? 'critical' : 'sheddable'),
      tenant: (o) => o.headers?.['x-account'],
    }))
    const order = []
    const get = (path, account) =>
      request(base + path, { dispatcher: agent, headers: account ? { 'x-account': account } : {} }).then(async (r) => order.push(await r.body.text()))
    await Promise.all([get('/a'), get('/b', 'acme'), get('/vip1', 'acme'), get('/c'), get('/vip2')])
    assert.deepEqual(order, ['/a', '/vip1', '/vip2', '/b', '/c'])
    assert.equal(rx.stats(base).tenants, 1)
    assert.throws(() => interceptor(rx, { priority: 'urgent' }), /resilix\/undici: option priority must be one of 'critical'/)
    const bad = new Agent().compose(interceptor(rx, { tenant: () => 5 }))
    await assert.rejects(request(base + '/x', { dispatcher: bad }), /the tenant function's result must be a string/)
    assert.equal(rx.stats(base).inflight, 0)
  } finally {
    srv.close()
    rx.close()
  }
})
