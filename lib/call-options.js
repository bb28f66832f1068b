'use strict'
// The per-call options of execute() and acquire(), read once and defensively: an options object
// or a signal may be a Proxy or carry throwing getters, and bad input must reject, never throw
// synchronously. Results go into one reused object, so reading allocates nothing.

const { timeoutOption, describe } = require('./describe')
const { unknownExecuteOption, unknownAcquireOption } = require('./options')
const { checkSignal } = require('./signals')
const { didYouMean } = require('./suggest')
const { callRetry } = require('./retry-options')
const { priorityOption, tenantOption, Prio } = require('./levels')

const parsed = { key: 'default', timeoutMs: undefined, signal: undefined, aborted: false, retry: null, prio: null, cost: undefined, error: null }

/**
 * Reads `opts` into `parsed`; false (with `parsed.error`) when they are bad. `execute`: the
 * options of execute(), which take a key and a retry policy too; else acquire()'s.
 * `timeoutMs`, `retry`: the instance's.
 */
function readCallOptions(opts, execute, timeoutMs, retry) {
  const what = execute ? 'execute' : 'acquire'
  parsed.key = 'default'
  parsed.timeoutMs = timeoutMs
  parsed.signal = undefined
  parsed.aborted = false
  parsed.retry = retry
  parsed.prio = null
  parsed.cost = undefined
  try {
    if (opts === null || typeof opts !== 'object') {
      throw new TypeError(`resilix: ${what} options must be an object, got ${describe(opts)}`)
    }
    const unknown = execute ? unknownExecuteOption(opts) : unknownAcquireOption(opts)
    if (unknown !== undefined) throw unknownOption(what, unknown, execute)
    if (execute) {
      const key = opts.key
      if (key !== undefined) parsed.key = key
      const r = opts.retry
      if (r !== undefined) parsed.retry = callRetry(r, retry)
    }
    const t = opts.timeoutMs
    if (t !== undefined) parsed.timeoutMs = timeoutOption('timeoutMs', t)
    const signal = opts.signal
    if (signal !== undefined) {
      parsed.aborted = checkSignal(signal, what)
      parsed.signal = signal
    }
    parsed.cost = opts.cost
    const priority = opts.priority
    const tenant = opts.tenant
    if (priority !== undefined || tenant !== undefined) {
      parsed.prio = new Prio(
        priority === undefined ? PRIORITY_NORMAL : priorityOption(priority, `resilix: ${what} option priority`),
        tenant === undefined ? undefined : tenantOption(tenant, `resilix: ${what} option tenant`),
      )
    }
    return true
  } catch (err) {
    parsed.error = err
    return false
  }
}

/** execute()'s error for a `fn` that is not a function; a promise is told what to pass (ADR 0808). */
function notAFunction(fn) {
  let thenable = false
  try {
    thenable = fn !== null && typeof fn === 'object' && typeof fn.then === 'function'
  } catch {} // a throwing getter: not a promise we can name
  if (thenable) {
    return new TypeError(
      'resilix: execute expects a function, got a promise: its work has already started, so it can neither wait ' +
        'for a slot nor be cancelled. Pass a function that returns a promise: rx.execute((ctx) => fetch(url, { signal: ctx.signal }))',
    )
  }
  return new TypeError(`resilix: execute expects a function, got ${describe(fn)}`)
}

/**
 * acquire({ key, timeoutMs, signal }), the shape of execute()'s options: `[key, options]` for
 * acquire(key, options). Throws on a bad object (acquire rejects with it).
 */
function acquireObject(o, opts) {
  if (opts !== undefined) {
    throw new TypeError(`resilix: acquire takes (key, options) or one object { key, timeoutMs, signal }, got an object and a second argument (${describe(opts)})`)
  }
  for (const k in o) if (!ACQUIRE_OBJECT.includes(k)) throw unknownOption('acquire', k, true)
  const key = o.key
  return [key === undefined ? 'default' : key, { timeoutMs: o.timeoutMs, signal: o.signal, priority: o.priority, tenant: o.tenant, cost: o.cost }]
}

const ACQUIRE_OBJECT = ['key', 'timeoutMs', 'signal', 'priority', 'tenant', 'cost']
const PRIORITY_NORMAL = require('./native').PRIORITIES.indexOf('normal')

function unknownOption(what, name, takesKey) {
  const takes = what === 'execute' ? ['key', 'timeoutMs', 'signal', 'retry', 'priority', 'tenant', 'cost'] : takesKey ? ACQUIRE_OBJECT : ['timeoutMs', 'signal', 'priority', 'tenant', 'cost']
  const hint =
    !takesKey && name === 'key'
      ? ': the key is acquire\'s first argument, acquire(key, { timeoutMs }), or pass one object, acquire({ key, timeoutMs })'
      : what === 'acquire' && name === 'retry'
        ? ': a permit is one attempt; retry is an option of execute()'
        : didYouMean(name, takes, 'call')
  return new TypeError(`resilix: unknown ${what} option ${name} (${what} takes ${takes.join(', ')})${hint}`)
}

module.exports = { readCallOptions, acquireObject, notAFunction, parsed }
