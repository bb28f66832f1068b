'use strict'
// One call: the context handed to fn ({ key, signal, mark() }) and the bookkeeping that the
// policies need, in one object so that a call allocates as little as possible. Fields with a
// leading underscore are internal.

const { TimeoutError } = require('./errors')
const { reasonOf } = require('./signals')

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
    this._rx._mark(this)
  }
}

/**
 * A call with a deadline, a caller signal or a wait in the queue: our own promise, deadline and
 * queue links. A plain call (none of these) is a bare `Call`, half the size: it is allocated on
 * every protected call, and its size is most of the per-call garbage.
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
    // queue links (lib/queue.js)
    this._qprev = null
    this._qnext = null
  }
}

// The key whose fn is running synchronously now: a call it queues on that same key is a
// self-wait, the start of a deadlock (warned once per key).
let current = null

/** Calls the call's fn, remembering its key while fn runs synchronously. */
function runFn(call) {
  const outer = current
  current = call._ks
  try {
    return call._fn(call)
  } finally {
    current = outer
  }
}

const runningNow = () => current

module.exports = { Call, GuardedCall, WAITING, RUNNING, DONE, runFn, runningNow }
