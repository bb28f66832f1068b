'use strict'
// The plain acquire, answered through the clock cell (ADR 1218): a call that names no quota and
// no priority is admitted by one native `acquire` whose permit comes back in the cell, not as a
// heap number. Why admission still crosses into the engine, and what each part costs: ADR 1218.

const { native, clockCell, CELL } = require('./native')

// Where `acquireToCell` leaves its answer (ADR 1210), read once: a lookup per call costs.
const ANSWER = CELL.answer

/**
 * `native.acquire(handle)`, answered through the clock cell: a permit returned by the addon is
 * a heap number made by V8's C++ factory, one read from the cell is made by JS (ADR 1218).
 */
function acquireByCell(handle) {
  native.acquireToCell(handle)
  return clockCell[ANSWER]
}

/** `native.acquireWithin(handle, budgetMs)`, answered through the clock cell as acquireByCell is. */
function acquireWithinByCell(handle, budgetMs) {
  native.acquireWithinToCell(handle, budgetMs)
  return clockCell[ANSWER]
}

module.exports = { acquireByCell, acquireWithinByCell }
