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

function report(how, out) {
  const last = (a) => (a.length === 0 ? null : Math.round(Math.max(...a)))
  console.log(
    `${how}: served ${out.served}, refused ${out.refused} (the last at ${last(out.refusedAtMs)} ms), ` +
      `timed out ${out.timedOut} (the last at ${last(out.timedOutAtMs)} ms)`,
  )
  assert.deepEqual(out.other, [])
  assert.equal(out.served + out.refused + out.timedOut, BATCH)
}

/**
 * A new key's batch as a warm key's: at most 5 % time out, the rest are refused before their
 * deadline, and at least 200 are served. On a machine too busy for a 20 ms upstream to serve
 * 200 in 500 ms, the same batch on the key once warm says what it can serve: 3/4 of that.
 */
function check(how, fresh, warm) {
  report(`${how}, new key`, fresh)
  report(`${how}, warm key`, warm)
  assert.ok(fresh.timedOut <= BATCH * 0.05, `${fresh.timedOut} of ${BATCH} timed out (at most 5 %)`)
  const least = Math.min(200, Math.floor(0.75 * warm.served))
  assert.ok(fresh.served >= least, `${fresh.served} served, expected at least ${least}`)
  assert.ok(fresh.refused > 0, 'a 500 ms deadline cannot hold a 1 000-call batch on a limit of 20')
  assert.ok(Math.max(...fresh.refusedAtMs) < TIMEOUT_MS, 'refused before the deadline, not at it')
}

test(`execute: ${BATCH} calls with timeoutMs ${TIMEOUT_MS} on a new key time out as rarely as on a warm key: the rest are refused at once`, async () => {
  const rx = new Resilix()
  const fn = (ctx) => request(up.url('/slow/20'), { dispatcher: plain, signal: ctx.signal }).then((r) => r.body.text())
  const once = () => rx.execute(fn, { key: 'new', timeoutMs: TIMEOUT_MS })
  const fresh = await batch(BATCH, once)
  const s = rx.stats('new')
  assert.deepEqual([s.inflight, s.queued, s.rejections.queue], [0, 0, fresh.refused])
  check('execute', fresh, await batch(BATCH, once))
  rx.close()
})

test(`interceptor: ${BATCH} requests with timeoutMs ${TIMEOUT_MS} on a new origin time out as rarely as on a warm key: the rest are refused at once`, async () => {
  const rx = new Resilix()
  const agent = new Agent().compose(interceptor(rx, { timeoutMs: TIMEOUT_MS }))
  const once = () => request(up.url('/slow/20'), { dispatcher: agent }).then((r) => r.body.text())
  const fresh = await batch(BATCH, once)
  const s = rx.stats(up.origin)
  assert.deepEqual([s.inflight, s.queued], [0, 0])
  check('interceptor', fresh, await batch(BATCH, once))
  await agent.close()
  rx.close()
})
