'use strict'
// The per-call options of execute() and acquire(), read once and defensively: an options object
// or a signal may be a Proxy or carry throwing getters, and bad input must reject, never throw
// synchronously. Results go into one reused object, so reading allocates nothing.

const { timeoutOption, describe, unknownExecuteOption, unknownAcquireOption } = require('./options')
const { checkSignal } = require('./signals')

const parsed = { key: 'default', timeoutMs: undefined, signal: undefined, aborted: false, error: null }

/**
 * Reads `opts` into `parsed`; false (with `parsed.error`) when they are bad. `execute`: the
 * options of execute(), which take a key too; else acquire()'s. `timeoutMs`: the default.
 */
function readCallOptions(opts, execute, timeoutMs) {
  const what = execute ? 'execute' : 'acquire'
  parsed.key = 'default'
  parsed.timeoutMs = timeoutMs
  parsed.signal = undefined
  parsed.aborted = false
  try {
    if (opts === null || typeof opts !== 'object') {
      throw new TypeError(`resilix: ${what} options must be an object, got ${describe(opts)}`)
    }
    const unknown = execute ? unknownExecuteOption(opts) : unknownAcquireOption(opts)
    if (unknown !== undefined) {
      throw new TypeError(`resilix: unknown ${what} option ${unknown} (${what} takes ${execute ? 'key, timeoutMs, signal' : 'timeoutMs, signal'})`)
    }
    if (execute) {
      const key = opts.key
      if (key !== undefined) parsed.key = key
    }
    const t = opts.timeoutMs
    if (t !== undefined) parsed.timeoutMs = timeoutOption('timeoutMs', t)
    const signal = opts.signal
    if (signal !== undefined) {
      parsed.aborted = checkSignal(signal, what)
      parsed.signal = signal
    }
    return true
  } catch (err) {
    parsed.error = err
    return false
  }
}

module.exports = { readCallOptions, parsed }
