'use strict'
// A call's life after admission (ADR 1200): the timeout and signal guard, the wait in its key's
// line (lib/line.js), the run, then the settle with the engine that wakes the
// waiters; the caller is answered by fn, its deadline or its signal, whichever comes first. The
// call's record is lib/call-record.js. Plain functions, not methods: each call site calls one
// known function, whichever class the call is.

const { AsyncResource } = require('node:async_hooks')
const { native, clockCell, QUEUED } = require('./native')
const { TimeoutError } = require('./errors')
const V = require('./verdicts')
const { WAITING, RUNNING, DONE } = require('./call-record')
const { runFn, runningOn, verdictOfValue, verdictOfError } = require('./run-fn')
const { Deadlines } = require('./deadlines')
const { enter, enqueue, admitNext, budgetNext, lateWaiters, leave, leaveEngine } = require('./line')
const { Permit } = require('./permit')
const { stuckAfterMs, warnSelfWait } = require('./lifetime')
const diag = require('./diagnostics')
const quota = require('./quota')

// ---- running ----------------------------------------------------------------------------------

/** A call with no deadline, no caller signal and no wait: fn's own promise, awaited. */
async function runPlain(call, permit) {
  call._permit = permit
  call._state = RUNNING
  let v
  try {
    v = await runFn(call)
  } catch (err) {
    if (call._cost !== undefined && call._rx._quota.pace) quota.observe(call, err)
    finish(call, verdictOfError(call, err), err)
    // As on the guarded path (fnDone): a classify that throws rejects with its own error.
    if (call._classifyError !== undefined) throw call._classifyError
    throw err
  }
  if (call._cost !== undefined && call._rx._quota.pace) quota.observe(call, v)
  finish(call, verdictOfValue(call, v), v)
  if (call._classifyError !== undefined) throw call._classifyError
  return v
}

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
  if (call._timeoutMs !== undefined) deadlines.add(call, call._timeoutMs, clockCell[0], true)
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

function start(call) {
  if (call._fn === null) {
    // acquire(): hand over a permit; its holder settles it.
    detach(call)
    call._state = DONE
    call._answered = true
    const permit = new Permit(call._rx, call._ks, call._permit, call._timing)
    if (call._cost !== null) permit._cost = call._cost
    call._resolve(permit)
    return
  }
  let r
  try {
    r = runFn(call)
  } catch (err) {
    fnDone(call, false, err)
    return
  }
  if (r !== null && (typeof r === 'object' || typeof r === 'function')) {
    // A thenable is untrusted code: reading `then` or calling it may throw, and it may call
    // back twice. Promise semantics: a throw rejects, the first callback wins (fnDone ignores
    // the rest), so the permit is settled exactly once whatever the thenable does.
    try {
      const then = r.then
      if (typeof then === 'function') {
        then.call(
          r,
          (v) => fnDone(call, true, v),
          (e) => fnDone(call, false, e),
        )
        return
      }
    } catch (err) {
      fnDone(call, false, err)
      return
    }
  }
  fnDone(call, true, r)
}

function fnDone(call, ok, x) {
  if (call._state !== RUNNING) return // a thenable calling back twice, or throwing after
  let verdict
  if (call._cancelled) verdict = V.CANCELLED
  else if (call._timedOut) verdict = V.TIMEOUT
  else verdict = ok ? verdictOfValue(call, x) : verdictOfError(call, x)
  detach(call)
  call._state = DONE
  if (call._cost !== null && call._rx._quota.pace) quota.observe(call, x)
  // The caller first: resolving runs no user code now, and the settle below may start woken
  // calls, whose own failures must never leave this caller unanswered. An attempt of a
  // retrying call that did not succeed is decided once settled (lib/retry.js).
  let retrying = false
  if (!call._answered) {
    call._answered = true
    if (call._classifyError !== undefined) call._reject(call._classifyError)
    else if (call._retry !== null && !(ok && verdict === V.SUCCESS && call._retry.first)) retrying = true
    else if (ok) call._resolve(x)
    else call._reject(x)
  }
  settle(call._rx, call._ks, call._permit, V.settleCode(verdict, x))
  if (call._timing !== null) diag.settled(call._rx, call.key, verdict, call._timing, false)
  if (retrying) call.attemptEnded(ok, x, verdict)
}

// ---- settling and waking ----------------------------------------------------------------------

/** Settles a call that ended with `verdict` (`x`: its value or error). */
function finish(call, verdict, x) {
  call._state = DONE
  settle(call._rx, call._ks, call._permit, V.settleCode(verdict, x))
}

/** Settles a permit with the engine. */
function settle(rx, ks, permit, verdict) {
  settled(rx, ks, native.settle(ks.handle, permit, verdict))
}

/**
 * After a settle: `freed` slots (the engine's answer) wake the key's waiters. On a new key, the
 * waiters that queued before its latency was known and cannot make their deadline are refused
 * first, once a call that had waited settled (ADR 0615).
 */
function settled(rx, ks, freed) {
  if (rx._events.watching) rx._events.observe(ks)
  if (!ks.judged && ks.head !== null) {
    for (const call of lateWaiters(ks)) refuseWaiter(call, rx._events.rejected(call._permit, ks.name, ks, call._prio, undefined, call._attempt))
  }
  if (freed > 0 && ks.head !== null) wake(rx, ks)
}

/** Starts or rejects the key's waiters, oldest first, while the engine answers for them. */
function wake(rx, ks) {
  if (ks.waking) return // the loop below is already running (a woken fn settled synchronously)
  ks.waking = true
  try {
    let call
    while ((call = ks.head) !== null) {
      // A deadline that passed while the event loop was blocked: its timer has not fired yet,
      // and the call must not run now (ADR 0609).
      if (deadlines.overdue(call)) continue
      if ((call = admitNext(ks)) === null) break
      if (call._permit >= 0) startWaiter(call)
      else refuseWaiter(call, rx._events.rejected(call._permit, ks.name, ks, call._prio, undefined, call._attempt))
    }
  } finally {
    ks.waking = false
  }
}

/**
 * The key's budget line asks again (its timer, or budget came back): as wake(), the head first,
 * while the engine lets them through; one let through to the limiter's queue waits there.
 */
function wakeBudget(ks) {
  const line = ks.line
  line.timer = null
  line.at = Infinity
  line.pumping = true
  try {
    let call
    while ((call = line.head) !== null && ks.handle >= 0) {
      // A deadline that passed during a stall: the call leaves, it is never let through (ADR 1108).
      if (deadlines.overdue(call)) continue
      if ((call = budgetNext(ks)) === null) break
      const p = call._permit
      if (p >= 0) startWaiter(call)
      else if (p === QUEUED) {
        call._permit = -1
        enqueue(ks, call)
      } else refuseWaiter(call, quota.rejection(call._rx, p, ks, call._prio, call._cost, call._attempt))
    }
  } finally {
    line.pumping = false
  }
}

/** A waiter got its permit: its fn runs in the caller's async context. */
function startWaiter(call) {
  call._state = RUNNING
  if (call._timing !== null) diag.started(call._timing)
  const ar = call._asyncResource
  call._asyncResource = null
  ar.runInAsyncScope(start, null, call)
  ar.emitDestroy()
}

/** A waiter refused by our own policies. */
function refuseWaiter(call, err) {
  detach(call)
  call._state = DONE
  // A retry refused by our own policies is not sent: its call ends with the attempt before.
  // A first attempt (its RetryState when it has attemptTimeoutMs) has none: it gets `err`.
  if (call._retry !== null && call._attempt > 0) {
    call._answered = true
    call.retryRefused()
  } else answer(call, err)
}

// ---- ending early: deadline, caller abort, close -----------------------------------------------

/** Stops the deadline and unlinks the caller's signal: no listener outlives the call. */
function detach(call) {
  if (call._dlist !== null) deadlines.remove(call)
  if (call._sentry !== null) call._rx._signals.remove(call)
}

function answer(call, err) {
  if (call._answered) return
  call._answered = true
  // A retry's attempt ends its call: the attempts are recorded (lib/retry.js attemptsOf).
  if (call._retry !== null && !call._retry.first) call.answeredWith(err)
  call._reject(err)
}

/** A waiting call leaves the FIFO and the engine's queue, rejected with `err`. */
function giveUp(call, err) {
  leave(call)
  call._state = DONE
  detach(call)
  answer(call, err)
  if (call._timing !== null) diag.left(call._rx, call.key, err, call._timing)
}

/** A deadline passed (Deadlines removed it): the caller's, or the stuck bound's. */
function expire(call, now) {
  if (call._state === WAITING) {
    giveUp(call, new TimeoutError(call.key, reportedMs(call), true))
    return
  }
  if (call._state !== RUNNING) return
  if (call._answered) {
    releaseStuck(call)
    return
  }
  call._timedOut = true
  // The caller has its answer; a later abort of its signal can change nothing (ctx.signal is
  // aborted below), so unlink now rather than when a fn that ignores its signal settles: a
  // long-lived parent signal must not hold a listener per timed-out straggler.
  detach(call)
  const err = new TimeoutError(call.key, reportedMs(call), false)
  // An attempt's own deadline (attemptTimeoutMs) may be retried; the call's may not.
  const r = call._retry
  const retrying = r !== null && !r.first && !r.bounded
  if (retrying) call._answered = true
  else answer(call, err)
  deadlines.add(call, stuckAfterMs(call), now, false)
  if (call._controller !== null) call._controller.abort(err)
  if (retrying) call.attemptEnded(false, err, V.TIMEOUT)
}

/** The deadline a TimeoutError names: the call's timeoutMs, for a retry's attempt too. */
function reportedMs(call) {
  const r = call._retry
  return r === null || r.first || !r.bounded ? call._timeoutMs : r.timeoutMs
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

/** Its caller answered long ago, fn still unsettled: free the slot (ADR 0602). */
function releaseStuck(call) {
  call._state = DONE
  const ks = call._ks
  const verdict = call._cancelled ? V.CANCELLED : V.TIMEOUT
  settled(call._rx, ks, native.settleStuck(ks.handle, call._permit, verdict))
  if (call._timing !== null) diag.settled(call._rx, call.key, verdict, call._timing, true)
}

/** The thread's deadlines, shared by every instance. */
const deadlines = new Deadlines(expire)


module.exports = {
  runPlain, runGuarded, wait, settle, giveUp, callerAborted,
  // a retrying call's attempts (lib/retry.js)
  finish, guardAttempt,
}
