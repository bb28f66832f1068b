'use strict'
// Per-key state on the JS side: the native handle, the ends of the waiter list (lib/line.js)
// and the once-per-key warnings; what a key may be.

const { describe } = require('./describe')

class KeyState {
  constructor(name, handle) {
    this.name = name
    this.handle = handle
    this.head = null // the waiters (lib/line.js)
    this.tail = null
    this.tails = null // the last waiter by level, once a call names a priority or tenant
    this.line = null // the calls waiting for budget, with a quota (lib/line.js)
    this.fleet = null // the lease, with a quota store (lib/fleet.js)
    this.waking = false // a wake loop runs (lib/pipeline.js)
    this.judged = false // its first waiters were judged by the deadline rule (lib/line.js)
    this.observed = -1 // the last observed limit and breaker state (lib/events.js)
    this.retryBodyRefusals = 0 // retries the interceptor could not make: the body could not be sent again
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

/**
 * Checks a key not seen before: a string (a URL object is told which part to use), not empty,
 * well-formed (ADR 0808). Its length is the engine's to check (maxKeyLength).
 */
function checkKey(key, what = 'key must be a string') {
  if (typeof key !== 'string') {
    if (isUrl(key)) {
      throw new TypeError(
        `resilix: ${what}, got a URL object: key by the part that names the upstream, url.host ("${key.host}") ` +
          `or url.origin ("${key.origin}", the undici interceptor's default key)`,
      )
    }
    throw new TypeError(`resilix: ${what}, got ${describe(key)}`)
  }
  if (key.length === 0) {
    throw new RangeError("resilix: key must not be empty: name the upstream (a host, a route), or leave it out for 'default'")
  }
  checkWellFormed(key)
}

/** A WHATWG URL (a Proxy whose traps throw is not one). */
function isUrl(v) {
  try {
    return v instanceof URL
  } catch {
    return false
  }
}

module.exports = { KeyState, checkKey, checkWellFormed, isUrl }
