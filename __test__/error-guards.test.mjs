// The guards look through `cause`: fetch rejects with a TypeError whose cause is the
// interceptor's RejectedError or TimeoutError, and that TypeError is what users catch.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import http from 'node:http'
import { Agent } from 'undici'
import { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError, findRejectedError, findTimeoutError } from '../index.js'
import { interceptor } from '../undici.js'
import { deferred } from './helpers.mjs'

test('through real fetch and the interceptor: the guards are true for fetch\'s TypeError, find* return the cause', async () => {
  const gate = deferred()
  const server = http.createServer((req, res) => {
    if (req.url === '/slow') return void setTimeout(() => res.end('late'), 2000).unref()
    gate.promise.then(() => res.end('ok'))
  })
  await new Promise((r) => server.listen(0, '127.0.0.1', r))
  const origin = `http://127.0.0.1:${server.address().port}`
  const rx = new Resilix({ algorithm: 'fixed', initialLimit: 1, queue: false })
  const agent = new Agent().compose(interceptor(rx, { timeoutMs: 100 }))
  try {
    const first = fetch(origin + '/hold', { dispatcher: agent })
    await new Promise((r) => setTimeout(r, 50))
    const refused = await fetch(origin + '/hold', { dispatcher: agent }).catch((e) => e)
    gate.resolve()
    await (await first).text()

    assert.equal(refused.name, 'TypeError', 'fetch wraps the refusal')
    assert.ok(refused.cause instanceof RejectedError)
    assert.equal(isRejectedError(refused), true)
    assert.equal(isTimeoutError(refused), false)
    assert.equal(findRejectedError(refused), refused.cause)
    assert.deepEqual([findRejectedError(refused).reason, findRejectedError(refused).key], ['limit', origin])

    const late = await fetch(origin + '/slow', { dispatcher: agent }).catch((e) => e)
    assert.equal(late.name, 'TypeError')
    assert.equal(isTimeoutError(late), true)
    assert.equal(isRejectedError(late), false)
    assert.equal(findTimeoutError(late).timeoutMs, 100)
  } finally {
    await agent.close()
    server.close()
    server.closeAllConnections()
  }
})

test('the guards: the error itself, any depth of cause up to 8, never a cycle, never a throw', () => {
  const r = new RejectedError('breaker', 'api')
  const t = new TimeoutError('api', 100)
  assert.equal(findRejectedError(r), r, 'the error itself')
  let wrapped = r
  for (let i = 0; i < 8; i++) wrapped = new Error(`wrap ${i}`, { cause: wrapped })
  assert.equal(findRejectedError(wrapped), r, 'eight wrappers deep')
  assert.equal(isRejectedError(new Error('too deep', { cause: wrapped })), false, 'a ninth wrapper is beyond the search')
  const cycle = new Error('a')
  cycle.cause = new Error('b', { cause: cycle })
  assert.equal(isRejectedError(cycle), false)
  assert.equal(isTimeoutError(new Error('x', { cause: t })), true)
  assert.equal(isTimeoutError(new Error('x', { cause: r })), false)
  const hostile = new Proxy({}, { get() { throw new Error('trap') } })
  assert.equal(isRejectedError(hostile), false)
  assert.equal(isRejectedError({ get cause() { throw new Error('getter') } }), false)
  for (const v of [undefined, null, 0, 'RejectedError', { cause: 'x' }]) {
    assert.equal(isRejectedError(v), false)
    assert.equal(findTimeoutError(v), undefined)
  }
})
