'use strict'
// A quota store in Redis (ADR 1102): the client is the caller's (ioredis, its Cluster, or
// node-redis), so this file loads no Redis library. One script call per lease; nothing on
// a call's path.

const { createHash, randomBytes } = require('node:crypto')
const SCRIPT = require('./lease-script')
const { describe } = require('../describe')
const { didYouMean } = require('../suggest')

const SHA = createHash('sha1').update(SCRIPT).digest('hex')
/** Marks a quota store for the `quotaStore` option (no instanceof across copies of resilix). */
const BRAND = Symbol.for('resilix.quotaStore')
const OPTIONS = ['prefix', 'timeoutMs', 'whenDown', 'keys', 'processes']
/**
 * How long a lease may take before the process falls back: 250 ms, a guess (a loopback Redis
 * answers in under 1 ms, a cross-zone one in a few; ADR 1102). Fallback then begins within
 * this time, well inside a second.
 */
const TIMEOUT_MS = 250
const PREFIX = 'resilix'
const ESCAPES = { '%': '%25', '{': '%7B', '}': '%7D' }

class RedisQuotaStore {
  constructor(client, options = {}) {
    if (client === null || typeof client !== 'object') {
      throw new TypeError(`resilix: redisQuotaStore(client) needs a connected Redis client (ioredis, its Cluster, or node-redis), got ${describe(client)}`)
    }
    if (typeof client.evalsha === 'function' && typeof client.eval === 'function') this.kind = 'ioredis'
    else if (typeof client.evalSha === 'function' && typeof client.eval === 'function') this.kind = 'node-redis'
    else {
      throw new TypeError('resilix: redisQuotaStore(client): the client has neither evalsha (ioredis) nor evalSha (node-redis); pass the client itself, not a URL or its options')
    }
    if (options === null || typeof options !== 'object') throw new TypeError(`resilix: redisQuotaStore options must be an object, got ${describe(options)}`)
    for (const k of Object.keys(options)) {
      if (!OPTIONS.includes(k)) throw new TypeError(`resilix: unknown redisQuotaStore option ${k}${didYouMean(k, OPTIONS, 'redisQuotaStore')}`)
    }
    const { prefix = PREFIX, timeoutMs = TIMEOUT_MS, whenDown = 'share', keys, processes } = options
    // A brace in the prefix would move the Redis Cluster hash tag off the key (ADR 1107).
    if (typeof prefix !== 'string' || prefix.length === 0 || prefix.length > 100 || /[{}]/.test(prefix)) {
      throw new TypeError(`resilix: redisQuotaStore option prefix must be a string of 1 to 100 characters without { or }, got ${describe(prefix)}`)
    }
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 1 || timeoutMs > 60000) {
      throw new RangeError(`resilix: redisQuotaStore option timeoutMs must be a number of ms from 1 to 60000, got ${typeof timeoutMs === 'number' ? timeoutMs : describe(timeoutMs)}`)
    }
    if (whenDown !== 'share' && whenDown !== 'refuse') {
      throw new TypeError(`resilix: redisQuotaStore option whenDown must be 'share' or 'refuse', got ${describe(whenDown)}`)
    }
    if (keys !== undefined && typeof keys !== 'function' && !(Array.isArray(keys) && keys.every((k) => typeof k === 'string'))) {
      throw new TypeError(`resilix: redisQuotaStore option keys must be an array of keys or a function (key) => boolean, got ${describe(keys)}`)
    }
    if (processes !== undefined && !(Number.isInteger(processes) && processes >= 1 && processes <= 100_000)) {
      throw new RangeError(`resilix: redisQuotaStore option processes must be a whole number from 1 to 100000 (the most processes that share the budget), got ${typeof processes === 'number' ? processes : describe(processes)}`)
    }
    this.client = client
    this.prefix = prefix
    this.processes = processes ?? 0
    this.timeoutMs = timeoutMs
    this.whenDown = whenDown
    this.keys = Array.isArray(keys) ? new Set(keys) : keys
    this[BRAND] = true
    /** Instances using the store: it listens to the client while one does. */
    this.users = 0
    /** The client's last error since it was last ready: what "not connected" is (ADR 1105). */
    this.clientError = null
    this.onError = (err) => {
      this.clientError = err instanceof Error ? err.message : String(err)
    }
    this.onReady = () => {
      this.clientError = null
    }
  }

  /** An instance uses the store: listen to the client's errors, to name them. */
  use() {
    const c = this.client
    if (this.users++ > 0 || typeof c.on !== 'function') return
    c.on('error', this.onError)
    c.on('ready', this.onReady)
  }

  /** An instance closed: the last one stops listening. */
  release() {
    const c = this.client
    if (--this.users > 0 || typeof c.off !== 'function') return
    c.off('error', this.onError)
    c.off('ready', this.onReady)
  }

  /** Why a command cannot be sent now: the client is not connected, and what it last said. */
  notConnected() {
    const why = this.clientError === null ? '' : ` (its client's last error: ${this.clientError})`
    return new Error(`the store is not connected${why}`)
  }

  /** Whether `key`'s quota is shared through this store. */
  covers(key) {
    const k = this.keys
    if (k === undefined) return true
    if (typeof k === 'function') {
      try {
        return k(key) === true
      } catch {
        return false
      }
    }
    return k.has(key)
  }

  /** Connected: a command sent now is not queued behind a reconnection. */
  ready() {
    const c = this.client
    if (this.kind === 'ioredis') return c.status === 'ready'
    return c.isReady === true
  }

  /**
   * The Redis keys of `key`'s window: one hash tag, so that a Cluster keeps them together. A
   * brace in the key would end or empty the tag: `%`, `{` and `}` are escaped (ADR 1107).
   */
  redisKeys(key) {
    const tag = `${this.prefix}:{${key.replace(/[%{}]/g, (c) => ESCAPES[c])}}`
    return [`${tag}:w`, `${tag}:p`]
  }

  /**
   * A command's error, named: a window in Redis that counts other budgets says whose, and what
   * to do (ADR 1106); any other error is Redis's own.
   */
  named(err, limits) {
    const m = /^BUDGETS ([\d/,]+)$/.exec(String(err?.message))
    if (m === null) return err
    const theirs = m[1].split(',').map((b) => b.split('/'))
    const said = (list) => list.map(([limit, windowMs], i) => `${limits[i]?.name ?? 'a budget'} ${limit} per ${windowMs} ms`).join(', ')
    return new Error(
      `another process counts this key's window in Redis with other budgets (${said(theirs)}) than this one's ` +
        `(${said(limits.map((b) => [b.limit, b.windowMs]))}): give each application its own prefix, or the fleet the same budgets`,
    )
  }

  /** Runs the lease script: a promise of its reply. */
  async run(key, argv) {
    const keys = this.redisKeys(key)
    try {
      return await this.call(true, keys, argv)
    } catch (err) {
      if (!String(err?.message).includes('NOSCRIPT')) throw err
      return this.call(false, keys, argv)
    }
  }

  call(bySha, keys, argv) {
    const c = this.client
    if (this.kind === 'ioredis') {
      return bySha ? c.evalsha(SHA, keys.length, ...keys, ...argv) : c.eval(SCRIPT, keys.length, ...keys, ...argv)
    }
    const opts = { keys, arguments: argv }
    return bySha ? c.evalSha(SHA, opts) : c.eval(SCRIPT, opts)
  }
}

/** A process's name in the store: random, so that two instances in one process count twice. */
function processId() {
  return randomBytes(8).toString('hex')
}

function isQuotaStore(s) {
  return s !== null && typeof s === 'object' && s[BRAND] === true
}

module.exports = { RedisQuotaStore, isQuotaStore, processId, TIMEOUT_MS, PREFIX }
