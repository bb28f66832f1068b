'use strict'
// Per-call deadlines without a timer per call: one Deadlines per thread (lib/pipeline.js holds it),
// shared by every instance. Calls with the same timeoutMs expire in the order they started, so
// each distinct timeoutMs keeps an intrusive FIFO (O(1) add and remove, no allocation per call:
// the links live on the call). One timer is armed for the earliest head.
//
// The timer is ref'd while some entry "holds": a caller still waiting for its answer keeps the
// process alive until it gets one, and nothing else does (ADR 0603). Being module-level, the
// timer references calls, never an instance: a dropped instance with no pending call is free.

// Time is the engine's clock in ms (lib/native.js clockCell's `now` / nowMs), not performance.now():
// add() receives the time of the acquire that started the call, so a call reads no clock.
const { native, clockCell, CELL } = require('./native')
/** Where this thread's stall starts, for the binding's settle (ADR 0610, 1210). */
const STALLED_FROM = CELL.stalledFrom
const nowMs = () => native.nowMs()

const { delayMs } = require('./timers')

/**
 * A deadline timer firing this many ms after its time means this process stalled (a blocked
 * event loop, a long GC pause): ADR 0610, a guess with what was measured at half and twice.
 */
const STALL_MS = 20

class DeadlineList {
  constructor(ms) {
    this.ms = ms
    this.head = null
    this.tail = null
  }
}

class Deadlines {
  /** @param {(call: any, now: number) => void} onExpire called with each call whose deadline passed */
  constructor(onExpire) {
    this.onExpire = onExpire
    /** @type {Map<number, DeadlineList>} */
    this.lists = new Map()
    this.timer = null
    this.armedAt = Infinity
    /** Entries whose caller still waits for an answer. */
    this.held = 0
    // From a fire STALL_MS late until the event loop's next check phase (setImmediate), once
    // it has read what arrived during the stall, every settle carries the stall (ADR 0610).
    this.stalled = false
    this.fire = this.fire.bind(this)
    this.endStall = this.endStall.bind(this)
  }

  /** Until the next check phase every settle is no observation, through the clock cell. */
  stall() {
    if (this.stalled) return
    this.stalled = true
    clockCell[STALLED_FROM] = -Infinity
    setImmediate(this.endStall)
  }

  endStall() {
    this.stalled = false
    clockCell[STALLED_FROM] = this.armedAt + STALL_MS
  }

  /**
   * Starts `call`'s deadline `ms` from `now` (the engine clock, ms); at the deadline
   * `onExpire(call, now)` runs. `holds`: keep the process alive until then.
   */
  add(call, ms, now, holds) {
    let list = this.lists.get(ms)
    if (list === undefined) {
      list = new DeadlineList(ms)
      this.lists.set(ms, list)
    }
    const at = now + ms
    call._deadline = at
    call._dlist = list
    call._dprev = list.tail
    call._dnext = null
    call._dheld = holds
    if (list.tail !== null) list.tail._dnext = call
    else list.head = call
    list.tail = call
    if (holds && this.held++ === 0 && this.timer !== null) this.timer.ref()
    if (at < this.armedAt) this.arm(at, now)
  }

  /** Forgets `call`'s deadline (it settled first). Idempotent. */
  remove(call) {
    const list = call._dlist
    if (list === null) return
    const prev = call._dprev
    const next = call._dnext
    if (prev !== null) prev._dnext = next
    else list.head = next
    if (next !== null) next._dprev = prev
    else list.tail = prev
    call._dlist = null
    call._dprev = null
    call._dnext = null
    if (call._dheld) {
      call._dheld = false
      if (--this.held === 0 && this.timer !== null) this.timer.unref()
    }
    // An emptied list stays in the map: sequential calls would otherwise delete and recreate it
    // on every call (a Map delete + set + allocation, the costliest step of a timed call).
    // fire() drops the lists that are still empty, so the map stays bounded by the timeoutMs
    // values seen within one timer period.
  }

  /**
   * A waiter's turn came: if its deadline passed meanwhile (a stall kept its timer from
   * running), it leaves as its timer would have made it, and this returns true. Every line a
   * call waits in asks this before it admits one (ADR 0609, 1108).
   */
  overdue(call) {
    if (call._dlist === null) return false
    const now = nowMs()
    if (call._deadline > now) return false
    this.remove(call)
    this.onExpire(call, now)
    return true
  }

  arm(at, now) {
    if (this.timer !== null) clearTimeout(this.timer)
    this.armedAt = at
    // A settle once this timer is STALL_MS overdue carries the stall (the binding checks).
    if (!this.stalled) clockCell[STALLED_FROM] = at + STALL_MS
    // +1: setTimeout may fire a fraction of a millisecond early by the engine's clock. A delay
    // past setTimeout's range fires early and fire() re-arms for what is left.
    this.timer = setTimeout(this.fire, delayMs(Math.max(0, Math.ceil(at - now)) + 1))
    if (this.held === 0) this.timer.unref()
  }

  fire() {
    const now = nowMs()
    // This late, the loop could run no timer, nor read what arrived meanwhile (ADR 0610).
    if (now - this.armedAt >= STALL_MS) this.stall()
    this.timer = null
    this.armedAt = Infinity
    if (!this.stalled) clockCell[STALLED_FROM] = Infinity
    let next = Infinity
    for (const list of this.lists.values()) {
      let call = list.head
      while (call !== null && call._deadline <= now) {
        this.remove(call)
        this.onExpire(call, now)
        call = list.head
      }
      if (call === null) this.lists.delete(list.ms)
      else if (call._deadline < next) next = call._deadline
    }
    if (next !== Infinity && next < this.armedAt) this.arm(next, nowMs())
  }
}

module.exports = { Deadlines }
