'use strict'
// The run of a plain call: no deadline, no caller signal, no wait, nobody timing calls
// (ADR 1200). fn's own promise, awaited; the settle is the engine's. Half the bookkeeping of a
// guarded call: this is the path of a call that names no option.

const { RUNNING, DONE } = require('./call-record')
const { runFn, verdictOfValue, verdictOfError } = require('./run-fn')
const { settle } = require('./pipeline')
const V = require('./verdicts')
const quota = require('./quota')

/** A call with no deadline, no caller signal and no wait: fn's own promise, awaited. */
async function runPlain(call, permit) {
  call._permit = permit
  call._state = RUNNING
  let v
  try {
    v = await runFn(call)
  } catch (err) {
    if (call._cost !== undefined && call._rx._quota.pace) quota.observe(call, err)
    finish(call, verdictOfError(call, err), err)
    // As on the guarded path (fnDone): a classify that throws rejects with its own error.
    if (call._classifyError !== undefined) throw call._classifyError
    throw err
  }
  if (call._cost !== undefined && call._rx._quota.pace) quota.observe(call, v)
  finish(call, verdictOfValue(call, v), v)
  if (call._classifyError !== undefined) throw call._classifyError
  return v
}

/** Settles a call that ended with `verdict` (`x`: its value or error). */
function finish(call, verdict, x) {
  call._state = DONE
  settle(call._rx, call._ks, call._permit, V.settleCode(verdict, x))
}

module.exports = { runPlain, finish }
