// resilix: adaptive concurrency limiting, circuit breaking, bulkheads and timeouts, per upstream.
// This file is the typed reference; every default states where it comes from.

/**
 * How a settled call is classified:
 * - `success`: resolved with no status or a 1xx–3xx status. A latency sample; a breaker success.
 * - `failure`: a 5xx status or a thrown error. A sample that must not read as health; a breaker failure.
 * - `overload`: status 429 or 503. A strong reduce signal for the limiter; not a breaker failure.
 * - `answered`: another 4xx. The upstream did work: a latency sample without pressure; a breaker success.
 * - `timeout`: our deadline passed. The strongest reduce signal; a breaker failure.
 * - `rejected`: refused by our own policy. Ignored by every policy.
 */
export type Verdict = 'success' | 'failure' | 'overload' | 'answered' | 'timeout' | 'rejected'

/**
 * Why one of resilix's own policies refused a call. `'throttle'`: the upstream refuses most
 * calls (429, or 503 with `Retry-After`), and the adaptive throttle refused this one locally.
 * `'quota'`: the key's quota has no budget for it before its deadline, or its cost exceeds a
 * whole budget (the message says which); it is never retried.
 */
export type RejectReason = 'limit' | 'queue' | 'bulkhead' | 'breaker' | 'registry' | 'throttle' | 'quota'

/**
 * A call's priority class in its key's queue: higher classes wait first and are shed last.
 * Five, as Google SRE's criticalities and failsafe-go's priority bands.
 */
export type Priority = 'critical' | 'high' | 'normal' | 'low' | 'sheddable'

/** The limit algorithm: `'vegas'`, `'gradient2'`, `'aimd'`, or `'fixed'` (the limit stays at `initialLimit`). */
export type Algorithm = 'vegas' | 'gradient2' | 'aimd' | 'fixed'

export type BreakerState = 'closed' | 'open' | 'half-open'

/** A handle ended by `dispose()` (cockatiel's shape). A second call does nothing. */
export interface IDisposable {
  dispose(): void
}

// These typings compile whatever the consumer's `lib` and whether or not `@types/node` is
// installed (ADR 0804). `Symbol.dispose` and `AbortSignal` are read from the consumer's globals:
// where they exist, the members below are the real ones (so `using` works); where they do not,
// the `[Symbol.dispose]` member is absent and a signal is typed by what resilix reads of it.
type DisposeSymbol = SymbolConstructor extends { readonly dispose: infer S } ? (S extends symbol ? S : never) : never
/** `[Symbol.dispose](): void` where the consumer's lib declares `Symbol.dispose`, else nothing. */
type UsingDisposable = { [K in DisposeSymbol]: () => void }
/** The global `AbortSignal` where the consumer's lib (`dom`) or `@types/node` declares it. */
type Signal = typeof globalThis extends { AbortSignal: { prototype: infer S } } ? S : { readonly aborted: boolean; readonly reason: unknown }

/** Handed to `fn`. */
export interface CallContext {
  /** The upstream key of this call. */
  readonly key: string
  /**
   * Aborts when the call's deadline passes (reason: a `TimeoutError`) or when the caller's own
   * signal aborts (its reason). Never aborted because `fn` returned: a streamed body stays
   * readable. Created only when read.
   */
  readonly signal: Signal
  /**
   * First byte (or first token) arrived: the latency the limiter learns from is start → mark.
   * **If you stream, you must call `ctx.mark()`, or the limiter will mis-tune.**
   * Bound to its call: it may be passed as a callback (`body.once('data', ctx.mark)`).
   */
  readonly mark: () => void
  /**
   * With a quota: what the call really used, e.g. `{ tokens: res.usage.total_tokens }`. The
   * difference from its `cost` is refunded or charged to the window it was charged in. May be
   * called after the call settled (a stream's usage comes at its end); each call replaces the
   * usage before it.
   * @throws {TypeError} the instance has no quota, or a name is not one of its budgets.
   * @throws {RangeError} a usage below 0 or not finite.
   */
  charge(usage: Cost): void
}

/**
 * What a call costs, by budget name: `{ tokens: 1200 }`. A call that names no `requests`
 * costs 1 request; any other budget it does not name costs 0 (but a spent budget still makes
 * it wait). Numbers ≥ 0, rounded up.
 */
export type Cost = Record<string, number>

export interface ExecuteOptions {
  /**
   * Upstream key, e.g. its origin (`url.origin`, the undici interceptor's key for it; a `URL` object is a `TypeError`). Default `'default'`.
   * Not empty, at most `maxKeyLength` bytes (else a `RangeError`).
   */
  key?: string
  /**
   * Deadline in ms from the moment `execute` is called; time spent waiting in the queue counts.
   * Overrides the instance's `timeoutMs`; `false` turns it off for this call.
   */
  timeoutMs?: number | false
  /** Caller cancellation. An aborted call is not an observation for any policy, and is never retried. */
  signal?: Signal
  /**
   * Retries of this call: `false` none, `true` the instance's policy (or the defaults), an
   * object laid over the instance's policy. With retries, `timeoutMs` bounds every attempt,
   * wait and backoff together. Default: the instance's `retry`.
   */
  retry?: RetryOptions | boolean
  /**
   * The call's class in the key's queue: waiters of a higher class are admitted first (FIFO
   * within a class), and a standing queue sheds the lowest classes first. Default `'normal'`.
   */
  priority?: Priority
  /**
   * Who the call is for (a user, an account). Within a class, a tenant that used more of the
   * key's slot time recently waits behind one that used less. A non-empty string of at most
   * 256 characters; a key tracks up to 128 tenants, from their second call. Default: none.
   */
  tenant?: string
  /**
   * With a quota: the call's estimated cost, charged before it runs (settle the real usage
   * with `ctx.charge`). Default `{ requests: 1 }`.
   */
  cost?: Cost
}

/** The verdicts a retry policy may retry: `answered`, `rejected` and `cancelled` never are. */
export type RetryableVerdict = 'failure' | 'overload' | 'timeout'

export interface RetryOptions {
  /** Attempts in all, the first included (1…1000). Default 3 (the AWS SDKs' standard mode; got's 2 retries). */
  attempts?: number
  /** The jitter of the exponential backoff: `'full'` (uniform up to the doubling ceiling) or `'decorrelated'` (up to 3 × the previous delay). Default `'full'` (AWS "Exponential Backoff and Jitter"). */
  backoff?: 'full' | 'decorrelated'
  /** The backoff's base, ms. Default 25 (Envoy's retry base interval). */
  baseMs?: number
  /** The backoff's cap, ms. Default 250 (Envoy's 10 × base). */
  maxDelayMs?: number
  /** The verdicts retried. Default `['failure', 'overload', 'timeout']`. */
  retryOn?: readonly RetryableVerdict[]
  /** A `Retry-After` hint (seconds or an HTTP-date) waits at most this long, ms; the wait is the longer of the hint and the backoff. Default 60000 (a guess). */
  maxRetryAfterMs?: number
  /** Deadline of each attempt, ms, within the call's `timeoutMs`. Default: none (each attempt may use what is left of `timeoutMs`). */
  attemptTimeoutMs?: number | false
}

export interface RetryBudgetOptions {
  /** Retries per key may be at most this fraction of its first attempts within the window. Default 0.2 (Envoy, failsafe-go, Finagle; Google SRE uses 0.1). */
  ratio?: number
  /** Plus this many retries a second whatever the traffic, so that low traffic can retry. Default 3 (Envoy's and failsafe-go's minimum of 3, as a rate). */
  minPerSecond?: number
  /** The sliding window, ms. Default 10000 (Finagle's retry budget). */
  windowMs?: number
}

export interface AcquireOptions {
  /** Maximum time in ms to wait in the queue for a permit. Default: no limit. */
  timeoutMs?: number | false
  /** Caller cancellation while waiting. */
  signal?: Signal
  /** The call's class in the key's queue (see `ExecuteOptions.priority`). Default `'normal'`. */
  priority?: Priority
  /** Who the call is for (see `ExecuteOptions.tenant`). Default: none. */
  tenant?: string
  /** With a quota: the call's estimated cost (see `ExecuteOptions.cost`); settle it with `permit.charge`. */
  cost?: Cost
}

/**
 * One budget of a quota: limits by cost name over one window, e.g.
 * `{ requests: 500, tokens: 200000, windowMs: 60000 }`. Names are identifiers; `requests`,
 * `tokens`, `inputTokens` and `outputTokens` are also what the rate-limit headers of OpenAI,
 * Anthropic and the IETF draft name.
 */
export interface QuotaBudget {
  /**
   * The sliding window, ms. Integer 1…2 147 483 647. Default 60000 (the LLM APIs count per minute).
   * A charge is held a sixtieth of it (at least 100 ms) longer, so that a request that reaches the
   * upstream that much later than it was charged still meets no 429.
   */
  windowMs?: number
  /**
   * Read the rate-limit headers of each response (`x-ratelimit-*`, `anthropic-ratelimit-*`,
   * `ratelimit-*`, `retry-after`, `retry-after-ms`): they tighten the budget until their reset,
   * never loosen it, and a 429 cools the whole key down once. Default `false` for `execute`
   * (the undici interceptor reads them unless told `pace: false`).
   */
  pace?: boolean
  /**
   * The longest a 429's `retry-after` or a reset holds the key back, ms, in this process and
   * in a fleet's store. Integer 1…2 147 483 647. Default 60000 (the longest `retry-after`
   * openai-node honours). Given in several budgets, the shortest holds.
   */
  maxCooldownMs?: number
  /** The budget per window of each cost: a whole number ≥ 1. */
  [cost: string]: number | boolean | undefined
}

export interface QueueOptions {
  /** While the queue stands (it has not shrunk for two intervals), outstanding calls (in flight + waiting) up to `initialFactor × limit` wait. Default 2 (failsafe-go `WithQueueing(2, 3)`). */
  initialFactor?: number
  /** While the queue stands, from `initialFactor × limit` to `maxFactor × limit` the rejection chance rises 0 → 1; beyond, all are rejected. A burst that drains is never shed by the factors. Default 3 (failsafe-go). */
  maxFactor?: number
  /** The most calls that may wait on one key, whatever the queue's state (a bound on memory: 500–800 bytes of JS heap a waiting call). Integer 1…10 000 000. Default 20000 (a guess: twice the largest batch measured). */
  maxQueued?: number
}

export interface BreakerOptions {
  /** Open when at least this fraction of the window's calls failed. Range (0, 1]. Default 0.5 (resilience4j). */
  failureRate?: number
  /** Open when at least this fraction of the window's calls were slow. Range (0, 1]. Default 0.5 (a guess; see README). */
  slowCallRate?: number
  /** A call whose latency (honouring `mark()`) is at least this many ms is slow. Default 5000 (a guess). */
  slowCallMs?: number
  /** Rates are judged only once the window holds this many calls. Default 20 (Hystrix / MicroProfile `requestVolumeThreshold`; resilience4j and Polly use 100). */
  minimumCalls?: number
  /** The rolling window of the rates, ms. Default 30000 (Polly's SamplingDuration). */
  windowMs?: number
  /** Open on this many consecutive failures whatever the volume (the low-traffic backstop). Default 5 (cockatiel's ConsecutiveBreaker example). */
  consecutiveFailures?: number
  /** How long the breaker stays open before half-open probes, ms. Default 10000 (cockatiel's `halfOpenAfter` default). */
  openMs?: number
  /** Probes admitted while half-open; all must succeed to close. Default 3 (a guess; resilience4j uses 10). */
  halfOpenProbes?: number
}

export interface BulkheadOptions {
  /** Fixed maximum of concurrent calls per key; more are rejected with reason `'bulkhead'`. Required. */
  maxConcurrent: number
}

/**
 * Client-side adaptive throttling: while a key's upstream refuses calls (429, or 503 with
 * `Retry-After`; a 503 without one is no refusal), a call is refused locally (reason `'throttle'`) with probability
 * `max(0, (requests − multiplier × accepts) / (requests + 1))`, at most `maxRejection`, over
 * the last `windowMs` (Google SRE's client-side throttling). A key that saw no overload in the
 * window is never throttled.
 */
export interface ThrottleOptions {
  /** About this many calls reach an overloaded upstream per call it accepts. Range [1, 100]. Default 1.2 (ours, a guess: SRE's 2 sends twice the calls the upstream accepts; see README). */
  multiplier?: number
  /** The sliding window the counts cover, ms. Integer 1 000…2 147 483 647. Default 30000 (Envoy `admission_control`'s `sampling_window`). */
  windowMs?: number
  /** The highest refusal probability. Range (0, 1]. Default 0.9 (failsafe-go's adaptive throttler; Envoy uses 0.8). */
  maxRejection?: number
}

/** An outcome as `classify` sees it. */
export type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown }

export interface ResilixOptions {
  /** `false` turns the adaptive limiter (and its queue) off. Default `true`: on. */
  limiter?: boolean
  /** The limit algorithm. Default `'vegas'`: Uber and Netflix both chose it for this problem. */
  algorithm?: Algorithm
  /** The limit a key starts with. Default 20 (Netflix VegasLimit/Gradient2Limit). */
  initialLimit?: number
  /** The limit never goes below this. Default 4 (ours, a guess: keeps a trickle flowing so recovery is observable). */
  minLimit?: number
  /** The limit never goes above this. Default 200 (Netflix Gradient2Limit). */
  maxLimit?: number
  /** The latency quantile measured per window. Range (0, 1]. Default 0.9 (Envoy and Uber, independently). */
  quantile?: number
  /** Exponential smoothing of the limit (Gradient2). Range (0, 1]. Default 0.2 (Netflix Gradient2Limit). */
  smoothing?: number
  /** Gradient2's tolerance of latency above the long-term average. Range [1, 100]. Default 1.5 (Netflix Gradient2Limit). */
  rttTolerance?: number
  /** Shortest measurement window, ms. Default 2000 (Uber: "minimum interval 2 seconds"). */
  windowMinMs?: number
  /** Longest measurement window, ms. Default 30000 (Uber: "maximum 30"). */
  windowMaxMs?: number
  /** Samples a window wants before it closes (adaptive at low traffic, see README). Default 50 (failsafe-go). */
  minSamples?: number
  /**
   * How often the no-load latency is re-measured, ms: admission steps down to a quarter of the
   * limit (a third once two probes in a row read near the baseline; at least `minLimit`) until
   * this client's calls drain, and the next calls are timed.
   * Nothing is refused for it; the extra calls wait (with `queue: false` they are refused).
   * Phased on the wall clock, so processes that share an upstream probe it together. Doubles
   * for slow upstreams (at most ~2 % of the time).
   * `0` never probes. Default 10000 (BBR's ProbeRTT interval). Integer 0 or 1 000…2 147 483 647.
   */
  probeIntervalMs?: number
  /** The control loop runs on settle at most this often, ms. Default 100 (Envoy "concurrency update interval 0.1s"). */
  updateIntervalMs?: number
  /** AIMD's multiplicative decrease. Range (0, 1). Default 0.9 (Netflix AIMDLimit). */
  backoffRatio?: number
  /** Calls over the limit wait in a queue: a burst waits whole (up to `maxQueued`), a call that could not leave it by its deadline is refused at once, and a standing queue is shed by factors of the limit; `false` refuses them at once with reason `'limit'`. `true`: the defaults. Default `{ initialFactor: 2, maxFactor: 3, maxQueued: 20000 }`. */
  queue?: QueueOptions | boolean
  /** Circuit breaker settings; `false` turns it off, `true` keeps the defaults. Default on, with the defaults of `BreakerOptions`. */
  breaker?: BreakerOptions | boolean
  /** A fixed concurrency cap per key, no queue. Default off. */
  bulkhead?: BulkheadOptions | false
  /** Client-side adaptive throttling of overloaded keys; `false` turns it off, `true` keeps the defaults. Default on: `{ multiplier: 1.2, windowMs: 30000, maxRejection: 0.9 }`. */
  throttle?: ThrottleOptions | boolean
  /** Default per-call deadline in ms, counted from `execute()` (queue wait included). Default `false`: none. */
  timeoutMs?: number | false
  /**
   * Overrides the default classification. Return a verdict, or `undefined` to keep the default.
   * A throw or an unknown verdict rejects the call with that error (accounting stays exact).
   */
  classify?: (outcome: Outcome) => Verdict | undefined
  /** Most keys alive at once; the least recently used idle key is evicted past it. Default 1000 (ours, a guess: about 2 MB of engine state at about 2.1 KB per key). */
  maxKeys?: number
  /** Longest key in UTF-8 bytes; longer keys are refused with a RangeError. Default 512 (ours; a host name is at most 253). */
  maxKeyLength?: number
  /** Seed of the queue's rejection ramp and the retry jitter, for reproducible runs. Default: random per instance. */
  seed?: number
  /** Retries of every `execute()` call: `true` the defaults of `RetryOptions`, an object over them. Default `false`: off (a call may not be safe to repeat). */
  retry?: RetryOptions | boolean
  /** The per-key retry budget that every retry must fit in. Default `{ ratio: 0.2, minPerSecond: 3, windowMs: 10000 }`. */
  retryBudget?: RetryBudgetOptions
  /**
   * Each key's quota: a budget, or several (per minute and per day, say; at most 8 budgets
   * over at most 4 cost names). A call is charged its `cost` before it runs; one that does not
   * fit waits for budget within its deadline, or is refused at once with reason `'quota'`.
   * The window is sliding and frees a charge a little after the upstream's own window would,
   * so a client alone on its quota meets no 429. Default: none.
   */
  quota?: QuotaBudget | readonly QuotaBudget[]
  /**
   * Shares `quota` with every process that uses the same store: one budget for the whole
   * fleet, as the upstream counts it per account. Each process spends leases of it, so that no
   * call waits on the store. Needs `quota`. Default: none (each process has its own quota).
   * @example new Resilix({ quota: { requests: 500, tokens: 200000 }, quotaStore: redisQuotaStore(redis) })
   */
  quotaStore?: QuotaStore
}

/** A store a fleet shares its quota through: `redisQuotaStore()` of `resilix/redis`. */
export interface QuotaStore {
  readonly [quotaStoreBrand]: true
}
declare const quotaStoreBrand: unique symbol

/** A shared quota's store as `stats()` reports it (`QuotaStats.store`). */
export interface QuotaStoreStats {
  /** `'leased'`: the store answers; `'fallback'`: it cannot be reached and this process keeps to its share; `'refusing'`: it cannot be reached and calls are refused (`whenDown: 'refuse'`, or it never answered for this key and the store has no `processes`). */
  state: 'leased' | 'fallback' | 'refusing'
  /** Processes the store saw use this key's quota within its window, this one included. */
  processes: number
  /** The store's smoothed answer time, ms. */
  latencyMs: number
  /** Calls to the store so far (leases, and settled usage told alone). */
  leases: number
  /** Times it fell back. */
  fallbacks: number
  /** Calls to the store that failed, timed out or got a reply it cannot give, and retries that found its client not connected. */
  errors: number
  /** The last such failure's message while the store cannot be reached; null once it answers again. */
  lastError: string | null
}

/** A key's quota as `stats()` reports it. */
export interface QuotaStats {
  budgets: { name: string; windowMs: number; limit: number; spent: number }[]
  /** Calls waiting for budget. */
  waiting: number
  /** Cooldowns begun since the key was created (one per 429 episode, a fleet's included). */
  cooldowns: number
  /** How long the key still cools down, ms. */
  coolingMs: number
  /** With `quotaStore`: the store's state for this key; null without one. */
  store: QuotaStoreStats | null
}

/** A shared quota's store changed state for a key (`onStore`). */
export interface StoreEvent {
  key: string
  state: 'leased' | 'fallback' | 'refusing'
  /** Why it fell back: the store's error or timeout. */
  error?: string
}

export interface KeyStats {
  key: string
  /** The concurrency limit in force, or null when the limiter is off. */
  limit: number | null
  /** Calls holding a permit. A call whose fn ignores its signal after a timeout stays counted until fn settles, or until it is released as stuck. */
  inflight: number
  /** Calls waiting in the queue. */
  queued: number
  /** The breaker's state, or null when the breaker is off. */
  breaker: BreakerState | null
  algorithm: Algorithm | null
  /** The limiter's no-load reference latency, ms (0 until measured). */
  baselineMs: number
  /** The limiter's smoothed latency, ms. */
  smoothedMs: number
  /** Samples in the limiter's current window. */
  windowSamples: number
  /** Calls holding a bulkhead place. */
  bulkheadActive: number
  /** Latency of the last observed call (start → `mark()`, or start → settle), ms. */
  lastLatencyMs: number
  /** Calls released as stuck: their fn had not settled long after the caller's answer (a deadline's length, at least 1 s). */
  stuck: number
  /** Settled calls by verdict since the key was created (`cancelled`: no observation; the caller's signal aborted, or this process stalled). */
  verdicts: Record<Verdict | 'cancelled', number>
  /** Calls refused by our own policies, by reason, since the key was created. */
  rejections: Record<Exclude<RejectReason, 'registry'>, number>
  /** Calls waiting in the queue, by priority. */
  queuedByPriority: Record<Priority, number>
  /** `'queue'` refusals by the refused call's priority, since the key was created. */
  queueRefusalsByPriority: Record<Priority, number>
  /** Tenants whose recent use of the key is tracked (at most 128, and 32 newcomers). */
  tenants: number
  /** The probability, 0 to 1, that the adaptive throttle refuses a call now: 0 when it is off or its window holds no overload. */
  throttleProbability: number
  /** Retries made on this key since it was created. */
  retries: number
  /** Retries its retry budget refused since the key was created (the call ended with its last attempt's outcome). */
  retryBudgetRefusals: number
  /** Retries the undici interceptor did not make because the request's body could not be sent again (too large, or of unknown size), since the key was created. */
  retryBodyRefusals: number
  /** The key's quota, or null without one. */
  quota: QuotaStats | null
}

export interface Permit {
  readonly key: string
  /** True once released. */
  readonly released: boolean
  /** First byte arrived (see `CallContext.mark`); bound, like it. */
  readonly mark: () => void
  /** Settles the permit, exactly once. Default verdict `'success'`. A second release throws. */
  release(verdict?: Verdict): void
  /** With a quota: what the call really used (see `CallContext.charge`). May follow `release()`. */
  charge(usage: Cost): void
}

/**
 * An event subscription. `dispose()` ends it (a second call does nothing); where the
 * consumer's lib has disposables (`esnext`, or `@types/node`) it is also `Disposable`, so
 * `using sub = rx.onReject(listener)` ends it with the block.
 */
export interface Subscription extends IDisposable, UsingDisposable {}

export interface LimitChangeEvent {
  key: string
  limit: number
  previous: number
}
export interface BreakerStateChangeEvent {
  key: string
  state: BreakerState
  previous: BreakerState
}
export interface RejectEvent {
  key: string
  reason: RejectReason
  /** The refused call's priority (`'normal'` when it named none). */
  priority: Priority
  /** The refused call's tenant, when it named one. */
  tenant?: string
  /**
   * Set when the refused call was a retry: its attempt number (2 for the first retry), the one
   * `onRetry` announced when refused after its wait; absent for a first attempt.
   */
  attempt?: number
}
export interface RetryEvent {
  key: string
  /** The attempt about to start: 2 for the first retry. */
  attempt: number
  /** The wait before it, ms: the longer of the backoff and a `Retry-After` hint. */
  delayMs: number
  /** The verdict of the attempt that is retried. */
  reason: RetryableVerdict
}

export interface EvictEvent {
  /** The idle key dropped from the registry to make room for a new one. */
  key: string
}
export interface RegistryStats {
  /** Keys alive now. */
  keys: number
  /** New keys refused with reason `'registry'` since the instance was created. */
  refused: number
  /** Keys evicted since the instance was created. */
  evicted: number
}

/**
 * On `node:diagnostics_channel` `'resilix:call:settle'`: a call that ran (or a permit) was
 * settled. Published only for calls admitted while someone subscribes.
 */
export interface CallSettleMessage {
  /** The instance. */
  rx: Resilix
  key: string
  verdict: Verdict | 'cancelled'
  /** The limiter's latency sample: start → `mark()`, else start → settle, ms. */
  latencyMs: number
  /** From the start of `fn` (or the permit) to the settle, ms. */
  durationMs: number
  /** Time waited in the queue before the start, ms (0: admitted at once). */
  waitMs: number
  /** Released as stuck: `fn` had not settled long after its caller's answer. */
  stuck: boolean
}
/** On `'resilix:call:reject'`: one of resilix's own policies refused a call; it never ran. */
export interface CallRejectMessage {
  rx: Resilix
  key: string
  reason: RejectReason
}
/** On `'resilix:call:leave'`: a waiting call left the queue before it ran. */
export interface CallLeaveMessage {
  rx: Resilix
  key: string
  /** Its deadline passed, its caller's signal aborted, or the instance was closed. */
  reason: 'timeout' | 'abort' | 'close'
  /** Time it waited, ms. */
  waitMs: number
}
/** On `'resilix:call:retry'`: a call's next attempt starts after `delayMs`. */
export interface CallRetryMessage {
  rx: Resilix
  key: string
  /** The attempt about to start: 2 for the first retry. */
  attempt: number
  delayMs: number
  /** The verdict of the attempt retried. */
  reason: Verdict
}
/** On `'resilix:quota:wait'`: a call starts waiting for its quota's budget. */
export interface QuotaWaitMessage {
  rx: Resilix
  key: string
}
/** On `'resilix:quota:resume'`: a call stops waiting for budget. */
export interface QuotaResumeMessage {
  rx: Resilix
  key: string
  /** Time it waited, ms; null when nobody subscribed to this channel as it began waiting. */
  waitMs: number | null
  /** Budget granted (it goes on to the limiter), refused, or it left (deadline, abort, close). */
  outcome: 'granted' | 'refused' | 'left'
}
/** On `'resilix:quota:store'`: a key's shared quota store changed state. */
export interface QuotaStoreMessage {
  rx: Resilix
  key: string
  state: 'leased' | 'fallback' | 'refusing'
  /** The store's error, for 'fallback' and 'refusing'. */
  error?: string
}

export declare class Resilix {
  /**
   * @throws {TypeError} an option of the wrong type, or an unknown option; the message names it.
   * @throws {RangeError} a number out of its range; the message names the option and the range.
   */
  constructor(options?: ResilixOptions)
  /**
   * Runs `fn` under the key's policies: retry → breaker → quota → throttle → limiter (+ queue) →
   * bulkhead → timeout. Resolves or rejects with exactly what `fn`'s last attempt did (`attemptsOf` tells
   * how many were made). Never throws synchronously: every failure below is a rejected promise.
   * @throws {RejectedError} one of resilix's own policies refused the call (`reason`); `fn` never ran.
   * @throws {TimeoutError} the deadline passed (`queued`: while the call waited, `fn` never ran),
   *   or a `Retry-After` hint is longer than what is left of it (`retryAfterMs`, `cause` the last attempt's outcome).
   * @throws the caller's `signal.reason` when that signal aborted.
   * @throws {TypeError} `fn` is not a function, an option has the wrong type or is unknown, or the key is not a string.
   * @throws {RangeError} `timeoutMs` out of range, or a key longer than `maxKeyLength`.
   */
  execute<T>(fn: (ctx: CallContext) => T | PromiseLike<T>, options?: ExecuteOptions): Promise<T>
  /**
   * Low level: waits for a permit for callers that cannot wrap a function. Release it exactly
   * once with `permit.release(verdict)`. Never throws synchronously.
   * @throws {RejectedError} one of resilix's own policies refused the permit (`reason`).
   * @throws {TimeoutError} `timeoutMs` passed while waiting (`queued` is true).
   * @throws the caller's `signal.reason` when that signal aborted.
   * @throws {TypeError} an option has the wrong type or is unknown, or the key is not a string.
   * @throws {RangeError} `timeoutMs` out of range, or a key longer than `maxKeyLength`.
   */
  acquire(key?: string, options?: AcquireOptions): Promise<Permit>
  /** The same, with the key in the options, as `execute` takes it: `acquire({ key, timeoutMs })`. */
  acquire(options: AcquireOptions & { key?: string }): Promise<Permit>
  /** One key's state; undefined when the key is not in the registry. */
  stats(key: string): KeyStats | undefined
  /** Every live key's state. */
  stats(): Record<string, KeyStats>
  /** Keys alive in the registry now, most recently used first. */
  keys(): string[]
  /** Subscribes to limit changes. @throws {TypeError} when `listener` is not a function. */
  onLimitChange(listener: (event: LimitChangeEvent) => void): Subscription
  /** Subscribes to breaker state changes. @throws {TypeError} when `listener` is not a function. */
  onBreakerStateChange(listener: (event: BreakerStateChangeEvent) => void): Subscription
  /** Subscribes to refusals by resilix's own policies. @throws {TypeError} when `listener` is not a function. */
  onReject(listener: (event: RejectEvent) => void): Subscription
  /** Subscribes to key evictions from the registry. @throws {TypeError} when `listener` is not a function. */
  onEvict(listener: (event: EvictEvent) => void): Subscription
  /** Subscribes to retries, each before its wait; a retry the throttle refuses is refused before it, and never told here. @throws {TypeError} when `listener` is not a function. */
  onRetry(listener: (event: RetryEvent) => void): Subscription
  /** Subscribes to a shared quota's store going away (`'fallback'`, `'refusing'`) and coming back (`'leased'`). @throws {TypeError} when `listener` is not a function. */
  onStore(listener: (event: StoreEvent) => void): Subscription
  /** The registry's counters: live keys, refused new keys, evictions. */
  registryStats(): RegistryStats
  /** Frees the native state now: waiting calls reject (`code: 'ERR_RESILIX_CLOSED'`), running calls finish, later calls reject. Idempotent. */
  close(): void
}
/** `rx[Symbol.dispose]()` is `close()`, for `using rx = new Resilix()` where the consumer's lib has disposables. */
export interface Resilix extends UsingDisposable {}

/** Refused by one of resilix's own policies; the upstream was never called. */
export declare class RejectedError extends Error {
  /** @throws {TypeError} when `reason` is not a `RejectReason` or `key` not a string. */
  /** `detail`: why the policy refused, appended to the message. */
  constructor(reason: RejectReason, key: string, detail?: string)
  readonly name: 'RejectedError'
  readonly reason: RejectReason
  readonly key: string
}

/** The call's deadline passed. */
export declare class TimeoutError extends Error {
  /** @throws {TypeError} when `key` is not a string, `timeoutMs` not a number above 0, or `queued` not a boolean. */
  constructor(key: string, timeoutMs: number, queued?: boolean)
  readonly name: 'TimeoutError'
  readonly key: string
  readonly timeoutMs: number
  /** True when the deadline passed while the call waited in the queue (fn never ran). */
  readonly queued: boolean
  /** Set when a `Retry-After` hint (capped by `maxRetryAfterMs`) was longer than what was left of the deadline: the hint, ms. */
  readonly retryAfterMs?: number
}

/**
 * An error whose `cause` (or its cause's cause, …) is `E`: what `fetch` rejects with when the
 * interceptor refuses a request or its deadline passes (a `TypeError`, `cause` the resilix error).
 */
export interface CausedBy<E> extends Error {
  readonly cause: E | CausedBy<E>
}

/**
 * True for a `RejectedError`, or an error whose `cause` chain holds one (fetch's `TypeError`).
 * Its fields are on the `RejectedError` itself: `findRejectedError(e)?.reason`.
 */
export declare function isRejectedError(e: unknown): e is RejectedError | CausedBy<RejectedError>
/** True for a `TimeoutError`, or an error whose `cause` chain holds one (fetch's `TypeError`). */
export declare function isTimeoutError(e: unknown): e is TimeoutError | CausedBy<TimeoutError>
/** `e` if it is a `RejectedError`, else the first one in its `cause` chain; `undefined` if none. */
export declare function findRejectedError(e: unknown): RejectedError | undefined
/** `e` if it is a `TimeoutError`, else the first one in its `cause` chain; `undefined` if none. */
export declare function findTimeoutError(e: unknown): TimeoutError | undefined
/**
 * How many attempts the retrying `execute()` call that produced `x` made: `x` is the value it
 * resolved with or the error it rejected with. `undefined` when that call succeeded at its first
 * attempt, had no retry policy, or `x` is not an object (a thrown string).
 */
export declare function attemptsOf(x: unknown): number | undefined

// Only the declarations above marked `export` are the package's types.
export {}
