'use strict'
// The fast path: a call that names no deadline, caller signal, quota, priority or retry, on a
// key with room, while nobody subscribes to per-call events. It is admitted by one native
// `acquire` and settled by one native `settle`, with nothing else between fn and the caller:
// no deadline, no promise of our own beyond the async function's, no hooks. What such a call
// costs, part by part, and why admission still crosses into the engine: ADR 1218.

const { native, clockCell, CELL } = require('./native')
const V = require('./verdicts')
const { Call, runFn, verdictOfValue, verdictOfError, settled, RUNNING, DONE } = require('./call')

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

/** Runs `fn` holding `permit` on `ks`; resolves or rejects with exactly what fn does. */
async function runFast(rx, ks, fn, permit) {
  const call = new Call(rx, ks, fn, undefined, undefined)
  call._permit = permit
  call._state = RUNNING
  let v
  try {
    v = await runFn(call)
  } catch (err) {
    end(rx, ks, call, verdictOfError(call, err), err)
    // As on the guarded path: a classify that throws rejects with its own error.
    if (call._classifyError !== undefined) throw call._classifyError
    throw err
  }
  // A primitive carries no status: a success, unless the instance classifies values itself.
  end(rx, ks, call, rx._classify === undefined && (v === null || (typeof v !== 'object' && typeof v !== 'function')) ? V.SUCCESS : verdictOfValue(call, v), v)
  if (call._classifyError !== undefined) throw call._classifyError
  return v
}

/** Settles the call with the engine; waiters, late waiters and watchers only when there are any. */
function end(rx, ks, call, verdict, x) {
  call._state = DONE
  const freed = native.settle(ks.handle, call._permit, V.settleCode(verdict, x))
  if (ks.head !== null || rx._events.watching) settled(rx, ks, freed)
}

module.exports = { runFast, acquireByCell, acquireWithinByCell }
