'use strict'
// Per-key state on the JS side: the native handle, the ends of the waiter FIFO (lib/queue.js)
// and the once-per-key warnings.

class KeyState {
  constructor(name, handle) {
    this.name = name
    this.handle = handle
    this.head = null // the waiter FIFO (lib/queue.js)
    this.tail = null
    this.waking = false // a wake loop runs (lib/call.js)
    this.observed = -1 // the last observed limit and breaker state (lib/events.js)
    this.warnedSelfWait = false
    this.warnedLeak = false
  }
}

/** Keys cross to the engine as UTF-8, which cannot carry a lone surrogate (ADR 0601). */
function checkWellFormed(key) {
  if (!key.isWellFormed()) {
    throw new TypeError(
      `resilix: key must be a well-formed string; it has a lone surrogate (UTF-8 cannot carry it), got ${JSON.stringify(key.slice(0, 40))}`,
    )
  }
}

module.exports = { KeyState, checkWellFormed }
