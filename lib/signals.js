'use strict'
// Caller signals: one 'abort' listener per signal per instance, however many calls share it
// (ADR 0604). The calls of one signal form an intrusive list (links on the call), so linking and
// unlinking a call are O(1) and the signal's listener list does not grow with the calls.

class SignalEntry {
  constructor(links, signal) {
    this.signal = signal
    this.head = null
    this.tail = null
    this.listener = () => links.aborted(this)
  }
}

class SignalLinks {
  /** @param {(call: any, reason: unknown) => void} onAbort */
  constructor(onAbort) {
    this.onAbort = onAbort
    /** @type {WeakMap<AbortSignal, SignalEntry>} */
    this.entries = new WeakMap()
  }

  /** Links `call` to `signal`. Throws what the signal's addEventListener throws. */
  add(call, signal) {
    let e = this.entries.get(signal)
    if (e === undefined) {
      e = new SignalEntry(this, signal)
      signal.addEventListener('abort', e.listener)
      this.entries.set(signal, e)
    }
    call._sentry = e
    call._sprev = e.tail
    call._snext = null
    if (e.tail !== null) e.tail._snext = call
    else e.head = call
    e.tail = call
  }

  /** Unlinks `call`; the last call of a signal removes its listener. Idempotent. */
  remove(call) {
    const e = call._sentry
    if (e === null) return
    unlink(e, call)
    if (e.head === null) {
      this.entries.delete(e.signal)
      try {
        e.signal.removeEventListener('abort', e.listener)
      } catch {
        // A signal whose removeEventListener throws keeps a listener that finds no call.
      }
    }
  }

  aborted(e) {
    this.entries.delete(e.signal)
    try {
      e.signal.removeEventListener('abort', e.listener)
    } catch {
      // as in remove()
    }
    const reason = reasonOf(e.signal)
    let call
    while ((call = e.head) !== null) {
      unlink(e, call)
      this.onAbort(call, reason)
    }
  }
}

function unlink(e, call) {
  const prev = call._sprev
  const next = call._snext
  if (prev !== null) prev._snext = next
  else e.head = next
  if (next !== null) next._sprev = prev
  else e.tail = prev
  call._sentry = null
  call._sprev = null
  call._snext = null
}

/** The signal's reason; a reason getter that throws gives its error instead. */
function reasonOf(signal) {
  try {
    return signal.reason
  } catch (err) {
    return err
  }
}

/** A real AbortSignal, else a TypeError: a look-alike cannot be trusted to call back. */
function checkSignal(signal, what) {
  if (!(signal instanceof AbortSignal)) {
    throw new TypeError(`resilix: ${what} option signal must be an AbortSignal, got ${signal === null ? 'null' : typeof signal}`)
  }
  return signal.aborted === true
}

module.exports = { SignalLinks, reasonOf, checkSignal }
