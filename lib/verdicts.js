'use strict'
// Verdicts: the public names, and the numeric codes `settle` takes, both as the binding
// defines them.

const { VERDICTS: NAMES, UNAVAILABLE } = require('./native')
const { retryAfterOf } = require('./retry-after')
const SUCCESS = NAMES.indexOf('success')
const FAILURE = NAMES.indexOf('failure')
const OVERLOAD = NAMES.indexOf('overload')
const ANSWERED = NAMES.indexOf('answered')
const TIMEOUT = NAMES.indexOf('timeout')
const REJECTED = NAMES.indexOf('rejected')
const CANCELLED = NAMES.indexOf('cancelled')

/** The verdicts a caller may pass to `permit.release()` (cancelled is the library's own). */
const CODES = { success: SUCCESS, failure: FAILURE, overload: OVERLOAD, answered: ANSWERED, timeout: TIMEOUT, rejected: REJECTED }

/**
 * A status code read from a fetch Response, an undici result, or an error carrying one: the
 * first of `.status`, `.statusCode`, `.response.status` that is a status, read from an object
 * or a function alike (ADR 0613).
 */
function statusOf(x) {
  if (x === null || (typeof x !== 'object' && typeof x !== 'function')) return undefined
  let s = asStatus(x.status)
  if (s !== undefined) return s
  s = asStatus(x.statusCode)
  if (s !== undefined) return s
  const r = x.response
  if (r !== null && (typeof r === 'object' || typeof r === 'function')) return asStatus(r.status)
  return undefined
}

/**
 * An HTTP status: an integer 100–599 (RFC 9110 calls any other value invalid), or a string of
 * three digits that is one ('429'); NaN, 999, 503.5 or '500 ' are no status.
 */
function asStatus(s) {
  if (typeof s === 'number') return s >= 100 && s <= 599 && Number.isInteger(s) ? s : undefined
  if (typeof s !== 'string' || s.length !== 3) return undefined
  const a = s.charCodeAt(0) - 48
  const b = s.charCodeAt(1) - 48
  const c = s.charCodeAt(2) - 48
  if (a < 1 || a > 5 || b < 0 || b > 9 || c < 0 || c > 9) return undefined
  return a * 100 + b * 10 + c
}

function verdictOfStatus(s, otherwise) {
  if (s === undefined || s < 400) return otherwise
  if (s === 429 || s === 503) return OVERLOAD
  if (s < 500) return ANSWERED
  return FAILURE
}

// Total: a getter or a Proxy trap that throws while the status is read (the value is untrusted)
// makes the verdict `failure`; the caller still gets the value itself (ADR 0601).

/** Default classification of a resolved value. */
function classifyValue(v) {
  try {
    return verdictOfStatus(statusOf(v), SUCCESS)
  } catch {
    return FAILURE
  }
}

/** Default classification of a thrown value: failure unless it carries a 4xx/429/503 status. */
function classifyError(e) {
  try {
    return verdictOfStatus(statusOf(e), FAILURE)
  } catch {
    return FAILURE
  }
}

/**
 * The code `settle` takes for verdict `v` of `x` (a value or an error): an overload that is a
 * 503 without Retry-After is UNAVAILABLE, no refusal to the throttle (ADR 1004).
 */
function settleCode(v, x) {
  if (v !== OVERLOAD) return v
  try {
    return statusOf(x) === 503 && retryAfterOf(x) === undefined ? UNAVAILABLE : v
  } catch {
    return v
  }
}

/** The code of a public verdict name, or undefined. */
const codeOf = (name) => (typeof name === 'string' && Object.hasOwn(CODES, name) ? CODES[name] : undefined)

module.exports = {
  SUCCESS, FAILURE, OVERLOAD, ANSWERED, TIMEOUT, REJECTED, CANCELLED,
  NAMES, statusOf, classifyValue, classifyError, codeOf, settleCode,
}
