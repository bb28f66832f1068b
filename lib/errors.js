'use strict'
// Branded error classes with type guards (cockatiel's habit): `instanceof` fails across two
// copies of the package in one process, a brand does not.

const { describe } = require('./describe')

const REJECTED = Symbol.for('resilix.RejectedError')
const TIMEOUT = Symbol.for('resilix.TimeoutError')

const REASON_TEXT = {
  limit: 'the concurrency limit is reached and queueing is off',
  queue: 'the queue refused it',
  bulkhead: 'the bulkhead is full',
  breaker: 'the circuit breaker is open',
  registry: 'the key registry is full of busy keys (maxKeys)',
  throttle: 'the upstream answers most calls as overloaded (429/503), and the adaptive throttle refused this one locally',
  quota: 'the quota has no budget for it',
}

// The constructors are public (users build these errors in their own tests): arguments are
// checked, so that a wrong order or a missing key fails loudly instead of building an error
// that reads `key: undefined`.
function argError(signature, what, v) {
  return new TypeError(`resilix: new ${signature}: ${what}, got ${describe(v)}`)
}

/** Refused by one of resilix's own policies; the upstream was never called. */
class RejectedError extends Error {
  /** `detail`: optional, why the policy refused (appended to the message). */
  constructor(reason, key, detail) {
    if (typeof reason !== 'string' || !Object.hasOwn(REASON_TEXT, reason)) {
      throw argError('RejectedError(reason, key)', "reason must be one of 'limit', 'queue', 'bulkhead', 'breaker', 'registry', 'throttle', 'quota'", reason)
    }
    if (typeof key !== 'string') throw argError('RejectedError(reason, key)', 'key must be a string', key)
    if (detail !== undefined && typeof detail !== 'string') throw argError('RejectedError(reason, key, detail)', 'detail must be a string', detail)
    super(`resilix: call to "${key}" rejected: ${REASON_TEXT[reason]}${detail ? `: ${detail}` : ''}`)
    this.name = 'RejectedError'
    /** 'limit' | 'queue' | 'bulkhead' | 'breaker' | 'registry' | 'throttle' | 'quota' */
    this.reason = reason
    this.key = key
  }
  get [REJECTED]() {
    return true
  }
}

/** The call's deadline (timeoutMs, counted from execute(), queue wait included) passed. */
class TimeoutError extends Error {
  constructor(key, timeoutMs, queued = false) {
    const signature = 'TimeoutError(key, timeoutMs, queued = false)'
    if (typeof key !== 'string') throw argError(signature, 'key must be a string', key)
    if (typeof timeoutMs !== 'number' || !(timeoutMs > 0)) throw argError(signature, 'timeoutMs must be a number of milliseconds above 0', timeoutMs)
    if (typeof queued !== 'boolean') throw argError(signature, 'queued must be a boolean', queued)
    super(
      `resilix: call to "${key}" timed out after ${timeoutMs} ms` + (queued ? ' while waiting in the queue' : ''),
    )
    this.name = 'TimeoutError'
    this.key = key
    this.timeoutMs = timeoutMs
    /** True when the deadline passed before fn ever ran. */
    this.queued = queued
  }
  get [TIMEOUT]() {
    return true
  }
}

// Through `cause` too: fetch rejects with a TypeError whose `cause` is the interceptor's
// RejectedError or TimeoutError (ADR 0807). Bounded (a cause chain of 8, so a cycle ends it)
// and total: a revoked Proxy or a throwing getter is simply not one of ours.
const MAX_CAUSES = 8

/** `e` or the first error of its `cause` chain that carries `brand`; undefined if none does. */
function find(e, brand) {
  try {
    for (let i = 0; i <= MAX_CAUSES && e !== null && typeof e === 'object'; i++) {
      if (e[brand] === true) return e
      e = e.cause
    }
  } catch {}
  return undefined
}

const isRejectedError = (e) => find(e, REJECTED) !== undefined
const isTimeoutError = (e) => find(e, TIMEOUT) !== undefined
const findRejectedError = (e) => find(e, REJECTED)
const findTimeoutError = (e) => find(e, TIMEOUT)

module.exports = { RejectedError, TimeoutError, isRejectedError, isTimeoutError, findRejectedError, findTimeoutError }
