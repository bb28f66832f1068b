'use strict'
// The binding, loaded once, with its outcome codes (defined once, in src/binding/codes.rs).

// Through load-native: where no binary matches, its error says what was detected and what to do.
// Copied into a plain object: the addon's exports object is a dictionary in V8, so every
// `native.acquire` was a hash lookup, about 7 ns of each acquire+settle pair (ADR 1218).
const native = { ...require('./load-native.js').loadNative() }
const codes = native.wireCodes()

module.exports = {
  native,
  /**
   * A Float64Array of twelve (src/binding/hot.rs): [0] the engine's clock in ms as of the latest
   * `acquire` on this thread (deadlines start from it, so a timed call reads no clock of its
   * own); [1] written here, the engine time from which this thread is stalled (lib/deadlines.js);
   * [2] the engine time at which a call told QUOTA_WAIT may ask again (lib/quota.js); [3…10]
   * written here, the arguments of acquireCosting; [11] the answer of `acquireToCell` and
   * `acquireWithinToCell` (lib/fast-path.js).
   */
  clockCell: native.clockCell,
  QUEUED: codes.queued,
  STALE_HANDLE: codes.staleHandle,
  KEEP_WAITING: codes.keepWaiting,
  STALE_PERMIT: codes.stalePermit,
  BAD_VERDICT: codes.badVerdict,
  REGISTRY_FULL: codes.registryFull,
  /** Rejection codes are REJECTED_BASE - reason. */
  REJECTED_BASE: codes.rejectedBase,
  /** Reason names by reason number (index 0 unused). */
  REASONS: codes.reasons.map((r) => r ?? undefined),
  /** A key handle modulo this is its registry slot. */
  SLOT_SPAN: codes.slotSpan,
  /** Breaker states as `observe` encodes them (limit × 4 + code). */
  BREAKER_STATES: codes.breakerStates,
  /** Verdict names by the code `settle` takes. */
  VERDICTS: codes.verdicts,
  /** `settle`'s code for an overload that asked no wait: a 503 without Retry-After (ADR 1004). */
  UNAVAILABLE: codes.unavailable,
  TOO_MANY_ENGINES: codes.tooManyEngines,
  /** retryDecide's refusals are RETRY_REFUSED_BASE - refusal. */
  RETRY_REFUSED_BASE: codes.retryRefusedBase,
  /** Refusal names by refusal number (index 0 unused). */
  RETRY_REFUSALS: codes.retryRefusals.map((r) => r ?? undefined),
  /** Priority class names by class code (0 sheddable … 4 critical). */
  PRIORITIES: codes.priorities,
  /** Ranks per class; a call naming no tenant is at `class × RANKS + RANKS − 1`. */
  RANKS: codes.ranks,
  /** `levelOf` returns `level + LEVEL_SPAN × tenant`. */
  LEVEL_SPAN: codes.levelSpan,
  /** acquireCosting: wait for budget (the time to ask again is clockCell[2]). */
  QUOTA_WAIT: codes.quotaWait,
  /** acquireCosting: the call costs more than a whole budget. */
  QUOTA_OVERSIZE: codes.quotaOversize,
  /** A quota budget's window when it names none, ms (the engine's default). */
  QUOTA_WINDOW_MS: codes.quotaWindowMs,
  /** The longest a hint from the upstream holds a key back when no budget names it, ms. */
  QUOTA_MAX_COOLDOWN_MS: codes.quotaMaxCooldownMs,
  QUOTA_RING: codes.quotaRing,
}

/** The level of a call that names no priority and no tenant (normal). */
module.exports.DEFAULT_LEVEL = codes.priorities.indexOf('normal') * codes.ranks + codes.ranks - 1

/** The one error mapper: a native error becomes a RangeError (bad argument) or an Error. */
module.exports.mapNativeError = function mapNativeError(err) {
  if (err && err.code === 'InvalidArg') return new RangeError(`resilix: ${err.message}`)
  const e = new Error(`resilix: internal error in the native engine: ${err && err.message}`)
  e.cause = err
  return e
}
