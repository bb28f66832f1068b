// Listeners run synchronously inside execute() and acquire(), and may call back into the same
// instance: close() it, or call execute() again. Re-entry never makes a call throw
// synchronously, never recurses, and never loops for ever.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { Resilix, isRejectedError } from '../index.js'

/** Calls `start()`; a synchronous throw is a failure of its own, not a rejection. */
function noSyncThrow(start) {
  let p
  assert.doesNotThrow(() => {
    p = start()
  }, 'threw synchronously')
  assert.equal(typeof p?.then, 'function', 'did not return a promise')
  return p
}

const closedErr = (e) => e?.code === 'ERR_RESILIX_CLOSED'

for (const api of ['execute', 'acquire']) {
  test(`listeners: close() inside onEvict makes the ${api}() that evicted reject, never throw`, async () => {
    const rx = new Resilix({ maxKeys: 1 })
    await rx.execute(async () => 'a', { key: 'a' })
    const evicted = []
    rx.onEvict((e) => {
      evicted.push(e.key)
      rx.close()
    })
    const p = noSyncThrow(() => (api === 'execute' ? rx.execute(async () => 'b', { key: 'b' }) : rx.acquire('b')))
    await assert.rejects(p, closedErr)
    assert.deepEqual(evicted, ['a'])
    assert.deepEqual(rx.keys(), [])
    await assert.rejects(rx.execute(async () => 1, { key: 'c' }), closedErr)
  })
}

test('listeners: close() inside onBreakerStateChange while a call is admitted: the call rejects, nothing hangs', async () => {
  const rx = new Resilix({ algorithm: 'fixed', breaker: { consecutiveFailures: 1, openMs: 20 } })
  const seen = []
  rx.onBreakerStateChange((e) => {
    seen.push(e.state)
    if (e.state === 'half-open') rx.close() // seen by the acquire after openMs
  })
  await rx.execute(async () => 'ok')
  await rx.execute(() => Promise.reject(new Error('down'))).catch(() => {})
  await new Promise((r) => setTimeout(r, 40))
  const p = noSyncThrow(() => rx.execute(async () => 'probe', { timeoutMs: 1000 }))
  await assert.rejects(p, closedErr)
  assert.deepEqual(seen, ['open', 'half-open'])
})

test('listeners: an onReject listener that calls execute() neither recurses nor throws synchronously', async () => {
  const rx = new Resilix({ breaker: { consecutiveFailures: 1, openMs: 600_000 } })
  await rx.execute(() => Promise.reject(new Error('down')), { key: 'k' }).catch(() => {})
  const warnings = []
  const onWarning = (w) => warnings.push(w.code)
  process.on('warning', onWarning)
  let calls = 0
  let depth = 0
  let maxDepth = 0
  const retried = []
  rx.onReject(() => {
    calls++
    maxDepth = Math.max(maxDepth, ++depth)
    // A retry through resilix: itself refused by the open breaker, so it raises another event.
    retried.push(rx.execute(async () => 'retry', { key: 'k' }).catch((e) => e))
    depth--
  })
  try {
    const p = noSyncThrow(() => rx.execute(async () => 'first', { key: 'k' }))
    await assert.rejects(p, (e) => isRejectedError(e) && e.reason === 'breaker')
    assert.equal(maxDepth, 1, 'a listener ran inside another')
    assert.ok(calls > 1 && calls <= 1001, `listener called ${calls} times`)
    for (const r of await Promise.all(retried)) assert.ok(isRejectedError(r), String(r))
    await new Promise((r) => setImmediate(r))
    assert.deepEqual(warnings, ['RESILIX_LISTENER_LOOP'])
  } finally {
    process.off('warning', onWarning)
  }
  // Without a loop every event is delivered, after the listener that raised it, in order.
  const seen = []
  const rx2 = new Resilix({ breaker: { consecutiveFailures: 1, openMs: 600_000 } })
  for (const key of ['a', 'b']) await rx2.execute(() => Promise.reject(new Error('down')), { key }).catch(() => {})
  rx2.onReject((e) => {
    seen.push(`${e.key}:${e.reason}`)
    if (e.key === 'a') rx2.execute(async () => 1, { key: 'b' }).catch(() => {})
    seen.push(`end ${e.key}`)
  })
  await assert.rejects(rx2.execute(async () => 1, { key: 'a' }))
  assert.deepEqual(seen, ['a:breaker', 'end a', 'b:breaker', 'end b'])
})
