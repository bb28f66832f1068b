'use strict'
// The waiter FIFO of a key: calls waiting for a permit, in arrival order. An intrusive list
// through the calls (O(1) enqueue and removal, no allocation); its head and tail live on the
// KeyState (lib/keys.js). The engine keeps the count that admission decisions use; every exit
// from this list tells the engine (admitQueued or leaveQueue), so the two never drift apart.

const { native, KEEP_WAITING, STALE_HANDLE } = require('./native')

function enqueue(ks, call) {
  call._qprev = ks.tail
  call._qnext = null
  if (ks.tail !== null) ks.tail._qnext = call
  else ks.head = call
  ks.tail = call
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
}

/**
 * The oldest waiter, taken out of the FIFO with the engine's answer in `_permit`: a permit (≥ 0)
 * or a rejection code. null when there is none or it must keep waiting.
 */
function admitNext(ks) {
  if (ks.head === null) return null
  const p = native.admitQueued(ks.handle)
  if (p === KEEP_WAITING || p === STALE_HANDLE) return null
  const call = ks.head
  unqueue(ks, call)
  call._permit = p
  return call
}

/** A waiter gives up (deadline, abort, close): out of the FIFO and of the engine's count. */
function leave(call) {
  unqueue(call._ks, call)
  native.leaveQueue(call._ks.handle)
  if (call._asyncResource !== null) {
    call._asyncResource.emitDestroy()
    call._asyncResource = null
  }
}

module.exports = { enqueue, admitNext, leave }
