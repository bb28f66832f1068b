'use strict'
// The run stage (ADR 1219): a call's fn runs (enterRun), and what it ended with is read as a
// verdict (leaveRun: the instance's classify, or the default rules). Remembers the key whose fn
// runs synchronously now: a call it queues on that same key is a self-wait, the start of a
// deadlock (warned once per key).

const V = require('./verdicts')
const { custom } = require('./classify')

let current = null

/** Calls the call's fn, remembering its key while fn runs synchronously: what fn returned. */
function enterRun(call) {
  const outer = current
  current = call._ks
  try {
    return call._fn(call)
  } finally {
    current = outer
  }
}

/** The call's fn runs on `ks` now (synchronously). */
function runningOn(ks) {
  return current === ks
}

function verdictOfValue(call, v) {
  const classify = call._rx._classify
  return classify === undefined ? V.classifyValue(v) : custom(classify, call, true, v)
}

function verdictOfError(call, e) {
  const classify = call._rx._classify
  return classify === undefined ? V.classifyError(e) : custom(classify, call, false, e)
}

/** fn ended (`ok`: with value `x`, else error `x`): its verdict; an abort or a deadline first. */
function leaveRun(call, ok, x) {
  if (call._cancelled) return V.CANCELLED
  if (call._timedOut) return V.TIMEOUT
  return ok ? verdictOfValue(call, x) : verdictOfError(call, x)
}

module.exports = { enterRun, leaveRun, runFn: enterRun, runningOn, verdictOfValue, verdictOfError }
