'use strict'
// Quotas (ADR 1100, 1101): the `quota` option, a call's `cost`, its settled usage
// (`ctx.charge`) and the rate-limit headers of its response. The engine decides
// (engine/src/quota.rs); the calls waiting for budget are in their key's line (lib/line.js,
// ADR 1200). An instance without a quota never comes here.

const { native, QUOTA_WAIT, QUOTA_OVERSIZE, QUOTA_WINDOW_MS, QUOTA_MAX_COOLDOWN_MS, QUOTA_COSTS, QUOTA_BUDGETS, QUOTA_DIMENSIONS, MAX_MS, REJECTED_BASE, REASONS } = require('./native')
const { describe } = require('./describe')
const { didYouMean } = require('./suggest')
const { soon } = require('./line')

/** Distinct costs a quota may name; budgets (a cost over a window) it may hold (the engine's). */
const MAX_COSTS = QUOTA_COSTS
const MAX_BUDGETS = QUOTA_BUDGETS
/** The window when a budget names none: a minute, as the LLM APIs count (the engine's default). */
const WINDOW_MS = QUOTA_WINDOW_MS
/**
 * Header dimension codes of the cost names the families use (the engine's, ADR 1210). No
 * prototype: a budget named `toString` or `constructor` has no dimension, not a function.
 */
const HEADER_NAMES = Object.assign(Object.create(null), ...QUOTA_DIMENSIONS.map((name, code) => (name === undefined ? {} : { [name]: code })))
const NAME = /^[A-Za-z][A-Za-z0-9_]{0,31}$/
/** The keys of a budget object that are options, not costs. */
const OPTION_NAMES = ['windowMs', 'pace', 'maxCooldownMs']

/**
 * The `quota` option: one budget object `{ windowMs?, pace?, maxCooldownMs?, [cost]: limit }`
 * or an array of them (the shortest maxCooldownMs holds). Returns `{ names, requests, pace,
 * maxCooldownMs, native, nativeNames, limits }` for the instance.
 */
function quotaOption(q) {
  const list = Array.isArray(q) ? q : [q]
  if (list.length === 0) throw new TypeError('resilix: option quota must name at least one budget, e.g. { requests: 500, tokens: 200000, windowMs: 60000 }')
  const names = []
  const flat = []
  const limits = []
  let pace = false
  let maxCooldownMs
  for (const b of list) {
    if (b === null || typeof b !== 'object' || Array.isArray(b)) {
      throw new TypeError(`resilix: option quota must be an object such as { requests: 500, tokens: 200000, windowMs: 60000 } or an array of them, got ${describe(b)}`)
    }
    let windowMs = WINDOW_MS
    if (b.windowMs !== undefined) {
      windowMs = b.windowMs
      if (typeof windowMs !== 'number' || !Number.isInteger(windowMs) || windowMs < 1 || windowMs > MAX_MS) {
        throw new RangeError(`resilix: option quota.windowMs must be a whole number of milliseconds from 1 to ${MAX_MS}, got ${typeof windowMs === 'number' ? windowMs : describe(windowMs)}`)
      }
    }
    if (b.pace !== undefined) {
      if (typeof b.pace !== 'boolean') throw new TypeError(`resilix: option quota.pace must be a boolean, got ${describe(b.pace)}`)
      pace = pace || b.pace
    }
    if (b.maxCooldownMs !== undefined) {
      const m = b.maxCooldownMs
      if (typeof m !== 'number' || !Number.isInteger(m) || m < 1 || m > MAX_MS) {
        throw new RangeError(`resilix: option quota.maxCooldownMs (the longest a 429's retry-after or a reset holds the key back) must be a whole number of milliseconds from 1 to ${MAX_MS}, got ${typeof m === 'number' ? m : describe(m)}`)
      }
      maxCooldownMs = Math.min(maxCooldownMs ?? m, m)
    }
    let any = false
    for (const name of Object.keys(b)) {
      if (name === 'windowMs' || name === 'pace' || name === 'maxCooldownMs') continue
      // A miscased option would silently become a budget of that name.
      const option = OPTION_NAMES.find((o) => o.toLowerCase() === name.toLowerCase())
      if (option !== undefined) throw new TypeError(`resilix: option quota.${name} is no budget: did you mean quota.${option}?`)
      if (!NAME.test(name)) {
        throw new TypeError(`resilix: option quota.${name}: a budget is named by an identifier of at most 32 characters (requests, tokens, inputTokens…)`)
      }
      const limit = b[name]
      if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1) {
        throw new RangeError(`resilix: option quota.${name} must be a whole number of ${name} per window, at least 1, got ${typeof limit === 'number' ? limit : describe(limit)}`)
      }
      let c = names.indexOf(name)
      if (c < 0) {
        if (names.length === MAX_COSTS) {
          throw new RangeError(`resilix: option quota names ${names.length + 1} different costs (${[...names, name].join(', ')}); at most ${MAX_COSTS}`)
        }
        c = names.push(name) - 1
      }
      flat.push(c, limit, windowMs)
      limits.push({ name, limit, windowMs })
      any = true
    }
    if (!any) throw new TypeError('resilix: a quota budget must name at least one limit, e.g. { requests: 500, windowMs: 60000 }')
  }
  if (limits.length > MAX_BUDGETS) throw new RangeError(`resilix: option quota holds ${limits.length} budgets; at most ${MAX_BUDGETS}`)
  return {
    names,
    /** The index of `requests`, charged 1 by a call that names no cost of it; -1 if none. */
    requests: names.indexOf('requests'),
    pace,
    // The engine's default when no budget names one (ADR 1104).
    maxCooldownMs: maxCooldownMs ?? QUOTA_MAX_COOLDOWN_MS,
    limits,
    native: flat,
    nativeNames: names.map((n) => HEADER_NAMES[n] ?? 0),
  }
}

/** What a call costs and when it was charged: the costs by the quota's index, `at` in engine ms. */
class Cost {
  constructor(quota) {
    const r = quota.requests
    this.c0 = r === 0 ? 1 : 0
    this.c1 = r === 1 ? 1 : 0
    this.c2 = r === 2 ? 1 : 0
    this.c3 = r === 3 ? 1 : 0
    this.at = 0
    this.charged = false
  }

  get(i) {
    return i === 0 ? this.c0 : i === 1 ? this.c1 : i === 2 ? this.c2 : this.c3
  }

  /** The same cost, uncharged: a retry's next attempt pays again. */
  again() {
    const c = Object.create(Cost.prototype)
    c.c0 = this.c0
    c.c1 = this.c1
    c.c2 = this.c2
    c.c3 = this.c3
    c.at = 0
    c.charged = false
    return c
  }

  set(i, v) {
    if (i === 0) this.c0 = v
    else if (i === 1) this.c1 = v
    else if (i === 2) this.c2 = v
    else this.c3 = v
  }
}

/** A call's `cost` option on an instance with `quota`: a Cost. Throws on a bad one. */
function costOption(quota, v, what) {
  if (v === undefined) return new Cost(quota)
  if (quota === null) {
    throw new TypeError(`resilix: ${what} option cost needs a quota: create the instance with one, e.g. new Resilix({ quota: { requests: 500, tokens: 200000 } })`)
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    throw new TypeError(`resilix: ${what} option cost must be an object such as { tokens: 1200 }, got ${describe(v)}`)
  }
  const cost = new Cost(quota)
  const names = quota.names
  // for-in over a small literal allocates nothing; at most four names, compared in place (a
  // lookup in a dictionary object costs more than four comparisons of interned strings).
  for (const name in v) {
    const i = name === names[0] ? 0 : name === names[1] ? 1 : name === names[2] ? 2 : name === names[3] ? 3 : -1
    if (i < 0) {
      throw new TypeError(`resilix: ${what} option cost.${name} is not a budget of this quota (it has ${quota.names.join(', ')})${didYouMean(name, quota.names, 'cost')}`)
    }
    const x = v[name]
    cost.set(i, typeof x === 'number' && x >= 0 && x !== Infinity ? Math.ceil(x) : amount(x, `${what} option cost.${name}`))
  }
  return cost
}

/** A cost or a usage: a finite number ≥ 0, rounded up to a whole one. */
function amount(x, what) {
  if (typeof x !== 'number' || !(x >= 0) || x === Infinity) {
    throw new RangeError(`resilix: ${what} must be a number ≥ 0, got ${typeof x === 'number' ? x : describe(x)}`)
  }
  return Math.ceil(x)
}

const REJECTED_QUOTA = REJECTED_BASE - REASONS.indexOf('quota')

/**
 * The error for an acquire refused with `p` on a key with a quota: its reason, and why.
 * `attempt`: a refused retry's attempt number, 0 for a first attempt (lib/events.js).
 */
function rejection(rx, p, ks, prio, cost, attempt = 0) {
  if (p === QUOTA_OVERSIZE) return rx._events.rejected(REJECTED_QUOTA, ks.name, ks, prio, oversize(rx._quota, cost), attempt)
  if (p === REJECTED_QUOTA) return rx._events.rejected(p, ks.name, ks, prio, tooLate(ks), attempt)
  return rx._events.rejected(p, ks.name, ks, prio, undefined, attempt)
}

/** Why a call could not fit before its deadline: a 429's cooldown, or the rate budget comes back at. */
function tooLate(ks) {
  const cooling = ks.handle >= 0 ? native.quotaCoolingMs(ks.handle) : 0
  if (!(cooling > 0)) return 'it could not fit before its deadline at the rate the budget comes back'
  const until = new Date(Date.now() + cooling).toISOString()
  return `the key is cooling down after a 429 until ${until} (${Math.ceil(cooling)} ms from now), and its budget comes back gradually after that: it could not fit before its deadline`
}

function oversize(q, cost) {
  for (const b of q.limits) {
    const c = cost.get(q.names.indexOf(b.name))
    if (c > b.limit) {
      return `it costs ${c} ${b.name}, more than the whole budget of ${b.limit} ${b.name} per ${b.windowMs} ms, so it can never be admitted`
    }
  }
  return 'it costs more than a whole budget'
}

// ---- settled usage -------------------------------------------------------------------------

/** `ctx.charge(usage)` / `permit.charge(usage)`: the call really used `usage`; settle the difference. */
function charge(holder, usage) {
  const cost = holder._cost
  if (cost === undefined || cost === null) {
    throw new TypeError('resilix: charge(usage) needs a quota: create the instance with one, e.g. new Resilix({ quota: { tokens: 200000 } })')
  }
  const quota = holder._rx._quota
  if (usage === null || typeof usage !== 'object' || Array.isArray(usage)) {
    throw new TypeError(`resilix: charge(usage) expects an object such as { tokens: 1830 }, got ${describe(usage)}`)
  }
  const d = [0, 0, 0, 0]
  let freed = false
  for (const name of Object.keys(usage)) {
    const i = quota.names.indexOf(name)
    if (i < 0) {
      throw new TypeError(`resilix: charge(usage): ${name} is not a budget of this quota (it has ${quota.names.join(', ')})${didYouMean(name, quota.names, 'cost')}`)
    }
    const v = amount(usage[name], `charge(usage): usage.${name}`)
    d[i] = v - cost.get(i)
    if (d[i] < 0) freed = true
    cost.set(i, v)
  }
  const ks = holder._ks
  if (!cost.charged || ks.handle < 0) return // refused or refunded already, or closed
  native.quotaAdjust(ks.handle, cost.at, d[0], d[1], d[2], d[3])
  if (ks.fleet !== null) ks.fleet.adjust(cost.at, d[0], d[1], d[2], d[3])
  if (freed) soon(ks)
}

// ---- response headers ----------------------------------------------------------------------

const PREFIXES = ['x-ratelimit-', 'anthropic-ratelimit-', 'ratelimit-', 'retry-after']

function relevant(name) {
  for (const p of PREFIXES) if (name.startsWith(p)) return true
  return false
}

/** The rate-limit headers of a response as `name: value` lines, '' when it has none. */
function headerBlock(h) {
  let block = ''
  if (h === null || (typeof h !== 'object' && typeof h !== 'function')) return block
  if (typeof h.entries === 'function' && typeof h.get === 'function') {
    // fetch's Headers: names are lowercase already.
    for (const [k, v] of h.entries()) if (relevant(k)) block += `${k}: ${v}\n`
    return block
  }
  for (const k of Object.keys(h)) {
    const n = k.toLowerCase()
    if (!relevant(n)) continue
    let v = h[k]
    if (Array.isArray(v)) v = v[0]
    if (typeof v === 'string' || typeof v === 'number') block += `${n}: ${v}\n`
  }
  return block
}

/** The status and headers of what an attempt produced: a Response, an undici result, or an error carrying one. */
function responseOf(x) {
  if (x === null || (typeof x !== 'object' && typeof x !== 'function')) return null
  if (x.headers !== undefined && x.headers !== null) return x
  const r = x.response
  if (r !== null && typeof r === 'object' && r.headers !== undefined) return r
  return null
}

/**
 * A call of a paced quota settled with `x` (its value or its error): its headers tighten the
 * budget, a 429 cools the key down. Untrusted: a throwing getter is no reading.
 */
function observe(holder, x) {
  try {
    const r = responseOf(x)
    if (r === null) return
    const status = r.status ?? r.statusCode
    observeHeaders(holder._ks, holder._cost, status, r.headers)
  } catch {}
}

/** `status` and `headers` (a Headers or a plain object) of a response to a call charged `cost`. */
function observeHeaders(ks, cost, status, headers) {
  const block = headerBlock(headers)
  const refused = status === 429
  if (block === '' && !refused) return
  if (ks.handle < 0) return
  const began = native.quotaObserve(ks.handle, block, Date.now(), refused, cost.at, cost.c0, cost.c1, cost.c2, cost.c3)
  if (began === 1 && ks.fleet !== null) ks.fleet.cooled()
  soon(ks)
}

module.exports = {
  quotaOption, costOption, Cost, rejection, charge, observe, observeHeaders, MAX_COSTS, MAX_BUDGETS, WINDOW_MS, QUOTA_WAIT,
}
