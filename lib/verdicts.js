'use strict'
// Verdicts: the public names, and the numeric codes `settle` takes, both as the binding
// defines them.

const NAMES = require('./native').VERDICTS
const SUCCESS = NAMES.indexOf('success')
const FAILURE = NAMES.indexOf('failure')
const OVERLOAD = NAMES.indexOf('overload')
const ANSWERED = NAMES.indexOf('answered')
const TIMEOUT = NAMES.indexOf('timeout')
const REJECTED = NAMES.indexOf('rejected')
const CANCELLED = NAMES.indexOf('cancelled')

/** The verdicts a caller may pass to `permit.release()` (cancelled is the library's own). */
const CODES = { success: SUCCESS, failure: FAILURE, overload: OVERLOAD, answered: ANSWERED, timeout: TIMEOUT, rejected: REJECTED }

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
