// Real habits: one AbortSignal shared by many calls, a fn that calls execute on its own key, a
// Promise.allSettled burst on a new key (the p-limit habit).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { getEventListeners } from 'node:events'
import { Resilix } from '../index.js'
import { fixed, deferred, sleep } from './helpers.mjs'

/** Runs n calls that wait on `gate`, each with the signal sig(i); returns ms to start them all. */
async function startCalls(rx, n, sig, gate) {
  const t0 = performance.now()
  const ps = []
  for (let i = 0; i < n; i++) ps.push(rx.execute(() => gate, { key: 'k', signal: sig(i) }))
  const ms = performance.now() - t0
  return { ps, ms }
}

test('shared signal: one listener per signal per instance, linear cost, no MaxListenersExceededWarning', async () => {
  const warnings = []
  const onWarning = (w) => warnings.push(w.name)
  process.on('warning', onWarning)
  const N = 20_000
  const rx = fixed(N)
  const shared = new AbortController().signal
  const g1 = deferred()
  const a = await startCalls(rx, N, () => shared, g1.promise)
  assert.equal(getEventListeners(shared, 'abort').length, 1, 'one listener for every call sharing the signal')
  const t0 = performance.now()
  g1.resolve('done')
  await Promise.all(a.ps)
  const sharedMs = a.ms + (performance.now() - t0)
  assert.equal(getEventListeners(shared, 'abort').length, 0, 'no listener outlives the calls')

  const g2 = deferred()
  const own = Array.from({ length: N }, () => new AbortController().signal)
  const b = await startCalls(rx, N, (i) => own[i], g2.promise)
  const t1 = performance.now()
  g2.resolve('done')
  await Promise.all(b.ps)
  const ownMs = b.ms + (performance.now() - t1)
  process.off('warning', onWarning)
  assert.ok(!warnings.includes('MaxListenersExceededWarning'), warnings.join())
  // Quadratic removal made this ratio 15 at 40 000 calls; linear keeps it near 1.
  assert.ok(sharedMs < 4 * ownMs + 50, `shared ${sharedMs.toFixed(0)} ms, one signal each ${ownMs.toFixed(0)} ms`)
  assert.equal(rx.stats('k').inflight, 0)
})

test('shared signal: aborting it answers every call sharing it, waiting or running, once', async () => {
  const rx = fixed(5, { queue: { initialFactor: 100, maxFactor: 100 } })
  const ac = new AbortController()
  const other = rx.execute(() => 'other', { key: 'k' })
  const ps = []
  for (let i = 0; i < 50; i++) {
    ps.push(rx.execute((ctx) => new Promise((_, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('fn saw abort')), { once: true })), { key: 'k', signal: ac.signal }))
  }
  assert.equal(rx.stats('k').queued, 46)
  const reason = new Error('caller left')
  ac.abort(reason)
  const outs = await Promise.allSettled(ps)
  assert.ok(outs.every((o) => o.status === 'rejected' && o.reason === reason))
  assert.equal(await other, 'other')
  await new Promise((r) => setImmediate(r))
  const s = rx.stats('k')
  assert.deepEqual([s.inflight, s.queued, s.verdicts.cancelled], [0, 0, 4])
  assert.equal(getEventListeners(ac.signal, 'abort').length, 0)
})

test('self-wait: a fn calling execute on its own key at the limit warns once, naming the key', async () => {
  const rx = fixed(1)
  const warnings = []
  const onWarning = (w) => w.code === 'RESILIX_SELF_WAIT' && warnings.push(w.message)
  process.on('warning', onWarning)
  const inner = () => rx.execute(() => 'inner', { key: 'api', timeoutMs: 100 }).catch((e) => e.name)
  const outs = [await rx.execute(inner, { key: 'api' }), await rx.execute(inner, { key: 'api' })]
  await new Promise((r) => setImmediate(r))
  process.off('warning', onWarning)
  // The inner call can only time out, or (once the key knows how long a call holds its slot) be
  // refused at once because it could not leave the queue in time: its slot is its caller’s.
  assert.equal(outs[0], 'TimeoutError')
  assert.ok(['TimeoutError', 'RejectedError'].includes(outs[1]), outs[1])
  assert.equal(warnings.length, 1)
  assert.match(warnings[0], /"api"/)
  // Not a self-wait: another key, or a slot free.
  assert.equal(await rx.execute(() => rx.execute(() => 'x', { key: 'other' }), { key: 'api' }), 'x')
})

test('burst: Promise.allSettled over 100 and 1 000 calls of a 5 ms fn sheds none, on a new key and on a warm one, with and without a deadline', async () => {
  for (const timeoutMs of [undefined, 2000]) {
    const rx = new Resilix(timeoutMs === undefined ? {} : { timeoutMs })
    const run = (key, n) => Promise.allSettled(Array.from({ length: n }, () => rx.execute(() => sleep(5), { key })))
    const shed = (outs) => outs.filter((o) => o.status === 'rejected').map((o) => o.reason.message)
    assert.deepEqual(shed(await run('a', 100)), [], `new key, timeoutMs ${timeoutMs}`)
    assert.deepEqual(shed(await run('b', 1000)), [], `new key, timeoutMs ${timeoutMs}`)
    // The key has samples now (a burst on a warm key is no different: it drains).
    assert.deepEqual(shed(await run('b', 1000)), [], `warm key, timeoutMs ${timeoutMs}`)
    const s = rx.stats('b')
    assert.deepEqual([s.inflight, s.queued, s.rejections.queue], [0, 0, 0])
  }
})
