'use strict'
// Subscriptions in cockatiel's shape: `on(listener)` returns `{ dispose() }`. When nobody
// listens, the hot path pays one boolean check (`watching`) and nothing else.

const TYPES = ['limit', 'breaker', 'reject', 'evict']

class Emitter {
  constructor() {
    this.listeners = { limit: [], breaker: [], reject: [], evict: [] }
    /** Someone listens to limit or breaker changes: the engine state must be observed. */
    this.watching = false
  }

  on(type, listener) {
    if (typeof listener !== 'function') {
      throw new TypeError(`resilix: a ${type} listener must be a function, got ${typeof listener}`)
    }
    // Copy on write: emit iterates a snapshot without copying.
    this.listeners[type] = [...this.listeners[type], listener]
    this.update()
    let disposed = false
    return {
      dispose: () => {
        if (disposed) return
        disposed = true
        const list = this.listeners[type]
        const i = list.indexOf(listener)
        if (i >= 0) this.listeners[type] = [...list.slice(0, i), ...list.slice(i + 1)]
        this.update()
      },
    }
  }

  update() {
    this.watching = this.listeners.limit.length > 0 || this.listeners.breaker.length > 0
  }

  has(type) {
    return this.listeners[type].length > 0
  }

  emit(type, event) {
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

module.exports = { Emitter, TYPES }
