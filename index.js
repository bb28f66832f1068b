'use strict'
// The public surface. Promises, waiters, deadlines, signals and classification live here;
// every policy decision is the engine's (engine/src). Hot path: one native call to acquire,
// one to settle, numbers only.

const { AsyncResource } = require('node:async_hooks')
const {
  native, clockCell, QUEUED, STALE_HANDLE, KEEP_WAITING, REGISTRY_FULL, REASONS, SLOT_SPAN, mapNativeError,
} = require('./lib/native')
const { RejectedError, TimeoutError, isRejectedError, isTimeoutError } = require('./lib/errors')
const V = require('./lib/verdicts')
const { custom } = require('./lib/classify')
const { normalize, describe } = require('./lib/options')
const { deadlines } = require('./lib/deadlines')
const { Call, GuardedCall, WAITING, RUNNING, DONE, runFn, runningNow } = require('./lib/call')
const { Permit } = require('./lib/permit')
const { Emitter } = require('./lib/events')
const { SignalLinks, reasonOf } = require('./lib/signals')
const { readCallOptions, parsed } = require('./lib/call-options')
const { KeyState, enqueue, unqueue, checkWellFormed } = require('./lib/keys')
const { keyStats, byKey } = require('./lib/stats')
const { engines, stuckAfterMs, closedError, TOO_MANY, tooManyError, warnSelfWait } = require('./lib/lifetime')

// `using rx = new Resilix()`; Node 20 before 20.4 has no Symbol.dispose, later ones define it
// as this registered symbol.
const DISPOSE = Symbol.dispose ?? Symbol.for('nodejs.dispose')

class Resilix {
  /** @param {import('./index').ResilixOptions} [options] */
  constructor(options) {
    const o = normalize(options)
    try {
      this._id = native.createEngine(o.native, o.seed)
    } catch (err) {
      throw mapNativeError(err)
    }
    if (this._id === TOO_MANY) throw tooManyError()
    engines.register(this, this._id, this)
    this._timeoutMs = o.timeoutMs
    this._classify = o.classify
    /** @type {Map<string, KeyState>} */
    this._keys = new Map()
    this._slotNames = []
    this._signals = new SignalLinks((call, reason) => this._callerAborted(call, reason))
    this._events = new Emitter()
    this._native = native
    this._closed = false
    this._registry = { refused: 0, evicted: 0 }
  }

  /**
   * Runs `fn` under the key's policies: breaker → limiter (+ queue) → bulkhead → timeout.
   * Resolves or rejects with exactly what fn did, or rejects with RejectedError / TimeoutError
   * / the caller signal's reason.
   */
  execute(fn, opts) {
    let key = 'default'
    let timeoutMs = this._timeoutMs
    let signal
    if (opts !== undefined) {
      if (!readCallOptions(opts, 'execute', true, timeoutMs)) return Promise.reject(parsed.error)
      key = parsed.key
      timeoutMs = parsed.timeoutMs
      signal = parsed.signal
    }
    if (typeof fn !== 'function') {
      return Promise.reject(new TypeError(`resilix: execute expects a function, got ${describe(fn)}`))
    }
    if (signal !== undefined && parsed.aborted) return Promise.reject(reasonOf(signal))
    let ks
    try {
      ks = this._keyState(key)
    } catch (err) {
      return Promise.reject(err)
    }
    if (ks === null) return Promise.reject(this._rejected('registry', key))
    const p = this._acquire(ks, timeoutMs)
    if (p >= 0) {
      if (timeoutMs === undefined && signal === undefined) {
        const call = new Call(this, ks, fn, undefined, undefined)
        call._permit = p
        call._state = RUNNING
        return this._runPlain(call)
      }
      const call = new GuardedCall(this, ks, fn, timeoutMs, signal)
      call._permit = p
      call._state = RUNNING
      return this._guarded(call, true)
    }
    if (p === QUEUED) return this._queued(new GuardedCall(this, ks, fn, timeoutMs, signal))
    return Promise.reject(this._rejected(REASONS[-10 - p], key))
  }

  /**
   * Low level: waits for a permit (queueing like execute) for callers that cannot wrap a
   * function. Settle it with `permit.release(verdict)` exactly once.
   */
  acquire(key = 'default', opts) {
    let timeoutMs
    let signal
    if (opts !== undefined) {
      if (!readCallOptions(opts, 'acquire', false, undefined)) return Promise.reject(parsed.error)
      timeoutMs = parsed.timeoutMs
      signal = parsed.signal
      if (signal !== undefined && parsed.aborted) return Promise.reject(reasonOf(signal))
    }
    let ks
    try {
      ks = this._keyState(key)
    } catch (err) {
      return Promise.reject(err)
    }
    if (ks === null) return Promise.reject(this._rejected('registry', key))
    const p = this._acquire(ks, timeoutMs)
    if (p >= 0) return Promise.resolve(new Permit(this, ks, p))
    if (p === QUEUED) return this._queued(new GuardedCall(this, ks, null, timeoutMs, signal))
    return Promise.reject(this._rejected(REASONS[-10 - p], key))
  }

  /**
   * The state of one key ({ limit, inflight, queued, breaker, algorithm, baselineMs, ... }),
   * undefined for a key not in the registry; without a key, an object of every live key's stats.
   */
  stats(key) {
    if (key === undefined) return byKey(this.keys(), (k) => this.stats(k))
    if (typeof key !== 'string') throw new TypeError(`resilix: stats expects a key string, got ${describe(key)}`)
    checkWellFormed(key)
    if (this._closed) return undefined
    let s
    try {
      s = native.stats(this._id, key)
    } catch (err) {
      throw mapNativeError(err)
    }
    return s === null || s === undefined ? undefined : keyStats(key, s)
  }

  /** Keys alive in the registry now, most recently used first. */
  keys() {
    return this._closed ? [] : native.keys(this._id)
  }

  /** The registry: live keys, and new keys refused (`'registry'`) and keys evicted since creation. */
  registryStats() {
    return { keys: this.keys().length, refused: this._registry.refused, evicted: this._registry.evicted }
  }

  /**
   * Frees the native state now. Waiting calls reject with an `ERR_RESILIX_CLOSED` error; running
   * calls still get what their fn does; later calls reject. Idempotent.
   */
  close() {
    if (this._closed) return
    this._closed = true
    for (const ks of this._keys.values()) {
      while (ks.head !== null) {
        const call = ks.head
        this._leaveQueue(call)
        this._detach(call)
        this._answer(call, closedError('a call waiting'))
      }
      ks.handle = -1 // a running call's settle now changes nothing
    }
    this._keys.clear()
    this._slotNames = []
    engines.unregister(this)
    native.destroyEngine(this._id)
    this._id = -1
  }

  [DISPOSE]() {
    this.close()
  }

  /** Subscribes to limit changes `{ key, limit, previous }`; returns `{ dispose() }`. */
  onLimitChange(listener) {
    return this._events.on('limit', listener)
  }

  /** Subscribes to breaker state changes `{ key, state, previous }`; returns `{ dispose() }`. */
  onBreakerStateChange(listener) {
    return this._events.on('breaker', listener)
  }

  /** Subscribes to rejections `{ key, reason }` (our own policies refusing a call). */
  onReject(listener) {
    return this._events.on('reject', listener)
  }

  /** Subscribes to evictions `{ key }`: an idle key dropped from the registry for a new one. */
  onEvict(listener) {
    return this._events.on('evict', listener)
  }

  // ---- internals ---------------------------------------------------------------------------

  _keyState(key) {
    let ks = this._keys.get(key)
    if (ks !== undefined) return ks
    if (typeof key !== 'string') throw new TypeError(`resilix: key must be a string, got ${describe(key)}`)
    checkWellFormed(key)
    if (this._closed) throw closedError('a call')
    let h
    try {
      h = native.resolveKey(this._id, key)
    } catch (err) {
      throw mapNativeError(err)
    }
    if (h === REGISTRY_FULL) {
      this._registry.refused++
      return null
    }
    // The engine reuses an evicted key's slot at once: forget that key here too, so this map
    // stays bounded by maxKeys whatever keys callers invent.
    const slot = h % SLOT_SPAN
    const old = this._slotNames[slot]
    this._slotNames[slot] = key
    if (old !== undefined && old !== key) {
      this._keys.delete(old)
      this._registry.evicted++
      if (this._events.has('evict')) this._events.emit('evict', { key: old })
    }
    ks = new KeyState(key, h)
    this._keys.set(key, ks)
    return ks
  }

  /** `budgetMs`: the call's deadline, so that the engine refuses at once a call that could not
   * leave the queue in time rather than let it time out waiting (ADR 0110). */
  _acquire(ks, budgetMs) {
    let p = budgetMs === undefined ? native.acquire(ks.handle) : native.acquireWithin(ks.handle, budgetMs)
    if (p === STALE_HANDLE) {
      // Evicted behind our back (cannot happen while calls are in flight); resolve again, but
      // keep this one KeyState for the key: the caller holds `ks` and may queue on it, and
      // settles wake only the FIFO of the KeyState they hold (a second one stranded waiters).
      this._keys.delete(ks.name)
      const fresh = this._keyState(ks.name)
      if (fresh === null) return -10 - 5
      ks.handle = fresh.handle
      ks.observed = -1
      this._keys.set(ks.name, ks)
      p = budgetMs === undefined ? native.acquire(ks.handle) : native.acquireWithin(ks.handle, budgetMs)
    }
    if (this._events.watching) this._events.observe(ks)
    return p
  }

  async _runPlain(call) {
    let v
    try {
      v = await runFn(call)
    } catch (err) {
      this._settle(call, this._verdictOfError(call, err))
      // As on the guarded path (_fnDone): a classify that throws rejects with its own error.
      if (call._classifyError !== undefined) throw call._classifyError
      throw err
    }
    this._settle(call, this._verdictOfValue(call, v))
    if (call._classifyError !== undefined) throw call._classifyError
    return v
  }

  /** A call that waits in the queue; a fn running on its key warns once (self-wait). */
  _queued(call) {
    if (runningNow() === call._ks) warnSelfWait(call._ks)
    return this._guarded(call, false)
  }

  /** A call with a deadline, a caller signal, or a wait in the queue: our own promise. */
  _guarded(call, running) {
    const signal = call._callerSignal
    if (signal !== undefined) {
      try {
        this._signals.add(call, signal)
      } catch (err) {
        // The signal refused its listener: the call never starts.
        call._state = DONE
        if (running) this._settleRaw(call._ks, call._permit, V.CANCELLED)
        else native.leaveQueue(call._ks.handle)
        return Promise.reject(err)
      }
    }
    capturing = call
    const promise = new Promise(capture)
    // The engine's clock as of the acquire that preceded this (the clock cell): no clock read.
    if (call._timeoutMs !== undefined) deadlines.add(call, call._timeoutMs, clockCell[0], true)
    if (running) this._start(call)
    else {
      // Keep the caller's async context for when fn runs later (p-limit #71).
      call._asyncResource = new AsyncResource('resilix.queued')
      enqueue(call._ks, call)
    }
    return promise
  }

  _start(call) {
    if (call._fn === null) {
      // acquire(): hand over a permit; its holder settles it.
      this._detach(call)
      call._state = DONE
      call._answered = true
      call._resolve(new Permit(this, call._ks, call._permit))
      return
    }
    let r
    try {
      r = runFn(call)
    } catch (err) {
      this._fnDone(call, false, err)
      return
    }
    if (r !== null && (typeof r === 'object' || typeof r === 'function')) {
      // A thenable is untrusted code: reading `then` or calling it may throw, and it may call
      // back twice. Promise semantics: a throw rejects, the first callback wins (_fnDone ignores
      // the rest), so the permit is settled exactly once whatever the thenable does.
      try {
        const then = r.then
        if (typeof then === 'function') {
          then.call(
            r,
            (v) => this._fnDone(call, true, v),
            (e) => this._fnDone(call, false, e),
          )
          return
        }
      } catch (err) {
        this._fnDone(call, false, err)
        return
      }
    }
    this._fnDone(call, true, r)
  }

  _fnDone(call, ok, x) {
    if (call._state !== RUNNING) return // a thenable calling back twice, or throwing after
    let verdict
    if (call._cancelled) verdict = V.CANCELLED
    else if (call._timedOut) verdict = V.TIMEOUT
    else verdict = ok ? this._verdictOfValue(call, x) : this._verdictOfError(call, x)
    this._detach(call)
    call._state = DONE
    // The caller first: resolving runs no user code now, and the settle below may start woken
    // calls, whose own failures must never leave this caller unanswered.
    if (!call._answered) {
      call._answered = true
      if (call._classifyError !== undefined) call._reject(call._classifyError)
      else if (ok) call._resolve(x)
      else call._reject(x)
    }
    this._settleRaw(call._ks, call._permit, verdict)
  }

  /** Stops the deadline and unlinks the caller's signal: no listener outlives the call. */
  _detach(call) {
    if (call._dlist !== null) deadlines.remove(call)
    if (call._sentry !== null) this._signals.remove(call)
  }

  _settle(call, verdict) {
    call._state = DONE
    this._settleRaw(call._ks, call._permit, verdict)
  }

  _settleRaw(ks, permit, verdict) {
    const n = native.settle(ks.handle, permit, verdict)
    if (this._events.watching) this._events.observe(ks)
    if (n > 0 && ks.head !== null) this._wake(ks)
  }

  _mark(call) {
    native.mark(call._ks.handle, call._permit)
  }

  _verdictOfValue(call, v) {
    return this._classify === undefined ? V.classifyValue(v) : custom(this._classify, call, true, v)
  }

  _verdictOfError(call, e) {
    return this._classify === undefined ? V.classifyError(e) : custom(this._classify, call, false, e)
  }

  _wake(ks) {
    if (ks.waking) return // the loop below is already running (a woken fn settled synchronously)
    ks.waking = true
    try {
      while (ks.head !== null) {
        const p = native.admitQueued(ks.handle)
        if (p === KEEP_WAITING || p === STALE_HANDLE) break
        const call = ks.head
        unqueue(ks, call)
        if (p >= 0) {
          call._permit = p
          call._state = RUNNING
          const ar = call._asyncResource
          call._asyncResource = null
          ar.runInAsyncScope(this._start, this, call)
          ar.emitDestroy()
        } else {
          this._detach(call)
          call._state = DONE
          this._answer(call, this._rejected(REASONS[-10 - p], ks.name))
        }
      }
    } finally {
      ks.waking = false
    }
  }

  /** A waiting call gives up: it leaves the engine's queue count and the FIFO. */
  _leaveQueue(call) {
    unqueue(call._ks, call)
    native.leaveQueue(call._ks.handle)
    call._state = DONE
    if (call._asyncResource !== null) {
      call._asyncResource.emitDestroy()
      call._asyncResource = null
    }
  }

  _answer(call, err) {
    if (call._answered) return
    call._answered = true
    call._reject(err)
  }

  /** A deadline passed (lib/deadlines.js removed it): the caller's, or the stuck bound's. */
  _expire(call, now) {
    if (call._state === WAITING) {
      this._leaveQueue(call)
      this._detach(call)
      this._answer(call, new TimeoutError(call.key, call._timeoutMs, true))
      return
    }
    if (call._state !== RUNNING) return
    if (call._answered) {
      this._releaseStuck(call)
      return
    }
    call._timedOut = true
    // The caller has its answer; a later abort of its signal can change nothing (ctx.signal is
    // aborted below), so unlink now rather than when a fn that ignores its signal settles: a
    // long-lived parent signal must not hold a listener per timed-out straggler.
    this._detach(call)
    const err = new TimeoutError(call.key, call._timeoutMs, false)
    this._answer(call, err)
    deadlines.add(call, stuckAfterMs(call), now, false)
    if (call._controller !== null) call._controller.abort(err)
  }

  _callerAborted(call, reason) {
    if (call._state === WAITING) {
      this._leaveQueue(call)
      this._detach(call)
      this._answer(call, reason)
      return
    }
    if (call._state !== RUNNING) return
    call._cancelled = true
    if (call._dlist !== null) deadlines.remove(call)
    this._answer(call, reason)
    deadlines.add(call, stuckAfterMs(call), native.nowMs(), false)
    if (call._controller !== null) call._controller.abort(reason)
  }

  /** Its caller answered long ago, fn still unsettled: free the slot (ADR 0602). */
  _releaseStuck(call) {
    call._state = DONE
    const ks = call._ks
    const n = native.settleStuck(ks.handle, call._permit, call._cancelled ? V.CANCELLED : V.TIMEOUT)
    if (this._events.watching) this._events.observe(ks)
    if (n > 0 && ks.head !== null) this._wake(ks)
  }

  _rejected(reason, key) {
    const err = new RejectedError(reason, key)
    if (this._events.has('reject')) this._events.emit('reject', { key, reason })
    return err
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

module.exports = { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError }
