'use strict'
// What resilix/otel and resilix/prometheus share (ADR 0007): one instance's per-call events from
// the diagnostics channels, one stats() snapshot per collection, the histogram buckets, and the
// check of their arguments.

const dc = require('node:diagnostics_channel')
const { CHANNELS } = require('../diagnostics')
const { describe } = require('../describe')
const { isResilix } = require('../options')
const { didYouMean } = require('../suggest')
const { NAMES } = require('../verdicts')
const { REASONS, BREAKER_STATES } = require('../native')

/**
 * Histogram buckets, seconds: OpenTelemetry's advice for HTTP client request durations
 * (5 ms … 10 s), the calls resilix most often protects.
 */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]

/** Label values a key's series can have: every verdict, reason and breaker state. */
const VERDICTS = NAMES
const REJECT_REASONS = REASONS.filter((r) => r !== undefined)
const STATES = BREAKER_STATES.filter((s) => s !== null)

/** Validates `(rx, options)` of `module`'s instrument(); returns the options object. */
function checkArguments(module, rx, options, known) {
  if (!isResilix(rx)) throw new TypeError(`${module}: instrument(rx, options) expects a Resilix instance as rx, got ${describe(rx)}`)
  if (options === undefined) return {}
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${module}: instrument options must be an object, got ${describe(options)}`)
  }
  for (const k of Object.keys(options)) {
    if (!known.includes(k)) throw new TypeError(`${module}: unknown option ${k}${didYouMean(k, known, '')}`)
  }
  return options
}

/** Requires an optional peer dependency, or says how to install it. */
function peer(module, name) {
  try {
    return require(name)
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND' && String(err.message).includes(`'${name}'`)) {
      const e = new Error(`${module} needs ${name}, an optional peer dependency: npm install ${name}`)
      e.code = 'ERR_RESILIX_PEER_MISSING'
      e.cause = err
      throw e
    }
    throw err
  }
}

/**
 * Subscribes `on.settle`, `on.reject`, `on.leave` to `rx`'s messages on the per-call channels
 * (other instances' are skipped); returns the function that unsubscribes them.
 */
function listen(rx, on) {
  const subs = Object.keys(on).map((kind) => {
    const handler = (m) => {
      if (m.rx === rx) on[kind](m)
    }
    dc.subscribe(CHANNELS[kind], handler)
    return () => dc.unsubscribe(CHANNELS[kind], handler)
  })
  return () => {
    for (const unsubscribe of subs) unsubscribe()
  }
}

/**
 * `rx.stats()`, read once for all the instruments one collection reads (they are collected in
 * one synchronous pass; the snapshot is dropped at the next microtask).
 */
function snapshots(rx) {
  let snapshot = null
  return () => {
    if (snapshot === null) {
      snapshot = rx.stats()
      queueMicrotask(() => (snapshot = null))
    }
    return snapshot
  }
}

/** What instrument() returns: `dispose()` runs `stop` once; a second call does nothing. */
function instrumentation(stop) {
  let disposed = false
  return {
    dispose() {
      if (disposed) return
      disposed = true
      stop()
    },
  }
}

module.exports = { BUCKETS, VERDICTS, REJECT_REASONS, STATES, checkArguments, peer, listen, snapshots, instrumentation }
