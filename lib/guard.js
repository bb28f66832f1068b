'use strict'
// The guard stage (ADR 1219): a call's timeout and its caller's signal. enterGuard() links the
// signal and arms the deadline, leaveGuard() stops both, so no listener outlives the call; and
// how a call that the guard ends early is answered. The deadlines are handed in: one list for
// the thread, made by lib/pipeline.js with what a deadline that passes does next.

const { clockCell, CELL, native } = require('./native')
/** The clock cell's element holding the latest acquire's time: a constant read once (ADR 1210). */
const NOW = CELL.now
const { TimeoutError } = require('./errors')
const { answer, reportedMs, DONE } = require('./call-record')
const { stuckAfterMs } = require('./lifetime')

/**
 * Links the caller's signal, then arms the deadline in `deadlines`. Returns the error of the
 * signal's addEventListener (the call then never starts, and has no deadline), else undefined.
 */
function enterGuard(call, deadlines) {
  if (call._callerSignal !== undefined) {
    try {
      call._rx._signals.add(call, call._callerSignal)
    } catch (err) {
      return err
    }
  }
  // The engine's clock as of the acquire that preceded this (the clock cell): no clock read.
  if (call._timeoutMs !== undefined) deadlines.add(call, call._timeoutMs, clockCell[NOW], true)
  return undefined
}

/** Stops the deadline and unlinks the caller's signal. Idempotent. */
function leaveGuard(call, deadlines) {
  if (call._dlist !== null) deadlines.remove(call)
  if (call._sentry !== null) call._rx._signals.remove(call)
}

/** A waiter refused by our own policies (`err`) never runs: its guard stops, its caller is answered. */
function refused(call, err, deadlines) {
  leaveGuard(call, deadlines)
  call._state = DONE
  // A retry refused by our own policies is not sent: its call ends with the attempt before.
  // A first attempt (its RetryState when it has attemptTimeoutMs) has none: it gets `err`.
  if (call._retry !== null && call._attempt > 0) {
    call._answered = true
    call.retryRefused()
  } else answer(call, err)
}

/**
 * A running call's deadline passed: its caller is answered with a TimeoutError (an attempt's
 * own deadline, attemptTimeoutMs, may be retried instead: that error is returned, else null),
 * its fn's signal aborts, and its slot is held until fn settles or is released as stuck.
 */
function timedOut(call, now, deadlines) {
  call._timedOut = true
  // The caller has its answer; a later abort of its signal can change nothing (ctx.signal is
  // aborted below), so unlink now rather than when a fn that ignores its signal settles: a
  // long-lived parent signal must not hold a listener per timed-out straggler.
  leaveGuard(call, deadlines)
  const err = new TimeoutError(call.key, reportedMs(call), false)
  const r = call._retry
  const retrying = r !== null && !r.first && !r.bounded
  if (retrying) call._answered = true
  else answer(call, err)
  deadlines.add(call, stuckAfterMs(call), now, false)
  if (call._controller !== null) call._controller.abort(err)
  return retrying ? err : null
}

/** A running call's caller aborted: it is answered with `reason`, fn's signal aborts. */
function aborted(call, reason, deadlines) {
  call._cancelled = true
  if (call._dlist !== null) deadlines.remove(call)
  answer(call, reason)
  deadlines.add(call, stuckAfterMs(call), native.nowMs(), false)
  if (call._controller !== null) call._controller.abort(reason)
}

module.exports = { enterGuard, leaveGuard, refused, timedOut, aborted }
