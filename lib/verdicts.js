'use strict'
// Verdicts. The numeric codes are the binding's wire format
// (engine/src/verdict.rs); the strings are the public names.

const SUCCESS = 0
const FAILURE = 1
const OVERLOAD = 2
const ANSWERED = 3
const TIMEOUT = 4
const REJECTED = 5
const CANCELLED = 6

const CODES = { success: SUCCESS, failure: FAILURE, overload: OVERLOAD, answered: ANSWERED, timeout: TIMEOUT, rejected: REJECTED }
const NAMES = ['success', 'failure', 'overload', 'answered', 'timeout', 'rejected', 'cancelled']

/** A status code read from a fetch Response, an undici result, or an error carrying one. */
function statusOf(x) {
  if (x === null || typeof x !== 'object') return undefined
  let s = x.status
  if (typeof s === 'number') return s
  s = x.statusCode
  if (typeof s === 'number') return s
  const r = x.response
  if (r !== null && typeof r === 'object' && typeof r.status === 'number') return r.status
  return undefined
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

/** The code of a public verdict name, or undefined. */
const codeOf = (name) => (typeof name === 'string' && Object.hasOwn(CODES, name) ? CODES[name] : undefined)

module.exports = {
  SUCCESS, FAILURE, OVERLOAD, ANSWERED, TIMEOUT, REJECTED, CANCELLED,
  NAMES, statusOf, classifyValue, classifyError, codeOf,
}
