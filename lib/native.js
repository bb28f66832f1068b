'use strict'
// The binding, loaded once, with its contract: outcome codes, the clock cell's slots, limits and
// defaults, each defined once in Rust (src/binding/codes.rs) and read here by name (ADR 1210).

// Through load-native: where no binary matches, its error says what was detected and what to do.
// Copied into a plain object: the addon's exports object is a dictionary in V8, so every
// `native.acquire` was a hash lookup, about 7 ns of each acquire+settle pair (ADR 1218).
const native = { ...require('./load-native.js').loadNative() }
const codes = native.wireCodes()

module.exports = {
  native,
  /**
   * The Float64Array both languages share (src/binding/hot.rs): read and written only through
   * the names of CELL (ADR 1210).
   */
  clockCell: native.clockCell,
  /**
   * The clock cell's elements by name: `now` the engine clock (ms) as of the latest acquire on
   * this thread (deadlines start from it, so a timed call reads no clock of its own);
   * `stalledFrom`, written here, the engine time from which this thread is stalled
   * (lib/deadlines.js); `quotaAskAt` when a call told QUOTA_WAIT may ask again; `budgetMs`,
   * `level`, `tenant` (`levelOf` writes it), `head` and `costs` (one per cost from there on) the
   * arguments of acquireCosting; `answer` what `acquireToCell` answered (lib/fast-path.js).
   */
  CELL: Object.freeze({ ...codes.cell }),
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
  /** The verdicts a retry may follow: `retryOn`'s default, and all it may name. */
  RETRYABLE: codes.retryable,
  /** Refusal names by refusal number (index 0 unused). */
  RETRY_REFUSALS: codes.retryRefusals.map((r) => r ?? undefined),
  /** Priority class names by class code (0 sheddable … 4 critical). */
  PRIORITIES: codes.priorities,
  /** Ranks per class (a tenant's usage ranks it within its class). */
  RANKS: codes.ranks,
  /** Levels a key's queue orders its waiters by (classes × ranks). */
  LEVELS: codes.levels,
  /** The level of a call of each class (by class code) that names no tenant. */
  CLASS_LEVELS: codes.classLevels,
  /** The level of a call that names no priority and no tenant (normal). */
  DEFAULT_LEVEL: codes.defaultLevel,
  /** acquireCosting: wait for budget (the time to ask again is at the clock cell's `quotaAskAt`). */
  QUOTA_WAIT: codes.quotaWait,
  /** acquireCosting: the call costs more than a whole budget. */
  QUOTA_OVERSIZE: codes.quotaOversize,
  /** A quota budget's window when it names none, ms (the engine's default). */
  QUOTA_WINDOW_MS: codes.quotaWindowMs,
  /** The longest a hint from the upstream holds a key back when no budget names it, ms. */
  QUOTA_MAX_COOLDOWN_MS: codes.quotaMaxCooldownMs,
  QUOTA_RING: codes.quotaRing,
  /** Distinct costs a quota may name; budgets (a cost over a window) it may hold. */
  QUOTA_COSTS: codes.quotaCosts,
  QUOTA_BUDGETS: codes.quotaBudgets,
  /** Rate-limit header dimensions by code, as cost names (index 0 unused). */
  QUOTA_DIMENSIONS: codes.quotaDimensions.map((d) => d ?? undefined),
  /** Limiter algorithm names, the default first. */
  ALGORITHMS: codes.algorithms,
  /** The longest a millisecond option may be (what setTimeout accepts). */
  MAX_MS: codes.maxMs,
}

/** The one error mapper: a native error becomes a RangeError (bad argument) or an Error. */
module.exports.mapNativeError = function mapNativeError(err) {
  if (err && err.code === 'InvalidArg') return new RangeError(`resilix: ${err.message}`)
  const e = new Error(`resilix: internal error in the native engine: ${err && err.message}`)
  e.cause = err
  return e
}
