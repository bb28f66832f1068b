'use strict'
// The waiters of a key for a permit, in the key's line (lib/line.js, ADR 1001). The engine
// keeps the counts by level that admission decisions use; every exit from this line tells the
// engine (admitQueued or leaveQueue), so the two never drift apart.

const { native, KEEP_WAITING, STALE_HANDLE, QUOTA_WAIT, QUEUED } = require('./native')
const { levelOf, insert: enqueue, unlink: unqueue } = require('./line')
const quota = require('./quota')

/**
 * The next waiter, taken out of the list with the engine's answer in `_permit`: a permit (≥ 0)
 * or a rejection code. null when there is none or it must keep waiting. The engine refuses a
 * stream whose deadline would cut it before its slot is given back (ADR 0118).
 */
function admitNext(ks) {
  const call = ks.head
  if (call === null) return null
  const deadline = call._dlist !== null ? call._deadline : 0
  const p = ks.tails === null ? native.admitQueued(ks.handle, deadline) : native.admitQueuedAt(ks.handle, levelOf(call), call._prio === null ? 0 : call._prio.id, deadline)
  if (p === KEEP_WAITING || p === STALE_HANDLE) return null
  unqueue(ks, call)
  call._permit = p
  // A call charged by a quota: counted from now if it runs, refunded if refused (ADR 1100).
  const cost = call._cost
  if (cost !== null && cost !== undefined) {
    if (p >= 0) quota.restamp(ks, cost)
    else quota.refund(ks, cost)
  }
  return call
}

const NONE = []

/**
 * Calls that waited on a new key had no latency to be judged by: once the first call that had
 * waited settles (the first round pays a cold process's one-time costs), the waiters with a
 * deadline that could not leave the queue in time are taken out of the list, with the engine's
 * refusal in `_permit` (ADR 0615). Once per key; empty until then.
 */
function lateWaiters(ks) {
  if (ks.head === null || native.refuseLateWaiter(ks.handle, levelOf(ks.head), 0, 0) === QUEUED) return NONE
  ks.judged = true
  const late = []
  let ahead = 0 // the list runs from the highest level: everyone before a call is at its level or above
  for (let call = ks.head, next; call !== null; call = next) {
    next = call._qnext
    const p = call._dlist === null ? KEEP_WAITING : native.refuseLateWaiter(ks.handle, levelOf(call), ahead, call._deadline)
    if (p === KEEP_WAITING || p === QUEUED || p === STALE_HANDLE) {
      ahead++
      continue
    }
    unqueue(ks, call)
    call._permit = p
    if (call._cost !== null && call._cost !== undefined) quota.refund(ks, call._cost)
    late.push(call)
  }
  return late
}

/** A waiter gives up (deadline, abort, close): out of the list and of the engine's count. */
function leave(call) {
  if (call._permit === QUOTA_WAIT) quota.leave(call)
  else {
    unqueue(call._ks, call)
    leaveEngine(call)
    if (call._cost !== null && call._cost !== undefined) quota.refund(call._ks, call._cost)
  }
  if (call._asyncResource !== null) {
    call._asyncResource.emitDestroy()
    call._asyncResource = null
  }
}

/** The engine's count of a call that was queued there and leaves before its list. */
function leaveEngine(call) {
  if (call._prio === null) native.leaveQueue(call._ks.handle)
  else native.leaveQueueAt(call._ks.handle, call._prio.level)
}

module.exports = { enqueue, admitNext, lateWaiters, leave, leaveEngine }
