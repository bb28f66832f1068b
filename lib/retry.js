'use strict'
// A retrying call (ADR 0900). Retry is the outermost policy: each attempt goes through
// breaker → quota → throttle → limiter → bulkhead → timeout like any call, with its own permit,
// and its verdict and latency are a normal sample. The engine decides whether a settled attempt is retried and
// after how long (retryDecide: verdict, attempts, breaker, deadline, budget); this loop waits,
// reads Retry-After, keeps the one deadline, the caller's signal and close(), and answers with
// exactly what the last attempt produced.

const { native, clockCell, CELL, QUEUED, QUOTA_WAIT, RETRY_REFUSED_BASE, RETRY_REFUSALS, REJECTED_BASE, REASONS } = require('./native')
/** The clock cell's element holding the latest acquire's time (ADR 1210). */
const NOW = CELL.now
const { rejection } = require('./quota')
const V = require('./verdicts')
const { TimeoutError } = require('./errors')
const { Call, GuardedCall, RUNNING } = require('./call-record')
const { runFn, verdictOfValue, verdictOfError } = require('./run-fn')
const { finish } = require('./run-plain')
const { runGuarded, wait, guardAttempt } = require('./pipeline')
const { retryAfterOf } = require('./retry-after')
const diag = require('./diagnostics')
const { closedError } = require('./lifetime')
const { delayMs } = require('./timers')
const { acquire } = require('./acquire')

const RETRY_AFTER_REFUSED = RETRY_REFUSED_BASE - RETRY_REFUSALS.indexOf('retry-after')
// The throttle refused the retry before its wait (ADR 1004): told as a 'throttle' refusal.
const THROTTLE_REFUSED = RETRY_REFUSED_BASE - RETRY_REFUSALS.indexOf('throttle')
const REJECTED_THROTTLE = REJECTED_BASE - REASONS.indexOf('throttle')

// The attempts behind a call's final outcome, by the outcome (an object): see attemptsOf.
const attemptCounts = new WeakMap()

/**
 * How many attempts the retrying call that produced `x` (its value or its error) made;
 * undefined for a call that succeeded at its first attempt, a call without retry, or a value
 * that is not an object.
 */
function attemptsOf(x) {
  return attemptCounts.get(x)
}

function record(x, attempts) {
  if (x !== null && (typeof x === 'object' || typeof x === 'function')) attemptCounts.set(x, attempts)
}

/**
 * execute() with a retry policy: `p` is the first attempt's acquire (lib/native.js codes).
 * `timeoutMs` bounds every attempt, wait and backoff together. A first attempt that succeeds
 * costs what a call without retries does: it holds the policy (`call._retry`), and a RetryState
 * is made only once an attempt did not succeed.
 */
function startRetrying(rx, ks, fn, policy, timeoutMs, signal, p, prio = null, cost = null) {
  if (prio === null && cost === null && p >= 0 && timeoutMs === undefined && signal === undefined && policy.attemptTimeoutMs === undefined && !diag.active()) {
    return runPlainRetrying(rx, ks, fn, policy, p)
  }
  if (p < 0 && p !== QUEUED && p !== QUOTA_WAIT) return Promise.reject(rx._events.rejected(p, ks.name, ks, prio)) // never retried
  if (policy.attemptTimeoutMs === undefined) {
    const call = new RetryingCall(rx, ks, fn, timeoutMs, signal)
    call._retry = policy
    call._prio = prio
    call._cost = cost
    if (p === QUOTA_WAIT) call._permit = p
    return p >= 0 ? runGuarded(call, p) : wait(call)
  }
  // Attempts with their own deadline: the state from the first.
  const r = new RetryState(rx, ks, fn, policy, timeoutMs, clockCell[NOW], signal)
  r.prio = prio
  r.cost = cost
  return new Promise((resolve, reject) => {
    r.resolve = resolve
    r.reject = reject
    launch(r, p, timeoutMs)
  })
}

/** As runPlain (lib/run-plain.js) for a first attempt; one that does not succeed goes on below. */
async function runPlainRetrying(rx, ks, fn, policy, p) {
  const call = new Call(rx, ks, fn, undefined, undefined)
  call._permit = p
  call._state = RUNNING
  let v
  try {
    v = await runFn(call)
  } catch (err) {
    const verdict = verdictOfError(call, err)
    finish(call, verdict, err)
    if (call._classifyError !== undefined) throw call._classifyError
    return goOn(call, policy, false, err, verdict)
  }
  const verdict = verdictOfValue(call, v)
  finish(call, verdict, v)
  if (call._classifyError !== undefined) throw call._classifyError
  if (verdict === V.SUCCESS) return v
  return goOn(call, policy, true, v, verdict)
}

function goOn(call, policy, ok, x, verdict) {
  return new Promise((resolve, reject) => {
    const r = new RetryState(call._rx, call._ks, call._fn, policy, undefined, 0, undefined)
    r.resolve = resolve
    r.reject = reject
    r.attempts = 1
    next(r, ok, x, verdict)
  })
}

/** A retrying call once an attempt did not succeed: its caller's resolvers, its progress. */
class RetryState {
  constructor(rx, ks, fn, policy, timeoutMs, t0, signal) {
    this.first = false
    this.rx = rx
    this.ks = ks
    this.fn = fn
    this.policy = policy
    /** The call's deadline, from `t0` (the engine clock of its first acquire). */
    this.timeoutMs = timeoutMs
    this.t0 = t0
    this.signal = signal
    this.resolve = null
    this.reject = null
    /** Attempts that ended. */
    this.attempts = 0
    this.delay = 0
    /** The running attempt's deadline is the call's (else its own attemptTimeoutMs). */
    this.bounded = true
    // The last attempt that ran: what the call ends with when a retry is refused.
    this.lastOk = false
    this.last = undefined
    /** Its priority and tenant (lib/levels.js), or null. */
    this.prio = null
    /** With a quota, what each attempt costs (lib/quota.js), or null. */
    this.cost = null
  }
}

/**
 * An attempt of a retrying call: the record of any guarded call (lib/call-record.js) that also
 * tells this stage how it ended. `_retry` is the policy for a first attempt, else the RetryState.
 */
class RetryingCall extends GuardedCall {
  /** It ended without being answered: retry it, or end the call (lib/pipeline.js). */
  attemptEnded(ok, x, verdict) {
    attemptEnded(this, ok, x, verdict)
  }

  /** A retry that waited was refused by our own policies: the attempt before is the answer. */
  retryRefused() {
    refused(this)
  }

  /** A retry's attempt ends its call with `err`: the attempts are recorded (attemptsOf). */
  answeredWith(err) {
    record(err, this._retry.attempts + 1)
  }
}

/** An attempt of a retrying call ended without being answered. */
function attemptEnded(call, ok, x, verdict) {
  let r = call._retry
  if (r.first) {
    // The first attempt held only the policy; its deadline was the call's.
    r = new RetryState(call._rx, call._ks, call._fn, r, call._timeoutMs, call._timeoutMs === undefined ? 0 : call._deadline - call._timeoutMs, call._callerSignal)
    r.resolve = call._resolve
    r.reject = call._reject
    r.prio = call._prio
    r.cost = call._cost
  }
  r.attempts++
  next(r, ok, x, verdict)
}

/** A retry that waited in the queue was refused: the attempt before is the answer. */
function refused(call) {
  const r = call._retry
  end(r, r.lastOk, r.last)
}

/** After an attempt that did not succeed: retry it after a backoff, or end with it. */
function next(r, ok, x, verdict) {
  const { rx, ks } = r
  // Never retried once the caller aborted or the instance closed.
  if (verdict === V.SUCCESS || (r.signal !== undefined && r.signal.aborted) || rx._closed) return end(r, ok, x)
  const hint = retryAfterOf(x)
  const left = r.timeoutMs === undefined ? -1 : Math.max(0, r.timeoutMs - (native.nowMs() - r.t0))
  const d = decide(ks, r.attempts, verdict, hint, left, r.delay, r.policy)
  if (d === RETRY_AFTER_REFUSED) return fail(r, retryAfterError(ks.name, r.timeoutMs, Math.min(hint, r.policy.maxRetryAfterMs), left, x))
  // Refused before its wait, never announced to onRetry: the attempt before is the answer.
  if (d === THROTTLE_REFUSED) rx._events.rejected(REJECTED_THROTTLE, ks.name, ks, r.prio, undefined, r.attempts + 1)
  if (d < 0) return end(r, ok, x)
  r.lastOk = ok
  r.last = x
  rx._events.retrying(ks.name, r.attempts + 1, d, verdict)
  if (rx._closed) return fail(r, closedError('a call')) // by a listener
  r.delay = d
  const b = new Backoff(r)
  if (r.signal !== undefined) {
    try {
      rx._signals.add(b, r.signal)
    } catch (err) {
      return fail(r, err) // the signal refused its listener
    }
  }
  rx._backoffs.add(b)
  // Ref'd: a caller waits for its answer (ADR 0603).
  b._timer = setTimeout(afterBackoff, delayMs(d), b)
}

function afterBackoff(b) {
  b.done()
  const r = b._r
  const { rx, ks } = r
  let left
  if (r.timeoutMs !== undefined) {
    left = r.timeoutMs - (native.nowMs() - r.t0)
    if (left <= 0) return fail(r, new TimeoutError(ks.name, r.timeoutMs, false))
  }
  let p
  // Every attempt pays the quota (ADR 1100).
  const cost = r.cost === null ? null : r.cost.again()
  try {
    const budget = attemptBudget(r.policy, left)
    // The throttle decided this retry before its wait: not drawn again (ADR 1004).
    native.throttlePass(ks.handle)
    p = acquire(rx, ks, budget, r.prio, cost)
  } catch (err) {
    return fail(r, err)
  }
  if (rx._closed) return fail(r, closedError('a call')) // by a listener
  if (p >= 0 || p === QUEUED || p === QUOTA_WAIT) return launch(r, p, left, cost)
  // Refused at once by our own policies: not sent; the attempt before is the answer.
  if (cost === null) rx._events.rejected(p, ks.name, ks, r.prio, undefined, r.attempts + 1)
  else rejection(rx, p, ks, r.prio, cost, r.attempts + 1)
  end(r, r.lastOk, r.last)
}

/** Starts an attempt holding `p` (or queued), `left` ms before the call's deadline. */
function launch(r, p, left, cost = r.cost) {
  let ms = left
  r.bounded = true
  const own = r.policy.attemptTimeoutMs
  if (own !== undefined && (ms === undefined || own < ms)) {
    ms = own
    r.bounded = false
  }
  const call = new RetryingCall(r.rx, r.ks, r.fn, ms, r.signal)
  call._retry = r
  if (r.attempts > 0) call._attempt = r.attempts + 1 // a retry, not the first attempt
  call._prio = r.prio
  call._cost = cost
  call._resolve = r.resolve
  call._reject = r.reject
  if (p === QUOTA_WAIT) call._permit = p
  if (p >= 0) {
    call._permit = p
    call._state = RUNNING
    guardAttempt(call, true)
  } else guardAttempt(call, false)
}

/**
 * The deadline the engine is told for an attempt `leftMs` before the call's: its own
 * attemptTimeoutMs when sooner. Its queue then refuses an attempt that could not run within
 * it, and its timeout after a short wait is read as a call's would be (ADR 0905).
 */
function attemptBudget(policy, leftMs) {
  const own = policy.attemptTimeoutMs
  return own !== undefined && (leftMs === undefined || own < leftMs) ? own : leftMs
}

/** Ends the call with an attempt's own outcome. */
function end(r, ok, x) {
  record(x, r.attempts)
  if (ok) r.resolve(x)
  else r.reject(x)
}

/** Ends the call with `err`. */
function fail(r, err) {
  record(err, r.attempts)
  r.reject(err)
}

/**
 * The engine's answer for a settled attempt: the delay in ms before the next, or a refusal
 * (< 0; RETRY_AFTER_REFUSED: the hint is beyond the deadline). `leftMs`: -1 for no deadline.
 * `heldPermit`: the attempt's permit when it is not settled yet (the interceptor decides at a
 * response's headers): its verdict is judged as the breaker will read it (ADR 1224).
 */
function decide(ks, attempts, verdict, hintMs, leftMs, previousDelayMs, policy, heldPermit = -1) {
  return native.retryDecide(
    ks.handle, heldPermit, attempts, verdict, hintMs === undefined ? -1 : hintMs, leftMs, previousDelayMs,
    policy.attempts, policy.baseMs, policy.maxDelayMs, policy.decorrelated, policy.retryOn, policy.maxRetryAfterMs,
  )
}

/** A Retry-After hint the deadline cannot honour ends the call at once (ADR 0902). */
function retryAfterError(key, timeoutMs, hintMs, leftMs, cause) {
  const e = new TimeoutError(key, timeoutMs, false)
  e.message =
    `resilix: call to "${key}" cannot be retried within its timeoutMs (${timeoutMs} ms): the upstream asked ` +
    `to wait ${Math.round(hintMs)} ms (Retry-After) and ${Math.round(leftMs)} ms are left`
  /** The wait the upstream asked for, capped by maxRetryAfterMs. */
  e.retryAfterMs = hintMs
  if (cause !== undefined) e.cause = cause
  return e
}

/**
 * A wait between attempts. It holds no permit; the caller's signal and close() end it (the
 * signal through the instance's one listener per signal, ADR 0604).
 */
class Backoff {
  constructor(r) {
    this._r = r
    this._timer = null
    // caller signal links (lib/signals.js)
    this._sentry = null
    this._sprev = null
    this._snext = null
  }

  /** The caller's signal aborted, or close(): the call ends with `err`. */
  abort(err) {
    clearTimeout(this._timer)
    this.done()
    fail(this._r, err)
  }

  done() {
    const rx = this._r.rx
    rx._backoffs.delete(this)
    if (this._sentry !== null) rx._signals.remove(this)
  }
}


module.exports = { startRetrying, attemptsOf, attemptBudget, Backoff, decide, retryAfterError, RETRY_AFTER_REFUSED, THROTTLE_REFUSED, REJECTED_THROTTLE }
