'use strict'
// The one waiting line (ADR 1200): everything a call waits for, a slot in the limiter's queue or
// budget in its quota, with one set of rules. Each key has two lines of the same kind, the
// queue (its ends on the KeyState) and the budget line (`ks.line`, made by the first call that
// waits for budget, with its timer). Both hold the highest level first and arrival order within
// a level (ADR 1001), as the engine counts them (`ByLevel::at_or_above` decides who waits
// behind whom); the engine decides who leaves and when. An intrusive list through the calls
// (O(1) removal, no allocation) whose head is always the next to admit. A line whose calls all
// name no priority keeps one FIFO (`tails` null); the first call that names one adds the last
// waiter of each level, so that a call is inserted behind its level's last. Every exit from a
// line tells the engine, so the two never drift apart. What a call does once it leaves, and the
// deadline kept across stalls (Deadlines.overdue), are the wake loops' (lib/pipeline.js).

const { AsyncResource } = require('node:async_hooks')
const { native, clockCell, CELL, KEEP_WAITING, STALE_HANDLE, REGISTRY_FULL, DEFAULT_LEVEL, QUOTA_WAIT, QUEUED } = require('./native')
const { LEVELS } = require('./levels')
const { acquireCosting } = require('./acquire')
const { delayMs } = require('./timers')
const diag = require('./diagnostics')

/** A waiter's level: its priority class and tenant rank (lib/levels.js). */
function levelOf(call) {
  return call._prio === null ? DEFAULT_LEVEL : call._prio.level
}

function enqueue(ks, call) {
  const level = levelOf(call)
  if (ks.tails === null) {
    if (call._prio === null) return append(ks, call)
    ks.tails = new Array(LEVELS).fill(null)
    ks.tails[DEFAULT_LEVEL] = ks.tail
  }
  // Behind the last waiter at this level or, if none, at the nearest level above it.
  let after = null
  for (let l = level; l < LEVELS && after === null; l++) after = ks.tails[l]
  ks.tails[level] = call
  if (after === null) {
    call._qprev = null
    call._qnext = ks.head
    if (ks.head !== null) ks.head._qprev = call
    else ks.tail = call
    ks.head = call
    return
  }
  if (after === ks.tail) return append(ks, call)
  call._qprev = after
  call._qnext = after._qnext
  after._qnext._qprev = call
  after._qnext = call
}

function append(ks, call) {
  call._qprev = ks.tail
  call._qnext = null
  if (ks.tail !== null) ks.tail._qnext = call
  else ks.head = call
  ks.tail = call
}

function unqueue(ks, call) {
  const prev = call._qprev
  const next = call._qnext
  if (ks.tails !== null) {
    const level = levelOf(call)
    if (ks.tails[level] === call) ks.tails[level] = prev !== null && levelOf(prev) === level ? prev : null
  }
  if (prev !== null) prev._qnext = next
  else ks.head = next
  if (next !== null) next._qprev = prev
  else ks.tail = prev
  call._qprev = null
  call._qnext = null
}

/** The key's calls waiting for budget, and its timer, which calls `wake(ks)` (lib/pipeline.js). */
class BudgetLine {
  constructor(wake) {
    this.head = null
    this.tail = null
    this.tails = null
    this.timer = null
    this.at = Infinity
    this.wake = wake
    /** `wake` is asking: a waiter leaving meanwhile needs no timer of its own. */
    this.pumping = false
  }
}

/** A charged call that will not run (refused or gave up in the limiter's queue): refund it whole. */
function refund(ks, cost) {
  if (!cost.charged) return
  cost.charged = false
  if (ks.handle < 0) return
  native.quotaAdjust(ks.handle, cost.at, -cost.c0, -cost.c1, -cost.c2, -cost.c3)
  if (ks.fleet !== null) ks.fleet.adjust(cost.at, -cost.c0, -cost.c1, -cost.c2, -cost.c3)
  soon(ks)
}

/** A charged call admitted from the limiter's queue: the upstream counts it from now. */
function restamp(ks, cost) {
  if (!cost.charged) return
  native.quotaRestamp(ks.handle, cost.at, cost.c0, cost.c1, cost.c2, cost.c3)
  const at = native.nowMs()
  if (ks.fleet !== null) ks.fleet.restamp(cost.at, at, cost)
  cost.at = at
}

/**
 * Ask again for the head of the key's budget line at engine time `at` (ms): its
 * timer calls the line's own `wake`, given when the line was made.
 */
function arm(ks, at) {
  const line = ks.line
  if (line === null || line === undefined || line.head === null) return
  if (line.timer !== null && line.at <= at) return
  if (line.timer !== null) clearTimeout(line.timer)
  line.at = at
  // Ref'd: a caller waits for its answer (ADR 0603).
  // Clamped to what setTimeout accepts: fired early, the line asks again and re-arms (ADR 1104).
  line.timer = setTimeout(line.wake, delayMs(Math.ceil(at - native.nowMs())), ks)
}

function disarm(line) {
  if (line.timer !== null) clearTimeout(line.timer)
  line.timer = null
  line.at = Infinity
}

/** Budget may have come back (a refund, a reading, a waiter left): ask for the head at once. */
function soon(ks) {
  const line = ks.line
  if (line === undefined || line === null || line.head === null) return
  arm(ks, 0)
}

/** close(): the key's waiters have been answered; its timer goes. */
function closeLine(ks) {
  if (ks.line !== null) disarm(ks.line)
}

/**
 * A call waits in its line: for budget when the engine told it QUOTA_WAIT (asking again at the
 * time the engine named, by `wake`), else for a slot.
 */
function enterLine(call, wake) {
  const ks = call._ks
  // Keep the caller's async context for when fn runs later (p-limit #71).
  call._asyncResource = new AsyncResource('resilix.queued')
  if (call._permit !== QUOTA_WAIT) return enqueue(ks, call)
  const line = (ks.line ??= new BudgetLine(wake))
  enqueue(line, call)
  arm(ks, line.head === call ? clockCell[CELL.quotaAskAt] : line.at)
  if (ks.fleet !== null) ks.fleet.want()
  diag.quotaWaiting(call)
}

/**
 * The head of the budget line asks again: taken out with the engine's answer in `_permit` (a
 * permit, QUEUED for the limiter's queue, or a refusal), or null while it must wait (its timer
 * armed again for the time the engine names).
 */
function budgetNext(ks, deadlines) {
  const line = ks.line
  let call = line.head
  // A deadline that passed during a stall: the call expires, it is never let through (ADR 1108).
  while (call !== null && deadlines.overdue(call)) call = line.head
  if (call === null) return null
  const left = call._dlist !== null ? call._deadline - native.nowMs() : undefined
  const p = acquireCosting(ks, left, levelOf(call), call._prio === null ? 0 : call._prio.id, call._cost, true)
  if (p === QUOTA_WAIT) {
    arm(ks, clockCell[CELL.quotaAskAt])
    if (ks.fleet !== null) ks.fleet.want()
    return null
  }
  unqueue(line, call)
  // A key with waiters is never evicted; a stale handle would be a closed instance's.
  call._permit = p === STALE_HANDLE ? REGISTRY_FULL : p
  diag.quotaResumed(call, p >= 0 || p === QUEUED ? 'granted' : 'refused')
  return call
}

/** The budget line's turn to ask begins (its timer fired, or budget came back): the line. */
function budgetTurn(ks) {
  const line = ks.line
  line.timer = null
  line.at = Infinity
  line.pumping = true
  return line
}

/** A waiter for budget gives up (deadline, abort, close). */
function leaveBudget(call) {
  const ks = call._ks
  const line = ks.line
  const wasHead = line.head === call
  unqueue(line, call)
  call._permit = -1
  diag.quotaResumed(call, 'left')
  if (ks.handle >= 0) native.quotaLeave(ks.handle, levelOf(call), call._cost.c0, call._cost.c1, call._cost.c2, call._cost.c3)
  if (line.head === null) disarm(line)
  else if (wasHead && !line.pumping) soon(ks)
}

/**
 * The next waiter, taken out of the list with the engine's answer in `_permit`: a permit (≥ 0)
 * or a rejection code. null when there is none or it must keep waiting. The engine refuses a
 * stream whose deadline would cut it before its slot is given back (ADR 0118). A waiter whose
 * deadline passed while the event loop was blocked (its timer has not fired yet) must not run:
 * it expires now, by `deadlines` (ADR 0609).
 */
function admitNext(ks, deadlines) {
  let call = ks.head
  while (call !== null && deadlines.overdue(call)) call = ks.head
  if (call === null) return null
  const deadline = call._dlist !== null ? call._deadline : 0
  const p = ks.tails === null ? native.admitQueued(ks.handle, deadline) : native.admitQueuedAt(ks.handle, levelOf(call), call._prio === null ? 0 : call._prio.id, deadline)
  if (p === KEEP_WAITING || p === STALE_HANDLE) return null
  unqueue(ks, call)
  call._permit = p
  // A call charged by a quota: counted from now if it runs, refunded if refused (ADR 1100).
  const cost = call._cost
  if (cost !== null && cost !== undefined) {
    if (p >= 0) restamp(ks, cost)
    else refund(ks, cost)
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
    if (call._cost !== null && call._cost !== undefined) refund(ks, call._cost)
    late.push(call)
  }
  return late
}

/** A waiter gives up (deadline, abort, close): out of its line and of the engine's count. */
function leaveLine(call) {
  if (call._permit === QUOTA_WAIT) leaveBudget(call)
  else {
    unqueue(call._ks, call)
    leaveQueue(call)
    if (call._cost !== null && call._cost !== undefined) refund(call._ks, call._cost)
  }
  if (call._asyncResource !== null) {
    call._asyncResource.emitDestroy()
    call._asyncResource = null
  }
}

/**
 * A call the engine counted as waiting that never reached its line (its signal refused a
 * listener): out of the engine's count, its charge refunded.
 */
function leaveEngine(call) {
  const c = call._cost
  if (call._permit === QUOTA_WAIT) {
    call._permit = -1
    if (call._ks.handle >= 0) native.quotaLeave(call._ks.handle, levelOf(call), c.c0, c.c1, c.c2, c.c3)
    return
  }
  leaveQueue(call)
  if (c !== null && c !== undefined) refund(call._ks, c)
}

function leaveQueue(call) {
  if (call._prio === null) native.leaveQueue(call._ks.handle)
  else native.leaveQueueAt(call._ks.handle, call._prio.level)
}

module.exports = { enterLine, enqueue, budgetTurn, admitNext, budgetNext, lateWaiters, leaveLine, leaveEngine, refund, soon, closeLine }
