'use strict'
// Per-key state on the JS side: the native handle and the FIFO of waiting calls, an intrusive
// list through the calls (O(1) enqueue, dequeue and removal, no allocation).

class KeyState {
  constructor(name, handle) {
    this.name = name
    this.handle = handle
    this.head = null
    this.tail = null
    this.waiting = 0
    this.waking = false
    this.observed = -1
    this.warnedSelfWait = false
    this.warnedLeak = false
  }
}

function enqueue(ks, call) {
  call._qprev = ks.tail
  call._qnext = null
  if (ks.tail !== null) ks.tail._qnext = call
  else ks.head = call
  ks.tail = call
  ks.waiting++
}

function unqueue(ks, call) {
  const prev = call._qprev
  const next = call._qnext
  if (prev !== null) prev._qnext = next
  else ks.head = next
  if (next !== null) next._qprev = prev
  else ks.tail = prev
  call._qprev = null
  call._qnext = null
  ks.waiting--
}

/** Keys cross to the engine as UTF-8, which cannot carry a lone surrogate (ADR 0601). */
function checkWellFormed(key) {
  if (!key.isWellFormed()) {
    throw new TypeError(
      `resilix: key must be a well-formed string; it has a lone surrogate (UTF-8 cannot carry it), got ${JSON.stringify(key.slice(0, 40))}`,
    )
  }
}

module.exports = { KeyState, enqueue, unqueue, checkWellFormed }
