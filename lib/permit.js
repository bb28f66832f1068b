'use strict'
// A permit from the low-level `acquire()`: for callers that cannot wrap a function.

const { native } = require('./native')
const V = require('./verdicts')
const { describe } = require('./describe')
const diag = require('./diagnostics')
const quota = require('./quota')
const { DONE } = require('./call-record')

// A permit collected unreleased releases itself as 'cancelled' and warns with its key (once per
// key), so a forgotten release() cannot hold a slot for good (ADR 0605).
// The registry holds a small cell, not the permit; release() marks the cell instead of
// unregistering (unregister costs half as much again as register).
const dropped = new FinalizationRegistry((held) => {
  if (held.released) return
  held.rx._settle(held.ks, held.permit, V.CANCELLED)
  if (held.timing !== null) diag.settled(held.rx, held.ks.name, V.CANCELLED, held.timing, false)
  if (held.ks.warnedLeak) return
  held.ks.warnedLeak = true
  process.emitWarning(
    `resilix: a permit for key "${held.ks.name}" was garbage-collected without release(); it was released as ` +
      "'cancelled'. Release every permit, in a finally block",
    { code: 'RESILIX_PERMIT_LEAKED' },
  )
})

class Permit {
  /** `timing`: the waiting call's (lib/diagnostics.js); else one from the acquire just made. */
  constructor(rx, ks, permit, timing = diag.timing()) {
    /** The upstream key this permit belongs to. */
    this.key = ks.name
    this._rx = rx
    this._ks = ks
    this._permit = permit
    this._marked = false
    this._markFn = null
    /** With a quota: what the call costs (lib/quota.js). */
    this._cost = null
    this._cell = { rx, ks, permit, released: false, timing }
    dropped.register(this, this._cell)
  }

  /**
   * First byte arrived: the limiter's latency sample ends here. Later marks are ignored.
   * Bound on first read, so that it can be passed as a callback (see Call#mark).
   */
  get mark() {
    if (this._markFn === null) this._markFn = () => this._doMark()
    return this._markFn
  }

  _doMark() {
    if (this._marked || this._cell.released) return
    this._marked = true
    native.mark(this._ks.handle, this._permit)
    if (this._cell.timing !== null) diag.marked(this._cell.timing)
  }

  /**
   * Settles the permit with a verdict ('success' by default). Exactly once: a second release
   * throws and changes nothing.
   */
  release(verdict = 'success') {
    const code = V.codeOf(verdict)
    if (code === undefined) {
      throw new TypeError(
        `resilix: release(verdict) expects one of 'success', 'failure', 'overload', 'answered', 'timeout', 'rejected', got ${describe(verdict)}`,
      )
    }
    this._release(code, code)
  }

  /** release() with verdict `code`, settled with `wire` (V.settleCode: ADR 1004). */
  _release(code, wire) {
    if (this._cell.released) throw new Error(`resilix: the permit for "${this.key}" was already released`)
    this._cell.released = true
    this._rx._settle(this._ks, this._permit, wire)
    if (this._cell.timing !== null) diag.settled(this._rx, this.key, code, this._cell.timing, false)
  }

  /**
   * With a quota: what the call really used, e.g. `{ tokens: usage.total_tokens }`; the
   * difference from its `cost` is refunded or charged. May be called after release().
   */
  charge(usage) {
    quota.charge(this, usage)
  }

  /** True once released. */
  get released() {
    return this._cell.released
  }
}

/** acquire()'s call that held its place (a deadline, a signal, a wait) gets its Permit now. */
function handOver(call) {
  call._state = DONE // its holder settles the permit
  call._answered = true
  const permit = new Permit(call._rx, call._ks, call._permit, call._timing)
  if (call._cost !== null) permit._cost = call._cost
  call._resolve(permit)
}

module.exports = { Permit, handOver }
