'use strict'
// A call's run and settle (ADR 1200): fn runs, the call settles with the engine and the settle
// wakes the key's waiters (lib/line.js); a deadline that passes ends the call. The record is
// lib/call-record.js, the guard lib/guard.js, a plain call's run lib/run-plain.js. Plain
// functions, not methods: each call site calls one known function, whichever class the call is.

const { native, QUEUED } = require('./native')
const { TimeoutError } = require('./errors')
const V = require('./verdicts')
const { WAITING, RUNNING, DONE } = require('./call-record')
const { runFn, verdictOfValue, verdictOfError } = require('./run-fn')
const { Deadlines } = require('./deadlines')
const { enqueue, admitNext, budgetNext, lateWaiters, leave } = require('./line')
const { Permit } = require('./permit')
const { stuckAfterMs } = require('./lifetime')
const diag = require('./diagnostics')
const quota = require('./quota')

// ---- running ----------------------------------------------------------------------------------

/** A call holding its permit starts: fn runs (or acquire() gets its Permit). */
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
  start, settle, giveUp, answer, deadlines,
  // the budget line's timer (lib/line.js, through lib/guard.js)
  wakeBudget,
}
