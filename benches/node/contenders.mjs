// What the Node benches run: resilix's configurations and its JS peers, each protecting the same
// cheapest real async function. Shared by node-bench.mjs (one process) and compare.mjs (one fresh
// process per case). Peers are required lazily, so a process loads only what it measures.
import { createRequire } from 'node:module'
import dc from 'node:diagnostics_channel'

const require = createRequire(import.meta.url)

/** The function every contender runs. A "bare" call is `await work()`. */
export const work = async () => 1

/**
 * resilix configurations. `initialLimit: 100` everywhere so that 100 concurrent callers are
 * admitted; otherwise each is the named option set over the defaults.
 */
export const RESILIX = {
  full: { initialLimit: 100, bulkhead: { maxConcurrent: 100 }, timeoutMs: 10_000 },
  breakerOff: { breaker: false, initialLimit: 100 },
  defaults: { initialLimit: 100 },
  defaultsTimed: { initialLimit: 100, timeoutMs: 10_000 },
  defaultsFixed: { algorithm: 'fixed', initialLimit: 100 },
  /** `defaults`, measured with `subscribeToCalls()` on: every call timed and published. */
  defaultsObserved: { initialLimit: 100 },
  /** `defaults` with retries configured; every call succeeds at its first attempt. */
  defaultsRetry: { initialLimit: 100, retry: true },
  /** The same with a deadline, against `defaultsTimed`. */
  defaultsTimedRetry: { initialLimit: 100, timeoutMs: 10_000, retry: true },
  /** `defaults` with a quota that never runs out: a call that names no cost pays 1 request. */
  defaultsQuota: { initialLimit: 100, quota: { requests: Number.MAX_SAFE_INTEGER } },
  /** `defaults`, every call naming its key (`CALL_OPTIONS`): the baseline of the next. */
  defaultsKeyed: { initialLimit: 100 },
  /** The same with a token budget, every call naming its key and its cost (`CALL_OPTIONS`). */
  defaultsQuotaCost: { initialLimit: 100, quota: { requests: Number.MAX_SAFE_INTEGER, tokens: Number.MAX_SAFE_INTEGER } },
}

/** The options of each call, for the cases that name any. */
export const CALL_OPTIONS = { defaultsKeyed: { key: 'default' }, defaultsQuotaCost: { key: 'default', cost: { tokens: 1200 } } }

/** A no-op subscriber on each per-call diagnostics channel (what a metrics helper costs, less its own work). */
export function subscribeToCalls() {
  for (const kind of ['settle', 'reject', 'leave']) dc.subscribe(`resilix:call:${kind}`, () => {})
}

/** `run` for one fresh resilix instance: a function returning the promise of one call. */
export function resilixRun(Resilix, options, callOptions) {
  const rx = new Resilix(options)
  if (callOptions !== undefined) return () => rx.execute(work, callOptions)
  return () => rx.execute(work)
}

/** Loads `Resilix` from a checkout's index.js (this one by default). */
export function loadResilix(indexJs = new URL('../../index.js', import.meta.url).pathname) {
  return require(indexJs).Resilix
}

const breakerOptions = () => {
  const cockatiel = require('cockatiel')
  return { halfOpenAfter: 10_000, breaker: new cockatiel.ConsecutiveBreaker(5) }
}

/** The peers: `make()` resolves to a fresh instance's `run`. */
export const PEERS = {
  cockatielBulkhead: {
    name: 'cockatiel bulkhead(100)',
    make: async () => {
      const p = require('cockatiel').bulkhead(100)
      return () => p.execute(work)
    },
  },
  cockatielBreaker: {
    name: 'cockatiel circuitBreaker(consecutive 5)',
    make: async () => {
      const cockatiel = require('cockatiel')
      const p = cockatiel.circuitBreaker(cockatiel.handleAll, breakerOptions())
      return () => p.execute(work)
    },
  },
  cockatielWrap: {
    name: 'cockatiel wrap(timeout, breaker, bulkhead)',
    make: async () => {
      const cockatiel = require('cockatiel')
      const p = cockatiel.wrap(
        cockatiel.timeout(10_000, cockatiel.TimeoutStrategy.Cooperative),
        cockatiel.circuitBreaker(cockatiel.handleAll, breakerOptions()),
        cockatiel.bulkhead(100),
      )
      return () => p.execute(work)
    },
  },
  opossum: {
    name: 'opossum, defaults',
    make: async () => {
      const CircuitBreaker = require('opossum')
      const b = new CircuitBreaker(work)
      return () => b.fire()
    },
  },
  pLimit: {
    name: 'p-limit(100)',
    make: async () => {
      const { default: pLimit } = await import('p-limit')
      const limit = pLimit(100)
      return () => limit(work)
    },
  },
}

export async function sequential(run, n) {
  for (let i = 0; i < n; i++) await run()
}

/** `callers` concurrent loops sharing `n` calls; rejections are counted, not thrown. */
export async function concurrent(run, n, callers) {
  let left = n
  let rejected = 0
  async function caller() {
    while (left > 0) {
      left--
      try {
        await run()
      } catch {
        rejected++
      }
    }
  }
  const all = []
  for (let i = 0; i < callers; i++) all.push(caller())
  await Promise.all(all)
  return rejected
}

/** Nanoseconds of this process's CPU time (user + system), or wall time with `wall`. */
export function clock(wall) {
  if (wall) return () => Number(process.hrtime.bigint())
  return () => {
    const u = process.cpuUsage()
    return (u.user + u.system) * 1000
  }
}
