// Open-loop traffic: Poisson arrivals at `rate` calls per second, each an undici `request`
// through resilix. Open loop on purpose: real callers do not slow down because an upstream
// did, so without a limiter a degradation grows the upstream's queue without bound.
import { Agent, request } from 'undici'
import { performance } from 'node:perf_hooks'
import { isRejectedError, isTimeoutError } from '../index.js'

const TICK_MS = 5

/** One keep-alive pool, no connection cap: resilix, not the HTTP client, bounds concurrency. */
export function createAgent() {
  return new Agent({ keepAliveTimeout: 10_000, pipelining: 1 })
}

/**
 * Opens `n` keep-alive connections before the clock starts (outside resilix), so that the first
 * second of the run measures the upstream, not TCP handshakes.
 */
export async function warmUp(agent, url, n) {
  await Promise.all(Array.from({ length: n }, () => request(url, { dispatcher: agent }).then((r) => r.body.text())))
}

export function startTraffic({ rx, url, key, rate, timeoutMs, recorder, agent }) {
  let outstanding = 0
  let drained = null
  let stopped = false

  async function call() {
    const t0 = performance.now()
    let upstreamMs = 0
    try {
      await rx.execute(
        async (ctx) => {
          const t1 = performance.now()
          const { statusCode, body } = await request(url, { dispatcher: agent, signal: ctx.signal })
          ctx.mark() // response headers: the latency sample ends here
          upstreamMs = performance.now() - t1
          await body.text()
          return { statusCode } // classified by its status (2xx: success)
        },
        { key, timeoutMs },
      )
      recorder.ok(upstreamMs, performance.now() - t0)
    } catch (err) {
      if (isRejectedError(err)) recorder.shed(err.reason)
      else if (isTimeoutError(err)) recorder.timeout(err.queued)
      else recorder.error(err)
    } finally {
      if (--outstanding === 0 && drained !== null) drained()
    }
  }

  // Arrivals are drawn as exponential gaps and released by a short tick: one timer, not one
  // per call, and the same average rate whatever the timer resolution.
  let next = performance.now()
  const gap = () => (-Math.log(1 - Math.random()) * 1000) / rate
  const timer = setInterval(() => {
    const now = performance.now()
    while (next <= now && !stopped) {
      next += gap()
      outstanding++
      recorder.offered()
      call()
    }
  }, TICK_MS)

  return {
    get outstanding() {
      return outstanding
    },
    /** Stops new arrivals and waits for every outstanding call to end (bounded by the deadline). */
    async stop() {
      stopped = true
      clearInterval(timer)
      if (outstanding > 0) await new Promise((resolve) => (drained = resolve))
      await agent.close()
    },
  }
}
