'use strict'
// The public surface: the Resilix class, its key cache and the one admission path of execute()
// and acquire(). Every policy decision is the engine's (engine/src); a call's admission is
// lib/admit.js, its stages are wired in lib/pipeline.js (ADR 1219). Hot path: one native call to
// acquire, one to settle, numbers only.

const { native, mapNativeError } = require('./lib/native')
const { RejectedError, TimeoutError, isRejectedError, isTimeoutError, findRejectedError, findTimeoutError } = require('./lib/errors')
const { normalize } = require('./lib/options')
const { settle, giveUp, callerAborted } = require('./lib/pipeline')
const { closeLine } = require('./lib/line')
const { attemptsOf, Backoff } = require('./lib/retry')
const { admit } = require('./lib/admit')
const { Emitter } = require('./lib/events')
const { SignalLinks } = require('./lib/signals')
const { acquireObject } = require('./lib/call-options')
const { checkKey, isUrl } = require('./lib/keys')
const { keyStats, byKey } = require('./lib/stats')
const { engines, closedError, TOO_MANY, tooManyError } = require('./lib/lifetime')

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
    /** The instance's quota (lib/quota.js), null when none. */
    this._quota = o.quota
    /** The quota's store (lib/fleet.js), null when each process keeps its own. */
    this._fleet = o.quotaStore === null ? null : new (require('./lib/fleet').Fleet)(this, o.quotaStore, o.quota)
    /** The instance's retry policy (lib/retry-options.js), null when off. */
    this._retry = o.retry
    /** Retrying calls waiting between attempts (lib/retry.js): close() ends them. */
    this._backoffs = new Set()
    /** @type {Map<string, KeyState>} */
    this._keys = new Map()
    this._slotNames = []
    this._signals = new SignalLinks(onAbort)
    this._events = new Emitter(this)
    this._closed = false
    this._registry = { refused: 0, evicted: 0 }
  }

  /**
   * Runs `fn` under the key's policies: retry → breaker → quota → throttle → limiter (+ queue) →
   * bulkhead → timeout. Resolves or rejects with exactly what fn's last attempt did, or rejects with
   * RejectedError / TimeoutError / the caller signal's reason.
   */
  execute(fn, opts) {
    return admit(this, fn, 'default', opts, true, 0)
  }

  /**
   * Low level: waits for a permit (queueing like execute) for callers that cannot wrap a
   * function. Settle it with `permit.release(verdict)` exactly once.
   */
  acquire(key = 'default', opts) {
    if (key !== null && typeof key === 'object' && !isUrl(key)) {
      // acquire({ key, timeoutMs, signal }), as execute() takes them (ADR 0808)
      try {
        ;[key, opts] = acquireObject(key, opts)
      } catch (err) {
        return Promise.reject(err)
      }
    }
    return admit(this, null, key, opts, false, 0)
  }

  /**
   * The state of one key ({ limit, inflight, queued, breaker, algorithm, baselineMs, ... }),
   * undefined for a key not in the registry; without a key, an object of every live key's stats.
   */
  stats(key) {
    if (key === undefined) return byKey(this.keys(), (k) => this.stats(k))
    checkKey(key, 'stats expects a key string')
    if (this._closed) return undefined
    let s
    try {
      s = native.stats(this._id, key)
    } catch (err) {
      throw mapNativeError(err)
    }
    if (s === null || s === undefined) return undefined
    const ks = this._keys.get(key)
    return keyStats(key, s, this._quota, this._fleet === null ? null : (ks?.fleet ?? null), ks)
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
      while (ks.head !== null) giveUp(ks.head, closedError('a call waiting'))
      if (ks.line !== null) {
        while (ks.line.head !== null) giveUp(ks.line.head, closedError('a call waiting for quota'))
        closeLine(ks)
      }
      ks.handle = -1 // a running call's settle now changes nothing
    }
    for (const b of [...this._backoffs]) b.abort(closedError('a call waiting to retry'))
    if (this._fleet !== null) this._fleet.close()
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

  /** Subscribes to rejections `{ key, reason, priority, tenant?, attempt? }` (our own policies refusing a call). */
  onReject(listener) {
    return this._events.on('reject', listener)
  }

  /** Subscribes to evictions `{ key }`: an idle key dropped from the registry for a new one. */
  onEvict(listener) {
    return this._events.on('evict', listener)
  }

  /** Subscribes to retries `{ key, attempt, delayMs, reason }`: a call's next attempt starts after `delayMs`. */
  onRetry(listener) {
    return this._events.on('retry', listener)
  }

  /**
   * Subscribes to a shared quota's store `{ key, state, error? }`: `'fallback'` or `'refusing'`
   * when it cannot be reached, `'leased'` when it answers again.
   */
  onStore(listener) {
    return this._events.on('store', listener)
  }

  // ---- internals ---------------------------------------------------------------------------

  /** The one admission path of execute() and acquire() (lib/admit.js); the interceptor's too. */
  _admit(fn, key, opts, execute, attempt = 0) {
    return admit(this, fn, key, opts, execute, attempt)
  }

  /** Settles a permit (lib/permit.js, which cannot require lib/pipeline.js: the pipeline requires it). */
  _settle(ks, permit, verdict) {
    settle(this, ks, permit, verdict)
  }
}

/** The caller's signal aborted a call, or a retrying call's wait between attempts. */
function onAbort(c, reason) {
  if (c instanceof Backoff) c.abort(reason)
  else callerAborted(c, reason)
}

module.exports = { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError, findRejectedError, findTimeoutError, attemptsOf }
