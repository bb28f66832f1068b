'use strict'
// The binding, loaded once. Outcome codes mirror src/binding/codes.rs.

// Through load-native: where no binary matches, its error says what was detected and what to do.
const native = require('./load-native.js').loadNative()

module.exports = {
  native,
  QUEUED: -1,
  STALE_HANDLE: -2,
  KEEP_WAITING: -3,
  STALE_PERMIT: -4,
  BAD_VERDICT: -5,
  REGISTRY_FULL: -15,
  /** Rejection codes are -10 - reason. */
  REASONS: [undefined, 'limit', 'queue', 'bulkhead', 'breaker', 'registry'],
  /** Bits of a key handle below the engine id; the low 17 bits are the registry slot. */
  SLOT_SPAN: 131072,
  /** Breaker states as `observe` encodes them (limit × 4 + code). */
  BREAKER_STATES: ['closed', 'open', 'half-open', null],
}

/** The one error mapper: a native error becomes a RangeError (bad argument) or an Error. */
module.exports.mapNativeError = function mapNativeError(err) {
  if (err && err.code === 'InvalidArg') return new RangeError(`resilix: ${err.message}`)
  const e = new Error(`resilix: internal error in the native engine: ${err && err.message}`)
  e.cause = err
  return e
}
