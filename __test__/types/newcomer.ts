// Type-checked by `npm test` with usage.ts: what a newcomer writes first, typed as it behaves.
import { Resilix, isRejectedError, isTimeoutError, findRejectedError } from '../../index.js'
import type { CausedBy, RejectedError, TimeoutError, Permit } from '../../index.js'

const rx = new Resilix()

async function wrapped(url: string): Promise<void> {
  try {
    await fetch(url)
  } catch (err) {
    // True for fetch's TypeError too, whose `cause` is the RejectedError: the fields are not
    // on the TypeError, so the guard does not claim them.
    if (isRejectedError(err)) {
      const cause: unknown = err.cause
      // @ts-expect-error: reason is on the RejectedError, which may be the cause: use findRejectedError
      console.log(err.reason, cause)
      const r: RejectedError | undefined = findRejectedError(err)
      console.log(r?.reason, r?.key)
    }
    if (isTimeoutError(err)) {
      const t: TimeoutError | CausedBy<TimeoutError> = err
      console.log(t.message)
    }
  }
}

async function acquireBothWays(): Promise<void> {
  const a: Permit = await rx.acquire('api', { timeoutMs: 10 })
  const b: Permit = await rx.acquire({ key: 'api', timeoutMs: 10 })
  const c: Permit = await rx.acquire({ timeoutMs: 10 })
  a.release()
  b.release()
  c.release()
  // @ts-expect-error: the key is the first argument, or inside the one options object, not both
  await rx.acquire('api', { key: 'api' })
  // @ts-expect-error: a key is a string (url.host), not a URL
  await rx.execute(() => 1, { key: new URL('https://api.example.com') })
  // @ts-expect-error: execute takes a function that returns a promise, not a promise
  await rx.execute(fetch('https://api.example.com'))
}

void wrapped
void acquireBothWays

// Per-call events and the metrics helpers.
import dc from 'node:diagnostics_channel'
import type { CallSettleMessage, CallRejectMessage, CallLeaveMessage, CallRetryMessage, QuotaResumeMessage, QuotaStoreMessage, KeyStats } from '../../index.js'
import { instrument as otel } from '../../otel.js'
import { instrument as prometheus } from '../../prometheus.js'
import type { OtelOptions, Instrumentation } from '../../otel.js'
import { metrics } from '@opentelemetry/api'
import { Registry } from 'prom-client'

dc.subscribe('resilix:call:settle', (m) => {
  const msg = m as CallSettleMessage
  const total: number = msg.waitMs + msg.durationMs
  const same: boolean = msg.rx === rx && msg.verdict !== 'cancelled' && !msg.stuck
  console.log(total, same, msg.latencyMs)
})
dc.subscribe('resilix:call:reject', (m) => console.log((m as CallRejectMessage).reason))
dc.subscribe('resilix:call:leave', (m) => {
  const reason: 'timeout' | 'abort' | 'close' = (m as CallLeaveMessage).reason
  console.log(reason)
})
dc.subscribe('resilix:call:retry', (m) => {
  const { attempt, delayMs, reason } = m as CallRetryMessage
  const retried: 'overload' | 'failure' | 'timeout' | 'success' | 'answered' | 'rejected' = reason
  console.log(attempt + delayMs, retried)
})
dc.subscribe('resilix:quota:resume', (m) => {
  const { waitMs, outcome } = m as QuotaResumeMessage
  // @ts-expect-error: null when nobody listened as the wait began
  const ms: number = waitMs
  const o: 'granted' | 'refused' | 'left' = outcome
  console.log(ms, o)
})
dc.subscribe('resilix:quota:store', (m) => {
  const { state, error } = m as QuotaStoreMessage
  const e: string | undefined = error
  console.log(state === 'fallback', e)
})
const throttleAt = (s: KeyStats): number => s.throttleProbability
console.log(throttleAt)
const withMeter: OtelOptions = { meter: metrics.getMeter('app'), buckets: [0.1, 1] }
const handle: Instrumentation = otel(rx, withMeter)
handle.dispose()
prometheus(rx, { registry: new Registry() }).dispose()
// @ts-expect-error: a meter, not a name
otel(rx, { meter: 'resilix' })
// @ts-expect-error: unknown option
prometheus(rx, { prefix: 'x_' })
