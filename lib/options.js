'use strict'
// Public options → the binding's flat options. Types are checked here (TypeError naming the
// option); ranges are checked once, in the engine (engine/src/options.rs), and come back as
// RangeError naming the option. Unknown options are refused: a typo must not pass silently.

const LIMITER_NUMBERS = [
  'initialLimit', 'minLimit', 'maxLimit', 'quantile', 'smoothing', 'rttTolerance', 'windowMinMs', 'windowMaxMs',
  'minSamples', 'probeIntervalMs', 'updateIntervalMs', 'backoffRatio',
]
const BREAKER_NUMBERS = [
  'failureRate', 'slowCallRate', 'slowCallMs', 'minimumCalls', 'windowMs', 'consecutiveFailures', 'openMs',
  'halfOpenProbes',
]
const THROTTLE_NUMBERS = ['multiplier', 'windowMs', 'maxRejection']
const TOP_LEVEL = new Set([
  'limiter', 'algorithm', 'queue', 'breaker', 'bulkhead', 'throttle', 'timeoutMs', 'classify', 'maxKeys', 'maxKeyLength', 'seed',
  'retry', 'retryBudget', 'quota', 'quotaStore',
  ...LIMITER_NUMBERS,
])
const { didYouMean } = require('./suggest')
// The engine's algorithm names (ADR 1210).
const { ALGORITHMS } = require('./native')
const { describe, timeoutOption, MAX_TIMEOUT_MS } = require('./describe')
const { instanceRetry, budgetOptions } = require('./retry-options')
const { quotaOption } = require('./quota')

function typeError(msg) {
  return new TypeError(`resilix: ${msg}`)
}

function isPlainObject(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v)
}

function checkNumber(name, v) {
  if (typeof v !== 'number') throw typeError(`option ${name} must be a number, got ${describe(v)}`)
  return v
}

// A breaker or queue option written at the top level: named where it belongs.
const NESTED = Object.fromEntries([
  ...BREAKER_NUMBERS.map((k) => [k, `breaker.${k}`]),
  ...['initialFactor', 'maxFactor'].map((k) => [k, `queue.${k}`]),
  ...['multiplier', 'maxRejection'].map((k) => [k, `throttle.${k}`]),
])

/** A Resilix instance, as the helpers that take one check it (duck-typed: no require cycle). */
function isResilix(rx) {
  return rx !== null && typeof rx === 'object' && typeof rx.acquire === 'function' && typeof rx.stats === 'function'
}

function checkKnown(obj, known, prefix) {
  for (const k of Object.keys(obj)) {
    if (!known.has(k)) throw typeError(`unknown option ${prefix}${k}${didYouMean(k, known, prefix, prefix === '' ? NESTED : undefined)}`)
  }
}

/**
 * The first key of an execute() options object that is not an execute option, or undefined.
 * A for-in over a small literal, no allocation: a few ns on the hot path (ADR 0803).
 */
function unknownExecuteOption(opts) {
  for (const k in opts) {
    if (k !== 'key' && k !== 'timeoutMs' && k !== 'signal' && k !== 'retry' && k !== 'priority' && k !== 'tenant' && k !== 'cost') return k
  }
  return undefined
}

/** The same for acquire(), which takes the key as its first argument. */
function unknownAcquireOption(opts) {
  for (const k in opts) if (k !== 'timeoutMs' && k !== 'signal' && k !== 'priority' && k !== 'tenant' && k !== 'cost') return k
  return undefined
}

/**
 * Validates `options` and returns `{ native, timeoutMs, classify, seed, retry }`.
 * @param {import('../index').ResilixOptions | undefined} options
 */
function normalize(options) {
  if (options === undefined) options = {}
  if (!isPlainObject(options)) throw typeError(`options must be an object, got ${describe(options)}`)
  checkKnown(options, TOP_LEVEL, '')
  const native = {}

  const limiter = options.limiter
  if (limiter === false) {
    native.limiter = false
    for (const k of ['algorithm', 'queue', ...LIMITER_NUMBERS]) {
      if (options[k] !== undefined) throw typeError(`option ${k} has no effect with limiter: false`)
    }
  } else if (limiter !== undefined && limiter !== true) {
    throw typeError(`option limiter must be a boolean (limiter settings are top-level options), got ${describe(limiter)}`)
  }
  if (options.algorithm !== undefined) {
    if (!ALGORITHMS.includes(options.algorithm)) {
      throw typeError(`option algorithm must be one of ${ALGORITHMS.map((a) => `'${a}'`).join(', ')}, got ${describe(options.algorithm)}`)
    }
    native.algorithm = options.algorithm
  }
  for (const k of LIMITER_NUMBERS) {
    if (options[k] !== undefined) native[k] = checkNumber(k, options[k])
  }

  const queue = options.queue
  if (queue === false) native.queue = false
  else if (queue !== undefined && queue !== true) {
    if (!isPlainObject(queue)) throw typeError(`option queue must be an object or false, got ${describe(queue)}`)
    checkKnown(queue, new Set(['initialFactor', 'maxFactor', 'maxQueued']), 'queue.')
    if (queue.initialFactor !== undefined) native.queueInitialFactor = checkNumber('queue.initialFactor', queue.initialFactor)
    if (queue.maxFactor !== undefined) native.queueMaxFactor = checkNumber('queue.maxFactor', queue.maxFactor)
    if (queue.maxQueued !== undefined) native.queueMaxQueued = checkNumber('queue.maxQueued', queue.maxQueued)
  }

  const breaker = options.breaker
  if (breaker === false) native.breaker = false
  else if (breaker !== undefined && breaker !== true) {
    if (!isPlainObject(breaker)) throw typeError(`option breaker must be an object or false, got ${describe(breaker)}`)
    checkKnown(breaker, new Set(BREAKER_NUMBERS), 'breaker.')
    for (const k of BREAKER_NUMBERS) {
      if (breaker[k] !== undefined) {
        native['breaker' + k[0].toUpperCase() + k.slice(1)] = checkNumber('breaker.' + k, breaker[k])
      }
    }
  }

  const bulkhead = options.bulkhead
  if (bulkhead !== undefined && bulkhead !== false) {
    if (!isPlainObject(bulkhead)) throw typeError(`option bulkhead must be an object { maxConcurrent } or false, got ${describe(bulkhead)}`)
    checkKnown(bulkhead, new Set(['maxConcurrent']), 'bulkhead.')
    if (bulkhead.maxConcurrent === undefined) throw typeError('option bulkhead.maxConcurrent is required when bulkhead is set')
    native.bulkheadMaxConcurrent = checkNumber('bulkhead.maxConcurrent', bulkhead.maxConcurrent)
  }

  const throttle = options.throttle
  if (throttle === false) native.throttle = false
  else if (throttle !== undefined && throttle !== true) {
    if (!isPlainObject(throttle)) throw typeError(`option throttle must be an object or false, got ${describe(throttle)}`)
    checkKnown(throttle, new Set(THROTTLE_NUMBERS), 'throttle.')
    for (const k of THROTTLE_NUMBERS) {
      if (throttle[k] !== undefined) {
        native['throttle' + k[0].toUpperCase() + k.slice(1)] = checkNumber('throttle.' + k, throttle[k])
      }
    }
  }

  if (options.maxKeys !== undefined) native.maxKeys = checkNumber('maxKeys', options.maxKeys)
  if (options.maxKeyLength !== undefined) native.maxKeyLength = checkNumber('maxKeyLength', options.maxKeyLength)

  const classify = options.classify
  if (classify !== undefined && typeof classify !== 'function') {
    throw typeError(`option classify must be a function, got ${describe(classify)}`)
  }
  let seed
  if (options.seed !== undefined) {
    seed = checkNumber('seed', options.seed)
    // The binding would quietly replace NaN by a random seed and saturate the rest: a seed that
    // is meant to make a run reproducible must be exactly what the caller wrote.
    if (!Number.isSafeInteger(seed) || seed < 0) {
      throw new RangeError(`resilix: seed must be a whole number from 0 to ${Number.MAX_SAFE_INTEGER}, got ${seed}`)
    }
  }
  budgetOptions(options.retryBudget, native)
  const retry = instanceRetry(options.retry)
  let quota = null
  if (options.quota !== undefined) {
    quota = quotaOption(options.quota)
    native.quota = quota.native
    native.quotaNames = quota.nativeNames
    native.quotaMaxCooldownMs = quota.maxCooldownMs
  }
  let quotaStore = null
  if (options.quotaStore !== undefined) {
    // Branded by lib/store/redis.js, not required here: no store code loads without one.
    if (options.quotaStore === null || typeof options.quotaStore !== 'object' || options.quotaStore[Symbol.for('resilix.quotaStore')] !== true) {
      throw typeError(`option quotaStore must be a store such as redisQuotaStore(redis) from 'resilix/redis', got ${describe(options.quotaStore)}`)
    }
    if (quota === null) throw typeError('option quotaStore shares a quota: give the instance one too, e.g. quota: { requests: 500, tokens: 200000 }')
    quotaStore = options.quotaStore
  }
  return { native, timeoutMs: timeoutOption('timeoutMs', options.timeoutMs), classify, seed, retry, quota, quotaStore }
}

module.exports = { normalize, isResilix, unknownExecuteOption, unknownAcquireOption, ALGORITHMS, MAX_TIMEOUT_MS }
