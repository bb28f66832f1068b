'use strict'
// The one admission path of execute() and acquire() (ADR 1200), its stages in the documented
// order: the call's options, its key, retry (the outermost: it bounds the first attempt), the
// engine's admission (breaker → quota → throttle → limiter and queue → bulkhead, one native
// acquire, lib/acquire.js), then the call's record enters the wait in its key's line, the
// timeout and signal guard, and the run (lib/pipeline.js). Bad input rejects, never throws.

const { QUEUED, QUOTA_WAIT, REGISTRY_FULL } = require('./native')
const { Call, GuardedCall, QuotaCall } = require('./call-record')
const { runPlain } = require('./run-plain')
const { runGuarded, wait } = require('./pipeline')
const { Cost, costOption, rejection } = require('./quota')
const { startRetrying, attemptBudget } = require('./retry')
const { Permit } = require('./permit')
const { reasonOf } = require('./signals')
const { readCallOptions, notAFunction, parsed } = require('./call-options')
const { keyState } = require('./key-registry')
const { acquire } = require('./acquire')
const { closedError } = require('./lifetime')
const { active: diagnosed } = require('./diagnostics')

/**
 * `execute`: fn and opts.key are execute()'s and the instance's timeoutMs and retry apply; else
 * acquire() of `key`. `attempt`: the interceptor's retry, its attempt number (2 for the first
 * retry), told with its refusal (ADR 1004); 0 for any other call.
 */
function admit(rx, fn, key, opts, execute, attempt) {
  let timeoutMs = execute ? rx._timeoutMs : undefined
  let retry = execute ? rx._retry : null
  let signal
  let prio = null
  let cost = null
  if (opts !== undefined) {
    if (!readCallOptions(opts, execute, timeoutMs, retry)) return Promise.reject(parsed.error)
    if (execute) {
      key = parsed.key
      retry = parsed.retry
    }
    timeoutMs = parsed.timeoutMs
    signal = parsed.signal
    prio = parsed.prio
    if (rx._quota !== null || parsed.cost !== undefined) {
      try {
        cost = costOption(rx._quota, parsed.cost, execute ? 'execute' : 'acquire')
      } catch (err) {
        return Promise.reject(err)
      }
    }
  } else if (rx._quota !== null) cost = new Cost(rx._quota)
  if (execute && typeof fn !== 'function') return Promise.reject(notAFunction(fn))
  if (signal !== undefined && parsed.aborted) return Promise.reject(reasonOf(signal))
  let ks, p
  try {
    ks = keyState(rx, key)
    if (ks === null) return Promise.reject(rx._events.rejected(REGISTRY_FULL, key, undefined, undefined, undefined, attempt))
    // A first attempt is judged by its own deadline when sooner (ADR 0905).
    p = acquire(rx, ks, retry === null ? timeoutMs : attemptBudget(retry, timeoutMs), prio, cost)
  } catch (err) {
    return Promise.reject(err)
  }
  // A listener (evict, limit, breaker) may have closed this instance meanwhile.
  if (rx._closed) return Promise.reject(closedError('a call'))
  // The plain call, as enter() would run it, without its checks: the fast path (ADR 1200).
  if (p >= 0 && fn !== null && cost === null && retry === null && prio === null && timeoutMs === undefined && signal === undefined && !diagnosed()) {
    return runPlain(new Call(rx, ks, fn, undefined, undefined), p)
  }
  return enter(rx, ks, fn, timeoutMs, signal, retry, prio, cost, p, attempt)
}

/**
 * The engine answered `p` for a call: it is refused, retried (lib/retry.js), handed a permit
 * (acquire()), run, or waits. A call with no deadline, no signal, no priority and nobody timing
 * calls runs as a slim Call on fn's own promise (lib/run-plain.js); any other gets one GuardedCall,
 * the record every later stage reads and writes.
 */
function enter(rx, ks, fn, timeoutMs, signal, retry, prio, cost, p, attempt) {
  if (p < 0 && p !== QUEUED && p !== QUOTA_WAIT) {
    return Promise.reject(cost === null ? rx._events.rejected(p, ks.name, ks, prio, undefined, attempt) : rejection(rx, p, ks, prio, cost, attempt))
  }
  if (retry !== null) return startRetrying(rx, ks, fn, retry, timeoutMs, signal, p, prio, cost)
  if (p >= 0) {
    if (fn === null) {
      const permit = new Permit(rx, ks, p)
      if (cost !== null) permit._cost = cost
      return Promise.resolve(permit)
    }
    if (prio === null && timeoutMs === undefined && signal === undefined && !diagnosed()) {
      return runPlain(cost === null ? new Call(rx, ks, fn, undefined, undefined) : new QuotaCall(rx, ks, fn, cost), p)
    }
    return runGuarded(record(rx, ks, fn, timeoutMs, signal, prio, cost), p)
  }
  const call = record(rx, ks, fn, timeoutMs, signal, prio, cost)
  call._attempt = attempt
  if (p === QUOTA_WAIT) call._permit = p
  return wait(call)
}

function record(rx, ks, fn, timeoutMs, signal, prio, cost) {
  const call = new GuardedCall(rx, ks, fn, timeoutMs, signal)
  call._prio = prio
  call._cost = cost
  return call
}

module.exports = { admit }
