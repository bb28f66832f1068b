// The composition of retry with each policy below it (retry → breaker → quota → throttle →
// limiter and queue → bulkhead → timeout), through execute and the undici interceptor's fetch
// and request(), against a real local upstream, through the public API only.
// acquire() has no retry: it hands the caller a permit and the caller sends the request, so
// there is nothing resilix could send again; these six pairs do not apply to it.
// What the caller gets when a retry is refused differs by surface, as documented: execute
// resolves or rejects with the attempt before (the last attempt's outcome); the interceptor has
// abandoned that response and rejects with the RejectedError.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { KEY, until, inWorld } from './fixtures/composition-surfaces.mjs'

const RETRYING = ['execute', 'fetch', 'request']
const quick = { attempts: 3, baseMs: 1, maxDelayMs: 1 }
/** A fixed wait between attempts (decorrelated jitter between equal bounds). */
const steady = (ms) => ({ attempts: 2, backoff: 'decorrelated', baseMs: ms, maxDelayMs: ms })

/** A retry refused by `reason` after the attempt that answered `status`: what the caller gets. */
function assertRefusedRetry(w, o, status, reason) {
  if (w.surface === 'execute') assert.equal(o.status, status, `execute ends with the attempt before: ${o.error}`)
  else assert.equal(o.reason, reason, `the interceptor rejects with the retry's RejectedError: ${o.error ?? o.status}`)
}

/**
 * A call of /seq/a/500,200 whose retry finds a permit, taken as the retry is announced, holding
 * the one place: the retry is refused by `reason` after its wait, and the caller gets it. Resolves
 * with that permit.
 */
async function retryRefused(w, reason) {
  let holder
  w.rx.onRetry(() => (holder ??= w.rx.acquire(KEY)))
  const o = await w.call('/seq/a/500,200')
  assert.equal(w.up.hits('/seq/a/500,200'), 1)
  assert.deepEqual(w.rejects.map((e) => [e.reason, e.attempt]), [[reason, 2]])
  assertRefusedRetry(w, o, 500, reason)
  return holder
}

for (const surface of RETRYING) {
  test(`retry → breaker [${surface}]: each attempt is a breaker call, and the breaker opened by the attempts ends the retries`, async () => {
    await inWorld(surface, { retry: quick, breaker: { consecutiveFailures: 2 } }, async (w) => {
      const o = await w.call('/status/500')
      const s = w.stats()
      // Two attempts seen as two failures: the retry is outside the breaker, not one call to it.
      assert.equal(s.verdicts.failure, 2)
      assert.equal(s.breaker, 'open')
      // The third attempt was never sent: the breaker it passes again refused it.
      assert.equal(w.up.hits('/status/500'), 2)
      // Every surface ends with that attempt's 500, and no third attempt is announced: the
      // interceptor decides at the headers, before the settle, as the breaker will read it.
      assert.equal(o.status, 500, `the attempt's own 500, not a refusal: ${o.error}`)
      assert.equal(s.retries, 1)
      // A later call meets the open breaker before anything else.
      const later = await w.call('/ok')
      assert.equal(later.reason, 'breaker')
      assert.equal(w.up.hits('/ok'), 0)
    })
  })

  test(`retry → quota [${surface}]: each attempt is charged again; the quota refuses the retry it has no budget for`, async () => {
    await inWorld(surface, { retry: quick, breaker: false, quota: { requests: 2 }, timeoutMs: 5000 }, async (w) => {
      const o = await w.call('/status/500')
      assert.equal(w.up.hits('/status/500'), 2)
      assert.equal(w.spent(), 2, 'two attempts sent, two requests charged')
      const refusal = w.rejects.find((e) => e.reason === 'quota')
      assert.equal(refusal?.attempt, 3, 'the third attempt passed the quota again and was refused')
      assert.equal(w.stats().rejections.quota, 1)
      assertRefusedRetry(w, o, 500, 'quota')
    })
  })

  test(`retry → throttle [${surface}]: a retry passes the throttle again, refused before its wait and never announced`, async () => {
    await inWorld(surface, { retry: quick, breaker: false, seed: 7 }, async (w) => {
      for (let i = 0; i < 30; i++) await w.call('/status/429', { retry: false })
      const sentBefore = w.up.hits('/status/429')
      w.rejects.length = 0
      w.retries.length = 0
      const outs = []
      for (let i = 0; i < 20; i++) outs.push(await w.call('/status/429'))
      const retried = w.rejects.filter((e) => e.reason === 'throttle' && e.attempt !== undefined)
      assert.ok(retried.length >= 1, 'a retry was drawn by the throttle')
      // No refused retry was announced to onRetry, so every announced retry was sent.
      assert.equal(w.up.hits('/status/429') - sentBefore, outs.filter((o) => o.status === 429).length + w.retries.length)
      for (const o of outs) assert.ok(o.status === 429 || o.reason === 'throttle', `a 429 or a throttle refusal: ${o.error}`)
      // A refused retry ends the call with the attempt before: a 429 on every surface.
      assert.ok(outs.filter((o) => o.status === 429).length >= retried.length)
      assert.equal(w.stats().verdicts.failure, 0)
    })
  })

  test(`retry → limiter and queue [${surface}]: a retry takes its own permit and waits in the queue for it`, async () => {
    await inWorld(surface, { algorithm: 'fixed', initialLimit: 1, breaker: false, retry: steady(50) }, async (w) => {
      // A permit taken as the retry is announced (acquire admits at once) holds the one slot.
      let holder
      w.rx.onRetry(() => (holder ??= w.rx.acquire(KEY)))
      const a = w.call('/seq/a/500,200')
      await until(() => w.stats().queued === 1, 'the retry to queue behind the holder')
      assert.equal(w.up.hits('/seq/a/500,200'), 1)
      ;(await holder).release()
      assert.deepEqual(await a, { status: 200 })
      const s = w.stats()
      assert.deepEqual([s.verdicts.failure, s.verdicts.success, s.retries, s.inflight, s.queued], [1, 2, 1, 0, 0])
    })
  })

  test(`retry → limiter without a queue [${surface}]: a retry refused 'limit' after its wait; a first attempt refused is not retried`, async () => {
    await inWorld(surface, { algorithm: 'fixed', initialLimit: 1, queue: false, breaker: false, retry: steady(50) }, async (w) => {
      const holder = await retryRefused(w, 'limit')
      const first = await w.call('/status/500')
      assert.equal(first.reason, 'limit')
      assert.equal(w.up.hits('/status/500'), 0)
      assert.equal(w.stats().retries, 1, 'a refusal of our own is never retried')
      holder.release()
    })
  })

  test(`retry → bulkhead [${surface}]: a retry takes a bulkhead place again; refused there, it is not retried`, async () => {
    await inWorld(surface, { breaker: false, bulkhead: { maxConcurrent: 1 }, retry: steady(50) }, async (w) => {
      const holder = await retryRefused(w, 'bulkhead')
      // A first attempt the bulkhead refuses is refused at once, never retried.
      const first = await w.call('/status/500')
      assert.equal(first.reason, 'bulkhead')
      assert.equal(w.stats().retries, 1)
      assert.equal(w.stats().rejections.bulkhead, 2)
      holder.release()
      assert.equal(w.stats().bulkheadActive, 0)
    })
  })

  test(`retry → timeout [${surface}]: an attempt's deadline passing is retried; a Retry-After beyond the call's deadline ends it`, async () => {
    await inWorld(surface, { breaker: false, timeoutMs: 20_000, retry: { ...quick, attempts: 2, attemptTimeoutMs: 300 } }, async (w) => {
      const o = await w.call('/seq/a/s10000,200')
      assert.deepEqual(o, { status: 200 })
      assert.equal(w.up.hits('/seq/a/s10000,200'), 2)
      assert.deepEqual(w.retries.map((e) => [e.attempt, e.reason]), [[2, 'timeout']])
      const s = w.stats()
      assert.deepEqual([s.verdicts.timeout, s.verdicts.success, s.inflight], [1, 1, 0])
    })
    await inWorld(surface, { breaker: false, timeoutMs: 3000, retry: quick }, async (w) => {
      const o = await w.call('/seq/b/503?ra=30')
      assert.ok(o.timeout, `a TimeoutError: ${o.error ?? o.status}`)
      assert.equal(o.timeout.retryAfterMs, 30_000)
      assert.equal(w.up.hits('/seq/b/503'), 1, 'no attempt after a hint the deadline cannot honour')
      assert.equal(w.retries.length, 0)
    })
  })
}
