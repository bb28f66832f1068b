'use strict'
// A call's priority and tenant (ADR 1001, 1002): read from its options, and turned into the
// level the key's queue orders it by. A call that names neither never comes here.

const { native, clockCell, CELL, PRIORITIES, LEVELS, CLASS_LEVELS, STALE_HANDLE } = require('./native')
const { describe } = require('./describe')
const { didYouMean } = require('./suggest')

/** The most UTF-16 units a tenant name may have: a name, not a payload. */
const MAX_TENANT_LENGTH = 256

/** A `priority` option's class code (0 sheddable … 4 critical); `what` names the option. */
function priorityOption(v, what = 'priority') {
  const c = typeof v === 'string' ? PRIORITIES.indexOf(v) : -1
  if (c >= 0) return c
  const names = PRIORITIES.slice().reverse()
  const hint = typeof v === 'string' ? didYouMean(v, names, 'priority') : ''
  throw new TypeError(`${what} must be one of ${names.map((n) => `'${n}'`).join(', ')}, got ${describe(v)}${hint}`)
}

/** A `tenant` option: a non-empty, well-formed string of at most 256 characters. */
function tenantOption(v, what = 'tenant') {
  if (typeof v !== 'string') throw new TypeError(`${what} must be a string naming who the call is for, got ${describe(v)}`)
  if (v.length === 0) throw new RangeError(`${what} must not be empty: name who the call is for, or leave it out`)
  if (v.length > MAX_TENANT_LENGTH) {
    throw new RangeError(`${what} is ${v.length} characters long; tenant names may be at most ${MAX_TENANT_LENGTH}`)
  }
  if (!v.isWellFormed()) throw new TypeError(`${what} must be a well-formed string; it has a lone surrogate`)
  return v
}

/**
 * What a call that names a priority or a tenant carries through its attempts: its class, its
 * tenant, and the level and tenant id of its latest acquire.
 */
class Prio {
  constructor(cls, tenant) {
    this.cls = cls
    this.tenant = tenant
    this.level = CLASS_LEVELS[cls]
    this.id = 0
  }
}

/**
 * A call by a tenant: its level and tenant id now (its tenant's rank moves with its usage).
 * False when `handle` is stale. The id comes back through the clock cell (ADR 1210).
 */
function rankTenant(handle, prio) {
  const level = native.levelOf(handle, prio.cls, prio.tenant)
  if (level === STALE_HANDLE) return false
  prio.level = level
  prio.id = clockCell[CELL.tenant]
  return true
}

/** Acquires for `prio` on `handle`: a permit or code as `acquireWithin`, or STALE_HANDLE. */
function acquireAt(handle, budgetMs, prio) {
  if (prio.tenant !== undefined && !rankTenant(handle, prio)) return STALE_HANDLE
  return native.acquireAt(handle, budgetMs === undefined ? -1 : budgetMs, prio.level, prio.id)
}

module.exports = { LEVELS, MAX_TENANT_LENGTH, priorityOption, tenantOption, Prio, acquireAt, rankTenant }
