'use strict'
// A line of waiting calls, the highest level first and in arrival order within a level
// (ADR 1001): the limiter's queue of a key and its quota's line are both one. An intrusive list
// through the calls (O(1) removal, no allocation) whose head is always the next to admit; its
// ends live on the holder (`head`, `tail`, `tails`). A line whose calls all name no priority
// keeps one FIFO (`tails` null); the first call that names one adds the last waiter of each
// level, so that a call is inserted behind its level's last.

const { DEFAULT_LEVEL } = require('./native')
const { LEVELS } = require('./levels')

/** A waiter's level: its priority class and tenant rank (lib/levels.js). */
function levelOf(call) {
  return call._prio === null ? DEFAULT_LEVEL : call._prio.level
}

function insert(ks, call) {
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

module.exports = { insert, unlink: unqueue, levelOf }
