// A stream that waited in the queue longer than expected and whose turn comes with less of its
// deadline left than a stream holds its slot is refused then, with 'queue', rather than run to
// be cut mid-stream. A pinned limit of 2; "streams" mark their first byte at once and hold
// their slot 600 ms.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { isRejectedError } from '../index.js'
import { fixed, sleep } from './helpers.mjs'

/** One call that marks its first byte (a stream) or not, then holds its slot until `until`. */
function call(rx, key, { stream, until, timeoutMs }) {
  return rx.execute(
    async (ctx) => {
      if (stream) ctx.mark()
      await until
    },
    { key, timeoutMs },
  )
}

/** Teaches `key` a 600 ms slot, fills its limit of 2 until `release()`, then queues one more call. */
async function queuedBehindLongCalls(rx, key, stream) {
  await Promise.all([0, 1].map(() => call(rx, key, { stream, until: sleep(600) })))
  let release
  const until = new Promise((r) => (release = r))
  const running = [0, 1].map(() => call(rx, key, { stream, until }))
  // Expected: one slot time (600 ms) of wait and one of run, within 0.8 × 1 700 ms: it waits.
  const waiter = call(rx, key, { stream, until: Promise.resolve(), timeoutMs: 1700 }).then(
    () => 'ran',
    (err) => err,
  )
  await sleep(10)
  assert.equal(rx.stats(key).queued, 1, 'the call waits')
  // The calls ahead hold their slots twice as long as taught: its turn comes at 1 200 ms, with
  // 500 ms of its deadline left, less than the ~640 ms a slot is now held.
  await sleep(1200)
  release()
  await Promise.all(running)
  return waiter
}

test('a stream whose turn comes with less deadline left than it would hold its slot is refused with queue, saying why', async () => {
  const rx = fixed(2)
  const out = await queuedBehindLongCalls(rx, 'llm', true)
  assert.ok(isRejectedError(out) && out.reason === 'queue', `refused with 'queue': ${out}`)
  assert.match(out.message, /its turn came with less of its deadline left than a stream holds its slot/)
  assert.doesNotMatch(out.message, /timed? ?out/i, 'an SDK would read it as its own timeout (ADR 0812)')
  const s = rx.stats('llm')
  assert.equal(s.queued, 0, 'it left the queue')
  assert.equal(s.inflight, 0, 'no slot is held for it')
  assert.equal(s.rejections.queue, 1)
  assert.equal(s.queueRefusalsByPriority.normal, 1, 'counted by priority, as every queue refusal')
  rx.close()
})

test('a plain call in the same place runs: it is not cut mid-stream, so what deadline it has is its own', async () => {
  const rx = fixed(2)
  assert.equal(await queuedBehindLongCalls(rx, 'api', false), 'ran')
  rx.close()
})
