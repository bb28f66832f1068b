'use strict'
// The engine's admission, one native acquire for breaker → quota → throttle → limiter and
// queue → bulkhead (ADR 1200): a permit (≥ 0), QUEUED, QUOTA_WAIT or a refusal code. The call's
// deadline goes with it, so that the engine refuses at once a call that could not leave the
// queue in time rather than let it time out waiting (ADR 0110).

const { native, clockCell, CELL, QUEUED, STALE_HANDLE, REGISTRY_FULL, DEFAULT_LEVEL } = require('./native')
const { acquireAt, rankTenant } = require('./levels')
const { acquireByCell, acquireWithinByCell } = require('./fast-path')
const { resolveAgain } = require('./key-registry')

/** Acquires on `ks` for a call with `prio` (or null) costing `cost` (or null) within `budgetMs`. */
function acquire(rx, ks, budgetMs, prio, cost) {
  let p
  if (cost === null && prio === null) {
    p = plain(ks, budgetMs)
    if (p === STALE_HANDLE) p = resolveAgain(rx, ks) ? plain(ks, budgetMs) : REGISTRY_FULL
  } else if (cost !== null) {
    p = costing(ks, budgetMs, prio, cost)
    if (p === STALE_HANDLE) p = resolveAgain(rx, ks) ? costing(ks, budgetMs, prio, cost) : REGISTRY_FULL
  } else {
    p = acquireAt(ks.handle, budgetMs, prio)
    if (p === STALE_HANDLE) p = resolveAgain(rx, ks) ? acquireAt(ks.handle, budgetMs, prio) : REGISTRY_FULL
  }
  if (rx._events.watching) rx._events.observe(ks)
  return p
}

function plain(ks, budgetMs) {
  return budgetMs === undefined ? acquireByCell(ks.handle) : acquireWithinByCell(ks.handle, budgetMs)
}

/** acquireCosting at the call's level (its tenant's rank asked first, as acquireAt does). */
function costing(ks, budgetMs, prio, cost) {
  if (prio === null) return acquireCosting(ks, budgetMs, DEFAULT_LEVEL, 0, cost, false)
  if (prio.tenant !== undefined && !rankTenant(ks.handle, prio)) return STALE_HANDLE
  return acquireCosting(ks, budgetMs, prio.level, prio.id, cost, false)
}

/** Acquires for `cost` on `ks`: a permit or code as acquireAt, or QUOTA_WAIT (ready time in the clock cell). */
function acquireCosting(ks, budgetMs, level, tenantId, cost, head) {
  // The arguments go through the clock cell's named slots: cheaper than N-API's (ADR 1210).
  const a = clockCell
  a[CELL.budgetMs] = budgetMs === undefined ? -1 : budgetMs
  a[CELL.level] = level
  a[CELL.tenant] = tenantId
  a[CELL.head] = head ? 1 : 0
  a[CELL.costs] = cost.c0
  a[CELL.costs + 1] = cost.c1
  a[CELL.costs + 2] = cost.c2
  a[CELL.costs + 3] = cost.c3
  const p = native.acquireCosting(ks.handle)
  if (p >= 0 || p === QUEUED) {
    cost.charged = true
    cost.at = a[CELL.now]
  }
  return p
}

module.exports = { acquire, acquireCosting }
