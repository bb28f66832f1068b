'use strict'
// The public surface: the Resilix class, its key cache and the one admission path of execute()
// and acquire(). Every policy decision is the engine's (engine/src); a call's life after
// admission is lib/call.js. Hot path: one native call to acquire, one to settle, numbers only.

const { native, QUEUED, STALE_HANDLE, REGISTRY_FULL, SLOT_SPAN, QUOTA_WAIT, DEFAULT_LEVEL, mapNativeError } = require('./lib/native')
const { RejectedError, TimeoutError, isRejectedError, isTimeoutError, findRejectedError, findTimeoutError } = require('./lib/errors')
const { normalize } = require('./lib/options')
const { GuardedCall, QuotaCall, runPlain, runGuarded, wait, settle, giveUp, callerAborted } = require('./lib/call')
const { runFast, acquireByCell, acquireWithinByCell } = require('./lib/fast-path')
const quota = require('./lib/quota')
const { startRetrying, attemptsOf, attemptBudget, Backoff } = require('./lib/retry')
const { Permit } = require('./lib/permit')
const { Emitter } = require('./lib/events')
const { SignalLinks, reasonOf } = require('./lib/signals')
const { readCallOptions, acquireObject, notAFunction, parsed } = require('./lib/call-options')
const { acquireAt, rankTenant } = require('./lib/levels')
const { KeyState, checkKey, isUrl } = require('./lib/keys')
const { keyStats, byKey } = require('./lib/stats')
const { engines, closedError, TOO_MANY, tooManyError } = require('./lib/lifetime')
const { active: diagnosed } = require('./lib/diagnostics')

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
   * Runs `fn` under the key's policies: retry → breaker → throttle → limiter (+ queue) → bulkhead →
   * timeout. Resolves or rejects with exactly what fn's last attempt did, or rejects with
   * RejectedError / TimeoutError / the caller signal's reason.
   */
  execute(fn, opts) {
    return this._admit(fn, 'default', opts, true)
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
    return this._admit(null, key, opts, false)
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
        quota.closeLine(ks)
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

  /**
   * The one admission path: options, key, registry, then the engine's answer. `execute`: fn and
   * opts.key are execute()'s and the instance's timeoutMs applies; else acquire() of `key`.
   * `attempt`: the interceptor's retry, its attempt number (2 for the first retry), told with
   * its refusal (ADR 1004); 0 for any other call. Bad input rejects, never throws.
   */
  _admit(fn, key, opts, execute, attempt = 0) {
    let timeoutMs = execute ? this._timeoutMs : undefined
    let retry = execute ? this._retry : null
    let signal
    let prio = null
    let cost = null
    if (opts !== undefined) {
      if (!readCallOptions(opts, execute, timeoutMs, retry)) return Promise.reject(parsed.error)
      if (execute) {
        key = parsed.key
        retry = parsed.retry
      }
      timeoutMs = parsed.timeoutMs
      signal = parsed.signal
      prio = parsed.prio
      if (this._quota !== null || parsed.cost !== undefined) {
        try {
          cost = quota.costOption(this._quota, parsed.cost, execute ? 'execute' : 'acquire')
        } catch (err) {
          return Promise.reject(err)
        }
      }
    } else if (this._quota !== null) cost = new quota.Cost(this._quota)
    if (execute && typeof fn !== 'function') {
      return Promise.reject(notAFunction(fn))
    }
    if (signal !== undefined && parsed.aborted) return Promise.reject(reasonOf(signal))
    let ks, p
    try {
      ks = this._keyState(key)
      if (ks === null) return Promise.reject(this._events.rejected(REGISTRY_FULL, key, undefined, undefined, undefined, attempt))
      // A first attempt is judged by its own deadline when sooner (ADR 0905).
      const budget = retry === null ? timeoutMs : attemptBudget(retry, timeoutMs)
      p = cost === null ? this._acquire(ks, budget, prio) : this._acquireCosting(ks, budget, prio, cost)
    } catch (err) {
      return Promise.reject(err)
    }
    // A listener (evict, limit, breaker) may have closed this instance meanwhile.
    if (this._closed) return Promise.reject(closedError('a call'))
    if (cost !== null) return admitCosting(this, ks, fn, key, timeoutMs, signal, retry, prio, cost, p, attempt)
    if (prio !== null) return admitPrio(this, ks, fn, key, timeoutMs, signal, retry, prio, p, attempt)
    if (retry !== null) return startRetrying(this, ks, fn, retry, timeoutMs, signal, p)
    if (p >= 0) {
      if (fn === null) return Promise.resolve(new Permit(this, ks, p))
      // No deadline, no signal, nobody timing calls: fn's own promise, half the bookkeeping
      // (lib/call.js). A subscriber to the per-call events gets guarded calls (lib/diagnostics.js).
      if (timeoutMs === undefined && signal === undefined && !diagnosed()) return runFast(this, ks, fn, p)
      return runGuarded(new GuardedCall(this, ks, fn, timeoutMs, signal), p)
    }
    if (p === QUEUED) {
      const call = new GuardedCall(this, ks, fn, timeoutMs, signal)
      call._attempt = attempt
      return wait(call)
    }
    return Promise.reject(this._events.rejected(p, key, ks, null, undefined, attempt))
  }

  /** `key`'s KeyState, resolved with the engine on first use; null when the registry is full. */
  _keyState(key) {
    let ks = this._keys.get(key)
    if (ks !== undefined) return ks
    checkKey(key)
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
      if (this._events.has('evict')) {
        this._events.emit('evict', { key: old })
        if (this._closed) throw closedError('a call') // by a listener
      }
    }
    ks = new KeyState(key, h)
    this._keys.set(key, ks)
    if (this._fleet !== null) this._fleet.attach(ks)
    return ks
  }

  /** `budgetMs`: the call's deadline, so that the engine refuses at once a call that could not
   * leave the queue in time rather than let it time out waiting (ADR 0110). */
  _acquire(ks, budgetMs, prio = null) {
    if (prio !== null) return this._acquireAt(ks, budgetMs, prio)
    let p = budgetMs === undefined ? acquireByCell(ks.handle) : acquireWithinByCell(ks.handle, budgetMs)
    if (p === STALE_HANDLE) {
      // Evicted behind our back (cannot happen while calls are in flight); resolve again, but
      // keep this one KeyState for the key: the caller holds `ks` and may queue on it, and
      // settles wake only the FIFO of the KeyState they hold (a second one stranded waiters).
      this._keys.delete(ks.name)
      const fresh = this._keyState(ks.name)
      if (fresh === null) return REGISTRY_FULL // rejected as 'registry'
      ks.handle = fresh.handle
      if (this._fleet !== null) this._fleet.adopt(ks, fresh)
      ks.observed = -1
      this._keys.set(ks.name, ks)
      p = budgetMs === undefined ? acquireByCell(ks.handle) : acquireWithinByCell(ks.handle, budgetMs)
    }
    if (this._events.watching) this._events.observe(ks)
    return p
  }

  /** `_acquire` on an instance with a quota: the call costs `cost` (lib/quota.js). */
  _acquireCosting(ks, budgetMs, prio, cost) {
    let p = acquireCost(ks, budgetMs, prio, cost)
    if (p === STALE_HANDLE) p = this._resolveAgain(ks) ? acquireCost(ks, budgetMs, prio, cost) : REGISTRY_FULL
    if (this._events.watching) this._events.observe(ks)
    return p
  }

  /** `_acquire` for a call that names a priority or a tenant (lib/levels.js). */
  _acquireAt(ks, budgetMs, prio) {
    let p = acquireAt(ks.handle, budgetMs, prio)
    if (p === STALE_HANDLE) p = this._resolveAgain(ks) ? acquireAt(ks.handle, budgetMs, prio) : REGISTRY_FULL
    if (this._events.watching) this._events.observe(ks)
    return p
  }

  /**
   * `ks`'s key was evicted behind our back: resolve it again into the same KeyState (see
   * `_acquire`). False when the registry is full (the call is rejected as 'registry').
   */
  _resolveAgain(ks) {
    this._keys.delete(ks.name)
    const fresh = this._keyState(ks.name)
    if (fresh === null) return false
    ks.handle = fresh.handle
    if (this._fleet !== null) this._fleet.adopt(ks, fresh)
    ks.observed = -1
    this._keys.set(ks.name, ks)
    return true
  }

  /** Settles a permit (lib/permit.js, which cannot require lib/call.js: call.js requires it). */
  _settle(ks, permit, verdict) {
    settle(this, ks, permit, verdict)
  }
}

/** `_admit`'s end for a call that names a priority or a tenant: always a guarded call. */
function admitPrio(rx, ks, fn, key, timeoutMs, signal, retry, prio, p, attempt) {
  if (retry !== null) return startRetrying(rx, ks, fn, retry, timeoutMs, signal, p, prio)
  if (p >= 0) {
    if (fn === null) return Promise.resolve(new Permit(rx, ks, p))
    const call = new GuardedCall(rx, ks, fn, timeoutMs, signal)
    call._prio = prio
    return runGuarded(call, p)
  }
  if (p === QUEUED) {
    const call = new GuardedCall(rx, ks, fn, timeoutMs, signal)
    call._prio = prio
    call._attempt = attempt
    return wait(call)
  }
  return Promise.reject(rx._events.rejected(p, key, ks, prio, undefined, attempt))
}

/** acquireCosting at the call's level (its tenant's rank asked first, as acquireAt does). */
function acquireCost(ks, budgetMs, prio, cost) {
  if (prio === null) return quota.acquireCosting(ks, budgetMs, DEFAULT_LEVEL, 0, cost, false)
  if (prio.tenant !== undefined && !rankTenant(ks.handle, prio)) return STALE_HANDLE
  return quota.acquireCosting(ks, budgetMs, prio.level, prio.id, cost, false)
}

/** `_admit`'s end on an instance with a quota: the call carries its cost (ADR 1100). */
function admitCosting(rx, ks, fn, key, timeoutMs, signal, retry, prio, cost, p, attempt) {
  if (retry !== null) {
    if (p < 0 && p !== QUEUED && p !== QUOTA_WAIT) return Promise.reject(quota.rejection(rx, p, ks, prio, cost))
    return startRetrying(rx, ks, fn, retry, timeoutMs, signal, p, prio, cost)
  }
  if (p >= 0) {
    if (fn === null) {
      const permit = new Permit(rx, ks, p)
      permit._cost = cost
      return Promise.resolve(permit)
    }
    if (prio === null && timeoutMs === undefined && signal === undefined && !diagnosed()) return runPlain(new QuotaCall(rx, ks, fn, cost), p)
    const call = new GuardedCall(rx, ks, fn, timeoutMs, signal)
    call._prio = prio
    call._cost = cost
    return runGuarded(call, p)
  }
  if (p === QUEUED || p === QUOTA_WAIT) {
    const call = new GuardedCall(rx, ks, fn, timeoutMs, signal)
    call._prio = prio
    call._cost = cost
    call._attempt = attempt
    if (p === QUOTA_WAIT) call._permit = p
    return wait(call)
  }
  return Promise.reject(quota.rejection(rx, p, ks, prio, cost, attempt))
}

/** The caller's signal aborted a call, or a retrying call's wait between attempts. */
function onAbort(c, reason) {
  if (c instanceof Backoff) c.abort(reason)
  else callerAborted(c, reason)
}

module.exports = { Resilix, RejectedError, TimeoutError, isRejectedError, isTimeoutError, findRejectedError, findTimeoutError, attemptsOf }
