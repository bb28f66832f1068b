// A stall of this process (a blocked event loop) is not evidence about the upstream: a deadline
// that passed during it is kept when a waiter's turn comes; answers that arrived during it are
// neither timeouts nor latency samples, while the caller still gets its TimeoutError.
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import dc from 'node:diagnostics_channel'
import { Worker } from 'node:worker_threads'
import { fileURLToPath } from 'node:url'
import { Resilix, isTimeoutError } from '../index.js'
import { sleep, fixed } from './helpers.mjs'

/** Blocks the event loop for at least `ms`, and until `until()` holds (at most 20 s). */
function block(ms, until = () => true) {
  const t0 = performance.now()
  while (performance.now() - t0 < ms || (!until() && performance.now() - t0 < 20_000));
}

const outcome = (p) => p.then((v) => ({ ok: v }), (e) => ({ err: e }))

test('stall: a queued call whose deadline passed while the loop was blocked never runs (execute)', async () => {
  const rx = fixed(1, { queue: { initialFactor: 10, maxFactor: 10 } })
  const holder = rx.execute(() => sleep(20))
  const ran = []
  const waiting = [1, 2, 3].map((i) => outcome(rx.execute(async () => ran.push(i), { timeoutMs: 100 })))
  block(400)
  const results = await Promise.all(waiting)
  await holder
  assert.deepEqual(ran, [], 'a waiter ran after its deadline')
  for (const r of results) assert.ok(isTimeoutError(r.err) && r.err.queued === true, String(r.err ?? r.ok))
  assert.equal(rx.stats('default').inflight, 0)
  assert.equal(rx.stats('default').queued, 0)
})

test('stall: a queued acquire whose deadline passed while the loop was blocked gets no permit', async () => {
  const rx = fixed(1)
  const held = await rx.acquire('k')
  const waiting = outcome(rx.acquire('k', { timeoutMs: 100 }))
  // The holder releases right after the block, before any timer can run.
  await Promise.resolve().then(() => {
    block(400)
    held.release()
  })
  const r = await waiting
  if (r.ok) r.ok.release()
  assert.ok(isTimeoutError(r.err) && r.err.queued === true, `got ${r.ok ? 'a permit' : r.err}`)
  assert.equal(rx.stats('k').inflight, 0)
  assert.equal(rx.stats('k').queued, 0)
})

/** An HTTP upstream in a worker thread: it answers while this thread is blocked. */
async function workerUpstream() {
  const buffer = new SharedArrayBuffer(12)
  const shared = new Int32Array(buffer)
  shared[2] = 1
  const worker = new Worker(fileURLToPath(new URL('./fixtures/worker-upstream.cjs', import.meta.url)), {
    workerData: { shared: buffer },
  })
  const [port] = await once(worker, 'message')
  return {
    url: `http://127.0.0.1:${port}/`,
    answered: () => Atomics.load(shared, 0),
    received: () => Atomics.load(shared, 1),
    /** Requests wait for their answer while held. */
    hold: (on) => Atomics.store(shared, 2, on ? 0 : 1),
    close: async () => {
      worker.postMessage('close')
      await once(worker, 'exit')
    },
  }
}

// The stall starts in a timer callback (the answers are read before the late deadline timer
// runs: their latency is the stall's) or in a check-phase callback (the deadline timer runs
// first: the calls time out with their answers waiting). Either way the upstream answered.
for (const where of ['timer', 'immediate']) {
  test(`stall: answers that arrived during a blocked loop (${where}) are neither timeouts nor samples`, async () => {
    const up = await workerUpstream()
    const rx = new Resilix({ breaker: { consecutiveFailures: 5 } })
    const call = async (ctx) => (await fetch(up.url, { signal: ctx.signal })).text()
    try {
      // Warm: open the connections, learn a baseline.
      for (let i = 0; i < 3; i++) await Promise.all(Array.from({ length: 10 }, () => rx.execute(call, { key: 'up', timeoutMs: 2000 })))
      const before = rx.stats('up')
      const target = up.answered() + 10
      const published = []
      const onSettle = (m) => published.push(m.verdict)
      dc.subscribe('resilix:call:settle', onSettle)
      up.hold(true)
      const calls = Array.from({ length: 10 }, () => outcome(rx.execute(call, { key: 'up', timeoutMs: 300 })))
      while (up.received() < target) await sleep(1)
      // The upstream answers only once this thread is blocked.
      const stall = () => {
        up.hold(false)
        block(600, () => up.answered() >= target)
      }
      if (where === 'timer') setTimeout(stall, 0)
      else setImmediate(stall)
      const results = await Promise.all(calls)
      await sleep(50)
      dc.unsubscribe('resilix:call:settle', onSettle)
      assert.deepEqual(published, Array(10).fill('cancelled'), 'per-call events say what the engine recorded')
      const s = rx.stats('up')
      assert.equal(up.answered(), target, 'the upstream answered every call')
      if (where === 'immediate') {
        for (const r of results) assert.ok(isTimeoutError(r.err), `the caller gets its TimeoutError, got ${r.err ?? r.ok}`)
      }
      assert.equal(s.verdicts.timeout, 0, 'timeout verdicts from our own stall')
      assert.equal(s.verdicts.success, before.verdicts.success, 'latency samples carrying the stall')
      assert.equal(s.verdicts.cancelled, 10)
      assert.ok(s.lastLatencyMs < 300, `learnt a latency of ${s.lastLatencyMs} ms`)
      assert.equal(s.breaker, 'closed')
      assert.equal(s.limit, before.limit)
      assert.equal(await rx.execute(call, { key: 'up', timeoutMs: 2000 }), 'ok')
    } finally {
      rx.close()
      await up.close()
    }
  })
}

test('stall: an upstream that answers after the deadline still gives timeout verdicts', async () => {
  const rx = new Resilix({ breaker: false })
  const late = () => sleep(150)
  const results = await Promise.all(Array.from({ length: 5 }, () => outcome(rx.execute(late, { timeoutMs: 50 }))))
  for (const r of results) assert.ok(isTimeoutError(r.err))
  await sleep(200)
  assert.equal(rx.stats('default').verdicts.timeout, 5)
  assert.equal(rx.stats('default').verdicts.cancelled, 0)
})
