'use strict'
// Running a call's fn, and reading what it ended with as a verdict (the instance's classify, or
// the default rules). Remembers the key whose fn runs synchronously now: a call it queues on
// that same key is a self-wait, the start of a deadlock (warned once per key).

const V = require('./verdicts')
const { custom } = require('./classify')

let current = null

/** Calls the call's fn, remembering its key while fn runs synchronously. */
function runFn(call) {
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

module.exports = { runFn, runningOn, verdictOfValue, verdictOfError }
