'use strict'
// Per-call deadlines without a timer per call. Calls with the same timeoutMs expire in the order
// they started, so each distinct timeoutMs keeps an intrusive FIFO (O(1) add and remove, no
// allocation per call: the links live on the call). One unref'd timer is armed for the earliest
// head; it never keeps the process alive (cockatiel #11).

const { performance } = require('node:perf_hooks')

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

  /** Starts `call`'s deadline `ms` from `now` (performance.now() time). */
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
    if (list.head === null) this.lists.delete(list.ms)
  }

  arm(at, now) {
    if (this.timer !== null) clearTimeout(this.timer)
    this.armedAt = at
    // +1: setTimeout may fire a fraction of a millisecond early by performance.now().
    this.timer = setTimeout(this.fire, Math.max(0, Math.ceil(at - now)) + 1)
    this.timer.unref()
  }

  fire() {
    this.timer = null
    this.armedAt = Infinity
    const now = performance.now()
    let next = Infinity
    for (const list of this.lists.values()) {
      let call = list.head
      while (call !== null && call._deadline <= now) {
        this.remove(call)
        this.onExpire(call)
        call = list.head
      }
      if (call !== null && call._deadline < next) next = call._deadline
    }
    if (next !== Infinity && next < this.armedAt) this.arm(next, performance.now())
  }
}

module.exports = { Deadlines, performance }
