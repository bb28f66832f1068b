'use strict'
// Retry options, instance-wide (`new Resilix({ retry, retryBudget })`) and per call
// (`execute(fn, { retry })`), checked here with errors that name the option. A policy is a
// frozen object of numbers the binding's retryDecide takes. Defaults and their provenance:
// ADRs 0900 and 0902; the budget's: ADR 0901 (the engine checks the budget's ranges).

const { describe, timeoutOption, MAX_TIMEOUT_MS } = require('./describe')
const { didYouMean } = require('./suggest')
const V = require('./verdicts')

const KNOWN = new Set(['attempts', 'backoff', 'baseMs', 'maxDelayMs', 'retryOn', 'maxRetryAfterMs', 'attemptTimeoutMs'])
const BUDGET = new Set(['ratio', 'minPerSecond', 'windowMs'])
/** The engine's retryable verdicts (ADR 1210). */
const { RETRYABLE } = require('./native')
/** The most attempts a call may make: far above any sensible policy, a bound on a typo. */
const MAX_ATTEMPTS = 1000

/** The defaults: 3 attempts (AWS SDKs, got), full jitter (AWS), 25 ms base and a 10 × cap (Envoy). */
const DEFAULTS = Object.freeze({
  attempts: 3,
  backoff: 'full',
  baseMs: 25,
  maxDelayMs: 250,
  retryOn: Object.freeze(RETRYABLE.slice()),
  maxRetryAfterMs: 60_000,
  attemptTimeoutMs: undefined,
})

/** What the retry loop reads: the options as numbers (`retryOn` a mask of verdict codes). */
class RetryPolicy {
  constructor(o) {
    this.attempts = o.attempts
    this.decorrelated = o.backoff === 'decorrelated'
    this.baseMs = o.baseMs
    this.maxDelayMs = o.maxDelayMs
    this.retryOn = o.retryOn.reduce((m, name) => m | (1 << V.codeOf(name)), 0)
    this.maxRetryAfterMs = o.maxRetryAfterMs
    this.attemptTimeoutMs = o.attemptTimeoutMs
    /** The options as given, defaults filled in (a per-call object is laid over them). */
    this.options = Object.freeze({ ...o })
    /** Held by a first attempt (lib/pipeline.js): a RetryState takes over once it does not succeed. */
    this.first = true
    Object.freeze(this)
  }
}

const DEFAULT_POLICY = new RetryPolicy(DEFAULTS)

function typeError(msg) {
  return new TypeError(`resilix: ${msg}`)
}

function ms(name, v, min) {
  if (typeof v !== 'number') throw typeError(`option ${name} must be a number of milliseconds, got ${describe(v)}`)
  if (!(v >= min && v <= MAX_TIMEOUT_MS)) {
    throw new RangeError(`resilix: ${name} must be a number of milliseconds from ${min} to ${MAX_TIMEOUT_MS}, got ${v}`)
  }
  return v
}

/** `o` (an object) over `base`'s options; `where`: how the option is named in errors. */
function policyOf(o, base, where) {
  for (const k of Object.keys(o)) {
    if (!KNOWN.has(k)) {
      const hint = k === 'budget' || BUDGET.has(k) ? ': the retry budget is an instance option, retryBudget: { ratio, minPerSecond, windowMs }' : didYouMean(k, KNOWN, `${where}.`)
      throw typeError(`unknown option ${where}.${k}${hint}`)
    }
  }
  const r = { ...base.options }
  if (o.attempts !== undefined) {
    const a = o.attempts
    if (typeof a !== 'number') throw typeError(`option ${where}.attempts must be a number, got ${describe(a)}`)
    if (!Number.isInteger(a) || a < 1 || a > MAX_ATTEMPTS) {
      throw new RangeError(`resilix: ${where}.attempts must be a whole number from 1 to ${MAX_ATTEMPTS} (attempts in all, the first included), got ${a}`)
    }
    r.attempts = a
  }
  if (o.backoff !== undefined) {
    if (o.backoff !== 'full' && o.backoff !== 'decorrelated') {
      throw typeError(`option ${where}.backoff must be 'full' or 'decorrelated' (the jitter of the exponential backoff), got ${describe(o.backoff)}`)
    }
    r.backoff = o.backoff
  }
  if (o.baseMs !== undefined) r.baseMs = ms(`${where}.baseMs`, o.baseMs, 0)
  if (o.maxDelayMs !== undefined) r.maxDelayMs = ms(`${where}.maxDelayMs`, o.maxDelayMs, 0)
  if (r.baseMs > r.maxDelayMs) {
    throw new RangeError(`resilix: ${where}.baseMs (${r.baseMs}) must not exceed ${where}.maxDelayMs (${r.maxDelayMs})`)
  }
  if (o.maxRetryAfterMs !== undefined) r.maxRetryAfterMs = ms(`${where}.maxRetryAfterMs`, o.maxRetryAfterMs, 0)
  if (o.attemptTimeoutMs !== undefined) r.attemptTimeoutMs = timeoutOption(`${where}.attemptTimeoutMs`, o.attemptTimeoutMs)
  if (o.retryOn !== undefined) r.retryOn = retryOnOf(o.retryOn, `${where}.retryOn`)
  return new RetryPolicy(r)
}

function retryOnOf(v, name) {
  if (!Array.isArray(v)) throw typeError(`option ${name} must be an array of verdicts (${RETRYABLE.map((x) => `'${x}'`).join(', ')}), got ${describe(v)}`)
  for (const x of v) {
    if (x === 'answered') {
      throw new RangeError(`resilix: ${name} must not contain 'answered': the upstream answered (a 4xx other than 429) and the same request gets the same answer`)
    }
    if (!RETRYABLE.includes(x)) {
      throw new RangeError(`resilix: ${name} may contain ${RETRYABLE.map((y) => `'${y}'`).join(', ')}, got ${describe(x)}`)
    }
  }
  return Object.freeze(v.slice())
}

/**
 * The instance's `retry` option: null (off: the default, ADR 0900), or its policy.
 * `true` is the defaults; an object is laid over them.
 */
function instanceRetry(v) {
  if (v === undefined || v === false) return null
  if (v === true) return DEFAULT_POLICY
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw typeError(`option retry must be true, false or an object { attempts, backoff, baseMs, maxDelayMs, retryOn, maxRetryAfterMs, attemptTimeoutMs }, got ${describe(v)}`)
  }
  return policyOf(v, DEFAULT_POLICY, 'retry')
}

/** The instance's `retryBudget` option as the binding's flat options. */
function budgetOptions(v, native) {
  if (v === undefined) return
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw typeError(`option retryBudget must be an object { ratio, minPerSecond, windowMs }, got ${describe(v)}`)
  }
  for (const k of Object.keys(v)) {
    if (!BUDGET.has(k)) throw typeError(`unknown option retryBudget.${k}${didYouMean(k, BUDGET, 'retryBudget.')}`)
  }
  for (const [k, n] of [['ratio', 'retryBudgetRatio'], ['minPerSecond', 'retryBudgetMinPerSecond'], ['windowMs', 'retryBudgetWindowMs']]) {
    if (v[k] === undefined) continue
    if (typeof v[k] !== 'number') throw typeError(`option retryBudget.${k} must be a number, got ${describe(v[k])}`)
    native[n] = v[k]
  }
}

// Per-call policies by the object passed: a call site that passes the same object each time
// reads it once.
const perCall = new WeakMap()

/**
 * A call's `retry` option over the instance's policy (`base`, null when off): null for
 * `false`, the instance's (or the defaults) for `true`, an object laid over it.
 */
function callRetry(v, base, what = 'execute option retry') {
  if (v === false) return null
  if (v === true) return base ?? DEFAULT_POLICY
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw typeError(`${what} must be true, false or an object { attempts, backoff, baseMs, maxDelayMs, retryOn, maxRetryAfterMs, attemptTimeoutMs }, got ${describe(v)}`)
  }
  const b = base ?? DEFAULT_POLICY
  let byBase = perCall.get(v)
  if (byBase === undefined) {
    byBase = new Map()
    perCall.set(v, byBase)
  }
  let p = byBase.get(b)
  if (p === undefined) {
    p = policyOf(v, b, 'retry')
    byBase.set(b, p)
  }
  return p
}

module.exports = { instanceRetry, callRetry, budgetOptions, RetryPolicy, DEFAULTS, RETRYABLE }
