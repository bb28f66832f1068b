'use strict'
// The settle stage (ADR 1219): a call that holds a permit starts running, and gives it back to
// the engine with its verdict. It returns what the engine answered (the slots freed); waking the
// key's waiters with them is the pipeline's (lib/pipeline.js).

const { native } = require('./native')
const V = require('./verdicts')
const diag = require('./diagnostics')
const quota = require('./quota')
const { RUNNING } = require('./call-record')

/** A waiter got its permit and starts running now: the async context its fn runs in. */
function enterSettle(call) {
  call._state = RUNNING
  if (call._timing !== null) diag.started(call._timing)
  const ar = call._asyncResource
  call._asyncResource = null
  return ar
}

/**
 * fn ended with `x` and `verdict`: a paced quota reads the response's headers, the permit goes
 * back to the engine. Returns the slots it freed.
 */
function leaveSettle(call, verdict, x) {
  if (call._cost !== null && call._rx._quota.pace) quota.observe(call, x)
  return native.settle(call._ks.handle, call._permit, V.settleCode(verdict, x))
}

/** The settle is told to whoever listens (after the waiters it freed were woken). */
function told(call, verdict, stuck) {
  if (call._timing !== null) diag.settled(call._rx, call.key, verdict, call._timing, stuck)
}

module.exports = { enterSettle, leaveSettle, told }
