'use strict'
// The one place that wires a call's stages (ADR 1219), in the documented order: retry
// (lib/retry.js, around all the rest), the engine's admission (lib/acquire.js), the wait in the
// key's line (lib/line.js), the guard (lib/guard.js: timeout and caller signal), the run
// (lib/run-fn.js) and the settle (lib/settle.js). Each stage has enterX(call, …) and leaveX(call, …)
// and returns what happened as data; none calls the next stage or back into the one before: this
// file alone decides what comes next. A plain call's run is lib/run-plain.js (ADR 1200).

const { native, QUEUED } = require('./native')
const { TimeoutError } = require('./errors')
const V = require('./verdicts')
const { WAITING, RUNNING, DONE, reportedMs, refusal, answer } = require('./call-record')
const { enterRun, leaveRun, runningOn } = require('./run-fn')
const line = require('./line')
const { enterLine, leaveLine } = line
const { enterSettle, leaveSettle, told } = require('./settle')
const { enterGuard, leaveGuard, refused, timedOut, aborted } = require('./guard')
const { Deadlines } = require('./deadlines')
const { handOver } = require('./permit')
const { warnSelfWait } = require('./lifetime')
const diag = require('./diagnostics')

/** The thread's deadlines, shared by every instance: a deadline that passes calls expire(). */
const deadlines = new Deadlines(expire)

// ---- entering: the guard, then the run or the wait --------------------------------------------

/** A call with a deadline or a caller signal, holding `permit`: our own promise. */
function runGuarded(call, permit) {
  call._permit = permit
  call._state = RUNNING
  return guarded(call, true, true)
}

/** A call that waits in its key's line; a fn running on that key warns once (self-wait). */
function wait(call) {
  if (runningOn(call._ks)) warnSelfWait(call._ks)
  return guarded(call, false, true)
}

/**
 * The guard, then the run or the wait. `own`: the call answers through a promise of its own
 * (returned); else through the resolvers it holds, its caller's (a retry's attempt).
 */
function guarded(call, running, own) {
  const err = enterGuard(call, deadlines)
  let promise
  if (err !== undefined) {
    // Its signal's addEventListener threw: its caller gets `err`, and the call gives its place
    // back (a permit as cancelled, in start()).
    call._answered = true
    if (own) promise = Promise.reject(err)
    else call._reject(err)
    if (!running) {
      call._state = DONE
      line.leaveEngine(call)
      return promise
    }
  } else if (own) {
    capturing = call
    promise = new Promise(capture)
  }
  if (running) start(call, err)
  else enterLine(call, wakeBudget)
  return promise
}

/** A retry's attempt (lib/retry.js): as guarded(), answering through its caller's resolvers. */
function guardAttempt(call, running) {
  guarded(call, running, false)
}

// The call whose promise is being created: `new Promise(capture)` stores the resolvers on it
// without allocating an executor closure per call (the executor runs synchronously).
let capturing = null
function capture(resolve, reject) {
  capturing._resolve = resolve
  capturing._reject = reject
  capturing = null
}

// ---- running and settling ---------------------------------------------------------------------

/**
 * A call holding its permit starts: fn runs (or acquire() gets its Permit). One whose guard
 * refused it (`err`) ends at once, as cancelled, fn never called.
 */
function start(call, err) {
  if (err !== undefined) {
    call._cancelled = true
    return ended(call, false, err)
  }
  if (call._fn === null) {
    // acquire(): hand over a permit; its holder settles it.
    leaveGuard(call, deadlines)
    return handOver(call)
  }
  let ok = false
  let x
  try {
    x = enterRun(call)
    // A thenable is untrusted code: reading `then` or calling it may throw, and it may call
    // back twice. Promise semantics: a throw rejects, the first callback wins (ended ignores
    // the rest), so the permit is settled exactly once whatever the thenable does.
    const then = x !== null && (typeof x === 'object' || typeof x === 'function') ? x.then : undefined
    if (typeof then === 'function') {
      then.call(
        x,
        (v) => ended(call, true, v),
        (e) => ended(call, false, e),
      )
      return
    }
    ok = true
  } catch (e) {
    x = e
  }
  ended(call, ok, x)
}

/** fn ended: the caller is answered first, then the permit is settled and wakes the waiters. */
function ended(call, ok, x) {
  if (call._state !== RUNNING) return // a thenable calling back twice, or throwing after
  const verdict = leaveRun(call, ok, x)
  leaveGuard(call, deadlines)
  call._state = DONE
  // Resolving runs no user code now, and the settle below may start woken calls, whose own
  // failures must never leave this caller unanswered. An attempt of a retrying call that did
  // not succeed is decided once settled (lib/retry.js).
  let retrying = false
  if (!call._answered) {
    call._answered = true
    if (call._classifyError !== undefined) call._reject(call._classifyError)
    else if (call._retry !== null && !(ok && verdict === V.SUCCESS && call._retry.first)) retrying = true
    else if (ok) call._resolve(x)
    else call._reject(x)
  }
  settled(call._rx, call._ks, leaveSettle(call, verdict, x))
  told(call, verdict, false)
  if (retrying) call.attemptEnded(ok, x, verdict)
}

/** Settles a permit with the engine (a plain call's, a Permit's). */
function settle(rx, ks, permit, verdict) {
  settled(rx, ks, native.settle(ks.handle, permit, verdict))
}

const NONE = []

/**
 * After a settle: `freed` slots (the engine's answer) start the key's waiters, head first, while
 * the engine answers for them. On a new key, the waiters that queued before its latency was
 * known and cannot make their deadline are refused first, once a call that had waited settled
 * (ADR 0615).
 */
function settled(rx, ks, freed) {
  if (rx._events.watching) rx._events.observe(ks)
  if (ks.head === null) return
  const late = ks.judged ? NONE : line.lateWaiters(ks)
  // Not while this loop already runs for the key (a woken fn settled synchronously).
  const waking = freed > 0 && !ks.waking
  if (!waking && late.length === 0) return
  if (waking) ks.waking = true
  try {
    for (let i = 0, call; ; ) {
      if (i < late.length) call = late[i++]
      else if (!waking || (call = line.admitNext(ks, deadlines)) === null) break
      if (call._permit < 0) refused(call, refusal(call), deadlines)
      else {
        const ar = enterSettle(call) // fn runs in its caller's async context
        ar.runInAsyncScope(start, null, call)
        ar.emitDestroy()
      }
    }
  } finally {
    if (waking) ks.waking = false
  }
}

/**
 * The key's budget line asks again (its timer, or budget came back): as settled(), head first,
 * while the engine lets them through; one let through to the limiter's queue waits there.
 */
function wakeBudget(ks) {
  const budget = line.budgetTurn(ks)
  try {
    let call
    while (ks.handle >= 0 && (call = line.budgetNext(ks, deadlines)) !== null) {
      if (call._permit === QUEUED) {
        call._permit = -1
        line.enqueue(ks, call)
      } else if (call._permit < 0) refused(call, refusal(call), deadlines)
      else {
        const ar = enterSettle(call) // fn runs in its caller's async context
        ar.runInAsyncScope(start, null, call)
        ar.emitDestroy()
      }
    }
  } finally {
    budget.pumping = false
  }
}

// ---- ending early: refused, deadline, caller abort, close -------------------------------------

/** A waiting call leaves its line and the engine's count, rejected with `err`. */
function giveUp(call, err) {
  leaveLine(call)
  call._state = DONE
  leaveGuard(call, deadlines)
  answer(call, err)
  if (call._timing !== null) diag.left(call._rx, call.key, err, call._timing)
}

/** A deadline passed (the guard's deadlines removed it): the caller's, or the stuck bound's. */
function expire(call, now) {
  if (call._state === WAITING) return giveUp(call, new TimeoutError(call.key, reportedMs(call), true))
  if (call._state !== RUNNING) return
  if (call._answered) return releaseStuck(call)
  const retried = timedOut(call, now, deadlines)
  if (retried !== null) call.attemptEnded(false, retried, V.TIMEOUT)
}

/** Its caller answered long ago, fn still unsettled: free the slot (ADR 0602). */
function releaseStuck(call) {
  call._state = DONE
  const verdict = call._cancelled ? V.CANCELLED : V.TIMEOUT
  settled(call._rx, call._ks, native.settleStuck(call._ks.handle, call._permit, verdict))
  told(call, verdict, true)
}

/** The caller's signal aborted (lib/signals.js unlinked the call). */
function callerAborted(call, reason) {
  if (call._state === WAITING) return giveUp(call, reason)
  if (call._state === RUNNING) aborted(call, reason, deadlines)
}

module.exports = { runGuarded, wait, guardAttempt, callerAborted, settle, giveUp }
