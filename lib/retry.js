'use strict'
// A retrying call (ADR 0900). Retry is the outermost policy: each attempt goes through
// breaker → limiter → bulkhead → timeout like any call, with its own permit, and its verdict
// and latency are a normal sample. The engine decides whether a settled attempt is retried and
// after how long (retryDecide: verdict, attempts, breaker, deadline, budget); this loop waits,
// reads Retry-After, keeps the one deadline, the caller's signal and close(), and answers with
// exactly what the last attempt produced.

const { native, clockCell, QUEUED, RETRY_REFUSED_BASE, RETRY_REFUSALS } = require('./native')
const V = require('./verdicts')
const { TimeoutError, RejectedError } = require('./errors')
const { Call, GuardedCall, runGuarded, wait, runFn, finish, verdictOfValue, verdictOfError, RUNNING } = require('./call')
const { retryAfterOf } = require('./retry-after')
const diag = require('./diagnostics')
const { closedError } = require('./lifetime')

const RETRY_AFTER_REFUSED = RETRY_REFUSED_BASE - RETRY_REFUSALS.indexOf('retry-after')

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
 * `timeoutMs` bounds every attempt, wait and backoff together.
 */
async function runRetrying(rx, ks, fn, policy, timeoutMs, signal, p) {
  const t0 = clockCell[0] // the engine clock of the first acquire: the deadline's start
  let attempts = 0
  let delay = 0
  // The outcome of the last attempt that ran: what the call ends with when a retry is refused.
  let lastOk = false
  let last
  for (;;) {
    attempts++
    let ok = false
    let x
    let verdict = -1
    // Each attempt's deadline: its own timeout, or what is left of the call's if sooner.
    let attemptMs = policy.attemptTimeoutMs
    let bounded = false
    if (timeoutMs !== undefined) {
      const left = attempts === 1 ? timeoutMs : timeoutMs - (native.nowMs() - t0)
      if (attemptMs === undefined || left <= attemptMs) {
        attemptMs = left
        bounded = true
      }
    }
    if (p >= 0 && attemptMs === undefined && signal === undefined && !diag.active()) {
      // As runPlain (lib/call.js): fn's own promise, awaited here.
      const call = new Call(rx, ks, fn, undefined, undefined)
      call._permit = p
      call._state = RUNNING
      try {
        x = await runFn(call)
        ok = true
      } catch (err) {
        x = err
      }
      verdict = ok ? verdictOfValue(call, x) : verdictOfError(call, x)
      finish(call, verdict)
      if (call._classifyError !== undefined) throw ended(call._classifyError, attempts)
    } else if (p >= 0 || p === QUEUED) {
      const call = new GuardedCall(rx, ks, fn, attemptMs, signal)
      try {
        x = await (p >= 0 ? runGuarded(call, p) : wait(call))
        ok = true
      } catch (err) {
        x = err
      }
      if (call._classifyError !== undefined) throw ended(x, attempts)
      // A deadline answers the caller before fn settles: its verdict will be a timeout.
      verdict = call._verdict >= 0 ? call._verdict : call._timedOut ? V.TIMEOUT : -1
      if (call._timedOut && bounded) {
        // The call's own deadline, not an attempt's: no time is left for another.
        throw ended(attempts === 1 ? x : new TimeoutError(ks.name, timeoutMs, false), attempts)
      }
    } else {
      // Refused at once by our own policies: never sent, never retried.
      x = rx._events.rejected(p, ks.name, ks)
    }

    if (verdict === V.SUCCESS) {
      if (ok) {
        if (attempts > 1) record(x, attempts)
        return x
      }
      throw ended(x, attempts)
    }
    if (verdict < 0) {
      // This attempt never ran: refused (at once or while it waited), its wait timed out, the
      // caller aborted, or close(). A refused retry ends the call with the attempt before.
      if (attempts > 1 && x instanceof RejectedError) return settleWith(lastOk, last, attempts - 1)
      if (attempts > 1 && x instanceof TimeoutError && timeoutMs !== undefined && bounded) {
        throw ended(new TimeoutError(ks.name, timeoutMs, true), attempts)
      }
      throw ended(x, attempts)
    }
    // Ran and did not succeed: never retried once the caller aborted or the instance closed.
    if ((signal !== undefined && signal.aborted) || rx._closed) return settleWith(ok, x, attempts)

    const hint = retryAfterOf(x)
    const left = timeoutMs === undefined ? -1 : Math.max(0, timeoutMs - (native.nowMs() - t0))
    const d = decide(ks, attempts, verdict, hint, left, delay, policy)
    if (d < 0) {
      if (d === RETRY_AFTER_REFUSED) throw ended(retryAfterError(ks.name, timeoutMs, Math.min(hint, policy.maxRetryAfterMs), left, x), attempts)
      return settleWith(ok, x, attempts)
    }
    lastOk = ok
    last = x
    rx._events.retrying(ks.name, attempts + 1, d, verdict)
    if (rx._closed) throw ended(closedError('a call'), attempts) // by a listener
    await backoff(rx, d, signal).catch((err) => {
      throw ended(err, attempts)
    })
    delay = d
    const budget = timeoutMs === undefined ? undefined : timeoutMs - (native.nowMs() - t0)
    if (budget !== undefined && budget <= 0) throw ended(new TimeoutError(ks.name, timeoutMs, false), attempts)
    p = rx._acquire(ks, budget)
    if (rx._closed) throw ended(closedError('a call'), attempts) // by a listener
  }
}

/**
 * The engine's answer for a settled attempt: the delay in ms before the next, or a refusal
 * (< 0; RETRY_AFTER_REFUSED: the hint is beyond the deadline). `leftMs`: -1 for no deadline.
 */
function decide(ks, attempts, verdict, hintMs, leftMs, previousDelayMs, policy) {
  return native.retryDecide(
    ks.handle, attempts, verdict, hintMs === undefined ? -1 : hintMs, leftMs, previousDelayMs,
    policy.attempts, policy.baseMs, policy.maxDelayMs, policy.decorrelated, policy.retryOn, policy.maxRetryAfterMs,
  )
}

/** The call's final error, its attempts recorded. */
function ended(err, attempts) {
  record(err, attempts)
  return err
}

/** Ends the call with an attempt's own outcome. */
function settleWith(ok, x, attempts) {
  record(x, attempts)
  if (ok) return x
  throw x
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
 * A wait between attempts. It holds no permit; the caller's signal and close() end it
 * (the signal through the instance's one listener per signal, ADR 0604).
 */
class Backoff {
  constructor(rx, resolve, reject) {
    this._rx = rx
    this._resolve = resolve
    this._reject = reject
    this._timer = null
    // caller signal links (lib/signals.js)
    this._sentry = null
    this._sprev = null
    this._snext = null
  }

  /** The caller's signal aborted, or close(): the wait ends with `err`. */
  abort(err) {
    clearTimeout(this._timer)
    this.done()
    this._reject(err)
  }

  done() {
    this._rx._backoffs.delete(this)
    if (this._sentry !== null) this._rx._signals.remove(this)
  }
}

function backoff(rx, ms, signal) {
  return new Promise((resolve, reject) => {
    const b = new Backoff(rx, resolve, reject)
    if (signal !== undefined) rx._signals.add(b, signal) // throws what addEventListener throws
    rx._backoffs.add(b)
    // Ref'd: a caller waits for its answer (ADR 0603).
    b._timer = setTimeout(() => {
      b.done()
      resolve()
    }, ms)
  })
}

module.exports = { runRetrying, attemptsOf, Backoff, decide, retryAfterError, RETRY_AFTER_REFUSED }
