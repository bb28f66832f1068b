'use strict'
// Subscriptions in cockatiel's shape: `on(listener)` returns `{ dispose() }`, disposable with
// `using` too (`[Symbol.dispose]`). When nobody listens, the hot path pays one boolean check
// (`watching`) and nothing else. The engine's numeric answers become events here: observe()
// polls a key's limit and breaker state, rejected() names a refusal.

// Node defines Symbol.dispose from 20.4 on; before that it used Symbol.for('nodejs.dispose').
const DISPOSE = Symbol.dispose ?? Symbol.for('nodejs.dispose')

const { native, BREAKER_STATES, REASONS, REJECTED_BASE, VERDICTS: NAMES, PRIORITIES } = require('./native')
const { RejectedError } = require('./errors')
const diag = require('./diagnostics')

/**
 * Events that listeners may raise (calling execute(), close(), ...) within one event, after
 * which the rest are dropped with a warning: a listener that calls execute() on every
 * rejection would otherwise loop for ever (ADR 0611, a guess).
 */
const MAX_NESTED = 1000

class Emitter {
  /** `owner`: the Resilix instance, named in diagnostics_channel messages. */
  constructor(owner) {
    this.owner = owner
    this.listeners = { limit: [], breaker: [], reject: [], evict: [], retry: [], store: [] }
    /** Someone listens to limit or breaker changes: the engine state must be observed. */
    this.watching = false
    // Events raised while a listener runs wait here, as type, event pairs (emit()).
    this.emitting = false
    this.pending = []
    this.warnedLoop = false
  }

  on(type, listener) {
    if (typeof listener !== 'function') {
      throw new TypeError(`resilix: a ${type} listener must be a function, got ${typeof listener}`)
    }
    // Copy on write: emit iterates a snapshot without copying.
    this.listeners[type] = [...this.listeners[type], listener]
    this.update()
    let disposed = false
    const dispose = () => {
      if (disposed) return
      disposed = true
      const list = this.listeners[type]
      const i = list.indexOf(listener)
      if (i >= 0) this.listeners[type] = [...list.slice(0, i), ...list.slice(i + 1)]
      this.update()
    }
    // `using sub = rx.onReject(…)` disposes it at the end of the block.
    return { dispose, [DISPOSE]: dispose }
  }

  update() {
    this.watching = this.listeners.limit.length > 0 || this.listeners.breaker.length > 0
  }

  has(type) {
    return this.listeners[type].length > 0
  }

  /** Polls a key's limit and breaker state (limit × 4 + breaker code); emits what changed. */
  observe(ks) {
    const o = native.observe(ks.handle)
    if (o < 0 || o === ks.observed) return
    const prev = ks.observed
    ks.observed = o
    if (prev < 0) return
    const limit = Math.floor(o / 4)
    const prevLimit = Math.floor(prev / 4)
    if (limit !== prevLimit && this.has('limit')) this.emit('limit', { key: ks.name, limit, previous: prevLimit })
    const state = o % 4
    const prevState = prev % 4
    if (state !== prevState && this.has('breaker')) {
      this.emit('breaker', { key: ks.name, state: BREAKER_STATES[state], previous: BREAKER_STATES[prevState] })
    }
  }

  /**
   * The RejectedError of an engine refusal, told to onReject listeners. `code`: the engine's
   * rejection outcome, REJECTED_BASE - reason (REGISTRY_FULL is 'registry'). `ks`: the key's
   * state, to say why its queue refused (a second native call, on the refusal path only).
   * `prio`: the call's priority and tenant (lib/levels.js), null or undefined for none.
   * `attempt`: a refused retry's attempt number (2 for the first retry), 0 for a first attempt.
   */
  rejected(code, key, ks, prio, why, attempt = 0) {
    const reason = REASONS[REJECTED_BASE - code]
    let detail = why ?? (reason === 'queue' && ks !== undefined ? queueDetail(ks) : undefined)
    if (detail !== undefined && prio != null) detail += ` (priority ${PRIORITIES[prio.cls]})`
    const err = new RejectedError(reason, key, detail)
    if (this.has('reject')) {
      const e = prio == null ? { key, reason, priority: 'normal' } : { key, reason, priority: PRIORITIES[prio.cls], tenant: prio.tenant }
      // Which attempt was refused: a retry announced to onRetry, refused when sent (ADR 1004).
      if (attempt > 0) e.attempt = attempt
      this.emit('reject', e)
    }
    diag.rejected(this.owner, key, reason)
    return err
  }

  /** A retrying call starts attempt `attempt` after `delayMs` (lib/retry.js). */
  retrying(key, attempt, delayMs, verdict) {
    if (this.has('retry')) this.emit('retry', { key, attempt, delayMs, reason: NAMES[verdict] })
    diag.retried(this.owner, key, attempt, delayMs, () => NAMES[verdict])
  }

  /** A key's quota store changed state: `'fallback'`, `'refusing'`, or `'leased'` again (lib/fleet.js). */
  storeChanged(ks, state, err) {
    if (this.has('store')) this.emit('store', { key: ks.name, state, error: err === null ? undefined : err.message })
    diag.storeChanged(this.owner, ks.name, state, err)
  }

  /**
   * Delivers an event to its listeners. One raised by a listener (re-entry) is delivered after
   * that listener returns, in order, never inside it: re-entry cannot recurse (ADR 0611).
   */
  emit(type, event) {
    if (this.emitting) {
      if (this.pending.length < 2 * MAX_NESTED) this.pending.push(type, event)
      else this.warnLoop()
      return
    }
    this.emitting = true
    try {
      this.deliver(type, event)
      for (let i = 0; i < this.pending.length; i += 2) this.deliver(this.pending[i], this.pending[i + 1])
    } finally {
      this.pending.length = 0
      this.emitting = false
    }
  }

  warnLoop() {
    if (this.warnedLoop) return
    this.warnedLoop = true
    process.emitWarning(
      `resilix: listeners raised more than ${MAX_NESTED} events within one event (a listener that calls execute() ` +
        'on every rejection?); the rest were not delivered. Keep calls made from a listener from raising the same event',
      { code: 'RESILIX_LISTENER_LOOP' },
    )
  }

  deliver(type, event) {
    for (const listener of this.listeners[type]) {
      try {
        listener(event)
      } catch (err) {
        // A listener's bug must not corrupt a call's accounting: surface it asynchronously,
        // as an uncaught exception, the way a throwing EventEmitter listener would.
        queueMicrotask(() => {
          throw err
        })
      }
    }
  }
}

/**
 * Why a key's queue refused: the message's detail (ADR 0114). Never "timeout" or "timed out":
 * SDKs read a fetch error that says so as their own timeout and drop the refusal (ADR 0812).
 */
function queueDetail(ks) {
  const r = native.queueRefusal(ks.handle)
  if (r === null || r === undefined) return undefined
  if (r.cause === 'full') return `${r.maxQueued} calls already wait on this key (queue.maxQueued)`
  if (r.cause === 'deadline') return 'the call could not leave the queue before its deadline (the call\'s, or its retry attempt\'s when sooner), at the rate calls leave it'
  if (r.cause === 'turn') return 'its turn came with less of its deadline left than a stream holds its slot: it would have been cut mid-stream'
  return 'the queue has stood for a while: calls arrive faster than the upstream serves them'
}

module.exports = { Emitter }
