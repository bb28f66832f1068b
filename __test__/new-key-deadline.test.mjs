// A batch with a deadline on a new key (ADR 0615): the key has no latency when the batch
// arrives, so every call waits; once its first call settles, the waiters that cannot leave the
// queue in time are refused at once instead of timing out at their deadline. Against a real
// healthy 20 ms upstream, through execute() and through the interceptor. Prints what it measured.
import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { Agent, request } from 'undici'
import { Resilix, isRejectedError, isTimeoutError } from 'resilix'
import { interceptor } from 'resilix/undici'
import { startUpstream } from './fixtures/http-upstream.mjs'

const BATCH = 1000
const TIMEOUT_MS = 500

let up
let plain
before(async () => {
  up = await startUpstream()
  // Warm the process (JIT, connections): the key is new, the process is not.
  plain = new Agent()
  for (let i = 0; i < 3; i++) {
    await Promise.all(Array.from({ length: 100 }, () => request(up.url('/slow/20'), { dispatcher: plain }).then((r) => r.body.text())))
  }
})
after(async () => {
  await plain.close()
  await up.close()
})

/** Fires `n` calls at once; resolves to the count of each outcome and when each was answered. */
async function batch(n, once) {
  const out = { served: 0, refused: 0, timedOut: 0, other: [], refusedAtMs: [], timedOutAtMs: [] }
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: n }, () =>
      once().then(
        () => out.served++,
        (err) => {
          const e = isRejectedError(err.cause) || isTimeoutError(err.cause) ? err.cause : err
          const at = performance.now() - t0
          if (isRejectedError(e) && e.reason === 'queue') {
            out.refused++
            out.refusedAtMs.push(at)
          } else if (isTimeoutError(e)) {
            out.timedOut++
            out.timedOutAtMs.push(at)
          } else out.other.push(String(e))
        },
      ),
    ),
  )
  return out
}

function check(how, out) {
  const last = (a) => (a.length === 0 ? null : Math.round(Math.max(...a)))
  console.log(
    `${how}: served ${out.served}, refused ${out.refused} (the last at ${last(out.refusedAtMs)} ms), ` +
      `timed out ${out.timedOut} (the last at ${last(out.timedOutAtMs)} ms)`,
  )
  assert.deepEqual(out.other, [])
  assert.equal(out.served + out.refused + out.timedOut, BATCH)
  assert.ok(out.timedOut <= BATCH * 0.05, `${out.timedOut} of ${BATCH} timed out (at most 5 %)`)
  assert.ok(out.served >= 200, `only ${out.served} served`)
  // Refused at once when the first call settled, not at their deadline.
  assert.ok(out.refused > 0, 'a 500 ms deadline cannot hold a 1 000-call batch on a limit of 20')
  assert.ok(last(out.refusedAtMs) < TIMEOUT_MS, `a refusal came at ${last(out.refusedAtMs)} ms`)
}

test(`execute: ${BATCH} calls with timeoutMs ${TIMEOUT_MS} on a new key mostly run or are refused at once, few time out`, async () => {
  const rx = new Resilix()
  const fn = (ctx) => request(up.url('/slow/20'), { dispatcher: plain, signal: ctx.signal }).then((r) => r.body.text())
  const out = await batch(BATCH, () => rx.execute(fn, { key: 'new', timeoutMs: TIMEOUT_MS }))
  check('execute', out)
  const s = rx.stats('new')
  assert.deepEqual([s.inflight, s.queued, s.rejections.queue], [0, 0, out.refused])
  rx.close()
})

test(`interceptor: ${BATCH} requests with timeoutMs ${TIMEOUT_MS} on a new origin mostly run or are refused at once, few time out`, async () => {
  const rx = new Resilix()
  const agent = new Agent().compose(interceptor(rx, { timeoutMs: TIMEOUT_MS }))
  const out = await batch(BATCH, () => request(up.url('/slow/20'), { dispatcher: agent }).then((r) => r.body.text()))
  check('interceptor', out)
  const s = rx.stats(up.origin)
  assert.deepEqual([s.inflight, s.queued], [0, 0])
  await agent.close()
  rx.close()
})
