'use strict'
// Per-call deadlines without a timer per call. Calls with the same timeoutMs expire in the order
// they started, so each distinct timeoutMs keeps an intrusive FIFO (O(1) add and remove, no
// allocation per call: the links live on the call). One unref'd timer is armed for the earliest
// head; it never keeps the process alive (cockatiel #11).

// Time is the engine's clock in ms (lib/native.js clockCell / nowMs), not performance.now():
// add() receives the time of the acquire that started the call, so a call reads no clock.
const { native } = require('./native')
const nowMs = () => native.nowMs()

class DeadlineList {
  constructor(ms) {
    this.ms = ms
    this.head = null
    this.tail = null
  }
}

class Deadlines {
  /** @param {(call: any) => void} onExpire */
  constructor(onExpire) {
    this.onExpire = onExpire
    /** @type {Map<number, DeadlineList>} */
    this.lists = new Map()
    this.timer = null
    this.armedAt = Infinity
    this.fire = this.fire.bind(this)
  }

  /** Starts `call`'s deadline `ms` from `now` (the engine clock, ms). */
  add(call, ms, now) {
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
    if (list.tail !== null) list.tail._dnext = call
    else list.head = call
    list.tail = call
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
    // An emptied list stays in the map: sequential calls would otherwise delete and recreate it
    // on every call (a Map delete + set + allocation, the costliest step of a timed call).
    // fire() drops the lists that are still empty, so the map stays bounded by the timeoutMs
    // values seen within one timer period.
  }

  arm(at, now) {
    if (this.timer !== null) clearTimeout(this.timer)
    this.armedAt = at
    // +1: setTimeout may fire a fraction of a millisecond early by the engine's clock.
    this.timer = setTimeout(this.fire, Math.max(0, Math.ceil(at - now)) + 1)
    this.timer.unref()
  }

  fire() {
    this.timer = null
    this.armedAt = Infinity
    const now = nowMs()
    let next = Infinity
    for (const list of this.lists.values()) {
      let call = list.head
      while (call !== null && call._deadline <= now) {
        this.remove(call)
        this.onExpire(call)
        call = list.head
      }
      if (call === null) this.lists.delete(list.ms)
      else if (call._deadline < next) next = call._deadline
    }
    if (next !== Infinity && next < this.armedAt) this.arm(next, nowMs())
  }
}

module.exports = { Deadlines }
