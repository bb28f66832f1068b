// A real upstream. An HTTP server in a child process (fixtures/upstream-server.cjs,
// a true concurrency bottleneck) is called through execute() with global fetch and with
// undici 7's request. Mid-run it is frozen (SIGSTOP: calls time out), then killed (SIGKILL:
// calls fail), then restarted on the same port. The breaker opens, nothing hangs, and with the
// upstream back the half-open probes close it. The "limit settles near the bottleneck" half is
// in upstream-limit.test.mjs (it needs the adaptive algorithms).
import { test } from 'node:test'
import assert from 'node:assert/strict'
import { once } from 'node:events'
import { Agent, request } from 'undici'
import { Resilix, isRejectedError, isTimeoutError } from '../index.js'
import { sleep } from './helpers.mjs'
import { startUpstream } from './fixtures/upstream.mjs'

async function stopUpstream(child) {
  if (child.exitCode !== null || child.signalCode !== null) return
  child.kill('SIGKILL')
  await once(child, 'exit')
}

/** Waits until pred() holds, polling; fails after ms. */
async function until(pred, ms, what) {
  const end = performance.now() + ms
  while (!pred()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(10)
  }
}

const clients = {
  fetch: () => ({
    call: async (url, ctx) => {
      const res = await fetch(url, { signal: ctx.signal })
      ctx.mark()
      await res.text()
      return res
    },
    close: async () => {},
  }),
  'undici request': () => {
    const agent = new Agent({ keepAliveTimeout: 1000 })
    return {
      call: async (url, ctx) => {
        const res = await request(url, { signal: ctx.signal, dispatcher: agent })
        ctx.mark()
        await res.body.text()
        return res
      },
      close: () => agent.destroy(),
    }
  },
}

for (const [name, makeClient] of Object.entries(clients)) {
  test(`upstream (${name}): frozen, killed and restarted — breaker opens, nothing hangs, breaker closes`, async (t) => {
    let up = await startUpstream()
    const port = up.port
    const url = `http://127.0.0.1:${port}/`
    const client = makeClient()
    const TIMEOUT = 300
    const rx = new Resilix({
      algorithm: 'fixed',
      initialLimit: 16,
      timeoutMs: TIMEOUT,
      breaker: { consecutiveFailures: 5, openMs: 150, halfOpenProbes: 2 },
    })
    const events = []
    rx.onBreakerStateChange((e) => events.push(e.state))
    const tally = { ok: 0, failed: 0, timeout: 0, rejected: 0 }
    let maxCallMs = 0
    let stop = false
    async function loop() {
      while (!stop) {
        const t0 = performance.now()
        try {
          await rx.execute((ctx) => client.call(url, ctx), { key: 'upstream' })
          tally.ok++
        } catch (e) {
          if (isRejectedError(e)) {
            tally.rejected++
            await sleep(5) // back off a little
          } else if (isTimeoutError(e)) tally.timeout++
          else tally.failed++
        }
        maxCallMs = Math.max(maxCallMs, performance.now() - t0)
      }
    }
    const loops = Array.from({ length: 24 }, loop)
    try {
      // 1. Healthy.
      await until(() => tally.ok >= 100, 5000, '100 successes')
      assert.equal(rx.stats('upstream').breaker, 'closed')
      // 2. Frozen: connections hang, calls time out, the breaker opens.
      const before = { ...tally }
      up.child.kill('SIGSTOP')
      await until(() => rx.stats('upstream').breaker === 'open', 5000, 'the breaker to open on timeouts')
      assert.ok(tally.timeout > before.timeout, 'calls timed out')
      // 3. Killed: connections reset or refused, calls fail fast; the breaker keeps refusing.
      up.child.kill('SIGKILL')
      await once(up.child, 'exit')
      const killed = { ...tally }
      await until(() => tally.failed > killed.failed && tally.rejected > killed.rejected + 20, 5000, 'failures and rejections')
      assert.notEqual(rx.stats('upstream').breaker, 'closed')
      // 4. Restarted on the same port: half-open probes succeed, the breaker closes.
      up = await startUpstream(port)
      await until(() => rx.stats('upstream').breaker === 'closed', 5000, 'the breaker to close')
      const back = tally.ok
      await until(() => tally.ok >= back + 50, 5000, 'successes after restart')
    } finally {
      stop = true
      await Promise.all(loops)
      await client.close()
      await stopUpstream(up.child)
    }
    // Nothing hangs: every call answered within its deadline (plus scheduling slack).
    assert.ok(maxCallMs < TIMEOUT + 1000, `slowest call ${maxCallMs.toFixed(0)} ms`)
    await until(() => rx.stats('upstream').inflight === 0, 2000, 'inflight to drain')
    const s = rx.stats('upstream')
    assert.equal(s.queued, 0)
    assert.ok(events.includes('open') && events.includes('half-open') && events.at(-1) === 'closed', `events ${events}`)
    assert.ok(s.verdicts.timeout > 0 && s.verdicts.failure > 0 && s.verdicts.success > 0)
    t.diagnostic(`${name}: ${JSON.stringify(tally)}; breaker ${events.join(' → ')}; slowest call ${maxCallMs.toFixed(0)} ms`)
  })
}
