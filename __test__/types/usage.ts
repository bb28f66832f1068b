// Type-checked by `npm test` (tsc --noEmit, strict). Each @ts-expect-error line must be an error:
// if the typings ever accept it, tsc fails on the unused directive.
import { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError, findRejectedError, findTimeoutError, attemptsOf } from '../../index.js'
import type { KeyStats, Verdict, ResilixOptions, Permit, Subscription, RetryOptions, RetryEvent, Priority, Cost, QuotaBudget, QuotaStats, RejectReason } from '../../index.js'

const rx = new Resilix({
  algorithm: 'gradient2',
  initialLimit: 10,
  minLimit: 2,
  queue: { initialFactor: 2, maxFactor: 3 },
  breaker: { consecutiveFailures: 3, slowCallMs: 2000 },
  bulkhead: { maxConcurrent: 50 },
  timeoutMs: 5000,
  classify: (o) => (o.ok ? undefined : 'failure'),
})
new Resilix({ limiter: false, breaker: false, bulkhead: false, throttle: false, timeoutMs: false })
new Resilix({ throttle: { multiplier: 2, windowMs: 60_000, maxRejection: 0.8 } })

async function main(): Promise<void> {
  const n: number = await rx.execute(async (ctx) => {
    const s: AbortSignal = ctx.signal
    ctx.mark()
    return s.aborted ? 0 : ctx.key.length
  }, { key: 'api.example.com', timeoutMs: 100 })
  const str: string = await rx.execute(() => 'sync value')
  const p: Permit = await rx.acquire('k', { timeoutMs: 10 })
  p.mark()
  p.release('overload')
  const s: KeyStats | undefined = rx.stats('k')
  const limit: number | null | undefined = s?.limit
  const all: Record<string, KeyStats> = rx.stats()
  const keys: string[] = rx.keys()
  const d = rx.onLimitChange((e) => console.log(e.key, e.limit, e.previous))
  d.dispose()
  rx.onBreakerStateChange((e) => {
    const st: 'closed' | 'open' | 'half-open' = e.state
    return st
  })
  rx.onReject((e) => e.reason === 'breaker')
  rx.onEvict((e) => e.key.length)
  const reg: { keys: number; refused: number; evicted: number } = rx.registryStats()
  const stuck: number | undefined = rx.stats('k')?.stuck
  rx[Symbol.dispose]()
  rx.close()
  try {
    await rx.execute(() => 1)
  } catch (e) {
    const rejected = findRejectedError(e)
    if (rejected !== undefined) {
      const r: 'limit' | 'queue' | 'bulkhead' | 'breaker' | 'registry' | 'throttle' | 'quota' = rejected.reason
      console.log(r)
    }
    if (isRejectedError(e)) console.log(e.message)
    const late = findTimeoutError(e)
    if (late) console.log(late.timeoutMs, late.queued)
    if (isTimeoutError(e)) console.log(e.name)
    if (e instanceof RejectedError || e instanceof TimeoutError) console.log(e.key)
  }
  const v: Verdict = 'answered'
  console.log(n, str, limit, all, keys, v)
  // Retry: instance-wide and per call, its event, its stats, the attempts of an outcome.
  const retrying = new Resilix({ retry: { attempts: 4, backoff: 'decorrelated', retryOn: ['overload', 'timeout'], attemptTimeoutMs: 500 }, retryBudget: { ratio: 0.1 } })
  const policy: RetryOptions = { baseMs: 50, maxDelayMs: 1000, maxRetryAfterMs: 10_000 }
  await retrying.execute(() => 1, { key: 'k', timeoutMs: 2000, retry: policy })
  await retrying.execute(() => 1, { retry: false })
  retrying.onRetry((e: RetryEvent) => {
    const r: 'failure' | 'overload' | 'timeout' = e.reason
    console.log(e.key, e.attempt, e.delayMs, r)
  })
  // Priorities and tenants: per call, in acquire(), in stats and in the reject event.
  const urgent: Priority = 'critical'
  await rx.execute(() => 1, { key: 'k', priority: urgent, tenant: 'acme' })
  const held = await rx.acquire('k', { priority: 'sheddable', tenant: 'batch' })
  held.release()
  const waitingCritical: number | undefined = rx.stats('k')?.queuedByPriority.critical
  const shedSheddable: number | undefined = rx.stats('k')?.queueRefusalsByPriority.sheddable
  const tenants: number | undefined = rx.stats('k')?.tenants
  rx.onReject((e) => console.log(e.priority === 'sheddable', e.tenant?.length))
  void waitingCritical
  void shedSheddable
  void tenants
  // Quotas: budgets per window, a call's cost, its settled usage, the stats.
  const llm = new Resilix({ quota: [{ requests: 500, tokens: 200_000, windowMs: 60_000, pace: true }, { requests: 10_000, windowMs: 86_400_000 }] })
  const cost: Cost = { tokens: 1200 }
  await llm.execute((ctx) => ctx.charge({ tokens: 900 }), { key: 'llm', cost })
  const lease = await llm.acquire('llm', { cost: { tokens: 10 } })
  lease.release()
  lease.charge({ tokens: 3 })
  const q: QuotaStats | null | undefined = llm.stats('llm')?.quota
  const spent: number | undefined = q?.budgets[0].spent
  const budget: QuotaBudget = { inputTokens: 40_000, outputTokens: 8_000 }
  new Resilix({ quota: budget })
  const refusedForQuota: number | undefined = llm.stats('llm')?.rejections.quota
  const why: RejectReason = 'quota'
  console.log(spent, refusedForQuota, why)
  // @ts-expect-error a budget is a number of calls or tokens
  new Resilix({ quota: { tokens: '200k' } })
  const retried: number | undefined = retrying.stats('k')?.retries
  const refusedByBudget: number | undefined = retrying.stats('k')?.retryBudgetRefusals
  const refusedForBody: number | undefined = retrying.stats('k')?.retryBodyRefusals
  const attempts: number | undefined = attemptsOf(new Error('x'))
  const hinted: number | undefined = new TimeoutError('k', 1).retryAfterMs
  console.log(retried, refusedByBudget, refusedForBody, attempts, hinted)
  // @ts-expect-error 'answered' is never retried
  new Resilix({ retry: { retryOn: ['answered'] } })
  // @ts-expect-error the jitter is 'full' or 'decorrelated'
  new Resilix({ retry: { backoff: 'exponential' } })

  // A subscription is Disposable: `using` ends it with the block.
  {
    using sub = rx.onReject((e) => console.log(e.key, e.reason))
    const same: Subscription = sub
    void same
  }
  const handle: Disposable = rx.onLimitChange(() => {})
  handle[Symbol.dispose]()
}

// The error constructors, as users build them in their own tests.
const rejected: RejectedError = new RejectedError('breaker', 'api')
const timedOut: TimeoutError = new TimeoutError('api', 300, false)
const timedOutRunning: TimeoutError = new TimeoutError('api', 300)
// @ts-expect-error: a reason alone is not enough (the key is required)
new RejectedError('breaker')
// @ts-expect-error: not a RejectReason
new RejectedError('oops', 'api')
// @ts-expect-error: the key comes first, then the deadline in ms
new TimeoutError(300, 'api')
void rejected
void timedOut
void timedOutRunning

// @ts-expect-error: unknown execute option (a typo of timeoutMs); the runtime refuses it too
rx.execute(() => 1, { tiemout: 5 })
// @ts-expect-error: unknown acquire option
rx.acquire('k', { key: 'k' })
new Resilix({ limiter: true, queue: true, breaker: true })

// @ts-expect-error: not an algorithm
new Resilix({ algorithm: 'nope' })
// @ts-expect-error: limiter takes a boolean
new Resilix({ limiter: 'off' })
// @ts-expect-error: throttle.multiplier is a number
new Resilix({ throttle: { multiplier: '2' } })
// @ts-expect-error: bulkhead needs maxConcurrent
new Resilix({ bulkhead: {} })
// @ts-expect-error: unknown option
new Resilix({ maxLimt: 10 })
// @ts-expect-error: not a verdict
rx.acquire().then((p) => p.release('ok'))
// @ts-expect-error: timeoutMs is a number
rx.execute(() => 1, { timeoutMs: '5s' })
// @ts-expect-error: not a priority
rx.execute(() => 1, { priority: 'urgent' })
// @ts-expect-error: a tenant is a name
rx.acquire('k', { tenant: 42 })
const bad: ResilixOptions = {
  // @ts-expect-error: classify returns a verdict
  classify: () => 'great',
}
void bad
void main
