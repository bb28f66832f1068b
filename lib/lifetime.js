'use strict'
// How long things live: engines freed with their instance, calls whose fn never settles, and the
// errors of a closed instance or of too many live instances.

const { native } = require('./native')

/** Frees an engine when its instance is collected without close(). */
const engines = new FinalizationRegistry((id) => native.destroyEngine(id))

/**
 * A running call whose caller already has its answer (deadline or abort) and whose fn has not
 * settled this long afterwards is released as stuck: its deadline's length, at least 1 s
 * (ADR 0602, a guess with its measurements).
 */
const STUCK_MIN_MS = 1000
const stuckAfterMs = (call) => (call._timeoutMs !== undefined && call._timeoutMs > STUCK_MIN_MS ? call._timeoutMs : STUCK_MIN_MS)

function closedError(what) {
  const e = new Error(`resilix: ${what} on a closed Resilix (close() was called)`)
  e.code = 'ERR_RESILIX_CLOSED'
  return e
}

/** createEngine's answer when this thread already holds its maximum of live engines. */
const TOO_MANY = require('./native').TOO_MANY_ENGINES

function tooManyError() {
  const e = new Error(
    'resilix: too many live Resilix instances in this thread (1 048 576). Share one Resilix per process ' +
      '(keys separate the upstreams), or close() each instance when done with it',
  )
  e.code = 'ERR_RESILIX_TOO_MANY_INSTANCES'
  return e
}

/** Once per key: a fn of a key waits for a slot of that same key (nested execute). */
function warnSelfWait(ks) {
  if (ks.warnedSelfWait) return
  ks.warnedSelfWait = true
  process.emitWarning(
    `resilix: a fn running on key "${ks.name}" called execute() or acquire() on "${ks.name}" and waits for a slot ` +
      'of its own key; once every slot is held by such calls they wait for each other for ever. Use another key ' +
      'for the inner call, or give it a timeoutMs',
    { code: 'RESILIX_SELF_WAIT' },
  )
}

module.exports = { engines, stuckAfterMs, STUCK_MIN_MS, closedError, TOO_MANY, tooManyError, warnSelfWait }
