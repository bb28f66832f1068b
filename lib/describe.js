'use strict'
// How an error message names a value the caller gave, and the deadline option every entry
// point reads. Near the bottom floor of lib/: it requires only the binding's contract, so any
// file may require it.

/** The longest ms option the engine takes, which is also the largest delay setTimeout accepts (ADR 1210). */
const { MAX_MS: MAX_TIMEOUT_MS } = require('./native')

/** A value as an error message names it: its type, or a string's first 40 characters. */
function describe(v) {
  if (v === null) return 'null'
  if (typeof v === 'string') return `the string "${v.length > 40 ? v.slice(0, 40) + '…' : v}"`
  return typeof v
}

/** A deadline option: a number of ms in (0, 2^31 - 1], or false/undefined for none. */
function timeoutOption(name, v) {
  if (v === undefined || v === false) return undefined
  if (typeof v !== 'number') throw new TypeError(`resilix: option ${name} must be a number of milliseconds or false, got ${describe(v)}`)
  if (!(v > 0 && v <= MAX_TIMEOUT_MS)) {
    throw new RangeError(`resilix: ${name} must be a number of milliseconds above 0 and at most ${MAX_TIMEOUT_MS}, got ${v}`)
  }
  return v
}

module.exports = { describe, timeoutOption, MAX_TIMEOUT_MS }
