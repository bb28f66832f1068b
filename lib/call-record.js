'use strict'
// A call's record (ADR 1200): the context handed to fn ({ key, signal, mark(), charge() }) and
// what every stage of the call's pipeline reads and writes, in one object so that a call
// allocates as little as possible; fields with a leading underscore are internal. A plain call
// (no deadline, signal, wait or priority) is a bare `Call`; any other a `GuardedCall`.

const { native } = require('./native')
const { TimeoutError } = require('./errors')
const { reasonOf } = require('./signals')
const diag = require('./diagnostics')
const quota = require('./quota')

// States of a call.
const WAITING = 0 // in the key's queue
const RUNNING = 1 // holds a permit, fn running
const DONE = 2 // permit settled (or never granted)

class Call {
  constructor(rx, ks, fn, timeoutMs, callerSignal) {
    /** The upstream key of this call. */
    this.key = ks.name
    this._rx = rx
    this._ks = ks
    this._fn = fn
    this._timeoutMs = timeoutMs
    this._callerSignal = callerSignal
    this._permit = -1
    this._state = WAITING
    this._marked = false
    this._markFn = null
    this._timedOut = false
    this._controller = null
    this._classifyError = undefined
  }

  /**
   * Aborts at the deadline or when the caller's own signal aborts. Created only when read:
   * an AbortController costs microseconds. Never aborted after fn returned successfully.
   */
  get signal() {
    if (this._controller !== null) return this._controller.signal
    // Only the caller's signal can abort it: hand that one over, no controller needed.
    if (this._timeoutMs === undefined && this._callerSignal !== undefined) return this._callerSignal
    const c = new AbortController()
    this._controller = c
    if (this._timedOut) c.abort(new TimeoutError(this.key, this._timeoutMs, false))
    else if (this._cancelled === true) c.abort(reasonOf(this._callerSignal))
    return c.signal
  }

  /**
   * Marks the first byte (or first token) of the response: the latency the limiter learns from
   * is start → mark. Only the first mark counts; after the call settles it is a no-op.
   * Bound on first read, so it works passed as a callback (`res.once('data', ctx.mark)`); a
   * method would throw there (`this` undefined) or silently mark nothing (`this` the emitter).
   */
  get mark() {
    if (this._markFn === null) this._markFn = () => this._doMark()
    return this._markFn
  }

  _doMark() {
    if (this._marked || this._state !== RUNNING) return
    this._marked = true
    native.mark(this._ks.handle, this._permit)
    const t = this._timing // a GuardedCall's (lib/diagnostics.js); a plain call has none
    if (t) diag.marked(t)
  }

  /**
   * With a quota: what the call really used, e.g. `{ tokens: usage.total_tokens }`. The
   * difference from its `cost` is refunded or charged; may be called after the call settled.
   */
  charge(usage) {
    quota.charge(this, usage)
  }
}

/** A plain call on an instance with a quota: its cost, for `charge` and the headers. */
class QuotaCall extends Call {
  constructor(rx, ks, fn, cost) {
    super(rx, ks, fn, undefined, undefined)
    this._cost = cost
  }
}

/**
 * A call with a deadline, a caller signal, a wait in the queue or a per-call event subscriber:
 * our own promise, deadline and queue links, its timing. A plain call (none of these) is a bare
 * `Call`, half the size: it is allocated on every protected call, and its size is most of the
 * per-call garbage.
 */
class GuardedCall extends Call {
  constructor(rx, ks, fn, timeoutMs, callerSignal) {
    super(rx, ks, fn, timeoutMs, callerSignal)
    this._cancelled = false
    this._answered = false // the caller's promise is settled
    this._resolve = null
    this._reject = null
    this._asyncResource = null
    // deadline list links (lib/deadlines.js)
    this._deadline = 0
    this._dlist = null
    this._dprev = null
    this._dnext = null
    this._dheld = false
    // caller signal links (lib/signals.js)
    this._sentry = null
    this._sprev = null
    this._snext = null
    // queue links (lib/line.js), and the priority and tenant that order them (lib/levels.js)
    this._qprev = null
    this._qnext = null
    this._prio = null
    // per-call events: a Timing while someone subscribes, else null (lib/diagnostics.js)
    this._timing = diag.timing()
    // a retrying call's policy (its first attempt) or its RetryState (lib/retry.js), else null
    this._retry = null
    // a retry's attempt number, told with its refusal (2 for the first retry); 0 for a first attempt
    this._attempt = 0
    // with a quota, what it costs (lib/quota.js), else null
    this._cost = null
  }
}

/** Answers the caller with `err`, once. */
function answer(call, err) {
  if (call._answered) return
  call._answered = true
  // A retry's attempt ends its call: the attempts are recorded (lib/retry.js attemptsOf).
  if (call._retry !== null && !call._retry.first) call.answeredWith(err)
  call._reject(err)
}

/** The error of a waiter the engine refused (its code in `_permit`) as it left its line. */
function refusal(call) {
  return quota.rejection(call._rx, call._permit, call._ks, call._prio, call._cost, call._attempt)
}

/** The deadline a TimeoutError names: the call's timeoutMs, for a retry's attempt too. */
function reportedMs(call) {
  const r = call._retry
  return r === null || r.first || !r.bounded ? call._timeoutMs : r.timeoutMs
}

module.exports = { Call, QuotaCall, GuardedCall, WAITING, RUNNING, DONE, answer, reportedMs, refusal }
