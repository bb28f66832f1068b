'use strict'
// The timeout and signal guard of a call that is not plain (ADR 1200): its caller's signal
// linked, its deadline armed, then it runs or waits in its key's line; and what the caller's
// abort does. The deadline's own expiry is lib/call.js's, where a call settles.

const { AsyncResource } = require('node:async_hooks')
const { native, clockCell, CELL } = require('./native')
/** The clock cell's element holding the latest acquire's time: a constant read once (ADR 1210). */
const NOW = CELL.now
const V = require('./verdicts')
const { WAITING, RUNNING, DONE } = require('./call-record')
const { runningOn } = require('./run-fn')
const { start, settle, giveUp, answer, deadlines, wakeBudget } = require('./call')
const { enter, leaveEngine } = require('./line')
const { stuckAfterMs, warnSelfWait } = require('./lifetime')
const diag = require('./diagnostics')

/** A call with a deadline or a caller signal, holding `permit`: our own promise. */
function runGuarded(call, permit) {
  call._permit = permit
  call._state = RUNNING
  return guard(call, true)
}

/** A call that waits in its key's FIFO; a fn running on that key warns once (self-wait). */
function wait(call) {
  if (runningOn(call._ks)) warnSelfWait(call._ks)
  return guard(call, false)
}

/** Links the caller's signal and the deadline, then starts the call or queues it. */
function guard(call, running) {
  if (call._callerSignal !== undefined) {
    const err = linkSignal(call, running)
    if (err !== undefined) return Promise.reject(err)
  }
  capturing = call
  const promise = new Promise(capture)
  launch(call, running)
  return promise
}

/**
 * A retry's attempt (lib/retry.js): as guard(), answering through the resolvers the call
 * already holds (its caller's) rather than a promise of its own.
 */
function guardAttempt(call, running) {
  if (call._callerSignal !== undefined) {
    const err = linkSignal(call, running)
    if (err !== undefined) {
      call._answered = true
      call._reject(err)
      return
    }
  }
  launch(call, running)
}

/** Links the caller's signal; its addEventListener's error, after which the call never starts. */
function linkSignal(call, running) {
  try {
    call._rx._signals.add(call, call._callerSignal)
  } catch (err) {
    call._state = DONE
    if (running) {
      settle(call._rx, call._ks, call._permit, V.CANCELLED)
      if (call._timing !== null) diag.settled(call._rx, call.key, V.CANCELLED, call._timing, false)
    } else leaveEngine(call)
    return err
  }
  return undefined
}

function launch(call, running) {
  // The engine's clock as of the acquire that preceded this (the clock cell): no clock read.
  if (call._timeoutMs !== undefined) deadlines.add(call, call._timeoutMs, clockCell[NOW], true)
  if (running) start(call)
  else {
    // Keep the caller's async context for when fn runs later (p-limit #71).
    call._asyncResource = new AsyncResource('resilix.queued')
    enter(call, wakeBudget)
  }
}

// The call whose promise is being created: `new Promise(capture)` stores the resolvers on it
// without allocating an executor closure per call (the executor runs synchronously).
let capturing = null
function capture(resolve, reject) {
  capturing._resolve = resolve
  capturing._reject = reject
  capturing = null
}

/** The caller's signal aborted (lib/signals.js unlinked the call). */
function callerAborted(call, reason) {
  if (call._state === WAITING) {
    giveUp(call, reason)
    return
  }
  if (call._state !== RUNNING) return
  call._cancelled = true
  if (call._dlist !== null) deadlines.remove(call)
  answer(call, reason)
  deadlines.add(call, stuckAfterMs(call), native.nowMs(), false)
  if (call._controller !== null) call._controller.abort(reason)
}

module.exports = { runGuarded, wait, guardAttempt, callerAborted }
