'use strict'
// The engine's admission, one native acquire for breaker → quota → throttle → limiter and
// queue → bulkhead (ADR 1200): a permit (≥ 0), QUEUED, QUOTA_WAIT or a refusal code. The call's
// deadline goes with it, so that the engine refuses at once a call that could not leave the
// queue in time rather than let it time out waiting (ADR 0110).

const { native, clockCell, QUEUED, STALE_HANDLE, REGISTRY_FULL, DEFAULT_LEVEL, LEVEL_SPAN } = require('./native')
const { acquireAt } = require('./levels')
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
  return budgetMs === undefined ? native.acquire(ks.handle) : native.acquireWithin(ks.handle, budgetMs)
}

/** acquireCosting at the call's level (its tenant's rank asked first, as acquireAt does). */
function costing(ks, budgetMs, prio, cost) {
  if (prio === null) return acquireCosting(ks, budgetMs, DEFAULT_LEVEL, 0, cost, false)
  if (prio.tenant !== undefined) {
    const r = native.levelOf(ks.handle, prio.cls, prio.tenant)
    if (r === STALE_HANDLE) return r
    prio.level = r % LEVEL_SPAN
    prio.id = (r - prio.level) / LEVEL_SPAN
  }
  return acquireCosting(ks, budgetMs, prio.level, prio.id, cost, false)
}

/** Acquires for `cost` on `ks`: a permit or code as acquireAt, or QUOTA_WAIT (ready time in the clock cell). */
function acquireCosting(ks, budgetMs, level, tenantId, cost, head) {
  // The arguments go through the clock cell (src/binding/quota.rs): cheaper than N-API's.
  const a = clockCell
  a[3] = budgetMs === undefined ? -1 : budgetMs
  a[4] = level
  a[5] = tenantId
  a[6] = head ? 1 : 0
  a[7] = cost.c0
  a[8] = cost.c1
  a[9] = cost.c2
  a[10] = cost.c3
  const p = native.acquireCosting(ks.handle)
  if (p >= 0 || p === QUEUED) {
    cost.charged = true
    cost.at = clockCell[0]
  }
  return p
}

module.exports = { acquire, acquireCosting }
