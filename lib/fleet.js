'use strict'
// A quota a fleet shares through a store (ADR 1102): per key, the lease the engine spends,
// when to ask the store for the next one, what to tell it (settled usage, a cooldown, the
// headers' readings), and the fallback while it cannot be reached. The engine decides what a
// call may spend (engine/src/quota_fleet.rs); this file holds only the I/O and its timers.
// An instance without a `quotaStore` never loads it.

const { native, QUOTA_RING } = require('./native')
const { processId } = require('./store/redis')
const { delayMs } = require('./timers')
const { checkLease } = require('./store/reply')
const { soon } = require('./line')

const MODES = ['leased', 'fallback', 'refusing']
/** How often a process whose store is down tries it again: once a second. */
const RETRY_MS = 1000
/** Leases remembered per key, to settle a call in the field it was charged to. */
const MAX_LEASES = 256
/** How often a key the store never answered looks whether its client has connected. */
const CONNECT_POLL_MS = 10
/**
 * How long a key the store never answered waits for a client that is still connecting and has
 * reported no error: 1 s, a guess (ADR 1105).
 */
const CONNECT_MS = 1000

/** The instance's side of a store: its process id, and a FleetKey per key it shares. */
class Fleet {
  constructor(rx, store, quota) {
    this.rx = rx
    this.store = store
    this.quota = quota
    this.id = processId()
    this.keys = new Set()
    this.closed = false
    store.use()
  }

  /** A key's engine handle is new (first use, or resolved again): share it if the store covers it. */
  attach(ks) {
    if (!this.store.covers(ks.name)) return
    native.quotaShare(ks.handle, this.store.timeoutMs)
    if (ks.fleet === null) {
      ks.fleet = new FleetKey(this, ks)
      this.keys.add(ks.fleet)
    } else ks.fleet.reset()
  }

  /** `ks` takes over `fresh`'s new handle (its key was resolved again): one FleetKey for it. */
  adopt(ks, fresh) {
    if (fresh.fleet !== null) {
      fresh.fleet.close()
      this.keys.delete(fresh.fleet)
    }
    if (ks.fleet !== null) ks.fleet.reset()
  }

  close() {
    for (const f of this.keys) f.close()
    this.keys.clear()
    if (this.closed) return
    this.closed = true
    this.store.release()
  }
}

class FleetKey {
  constructor(fleet, ks) {
    this.fleet = fleet
    this.ks = ks
    const limits = fleet.quota.limits
    this.n = limits.length
    this.limits = limits
    /** Each budget's bucket, µs, as the engine sizes it: the store keeps its window in these. */
    this.bucketsUs = limits.map((b) => native.quotaBucketUs(b.windowMs))
    /** The shortest window's bucket, ms: how soon settled usage goes out. */
    this.bucketMs = Math.min(...this.bucketsUs) / 1000
    this.gen = ''
    this.procs = 1
    this.sums = new Array(this.n).fill(0)
    this.granted = new Array(this.n).fill(0)
    this.asking = false
    this.seq = 0
    this.timer = null
    this.timerAt = Infinity
    this.closed = false
    this.mode = 0
    /** Leases by the engine time they were installed: `{ from, fields }` (fields null: none). */
    this.leases = []
    /** Settled usage not yet told, as (budget, field, amount) triples. */
    this.pending = []
    this.cool = 0
    /** Back from a fallback, the store answered a first ask (see ask()). */
    this.probed = false
    /** Engine ms before which the fleet's window has no room (the store said). */
    this.readyAt = 0
    /** The store answered this key once: the process has the fleet's figures (ADR 1105). */
    this.reached = false
    /** Engine ms until which a first ask waits for the client to connect (0: not waiting yet). */
    this.connectBy = 0
    // stats
    this.asked = 0
    this.fallbacks = 0
    this.errors = 0
    this.latencyMs = 0
    this.lastError = null
  }

  /** The engine forgot the key (evicted, resolved again): it starts without a lease. */
  reset() {
    this.mode = 0
    this.leases = []
    this.pending = []
  }

  /**
   * A call waits for a lease: ask now, unless asking already, or the store said the fleet's
   * window has no room yet (the waiting call asks again then).
   */
  want() {
    if (this.asking || this.closed || this.mode !== 0) return
    if (this.readyAt > native.nowMs()) return
    // Only for a lease the call lacked, not for a local wait (a cooldown, a share).
    const st = native.quotaFleetState(this.ks.handle)
    let short = false
    for (let i = 0; i < this.n; i++) if (st[1 + this.n + i] > 0) short = true
    if (short) this.ask(false)
  }

  /** A call charged at `at` (engine ms) settled `d` more (less: a refund), by cost index. */
  adjust(at, d0, d1, d2, d3) {
    const lease = this.leaseAt(at)
    if (lease === null || lease.fields === null) return // charged while the store was down
    const limits = this.limits
    const names = this.fleet.quota.names
    for (let i = 0; i < this.n; i++) {
      const c = names.indexOf(limits[i].name)
      const v = c === 0 ? d0 : c === 1 ? d1 : c === 2 ? d2 : d3
      if (v !== 0) this.pending.push(i, lease.fields[i], v)
    }
    this.later()
  }

  /** A charged call admitted from the limiter's queue at `at`: its charge moves to the lease of then. */
  restamp(from, at, cost) {
    const a = this.leaseAt(from)
    const b = this.leaseAt(at)
    if (a === b) return
    this.adjust(from, -cost.c0, -cost.c1, -cost.c2, -cost.c3)
    this.adjust(at, cost.c0, cost.c1, cost.c2, cost.c3)
  }

  /** The key began to cool down after a 429: the fleet cools too. */
  cooled() {
    const st = native.quotaFleetState(this.ks.handle)
    if (st.length === 0) return
    this.cool = Math.min(Math.ceil(st[st.length - 1]), this.fleet.quota.maxCooldownMs)
    if (this.mode === 0) this.ask(true)
  }

  leaseAt(at) {
    const l = this.leases
    for (let i = l.length - 1; i >= 0; i--) if (l[i].from <= at) return l[i]
    return null
  }

  /** Settled usage goes out within a bucket, with the next lease or alone. */
  later() {
    if (this.pending.length === 0 || this.asking || this.mode !== 0) return
    this.arm(Math.max(1, this.bucketMs), () => this.ask(true))
  }

  arm(ms, fn) {
    const at = Date.now() + ms
    if (this.timer !== null) {
      if (this.timerAt <= at) return
      clearTimeout(this.timer)
    }
    this.timerAt = at
    this.timer = setTimeout(() => {
      this.timer = null
      this.timerAt = Infinity
      fn()
    }, delayMs(ms))
    this.timer.unref?.()
  }

  disarm() {
    if (this.timer !== null) clearTimeout(this.timer)
    this.timer = null
    this.timerAt = Infinity
  }

  /**
   * Asks the store: for a lease, or (`flush`) only to tell it what settled. Waits at most the
   * store's timeoutMs; a store not connected fails at once rather than queue the command.
   */
  ask(flush) {
    const ks = this.ks
    if (this.asking || this.closed || ks.handle < 0) return
    const store = this.fleet.store
    const st = native.quotaFleetState(ks.handle)
    if (st.length === 0) return
    this.disarm()
    const n = this.n
    const mode = st[0]
    const down = mode !== 0
    // Back from a fallback, a first ask only asks and tells nothing: a paused store runs every
    // command it held once it resumes, and charges told twice would be counted twice.
    const probe = down && !this.probed
    if (probe) flush = true
    if (!store.ready()) {
      // A key the store never answered waits for its client to connect, unless the client
      // already said why it cannot (ADR 1105); then, and every retry after, it is an error.
      if (!this.reached && !down) {
        const now = native.nowMs()
        if (this.connectBy === 0) this.connectBy = now + Math.max(store.timeoutMs, CONNECT_MS)
        if (now < this.connectBy && store.clientError === null) {
          this.arm(Math.min(CONNECT_POLL_MS, this.connectBy - now), () => this.ask(flush))
          return
        }
      }
      this.fail(store.notConnected())
      return
    }
    const argv = [this.fleet.id, this.gen, n, QUOTA_RING, this.cool]
    for (let i = 0; i < n; i++) {
      const left = st[1 + i]
      const need = st[1 + n + i]
      const queued = st[1 + 2 * n + i]
      const own = st[1 + 3 * n + i]
      const b = this.limits[i]
      const spent = down ? 0 : Math.max(0, this.granted[i] - left)
      // Twice what the last lease was spent at, within a quarter of an equal share (ADR 1102).
      const cap = Math.ceil(b.limit / (4 * this.procs))
      const ask = flush ? 0 : Math.max(need, queued, Math.min(cap, 2 * spent))
      argv.push(b.windowMs, this.bucketsUs[i], b.limit, ask, flush ? 0 : need, own)
    }
    const pending = probe ? [] : this.pending
    if (!probe) this.pending = []
    argv.push(pending.length / 3, ...pending)
    const floors = []
    for (let i = 0; i < n; i++) if (st[1 + 4 * n + i] > 0) floors.push(i, st[1 + 4 * n + i])
    argv.push(floors.length / 2, ...floors)
    let seeds = []
    if (down && !probe) seeds = native.quotaCharged(ks.handle, st[1 + 5 * n])
    argv.push(seeds.length / 4, ...seeds)
    // The bound on any cooldown the store keeps, whoever wrote it (ADR 1104).
    argv.push(this.fleet.quota.maxCooldownMs)
    const cool = probe ? 0 : this.cool
    if (!probe) this.cool = 0
    const seq = ++this.seq
    this.asking = true
    this.asked++
    const sentAt = native.nowMs()
    const t0 = performance.now()
    let timer = null
    const done = (err, reply) => {
      if (timer !== null) clearTimeout(timer)
      timer = null
      if (seq !== this.seq || this.closed) return
      this.seq++
      this.asking = false
      if (err === null) {
        const wrong = checkLease(reply, n)
        if (wrong !== null) err = new Error(wrong)
      } else err = this.fleet.store.named(err, this.limits)
      if (err !== null) {
        if (!down) {
          // Told nothing: tell it again once it answers (a refund kept is budget lost only).
          this.pending = pending.concat(this.pending)
          this.cool = Math.max(this.cool, cool)
        }
        this.fail(err)
      } else if (probe) {
        this.probed = true
        this.ask(false)
      } else this.answered(reply, sentAt, flush, performance.now() - t0)
    }
    timer = setTimeout(() => done(new Error(`the store did not answer within ${store.timeoutMs} ms`)), delayMs(store.timeoutMs))
    timer.unref?.()
    let p
    try {
      p = store.run(ks.name, argv.map(String))
    } catch (err) {
      done(err)
      return
    }
    Promise.resolve(p).then((r) => done(null, r), (err) => done(err instanceof Error ? err : new Error(String(err))))
  }

  /** A reply of the lease script (checked: lib/store/reply.js). */
  answered(r, sentAt, flush, ms) {
    const ks = this.ks
    if (ks.handle < 0) return
    this.latencyMs = this.latencyMs === 0 ? ms : this.latencyMs * 0.8 + ms * 0.2
    const n = this.n
    const wasDown = this.mode !== 0
    this.reached = true
    this.gen = String(r[0])
    this.procs = Math.max(1, Number(r[1]))
    // Bounded here too: a store written by an older or hostile process may hold any time (ADR 1104).
    const coolLeft = Math.min(Number(r[2]), this.fleet.quota.maxCooldownMs)
    const life = Number(r[3])
    const wait = Number(r[4])
    const granted = []
    const fields = []
    for (let i = 0; i < n; i++) {
      granted.push(Number(r[5 + 3 * i]))
      fields.push(Number(r[6 + 3 * i]))
      this.sums[i] = Number(r[7 + 3 * i])
    }
    if (wasDown) {
      native.quotaRejoin(ks.handle)
      this.mode = 0
      // The error was the outage's: it is over (ADR 1106).
      this.lastError = null
      this.fleet.rx._events.storeChanged(ks, 'leased', null)
    }
    if (coolLeft > 0) native.quotaCoolDown(ks.handle, coolLeft)
    if (!flush || wasDown) {
      const prev = this.leases.length > 0 ? this.leases[this.leases.length - 1] : null
      const room = this.limits.map((b, i) => Math.max(0, b.limit - this.sums[i]))
      const old = native.quotaLease(ks.handle, sentAt, life, wait, granted, room)
      this.readyAt = 0
      if (wait > 0) {
        // Budget also comes back early (refunds, leases returned): look again within two
        // buckets rather than wait for the oldest charges to leave.
        const again = Math.min(wait, 2 * this.bucketMs)
        this.readyAt = native.nowMs() + again
        this.arm(again, () => this.ask(false))
      }
      if (prev !== null && prev.fields !== null) {
        for (let i = 0; i < old.length; i++) if (old[i] > 0) this.pending.push(i, prev.fields[i], -old[i])
      }
      this.granted = granted
      this.remember(fields)
      // Renew shortly before the lease ends, if it is being spent (renew() looks).
      if (wait === 0) this.arm(Math.max(1, life - Math.max(2, 2 * this.latencyMs)), () => this.renew())
    }
    this.later()
    wake(ks)
  }

  remember(fields) {
    const l = this.leases
    l.push({ from: native.nowMs(), fields })
    if (l.length > MAX_LEASES) l.splice(0, l.length - MAX_LEASES)
  }

  /** The lease ends soon: a key in use asks for the next; an idle one gives it back. */
  renew() {
    const ks = this.ks
    if (ks.handle < 0 || this.asking) return
    const st = native.quotaFleetState(ks.handle)
    if (st.length === 0 || st[0] !== 0) return
    const n = this.n
    let inUse = false
    for (let i = 0; i < n; i++) if (st[1 + i] < this.granted[i] || st[1 + 2 * n + i] > 0) inUse = true
    if (inUse) return this.ask(false)
    const prev = this.leases[this.leases.length - 1]
    const old = native.quotaSurrender(ks.handle)
    let any = false
    for (let i = 0; i < old.length; i++) {
      if (old[i] > 0 && prev !== undefined && prev.fields !== null) {
        this.pending.push(i, prev.fields[i], -old[i])
        any = true
      }
    }
    this.granted = new Array(n).fill(0)
    if (any) this.ask(true)
  }

  /** The store failed or timed out: fall back to a share of the budget, or refuse (ADR 1102). */
  fail(err) {
    const ks = this.ks
    this.errors++
    this.lastError = err.message
    if (ks.handle < 0 || this.closed) return
    this.probed = false
    if (this.mode === 0) {
      const st = native.quotaFleetState(ks.handle)
      if (st.length === 0) return
      const n = this.n
      const store = this.fleet.store
      const shares = []
      for (let i = 0; i < n; i++) {
        const own = st[1 + 3 * n + i]
        const limit = this.limits[i].limit
        const sum = this.sums[i]
        // This process's part of the fleet's last-seen spend, at least a quarter of an equal
        // share: the fleet stays within 1.25 × the budget while the store is down. Never
        // reached, it knows no fleet: an equal share of the `processes` configured (ADR 1105).
        const part = sum > 0 ? Math.floor((limit * Math.min(own, sum)) / sum) : Math.floor(limit / this.procs)
        if (this.reached) shares.push(Math.max(part, Math.ceil(limit / (4 * this.procs))))
        else shares.push(store.processes > 0 ? Math.max(1, Math.floor(limit / store.processes)) : limit)
      }
      // Never reached and no `processes`: refuse rather than spend the whole budget (ADR 1105).
      const refuse = store.whenDown === 'refuse' || (!this.reached && store.processes === 0)
      native.quotaFallBack(ks.handle, shares, refuse)
      this.mode = refuse ? 2 : 1
      this.fallbacks++
      this.remember(null)
      this.fleet.rx._events.storeChanged(ks, MODES[this.mode], err)
      wake(ks)
    }
    this.arm(RETRY_MS, () => this.ask(false))
  }

  close() {
    this.closed = true
    this.disarm()
  }

  /** `stats().quota.store`. */
  stats() {
    return {
      state: MODES[this.mode],
      processes: this.procs,
      latencyMs: Math.round(this.latencyMs * 1000) / 1000,
      leases: this.asked,
      fallbacks: this.fallbacks,
      errors: this.errors,
      lastError: this.lastError,
    }
  }
}

/** The calls waiting for budget may go on. */
function wake(ks) {
  soon(ks)
}

module.exports = { Fleet }
